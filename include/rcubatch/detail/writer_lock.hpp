// rcubatch/detail/writer_lock.hpp — the writer lock: the registry's (which knows its holder), and
// the caller's as rollback_many may release it.
//
// tracked_writer_lock<Flavors, Lockable> is what a registry (and its reclaimer) locks: a Lockable
// that records which thread holds it, so a member that would take it again on that thread — a
// hook of a batch that holds it, code running under writer_lock() — is diagnosed
// (holds_writer_lock) instead of deadlocking, and whose lock() is a blocking wait done offline
// under qsbr.
//
// rollback_many never touches the registry's writer lock unless the caller opts in: with
// unlock_during_waits(lock) (rollback_many.hpp) it unlocks around the grace-period waits and the
// ref drain; a registry or reclaimer may instead release it for the ref drain only (the kernel's
// order: netdev_run_todo waits for references after RTNL is dropped). Either way it re-locks
// before it touches the registry again and before it returns. Without an opt-in this is an inert
// object and every call is a no-op.
//
// Re-locking is a blocking wait like any other: under qsbr the thread is offline while it waits
// for the lock (detail/blocking.hpp), for every flavor the thread may be online in (the domain's,
// and a registry's index flavors).
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <thread>
#include <tuple>

#include "rcubatch/detail/blocking.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch::detail {

/// A Lockable that knows its holder (see the file comment). Flavors: the flavor(s) a waiting
/// thread may be online in. Meets Lockable (lock, try_lock, unlock) whatever Lockable offers
/// beyond BasicLockable; try_lock requires Lockable's.
template <class Flavors, class Lockable>
class tracked_writer_lock {
 public:
  tracked_writer_lock() = default;
  tracked_writer_lock(const tracked_writer_lock&) = delete;
  tracked_writer_lock& operator=(const tracked_writer_lock&) = delete;

  /// Effects: takes the lock (offline while waiting under qsbr). A thread that already holds it
  /// would wait for itself forever: fatal (diagnose_fatal), as a hang is not an option.
  void lock() {
    if (held_by_caller()) [[unlikely]]
      diagnose_fatal(misuse_kind::holds_writer_lock,
                     "the registry's writer lock taken again by the thread that holds it (a hook of a batch "
                     "that holds it, or code under writer_lock()): it would wait for itself forever");
    if constexpr (requires { { lock_.try_lock() } -> std::convertible_to<bool>; }) {
      if (lock_.try_lock()) {
        holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
        return;
      }
    }
    // Contended: counted, so that a chunked unlist can let this writer in (yield_to_waiter).
    waiting_.fetch_add(1, std::memory_order_relaxed);
    lock_offline<Flavors>(lock_);
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    waiting_.fetch_sub(1, std::memory_order_relaxed);
    served_.fetch_add(1, std::memory_order_release);
  }
  bool try_lock()
    requires requires(Lockable& l) { { l.try_lock() } -> std::convertible_to<bool>; }
  {
    if (!lock_.try_lock()) return false;
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    holder_.store(std::thread::id{}, std::memory_order_relaxed);
    lock_.unlock();
  }
  /// True when the calling thread holds the lock (only it can make this true, so a relaxed load
  /// answers exactly for the caller).
  bool held_by_caller() const noexcept { return holder_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }
  /// The lock itself, for code that needs its own type (a condition_variable_any works on this).
  Lockable& underlying() noexcept { return lock_; }
  /// True when a thread is waiting in lock() (a hint: it may have got the lock since).
  bool contended() const noexcept { return waiting_.load(std::memory_order_relaxed) != 0; }
  /// Requires: the caller holds the lock. Effects: if a thread waits in lock(), releases the lock
  /// until one waiting thread has taken it (offline under qsbr while it waits for that), then
  /// takes it again (after that thread released it); nobody waiting: nothing (no unlock). So one
  /// call lets at most the waiters already queued in, one at least, and a stream of new writers
  /// cannot keep the caller out for longer than one critical section each of those in line.
  /// Blocking: until a waiter took the lock and the lock is free again.
  void yield_to_waiter() {
    if (!contended()) return;
    const std::uint64_t served = served_.load(std::memory_order_acquire);
    unlock();
    {
      offline_while_blocked<Flavors> offline;
      while (served_.load(std::memory_order_acquire) == served) std::this_thread::yield();
    }
    lock();
  }

