// rcubatch/rollback_many.hpp — unregister every queued object with at most two grace periods.
//
//   std::scoped_lock lock(registry.writer_mutex);       // the caller's lock, held throughout
//   rcubatch::unreg_queue<session> q;
//   for (session* s : doomed) q.push(*s);
//   rcubatch::batch_stats st = rcubatch::rollback_many(q, session_policy{registry}, domain);
//   // st.grace_periods <= 2, whatever q.size() and however deep the cascade
//   (compiled in tests/header_examples_test.cpp)
//
//   // Several object types in one batch, each with its own queue and policy; hooks of one lane
//   // may queue dependents of any lane (sessions queue their streams from notify):
//   rcubatch::rollback_many(domain, rcubatch::lane(sessions, session_policy{reg}),
//                                   rcubatch::lane(streams, stream_policy{reg}));
//   (compiled in tests/header_examples_test.cpp)
//
// The generic form of Linux's unregister_netdevice_many (2.6.33, 2009). The phases (their order,
// the grace periods between them, what each one's time covers) are kPhaseTable in phase.hpp; the
// hooks each phase runs, with locks and rules, are the table in policy.hpp. rollback_engine::run
// below is that table as code: one private function per phase, in the table's order.
//
// Dependents queued from notify are unlisted after grace period #1, so their own notify/uninit run
// before a full grace period has passed since their unlist; only #2 separates their unlist from
// their destroy. Hooks must therefore only unlink and retire, never free directly — which is the
// rule for every hook anyway. That is what keeps a cascade of any depth at two grace periods.
//
// A single unregister (unregister_one) is a batch of one through the same code. rollback_range
// (below) is push_range and rollback_many in one call, over the caller's range of objects or
// pointers, all or nothing: the range is checked first; then, when the policy has neither
// validate nor close_many, each object is queued and unlisted in one step of one walk over the
// range (issue 36).
//
// Memory ordering. For any reader section R of the domain's flavor and any object X of the batch:
// if R began before the unlink that unpublished X (unlist for X; a hook's unlink for a retiree),
// then R ends before destroy(X) begins and before X's retirees are disposed — the grace period
// that follows the unlink waits for R (grace_domain.hpp). A reader that begins after the unlink
// cannot find X through what was unlinked. For any holder H: everything H did before its put()
// happens-before destroy(X) (the put releases, the drain acquires: ref_count.hpp). Every hook's
// writes happen-before the hooks that follow it (one thread runs them all), and before
// destroy(X) and every disposal, on whichever thread those run.
//
// Lock hygiene: the registry's writer lock belongs to the caller. rollback_many never takes or drops
// it — unless the caller passes unlock_during_waits(lock): then the grace-period waits, the
// disposal of retirees and the ref drain (with destroy) run with the lock released, re-taken for
// notify/uninit, rebroadcast and before returning. Only opt in when no lock is nested inside the
// writer lock (the kernel reverted exactly this in 2025). Two writers that both opt in may race:
// a cascade that reaches an object already in the other writer's batch is not misuse; the parent
// waits for it to be destroyed (batch::queue).
//
// Misuse: called inside a read-side section → diagnosed before anything changes (under
// misuse_policy::report the call is refused: stats.refused, queues untouched). Objects that are not
// registered never reach a batch: unreg_queue::push refuses them (unregister_one then returns
// stats.skipped = 1).
//
// Cost: O(N) hook calls, 2 grace periods (1 if nothing was unlinked after the first). Measured on
// the 2-vCPU test VM, memb, one busy reader, 10,000 objects (examples/demo, 2026-11-30): 70 ns per
// object in all, queueing included, ~45 µs of it the two grace periods; one GP per object instead
// costs ~19 µs per object; the same teardown written by hand with no library, ~32 ns per object.
// The library walks the objects four times (the queue's push, unlist, uninit, the drain), the
// floor twice plus once over its own array of pointers. The walks alone, written by hand with no
// checks (the demo's chain floor), cost 1.06x the floor at N = 10^4 and 1.34x at N = 10^6
// (2026-12-02); the rest is per-object bookkeeping (push's checks, the states readers may read,
// the draining mark, the parent edge). So there is no pass to adopt the queue, uninit and the
// drain walk forwards (as the list and the hardware prefetcher do), and the unlist and uninit
// passes prefetch a few nodes ahead (kPrefetchAhead). The ratio to the floor, measured with each
// change, is in bench/RESULTS.md ("The teardown demo", issue 13). Several lanes add one indirect call per lane
// per phase, none per object. When the caller already holds the queued objects in an array
// (registry::unregister_many over a std::vector<T*>), the batch takes it as an order hint and every
// pass prefetches kHintAhead objects ahead through it: at 10^6 objects the queue's links cost one
// memory latency per object per pass (issue 36; bench/RESULTS.md, "The registry at the floor").
// Passes that have nothing to do cost nothing (issue 36): no validate, notify, batch_notify or
// uninit pass without its hook; an owning<> policy's notify pass runs only in a round where an
// object has a child to queue (the unlist pass notes it); the drain is one walk that destroys
// every object nobody holds as it meets it. Per object, at 10^4 (callgrind, the demo's layout,
// bench/teardown_passes.cpp): rollback_range 193 instructions (its check pass included) against
// the floor's 156; push_range then rollback_many 203 (250 / 166 before issue 36's changes to the drain's walk, the look-ahead
// and registrable's destructor; bench/RESULTS.md, "Fewer passes" and "One walk for the queue and
// the unlist").
// bench/RESULTS.md compares it with call_rcu, libcds and DPDK.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <functional>
#include <limits>
#include <optional>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rcubatch/batch.hpp"
#include "rcubatch/detail/probe.hpp"
#include "rcubatch/detail/type_name.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/membership.hpp"
#include "rcubatch/owned.hpp"
#include "rcubatch/policy.hpp"
#include "rcubatch/ref_drain.hpp"
#include "rcubatch/ref_tracker.hpp"
#include "rcubatch/sharded_refs.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch {

/// Options of one rollback_many call.
struct rollback_options {
  drain_options drain{};  ///< the ref drain's reporting (ref_drain.hpp)
  /// Set every object's dismantle flag for the whole batch (the point of the flag). Turn it off
  /// only to reproduce registries that predate it, for comparisons (examples/netdev legacy mode).
  bool mark_dismantle = true;
  /// Chunked unlist (0: off, the default): the queued objects are unlisted this many at a time,
  /// and between two chunks a writer waiting for the writer lock gets it (the lock is released
  /// until one waiting writer has taken it, then re-taken; nobody waiting: nothing is released).
  /// Still one batch: grace period #1 follows the last chunk. Only where the batch knows the
  /// lock (a registry's batches, rollback_many with unlock_during_waits); a bare rollback_many
  /// cannot release its caller's lock and ignores it. Between chunks another writer may meet an
  /// object of the batch that is still listed: it is going away (registry: try_unregister by key
  /// or by object reports already_unregistering; add of a child under it is refused; add of its
  /// key is a duplicate), as it is for the objects of any running batch.
  std::size_t unlist_chunk = 0;
};

/// Opt-in: release `lock` (which the caller holds) during grace-period waits and the ref drain.
template <class Lockable>
struct unlock_during_waits {
  /// Names the lock to release; it must be held by the caller of rollback_many.
  explicit unlock_during_waits(Lockable& l) noexcept : lock(l) {}
  Lockable& lock;  ///< the writer lock, released and re-taken around the waits
};

/// One object type of a several-type batch: its queue and its policy (kept by reference if an
/// lvalue, moved in if a temporary). Make it with rcubatch::lane(queue, policy).
template <class T, class Policy>
struct lane_spec {
  unreg_queue<T>& queue;  ///< the lane's objects
  Policy policy;          ///< the lane's hooks
};

/// Effects: names one lane of rollback_many(domain, lane(...), lane(...)).
template <class T, class Policy>
lane_spec<T, Policy> lane(unreg_queue<T>& q, Policy&& policy) {
  return lane_spec<T, Policy>{q, std::forward<Policy>(policy)};
}

