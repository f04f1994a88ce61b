// rcubatch/registry.hpp — the common case in one object: the writer lock, the grace domain and
// the indexes of a registry, with add / unregister / unregister_many / unregister_with.
//
//   using by_id = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
//   using by_name = rcubatch::lfht_index<session, &session::by_name, rcubatch::key_member<&session::name>>;
//   rcubatch::registry<rcubatch::indexed<session, by_id, by_name>> sessions;
//
//   if (!sessions.add(*s)) delete s;                    // false: its id or name is taken
//   for (session* d : doomed) sessions.add(*d);
//   sessions.add(*last);
//   {
//     rcubatch::read_guard<> guard;                     // readers
//     if (session* found = sessions.find<by_name>(guard, "alice")) use(*found);
//   }
//   sessions.unregister(*s);                            // 1 or 2 grace periods, then delete
//   sessions.unregister_many(doomed);                   // ≤ 2 grace periods, whatever the size
//   sessions.unregister_with([&](auto& q) { q.push(*last); });  // fill the queues yourself
//   (compiled in tests/header_examples_test.cpp)
//
// Several object types in one registry, one policy each, all in every batch (a session's notify
// queues its streams, which go in the same batch at no extra grace period):
//   struct session_policy : rcubatch::indexed<session, by_id, by_name> {
//     void notify(session& s, rcubatch::batch& b) noexcept { for (stream* st : s.streams) b.queue(*st); }
//   };
//   rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_by_id>> table;
//   (compiled in tests/header_examples_test.cpp)
//
// What it is: a basic_registry<Flavor, Lockable, Policies...> owns a Lockable (std::mutex for
// `registry`), refers to a grace_domain<Flavor> (default_domain<Flavor>() unless given one) and
// owns one policy per object type. A policy is an rollback_many policy (policy.hpp's hook table:
// validate, close_many, unlist, notify, ..., destroy) that also says how to publish:
//   using object_type = T;                  the registrable type it handles (distinct per policy)
//   publish(T&) -> bool | publish_result    links the object into what readers search; on refusal
//                                           it has undone every link it made (see publish_result)
//   unlist(T&) noexcept                     unlinks it again (required, as for rollback_many)
//   capacity() const -> std::size_t         optional: the most objects of type T published at once
//                                           (counted in its first index: size<T>()); an add beyond it
//                                           is refused, add_status::full (replace_with_children's new
//                                           children are not checked against it)
// indexed<T, Index...> is such a policy for objects that live in RCU indexes (lfht_index or any
// type with `bool add_unique(T&)` and `bool unlink(T&)`): publish adds to each index in order and
// undoes the adds on a duplicate key, unlist unlinks from each; derive from it to add hooks.
//
// Everything here is the public primitives (unreg_queue, rollback_many with one lane per policy,
// mark_registered, the indexes): a registry does nothing a user cannot do by hand, and
// writer_lock(), domain(), index<I>() and policy<P>() give the pieces to code that wants to. (One
// call goes to rollback_many's common body rather than its public overload: see run() below.)
//
// Locking: every member that changes the registry takes the writer lock for its whole call; a
// batch keeps it through its grace periods, then releases it for the disposals, the ref drain and
// destroy (the kernel's order: netdev_run_todo waits for references after RTNL is dropped), and
// takes it back to rebroadcast and before it returns. So a held object delays only the batch
// waiting for it: other writers go on, and the holder itself may add and unregister other objects.
// registry_options::hold_lock_through_drain restores the lock held throughout but for the drain's
// call_rcu barrier, which a queued callback may need it for (ref_drain.hpp, guarantee 5); a held
// object then stops every writer, and a holder that writes deadlocks. unlock_during_waits releases it for the
// grace periods too (rollback_many.hpp: only when no other lock nests inside this one). Hooks
// before the drain (validate ... uninit, rebroadcast) run under the lock; destroy runs without it
// unless hold_lock_through_drain. The lock knows its holder: a registry member (or a reclaimer's
// submit or wait) called on the thread that holds it — from such a hook, or under writer_lock() —
// is diagnosed (holds_writer_lock) and refused instead of waiting for itself.
// Blocking waits (the writer lock, grace periods, the drain) are taken offline under qsbr, for the
// registry's flavor and its indexes' (detail/blocking.hpp): a registered qsbr writer may stay
// online around these calls.
// Thread safety: every member may be called concurrently from threads registered with Flavor (and
// with the indexes' flavor); the writers serialize on the lock, readers use read_guard and find.
// Misuse, diagnosed through misuse.hpp before anything changes: add of an object that is not
// freshly constructed (register_twice), add / unregister* inside a read-side section of Flavor
// (blocking_in_read_section: taking the writer lock there can deadlock against a writer waiting
// for that reader's grace period), unregistering an object that is not registered (unreg_queue),
// or that is registered in another registry (wrong_registry: indexed's owns() tells), a call by
// the lock's holder (holds_writer_lock), a policy without unlist (compile error, policy.hpp), an
// object type with no policy (compile error naming it). Unregistering an object whose batch has
// already ended is a use of freed memory, like any use of a freed object: the library cannot see
// it. When two threads may race to delete the same object, delete by key (try_unregister<Index>(key):
// the lookup happens under the writer lock, and a lost race is a result, not misuse).
// Combining (combining.hpp, issue 35): with registry_options::combining.enabled (or while an
// async_unregister with combine_registry_unregister is attached), unregister(obj),
// try_unregister(obj) and try_unregister<I>(key) go through the registry's leader/follower gate.
// A caller that finds no leader waiting and the writer lock free (try_lock) runs its own batch at
// once, as without combining; the others queue, and one of them — the leader — takes the writer
// lock and runs the calls queued by then (at most combining.max_batch) as one batch of this
// registry, with its options, while the others sleep (offline under qsbr). Each caller gets its
// own outcome (status, refusal, exception); see unregister for what its stats hold. Hooks of a
// shared batch run on the leader's thread. Every other member runs its own batch as before.
// Big flushes (deferred_destroy.hpp, issue 36): unregister_many_deferred returns once the batch's
// objects are unpublished and its grace periods have elapsed, its drain and destroys handed to a
// deferred_destroy's thread (a flush_ticket to wait on); registry_options::rollback.unlist_chunk
// unlists a batch in chunks and lets a waiting writer in between two (tracked_writer_lock::
// yield_to_waiter), one batch and one GP #1 still; between chunks the batch's objects not yet
// unlisted are going away (try_unregister by key or object: already_unregistering).
// Owned children (owned.hpp: owning<&Parent::list> on the parent's policy): add links a child into
// the list of the parent its owner_hook names, its unlist takes it out, and the parent's batch
// queues the children left (any depth, the same ≤ 2 grace periods); replace_with_children reloads
// a parent and its children in one critical section, all or nothing.
// Reloads, families and bounded tables (issue 37; docs/guide.md has the overview), each with the
// lookup under the writer lock so that a lost race is a result: try_replace<I>(key, fresh) and
// try_replace_with_children<I>(key, ...); replace(old, fresh, keep_children) (the children move to
// the new parent); add_with_children (a family published whole); add_under<I>(parent_key, child);
// try_add and add_and_hold; try_unregister<I>(key, pred); unregister_if<I>(pred); a policy's
// capacity() (add refused as full; size<T>()); constructors that pass one argument per policy.
//   auto* fresh = new session(1, "alice");
//   if (!sessions.try_replace<by_id>(std::uint64_t{1}, *fresh)) delete fresh;  // not_found, or a delete won
//   sessions.unregister_if<by_id>([](const session& x) { return x.name.starts_with("tmp-"); });  // one batch
//   (compiled in tests/header_examples_test.cpp)
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <exception>
#include <cstddef>
#include <iterator>
#include <mutex>
#include <memory>
#include <new>
#include <optional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rcubatch/fwd.hpp"
#include "rcubatch/combining.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/counters.hpp"
#include "rcubatch/deferred_destroy.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/read_guard.hpp"
#include "rcubatch/registrable.hpp"
#include "rcubatch/rollback_many.hpp"
#include "rcubatch/unreg_queue.hpp"

// Split out (issue 35): the free types, the compile-time helpers, the indexed<> policy.
#include "rcubatch/detail/registry_traits.hpp"
#include "rcubatch/indexed.hpp"
#include "rcubatch/registry_types.hpp"

