// rcubatch/registry_types.hpp — what a registry's calls are given and return: registry_options
// (the writer lock around a batch's waits, rollback_options, combining), and the statuses and
// results of add / unregister / replace and their try_ forms (issue 37: a lost race is a result,
// not misuse). Split out of registry.hpp (issue 35: one concept per header); registry.hpp includes
// it, so `#include <rcubatch/registry.hpp>` still brings every name here.
#pragma once

#include <cstddef>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/combining.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/rollback_many.hpp"

namespace rcubatch {

/// What a policy's publish hook returns. A hook returning bool means published / refused_after_exposure.
enum class publish_result : unsigned char {
  published,               ///< linked everywhere readers look: the registry marks it registered
  refused,                 ///< not linked anywhere, never visible to readers: may be freed at once
  refused_after_exposure,  ///< links were made then undone: readers may hold it until a grace period
};

/// What try_unregister found. A lost race is a result, not misuse.
enum class unregister_status : unsigned char {
  unregistered,           ///< queued by this call and torn down by its batch (destroyed once its refs dropped)
  not_found,              ///< no object has that key (never added, or already unlisted by another batch)
  already_unregistering,  ///< (by object) it is already going away: in a batch, a queue, or gone to released
  refused,                ///< the budget refused it (async_unregister::try_submit), or misuse under report: nothing changed
  kept,                   ///< (by key with a predicate) found, but the predicate said keep it: nothing changed
};

/// What try_unregister and try_unregister_many return.
struct unregister_result {
  unregister_status status = unregister_status::not_found;  ///< _many: unregistered when any was
  std::size_t unregistered = 0;  ///< objects this call queued (its own, not the dependents they cascaded to)
  std::size_t missed = 0;        ///< keys not found, objects already going away, keys named twice
  batch_stats stats{};           ///< the batch's (all zeros when nothing was queued: no grace period)
  /// True when status is unregistered.
  explicit operator bool() const noexcept { return status == unregister_status::unregistered; }
};

/// What a replace found. A lost race (the old object gone, or going away) is a result, not misuse.
enum class replace_status : unsigned char {
  replaced,               ///< the new object (and children) took the old one's place; the old one was torn down
  not_found,              ///< (by key) no object has that key: nothing changed, the new objects are the caller's
  already_unregistering,  ///< the old object is already going away (a batch, a queue): nothing changed
  refused,                ///< a duplicate key, a refused publish, or misuse under report: nothing changed
};

/// What replace, try_replace, replace_with_children and try_replace_with_children return.
struct replace_result {
  replace_status status = replace_status::refused;  ///< what happened (replaced == (status == replaced))
  bool replaced = false;     ///< false: not replaced (status says why): nothing changed
  std::size_t swapped = 0;   ///< new children that took the place of an old child with the same keys
  std::size_t added = 0;     ///< new children with keys the old version did not have
  batch_stats stats{};       ///< the teardown batch's (the old parent and every old child)
  /// True when replaced.
  explicit operator bool() const noexcept { return replaced; }
};

/// What an add found (try_add, add_and_hold, add_under, add_with_children). add returns only the bool.
enum class add_status : unsigned char {
  added,        ///< published and marked registered
  duplicate,    ///< a key is taken (or the policy refused the publish): nothing reachable, the caller's to free
  parent_gone,  ///< the parent (named by the owner_hook, or by its key) is gone or going away: nothing published
  full,         ///< the policy's capacity() is reached: nothing published
  refused,      ///< misuse under misuse_policy::report: nothing changed
};

/// What try_add, add_and_hold, add_under and add_with_children return.
struct add_result {
  add_status status = add_status::refused;  ///< what happened
  /// True when added.
  explicit operator bool() const noexcept { return status == add_status::added; }
};

/// The tag that asks replace / try_replace to keep the old object's owned children (they are
/// re-parented to the new object in the same critical section instead of torn down).
struct keep_children_t {
  /// Explicit, so `{}` does not pass for the tag: write rcubatch::keep_children.
  explicit keep_children_t() = default;
};
/// The keep_children_t value: `reg.replace(old, fresh, rcubatch::keep_children)`.
inline constexpr keep_children_t keep_children{};

/// How a registry runs its batches.
struct registry_options {
  /// Release the writer lock during the grace periods as well as the ref drain (rollback_many.hpp's
  /// unlock_during_waits); off by default: the lock is held through the grace periods.
  bool unlock_during_waits = false;
  /// Hold the writer lock through the ref drain and destroy too (the default until 2026-12-03). Off by
  /// default, the kernel's order (netdev_run_todo waits for references after RTNL is released):
  /// with it on, one held object stops every writer of the registry until it is let go, and a
  /// thread that holds a reference and then writes (add, unregister) deadlocks against the batch
  /// that waits for its reference. The lock is still released around the drain's call_rcu barrier
  /// (ref_drain.hpp, guarantee 5; the kernel drops RTNL before rcu_barrier): a queued callback
  /// that takes the writer lock would otherwise deadlock the drain. Ignored when
  /// unlock_during_waits is on.
  bool hold_lock_through_drain = false;
  rollback_options rollback{};  ///< passed to each batch's rollback_many
  /// Combine concurrent unregister(obj), try_unregister(obj) and try_unregister<I>(key) callers
  /// into shared batches (combining.hpp; "Combining" in registry.hpp). Off by default.
  combining_options combining{};
};

namespace detail {
/// How a batch of a registry (or its reclaimer) treats the writer lock, from the options.
constexpr lock_release lock_release_for(bool unlock_during_waits, bool hold_lock_through_drain) noexcept {
  if (unlock_during_waits) return lock_release::grace_periods;
  return hold_lock_through_drain ? lock_release::barrier_only : lock_release::drain_only;
}
}  // namespace detail

}  // namespace rcubatch