namespace detail {

struct batch_access {
  static batch_stats& stats(batch& b) noexcept { return b.stats_; }
  static bool unlinked(const batch& b) noexcept { return b.unlinked_after_gp1_; }
  static void passed_gp1(batch& b) noexcept { b.past_gp1_ = true; }
  static void set_parent(batch& b, registrable_base* p) noexcept { b.current_parent_ = p; }
  static void close_door(batch& b) noexcept {
    b.accepting_dependents_ = false;
    b.current_parent_ = nullptr;
  }
  static void dispose_untied(batch& b) noexcept { dispose_all(b.retired_); }
  static void take_tied_to(batch& b, const registrable_base& r, retire_fifo& group) noexcept {
    b.take_tied_to(r, group);
  }
  static void dispose_late(batch& b) noexcept { dispose_all(b.late_); }
  template <class Flavor>
  static batch make(lane_base* const* lanes, std::size_t n, grace_domain<Flavor>& d) noexcept {
    return batch(lanes, n, &d, [](void* dom) noexcept { static_cast<grace_domain<Flavor>*>(dom)->synchronize(); });
  }
};

/// The passes keep end() (the list's header, fixed for the list's life), their running results
/// and the policy's address (unlist, uninit) in locals: a hook's stores may alias the lane and the
/// queue as far as the compiler knows, so it reloaded them per object (2 ns of uninit's 8.6 per
/// object for end() and the results, issue 13's A/B; the policy's address, with push's common
/// case inline, took the demo's ratio to its floor from 1.36–1.44 to 1.28–1.30: bench/RESULTS.md,
/// "The teardown demo").
///
/// How many nodes ahead the unlist and uninit passes prefetch: following the list a few nodes
/// ahead overlaps the next miss with this object's work (without it the demo's ratio to its floor
/// rose by ~0.07). The drain does without: there the cursor's own chase cost as much as it saved
/// (1.42 with it; 1.39 without it and with the dismantle flag read once per drain, the two changes
/// measured together, in one interleaved run of 60 rounds each).
inline constexpr int kPrefetchAhead = 4;

/// A cursor kPrefetchAhead nodes ahead of a pass, prefetching each node it reaches (the lines of
/// its hook and the next, where its header and hooks are, for writing). step() once per object.
/// It follows the links the pass follows and runs on through the list's header: the queue's list
/// is circular (after its last node come the header and the first node again), so a step is one
/// load and two prefetches, with no test for the end (near the end it prefetches the header and
/// nodes the pass has left, which costs nothing). Issue 36: without the end tests, and with the
/// hint tested once per pass, the unlist and uninit passes went from 51 to 37 instructions per
/// object (callgrind, the demo's batch: bench/teardown_passes.cpp).
/// No pass that uses it links, unlinks or frees a node of its list.
class prefetcher {
  using node_traits = registrable_list::node_traits;

 public:
  explicit prefetcher(registrable_list::iterator from) noexcept : ahead_(from.pointed_node()) {
    for (int i = 0; i < kPrefetchAhead; ++i) step();
  }
  void step() noexcept {
    ahead_ = node_traits::get_next(ahead_);
    __builtin_prefetch(ahead_, 1, 3);
    __builtin_prefetch(reinterpret_cast<const char*>(ahead_) + 64, 1, 3);
  }

 private:
  node_traits::node_ptr ahead_;
};

/// A lane's objects in join order as the caller already holds them in an array (registry::
/// unregister_many over a contiguous range of T*: order_hint below). The chain through the
/// queue is a dependent load per object, one memory latency each in a large batch of objects
/// scattered in memory (issue 36: the unlist pass 214 ns per object at 10^6 against 43 for the
/// same unlinks by hand over a vector, 2026-12-04); an array's next addresses are known at once,
/// so a pass prefetches kHintAhead objects ahead from it and the chain's loads hit the cache.
/// A hint is only ever prefetched from: a wrong or stale one costs wasted prefetches, never
/// correctness (a prefetch does not fault, and no pass reads an object through it).
inline constexpr std::size_t kHintAhead = 16;

/// Which lane a hint is for (lane_key<T>), and its T* array, type-erased for batch_context.
struct order_hint {
  const void* key = nullptr;      ///< &lane_key<T>
  const void* objects = nullptr;  ///< T* const[size], in the order the objects were queued
  std::size_t size = 0;
};

/// A pass's look-ahead through the lane's order hint: kHintAhead objects ahead, for a pass that
/// starts at the queue's first object (the hint's first).
template <class T>
class hint_prefetch {
 public:
  hint_prefetch(T* const* hint, std::size_t size) noexcept : hint_(hint), size_(size) {
    for (std::size_t i = 0; i < kHintAhead && i < size_; ++i) touch(hint_[i]);
  }
  void step() noexcept {
    if (next_ + kHintAhead < size_) touch(hint_[next_ + kHintAhead]);
    ++next_;
  }

 private:
  /// The object's first lines (its registrable base and, for most objects, the index hooks a
  /// pass writes), up to four, for writing.
  static void touch(const T* obj) noexcept {
    constexpr std::size_t kLines = sizeof(T) < 256 ? (sizeof(T) + 63) / 64 : 4;
    const char* p = reinterpret_cast<const char*>(obj);
    for (std::size_t l = 0; l < kLines; ++l) __builtin_prefetch(p + 64 * l, 1, 3);
  }
  T* const* hint_;
  std::size_t size_;
  std::size_t next_ = 0;
};

/// Between chunks of the destroy pass (0 objects: no chunks): fn(arg), on the destroying thread,
/// with no lock of the batch held (deferred_destroy.hpp: a yield, and a quiescent state under qsbr).
struct destroy_pause {
  std::size_t every = 0;
  void (*fn)(void*) noexcept = nullptr;
  void* arg = nullptr;
};

/// Batch ids: 1, 2, 3, ... in start order across the process (batch_stats::batch_id), as the
/// probes and the stall reports name batches.
inline std::atomic<std::uint64_t> g_next_batch_id{1};

/// Runs f as (part of) phase p: counts the entry and adds its wall time (batch_stats), which it
/// returns; probe phase_end reports that entry (docs/observability.md).
template <class F>
batch_stats::duration timed(batch_stats& stats, phase p, F&& f) {
  ++stats.phase_entries[static_cast<std::size_t>(p)];
  const auto t0 = std::chrono::steady_clock::now();
  std::forward<F>(f)();
  const auto took = std::chrono::duration_cast<batch_stats::duration>(std::chrono::steady_clock::now() - t0);
  stats.time_of(p) += took;
  RCUBATCH_PROBE(phase_end, stats.batch_id, static_cast<unsigned>(p), to_string(p).data(), took.count());
  return took;
}

/// One lane: a queue's objects and their policy's hooks; the passes over it call the hooks
/// directly (no per-object indirection). Owner: the relation through which another lane's
/// objects own T (owned.hpp), void if none. Members: the relations in which T is a member of
/// another lane's objects (membership.hpp), std::tuple<> if none.
template <class T, class P, class Owner = void, class Members = std::tuple<>>
class typed_lane : public lane_base {
  using access = registrable_access;
  using iterator = registrable_list::iterator;

 public:
  using hooks_type = policy_hooks<P, T>;
  static_assert(hooks_type::check());
  /// Whether the notify phase runs for this lane: the policy's notify, or owned children to queue.
  static constexpr bool kNotifies = hooks_type::has_notify || has_owned_lists<P> || membership_steps<Members>::any;
  /// Whether the notify phase's only work for this lane is queueing owned children (no notify
  /// hook, no membership edges). Then the unlist pass, which visits every object anyway, notes
  /// whether one of them has a child, and a notify pass with no child to queue is skipped: a
  /// registry whose policy is owning<...> pays nothing for it in a batch of childless objects
  /// (issue 36: a 10^6-entry flush paid ~250 ms for that pass).
  static constexpr bool kNotifiesOnlyForChildren =
      has_owned_lists<P> && !hooks_type::has_notify && !membership_steps<Members>::any;
  /// Whether unlist unlinks membership edges (membership.hpp): then grace period #1 is never pipelined.
  static constexpr bool kUnlinksEdges = membership_steps<Members>::any || membership_steps<member_lists_t<P>>::any;

  typed_lane(unreg_queue<T>& q, P& p, batch& b) noexcept
      : lane_base(&lane_key<T>, b, queue_access::base(q)), queue_(q), hooks_{p} {
    unlisted_ = notified_ = objects().end();
  }