 private:
  Lockable lock_;
  std::atomic<std::thread::id> holder_{};
  std::atomic<unsigned> waiting_{0};        // threads in lock()'s contended path
  std::atomic<std::uint64_t> served_{0};    // contended lock() calls that got the lock
};

/// What the batch releases the writer lock for.
enum class lock_release : unsigned char {
  never,            ///< held through the whole batch (no lock given, or the caller's choice)
  drain_only,       ///< held through the grace periods, released for the disposals and the drain
  grace_periods,    ///< released for the grace-period waits as well (unlock_during_waits)
  barrier_only,     ///< held through the drain too, except around its call_rcu barrier (hold_lock_through_drain)
};

class writer_lock_ref {
  using clock = std::chrono::steady_clock;

 public:
  writer_lock_ref() = default;
  /// Flavors: the flavor(s) the thread may be online in while it waits to re-lock (one flavor or
  /// a std::tuple of them).
  template <class Flavors, class Lockable>
  static writer_lock_ref make(Lockable& lock, lock_release when) noexcept {
    writer_lock_ref r;
    if (when == lock_release::never) return r;
    r.lock_ = &lock;
    r.when_ = when;
    r.unlock_ = [](void* l) noexcept { static_cast<Lockable*>(l)->unlock(); };
    r.relock_ = [](void* l) noexcept { lock_offline<Flavors>(*static_cast<Lockable*>(l)); };
    if constexpr (requires(Lockable& l) { l.yield_to_waiter(); })
      r.yield_ = [](void* l) noexcept { static_cast<Lockable*>(l)->yield_to_waiter(); };
    return r;
  }

  /// Between two chunks of a chunked unlist (rollback_options::unlist_chunk), with the lock held:
  /// lets a writer waiting for it in, then takes it back (tracked_writer_lock::yield_to_waiter;
  /// nothing when nobody waits). Nothing for an inert ref or a lock that cannot tell.
  void yield_to_writers() noexcept {
    if (lock_ == nullptr || !held_ || yield_ == nullptr) return;
    yield_(lock_);
  }

  /// Around a grace-period wait: releases the lock only under lock_release::grace_periods.
  void unlock_for_grace_period() noexcept {
    if (when_ == lock_release::grace_periods) unlock();
  }
  void relock_after_grace_period() noexcept {
    if (when_ == lock_release::grace_periods) relock();
  }
  /// Before the disposals and the ref drain: releases the lock under drain_only and grace_periods.
  void unlock() noexcept {
    if (when_ != lock_release::barrier_only) release();
  }
  void relock() noexcept {
    if (lock_ == nullptr || held_) return;
    relock_(lock_);
    held_ = true;
    released_for_ += clock::now() - unlocked_at_;
  }
  /// Around the ref drain's call_rcu barrier (ref_drain.hpp, guarantee 5): a callback the barrier
  /// waits for may take the writer lock, so a batch that holds it through the drain
  /// (barrier_only) gives it back for the barrier, as the kernel drops RTNL before rcu_barrier.
  /// Under the other modes the lock is already released there (or was never given).
  void unlock_for_barrier() noexcept {
    if (when_ == lock_release::barrier_only) release();
  }
  void relock_after_barrier() noexcept {
    if (when_ == lock_release::barrier_only) relock();
  }
  /// True when the lock is released while the batch releases (destroys) its objects: other
  /// writers may run meanwhile and race with this batch for its objects (a cascade reaching one).
  /// Not under barrier_only: the objects are released only with the lock held again.
  bool released_during_waits() const noexcept { return lock_ != nullptr && when_ != lock_release::barrier_only; }
  /// Total time the lock was given back to other writers.
  clock::duration released_for() const noexcept { return released_for_; }

 private:
  void release() noexcept {
    if (lock_ == nullptr || !held_) return;
    unlock_(lock_);
    held_ = false;
    unlocked_at_ = clock::now();
  }

  void* lock_ = nullptr;
  void (*unlock_)(void*) noexcept = nullptr;
  void (*relock_)(void*) noexcept = nullptr;
  void (*yield_)(void*) noexcept = nullptr;
  lock_release when_ = lock_release::never;
  bool held_ = true;
  clock::time_point unlocked_at_{};
  clock::duration released_for_{};
};

}  // namespace rcubatch::detail
