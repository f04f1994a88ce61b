// rcubatch/detail/latency_histogram.hpp — the request → destroy latencies of an async_unregister.
//
// Fixed memory (512 counters) whatever the number of requests, so the reclaimer's bookkeeping
// stays bounded; quantiles are bucket upper bounds, within 12.5 % (8 sub-buckets per octave),
// capped by the exact maximum. Not thread-safe: async_unregister guards it with a mutex.
//
// Requests are stamped with stamp_clock, not steady_clock: a submit reads it under the writer
// lock, and steady_clock::now (a vDSO call, a system call under valgrind) was ~30 of a submit's
// ~740 instructions (callgrind, issue 35). On x86 it is the time-stamp counter (one instruction;
// invariant — constant rate, synchronized across cores — on the CPUs this library runs on), turned
// into nanoseconds per batch by latency_recorder, against steady_clock readings of its own: the
// rate is measured over the recorder's whole life, so its error shrinks as it runs. Elsewhere it
// is steady_clock's count (ns). The stamps are statistics only: no timer or ordering uses them.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace rcubatch::detail {

/// The submit stamps of an async_unregister's requests (see the file comment).
struct stamp_clock {
  using rep = std::uint64_t;
#if defined(__x86_64__) || defined(__i386__)
  static constexpr bool counts_ns = false;
  static rep now() noexcept { return __rdtsc(); }
#else
  static constexpr bool counts_ns = true;
  static rep now() noexcept {
    return static_cast<rep>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count());
  }
#endif
};

/// A fixed log2 histogram of durations in ns: 64 octaves × 8 sub-buckets. Written here rather
/// than taken from HdrHistogram: a header-only library takes no dependency for 40 lines, and the
/// memory must be fixed (the bound on bookkeeping).
class latency_histogram {
 public:
  static constexpr unsigned kSub = 8;
  /// Counts `count` durations of `ns` (the same bucket).
  void add(std::uint64_t ns, std::uint64_t count = 1) noexcept {
    counts_[index_of(ns)] += count;
    total_ += count;
    max_ = std::max(max_, ns);
  }
  /// The upper bound of the bucket holding the q-quantile (0 < q ≤ 1); 0 when empty.
  std::uint64_t quantile(double q) const noexcept {
    if (total_ == 0) return 0;
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_) + 0.999999);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank && counts_[i] != 0) return std::min(upper_of(i), max_);
    }
    return max_;
  }
  std::uint64_t max() const noexcept { return max_; }

  /// The smallest duration counted in the bucket that holds `ns`: every duration in
  /// [bucket_floor(ns), ns] falls in that bucket (async_unregister counts a batch's requests a
  /// bucket at a time with it).
  static std::uint64_t bucket_floor(std::uint64_t ns) noexcept {
    if (ns < kSub) return ns;
    const unsigned octave = 63u - static_cast<unsigned>(__builtin_clzll(ns));
    return (ns >> (octave - 3)) << (octave - 3);
  }

 private:
  static std::size_t index_of(std::uint64_t ns) noexcept {
    if (ns < kSub) return static_cast<std::size_t>(ns);
    const unsigned octave = 63u - static_cast<unsigned>(__builtin_clzll(ns));  // ≥ 3
    const unsigned sub = static_cast<unsigned>((ns >> (octave - 3)) & (kSub - 1));
    return static_cast<std::size_t>((octave - 2) * kSub + sub);
  }
  static std::uint64_t upper_of(std::size_t i) noexcept {
    if (i < kSub) return i;
    const unsigned octave = static_cast<unsigned>(i / kSub) + 2;
    const std::uint64_t sub = i % kSub;
    const std::uint64_t base = std::uint64_t{1} << octave;
    const std::uint64_t step = base / kSub;
    return base + (sub + 1) * step - 1;
  }
  std::array<std::uint64_t, 64 * kSub> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

/// A latency_histogram shared by threads, under a mutex of its own: async_unregister's
/// request→destroy latencies, written by whichever thread ends a batch, read by stats().
class latency_recorder {
 public:
  using clock = std::chrono::steady_clock;

  /// Counts one latency.
  void add(clock::duration d) noexcept {
    std::scoped_lock lock(m_);
    h_.add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
  }

  /// Counts now − t for every stamp t of `starts` (stamp_clock). `starts` does not decrease
  /// (each is stamped under the writer lock, in submit order; two stamps of different cores may
  /// be inverted by the few cycles a time-stamp read can move, which moves a request at most to
  /// a neighbouring bucket), so the latencies do not increase and each bucket's requests are one
  /// run, found by a binary search: O(buckets × log n) per batch instead of a histogram update
  /// per request (callgrind, issue 24: that loop was ~20 instructions per object on the
  /// reclaimer, for a batch whose requests all end together).
  void add_since(const std::vector<stamp_clock::rep>& starts) noexcept {
    const stamp_pair end = read_pair();
    std::scoped_lock lock(m_);
    const double ns_per_tick = rate(end);
    for (auto it = starts.begin(); it != starts.end();) {
      const stamp_clock::rep ticks = end.ticks > *it ? end.ticks - *it : 0;
      const auto ns = static_cast<std::uint64_t>(static_cast<double>(ticks) * ns_per_tick);
      // The run: every later start no later than end − floor ticks, whose latency is ≥ the
      // bucket's floor (and ≤ ns).
      const auto floor_ticks = static_cast<stamp_clock::rep>(
          static_cast<double>(latency_histogram::bucket_floor(ns)) / ns_per_tick);
      const stamp_clock::rep last = end.ticks > floor_ticks ? end.ticks - floor_ticks : 0;
      const auto run_end = std::upper_bound(it + 1, starts.end(), last);
      h_.add(ns, static_cast<std::uint64_t>(run_end - it));
      it = run_end;
    }
  }

  /// p50, p99 and the maximum so far (the bucket bounds: within 12.5 %).
  struct summary {
    std::chrono::nanoseconds p50{}, p99{}, max{};
  };
  latency_recorder() noexcept : origin_(read_pair()) {}

  summary read() const noexcept {
    std::scoped_lock lock(m_);
    const auto ns = [](std::uint64_t v) { return std::chrono::nanoseconds(static_cast<std::int64_t>(v)); };
    return summary{ns(h_.quantile(0.50)), ns(h_.quantile(0.99)), ns(h_.max())};
  }

 private:
  // A stamp and the steady_clock time it was read at (the midpoint of two readings around it).
  struct stamp_pair {
    std::int64_t ns;
    stamp_clock::rep ticks;
  };
  static std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
  }
  static stamp_pair read_pair() noexcept {
    const std::int64_t before = steady_ns();
    const stamp_clock::rep ticks = stamp_clock::now();
    const std::int64_t after = steady_ns();
    return stamp_pair{before + (after - before) / 2, ticks};
  }
  // Requires: m_. Nanoseconds per stamp tick, measured from construction to `end` (1 when the
  // stamps count ns, or before the counter has advanced).
  double rate(const stamp_pair& end) const noexcept {
    if constexpr (stamp_clock::counts_ns) {
      return 1.0;
    } else {
      if (end.ticks <= origin_.ticks || end.ns <= origin_.ns) return 1.0;
      return static_cast<double>(end.ns - origin_.ns) / static_cast<double>(end.ticks - origin_.ticks);
    }
  }

  const stamp_pair origin_;
  mutable std::mutex m_;
  latency_histogram h_;
};

}  // namespace rcubatch::detail