  bool queue_empty() const noexcept { return queue_.empty(); }

  /// validate (phase.hpp): may throw; the queue stays as the caller left it.
  void validate() {
    if constexpr (hooks_type::has_validate)
      for (T& obj : queue_) hooks_.validate(obj);
  }

  /// The batch starts running on the queue's objects where they are (no pass over them): from
  /// here each one's lane, batch and dismantle flag are found through the queue.
  void start(bool dismantle) noexcept { access::set_running(queue(), this, dismantle); }
  /// After the drain: the queue is empty again and free for the next batch.
  void finish() noexcept {
    access::set_running(queue(), nullptr, false);
    access::set_drain(queue(), nullptr);
  }

  bool has_new() const noexcept { return after(unlisted_) != const_cast<typed_lane*>(this)->objects().end(); }

  /// close and unlist (phase.hpp) for the objects that joined since the last call. `chunk` > 0:
  /// after every `chunk` unlists (not after the last) the lock is offered to waiting writers
  /// (writer_lock_ref::yield_to_writers; rollback_options::unlist_chunk).
  void close_and_unlist_new(batch_stats& stats, writer_lock_ref& lock, std::size_t chunk = 0) noexcept {
    const iterator first = after(unlisted_);
    if (first == objects().end()) return;
    using typed = typename object_range<T>::iterator;
    timed(stats, phase::close, [&] { hooks_.close_many(object_range<T>(typed(first), typed(objects().end()))); });
    // One copy of the walk for each look-ahead kind, and of `chunked`: an unchunked unlist (the
    // common case) does not count down per object (4 instructions per object less in the demo's
    // batch: bench/teardown_passes.cpp, issue 36).
    timed(stats, phase::unlist, [&] { with_look_ahead(first, [&](auto ahead) {
      auto walk = [&](auto chunked) {
        const iterator end = objects().end();
        iterator last = unlisted_;
        hooks_type hooks = hooks_;
        bool children = children_to_queue_;
        std::size_t left_in_chunk = chunk;
        for (iterator it = first; it != end; ++it) {
          ahead.step();
          if constexpr (chunked) {
            if (left_in_chunk-- == 0) {  // a chunk done, more to come: let a writer in
              left_in_chunk = chunk - 1;
              unlisted_ = last;
              lock.yield_to_writers();
            }
          }
          unlist_one(*it, hooks, children);
          last = it;
        }
        unlisted_ = last;
        children_to_queue_ = children;
      };
      if (chunk != 0) {
        walk(std::true_type{});
      } else {
        walk(std::false_type{});
      }
    }); });
  }

  /// rollback_range's check of its range (mark_range: unreg_queue.hpp), before anything is unlisted.
  template <class It, class S, class Proj>
  std::optional<It> mark_range(It first, S last, Proj& proj) noexcept {
    return queue_access::mark_range(queue_, first, last, proj);
  }
  template <class It, class Proj>
  void unmark_range(It first, It last, Proj& proj) noexcept {
    queue_access::unmark_range(queue_, first, last, proj);
  }

  /// rollback_range's first pass (the policy has neither validate nor close_many), over a range
  /// mark_range accepted and marked: the link and the unlist of each object in one walk over the caller's range,
  /// instead of a walk for the push and one over the queue for the unlist (issue 36). The unlist
  /// runs as the object is queued, right before Boost links it into the lane's queue. The range
  /// was checked (mark_range), so the walk takes every element.
  template <class It, class S, class Proj>
  void queue_and_unlist(It first, S last, Proj& proj, batch_stats& stats) noexcept {
    static_assert(!hooks_type::has_validate && !hooks_type::has_close_many,
                  "rcubatch: the fused walk skips validate and close_many");
    timed(stats, phase::close, [] {});  // no close_many: the phase's entry, as close_and_unlist_new counts it
    timed(stats, phase::unlist, [&] {
      hooks_type hooks = hooks_;
      bool children = children_to_queue_;
      auto step = [this, &hooks, &children](registrable_base& r) __attribute__((always_inline)) {
        unlist_one<true>(r, hooks, children);
      };
      queue_access::link_range(queue_, first, last, proj, step, true);  // marked: takes every element
      unlisted_ = iterator(objects().last());
      children_to_queue_ = children;
    });
  }

  /// notify (phase.hpp) for the objects unlisted since the last call (dependents they queue come later).
  /// Owned children (owned.hpp) are queued first, then the policy's notify runs.
  void notify_new(batch& b, batch_stats& stats) noexcept {
    if constexpr (kNotifies) {
      if (notified_ == unlisted_) return;
      if constexpr (kNotifiesOnlyForChildren) {
        // Nothing to queue among the objects unlisted since the last notify: no pass.
        const bool children = std::exchange(children_to_queue_, false);
        if (!children) {
          notified_ = unlisted_;
          return;
        }
      }
      timed(stats, phase::notify, [&] {
        const iterator stop = unlisted_;
        for (iterator it = after(notified_);; ++it) {
          batch_access::set_parent(b, &*it);
          if constexpr (has_owned_lists<P>) queue_children<owned_lists_t<P>>::run(access::downcast<T>(*it), b);
          if constexpr (membership_steps<Members>::any) membership_steps<Members>::notify_groups(access::downcast<T>(*it), b);
          if constexpr (hooks_type::has_notify) hooks_.notify(access::downcast<T>(*it), b);
          if (it == stop) break;
        }
        notified_ = stop;
      });
      batch_access::set_parent(b, nullptr);
    } else {
      notified_ = unlisted_;
    }
  }

  void batch_notify(batch& b, batch_stats& stats) noexcept {
    if constexpr (hooks_type::has_batch_notify) timed(stats, phase::batch_notify, [&] { hooks_.batch_notify(b); });
  }

  /// uninit (phase.hpp), in join order: the objects queued first, then the dependents they queued
  /// (policy.hpp says why). Returns whether any hook may have unlinked something readers can reach.
  bool uninit_all(batch& b, batch_stats& stats) noexcept {
    bool unlinked = false;
    if constexpr (hooks_type::has_uninit) {
      timed(stats, phase::uninit, [&] { with_look_ahead(objects().begin(), [&](auto ahead) {
        const iterator end = objects().end();
        bool any = false;
        hooks_type hooks = hooks_;
        for (iterator it = objects().begin(); it != end; ++it) {
          ahead.step();
          any |= hooks.uninit(access::downcast<T>(*it), b);
        }
        unlinked = any;
      }); });
    }
    return unlinked;
  }

