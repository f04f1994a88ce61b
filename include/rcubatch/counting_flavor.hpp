// rcubatch/counting_flavor.hpp — a fake flavor for unit tests: counts grace periods, waits for none.
//
//   using F = rcubatch::counting_flavor<struct my_test_tag>;   // counters private to the tag
//   rcubatch::grace_domain<F> domain;
//   auto stats = rcubatch::rollback_many(queue, policy, domain);
//   EXPECT_EQ(F::synchronizes(), 2);
//
// It lets a test assert exact grace-period counts ("this batch costs 2 GPs whatever N") without
// timing anything. It provides no real RCU protection: use it only where no other thread reads.
// call() queues the callback; the next synchronize() or barrier() runs every queued one, in order.
// on_synchronize, when set, runs inside every synchronize — tests use it to record phase order.
#pragma once

#include <atomic>
#include <mutex>
#include <string_view>
#include <vector>

#include "rcubatch/flavor.hpp"

namespace rcubatch {

template <class Tag = void>
struct counting_flavor {
  static constexpr std::string_view name = "counting";
  static constexpr bool quiescent_state_based = false;

  static void register_thread() noexcept {}
  static void unregister_thread() noexcept {}
  static void read_lock() noexcept {}
  static void read_unlock() noexcept {}
  static bool read_ongoing() noexcept { return false; }  // read_guard's depth is the truth here
  static void quiescent_state() noexcept {}
  static void thread_offline() noexcept {}
  static void thread_online() noexcept {}

  static void synchronize() noexcept {
    synchronize_count_.fetch_add(1);
    if (auto hook = on_synchronize) hook();
    run_callbacks();
  }
  static void call(rcu_head* h, rcu_callback f) noexcept {
    std::lock_guard lock(mutex_);
    h->func = f;
    pending_.push_back(h);
  }
  static void barrier() noexcept {
    barrier_count_.fetch_add(1);
    run_callbacks();
  }

  static unsigned long synchronizes() noexcept { return synchronize_count_.load(); }
  static unsigned long barriers() noexcept { return barrier_count_.load(); }
  static void reset() noexcept {
    synchronize_count_ = 0;
    barrier_count_ = 0;
    on_synchronize = nullptr;
  }

  static inline void (*on_synchronize)() noexcept = nullptr;

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
