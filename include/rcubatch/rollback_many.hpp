// rcubatch/rollback_many.hpp — unregister every queued object with at most two grace periods.
//
//   std::scoped_lock lock(registry.writer_mutex);       // the caller's lock, held throughout
//   rcubatch::unreg_queue<device> q;
//   for (device* d : doomed) q.push(*d);
//   rcubatch::batch_stats s = rcubatch::rollback_many(q, device_policy{registry}, domain);
//   // s.grace_periods <= 2, whatever q.size() and however deep the cascade
//
// The generic form of Linux's unregister_netdevice_many (2.6.33, 2009). For the queued objects:
//   0. validate        check states, call policy.validate — may throw: nothing has changed yet
//   -- point of no return: every later hook is noexcept (checked at compile time) --
//   1. close_many      once per round, with the round's objects; dismantle flag set
//   2. unlist          per object: unpublish from the RCU-visible indexes; → unregistering
//   -- grace period #1: no reader found any of them through a primary index any more --
//   3. notify          per object; may queue dependents (b.queue). Each round of dependents is
//                      closed and unlisted, then notified, until no new dependents appear
//   4. batch_notify    once: container-wide work (cache flush, FIB sweep)
//   5. uninit          per object, dependents first: unlink secondary structures, retire subs
//   -- grace period #2, only if something was unlinked after #1 (retire, note_unlinked, a void or
//      true-returning uninit, or any dependent) --
//   6. ref drain       → unregistered; wait for all, destroy each as its count drops (ref_drain.hpp)
//   7. destroy         policy.destroy(obj) (default: delete), then retired sub-objects are disposed
//
// Dependents queued from notify are unlisted after grace period #1, so their own notify/uninit run
// before a full grace period has passed since their unlist; only #2 separates their unlist from
// their destroy. Hooks must therefore only unlink and retire, never free directly — which is the
// rule for every hook anyway. That is what keeps a cascade of any depth at two grace periods.
//
// A single unregister (unregister_one) is a batch of one through the same code.
//
// Lock hygiene: the registry's writer lock belongs to the caller. rollback_many never takes or drops
// it — unless the caller passes unlock_during_waits(lock): then the grace-period waits and the ref
// drain run with the lock released (re-locked for rebroadcast and before returning). Only opt in
// when no lock is nested inside the writer lock (the kernel reverted exactly this in 2025).
//
// Misuse: called inside a read-side section → diagnosed before anything changes (under
// misuse_policy::report the call is refused: stats.refused, queue untouched). Objects that are not
// registered never reach a batch: unreg_queue::push refuses them (unregister_one then returns
// stats.skipped = 1).
//
// Cost: O(N) hook calls, 2 grace periods (1 if nothing was unlinked after the first). Measured on
// the 2-vCPU test VM, memb, one busy reader, 10,000 objects (examples/demo, 2026-11-30): 70 ns per
// object in all, queueing included, ~45 µs of it the two grace periods; one GP per object instead
// costs ~19 µs per object; the same teardown written by hand with no library, ~32 ns per object.
// The difference is memory traffic: each pass over the batch touches every object once.
// bench/RESULTS.md compares it with call_rcu, libcds and DPDK.
#pragma once

#include <chrono>
#include <iterator>
#include <string>
#include <utility>

#include "rcubatch/batch.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/policy.hpp"
#include "rcubatch/ref_drain.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch {

struct rollback_options {
  drain_options drain{};
  /// Set every object's dismantle flag for the whole batch (the point of the flag). Turn it off
  /// only to reproduce registries that predate it, for comparisons (examples/netdev legacy mode).
  bool mark_dismantle = true;
};

/// Opt-in: release `lock` (which the caller holds) during grace-period waits and the ref drain.
template <class Lockable>
struct unlock_during_waits {
  explicit unlock_during_waits(Lockable& l) noexcept : lock(l) {}
  Lockable& lock;
};