  /// ref_drain (phase.hpp), first pass: → unregistered; destroys every object that is free, counts the rest.
  /// `writers_may_race`: the caller's lock is released during the drain (unlock_during_waits), so
  /// another writer's cascade may record itself as a parent of an object being released.
  /// Fused for an object nobody holds: the draining mark, → released and destroy in one step (it
  /// passes through unregistered without a store of its own: no other thread can observe the
  /// object between the two, as nobody holds it and no reader can reach it after the last GP).
  /// `pause`: called between chunks of its `every` objects (a deferred destroy's: destroy_pause).
  void drain_scan(ref_drain& d, bool writers_may_race, const destroy_pause& pause = {}) noexcept {
    // What the walk reads per object is kept in locals: a destroy may write anything as far as the
    // compiler knows, so members and `pause` were reloaded per object.
    const bool dismantling = queue().dismantling();
    dismantling_ = dismantling;
    registrable_list& objs = objects();
    access::set_drain(queue(), &d);  // before any count is marked: the last put() finds d this way
    // Through the order hint only: the chain cursor cost the drain as much as it saved (above).
    T* const* const hint = hint_;
    const std::size_t hinted = hint_size_;
    std::size_t ahead = 0;
    for (; ahead < kHintAhead && ahead < hinted; ++ahead) prefetch_for_destroy(hint[ahead]);
    const destroy_pause chunks = pause;
    // Without chunks, a countdown that never runs out.
    std::size_t left_in_chunk = chunks.every != 0 ? chunks.every : std::numeric_limits<std::size_t>::max();
    // The walk takes the lane's objects out of its queue's list at once (an O(1) swap) and puts
    // the held ones back, in join order, as it meets them: the rescan (release_told) finds them
    // there. Boost's clear_and_dispose reads each node's successor before the object is handed
    // over (its destroy may free it) and leaves no per-object work on the list's header, which
    // erase_after one node at a time did (the header's next, last and size, and a reload of the
    // successor through it, per object). The queue's list stays a consistent list throughout.
    registrable_list walk;
    walk.swap(objs);
    // One copy of the walk for each value of writers_may_race (the parent edge's load or exchange),
    // and of `plain`: no order hint and no chunks, the common case, whose walk tests neither per
    // object. The per-object step is forced inline into Boost's loop (it was a call per object)
    // and reads `dismantling` from its own copy, not through the enclosing frame. Issue 36, the
    // demo's batch (bench/teardown_passes.cpp, callgrind): 16 and 13 instructions per object less.
    auto scan = [&](auto may_race, auto plain) {
      // (No noexcept on it: GCC and Clang accept the attribute in no common place before one.)
      walk.clear_and_dispose([&, dismantling](registrable_base* obj) __attribute__((always_inline)) {
        if constexpr (!plain) {
          if (ahead < hinted) prefetch_for_destroy(hint[ahead++]);
          if (left_in_chunk-- == 0) [[unlikely]] {
            left_in_chunk = chunks.every - 1;
            chunks.fn(chunks.arg);
          }
        }
        registrable_base& r = *obj;
        if (access::try_drain_unheld(r)) {
          release(r, may_race, dismantling);
          return;
        }
        access::set_state(r, reg_state::unregistered);
        if (access::begin_drain(r)) {  // its last holder let go since the check
          release(r, may_race, dismantling);
        } else {
          ++d.held;
          objs.push_back(r);
        }
      });
    };
    const bool plain = hinted == 0 && chunks.every == 0;
    if (writers_may_race && plain) {
      scan(std::true_type{}, std::true_type{});
    } else if (writers_may_race) {
      scan(std::true_type{}, std::false_type{});
    } else if (plain) {
      scan(std::false_type{}, std::true_type{});
    } else {
      scan(std::false_type{}, std::false_type{});
    }
  }

  /// The drain's rescan: only held objects are left in the list after drain_scan, in join order.
  /// A dependent's destroy that puts its parent's last reference frees a parent queued after it
  /// in the same scan, one queued before it in the next.
  std::size_t release_told() noexcept override {
    std::size_t released = 0;
    registrable_list& objs = objects();
    for (iterator prev = objs.before_begin(), it = objs.begin(); it != objs.end(); it = std::next(prev)) {
      registrable_base& r = *it;
      if (!access::drained_and_told(r)) {
        prev = it;
        continue;
      }
      objs.erase_after(prev);
      release(r, true, dismantling_);  // the slow path: the locked exchange costs nothing here
      ++released;
    }
    return released;
  }
  void rebroadcast(registrable_base& r) noexcept override { hooks_.rebroadcast(access::downcast<T>(r)); }
  bool has_rebroadcast() const noexcept override { return hooks_type::has_rebroadcast; }
  /// The stall line (ref_drain.hpp): the policy's name for the object; without a name hook, its
  /// type, address, batch and phase ("waiting for ns::widget at 0x55d0c0 (batch 17, phase
  /// ref_drain) to become free. Usage count = 1"). Probe drain_stall carries the same.
  void report_stall(const registrable_base& r, std::size_t& reports) noexcept override {
    // Read once, before the line: a holder's last put() may land between the drain's "still
    // held" and here. At zero the object is free (the put told the drain, whose next pass
    // destroys it): a line saying "Usage count = 0" would name a holder that no longer exists.
    const std::uint64_t holders = r.refs().count();
    if (holders == 0) return;
    const T& obj = access::downcast<T>(const_cast<registrable_base&>(r));
    const std::uint64_t batch_id = batch_access::stats(owner_batch()).batch_id;
    diag_text line("waiting for ");
    diag_text what;  // the name, or the type and address
    if constexpr (hooks_type::has_name) {
      try {
        what += hooks_.name(obj);
      } catch (...) {
        what += "<name unavailable: out of memory>";
      }
    } else {
      char address[2 + 2 * sizeof(void*) + 1];
      std::snprintf(address, sizeof address, "%p", static_cast<const void*>(&obj));
      what += type_name<T>();
      what += " at ";
      what += std::string_view(address);
    }
    line += what.view();
    if constexpr (!hooks_type::has_name) {
      line += " (batch ";
      line += batch_id;
      line += ", phase ";
      line += to_string(phase::ref_drain);
      line += ")";
    }
    line += " to become free. Usage count = ";
    line += holders;
    // The probe's name argument: the policy's name, or the type's (the address is an argument).
    const char* const name_arg = hooks_type::has_name ? what.c_str() : type_name<T>().data();
    RCUBATCH_PROBE(drain_stall, batch_id, &obj, name_arg, holders);
    static_cast<void>(name_arg);  // unused when the probes are compiled out
    ref_drain::emit(drain_options_of(), line.view());
    // Who holds it (tracked types: ref_tracker.hpp), one line per live tracked hold.
    if constexpr (is_tracked_v<T>)
      report_holders(obj, holders, [&](std::string_view l) { ref_drain::emit(drain_options_of(), l); });
    ++reports;
  }

  void set_drain_options(const drain_options& o) noexcept { drain_opts_ = &o; }
  /// Takes `h` if it is this lane's (order_hint): its passes prefetch through it; otherwise none.
  void set_order_hint(const order_hint& h) noexcept {
    hint_ = nullptr;
    hint_size_ = 0;
    if (h.key != &lane_key<T> || h.objects == nullptr) return;
    hint_ = static_cast<T* const*>(h.objects);
    hint_size_ = h.size;
  }

 protected:
  ~typed_lane() = default;

 private:
  const drain_options& drain_options_of() const noexcept { return *drain_opts_; }

  iterator after(iterator pos) noexcept { return pos == objects().end() ? objects().begin() : std::next(pos); }

  /// unlist (phase.hpp) for one object, with what every unlist does beside the policy's hook;
  /// the walks keep the hooks and the children flag in locals (see close_and_unlist_new).
  /// `fresh`: the object was checked registered and in no queue just now (rollback_range's fused
  /// walk), so it carries neither state flag: not unlisted early (that object sits in an
  /// async_unregister's queue) nor with tied retirees (only a batch ties them): its state is
  /// stored without reading it first (6 instructions per object less).
  template <bool fresh = false>
  [[gnu::always_inline]] void unlist_one(registrable_base& r, hooks_type& hooks, bool& children) noexcept {
    T& obj = access::downcast<T>(r);
    // Unlisted already when it was submitted to an async_unregister (registrable.hpp).
    if (fresh || !access::unlisted_early(r)) [[likely]]
      hooks.unlist(obj);
    // Out of its owner's list (not skipped when unlisted early: a no-op if already out).
    if constexpr (!std::is_void_v<Owner>) unlink_from_owner<Owner>(obj);
    // Membership edges (membership.hpp): a member leaves its groups, a group drops its edges.
    if constexpr (kUnlinksEdges) {
      membership_steps<Members>::leave_groups(obj);
      membership_steps<member_lists_t<P>>::drop_members(obj, owner_batch());
    }
    if constexpr (fresh) {
      access::set_flagless_state(r, reg_state::unregistering);
    } else {
      access::set_state(r, reg_state::unregistering);
    }
    // Unregistration begins: a sharded count becomes its single atomic (sharded_refs.hpp).
    if constexpr (is_sharded_v<T>) sharded_access::run_down(obj);
    // From here no child can join its lists (add refuses a parent that is going away).
    if constexpr (kNotifiesOnlyForChildren) children = children || queue_children<owned_lists_t<P>>::any(obj);
  }

  /// Runs pass(ahead) with the look-ahead a pass from `first` has: the order hint's when the lane
  /// has one and the pass starts at its first object, else the chain cursor (prefetcher). The
  /// choice is made once per pass: each kind gets its own copy of the pass's loop.
  template <class Pass>
  void with_look_ahead(iterator first, Pass&& pass) noexcept {
    if (hint_ != nullptr && first == objects().begin()) {
      pass(hint_prefetch<T>(hint_, hint_size_));
    } else {
      pass(prefetcher(first));
    }
  }

