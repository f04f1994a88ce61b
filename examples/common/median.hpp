// examples/common/median.hpp — the one median the project's measuring programs use (the teardown
// demo, netsim's seed table; the bench's medians are Google Benchmark's median aggregate and
// bench/plot.py's statistics.median, which are defined the same way).
//
// Definition: the median of n values is the middle one in sorted order for odd n and the mean of
// the two middle ones for even n; of no values, NaN. Which quantity it is taken of is each
// program's to say, and they differ on purpose:
//   - teardown_demo: the ratio to the floor is the median of per-round ratios (each round's two
//     ways ran next to each other); ns/object and ping-pong figures are medians of their samples;
//   - seed table: each figure of a mode (time, writer CPU, growth) is the median over its runs,
//     each on its own, and the ratios in the table are ratios of those medians;
//   - bench goal case: the median of per-pair ratios (one pair per repetition); the bench's other
//     ratios are ratios of medians over repetitions (bench/plot.py).
//
// It lives here, next to the examples, because they are built in every preset (dev, asan-ubsan,
// tsan, bench) and the bench itself needs none of its own; the library has no use for it, so it is
// not a public header.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

namespace rcubatch_examples {

/// The median of `values` (definition above). Complexity: O(n log n). Takes a copy: sorts it.
constexpr double median_of(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t k = values.size();
  return k % 2 == 1 ? values[k / 2] : (values[k / 2 - 1] + values[k / 2]) / 2;
}

static_assert(median_of({3.0, 1.0, 2.0}) == 2.0, "odd count: the middle value");
static_assert(median_of({4.0, 1.0, 3.0, 2.0}) == 2.5, "even count: the mean of the two middle values");

}  // namespace rcubatch_examples
