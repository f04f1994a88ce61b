// rcubatch/counters.hpp — cumulative figures of many batches, cheap enough to poll every second.
//
//   const rcubatch::registry_counters c = reg.counters();   // a plain struct, no lock taken
//   std::printf("%llu batches, %llu GPs, drain %lld ns\n", (unsigned long long)c.batches.batches,
//               (unsigned long long)c.batches.grace_periods,
//               (long long)c.batches.time_of(rcubatch::phase::ref_drain).count());
//
// batch_totals is the sum of every batch's batch_stats (counts, GPs, per-phase time, stalls);
// registry::counters() returns it with the grace domain's own counters (registry_counters), and
// async_unregister::stats() carries it too (async_stats::all_batches), beside the reclaimer's
// budget and submit→destroy latency figures. docs/observability.md shows how to read them.
//
// Cost: a registry adds a batch's stats at the batch's end under a mutex of their own (held for
// the O(kPhases) addition; uncontended unless a reader copies at that moment); a read copies
// them under it: a consistent set, never waiting for a batch (the writer lock is not taken).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/phase.hpp"

namespace rcubatch {

/// The sum of many batches' batch_stats (batches that tore down at least one object; refused
/// calls are only counted in `refused`).
struct batch_totals {
  using duration = std::chrono::nanoseconds;  ///< every time in it

  std::uint64_t batches = 0;         ///< batches that tore down at least one object
  std::uint64_t objects = 0;         ///< objects they tore down, dependents included
  std::uint64_t grace_periods = 0;   ///< GPs they waited for
  std::uint64_t gps_elided = 0;      ///< GPs they found already elapsed
  std::uint64_t gps_pipelined = 0;   ///< GPs #1 skipped (async batches)
  std::uint64_t stall_reports = 0;   ///< stall lines printed by their drains
  std::uint64_t rebroadcasts = 0;    ///< rebroadcast hook calls of their drains
  std::uint64_t refused = 0;         ///< calls refused under misuse_policy::report (nothing changed)
  std::uint64_t last_batch_id = 0;   ///< the batch_id of the last batch added (0: none)
  /// Time per phase summed over the batches (batch_stats::phase_time), and entries per phase.
  std::array<duration, kPhases> phase_time{};
  std::array<std::uint64_t, kPhases> phase_entries{};  ///< summed batch_stats::phase_entries
  duration elapsed{};             ///< summed batch_stats::elapsed
  duration lock_hold{};           ///< summed batch_stats::lock_hold
  duration longest_drain_wait{};  ///< the longest batch_stats::longest_drain_wait of any batch

  /// Phase p's summed time. Throws: nothing.
  duration time_of(phase p) const noexcept { return phase_time[static_cast<std::size_t>(p)]; }

  /// Effects: adds one batch's stats (nothing but `refused` for a refused call; nothing for a
  /// batch that found its queues empty). Throws: nothing. Complexity: O(kPhases).
  void add(const batch_stats& s) noexcept {
    if (s.refused) {
      ++refused;
      return;
    }
    if (s.objects == 0) return;
    ++batches;
    objects += s.objects;
    grace_periods += s.grace_periods;
    gps_elided += s.gps_elided;
    gps_pipelined += s.gps_pipelined;
    stall_reports += s.stall_reports;
    rebroadcasts += s.rebroadcasts;
    last_batch_id = s.batch_id;
    for (std::size_t p = 0; p < kPhases; ++p) {
      phase_time[p] += s.phase_time[p];
      phase_entries[p] += s.phase_entries[p];
    }
    elapsed += s.elapsed;
    lock_hold += s.lock_hold;
    if (s.longest_drain_wait > longest_drain_wait) longest_drain_wait = s.longest_drain_wait;
  }
};

/// What registry::counters() returns: its own batches' totals and its grace domain's counters
/// (the default domain is the process's, shared by every registry of the flavor).
struct registry_counters {
  batch_totals batches{};  ///< the batches the registry ran itself (unregister*, replace*)
  domain_stats domain{};   ///< its grace domain's: GPs run, elided, coalesced (grace_domain.hpp)
};

namespace detail {

/// batch_totals shared between the threads that end batches and those that read the figures:
/// a mutex of its own, held for one add or one copy (never across a batch, unlike the writer
/// lock, so a reader polling every second waits for nothing longer than a copy).
class shared_batch_totals {
 public:
  /// Effects: as batch_totals::add. Thread safety: any thread. Blocking: the copy-long lock.
  void add(const batch_stats& s) noexcept {
    std::scoped_lock lock(mutex_);
    totals_.add(s);
  }
  /// Returns: a copy of the totals, consistent as a set. Thread safety, Blocking: as add.
  batch_totals read() const noexcept {
    std::scoped_lock lock(mutex_);
    return totals_;
  }

 private:
  mutable std::mutex mutex_;
  batch_totals totals_;
};

}  // namespace detail
}  // namespace rcubatch