  /// The drain's look-ahead: the line its fused step reads and writes (the count, state, hook
  /// and parent edge share it: registrable.hpp), and the next, which destroy's destructor reads.
  static void prefetch_for_destroy(const T* obj) noexcept {
    __builtin_prefetch(obj, 1, 3);
    if constexpr (sizeof(T) > 64) __builtin_prefetch(reinterpret_cast<const char*>(obj) + 64, 0, 3);
  }
  iterator after(iterator pos) const noexcept { return const_cast<typed_lane*>(this)->after(pos); }

  /// The one way an object leaves a batch: destroyed, then its tied retirees (kept by the batch,
  /// found by the object's address before its destroy), then the reference
  /// it held on its parent is put (which may free the parent in turn).
  /// The owner (the queue) is kept until destroy returns; being unlinked and released, the object
  /// no longer counts as in the queue (contains) nor in the batch (registrable_access::lane).
  /// Inlined into the drain's pass (the common case is a few loads and stores on a line already
  /// in cache; a call per object was measurable). An object with tied retirees takes the
  /// out-of-line path.
  [[gnu::always_inline]] void release(registrable_base& r, bool writers_may_race, bool dismantling) noexcept {
    if (access::has_tied(r)) [[unlikely]] {
      release_with_tied(r, writers_may_race);
      return;
    }
    access::set_released(r, dismantling);
    registrable_base* const parent = take_parent(r, writers_may_race);
    hooks_.destroy(&access::downcast<T>(r));
    if (parent != nullptr) parent->refs().put();
  }
  [[gnu::noinline]] void release_with_tied(registrable_base& r, bool writers_may_race) noexcept {
    retire_fifo tied;  // its retirees, kept by the batch: taken out while r still exists
    batch_access::take_tied_to(owner_batch(), r, tied);  // before set_released clears the bit
    access::set_released(r, queue().dismantling());
    registrable_base* const parent = take_parent(r, writers_may_race);
    hooks_.destroy(&access::downcast<T>(r));
    dispose_all(tied);
    if (parent != nullptr) parent->refs().put();
  }
  /// The parent edge of an object being released, and no edge recorded after it (kParentGone).
  /// Only a writer in another batch can record one concurrently (batch::record_parent), and only
  /// while this batch has released the lock: then a locked exchange. Otherwise every writer's
  /// hooks are behind the lock this batch holds, and none can reach a released object, so a
  /// plain load does (no locked RMW in the per-object pass: a lock op stalls on each miss).
  static registrable_base* take_parent(registrable_base& r, bool writers_may_race) noexcept {
    if (writers_may_race) return access::parent(r).exchange(kParentGone, std::memory_order_acq_rel);
    return access::parent(r).load(std::memory_order_relaxed);
  }

  unreg_queue<T>& queue_;
  hooks_type hooks_;
  iterator unlisted_;  // the last object unlisted so far (end(): none)
  iterator notified_;  // the last object notified so far (end(): none)
  // kNotifiesOnlyForChildren: whether an object unlisted since the last notify pass has a child.
  bool children_to_queue_ = false;
  const drain_options* drain_opts_ = nullptr;
  T* const* hint_ = nullptr;  // order_hint: the queue's objects as the caller's array, or none
  std::size_t hint_size_ = 0;
  bool dismantling_ = false;  // the queue's dismantle flag, read once per drain for every release
};

/// The lanes of one batch, built in place (a lane is not movable: objects point at it). Each
/// lane type is distinct, one per object type, so each is a base of its own.
template <class... Lanes>
struct lane_set final : Lanes... {
  template <class... Specs>
  lane_set(batch& b, Specs&... specs) noexcept : Lanes(specs.queue, specs.policy, b)... {}
};

/// What the caller tells a batch beyond its lanes: the writer lock it may release (inert by
/// default), and — for async_unregister's batches, whose objects were unlisted at submit — a
/// cookie taken after the last of those unlists, with which grace period #1 may find itself
/// already elapsed (pipelined: async_unregister.hpp).
struct batch_context {
  batch_context() = default;
  batch_context(writer_lock_ref l) noexcept : lock(l) {}  // NOLINT: implicit, a lock is the usual context
  writer_lock_ref lock;
  std::optional<gp_cookie> unlisted_before;
  order_hint order;  // the queued objects as an array the caller holds (registry::unregister_many), if any
};

template <class Flavor, class... Lanes>
class rollback_engine {
  static constexpr std::size_t kLanes = sizeof...(Lanes);
  using clock = std::chrono::steady_clock;

 public:
  template <class... Specs>
  rollback_engine(grace_domain<Flavor>& d, const rollback_options& o, const batch_context& ctx, Specs&... specs) noexcept
      : domain_(d), opts_(o), lock_(ctx.lock), unlisted_before_(ctx.unlisted_before),
        pointers_{},
        batch_(batch_access::make(pointers_.data(), kLanes, d)),
        stats_(batch_access::stats(batch_)),
        lanes_(batch_, specs...) {
    pointers_ = {static_cast<lane_base*>(&static_cast<Lanes&>(lanes_))...};
    each([&](auto& l) {
      l.set_drain_options(opts_.drain);
      l.set_order_hint(ctx.order);
    });
  }
  /// The engine keeps a reference to its options (and their drain options) until the batch
  /// ends: a temporary would dangle after the constructor (ASan: stack-use-after-scope in
  /// start_running, tests/rollback_many_passes_test.cpp before it named its options).
  template <class... Specs>
  rollback_engine(grace_domain<Flavor>& d, rollback_options&& o, const batch_context& ctx, Specs&... specs) = delete;

  /// The phases of kPhaseTable (phase.hpp), one private function each, in the table's order.
  batch_stats run() {
    if (!run_through_grace_periods()) return stats_;
    return run_after_grace_periods(false);
  }

  /// The phases up to the last grace period (every object unpublished, no reader left that could
  /// reach one). False when the batch ended there (refused, or nothing queued: stats() is its
  /// result, and run_after_grace_periods must not be called). Throws: what validate throws.
  bool run_through_grace_periods() {
    start_ = clock::now();
    if (in_read_section<Flavor>()) {
      refuse_in_read_section();
      return false;
    }
    stats_.batch_id = g_next_batch_id.fetch_add(1, std::memory_order_relaxed);
    validate();
    if (all_queues_empty()) {
      finish(start_);
      return false;
    }

    // --- point of no return ---
    start_running();
    RCUBATCH_PROBE(batch_start, stats_.batch_id, batch_.size());
    close_and_unlist();
    after_unlist();
    return true;
  }

  /// rollback_range's batch (one lane, whose policy has neither validate nor close_many): the
  /// phases of run(), with the queueing of [first, last) fused into the unlist pass.
  /// All or nothing: every element is checked first (mark_range); at a refused one,
  /// note_refused(it) is called, the marks are undone and nothing has changed (no batch, no
  /// grace period). Otherwise the walk queues and unlists every element. Returns the stats.
  template <class It, class S, class Proj, class Note>
  batch_stats run_range(It first, S last, Proj& proj, Note&& note_refused) {
    static_assert(kLanes == 1);
    start_ = clock::now();
    if (in_read_section<Flavor>()) return refuse_in_read_section();
    stats_.batch_id = g_next_batch_id.fetch_add(1, std::memory_order_relaxed);
    if (first == last) return finish(start_);
    lane_first& lane = static_cast<lane_first&>(lanes_);
    if (const std::optional<It> bad = lane.mark_range(first, last, proj)) [[unlikely]] {
      note_refused(*bad);  // before the undo: an object named twice is marked by its first place
      lane.unmark_range(first, *bad, proj);
      return finish(start_);
    }

    // --- point of no return ---
    start_running();
    RCUBATCH_PROBE(batch_start, stats_.batch_id, std::ranges::distance(first, last));
    lane.queue_and_unlist(first, last, proj, stats_);  // first != last: the queue is not empty
    after_unlist();
    return run_after_grace_periods(false);
  }

 private:
  using lane_first = std::tuple_element_t<0, std::tuple<Lanes...>>;

