// netdev/registry_counters.hpp — what a registry counts (for netsim's stats, the seed table, tests).
#pragma once

#include <chrono>
#include <cstdint>

#include <rcubatch/counters.hpp>

namespace netdev {

/// Totals since the registry was created.
struct registry_counters {
  std::uint64_t batches = 0;              // rollback_many / unregister_one calls
  std::uint64_t objects_unregistered = 0;
  std::uint64_t gps_elided = 0;           // GPs a batch skipped (cookie already elapsed)
  std::uint64_t dismantle_elided = 0;     // sub-component GPs skipped thanks to the dismantle flag
  std::uint64_t legacy_extra_gps = 0;     // GPs the legacy strategy added to match 2.6.32
  std::uint64_t max_lock_hold_ns = 0;     // longest writer-lock hold of one command
  std::uint64_t stall_reports = 0;
  // The longest wait for one grace period (a batch's, or a synchronize of its own), since the
  // registry was created or reset_longest_gp_wait: a reader preempted inside its read section, or
  // a writer woken late from liburcu's GP sleep, holds one GP for a scheduler slice (netsim's seed
  // table classifies such runs). Legacy's and the registry's own synchronize calls count too.
  std::uint64_t longest_gp_wait_ns = 0;
  rcubatch::batch_totals batch_totals{};  // every call's batch_stats summed: phase times, GPs, stalls

  /// Records one grace-period wait of `waited` (longest_gp_wait_ns).
  void note_gp_wait(std::chrono::nanoseconds waited) noexcept {
    if (waited.count() > 0 && static_cast<std::uint64_t>(waited.count()) > longest_gp_wait_ns)
      longest_gp_wait_ns = static_cast<std::uint64_t>(waited.count());
  }
};

}  // namespace netdev