namespace rcubatch {

/// A registry: a Lockable writer lock, a grace domain, one policy per object type (see the file
/// comment). `registry<Policies...>` is the usual spelling: the default flavor and a std::mutex.
template <class Flavor, class Lockable, class... Policies>
class basic_registry {
  static_assert(sizeof...(Policies) >= 1, "rcubatch::registry needs at least one policy (e.g. indexed<T, Index...>)");
  static_assert((detail::names_object_type<Policies> && ...),
                "rcubatch::registry: each policy needs `using object_type = T;` (indexed<T, ...> has it)");
  static_assert((detail::has_publish<Policies> && ...),
                "rcubatch::registry: each policy needs `bool publish(T&)` or `publish_result publish(T&)`, "
                "which links the object where readers find it (indexed<T, Index...> has it)");
  static_assert(((detail::occurrences<typename Policies::object_type, typename Policies::object_type...> == 1) && ...),
                "rcubatch::registry: two policies handle the same object type; one policy per type");

  using relations = detail::relations_check<detail::all_relations_t<Policies...>, typename Policies::object_type...>;
  static_assert(relations::children_have_lanes,
                "rcubatch::registry: a policy owns children (rcubatch::owning<&Parent::list>) of a type that no policy "
                "of this registry handles: add a policy for the child type (e.g. rcubatch::indexed<Child, Index...>); "
                "without one, its parent's batch could not take the children and would destroy the parent under them");
  static_assert(relations::one_owner_each,
                "rcubatch::registry: a child type is owned through two owned_lists (two owning<...> name lists of the "
                "same child type): a child type may have one owner relation");

  static constexpr std::size_t kTypes = sizeof...(Policies);
  template <class U>
  static constexpr std::size_t slot_of() {
    using T = registrable_type_t<U>;
    constexpr std::size_t k = detail::position_of<T, typename Policies::object_type...>();
    static_assert(k < kTypes, "rcubatch::registry: no policy of this registry handles the object's type");
    return k;
  }
  template <std::size_t K>
  using object_at = std::tuple_element_t<K, std::tuple<typename Policies::object_type...>>;
  /// The relation through which another policy's objects own T (owned.hpp), void if none.
  template <class T>
  using owner_of = detail::owner_relation_t<T, Policies...>;

 public:
  using flavor_type = Flavor;   ///< the liburcu flavor of its grace domain and read_guards
  using lock_type = Lockable;   ///< the writer lock's type

  /// The queues unregister_with's function fills: one unreg_queue per object type. push(obj)
  /// picks the queue of obj's type; a queue set converts to each `unreg_queue<T>&`, so a
  /// dellink(T&, unreg_queue<T>&) written against the primitives takes it as it is.
  class queues {
   public:
    queues(const queues&) = delete;
    queues& operator=(const queues&) = delete;

    /// Effects, Requires, Throws, Complexity: unreg_queue<T>::push for obj's registrable type T
    /// (a compile error if no policy handles T); then, if its policy can tell (`bool owns(const
    /// T&)`: indexed has it), an object that is not published in this registry is taken out again
    /// and diagnosed (wrong_registry; false under report, nothing changed).
    /// Thread safety: only inside unregister_with's fn.
    template <class U>
    bool push(U& obj) {
      constexpr std::size_t k = slot_of<U>();
      auto& q = std::get<k>(q_);
      if (!q.push(obj)) {  // misuse, diagnosed by the queue (every false of unreg_queue::push is)
        ++refused_;
        return false;
      }
      if (!registry_->admit_queued(q, static_cast<object_at<k>&>(obj), "registry::unregister")) [[unlikely]] {
        ++refused_;
        return false;
      }
      return true;
    }
    /// Effects: the queue of objects of type T (a compile error if no policy handles T). O(1).
    template <class T>
    unreg_queue<T>& of() noexcept {
      return std::get<slot_of<T>()>(q_);
    }
    /// The same as of<T>(), implicitly: a queues& passes where an unreg_queue<T>& is wanted.
    template <class T>
    operator unreg_queue<T>&() noexcept {  // NOLINT: implicit on purpose, see above
      return of<T>();
    }
    /// Effects: whether obj (of a policy's type) is queued here. Complexity: O(1).
    template <class U>
    bool contains(const U& obj) const noexcept {
      constexpr std::size_t k = slot_of<U>();
      return std::get<k>(q_).contains(static_cast<const object_at<k>&>(obj));
    }
    /// Effects: how many objects are queued, all types. Complexity: O(number of types).
    std::size_t size() const noexcept {
      return std::apply([](const auto&... q) { return (q.size() + ...); }, q_);
    }

   private:
    friend class basic_registry;
    explicit queues(basic_registry& r) noexcept : registry_(&r) {}
    basic_registry* registry_;
    std::size_t refused_ = 0;  // pushes refused as misuse (under report): unregister_with's stats.refused
    detail::order_hint order_{};  // unregister_many's range as an array of one type's pointers, if it is one
    std::tuple<unreg_queue<typename Policies::object_type>...> q_;
  };

  /// Effects: an empty registry: the lock, default-constructed policies (and so indexes), the
  /// domain by reference (it must outlive the registry; default_domain always does).
  /// Throws: what a policy's constructor throws (lfht_index: std::bad_alloc). Blocking: never.
  explicit basic_registry(registry_options options = {}, grace_domain<Flavor>& domain = default_domain<Flavor>())
      : options_(options), domain_(&domain) {}
  /// The same, with default options and `domain`.
  explicit basic_registry(grace_domain<Flavor>& domain) : basic_registry(registry_options{}, domain) {}
  /// Effects: as above, each policy constructed from its argument, in the order of Policies (one
  /// argument per policy: a state pointer, an index's options — indexed<T, I> takes one argument
  /// per index —, or a struct of several). For policies with state and indexes with options,
  /// instead of setting them after construction.
  /// Throws: what a policy's constructor throws. Blocking: never.
  template <class... PolicyArgs>
    requires(sizeof...(PolicyArgs) == sizeof...(Policies) && (std::is_constructible_v<Policies, PolicyArgs> && ...))
  basic_registry(registry_options options, grace_domain<Flavor>& domain, PolicyArgs&&... per_policy)
      : options_(options), domain_(&domain), policies_(std::forward<PolicyArgs>(per_policy)...) {}
  /// The same, with default options and the default domain.
  template <class... PolicyArgs>
    requires(sizeof...(PolicyArgs) == sizeof...(Policies) && (std::is_constructible_v<Policies, PolicyArgs> && ...) &&
             !(std::is_same_v<std::remove_cvref_t<PolicyArgs>, registry_options> || ...) &&
             !(std::is_same_v<std::remove_cvref_t<PolicyArgs>, grace_domain<Flavor>> || ...))
  explicit basic_registry(PolicyArgs&&... per_policy)
      : basic_registry(registry_options{}, default_domain<Flavor>(), std::forward<PolicyArgs>(per_policy)...) {}
  basic_registry(const basic_registry&) = delete;
  basic_registry& operator=(const basic_registry&) = delete;

  /// Requires: nothing registered is left (unregister everything first): the indexes report
  /// destroyed_while_linked otherwise, and a registered object's destruction is fatal misuse.
  ~basic_registry() = default;

  /// Requires: obj is freshly constructed (uninitialized) and its keys are set; the calling
  /// thread is registered with the indexes' flavor and outside read-side sections of Flavor.
  /// Effects: under the writer lock, publishes obj with its type's policy (indexed: adds it to
  /// every index), then marks it registered; returns true. Returns false if the policy refused
  /// it (a duplicate key): then nothing of obj is reachable and the caller may free or reuse it
  /// at once (after an undone partial publish, add waits one grace period before returning).
  /// Misuse (throws misuse_error by default; under report returns false, nothing changed): obj is
  /// not uninitialized (register_twice: added twice, or already unregistered), or the call is
  /// inside a read-side section (blocking_in_read_section).
  /// Owned children (owned.hpp): an object of a type owned through owning<> whose owner_hook
  /// names a parent is linked into that parent's list once published. add returns false, nothing
  /// published, when that parent is already going away (in a batch or a reclaimer's queue: a lost
  /// race, not misuse); misuse: a parent never added (not_registered), or registered in another
  /// registry (wrong_registry).
  /// Throws: misuse_error as above; what publish throws (after its undo and a grace period).
  /// Complexity: the policy's publish (indexed: one add per index). Blocking: the writer lock;
  /// one grace period on the refused-after-exposure and exception paths only.
  /// With a capacity (the policy's capacity(), see try_add): false when it is reached.
  template <class U>
  bool add(U& obj) {
    constexpr std::size_t k = slot_of<U>();
    return static_cast<bool>(add_core<k>(static_cast<object_at<k>&>(obj), "registry::add", no_parent_to_resolve{}, false));
  }

