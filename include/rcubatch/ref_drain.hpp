// rcubatch/ref_drain.hpp — waiting for a batch's objects to lose their last reference.
//
// After the batch's last grace period no reader can find its objects, but holders that took a
// reference earlier (an in-flight packet, a cache entry) may still use them. The drain waits for
// all objects at once and destroys each as soon as its count reaches zero (the kernel's
// netdev_wait_allrefs_any): one stuck object never delays unrelated ones.
//
// Order guarantees (tested in tests/ref_drain_test.cpp and, across object types, tests/lanes_test.cpp):
//   1. An object is destroyed only when its reference count is zero and stays zero (a hold()
//      after that is misuse: hold_after_drain).
//   2. An object is destroyed only after every dependent it queued into a batch (batch::queue
//      from its notify) has been destroyed, even when a dependent is held longer: the dependent
//      holds a reference on its parent from queue() until its own destroy returns. The first
//      object to queue a dependent is its parent; later ones add no edge. The edge also holds
//      across batches (a dependent already in another writer's running batch).
//   3. Objects that are not held and whose dependents are gone are destroyed in one pass, lanes
//      in reverse order (the last lane passed to rollback_many first), in join order within a
//      lane, so dependents in a later lane go before their parents with no waiting at all; a
//      parent whose dependent sits later in its own lane waits for the drain's first rescan
//      (guarantee 2 holds it until that dependent is destroyed). For such
//      an object the draining mark, the state and destroy are one fused step (ref_count::
//      try_drain_unheld): the mark stays, so a late hold() is still diagnosed (hold_after_drain).
//   4. A held object delays only itself and its ancestors: nobody else, and no retiree that is
//      not tied to it. Untied retirees (batch::retire) are disposed right after the last grace
//      period, before any destroy; retirees tied to an owner (batch::retire_with) are disposed
//      right after that owner's destroy returns.
//   5. Before each sleep the drain flushes what may still drop a reference, then rechecks: first
//      drain_options::before_sleep (the user's hook: flush a per-thread cache, hand deferred
//      puts to call_rcu), then the domain's barrier (grace_domain::barrier, liburcu rcu_barrier:
//      every callback queued with the flavor's call before it has run), then a rescan. So a
//      last put() that sits in a queued call_rcu callback (or in what the hook flushes) is seen
//      before the drain sleeps, and before any stall report or rebroadcast (the kernel's
//      netdev_wait_allrefs_any runs rcu_barrier before every sleep for this reason: a lazy
//      call_rcu once kept `ip netns del` waiting). The barrier runs without the registry's writer
//      lock: a drain that holds it (hold_lock_through_drain) releases it for the barrier and
//      takes it back before the rescan, as the kernel drops RTNL before rcu_barrier — so a queued
//      callback may take the writer lock. On one of the flavor's call_rcu worker threads (a
//      deferred teardown: registry::unregister from a call_rcu callback) the barrier is skipped:
//      liburcu's rcu_barrier must never run there (it would wait for this worker, busy in the
//      very callback that waits: on_call_rcu_worker, flavor.hpp); the callbacks it would flush
//      run behind the drain on that worker, or on other workers, where a last put() still wakes
//      the drain. Requires: the hook must not wait for the writer lock; a caller's own lock held
//      through a drain (rollback_many without unlock_during_waits) must not be waited for by a
//      queued callback. The barrier runs offline under qsbr (grace_domain::barrier:
//      detail/blocking.hpp). It runs only when objects are still held after the first pass: a
//      drain with no holders pays nothing.
//
// It sleeps on a condition variable that the last put() signals — no polling, no fixed sleeps.
// The put finds the drain through its object's queue and marks the count told under the drain's
// lock (ref_count.hpp); there is no ready chain through the objects: on each wake-up the drain
// rescans the objects it still holds (lanes last to first, join order) and destroys the told
// ones. No allocation on put(), and no lost wake-up: the count and the draining mark change in
// one atomic, and the told mark and the wake-up flag are set under the same lock.
// Complexity: O(H) per wake-up for H objects still held. Worst case O(H²) over a drain: H held
// objects let go one at a time, each put waking the drain (puts that land together share a
// rescan), or a chain of parents each released by its child where the scan meets each parent
// before its child (a chain within one lane, which the scan walks in join order, or a parent in a
// later lane than its dependent), one rescan per link. Dependents one level deep in the parents'
// lane go in one rescan; dependents in a later lane than their parents, in none.
// While objects remain it wakes on two timers (drain_options):
//   - every rebroadcast_interval (1 s): calls the policy's rebroadcast(obj) for each, under the
//     writer lock, so holders that cache references (the dst cache analogue) can let go;
//   - every stall_report_interval (10 s): prints, per object still held (n >= 1 when read),
//       "waiting for <name> to become free. Usage count = <n>"
//     through drain_options::reporter (stderr by default). An object whose last put() lands
//     during the pass gets no line: it is free, and the drain's next pass destroys it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "rcubatch/batch.hpp"
#include "rcubatch/detail/blocking.hpp"
#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/grace_domain.hpp"