namespace detail {

struct batch_access {
  template <class T, class F> static auto make(grace_domain<F>& d) noexcept { return batch<T, F>(d); }
  template <class T, class F> static unreg_list<T>& objects(batch<T, F>& b) noexcept { return b.objects_; }
  template <class T, class F> static batch_stats& stats(batch<T, F>& b) noexcept { return b.stats_; }
  template <class T, class F> static void adopt_all(batch<T, F>& b, unreg_queue<T>& q, bool dismantle) noexcept {
    b.adopt_all(q, dismantle);
  }
  template <class T, class F> static bool unlinked(batch<T, F>& b) noexcept { return b.unlinked_after_gp1_; }
  template <class T, class F> static void close_door(batch<T, F>& b) noexcept { b.accepting_dependents_ = false; }
  template <class T, class F> static void dispose_retired(batch<T, F>& b) noexcept { b.dispose_retired(); }
};

template <class T, class Flavor, class Policy>
class rollback_engine {
  using clock = std::chrono::steady_clock;
  using access = registrable_access;
  using hooks_type = policy_hooks<Policy, T, Flavor>;
  using batch_type = batch<T, Flavor>;
  using iterator = typename unreg_list<T>::iterator;

 public:
  rollback_engine(Policy& p, grace_domain<Flavor>& d, const rollback_options& o, writer_lock_ref lock) noexcept
      : hooks_{p}, domain_(d), opts_(o), lock_(lock) {
    hooks_type::check();
  }

  batch_stats run(unreg_queue<T>& q) {
    const auto start = clock::now();
    batch_stats result;
    if (in_read_section<Flavor>()) {
      diagnose(misuse_kind::blocking_in_read_section,
               std::string("rollback_many<") + std::string(Flavor::name) +
                   "> called inside a read-side section: its grace periods would deadlock (memb, mb, bp) "
                   "or drop the reader's protection (qsbr)");
      result.refused = true;  // misuse_policy::report: nothing changed
      return result;
    }
    // Phase 0. Every object in an unreg_queue is registered and in no batch: push checks it, and
    // states only change inside a batch, which takes its objects out of every queue first. So
    // only the policy's validate needs a pass — skipped without one, since each pass over N
    // scattered objects costs several ns per object in cache misses.
    if constexpr (hooks_type::has_validate_hook) {
      timed(result, phase::validate, [&] {
        for (T& obj : q) hooks_.validate(obj);  // may throw: the queue is as the caller left it
      });
    }
    if (q.empty()) return finish(result, start);

    // --- point of no return ---
    batch_type b = batch_access::make<T>(domain_);
    batch_stats& stats = batch_access::stats(b);
    stats.time_of(phase::validate) = result.time_of(phase::validate);
    batch_access::adopt_all(b, q, opts_.mark_dismantle);
    auto& objects = batch_access::objects(b);

    iterator round_first = objects.begin();
    close_and_unlist(b, stats, round_first);
    grace_period(stats, phase::grace_period_1);

    // Notify round by round: dependents queued by one round are closed, unlisted, then notified.
    std::size_t round_len = objects.size();
    while (round_len > 0) {
      ++stats.rounds;
      const std::size_t before = objects.size();
      iterator last = round_first;
      if constexpr (!hooks_type::has_any_notify) break;  // only notify can queue dependents
      timed(stats, phase::notify, [&] {
        iterator it = round_first;
        for (std::size_t i = 0; i < round_len; ++i, ++it) {
          hooks_.notify(*it, b);
          last = it;
        }
      });
      round_len = objects.size() - before;
      if (round_len == 0) break;
      round_first = std::next(last);
      close_and_unlist(b, stats, round_first);
    }
    batch_access::close_door(b);

    timed(stats, phase::batch_notify, [&] { hooks_.batch_notify(b); });

    bool unlinked = false;
    if constexpr (hooks_type::has_any_uninit) {
      timed(stats, phase::uninit, [&] {
        for (auto it = objects.rbegin(); it != objects.rend(); ++it) unlinked |= hooks_.uninit(*it, b);
      });
    }

    if (unlinked || batch_access::unlinked(b) || stats.dependents_added > 0) {
      grace_period(stats, phase::grace_period_2);
    }

    stats.objects = objects.size();
    lock_.unlock();
    timed(stats, phase::ref_drain, [&] {
      ref_drain<T, Flavor, hooks_type> drain(objects, hooks_, opts_.drain, stats, lock_);
      drain.run();
    });
    timed(stats, phase::destroy, [&] { batch_access::dispose_retired(b); });
    lock_.relock();
    return finish(stats, start);
  }