  /// Requires: obj is registered in this registry; the calling thread is registered with Flavor
  /// (and the indexes' flavor) and outside read-side sections of Flavor.
  /// Effects: under the writer lock, one batch of obj and the dependents its hooks queue
  /// (rollback_many, every policy a lane): unlisted, a grace period, notify/uninit, a second one
  /// if anything was unlinked after the first, then destroyed once its references drop.
  /// Returns the batch's statistics (stats.refused under report when refused, nothing changed:
  /// misuse below, a second unregister of the same object included).
  /// Misuse: obj not registered (not_registered / already_unregistering, from unreg_queue::push);
  /// inside a read-side section (blocking_in_read_section). Nothing changes then.
  /// Throws: misuse_error (default policy) as above; what a validate hook throws (nothing changed).
  /// Complexity: O(1 + dependents) hook calls. Blocking: the lock, ≤ 2 grace periods, the drain.
  /// Combining on (registry_options::combining, or a reclaimer attached: "Combining" above): a
  /// caller that finds the writer lock free and no leader waiting runs the batch of obj at once;
  /// callers arriving while the lock is busy share the next batch, led by one of them — whose
  /// thread then runs the other callers' hooks. Each gets its own result: refused (stats.refused)
  /// and misuse (its exception, on its own thread) are its own; in a batch shared with other
  /// calls, stats.objects counts its own object (the dependents are not told apart:
  /// dependents_added is 0; counters() has them all) and the other fields are the shared
  /// batch's (batch_id, its grace periods and times, which this caller waited for). A second
  /// unregister of an object already in a batch or a queue (a reclaimer's included) is misuse
  /// already_unregistering, nothing changed. If a shared batch throws (a validate hook), nothing
  /// changed and each caller runs its own batch again, alone, so the exception is its own.
  template <class U>
  batch_stats unregister(U& obj) {
    if (gate_.enabled()) [[unlikely]] {
      constexpr std::size_t k = slot_of<U>();
      object_call<k, false> c(static_cast<object_at<k>&>(obj));
      through_gate(c);
      return c.result.stats;
    }
    return unregister_with([&obj](queues& q) { q.push(obj); });
  }

  /// Requires: every element is (or points to) a registered object of this registry; outside
  /// read-side sections. Elements may be objects or pointers (T&, T*, of any policy's type).
  /// Effects: as unregister, for all of them in one batch: ≤ 2 grace periods whatever the size;
  /// always the registry's own batch, attached reclaimer or not (it is one batch already). An
  /// object named twice is unregistered once (unreg_queue::push moves it to the queue's tail, at
  /// O(its position) — unlike unreg_queue::push_range, which refuses it).
  /// Misuse and Throws: as unregister; a null pointer throws std::invalid_argument. Any refusal
  /// happens before the batch starts and leaves every object registered.
  /// Complexity: O(N + dependents). Blocking: as unregister.
  /// Cost: given a contiguous range of pointers to one policy's object type (std::vector<T*>,
  /// std::span<T*>), the batch's passes prefetch the objects ahead through that array instead of
  /// following the queue's links one memory latency at a time (rollback_many.hpp, order_hint);
  /// the range must stay unchanged during the call, as it must anyway. Other ranges: no hint.
  template <class Range>
  batch_stats unregister_many(Range&& objects) {
    return unregister_with([&objects](queues& q) {
      q.order_ = order_hint_of(objects);
      push_all(q, objects);
    });
  }

  /// A flush that returns after its grace periods (deferred_destroy.hpp): as unregister_many, for
  /// the same objects in one batch, but the call returns once every object is unpublished and the
  /// batch's grace periods have elapsed; the disposals, the ref drain and every destroy run on
  /// `reclaimer`'s thread, in the order and phases rollback_many.hpp states (children before
  /// parents, held objects once let go). The ticket's wait() returns once all are destroyed.
  /// Requires: as unregister_many; this registry (and its policies) outlives the batch (wait the
  /// ticket, or destroy `reclaimer`, first). Not on `reclaimer`'s thread (a destroy hook).
  /// Effects: under the writer lock, the batch's phases validate … uninit and its grace periods,
  /// as unregister_many (registry_options::rollback.unlist_chunk applies); then the lock is given
  /// up (registry_options::hold_lock_through_drain does not apply: the lock cannot be held across
  /// threads) and the batch is handed over — after a wait, offline under qsbr, if that would take
  /// reclaimer's pending objects beyond its max_pending_objects.
  /// Returns: the ticket; stats_at_handoff() has the grace periods. Nothing queued, refused
  /// (misuse under report: stats.refused) or empty: a ticket ready at once, nothing handed over.
  /// Misuse and Throws: as unregister_many (nothing changed then); std::bad_alloc before anything
  /// changed. Complexity: O(N + dependents) on the caller's thread, the destroys on the reclaimer's.
  /// Blocking: the writer lock, ≤ 2 grace periods, the budget wait; not the drain.
  /// Thread safety: as unregister_many; several threads may hand batches to one reclaimer.
  /// Cost: over a contiguous range of pointers to one policy's object type, the passes that run
  /// before the call returns (push, unlist, uninit) prefetch through it, as unregister_many's do.
  /// The drain runs after the return, when the range may be gone: it never reads it, and with
  /// reclaimer.options().copy_order_hint (the default) prefetches through a copy the call makes.
  template <class Range>
  flush_ticket unregister_many_deferred(Range&& objects, deferred_destroy& reclaimer);

  /// Delete by key: the server's everyday call, and the safe one when threads race to delete the
  /// same object (two threads, one key: exactly one gets unregistered, the other not_found, and
  /// neither touches freed memory — the lookup and the queueing happen under the writer lock, and
  /// an object leaves the index, under that lock, before its batch can free it).
  /// Requires: I is an index of one of the policies with `T* find_locked(const K&)` (lfht_index);
  /// the calling thread is registered with Flavor and the index's flavor, outside read sections.
  /// Effects: under the writer lock, the object with that key (if any) is queued and unregistered
  /// as by unregister (≤ 2 grace periods, cascades included); none: no batch, no grace period.
  /// Returns: unregistered (with the batch's stats) or not_found. Misuse: as unregister (read
  /// section, the lock's holder). Throws: what unregister throws. Blocking: as unregister.
  /// Combining on: as unregister's; the lookup and the queueing still share one hold of the
  /// writer lock (the leader's), so the race guarantee holds; a key another call of the same
  /// batch queued first is not_found, as after that call's batch.
  template <class I, class K>
  unregister_result try_unregister(const K& key) {
    if (gate_.enabled()) [[unlikely]] {
      by_key_call<I, K> c(key);
      through_gate(c);
      return c.result;
    }
    const K* one = &key;
    return try_unregister_many<I>(std::span<const K>(one, 1));
  }

  /// As try_unregister, for every key of `keys` in one batch (≤ 2 grace periods in all). Keys not
  /// found, and keys naming an object already queued by this call, count in `missed`. Always the
  /// registry's own batch, attached reclaimer or not.
  template <class I, class Keys>
  unregister_result try_unregister_many(const Keys& keys);

  /// By object, for callers that know obj is alive (they hold a reference to it, or own it until
  /// its destroy) but not whether another thread is already deleting it: "delete it unless it is
  /// already going away". A lost race is a result (already_unregistering), not misuse.
  /// Requires: obj is alive; as unregister otherwise. Returns: unregistered (with the batch's
  /// stats) or already_unregistering (nothing changed). Misuse, still diagnosed: obj never
  /// registered (not_registered), registered in another registry (wrong_registry), read section,
  /// the lock's holder; under report the status is then refused (stats.refused, nothing changed).
  /// Blocking: as unregister.
  /// Combining on: as unregister's; an object another call of the same batch queued first is
  /// already_unregistering.
  template <class U>
  unregister_result try_unregister(U& obj) {
    if (gate_.enabled()) [[unlikely]] {
      constexpr std::size_t k = slot_of<U>();
      object_call<k, true> c(static_cast<object_at<k>&>(obj));
      through_gate(c);
      return c.result;
    }
    unregister_result r;
    r.stats = unregister_with([&](queues& q) {
      if (going_away(obj)) {
        ++r.missed;  // in a batch, in a queue (an async submit, another batch's cascade), or gone
      } else if (q.push(obj)) {
        ++r.unregistered;
      }
    });
    r.status = r.unregistered > 0   ? unregister_status::unregistered
               : r.stats.refused ? unregister_status::refused  // misuse under report, as through a reclaimer
                                 : unregister_status::already_unregistering;
    return r;
  }

