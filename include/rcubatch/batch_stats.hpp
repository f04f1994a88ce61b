// rcubatch/batch_stats.hpp — what one rollback_many did, and what it cost.
//
// Returned by rollback_many. Every count is exact; times are steady_clock wall time, so compare
// them as ratios within one run (the test VM's cross-core costs swing 2–5× over tens of seconds).
// The phases, their names and order are in phase.hpp.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "rcubatch/phase.hpp"

namespace rcubatch {

/// What one batch did and what it cost; all zeros by default, filled in by the batch.
struct batch_stats {
  using duration = std::chrono::nanoseconds;  ///< every time in it

  /// The batch's number in the process: 1, 2, 3, ... in start order (0: refused, or not run), as
  /// stall reports and the probes (docs/observability.md) name it.
  std::uint64_t batch_id = 0;

  std::size_t objects = 0;            ///< objects torn down, dependents included
  std::size_t dependents_added = 0;   ///< objects queued by hooks while the batch ran
  std::size_t rounds = 0;             ///< cascade depth: 1 when no hook queued a dependent
  std::size_t retired = 0;            ///< sub-objects retired into the batch
  std::size_t skipped = 0;            ///< unregister_one: the object was refused (misuse_policy::report); rollback_range: the elements from the refused one on
  unsigned grace_periods = 0;         ///< GPs this batch waited for
  unsigned gps_elided = 0;            ///< GPs it needed but found already elapsed (cookie) or skipped
  unsigned gps_pipelined = 0;         ///< GP #1 skipped: one that began after its objects' unlists had ended (async)
  unsigned dismantle_elided = 0;      ///< sub-component GPs skipped thanks to the dismantle flag
  unsigned retire_fallback_gps = 0;   ///< GPs run inline because retire could not allocate
  std::size_t stall_reports = 0;      ///< "waiting for X to become free" lines printed
  std::size_t rebroadcasts = 0;       ///< rebroadcast hook calls
  std::size_t drain_flushes = 0;      ///< the drain's flushes before a sleep (before_sleep, barrier): ref_drain.hpp
  bool refused = false;               ///< misuse_policy::report refused the whole call; nothing changed

  /// Wall time per phase (phase.hpp: kPhaseTable says what each covers; ref_drain includes every
  /// destroy hook), and how many times the batch entered each phase (a round of dependents enters
  /// close, unlist and notify again; a phase the table says is skipped stays at 0).
  std::array<duration, kPhases> phase_time{};
  std::array<unsigned, kPhases> phase_entries{};  ///< how often each phase was entered, by phase
  duration longest_drain_wait{};      ///< longest time one object waited for its last reference
  duration lock_hold{};               ///< time rollback_many ran with the caller's writer lock held
  duration elapsed{};                 ///< whole call

  /// Phase p's time (phase_time) and entry count (phase_entries). Throws: nothing.
  ///@{
  duration& time_of(phase p) noexcept { return phase_time[static_cast<std::size_t>(p)]; }
  duration time_of(phase p) const noexcept { return phase_time[static_cast<std::size_t>(p)]; }
  unsigned entries_of(phase p) const noexcept { return phase_entries[static_cast<std::size_t>(p)]; }
  ///@}
};

}  // namespace rcubatch
