// rcubatch/phase.hpp — the phases of rollback_many: their names, their order, when each runs.
//
// The one source for the protocol's shape. batch_stats times each phase (time_of) and counts how
// often it was entered (entries_of); the engine (rollback_engine::run in rollback_many.hpp) is one
// private function per phase, called in this order; policy.hpp says which hook runs in which phase
// (kHooks), with the hook table in prose (locks, what a hook may and must not do);
// tests/phase_test.cpp checks a batch against kPhaseTable.
//
// The table is kPhaseTable below (one row per phase, in the order they run); this comment adds
// what a row cannot say.
//
// Rounds: the *_per_round phases (close, unlist, notify) repeat for each round of dependents that
//   notify queues; dependents join after grace period #1, so their close and unlist run between
//   #1 and #2, and only #2 separates their unlist from their destroy.
// Grace period #2 (if_unlinked_after_gp1) runs only if something was unlinked after #1: a retire,
//   note_unlinked, a dismantle elision, a void or true-returning uninit, or any dependent;
//   otherwise the batch costs one grace period.
// Locks: "unlocked" phases run with the caller's lock released only under unlock_during_waits
//   (the hook table in policy.hpp says what that means for each hook). A registry or
//   async_unregister by default releases its own lock for the "unlocked" phases after the last
//   grace period (dispose_retirees, ref_drain, dispose_late_retirees) but not for the grace
//   periods (registry.hpp, Locking).
//
// What each time covers. ref_drain includes every object's destroy hook (objects are destroyed as
// their last reference drops, inside the drain), its rebroadcast and stall reports, and each
// object's retire_with sub-objects (disposed right after their owner). dispose_retirees is the
// batch::retire'd sub-objects, disposed right after the last GP and before any object is
// destroyed; dispose_late_retirees the retire_with sub-objects whose owner was not in the batch
// (misuse not_in_batch), disposed after every object. Until 2026-12 the two disposals were one
// slot named `destroy`, which was not where destroy ran.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace rcubatch {

/// The phases of rollback_many, in the order they run (kPhaseTable has one row each).
enum class phase : unsigned char {
  validate,
  close,
  unlist,
  grace_period_1,
  notify,
  batch_notify,
  uninit,
  grace_period_2,
  dispose_retirees,
  ref_drain,
  dispose_late_retirees,
};
inline constexpr std::size_t kPhases = 11;  ///< one per phase: the rows of kPhaseTable

/// How often a phase's work happens within one batch.
enum class phase_runs : unsigned char {
  once,                ///< a grace period
  per_lane,            ///< one hook call per lane (a lane: one object type's queue and policy)
  per_lane_per_round,  ///< per lane, with the objects that joined in this round
  per_object,          ///< one step per object of the batch
  per_object_per_round,  ///< per object, in the round it joined (queued, or a dependent)
  per_retiree,         ///< one disposal per retired sub-object
};

/// When a phase is entered (its batch_stats slot counts a run), given a non-empty batch.
enum class phase_entered : unsigned char {
  always,
  /// some lane's policy has the hook that runs in it (policy.hpp, kHooks). notify also runs
  /// for the library's own notify work: an owning<> policy's children (owned.hpp), only in a
  /// round where one of its objects has a child to queue; a member type's groups
  /// (membership.hpp), always.
  with_its_hook,
  if_unlinked_after_gp1,   ///< grace period #2: see "Grace period #2" in the file comment
};

/// One row of the phase table.
struct phase_row {
  phase id;                ///< the phase
  std::string_view name;   ///< to_string(id)
  phase_runs runs;         ///< how often it runs in a batch (phase_runs)
  /// Which grace periods have passed when it runs: 0 before #1, 1 after #1, 2 after #2
  /// (a grace-period phase: the one it is).
  unsigned char gps_passed;
  bool may_throw;                 ///< only validate: before the point of no return
  /// The state (to_string(reg_state)) objects are in when its hooks run (ref_drain: destroy's;
  /// rebroadcast sees unregistered).
  std::string_view state_seen;
  /// Runs with the caller's lock released under unlock_during_waits (held otherwise, and always
  /// held for the other phases; rebroadcast re-takes it inside the drain).
  bool unlocked_during_waits;
  phase_entered entered;   ///< when it is entered (phase_entered)
};

/// The phases in the order they run. Requires of every edit: one row per phase, in enum order
/// (checked below and by tests/phase_test.cpp).
inline constexpr std::array<phase_row, kPhases> kPhaseTable{{
    // id                        name                     runs                             gps throws state seen       unlocked entered
    {phase::validate,            "validate",              phase_runs::per_object,           0, true,  "registered",    false, phase_entered::always},
    // -- point of no return: every later hook is noexcept (policy.hpp checks it) --
    {phase::close,               "close",                 phase_runs::per_lane_per_round,   0, false, "registered",    false, phase_entered::always},
    {phase::unlist,              "unlist",                phase_runs::per_object_per_round, 0, false, "registered",    false, phase_entered::always},
    {phase::grace_period_1,      "grace_period_1",        phase_runs::once,                 1, false, "unregistering", true,  phase_entered::always},
    {phase::notify,              "notify",                phase_runs::per_object_per_round, 1, false, "unregistering", false, phase_entered::with_its_hook},
    {phase::batch_notify,        "batch_notify",          phase_runs::per_lane,             1, false, "unregistering", false, phase_entered::with_its_hook},
    {phase::uninit,              "uninit",                phase_runs::per_object,           1, false, "unregistering", false, phase_entered::with_its_hook},
    {phase::grace_period_2,      "grace_period_2",        phase_runs::once,                 2, false, "unregistering", true,  phase_entered::if_unlinked_after_gp1},
    {phase::dispose_retirees,    "dispose_retirees",      phase_runs::per_retiree,          2, false, "unregistering", true,  phase_entered::always},
    {phase::ref_drain,           "ref_drain",             phase_runs::per_object,           2, false, "released",      true,  phase_entered::always},
    {phase::dispose_late_retirees, "dispose_late_retirees", phase_runs::per_retiree,        2, false, "released",      true,  phase_entered::always},
}};

namespace detail {
constexpr bool phase_table_in_enum_order() noexcept {
  for (std::size_t i = 0; i < kPhases; ++i)
    if (static_cast<std::size_t>(kPhaseTable[i].id) != i || kPhaseTable[i].name.empty()) return false;
  return true;
}
static_assert(phase_table_in_enum_order(), "rcubatch: kPhaseTable must list every phase once, in enum order, named");
}  // namespace detail

/// The phase's row. Requires: p is a phase (not a value cast from out of range).
constexpr const phase_row& row_of(phase p) noexcept { return kPhaseTable[static_cast<std::size_t>(p)]; }

/// The phase's name, as batch_stats printers show it ("grace_period_1").
constexpr std::string_view to_string(phase p) noexcept { return row_of(p).name; }

}  // namespace rcubatch
