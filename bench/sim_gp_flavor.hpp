// bench/sim_gp_flavor.hpp — a liburcu flavor whose grace periods are counted, and optionally
// stretched to a fixed minimum length (the "simulated GP" of the many-writers bench).
//
//   using memb_counted = rcubatch_bench::timed_gp_flavor<rcubatch::flavor::memb, 0>;     // real GPs, counted
//   using memb_gp1ms   = rcubatch_bench::timed_gp_flavor<rcubatch::flavor::memb, 1000>;  // >= 1 ms each
//   rcubatch::grace_domain<memb_gp1ms> domain;
//   memb_gp1ms::synchronizes();   // exact count of synchronize() calls so far
//
// Why: on this 2-vCPU VM a memb grace period with one busy reader is ~17 µs of spinning on the one
// free vCPU, so synchronous callers cannot overlap their waits and combining them cannot pay. A
// many-core machine (membarrier IPIs to hundreds of CPUs, readers preempted for a while) or a
// kernel-like GP (several ms) is long in wall time but costs the waiter little CPU. The simulated
// flavor stands for that: synchronize() does the real memb grace period (so it still protects
// every memb reader: nothing is freed early) and then *sleeps* until MinMicros have passed since
// it started. Sleeping, not spinning, is the point: the waiter gives its CPU to the other writers,
// as it would on a machine where the GP's length is other CPUs' business.
//
// Everything else forwards to Base (read side, call_rcu, barrier, table()), so readers use
// read_guard<Base> and lfht_index<..., Base>, and call()'s GPs are Base's own (liburcu's worker
// calls Base's synchronize directly: those are neither counted nor stretched). Registration is
// Base's: this flavor says registers_lazily and its register_thread is a no-op, because a thread
// registered with both thread_registration<Base> and thread_registration<this flavor> (the
// asynchronous reclaimer registers with the registry's flavor and the index's) would otherwise
// call liburcu's register twice, which liburcu 0.13.2 asserts against. Register threads with Base.
// Each instantiation has its own counter (a static member per template instance).
// Contracts: as flavor.hpp's rcu_flavor table; synchronize() Blocking: one Base GP, then until
// MinMicros after its start. Throws: nothing. (It calls rcubatch::detail::tsan_grace_period_ended,
// a detail of the library, because the wrapper's GP is Base's: see synchronize.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <thread>

#include <rcubatch/flavor.hpp>

namespace rcubatch_bench {

template <class Base, long MinMicros>
struct timed_gp_flavor : Base {
  static_assert(MinMicros >= 0, "timed_gp_flavor: MinMicros must be >= 0");
  static constexpr long min_gp_us = MinMicros;
  static constexpr bool registers_lazily = true;  // registration is Base's (see above)
  static void register_thread() noexcept {}
  static void unregister_thread() noexcept {}

  /// Effects: Base::synchronize(), then (MinMicros > 0) sleeps until MinMicros after the call
  /// began; counts the call. Blocking: as said. Throws: nothing.
  static void synchronize() noexcept {
    const auto t0 = std::chrono::steady_clock::now();
    Base::synchronize();
    // ThreadSanitizer: readers release Base's token (they use read_guard<Base>) and grace_domain
    // acquires this flavor's, so say here that Base's GP ended (a no-op without TSan).
    rcubatch::detail::tsan_grace_period_ended<Base>();
    if constexpr (MinMicros > 0) std::this_thread::sleep_until(t0 + std::chrono::microseconds(MinMicros));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
    count_.fetch_add(1, std::memory_order_relaxed);
    total_ns_.fetch_add(static_cast<std::uint64_t>(ns.count()), std::memory_order_relaxed);
  }
  /// synchronize() calls since the process started. O(1), any thread.
  static std::uint64_t synchronizes() noexcept { return count_.load(std::memory_order_relaxed); }
  /// Wall time spent in synchronize() since the process started, in ns (summed over callers).
  static std::uint64_t synchronize_ns() noexcept { return total_ns_.load(std::memory_order_relaxed); }

 private:
  static inline std::atomic<std::uint64_t> count_{0};
  static inline std::atomic<std::uint64_t> total_ns_{0};
};

static_assert(rcubatch::rcu_flavor<timed_gp_flavor<rcubatch::flavor::memb, 1000>>);

}  // namespace rcubatch_bench
