// rcubatch/batch_stats.hpp — what one rollback_many did, and what it cost.
//
// Returned by rollback_many. Every count is exact; times are steady_clock wall time, so compare
// them as ratios within one run (the test VM's cross-core costs swing 2–5× over tens of seconds).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string_view>

namespace rcubatch {

/// The phases of rollback_many, in order (see rollback_many.hpp for what each does). For timing,
/// ref_drain includes each object's destroy hook (objects are destroyed as their references
/// drop, inside the drain); destroy is the disposal of the retired sub-objects that follows.
enum class phase : unsigned char {
  validate, close, unlist, grace_period_1, notify, batch_notify, uninit, grace_period_2, ref_drain, destroy
};
inline constexpr std::size_t kPhases = 10;

constexpr std::string_view to_string(phase p) noexcept {
  constexpr std::array<std::string_view, kPhases> names{
      "validate", "close", "unlist", "grace_period_1", "notify",
      "batch_notify", "uninit", "grace_period_2", "ref_drain", "destroy"};
  return names[static_cast<std::size_t>(p)];
}

struct batch_stats {
  using duration = std::chrono::nanoseconds;

  std::size_t objects = 0;            ///< objects torn down, dependents included
  std::size_t dependents_added = 0;   ///< objects queued by hooks while the batch ran
  std::size_t rounds = 0;             ///< cascade depth: 1 when no hook queued a dependent
  std::size_t retired = 0;            ///< sub-objects retired into the batch
  std::size_t skipped = 0;            ///< unregister_one: the object was refused (misuse_policy::report)
  unsigned grace_periods = 0;         ///< GPs this batch waited for
  unsigned gps_elided = 0;            ///< GPs it needed but found already elapsed (cookie) or skipped
  unsigned dismantle_elided = 0;      ///< sub-component GPs skipped thanks to the dismantle flag
  unsigned retire_fallback_gps = 0;   ///< GPs run inline because retire could not allocate
  std::size_t stall_reports = 0;      ///< "waiting for X to become free" lines printed
  std::size_t rebroadcasts = 0;       ///< rebroadcast hook calls
  bool refused = false;               ///< misuse_policy::report refused the whole call; nothing changed

  std::array<duration, kPhases> phase_time{};
  duration longest_drain_wait{};      ///< longest time one object waited for its last reference
  duration lock_hold{};               ///< time rollback_many ran with the caller's writer lock held
  duration elapsed{};                 ///< whole call

  duration& time_of(phase p) noexcept { return phase_time[static_cast<std::size_t>(p)]; }
  duration time_of(phase p) const noexcept { return phase_time[static_cast<std::size_t>(p)]; }
};

}  // namespace rcubatch
