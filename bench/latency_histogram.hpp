// bench/latency_histogram.hpp — fixed-size log-linear latency histograms for the many-writers bench.
//
// Why our own: the bench needs p50/p99 over up to ~10^6 samples per case from several threads,
// with no allocation on the measured path and a merge at the end. Google Benchmark has no
// histogram, and HdrHistogram_c is not packaged for this VM's Debian; this is the same idea in
// 512 counters: values 0..7 ns have one bucket each, above that each power of two is split into 8
// equal buckets, so a reported quantile is within 12.5 % of the true value (we report the
// bucket's midpoint). Memory is fixed (4 KiB), whatever the sample count.
//
//   latency_histogram h;            // one per thread, plain counters
//   h.add(ns);
//   shared.merge(h);                // under the caller's lock, once at the end
//   h.quantile(0.99)                // nanoseconds
//
//   atomic_latency_histogram a;     // shared by every thread that may record (destroy hooks run on
//   a.add(ns);                      // writers, the reclaimer or liburcu's call_rcu worker)
//   a.snapshot().quantile(0.5)
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace rcubatch_bench {

namespace detail {
inline constexpr int kSubBits = 3;
inline constexpr std::size_t kSub = std::size_t{1} << kSubBits;
inline constexpr std::size_t kBuckets = 512;  // 8 + 61 * 8 = 496 used for 64-bit values

/// The bucket of a value: exact below 8, else (exponent, 3 mantissa bits).
constexpr std::size_t bucket_of(std::uint64_t v) noexcept {
  if (v < kSub) return static_cast<std::size_t>(v);
  const int e = std::bit_width(v) - 1;  // >= 3
  const std::uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
  return kSub + static_cast<std::size_t>(e - kSubBits) * kSub + static_cast<std::size_t>(sub);
}
/// The midpoint of a bucket's value range.
constexpr double bucket_mid(std::size_t b) noexcept {
  if (b < kSub) return static_cast<double>(b);
  const std::size_t e = (b - kSub) / kSub + kSubBits;
  const std::size_t sub = (b - kSub) % kSub;
  const double width = static_cast<double>(std::uint64_t{1} << (e - kSubBits));
  const double lo = static_cast<double>(std::uint64_t{1} << e) + static_cast<double>(sub) * width;
  return lo + width / 2;
}
static_assert(bucket_of(7) == 7 && bucket_of(8) == 8 && bucket_of(15) == 15 && bucket_of(16) == 16);
static_assert(bucket_of(~std::uint64_t{0}) < kBuckets);
}  // namespace detail

/// One thread's histogram. Not thread-safe. add is O(1); quantile and merge O(buckets).
class latency_histogram {
 public:
  void add(std::uint64_t ns) noexcept { ++counts_[detail::bucket_of(ns)]; }
  void add_bucket(std::size_t b, std::uint64_t n) noexcept { counts_[b] += n; }
  void merge(const latency_histogram& o) noexcept {
    for (std::size_t i = 0; i < detail::kBuckets; ++i) counts_[i] += o.counts_[i];
  }
  std::uint64_t count() const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t c : counts_) n += c;
    return n;
  }
  /// The q-quantile (0 < q <= 1) in nanoseconds, as its bucket's midpoint; 0 when empty.
  double quantile(double q) const noexcept {
    const std::uint64_t n = count();
    if (n == 0) return 0;
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n - 1)) + 1;  // 1-based
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < detail::kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return detail::bucket_mid(i);
    }
    return detail::bucket_mid(detail::kBuckets - 1);
  }

 private:
  std::array<std::uint64_t, detail::kBuckets> counts_{};
};

/// The same counters as relaxed atomics, for samples recorded from threads the bench does not own.
class atomic_latency_histogram {
 public:
  void add(std::uint64_t ns) noexcept { counts_[detail::bucket_of(ns)].fetch_add(1, std::memory_order_relaxed); }
  /// Requires: no concurrent add if the result must be exact (call after the case's drain/barrier).
  latency_histogram snapshot() const noexcept {
    latency_histogram h;
    for (std::size_t i = 0; i < detail::kBuckets; ++i) h.add_bucket(i, counts_[i].load(std::memory_order_relaxed));
    return h;
  }

 private:
  std::array<std::atomic<std::uint64_t>, detail::kBuckets> counts_{};
};

}  // namespace rcubatch_bench
