// rcubatch/detail/latency_histogram.hpp — the request → destroy latencies of an async_unregister.
//
// Fixed memory (512 counters) whatever the number of requests, so the reclaimer's bookkeeping
// stays bounded; quantiles are bucket upper bounds, within 12.5 % (8 sub-buckets per octave),
// capped by the exact maximum. Not thread-safe: async_unregister guards it with a mutex.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

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

}  // namespace rcubatch::detail
