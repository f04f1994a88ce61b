// rcubatch/counting_flavor.hpp — a fake flavor for unit tests: counts grace periods, waits for none.
//
//   using F = rcubatch::counting_flavor<struct my_test_tag>;   // counters private to the tag
//   rcubatch::grace_domain<F> domain;
//   auto stats = rcubatch::rollback_many(queue, policy, domain);
//   EXPECT_EQ(F::synchronizes(), 2u);
//   (compiled in tests/header_examples_test.cpp)
//
// It lets a test assert exact grace-period counts ("this batch costs 2 GPs whatever N") without
// timing anything. It provides no real RCU protection: use it only where no other thread reads.
// call() queues the callback; the next synchronize() or barrier() runs every queued one, in order.
// on_synchronize, when set, runs inside every synchronize — tests use it to record phase order,
// or to hold a grace period "in progress" on one thread while another races it. It is a
// std::function, so the hook can carry its context (`F::on_synchronize = [&] { log.push_back("GP"); }`)
// instead of reaching for globals; plain function pointers and nullptr still assign.
// Threads need no registration (registers_lazily): there is no protection to forget.
//
// Contracts, for every member: Throws: nothing. Blocking: never, except synchronize() and
// barrier(), which block only as long as the on_synchronize hook / the queued callbacks do.
// The rcu_flavor functions do what flavor.hpp's concept table says, minus the waiting.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string_view>
#include <vector>

#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"

namespace rcubatch {

/// A fake rcu_flavor for unit tests: counts grace periods, waits for none (file comment above).
/// Tag keeps one test's counters apart from another's.
template <class Tag>  // default (void): fwd.hpp
struct counting_flavor {
  /// The rcu_flavor members (contract: flavor.hpp's rcu_flavor), minus the waiting: no-ops here.
  ///@{
  static constexpr std::string_view name = "counting";
  static constexpr bool quiescent_state_based = false;
  static constexpr bool registers_lazily = true;

  static void register_thread() noexcept {}
  static void unregister_thread() noexcept {}
  static void read_lock() noexcept {}
  static void read_unlock() noexcept {}
  static bool read_ongoing() noexcept { return false; }  // read_guard's depth is the truth here
  static void quiescent_state() noexcept {}
  static void thread_offline() noexcept {}
  static void thread_online() noexcept {}
  ///@}

  /// Effects: counts one GP, calls on_synchronize (if set), then runs every callback queued by
  /// call() so far, in order. Complexity: O(queued callbacks).
  static void synchronize() noexcept {
    synchronize_count_.fetch_add(1);
    if (on_synchronize) on_synchronize();
    run_callbacks();
  }
  /// Effects: queues f(h) for the next synchronize() or barrier(). Requires: h valid until then.
  /// Complexity: amortized O(1) (may allocate: a std::bad_alloc here ends in std::terminate).
  static void call(rcu_head* h, rcu_callback f) noexcept {
    std::lock_guard lock(mutex_);
    h->func = f;
    pending_.push_back(h);
  }
  /// Effects: counts one barrier, then runs every queued callback. Complexity: O(queued).
  static void barrier() noexcept {
    barrier_count_.fetch_add(1);
    run_callbacks();
  }

  /// synchronize() calls since the last reset(), for this Tag. O(1).
  static unsigned long synchronizes() noexcept { return synchronize_count_.load(); }
  /// barrier() calls since the last reset(), for this Tag. O(1).
  static unsigned long barriers() noexcept { return barrier_count_.load(); }
  /// Effects: zeroes both counts and clears on_synchronize (queued callbacks stay queued).
  /// Requires: no thread is inside synchronize() or barrier() of this Tag.
  static void reset() noexcept {
    synchronize_count_ = 0;
    barrier_count_ = 0;
    on_synchronize = nullptr;
  }

  /// Called inside every synchronize(), on the calling thread, between the domain's "GP started"
  /// and "GP ended" marks. Any callable: a lambda capturing the test's locals, a function pointer.
  /// Requires: set and cleared only while no thread is inside synchronize() of this Tag; the
  /// callable does not throw (it runs inside the noexcept synchronize(): a throw terminates) and
  /// whatever it captures by reference outlives its use (reset() clears it).
  /// Throws (assignment): std::bad_alloc if the callable's state does not fit std::function's
  /// small buffer and allocation fails.
  static inline std::function<void()> on_synchronize;

 private:
  static void run_callbacks() noexcept {
    std::vector<rcu_head*> ready;
    {
      std::lock_guard lock(mutex_);
      ready.swap(pending_);
    }
    for (rcu_head* h : ready) h->func(h);
  }

  static inline std::atomic<unsigned long> synchronize_count_{0};
  static inline std::atomic<unsigned long> barrier_count_{0};
  static inline std::mutex mutex_;
  static inline std::vector<rcu_head*> pending_;
};

static_assert(rcu_flavor<counting_flavor<>>);

}  // namespace rcubatch