  /// Atomic replace (RCU's first use case: reload a configuration object): new_obj takes old_obj's
  /// place in every index under the writer lock — readers find old_obj or new_obj, never neither and
  /// never a freed one — then old_obj is torn down as by unregister, in one batch (its unlist is
  /// skipped: the replace unlinked it; its cascades, GPs and drain as usual).
  /// Requires: old_obj registered in this registry; new_obj freshly constructed, with old_obj's keys
  /// in every index; the policy has `replace(T& old, T& new)` (indexed has it: all or nothing).
  /// Owned children (owned.hpp): an owned new_obj whose owner_hook names nothing takes old_obj's
  /// parent, and is linked into that parent's list (refused, nothing changed, if that parent is
  /// going away); old_obj's own children go with it (replace_with_children brings new ones; the
  /// keep_children overload keeps them).
  /// Returns: replace_result: replaced (stats: the teardown batch's); already_unregistering when
  /// old_obj is already going away (in a batch or a queue, or its owner is: a lost race, not
  /// misuse since issue 37; nothing changed, new_obj still the caller's); refused (stats.refused)
  /// on misuse under report. Returned batch_stats until issue 37.
  /// Misuse (nothing changed): new_obj not freshly constructed (register_twice), old_obj never
  /// added or in another registry (as unregister), read section, the lock's holder.
  /// Throws: misuse_error as above; std::invalid_argument when a key differs (nothing changed).
  /// Complexity: one replace per index, plus old_obj's batch. Blocking: as unregister.
  template <class U>
  replace_result replace(U& old_obj, U& new_obj) {
    constexpr std::size_t k = slot_of<U>();
    object_at<k>* const o = &static_cast<object_at<k>&>(old_obj);
    return replace_core<k, false>([o]() noexcept { return o; }, static_cast<object_at<k>&>(new_obj), "registry::replace");
  }

  /// Bulk replace (reload a container): new_parent and new_children take the place of old_parent
  /// and its owned children in one critical section of the writer lock. new_parent replaces
  /// old_parent in every index (as replace); each new child whose key (in its policy's first index)
  /// is an old child's replaces it in every index, atomically; the others are published; all are
  /// marked registered and linked into new_parent's list — linked before new_parent is published,
  /// so a reader that finds new_parent sees every new child in its rcu_range(). A parent that is itself owned (A owns
  /// old_parent) is replaced in A's list as replace does (the same path): new_parent names A
  /// unless it names a parent itself, and is refused, nothing changed, if that parent is going
  /// away. The old parent, the replaced children and
  /// the old children left in its list are then torn down in one batch (≤ 2 grace periods; children
  /// destroyed before their parent). Readers find old or new for every key both versions have,
  /// never neither and never a freed object.
  /// All or nothing: a duplicate key (a new child's key held by an object that is not an old child,
  /// or by two new children) or a refused publish undoes every change, in reverse, waits one grace
  /// period if anything new was visible, and returns replaced == false: the old version stays in
  /// place, nothing new is published, and the caller may free the new objects.
  /// An old_parent already going away (in a batch or a queue: a lost race) is a result since
  /// issue 37: status already_unregistering, nothing changed.
  /// Requires: Parent's policy owns C through owning<> (a compile error otherwise); old_parent is
  /// registered here; new_parent and every new child freshly constructed; each new
  /// child's owner_hook names new_parent or nothing (then it is set to new_parent); new_parent has
  /// old_parent's keys; the policies have replace (indexed has it); C's first index has key_of and
  /// find_locked (lfht_index and hlist_index: a compile error otherwise). Outside read-side sections.
  /// Misuse (nothing changed): new objects not fresh (register_twice), old_parent never added or
  /// in another registry (as unregister), a child naming another parent
  /// (std::invalid_argument), read section, the lock's holder.
  /// Throws: misuse_error as above; std::invalid_argument (a parent's key differs, a child names
  /// another parent, a matched child's other key differs: all after undoing); std::bad_alloc
  /// (nothing changed). Complexity: O(children) lookups and links, plus the batch.
  /// Blocking: the writer lock, the batch (as unregister), one grace period on refusal.
  template <class Parent, class Range>
  replace_result replace_with_children(Parent& old_parent, Parent& new_parent, Range&& new_children);

  // ---- Issue 37: replace by key, families added whole, adds under a parent's key, conditional ----
  // ---- deletes, flush by predicate, bounded tables. Every lost race is a result, not misuse.   ----

  /// Reload by key: as replace, with the old object looked up under the writer lock, so a delete
  /// by key racing the reload is a result, never a use of freed memory or misuse.
  /// Requires: I is an index of new_obj's policy with `T* find_locked(const K&)`; new_obj freshly
  /// constructed with the keys of the object it replaces in every index; outside read sections.
  /// Effects: under the writer lock, the object with `key` (if any, and not already going away)
  /// is replaced by new_obj as by replace(old, new_obj) (one batch for the old one).
  /// Returns: replaced (stats: the old one's batch); not_found (no object has that key);
  /// already_unregistering (it is in a batch or a queue); refused (misuse under report). Unless
  /// replaced, nothing changed and new_obj is still the caller's (free it at once: never published).
  /// Misuse, Throws, Blocking: as replace. Thread safety: any thread, as replace.
  template <class I, class K, class U>
  replace_result try_replace(const K& key, U& new_obj) {
    return replace_by_key<I, false>(key, new_obj);
  }
  /// The same, keeping the old object's owned children (see replace(old, new, keep_children)).
  template <class I, class K, class U>
  replace_result try_replace(const K& key, U& new_obj, keep_children_t) {
    return replace_by_key<I, true>(key, new_obj);
  }

  /// Replace a parent and keep its children (`ip nexthop replace` of a group its routes name; a
  /// zone's SOA reloaded under its records): as replace(old_obj, new_obj), and in the same critical
  /// section every child in old_obj's owned lists is moved to new_obj's (same order) and its
  /// owner_hook re-pointed to new_obj. A reader that follows a child's parent() finds old_obj or
  /// new_obj, never a freed one: old_obj's batch has nothing left to queue and waits its grace
  /// period (one with no uninit hook) before destroying it. No child is unlisted, queued or created.
  /// Requires: the object's policy owns children (owning<>: a compile error otherwise); new_obj's
  /// lists are empty (it is fresh); as replace otherwise. Returns, Misuse, Throws: as replace.
  /// Complexity: O(children) re-links and stores, under the writer lock. Blocking: as replace.
  template <class U>
  replace_result replace(U& old_obj, U& new_obj, keep_children_t) {
    constexpr std::size_t k = slot_of<U>();
    object_at<k>* const o = &static_cast<object_at<k>&>(old_obj);
    return replace_core<k, true>([o]() noexcept { return o; }, static_cast<object_at<k>&>(new_obj), "registry::replace");
  }

  /// A family reloaded by key: as replace_with_children, with the old parent looked up under the
  /// writer lock in the parent's index I. Returns: as replace_with_children, plus not_found (no
  /// parent has that key) and already_unregistering (it is going away); unless replaced, nothing
  /// changed and the new objects are the caller's. Requires, Misuse, Throws, Blocking: as
  /// replace_with_children; I is an index of Parent's policy with find_locked.
  template <class I, class K, class Parent, class Range>
  replace_result try_replace_with_children(const K& key, Parent& new_parent, Range&& new_children);

  /// Publish a family whole: parent and children (objects or pointers, as replace_with_children
  /// takes them) under one hold of the writer lock, all or none. The children are linked into the
  /// parent's owned list and published first, then the parent, then all are marked registered: a
  /// reader that finds the parent (from its publish on) finds every child in its rcu_range().
  /// Requires: the children's type is owned by Parent's (owning<>: a compile error otherwise);
  /// parent and children freshly constructed, keys set; each child's owner_hook names parent or
  /// nothing (then it is set to parent); outside read sections.
  /// Returns: added; duplicate (a key taken anywhere, or two children with one key, or a refused
  /// publish: every publish undone in reverse, one grace period if anything was visible, nothing
  /// published, the objects still the caller's — their owner_hooks may now name parent);
  /// parent_gone (parent is itself owned and its owner is going away); full (a capacity reached);
  /// refused (misuse under report). Misuse (nothing changed): objects not fresh (register_twice),
  /// read section, the lock's holder; a child naming another parent, a null pointer
  /// (std::invalid_argument). Throws: as above; what publish throws (after undoing and a grace
  /// period). Complexity: O(children) publishes. Blocking: the writer lock; one GP on refusal.
  template <class Parent, class Range>
  add_result add_with_children(Parent& parent, Range&& children);