  /// The phases from grace period #1 to the last grace period (run_through_grace_periods).
  void after_unlist() noexcept {
    grace_period_1();
    notify_rounds();
    batch_notify();
    const bool unlinked = uninit();
    if (needs_grace_period_2(unlinked)) grace_period_2();

    stats_.objects = batch_.size();
  }

 public:

  /// Gives the writer lock up for good, after run_through_grace_periods, when the rest of the
  /// batch runs on another thread (deferred_destroy.hpp): that thread must not release a lock
  /// the caller's thread holds. Only under a lock_release that releases it for the drain.
  void hand_off_lock() noexcept { lock_.unlock(); }
  /// The order hint of the passes still to run (after run_through_grace_periods: the drain): `h`,
  /// or none. A batch whose drain runs after its caller returned (deferred_destroy.hpp) must not
  /// keep a hint into the caller's array, which may be gone by then.
  void set_order_hint(const order_hint& h = {}) noexcept {
    each([&](auto& l) { l.set_order_hint(h); });
  }

  /// The rest, after run_through_grace_periods returned true: the disposals, the ref drain and
  /// destroy. `handed_off`: on another thread, after hand_off_lock: the lock is not re-taken at
  /// the end (nobody is there to release it; the queues are the batch's own, and empty).
  /// `pause`: the destroy pass's chunks (none by default).
  batch_stats run_after_grace_periods(bool handed_off, const destroy_pause& pause = {}) {
    pause_ = pause;
    lock_.unlock();  // a no-op unless the lock is released (for waits, or the drain only)
    dispose_retirees();
    ref_drain_and_destroy();
    dispose_late_retirees();
    if (!handed_off) lock_.relock();
    each([](auto& l) { l.finish(); });
    return finish(start_);
  }

  /// The batch's statistics so far (at the hand-off: everything but the drain's).
  const batch_stats& stats() const noexcept { return stats_; }

  /// async_unregister's hand-back (reclaim_protocol.hpp): the rest, as run_after_grace_periods,
  /// except that when the drain still finds objects held after its first pass and one flush, and
  /// the lock is released for the drain, it returns false at once: the batch is parked (its drain
  /// stays in this engine, whose lock is left released), every last put calls `wake(arg)`, and
  /// poll_parked() goes on — from one thread at a time, any thread. True: finished (stats()).
  bool run_after_grace_periods_or_park(void (*wake)(void*) noexcept, void* arg) {
    lock_.unlock();
    dispose_retirees();
    bool parked = false;
    timed(stats_, phase::ref_drain, [&] {
      parked_.emplace(pointers_.data(), kLanes, opts_.drain, stats_, lock_);
      each_reversed([&](auto& l) { l.drain_scan(*parked_, lock_.released_during_waits()); });
      if (parked_->held > 0 && lock_.released_during_waits()) {
        parked_->park(wake, arg);
        parked = parked_->flush_and_recheck(domain_) > 0;
      }
      if (!parked) parked_->wait(domain_);  // nothing held (at once), or the lock held through the drain
    });
    if (parked) return false;
    parked_.reset();
    dispose_late_retirees();
    lock_.relock();
    each([](auto& l) { l.finish(); });
    finish(start_);
    return true;
  }

  /// A parked batch (run_after_grace_periods_or_park returned false): destroys what its holders
  /// let go and runs the drain's timers; never sleeps. Returns the objects still held: at 0 the
  /// drain is gone and the late retirees disposed — call finish_parked. Requires: one caller at
  /// a time; the writer lock not held by the caller.
  std::size_t poll_parked() noexcept {
    const std::size_t held = parked_->poll(domain_);
    if (held == 0) {
      parked_.reset();
      dispose_late_retirees();
    }
    return held;
  }
  /// Calls f(registrable_base&) for every object a parked batch still holds (its lanes' lists).
  template <class F>
  void each_parked(F&& f) {
    for (lane_base* l : pointers_)
      for (registrable_base& r : l->objects()) f(r);
  }
  /// When poll_parked has timer work next (rebroadcast, stall report, flush).
  clock::time_point parked_deadline() const noexcept { return parked_->next_timer(); }

  /// The end of a parked batch whose poll_parked returned 0. Requires: the caller holds the
  /// writer lock (the lanes give their queues back under it). Returns its statistics.
  batch_stats finish_parked() noexcept {
    each([](auto& l) { l.finish(); });
    return finish(start_);
  }

 private:
  /// Misuse: a grace period inside a read-side section deadlocks or drops the reader's protection.
  /// Under misuse_policy::report nothing has changed: stats.refused.
  batch_stats refuse_in_read_section() {
    diag_text msg("rollback_many<");
    msg += Flavor::name;
    msg += "> called inside a read-side section: its grace periods would deadlock (memb, mb, bp) "
           "or drop the reader's protection (qsbr)";
    diagnose(misuse_kind::blocking_in_read_section, msg.view());
    stats_.refused = true;
    return stats_;
  }

  /// Phase validate. Every object in an unreg_queue is registered and in no batch (push checks
  /// it, and states only change inside a batch, which takes its objects out of every queue
  /// first), so only the policy's validate needs a pass — skipped without one, since each pass
  /// over N scattered objects costs several ns per object in cache misses. May throw: nothing
  /// has changed yet.
  void validate() {
    timed(stats_, phase::validate, [&] { each([](auto& l) { l.validate(); }); });
  }

  bool all_queues_empty() noexcept {
    bool all_empty = true;
    each([&](auto& l) { all_empty = all_empty && l.queue_empty(); });
    return all_empty;
  }

  /// Not a phase (no hook, no pass): the batch starts running on each queue's list in place;
  /// from here every object's lane, batch and dismantle flag are derived through its queue.
  void start_running() noexcept {
    each([&](auto& l) { l.start(opts_.mark_dismantle); });
  }

  /// Phases close and unlist for the queued objects (→ unregistering): per lane, close_many with
  /// the lane's objects, then unlist for each (the lane runs the two back to back).
  void close_and_unlist() noexcept {
    each([&](auto& l) { l.close_and_unlist_new(stats_, lock_, opts_.unlist_chunk); });
  }

  /// No reader finds any queued object through a primary index any more. Pipelined: when every
  /// queued object was unlisted before the caller's cookie and a GP that began after it has already
  /// ended, that GP is this one (counted in gps_pipelined) — unless a lane has close_many, which
  /// ran just now and may rely on #1 following it.
  void grace_period_1() noexcept {
    constexpr bool any_close_many = (Lanes::hooks_type::has_close_many || ...);
    constexpr bool any_edges = (Lanes::kUnlinksEdges || ...);  // unlinked by this batch's unlist
    if (!any_close_many && !any_edges && unlisted_before_ && domain_.elapsed(*unlisted_before_)) {
      timed(stats_, phase::grace_period_1, [&] { ++stats_.gps_pipelined; });
    } else {
      grace_period(phase::grace_period_1);
    }
    batch_access::passed_gp1(batch_);
  }

  /// Phase notify, round by round: the dependents a round queues (of any lane) are closed and
  /// unlisted, then notified, until a round queues none; then the batch takes no more.
  void notify_rounds() noexcept {
    constexpr bool any_notify = (Lanes::kNotifies || ...);
    for (;;) {
      ++stats_.rounds;
      if constexpr (!any_notify) break;  // only notify can queue dependents
      each([&](auto& l) { l.notify_new(batch_, stats_); });
      bool more = false;
      each([&](auto& l) { more = more || l.has_new(); });
      if (!more) break;
      each([&](auto& l) { l.close_and_unlist_new(stats_, lock_); });
    }
    batch_access::close_door(batch_);
  }

  /// Phase batch_notify, once per lane: container-wide work (cache flush, FIB sweep).
  void batch_notify() noexcept {
    each([&](auto& l) { l.batch_notify(batch_, stats_); });
  }

  /// Phase uninit: last lane first, each lane in join order (policy.hpp says why). Returns whether
  /// any hook may have unlinked something readers can reach.
  bool uninit() noexcept {
    bool unlinked = false;
    each_reversed([&](auto& l) { unlinked |= l.uninit_all(batch_, stats_); });
    return unlinked;
  }

  /// Whether something was unlinked after grace period #1 (phase_entered::if_unlinked_after_gp1).
  bool needs_grace_period_2(bool uninit_unlinked) const noexcept {
    return uninit_unlinked || batch_access::unlinked(batch_) || stats_.dependents_added > 0;
  }

