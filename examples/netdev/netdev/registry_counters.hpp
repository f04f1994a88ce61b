// netdev/registry_counters.hpp — what a registry counts (for netsim's stats, the seed table, tests).
#pragma once

#include <cstdint>

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
  // The longest time one batch (rollback_many / unregister_one) waited for its grace periods, since
  // the registry was created or reset_longest_batch_gp_wait: a reader preempted inside its read
  // section holds a GP for a scheduler slice (netsim's seed table classifies such runs).
  std::uint64_t longest_batch_gp_wait_ns = 0;
};

}  // namespace netdev