 private:
  void close_and_unlist(batch_type& b, batch_stats& stats, iterator first) noexcept {
    auto& objects = batch_access::objects(b);
    timed(stats, phase::close, [&] { hooks_.close_many(object_range<T>(first, objects.end())); });
    timed(stats, phase::unlist, [&] {
      for (auto it = first; it != objects.end(); ++it) {
        hooks_.unlist(*it);
        access::set_state(static_cast<registrable<T>&>(*it), reg_state::unregistering);
      }
    });
  }

  void grace_period(batch_stats& stats, phase which) noexcept {
    timed(stats, which, [&] {
      const gp_cookie cookie = domain_.snapshot();
      if (domain_.elapsed(cookie)) {
        ++stats.gps_elided;
        return;
      }
      lock_.unlock();
      if (domain_.wait_for(cookie)) {
        ++stats.grace_periods;
      } else {
        ++stats.gps_elided;
      }
      lock_.relock();
    });
  }

  template <class F>
  static void timed(batch_stats& stats, phase p, F&& f) {
    const auto t0 = clock::now();
    std::forward<F>(f)();
    stats.time_of(p) += std::chrono::duration_cast<batch_stats::duration>(clock::now() - t0);
  }

  batch_stats finish(batch_stats& stats, clock::time_point start) noexcept {
    stats.elapsed = std::chrono::duration_cast<batch_stats::duration>(clock::now() - start);
    stats.lock_hold = stats.elapsed - std::chrono::duration_cast<batch_stats::duration>(lock_.released_for());
    return stats;
  }

  hooks_type hooks_;
  grace_domain<Flavor>& domain_;
  const rollback_options& opts_;
  writer_lock_ref lock_;
};

}  // namespace detail

/// Unregisters every object in `q` as one batch (see the file comment). `q` is empty on return,
/// except under misuse_policy::report when the call was refused (stats.refused).
/// Requires: the caller holds the registry's writer lock; not inside a read-side section.
/// Throws: misuse_error (throw_error policy) or what policy.validate throws — nothing changed then.
/// Blocking: up to two grace periods, then until every object's references are dropped.
template <class T, class Policy, class Flavor>
batch_stats rollback_many(unreg_queue<T>& q, Policy&& policy, grace_domain<Flavor>& domain,
                          const rollback_options& opts = {}) {
  detail::rollback_engine<T, Flavor, std::remove_reference_t<Policy>> engine(policy, domain, opts, {});
  return engine.run(q);
}

/// As above, with the grace-period waits and the ref drain run outside the caller's `lock`.
template <class T, class Policy, class Flavor, class Lockable>
batch_stats rollback_many(unreg_queue<T>& q, Policy&& policy, grace_domain<Flavor>& domain,
                          unlock_during_waits<Lockable> lock, const rollback_options& opts = {}) {
  detail::rollback_engine<T, Flavor, std::remove_reference_t<Policy>> engine(
      policy, domain, opts, detail::writer_lock_ref(lock.lock));
  return engine.run(q);
}

/// One object through the same code path: a batch of one.
template <class T, class Policy, class Flavor>
batch_stats unregister_one(T& obj, Policy&& policy, grace_domain<Flavor>& domain,
                           const rollback_options& opts = {}) {
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
