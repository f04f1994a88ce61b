// tests/support/checking_readers.hpp — reader threads that check every lookup while a writer
// replaces what they look up (the replace tests of registry and owned):
//
//   checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
//     const item* x = reg.find<by_id>(guard, 7);
//     return lookup_outcome{.missed = x == nullptr, .poisoned = x && x->poison.load() != kAlive};
//   });
//   ... the writer's replaces ...
//   const lookup_tally seen = readers.stop();   // joins; seen.lookups, seen.misses, seen.poisoned
//
// Each reader registers with Flavor, and runs `check(i, guard)` inside a read_guard<Flavor> for i = its
// start (r * 997), +1, ... until stop(). The constructor returns once every reader is running.
#pragma once

#include <atomic>
#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

#include <rcubatch/read_guard.hpp>

namespace rcubatch::test {

/// What one lookup saw: nothing where something must be found, or a destroyed object.
struct lookup_outcome {
  bool missed = false;
  bool poisoned = false;
};

/// What the readers saw in all.
struct lookup_tally {
  long lookups = 0;
  long misses = 0;
  long poisoned = 0;
};

template <class Flavor>
class checking_readers {
 public:
  template <class Check>
  checking_readers(int n, Check check) : ready_(n) {
    for (int r = 0; r < n; ++r) {
      threads_.emplace_back([this, check, r] {
        thread_registration<Flavor> registered;
        ready_.count_down();
        for (std::uint64_t i = static_cast<std::uint64_t>(r) * 997; !stop_.load(std::memory_order_acquire); ++i) {
          read_guard<Flavor> guard;
          const lookup_outcome o = check(i, guard);
          lookups_.fetch_add(1, std::memory_order_relaxed);
          if (o.missed) misses_.fetch_add(1, std::memory_order_relaxed);
          if (o.poisoned) poisoned_.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    ready_.wait();
  }
  checking_readers(const checking_readers&) = delete;
  checking_readers& operator=(const checking_readers&) = delete;
  ~checking_readers() { stop(); }

  /// Stops and joins the readers; what they saw.
  lookup_tally stop() {
    stop_.store(true, std::memory_order_release);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    return {lookups_.load(), misses_.load(), poisoned_.load()};
  }

 private:
  std::latch ready_;
  std::atomic<bool> stop_{false};
  std::atomic<long> lookups_{0}, misses_{0}, poisoned_{0};
  std::vector<std::thread> threads_;
};

}  // namespace rcubatch::test