namespace rcubatch {

/// Where stall lines go: a plain function, or (stall_reporter_fn) anything callable.
using stall_reporter = void (*)(std::string_view line) noexcept;

/// Tuning for the ref drain; the defaults are the kernel's.
struct drain_options {
  /// How often to name the objects still held. Lower it in tests; raise it for objects that are
  /// legitimately held for long (connections draining).
  std::chrono::milliseconds stall_report_interval{10'000};
  /// How often to ask holders to let go (policy.rebroadcast). Only runs if the hook exists.
  std::chrono::milliseconds rebroadcast_interval{1'000};
  /// Called on the draining thread before each sleep of the drain, before the domain's barrier
  /// (ref_drain.hpp, guarantee 5): flush whatever may hold a reference (a per-thread cache, work
  /// deferred to call_rcu). Empty by default. It must not throw, and must not wait for the writer
  /// lock (the drain may hold it). Runs online (qsbr), like the other hooks.
  std::function<void()> before_sleep{};
  /// Where stall lines go; nullptr means stderr (unless reporter_fn is set).
  stall_reporter reporter = nullptr;
  /// A stall reporter with state (takes precedence over `reporter`). Called on the draining
  /// thread only; it must not throw.
  std::function<void(std::string_view line)> reporter_fn;
};

namespace detail {

/// The drain of one batch, across its lanes. The lanes' first pass (rollback_many.hpp) destroys
/// what is free at once and counts the rest in `held`; wait() then destroys each as it is freed.
class ref_drain final : public drain_listener {
  using clock = std::chrono::steady_clock;

 public:
  ref_drain(lane_base* const* lanes, std::size_t count, const drain_options& opts, batch_stats& stats,
            writer_lock_ref& writer_lock) noexcept
      : lanes_(lanes), lane_count_(count), opts_(opts), stats_(stats), writer_lock_(writer_lock),
        start_(clock::now()) {}

  /// Objects the first pass found held (or waiting for their dependents).
  std::size_t held = 0;

  /// Effects: returns once every object counted in `held` has been destroyed. Before each sleep,
  /// flushes (drain_options::before_sleep, then domain.barrier()) and rescans: guarantee 5.
  /// Blocking: until the last holder lets go. Offline while waiting under a qsbr Flavor.
  template <class Flavor>
  void wait(grace_domain<Flavor>& domain) noexcept {
    const bool rebroadcasts = any_lane_rebroadcasts();
    while (held > 0) {
      if (flush_and_recheck(domain) == 0) break;
      {
        // Offline under qsbr (detail/blocking.hpp): an online waiter stalls every other thread's
        // grace period, and deadlocks with a holder that needs one before its put(). Only the
        // wait is offline: hooks (rebroadcast, destroy) run online as usual.
        offline_while_blocked<Flavor> offline;
        std::unique_lock lock(mutex_);
        const auto deadline = rebroadcasts ? next_timer() : next_report_;
        cv_.wait_until(lock, deadline, [&] { return told_; });
        told_ = false;
      }
      const auto now = clock::now();
      // Rescan on every wake-up, timers' included: a (misuse, refused) hold() racing the last
      // put can hide a told count from one scan; the next wake-up finds it. A destroy may put its
      // parent's last reference, which tells us again (caught by this scan or the next).
      const std::size_t freed = release_told();
      if (freed > 0) note_wait(now);
      held -= freed;
      if (held == 0) break;
      run_timers(now, rebroadcasts);
    }
    quiesce();
  }

  /// Parked (a drain that will not sleep here: async_unregister's hand-back, reclaim_protocol.hpp):
  /// from now on every last put() also calls `wake(arg)`, after its mark, so the one thread that
  /// polls parked drains knows to call poll(). Set before the rescan that decides to park: a put
  /// before it is seen by that rescan, one after it calls wake (both under mutex_).
  void park(void (*wake)(void*) noexcept, void* arg) noexcept {
    std::lock_guard lock(mutex_);
    wake_ = wake;
    wake_arg_ = arg;
  }

  /// A parked drain's step, on whichever single thread polls it: destroys what its last holders
  /// let go, and when a timer is due asks holders to let go (rebroadcast), names the objects still
  /// held (the stall line) and flushes (guarantee 5: before_sleep, the barrier, a rescan). Never
  /// sleeps. Returns the objects still held; at 0 the drain is over (quiesced: it may go away).
  template <class Flavor>
  std::size_t poll(grace_domain<Flavor>& domain) noexcept {
    {
      std::lock_guard lock(mutex_);
      told_ = false;
    }
    held -= release_told();
    const auto now = clock::now();
    if (held > 0 && now >= next_timer()) {
      run_timers(now, any_lane_rebroadcasts());
      flush_and_recheck(domain);
    }
    if (held == 0) quiesce();
    return held;
  }

  /// When a parked drain's poll() has timer work (rebroadcast, stall report) next.
  clock::time_point next_timer() const noexcept {
    return any_lane_rebroadcasts() ? std::min(next_rebroadcast_, next_report_) : next_report_;
  }

  /// A put that told us may still be inside released() (its lock, notify, unlock): waits until
  /// every one has left before this drain, its mutex and its condition variable go away. Each is
  /// counted from before its mark (which this drain saw, with acquire, before it could get here)
  /// to its last touch of the drain, so none can be missed — whatever the order of the mark and
  /// the lock inside released(). Short: a putter holds the lock for one notify.
  void quiesce() noexcept {
    while (in_released_.load(std::memory_order_acquire) != 0) {
#ifdef RCUBATCH_REF_DRAIN_TEST_PROBE
      RCUBATCH_REF_DRAIN_TEST_PROBE("drain waits for putters");  // test seam: see released()
#endif
      std::this_thread::yield();
    }
  }

  /// The last put() of a draining object (found through the object's queue): marks it told and
  /// wakes wait(). Any thread. After mark_told the object may be destroyed at once: not touched.
  void released(registrable_base& r) noexcept override {
    in_released_.fetch_add(1, std::memory_order_relaxed);  // before the mark's release: wait() sees it
    void (*wake)(void*) noexcept = nullptr;
    void* wake_arg = nullptr;
    {
      std::lock_guard lock(mutex_);
      registrable_access::mark_told(r);  // under the lock, with told_: no lost wake-up
      told_ = true;
      wake = wake_;  // parked (park()): under the lock too, so no put is missed by both
      wake_arg = wake_arg_;
      cv_.notify_one();
    }
    if (wake != nullptr) wake(wake_arg);  // before the count below: the drain is still there
#ifdef RCUBATCH_REF_DRAIN_TEST_PROBE
    // Test seam (tests/ref_drain_test.cpp): a putter told the drain and left its lock, and is
    // still inside released(): the drain must not return (its mutex and condition variable live
    // on) before the fetch_sub below. Not defined otherwise: no cost.
    RCUBATCH_REF_DRAIN_TEST_PROBE("putter inside released");
#endif
    in_released_.fetch_sub(1, std::memory_order_release);  // this put's last touch of the drain
  }

  /// Guarantee 5: the user's hook, the domain's barrier (every queued callback has run: one may
  /// have put a last reference), then the rescan. Returns how many objects are still held.
  template <class Flavor>
  std::size_t flush_and_recheck(grace_domain<Flavor>& domain) noexcept {
    if (opts_.before_sleep) {
      try {
        opts_.before_sleep();
      } catch (...) {  // a hook must not throw; a throwing one loses its flush, not the drain
      }
    }
    if (!on_call_rcu_worker<Flavor>()) {
      writer_lock_.unlock_for_barrier();  // hold_lock_through_drain: a queued callback may need it
      domain.barrier();  // offline under qsbr; a read section here is the caller's misuse (fatal)
      writer_lock_.relock_after_barrier();
    }
    // else: a drain on one of the flavor's call_rcu workers (a deferred teardown: unregister from
    // a callback) must not wait for the barrier — liburcu's would wait for this worker, which runs
    // nothing until this callback returns. The callbacks the barrier would flush cannot be
    // waited for here: those queued on this worker run only after the drain returns, those on
    // other workers run anyway, and a last put() among them wakes the drain as any other does.
    ++stats_.drain_flushes;
    const std::size_t freed = release_told();
    if (freed > 0) note_wait();
    held -= freed;
    return held;
  }

  /// Sends a stall line where drain_options says.
  static void emit(const drain_options& opts, std::string_view line) noexcept {
    if (opts.reporter_fn) {
      try {
        opts.reporter_fn(line);
      } catch (...) {  // a reporter must not throw; a throwing one loses its line, not the drain
      }
    } else if (opts.reporter) {
      opts.reporter(line);
    } else {
      std::fprintf(stderr, "rcubatch: %.*s\n", static_cast<int>(line.size()), line.data());
    }
  }

 private:
  bool any_lane_rebroadcasts() const noexcept {
    for (std::size_t i = 0; i < lane_count_; ++i)
      if (lanes_[i]->has_rebroadcast()) return true;
    return false;
  }

  /// The drain's two timers, for the objects still held: the policy's rebroadcast under the
  /// writer lock (the kernel re-sends NETDEV_UNREGISTER under RTNL), then the stall lines.
  void run_timers(clock::time_point now, bool rebroadcasts) noexcept {
    if (rebroadcasts && now >= next_rebroadcast_) {
      writer_lock_.relock();
      for_each_held([&](lane_base& l, registrable_base& r) {
        l.rebroadcast(r);
        ++stats_.rebroadcasts;
      });
      writer_lock_.unlock();
      next_rebroadcast_ = clock::now() + opts_.rebroadcast_interval;
    }
    if (clock::now() >= next_report_) {  // re-read: the rebroadcast may have waited for the lock
      for_each_held([&](lane_base& l, registrable_base& r) { l.report_stall(r, stats_.stall_reports); });
      next_report_ = clock::now() + opts_.stall_report_interval;
    }
  }

  /// Records how long the drain has waited so far (batch_stats::longest_drain_wait).
  void note_wait(clock::time_point now = clock::now()) noexcept {
    if (now - start_ > stats_.longest_drain_wait)
      stats_.longest_drain_wait = std::chrono::duration_cast<batch_stats::duration>(now - start_);
  }

  /// Destroys every told object, lanes last to first (as the first pass). Returns how many.
  std::size_t release_told() noexcept {
    std::size_t n = 0;
    for (std::size_t i = lane_count_; i-- > 0;) n += lanes_[i]->release_told();
    return n;
  }

  template <class F>
  void for_each_held(F&& f) noexcept {
    for (std::size_t i = 0; i < lane_count_; ++i)
      for (registrable_base& r : lanes_[i]->objects()) f(*lanes_[i], r);
  }

  lane_base* const* lanes_;
  std::size_t lane_count_;
  const drain_options& opts_;
  batch_stats& stats_;
  writer_lock_ref& writer_lock_;
  clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool told_ = false;  // a last put() told us since the last wake-up; guarded by mutex_
  void (*wake_)(void*) noexcept = nullptr;  // parked: what a last put() calls (park()); mutex_
  void* wake_arg_ = nullptr;
  clock::time_point next_rebroadcast_ = start_ + opts_.rebroadcast_interval;
  clock::time_point next_report_ = start_ + opts_.stall_report_interval;
  std::atomic<unsigned> in_released_{0};  // puts inside released(): wait() returns only at 0
};

}  // namespace detail
}  // namespace rcubatch