  /// Add a child under its parent's key: as add, with the parent looked up under the writer lock
  /// in its index ParentIndex, so a parent deleted concurrently refuses the child instead of
  /// being used after it is freed (no read guard, hold or put by hand).
  /// Requires: ParentIndex holds the parent type through whose owned_list the child's type is
  /// owned (owning<>); child freshly constructed, its owner_hook naming nothing or that parent.
  /// Returns: added; parent_gone (no parent has that key, or it is going away: nothing
  /// published); duplicate; full; refused (misuse under report). Misuse: as add; a child naming
  /// another parent (std::invalid_argument, nothing changed). Blocking: as add.
  template <class ParentIndex, class K, class U>
  add_result add_under(const K& parent_key, U& child);

  /// As add, telling why a refusal happened (add_status): duplicate, parent_gone, full, refused.
  /// Requires, Misuse, Throws, Blocking: as add.
  template <class U>
  add_result try_add(U& obj) {
    constexpr std::size_t k = slot_of<U>();
    return add_core<k>(static_cast<object_at<k>&>(obj), "registry::add", no_parent_to_resolve{}, false);
  }

  /// Add-and-hold: as try_add, and when added, a reference is taken on obj (obj.refs().hold())
  /// before the writer lock is released, so obj cannot be destroyed — even if another thread
  /// deletes it at once — until the caller lets it go. Children may be added to it meanwhile
  /// (add refuses them, parent_gone, once it is going away).
  /// Requires: as add. Effects: the caller owns one hold when added and must call
  /// obj.refs().put() once (its batch's ref drain waits for it); no hold otherwise.
  /// Returns, Misuse, Throws, Blocking: as try_add.
  template <class U>
  add_result add_and_hold(U& obj) {
    constexpr std::size_t k = slot_of<U>();
    return add_core<k>(static_cast<object_at<k>&>(obj), "registry::add_and_hold", no_parent_to_resolve{}, true);
  }

  /// Conditional delete by key (a GC deleting an entry only if it is still expired): as
  /// try_unregister<I>(key), with pred(const T&) called on the object found, under the writer
  /// lock; it is unregistered only if pred returns true. Returns: unregistered (the batch's
  /// stats); kept (pred returned false: nothing changed, no grace period); not_found; refused
  /// (misuse under report). Always the registry's own batch, attached reclaimer or not.
  /// Requires: pred does not block or take the writer lock (it runs under it), and returns
  /// bool; as try_unregister<I>(key) otherwise. Throws: what pred throws (nothing changed).
  /// Blocking: as unregister.
  template <class I, class K, class Pred>
  unregister_result try_unregister(const K& key, Pred&& pred);

  /// Flush by predicate (`ip route flush proto bgp`): every object of index I for which
  /// pred(const T&) returns true, in one batch (≤ 2 grace periods whatever the count; cascades
  /// included). The walk and the queueing happen under the writer lock (inside a read_guard of
  /// the index's flavor, for the walk), so an object matching pred is either in this batch or
  /// already going away, never missed by a race with a concurrent add (there is none: adds take
  /// the lock). Returns: unregistered (count, the batch's stats), or not_found when nothing
  /// matched (no grace period). Requires: I iterable inside a read_guard (lfht_index,
  /// hlist_index); pred neither blocks nor takes the writer lock. Always the registry's own batch.
  /// Throws: what pred throws (nothing changed). Complexity: O(index size) pred calls, plus the
  /// batch. Blocking: as unregister.
  template <class I, class Pred>
  unregister_result unregister_if(Pred&& pred);

  /// Effects: how many objects of type T are published here: the size of its policy's first
  /// index (exact under the writer lock; a relaxed snapshot otherwise). The count a capacity is
  /// checked against. Requires: T's policy's first index has size() (lfht_index, hlist_index).
  /// Thread safety: any thread. Complexity: O(1).
  template <class T>
  std::size_t size() const noexcept {
    return published_count<slot_of<T>()>();
  }

  /// Requires: fn is callable as fn(queues&) (a generic lambda, or a function taking one
  /// unreg_queue<T>&); outside read-side sections.
  /// Effects: under the writer lock, calls fn to fill the queues (the kernel's dellink), then
  /// unregisters everything queued as one batch, every policy a lane (cascades across types
  /// cost no extra grace period). Nothing queued: no grace period, stats.objects == 0; and when
  /// nothing was queued because every push was refused as misuse (under misuse_policy::report:
  /// an object not registered, already going away, of another registry), stats.refused too.
  /// Misuse and Throws: as unregister; if fn throws, its exception propagates and nothing
  /// changed (the queued objects stay registered).
  /// Complexity: fn, plus O(queued + dependents). Blocking: as unregister.
  template <class Fn>
  batch_stats unregister_with(Fn&& fn) {
    if (!outside_read_section("unregister") || !lock_not_held("registry::unregister")) {
      batch_stats refused;
      refused.refused = true;
      return refused;
    }
    std::scoped_lock lock(mutex_);
    queues q(*this);
    std::forward<Fn>(fn)(q);
    if (q.refused_ > 0 && q.size() == 0) {  // every object named was refused: the call was, nothing changed
      batch_stats refused;
      refused.refused = true;
      return refused;
    }
    return run(q, std::index_sequence_for<Policies...>{});
  }

  /// Requires: the caller is inside `guard` (the parameter proves it). Effects: index<I>().find(key):
  /// the object, valid until the guard ends, or nullptr. Complexity, Thread safety: the index's find.
  template <class I, class K>
  auto* find(const read_guard<typename I::flavor_type>& guard, const K& key) const {
    static_cast<void>(guard);
    return index<I>().find(key);
  }

  /// Effects: the index of type I (exactly one policy must hold it: a compile error otherwise),
  /// for lookups inside a read_guard and for updates done by hand under writer_lock() (then keep
  /// the object states consistent yourself, as add and unregister do). Throws: nothing. O(1).
  template <class I>
  I& index() noexcept {
    return policy_with_index<I>().template index<I>();
  }
  /// The same, const.
  template <class I>
  const I& index() const noexcept {
    return const_cast<basic_registry*>(this)->template index<I>();
  }

  /// Effects: the policy of type P (a compile error if it is not one), for its state and for
  /// batches built by hand. Throws: nothing. Complexity: O(1).
  template <class P>
  P& policy() noexcept {
    static_assert(detail::occurrences<P, Policies...> == 1, "rcubatch::registry::policy<P>: P is not one of its policies");
    return std::get<P>(policies_);
  }

  /// The writer lock's type: a Lockable wrapping lock_type that knows its holder
  /// (detail/writer_lock.hpp), so the registry's members diagnose a call from the thread holding it
  /// (holds_writer_lock) instead of deadlocking, and under qsbr waits for it offline.
  using writer_lock_type = detail::tracked_writer_lock<detail::thread_flavors_t<Flavor, Policies...>, Lockable>;

  /// Effects: the writer lock, for work done by hand with the primitives (hold it as add does;
  /// the registry's members called while holding it are refused: holds_writer_lock). Throws: nothing.
  writer_lock_type& writer_lock() noexcept { return mutex_; }
  /// Effects: the grace domain the batches use. Throws: nothing.
  grace_domain<Flavor>& domain() const noexcept { return *domain_; }
  /// Effects: the options given at construction. Throws: nothing.
  const registry_options& options() const noexcept { return options_; }
  /// Effects: the totals of every batch this registry ran itself (unregister*, replace*; the
  /// batches of an attached async_unregister count in its stats()) and its domain's counters
  /// (counters.hpp). Thread safety: any thread, any time (never waits for a batch).
  /// Complexity: O(kPhases). Blocking: a copy-long lock.
  registry_counters counters() const noexcept { return {batch_totals_.read(), domain_->stats()}; }

  // ---- The checks a batch of this registry's objects is queued through: unregister_with's ----
  // ---- queues, and async_unregister's submit and unregister (its whole seam: no friend). ----

