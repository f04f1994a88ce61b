// rcubatch/detail/latency_histogram.hpp — the request → destroy latencies of an async_unregister.
//
// Fixed memory (512 counters) whatever the number of requests, so the reclaimer's bookkeeping
// stays bounded; quantiles are bucket upper bounds, within 12.5 % (8 sub-buckets per octave),
// capped by the exact maximum. Not thread-safe: async_unregister guards it with a mutex.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rcubatch::detail {

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

  /// Counts end − t for every t of `starts`. `starts` never decreases (each is stamped under the
  /// writer lock, in submit order), so the latencies never increase and each bucket's requests
  /// are one run, found by a binary search: O(buckets × log n) per batch instead of a histogram
  /// update per request (callgrind, issue 24: that loop was ~20 instructions per object on the
  /// reclaimer, for a batch whose requests all end together).
  void add_since(clock::time_point end, const std::vector<clock::time_point>& starts) noexcept {
    std::scoped_lock lock(m_);
    for (auto it = starts.begin(); it != starts.end();) {
      const auto ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - *it).count());
      // The run: every later start no later than end − floor, whose latency is ≥ floor (and ≤ ns).
      const auto floor = std::chrono::nanoseconds(static_cast<std::int64_t>(latency_histogram::bucket_floor(ns)));
      const auto run_end = std::upper_bound(it + 1, starts.end(), end - floor);
      h_.add(ns, static_cast<std::uint64_t>(run_end - it));
      it = run_end;
    }
  }

  /// p50, p99 and the maximum so far (the bucket bounds: within 12.5 %).
  struct summary {
    std::chrono::nanoseconds p50{}, p99{}, max{};
  };
  summary read() const noexcept {
    std::scoped_lock lock(m_);
    const auto ns = [](std::uint64_t v) { return std::chrono::nanoseconds(static_cast<std::int64_t>(v)); };
    return summary{ns(h_.quantile(0.50)), ns(h_.quantile(0.99)), ns(h_.max())};
  }

 private:
  mutable std::mutex m_;
  latency_histogram h_;
};

}  // namespace rcubatch::detail