  void grace_period_2() noexcept { grace_period(phase::grace_period_2); }

  /// Phase dispose_retirees: batch::retire'd sub-objects, right after the last grace period.
  void dispose_retirees() noexcept {
    timed(stats_, phase::dispose_retirees, [&] { batch_access::dispose_untied(batch_); });
  }

  /// Phase ref_drain: → unregistered; each object is destroyed (policy destroy, then its
  /// retire_with sub-objects) as its last reference drops and its dependents are gone
  /// (ref_drain.hpp states the order guarantees). An object nobody holds takes the fused step:
  /// draining mark, → released and destroy at once.
  void ref_drain_and_destroy() noexcept {
    timed(stats_, phase::ref_drain, [&] {
      ref_drain drain(pointers_.data(), kLanes, opts_.drain, stats_, lock_);
      each_reversed([&](auto& l) { l.drain_scan(drain, lock_.released_during_waits(), pause_); });
      drain.wait(domain_);
    });
  }

  /// Phase dispose_late_retirees: retire_with sub-objects whose owner was not in the batch
  /// (misuse not_in_batch), after every object is destroyed.
  void dispose_late_retirees() noexcept {
    timed(stats_, phase::dispose_late_retirees, [&] { batch_access::dispose_late(batch_); });
  }

  template <class F>
  void each(F&& f) {
    (f(static_cast<Lanes&>(lanes_)), ...);
  }
  template <class F>
  void each_reversed(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (f(static_cast<std::tuple_element_t<kLanes - 1 - I, std::tuple<Lanes...>>&>(lanes_)), ...);
    }(std::make_index_sequence<kLanes>{});
  }

  /// A grace-period phase: skipped (gps_elided) if one has already elapsed since the snapshot;
  /// the caller's lock is released for the wait under unlock_during_waits.
  /// Probe grace_period: one that this batch waited for, with the domain's number for it (the
  /// cookie's sequence / 2: the domain's count of GPs once it ended).
  void grace_period(phase which) noexcept {
    gp_cookie cookie{};
    bool waited = false;
    const auto took = timed(stats_, which, [&] {
      cookie = domain_.snapshot();
      if (domain_.elapsed(cookie)) {
        ++stats_.gps_elided;
        return;
      }
      lock_.unlock_for_grace_period();
      if (domain_.wait_for(cookie)) {
        ++stats_.grace_periods;
        waited = true;
      } else {
        ++stats_.gps_elided;
      }
      lock_.relock_after_grace_period();
    });
    if (waited) RCUBATCH_PROBE(grace_period, stats_.batch_id, cookie.sequence / 2, took.count());
    static_cast<void>(took);  // unused when the probes are compiled out
  }

  batch_stats finish(clock::time_point start) noexcept {
    stats_.elapsed = std::chrono::duration_cast<batch_stats::duration>(clock::now() - start);
    stats_.lock_hold = stats_.elapsed - std::chrono::duration_cast<batch_stats::duration>(lock_.released_for());
    RCUBATCH_PROBE(batch_end, stats_.batch_id, stats_.objects, stats_.grace_periods, stats_.elapsed.count());
    return stats_;
  }

  grace_domain<Flavor>& domain_;
  const rollback_options& opts_;
  writer_lock_ref lock_;
  std::optional<gp_cookie> unlisted_before_;
  destroy_pause pause_;
  clock::time_point start_{};
  std::array<lane_base*, kLanes> pointers_;
  batch batch_;
  batch_stats& stats_;  // the batch's own (hooks read it through batch::stats())
  lane_set<Lanes...> lanes_;
  std::optional<ref_drain> parked_;  // run_after_grace_periods_or_park's drain, kept while parked
};

/// The engine of a batch with these lanes (lane_ref<T, P>...): one typed_lane per lane.
template <class Flavor, class... Specs>
using engine_for =
    rollback_engine<Flavor, typed_lane<typename Specs::object_type, typename Specs::policy_type,
                                       owner_relation_t<typename Specs::object_type, typename Specs::policy_type...>,
                                       member_relations_t<typename Specs::object_type, typename Specs::policy_type...>>...>;

template <class Flavor, class... Specs>
batch_stats run_lanes(grace_domain<Flavor>& d, const rollback_options& o, const batch_context& ctx, Specs&... specs) {
  static_assert(sizeof...(Specs) >= 1, "rcubatch: rollback_many needs at least one lane");
  using relations = relations_check<all_relations_t<typename Specs::policy_type...>, typename Specs::object_type...>;
  static_assert(relations::children_have_lanes,
                "rcubatch: a policy owns children (rcubatch::owning<&Parent::list>) of a type that has no lane in "
                "this batch: give the child type a lane (rcubatch::lane(queue, policy)), or its parent would be "
                "destroyed while its children can still be found");
  static_assert(relations::one_owner_each,
                "rcubatch: a child type is owned through two owned_lists (two owning<...> name lists of the same "
                "child type): a child type may have one owner relation");
  static_assert(membership_check<all_member_lists_t<typename Specs::policy_type...>,
                                 typename Specs::object_type...>::members_have_lanes,
                "rcubatch: a policy has members (rcubatch::having_members<&Group::list>) of a type that has no lane in "
                "this batch: give the member type a lane, or its edges would outlive it");
  engine_for<Flavor, Specs...> engine(d, o, ctx, specs...);
  return engine.run();
}

/// A lane as the engine sees it: the queue and the policy as an lvalue of its own type.
template <class T, class P>
struct lane_ref {
  using object_type = T;
  using policy_type = P;  // may be const
  unreg_queue<T>& queue;
  P& policy;
};
template <class T, class Policy>
lane_ref<T, std::remove_reference_t<Policy>> ref_of(lane_spec<T, Policy>& s) noexcept {
  return {s.queue, s.policy};
}

template <class T, class... Rest>
constexpr bool distinct_types() {
  if constexpr (sizeof...(Rest) == 0) {
    return true;
  } else {
    return (!std::is_same_v<T, Rest> && ...) && distinct_types<Rest...>();
  }
}

/// The one object type of rollback_range's range: the registrable<T> base of what proj(*it) names.
template <class R, class Proj>
using range_object_t =
    registrable_type_t<std::remove_pointer_t<std::remove_cvref_t<std::indirect_result_t<Proj&, std::ranges::iterator_t<R>>>>>;

/// rollback_range's order hint: a contiguous range of T* taken as it is (no projection) is the
/// lane's objects in join order, alive for the whole call (as registry::unregister_many's vector).
template <class T, class R, class Proj>
order_hint range_hint(R& r) noexcept {
  if constexpr (std::ranges::contiguous_range<R> && std::ranges::sized_range<R> && std::is_same_v<Proj, std::identity> &&
                std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<R>>, T*>) {
    return {&lane_key<T>, static_cast<const void*>(std::ranges::data(r)), static_cast<std::size_t>(std::ranges::size(r))};
  } else {
    return {};
  }
}

template <class T, class Policy, class Flavor, class It, class S, class Proj>
batch_stats run_range(It first, S last, Proj& proj, Policy& policy, grace_domain<Flavor>& domain,
                      const rollback_options& opts, const order_hint& hint) {
  batch_context ctx;
  ctx.order = hint;
  unreg_queue<T> q;
  lane_ref<T, Policy> l{q, policy};
  // The refused element, as it was when the walk stopped there (after the batch the object a
  // duplicate names is gone, so it is not read again).
  struct refusal {
    const registrable_base* obj = nullptr;
    const queue_base* owner = nullptr;
    std::size_t index = 0, left = 0;
  };
  std::optional<refusal> refused;
  auto note = [&](It at) {
    const registrable_base* const r = queue_access::base_of<T>(std::invoke(proj, *at));
    refused = refusal{r, r == nullptr ? nullptr : registrable_access::owner(*r),
                      static_cast<std::size_t>(std::ranges::distance(first, at)),
                      static_cast<std::size_t>(std::ranges::distance(at, last))};
  };
  batch_stats stats;
  using hooks = policy_hooks<Policy, T>;
  if constexpr (!hooks::has_validate && !hooks::has_close_many) {
    engine_for<Flavor, lane_ref<T, Policy>> engine(domain, opts, ctx, l);
    stats = engine.run_range(first, last, proj, note);
  } else {
    // validate (which may throw) and close_many see every object first: queue (push_range: all
    // or nothing, diagnosed there), then the batch.
    if (!q.push_range(first, last, proj)) {
      stats.refused = true;
      stats.skipped = static_cast<std::size_t>(std::ranges::distance(first, last));
      return stats;
    }
    stats = run_lanes(domain, opts, ctx, l);
  }
  if (refused && !stats.refused) {
    stats.refused = stats.objects == 0;  // all or nothing: refused at the check (run_range)
    stats.skipped = stats.objects == 0 ? static_cast<std::size_t>(std::ranges::distance(first, last)) : refused->left;
    queue_access::refuse_in_range(q, refused->obj, refused->owner, refused->index);
  }
  return stats;
}