  /// The admission of an object just queued for a batch run on this registry's policies.
  /// Requires: the writer lock; obj was just pushed into q (unreg_queue::push returned true), a
  /// queue whose batch runs on this registry's policies (unregister_with's queues, an attached
  /// async_unregister's); T is a policy's object type (a compile error otherwise).
  /// Effects: true when such a batch may tear obj down: its policy publishes it here (`bool
  /// owns(const T&)`, if the policy has one: indexed has it), and no owner_hook names it as a
  /// parent while its policy here declares no owning<> (owned.hpp: its children would stay
  /// indexed and point at it). Otherwise obj is taken out of q again and the misuse diagnosed,
  /// naming `caller` (wrong_registry, not_in_batch): false under misuse_policy::report, nothing
  /// changed; misuse_error thrown under throw_error, obj out of q.
  /// Thread safety: the writer lock's holder. Complexity: O(1). Blocking: never.
  template <class T>
  bool admit_queued(unreg_queue<T>& q, std::type_identity_t<T>& obj, const char* caller) {
    constexpr std::size_t k = slot_of<T>();
    if (!owns<k>(obj)) [[unlikely]] {
      q.remove(obj);
      report_wrong_registry(caller);
      return false;
    }
    if (children_left_behind<k>(obj)) [[unlikely]] {
      q.remove(obj);
      report_children_left_behind(caller);
      return false;
    }
    return true;
  }
  /// Not on the thread that holds the writer lock (a hook of a batch holding it, or code under
  /// writer_lock()): a call that takes the lock, or waits for a batch that takes it, would wait
  /// for itself. Effects: true when the calling thread does not hold the writer lock; otherwise
  /// misuse holds_writer_lock is diagnosed naming `caller` ("registry::add",
  /// "async_unregister::submit"): false under misuse_policy::report, misuse_error thrown under
  /// throw_error. Thread safety: any thread. Complexity: O(1). Blocking: never.
  bool lock_not_held(const char* caller) {
    if (!mutex_.held_by_caller()) [[likely]]
      return true;
    detail::diag_text msg(caller);
    msg += " called by the thread that holds the registry's writer lock (a hook of a batch that holds it, or "
           "code under writer_lock()): it would wait for itself; nothing was changed";
    detail::diagnose(misuse_kind::holds_writer_lock, msg.view());
    return false;
  }

  /// Combining (combining.hpp): attaches `l`, which the gate then tells about every batch that
  /// ran gate calls (combining_listener), and turns combining on while it is attached — what
  /// async_unregister does with combine_registry_unregister. Returns false, nothing changed, when
  /// a listener is attached already. Thread safety: any thread. Blocking: the gate's mutex.
  bool attach_combining_listener(combining_listener& l) noexcept { return gate_.attach(l); }
  /// Effects: detaches `l` if attached; the gate calls it no more once this returns, and calls in
  /// flight go on without it. Combining stays on if registry_options::combining.enabled.
  /// Thread safety, Blocking: as attach_combining_listener.
  void detach_combining_listener(combining_listener& l) noexcept { gate_.detach(l); }
  /// Calls waiting in the gate for a batch (a leader waiting for the writer lock and its
  /// followers): a snapshot, for tests and observability. Thread safety: any thread.
  std::size_t combining_waiting() const { return gate_.waiting(); }
  /// What the gate did since this registry was made (combining_stats: calls gone alone, batches
  /// led, followers' sleeps, wake-ups, the gate mutex's acquisitions): exact counts, for tests,
  /// observability and the many-writers bench. A snapshot. Thread safety: any thread.
  rcubatch::combining_stats combining_stats() const { return gate_.stats(); }

 private:
  template <class I>
  static constexpr std::size_t slot_of_index() noexcept {
    constexpr std::array<bool, kTypes> has{detail::policy_has_index<Policies, I>()...};
    std::size_t found = kTypes, count = 0;
    for (std::size_t i = 0; i < kTypes; ++i)
      if (has[i]) found = i, ++count;
    return count == 1 ? found : kTypes;
  }
  template <class I>
  auto& policy_with_index() noexcept {
    constexpr std::size_t k = slot_of_index<I>();
    static_assert(k < kTypes, "rcubatch::registry::index<I>: no policy (or more than one) holds an index of type I");
    return std::get<k>(policies_);
  }

  /// unregister_many's range, when it is a contiguous array of pointers to one policy's object
  /// type exactly (a std::vector<T*>, the common case): the batch's passes prefetch the objects
  /// ahead through it instead of chasing the queue's links (rollback_many.hpp, order_hint). Any
  /// other range: no hint. A hint is only prefetched from, so refused elements cost nothing.
  template <class Range>
  static constexpr bool pointer_array = std::ranges::contiguous_range<std::remove_reference_t<Range>> &&
                                        std::ranges::sized_range<std::remove_reference_t<Range>> &&
                                        std::is_pointer_v<std::ranges::range_value_t<std::remove_reference_t<Range>>>;
  template <class Range>
  static detail::order_hint order_hint_of(Range& objects) noexcept {
    if constexpr (pointer_array<Range>) {
      using U = std::remove_cv_t<std::remove_pointer_t<std::ranges::range_value_t<Range>>>;
      if constexpr (detail::position_of<U, typename Policies::object_type...>() < kTypes)
        return {&detail::lane_key<U>, static_cast<const void*>(std::ranges::data(objects)), std::ranges::size(objects)};
    }
    return {};
  }

  /// Requires: the writer lock. Whether the policy of slot K publishes obj here (see queues::push).
  template <std::size_t K>
  bool owns(const object_at<K>& obj) const noexcept {
    const auto& p = std::get<K>(policies_);
    if constexpr (requires { { p.owns(obj) } -> std::convertible_to<bool>; }) {
      return static_cast<bool>(p.owns(obj));
    } else {
      return true;
    }
  }
  /// Requires: the writer lock; child is not registered yet. Whether child (of a type owned
  /// through Rel) may be linked to the parent its hook names: no parent (true: owned by nobody);
  /// a parent registered here and in no queue or batch (true); a parent already going away
  /// (false, not misuse: a lost race, as a duplicate key is); misuse, diagnosed (false under
  /// report): a parent never added (not_registered), or added to another registry (wrong_registry).
  template <class Rel>
  bool owner_accepts(typename Rel::child_type& child, const char* caller) {
    typename Rel::parent_type* const p = Rel::hook_of(child).parent();
    if (p == nullptr) return true;
    const detail::registrable_base& parent = detail::base_of(*p);
    const reg_state st = parent.state();
    if (st == reg_state::uninitialized) {
      detail::diag_text msg(caller);
      msg += ": the parent the child's owner_hook names is not registered (add the parent first); nothing was "
             "published";
      detail::diagnose(misuse_kind::not_registered, msg.view());
      return false;
    }
    if (st != reg_state::registered || detail::registrable_access::owner(parent) != nullptr) return false;
    if (owns<slot_of<typename Rel::parent_type>()>(*p)) [[likely]]
      return true;
    detail::diag_text msg(caller);
    msg += " (the child's parent)";
    report_wrong_registry(msg.view().data());
    return false;
  }

  /// Requires: the writer lock; n is freshly constructed and about to take o's place (replace,
  /// replace_with_children), nothing published yet. The one path by which a successor takes its
  /// predecessor's place in its owner's list: if T is owned (an owning<> of this registry names
  /// it), n names o's parent unless it names one itself (owned.hpp: inherit_owner), and that
  /// parent must accept it (owner_accepts: false when it is going away, or on misuse under
  /// report). link_owned links n once it is published. True for a type owned by nobody.
  template <class T>
  bool successor_owner_accepts(T& o, T& n, const char* caller) {
    if constexpr (std::is_void_v<owner_of<T>>) {
      return true;
    } else {
      detail::inherit_owner<owner_of<T>>(o, n);
      return owner_accepts<owner_of<T>>(n, caller);
    }
  }
  /// Requires: the writer lock; obj was just published, its parent checked (owner_accepts).
  /// Effects: links obj into the list of the parent its owner_hook names (add, replace,
  /// replace_with_children); nothing for a type owned by nobody.
  template <class T>
  void link_owned(T& obj) noexcept {
    if constexpr (!std::is_void_v<owner_of<T>>) detail::link_to_owner<owner_of<T>>(obj);
  }

  /// Requires: the writer lock. Whether obj is going away: it was registered, and is now in a
  /// batch, in a queue (an async submit, another batch's cascade, a chunked unlist's later
  /// chunks: still listed), or gone. A freshly constructed object is not (push diagnoses it).
  template <class U>
  static bool going_away(const U& obj) noexcept {
    const auto& base = static_cast<const registrable<registrable_type_t<U>>&>(obj);
    const reg_state st = base.state();
    return st != reg_state::uninitialized &&
           (st != reg_state::registered || detail::registrable_access::owner(base) != nullptr);
  }

  /// unregister_many's pushes: every element of `objects` (objects or pointers) into q.
  template <class Range>
  static void push_all(queues& q, Range& objects) {
    const auto push_one = [&q](auto&& element) {
      if constexpr (std::is_pointer_v<std::remove_cvref_t<decltype(element)>>) {
        if (element == nullptr) throw std::invalid_argument("rcubatch::registry::unregister_many: a null pointer");
        q.push(*element);
      } else {
        q.push(element);
      }
    };
    if constexpr (pointer_array<Range>) {
      // An array of pointers: the push pass prefetches as the batch's passes do (order_hint).
      const auto* const elements = std::ranges::data(objects);
      const std::size_t n = std::ranges::size(objects);
      for (std::size_t i = 0; i < n; ++i) {
        if (i + detail::kHintAhead < n && elements[i + detail::kHintAhead] != nullptr) {
          __builtin_prefetch(elements[i + detail::kHintAhead], 1, 3);
          __builtin_prefetch(reinterpret_cast<const char*>(elements[i + detail::kHintAhead]) + 64, 0, 3);
        }
        push_one(elements[i]);
      }
    } else {
      for (auto&& element : objects) push_one(element);
    }
  }

  using thread_flavors = detail::thread_flavors_t<Flavor, Policies...>;

  // ---- Combining (combining.hpp): unregister / try_unregister callers through the gate ----

  /// One call through the gate, on its caller's stack: what it queues into a batch, and its own
  /// outcome. A virtual push_into typed on this registry's queues: the leader runs the calls of
  /// every kind (by object, unless going away, by key) in one batch.
  class gate_call : public combining_call {
   public:
    /// Requires: the writer lock (the leader's, or this caller's alone). Queues the call's object
    /// into q, or finds that it has none (a lost race), and records that in result.status; a
    /// misuse diagnosed by the queue is kept in error for its caller (nothing queued).
    virtual void push_into(basic_registry& r, queues& q) noexcept = 0;
    /// After its batch (or none: nothing queued): the stats this call returns. Shared with other
    /// calls, its objects count its own (its dependents are not told apart); the rest is the
    /// batch's: the grace periods and the times it waited for.
    void complete(const batch_stats& st, bool shared) noexcept {
      if (result.status == unregister_status::unregistered) {
        if (&st != &result.stats) result.stats = st;  // alone, run_alone ran it into result.stats
        if (shared) {
          result.stats.objects = result.unregistered;
          result.stats.dependents_added = 0;
        }
      } else if (result.status == unregister_status::refused) {
        result.stats.refused = true;
      }
    }
    unregister_result result{};  // its own outcome
    std::exception_ptr error;    // a misuse_error its push threw, rethrown on its caller's thread

   protected:
    gate_call() = default;
    ~gate_call() = default;
    /// Requires: the writer lock. Queues obj, unless it is going away (lost_race: a result).
    template <class T>
    void push_object(queues& q, T& obj, bool lost_race_is_result) noexcept {
      try {
        if (going_away(obj)) {  // in a batch, a queue (this batch's, a reclaimer's), or gone
          if (lost_race_is_result) {
            result.status = unregister_status::already_unregistering;
            result.missed = 1;
            return;
          }
          result.status = unregister_status::refused;  // before the diagnosis, which may throw
          detail::diagnose(misuse_kind::already_unregistering,
                           "registry::unregister: the object is already going away (in a batch, in this "
                           "combined batch by another call, or in a reclaimer's queue); nothing changed");
        } else if (q.push(obj)) {
          result.status = unregister_status::unregistered;
          result.unregistered = 1;
        } else {
          result.status = unregister_status::refused;  // misuse under report, diagnosed by push
        }
      } catch (...) {
        result.status = unregister_status::refused;
        error = std::current_exception();
      }
    }
  };
  /// unregister(obj) (kLostRaceIsResult false: going away is misuse) and try_unregister(obj)
  /// (true: already going away is a result).
  template <std::size_t K, bool kLostRaceIsResult>
  class object_call final : public gate_call {
   public:
    explicit object_call(object_at<K>& obj) noexcept : obj_(obj) {}
    void push_into(basic_registry&, queues& q) noexcept override { this->push_object(q, obj_, kLostRaceIsResult); }

   private:
    object_at<K>& obj_;
  };
  /// try_unregister<I>(key): the lookup under the writer lock, as try_unregister_many's. A key
  /// another call of the same batch queued first is not_found, as it would be after that batch.
  template <class I, class K>
  class by_key_call final : public gate_call {
   public:
    explicit by_key_call(const K& key) noexcept : key_(key) {}
    void push_into(basic_registry& r, queues& q) noexcept override {
      auto* obj = r.template index<I>().find_locked(key_);
      if (obj == nullptr || q.contains(*obj)) {
        this->result.status = unregister_status::not_found;
        this->result.missed = 1;
        return;
      }
      this->push_object(q, *obj, true);
    }

   private:
    const K& key_;
  };
  using gate_type = combining_gate<gate_call, thread_flavors>;
  using gate_list = typename gate_type::batch_list;

  /// A gate call (unregister, try_unregister by object or key): the registry's checks, then
  /// alone at once when no leader waits and the writer lock is free (try_lock), else through
  /// the gate (led, followed, or handed back to run alone). Rethrows the call's own exception.
  template <class Call>
  void through_gate(Call& call) {
    gate_call& c = call;
    if (!outside_read_section("unregister") || !lock_not_held("registry::unregister")) {
      c.result.status = unregister_status::refused;
      c.result.stats.refused = true;
      return;
    }
    bool alone = false;
    if constexpr (requires(writer_lock_type& l) { l.try_lock(); }) {
      if (gate_.idle() && mutex_.try_lock()) {
        std::unique_lock lock(mutex_, std::adopt_lock);
        gate_.count_alone();
        run_alone(c, lock);
        alone = true;
      }
    }
    if (!alone) {
      const combining_turn t = gate_.arrive(c);
      if (t == combining_turn::lead) lead_batch(c);
      if (c.turn() == combining_turn::alone) {  // the shared batch threw (or a call_rcu worker): by itself
        c.result = unregister_result{};           // what the shared batch's push recorded
        std::unique_lock lock(mutex_);
        run_alone(c, lock);
      }
    }
    if (c.error) std::rethrow_exception(c.error);
  }

  /// Requires: the writer lock. The calls of b in one batch: each queues its object, then one
  /// batch runs — run(), unregister_with's. Returns the calls that queued an object (0: no
  /// batch ran); st: the batch's stats. Throws: what the batch throws (validate: nothing changed).
  std::size_t run_calls(gate_list& b, batch_stats& st) {
    queues q(*this);
    std::size_t requests = 0;
    for (gate_call& c : b) {
      c.push_into(*this, q);
      if (c.result.status == unregister_status::unregistered) ++requests;
    }
    if (requests != 0) st = run(q, std::index_sequence_for<Policies...>{});
    const bool shared = b.size() > 1;
    for (gate_call& c : b) c.complete(st, shared);
    return requests;
  }

  /// c's batch of its own, under `lock` (the alone path; a call handed back). Requires: c.result
  /// as new. The batch's stats go straight into c.result.stats (no copy: the alone path is what
  /// a lone writer runs on every call, and must cost what a plain unregister costs).
  void run_alone(gate_call& c, std::unique_lock<writer_lock_type>& lock) {
    gate_list one;
    one.push_back(c);
    batch_stats& st = c.result.stats;
    std::size_t requests = 0;
    try {
      requests = run_calls(one, st);
    } catch (...) {
      one.clear();
      throw;
    }
    one.clear();
    gate_.batch_ended(1, false);
    lock.unlock();
    if (requests != 0) gate_.ran_alone(c, st, requests);
  }

  /// The leader's turn: the writer lock (offline while it waits), the calls queued by then,
  /// one batch, then every caller woken with its outcome. If the batch throws with other calls
  /// in it, nothing changed (validate's contract): each call that queued an object is handed
  /// back to run alone (so the exception reaches its own caller), the others are done.
  void lead_batch(gate_call& mine) {
    gate_list b;
    batch_stats st;
    std::size_t requests = 0;
    {
      std::unique_lock lock(mutex_);
      // combining.gather_released: the callers the last shared batch released are runnable and
      // about to call again; sleeping until they are back (at most that batch's time) lets
      // them queue for this batch — while the gate's meter finds that it pays.
      const bool gathered = gate_.released_still_away() && gate_.gather_released();
      gate_.take(b);
      try {
        requests = run_calls(b, st);
        gate_.batch_ended(b.size(), gathered);
      } catch (...) {
        lock.unlock();
        const bool only_mine = b.size() == 1 && &b.front() == &mine;
        gate_.finish(b, nullptr, 0, [only_mine](const gate_call& c) {
          return !only_mine && c.result.status == unregister_status::unregistered ? combining_turn::alone
                                                                                  : combining_turn::done;
        });
        if (only_mine) throw;
        return;
      }
    }
    gate_.finish(b, requests != 0 ? &st : nullptr, requests, [](const gate_call&) { return combining_turn::done; });
  }

  class flush_job;  // one batch handed to a deferred_destroy: registry_deferred.hpp