template <class Flavor, class... T, class... P>
batch_stats run_specs(grace_domain<Flavor>& d, const rollback_options& o, const batch_context& ctx,
                      lane_spec<T, P>&... specs) {
  auto refs = std::make_tuple(ref_of(specs)...);
  return std::apply([&](auto&... r) { return run_lanes(d, o, ctx, r...); }, refs);
}

}  // namespace detail

/// Effects: unregisters every object in `q` as one batch (see the file comment). `q` is empty on
/// return, except under misuse_policy::report when the call was refused (stats.refused).
/// Requires: the caller holds the registry's writer lock; not inside a read-side section.
/// Throws: misuse_error (throw_error policy) or what policy.validate throws — nothing changed then.
/// Blocking: up to two grace periods, then until every object's references are dropped.
/// Complexity: O(N) hook calls for N objects, dependents included.
template <class T, class Policy, class Flavor>
batch_stats rollback_many(unreg_queue<T>& q, Policy&& policy, grace_domain<Flavor>& domain,
                          const rollback_options& opts = {}) {
  detail::lane_ref<T, std::remove_reference_t<Policy>> l{q, policy};
  return detail::run_lanes(domain, opts, {}, l);
}

/// As above, with the grace-period waits and the ref drain run outside the caller's `lock`.
template <class T, class Policy, class Flavor, class Lockable>
batch_stats rollback_many(unreg_queue<T>& q, Policy&& policy, grace_domain<Flavor>& domain,
                          unlock_during_waits<Lockable> lock, const rollback_options& opts = {}) {
  detail::lane_ref<T, std::remove_reference_t<Policy>> l{q, policy};
  return detail::run_lanes(domain, opts, detail::writer_lock_ref::make<Flavor>(lock.lock, detail::lock_release::grace_periods), l);
}

/// Several object types in one batch: one lane(queue, policy) per type, sharing grace periods #1
/// and #2. A hook of any lane may queue dependents of any lane's type.
/// Requires: as above; each type has at most one lane (a compile error otherwise).
template <class Flavor, class... T, class... P>
batch_stats rollback_many(grace_domain<Flavor>& domain, lane_spec<T, P>... lanes) {
  static_assert(detail::distinct_types<T...>(), "rcubatch: rollback_many: each object type may have one lane only");
  return detail::run_specs(domain, rollback_options{}, {}, lanes...);
}
template <class Flavor, class... T, class... P>
batch_stats rollback_many(grace_domain<Flavor>& domain, const rollback_options& opts, lane_spec<T, P>... lanes) {
  static_assert(detail::distinct_types<T...>(), "rcubatch: rollback_many: each object type may have one lane only");
  return detail::run_specs(domain, opts, {}, lanes...);
}
template <class Flavor, class Lockable, class... T, class... P>
batch_stats rollback_many(grace_domain<Flavor>& domain, unlock_during_waits<Lockable> lock,
                          lane_spec<T, P>... lanes) {
  static_assert(detail::distinct_types<T...>(), "rcubatch: rollback_many: each object type may have one lane only");
  return detail::run_specs(domain, rollback_options{}, detail::writer_lock_ref::make<Flavor>(lock.lock, detail::lock_release::grace_periods), lanes...);
}
template <class Flavor, class Lockable, class... T, class... P>
batch_stats rollback_many(grace_domain<Flavor>& domain, unlock_during_waits<Lockable> lock,
                          const rollback_options& opts, lane_spec<T, P>... lanes) {
  static_assert(detail::distinct_types<T...>(), "rcubatch: rollback_many: each object type may have one lane only");
  return detail::run_specs(domain, opts, detail::writer_lock_ref::make<Flavor>(lock.lock, detail::lock_release::grace_periods), lanes...);
}

/// Effects: unregisters the objects proj(*it) names in `objects` (objects, or pointers to them,
/// of one type T: T or derived from the registrable<T> base) as one batch, in the range's order:
/// what push_range into a fresh unreg_queue followed by rollback_many does, in one call. When the
/// policy has neither validate nor close_many (hooks that must see every object before any is
/// unlisted), the range is checked in a first walk (nothing changed yet), then each object is
/// queued and unlisted in one step of a second: both walks follow the caller's range, not the
/// queue's links, and the unlist pass over the queue is gone (issue 36: the teardown demo's batch
/// 203 → 193 instructions per object; bench/RESULTS.md). An object joins the batch as the walk
/// reaches it: its dismantle flag turns on then, before its unlist (with the two calls, at the
/// batch's start), as if it had been pushed a moment later. A contiguous range of T* taken
/// without a projection (a std::vector<T*>) is also the batch's order hint: its later passes
/// prefetch through it, as registry::unregister_many's do.
/// Misuse: an element push_range would refuse (not registered, already going away, in a queue,
/// named twice, a null pointer) refuses the whole range, as push_range does: every element is
/// checked (and marked as this batch's) before the first unlist, so at a refused one nothing has
/// changed — no object unlisted, no grace period. It is diagnosed as push_range diagnoses it:
/// misuse_error (throw_error) or std::invalid_argument (a null pointer, always) is thrown;
/// under misuse_policy::report, stats.refused is set and stats.skipped counts every element.
/// Requires: as rollback_many; proj, and the range's iteration, do not throw.
/// Throws: as rollback_many (what validate throws: nothing changed); and as said under Misuse.
/// Blocking, complexity: as rollback_many.
template <std::ranges::forward_range R, class Policy, class Flavor>
batch_stats rollback_range(R&& objects, Policy&& policy, grace_domain<Flavor>& domain, const rollback_options& opts = {}) {
  using T = detail::range_object_t<R, std::identity>;
  std::identity proj;
  return detail::run_range<T>(std::ranges::begin(objects), std::ranges::end(objects), proj, policy, domain, opts,
                              detail::range_hint<T, std::remove_reference_t<R>, std::identity>(objects));
}

/// As above, with proj before the policy: rollback_range(range, proj, policy, domain[, opts]).
template <std::ranges::forward_range R, class Proj, class Policy, class Flavor>
  requires std::invocable<Proj&, std::ranges::range_reference_t<R>>
batch_stats rollback_range(R&& objects, Proj proj, Policy&& policy, grace_domain<Flavor>& domain,
                           const rollback_options& opts = {}) {
  using T = detail::range_object_t<R, Proj>;
  return detail::run_range<T>(std::ranges::begin(objects), std::ranges::end(objects), proj, policy, domain, opts,
                              detail::range_hint<T, std::remove_reference_t<R>, Proj>(objects));
}

/// Effects: unregisters one object (of type U, or derived from its registrable base) through the
/// same code path: a batch of one. Returns stats.skipped = 1 if the object was refused (report).
template <class U, class Policy, class Flavor>
batch_stats unregister_one(U& obj, Policy&& policy, grace_domain<Flavor>& domain, const rollback_options& opts = {}) {
  using T = registrable_type_t<U>;
  unreg_queue<T> q;
  // GCC 12 -Wdangling-pointer: push stores &q in obj; rollback_many (or q's destructor) always
  // clears it before q goes away, which the compiler cannot see.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
  const bool queued = q.push(obj);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif
  if (!queued) {
    batch_stats refused;
    refused.skipped = 1;
    return refused;
  }
  return rollback_many(q, std::forward<Policy>(policy), domain, opts);
}

}  // namespace rcubatch