  /// Whether obj (of slot K) was named as parent by an owner_hook while its policy here owns no
  /// children (owned.hpp: detail::children_left_behind): checked wherever an object is queued
  /// for teardown, before anything changes.
  template <std::size_t K, class U>
  static bool children_left_behind(U& obj) noexcept {
    return detail::children_left_behind<std::tuple_element_t<K, std::tuple<Policies...>>>(
        static_cast<object_at<K>&>(obj));
  }
  static void report_children_left_behind(const char* what) {
    detail::diag_text msg(what);
    msg += ": an owner_hook names the object as its parent, but its policy in this registry declares no "
           "rcubatch::owning<&Parent::list>: its batch would destroy it while its children stay indexed and "
           "point at it; add owning<> for the children's list to the parent's policy (nothing was changed)";
    detail::diagnose(misuse_kind::not_in_batch, msg.view());
  }

  void report_wrong_registry(const char* what) const {
    detail::diag_text msg(what);
    msg += ": the object is registered, but not in this registry (another registry of the same type, "
           "or unlinked by hand); nothing was changed";
    detail::diagnose(misuse_kind::wrong_registry, msg.view());
  }

  bool outside_read_section(const char* what) {
    if (!in_read_section<Flavor>()) return true;
    detail::diag_text msg("registry::");
    msg += what;
    msg += " called inside a read-side section of ";
    msg += Flavor::name;
    msg += ": taking the writer lock there can deadlock against a writer waiting for this reader's grace period";
    detail::diagnose(misuse_kind::blocking_in_read_section, msg.view());
    return false;  // misuse_policy::report: refused, nothing changed
  }

  // What rollback_many(domain [, unlock_during_waits(lock)], options, lane(q, policy)...) does,
  // one lane per policy. It calls the overloads' common body directly because their check that
  // the lanes' types differ compares addresses in a constant expression, which g++ 12 refuses
  // under -fsanitize=undefined; this class checks the same at compile time by type (above).
  template <std::size_t... K>
  batch_stats run(queues& q, std::index_sequence<K...>) {
    auto lanes = std::make_tuple(lane(std::get<K>(q.q_), std::get<K>(policies_))...);
    detail::batch_context ctx(detail::writer_lock_ref::make<detail::thread_flavors_t<Flavor, Policies...>>(
        mutex_, detail::lock_release_for(options_.unlock_during_waits, options_.hold_lock_through_drain)));
    ctx.order = q.order_;
    batch_stats st = detail::run_specs(*domain_, options_.rollback, ctx, std::get<K>(lanes)...);
    batch_totals_.add(st);  // counters()
    return st;
  }

  // ---- Issue 37's internals: the one add path, the one replace path, a family's add ----

  /// add's default: no parent to look up (add_under passes one that does).
  struct no_parent_to_resolve {
    template <class T>
    add_status operator()(T&) const noexcept {
      return add_status::added;
    }
  };

  // going_away(obj): above, beside push_all (one definition for the chunked unlist and issue 37).
  /// Whether the parent child's owner_hook names is going away (a lost race for an add or a replace).
  template <class Rel>
  static bool owner_going_away(typename Rel::child_type& child) noexcept {
    typename Rel::parent_type* const p = Rel::hook_of(child).parent();
    return p != nullptr && going_away(*p);
  }

  /// Requires: the writer lock, or a snapshot is enough. Objects of slot K published here: the
  /// size of its policy's first index (what size<T>() and a capacity count).
  template <std::size_t K>
  std::size_t published_count() const noexcept {
    using P = std::tuple_element_t<K, std::tuple<Policies...>>;
    static_assert(detail::first_index_has_size<P>,
                  "rcubatch::registry: size<T>() and a policy's capacity() count the objects in the policy's first "
                  "index, which needs size() (lfht_index, hlist_index; indexed<T, Index...> as the policy's base)");
    if constexpr (detail::first_index_has_size<P>) {
      using first = std::tuple_element_t<0, typename P::index_types>;
      return std::get<K>(policies_).template index<first>().size();
    } else {
      return 0;
    }
  }
  /// Requires: the writer lock. Whether `more` objects of slot K fit under its policy's
  /// capacity() (a policy without one: no limit).
  template <std::size_t K>
  bool has_room(std::size_t more) const noexcept {
    const auto& p = std::get<K>(policies_);
    if constexpr (requires { { p.capacity() } -> std::convertible_to<std::size_t>; }) {
      return published_count<K>() + more <= static_cast<std::size_t>(p.capacity());
    } else {
      return true;
    }
  }

  /// add, try_add, add_and_hold and add_under's body: under the writer lock, the fresh check,
  /// resolve (add_under: the parent by key), the owner's check, the capacity, the publish; on
  /// success obj is linked to its owner, marked registered and, if `hold`, held for the caller.
  template <std::size_t K, class Resolve>
  add_result add_core(object_at<K>& t, const char* caller, Resolve&& resolve, bool hold);

  /// replace's and try_replace's body: under the writer lock, find_old() (the object, or by key),
  /// the checks (a lost race is a result), the swap in every index, then old's batch. kKeep: old's
  /// owned children move to new_obj in the same critical section (children_step: share, adopt).
  template <std::size_t K, bool kKeep, class FindOld>
  replace_result replace_core(FindOld&& find_old, object_at<K>& n, const char* caller);

  template <class I, bool kKeep, class K, class U>
  replace_result replace_by_key(const K& key, U& new_obj);

  /// Requires: the writer lock. Effects: step.template operator()<Rel>() for each owned relation
  /// of slot K's policy. replace_core's keep_children steps: Rel::share before `to` is published
  /// (readers who find it see from's children), Rel::unshare if the publish throws, Rel::adopt
  /// once `to` took `from`'s place (the children move, each owner_hook naming `to`: a reader that
  /// follows parent() finds from or to, and from is destroyed only after its batch's grace period).
  template <std::size_t K, class Step>
  static void children_step(Step&& step) noexcept;

  /// Whether obj is freshly constructed (uninitialized, and not `linked` into a list by hand);
  /// otherwise misuse register_twice, naming caller and role (false under report; nothing changed).
  static bool is_fresh(const detail::registrable_base& obj, const char* caller, const char* role, bool linked = false);

  /// The children a family member was given (objects or pointers of C), as pointers.
  /// Throws: std::invalid_argument naming `caller` on a null pointer (nothing changed).
  template <class C, class Range>
  static std::vector<C*> family_members(Range& children, const char* caller);
  /// Requires: the writer lock. Whether the parent and every child of a family about to be
  /// published are freshly constructed (misuse register_twice otherwise, naming `caller` and the
  /// role: false under report, nothing changed) and each child's owner_hook names the parent or
  /// nothing. Throws: misuse_error; std::invalid_argument for a child naming another parent.
  template <class Rel, class C>
  static bool family_is_fresh(const typename Rel::parent_type& parent, const std::vector<C*>& children,
                              const char* caller, const char* parent_role, const char* child_role);

  /// add_with_children's body (see there): children published first, then the parent; any
  /// refusal undoes every publish in reverse (one grace period if anything was visible).
  template <std::size_t kp, std::size_t kc, class Rel, class Range>
  add_result add_family(object_at<kp>& parent, Range& children);

  /// replace_with_children's body (see there). One pass applies, remembering each change; a
  /// refusal or an exception undoes them in reverse (each index operation undone by its inverse),
  /// so nothing is left half-published; on success the old version goes through the one teardown
  /// path (run: rollback_many), its objects marked unlisted-early (the swaps unlisted them).
  template <std::size_t kp, std::size_t kc, class Rel, class FindOld, class Range>
  replace_result replace_family(FindOld&& find_old, object_at<kp>& new_p, Range& new_children);

  writer_lock_type mutex_;
  registry_options options_;
  grace_domain<Flavor>* domain_;
  std::tuple<Policies...> policies_;
  detail::shared_batch_totals batch_totals_;  // counters(): every batch run() ran
  gate_type gate_{options_.combining};  // combining.hpp: unregister callers, when on or a listener is attached
};

// `registry<Policies...>`, the common spelling (the default flavor, a std::mutex), is defined in
// fwd.hpp, so that code including only fwd.hpp can name it.

}  // namespace rcubatch

// The bodies of three groups of basic_registry's members, each group one concept (issue 35). They
// are out-of-class definitions rather than base classes: every group works on the same private
// state (the writer lock, the policies, run()), which a CRTP base or a helper class could reach
// only through a friend or by exposing it. Declarations and contracts stay in the class above;
// including registry.hpp includes them all.
#include "rcubatch/registry_by_key.hpp"
#include "rcubatch/registry_deferred.hpp"
#include "rcubatch/registry_publish.hpp"
