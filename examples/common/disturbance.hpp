// examples/common/disturbance.hpp — which timed runs the shared machine disturbed, and the figures
// of the others: the one rule of the project's measuring programs (the teardown demo, netsim's seed
// table).
//
// On a shared 2-vCPU VM a 1 ms teardown is stretched 2–10× by two things that are not the code
// measured:
//   - the writer was preempted: its thread was switched out involuntarily during the timed work
//     (getrusage(RUSAGE_THREAD).ru_nivcsw rose), so the time includes another thread's slice;
//   - a grace period waited on a preempted reader: a reader switched out inside its read-side
//     section holds the grace period until it runs again (a scheduler slice, 1–10 ms here), where
//     an undisturbed GP with a busy reader takes 20–50 µs; likewise a writer that slept in liburcu's
//     GP wait (futex) and is woken onto a CPU another thread holds. Seen as the run's longest wait
//     for grace periods over a limit (default 1 ms): the teardown demo's unit is one batch (its
//     two GPs summed), the seed table's one GP (a run may wait for thousands).
// A run with either is disturbed. The figure shown for a set of runs is the median of the
// undisturbed ones (median.hpp), with their count and the range of all runs; if every run was
// disturbed (a long run always meets some preemption: 10,000 GPs one at a time), the median of
// all of them, and the summary says so.
//
// A run whose GP waits were not measured (NaN) is judged on the writer's switches alone.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "median.hpp"

namespace rcubatch_examples {

/// Involuntary context switches of the calling thread so far: a rise over a timed run means the
/// thread was preempted and the run's time includes someone else's slice. Throws: nothing.
inline long involuntary_switches() noexcept {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nivcsw;
}

/// The default limit on a run's summed grace-period waits above which a reader was preempted.
inline constexpr double kDefaultGpWaitLimitUs = 1000;

/// What a run's record says about the machine while it ran (see the file comment).
struct run_disturbance {
  long writer_preemptions = 0;  ///< the writer's involuntary switches over the timed work
  double gp_wait_seconds = 0;   ///< the run's longest wait for grace periods (see above); NaN: not measured
};

/// Whether the run was disturbed: the writer was preempted, or its GP waits exceeded the limit.
constexpr bool is_disturbed(const run_disturbance& d, double gp_wait_limit_us = kDefaultGpWaitLimitUs) noexcept {
  return d.writer_preemptions != 0 || d.gp_wait_seconds * 1e6 > gp_wait_limit_us;  // NaN > x is false
}

/// One timed run: its figure (seconds, or any value) and whether it was disturbed.
struct classified_run {
  double value = 0;         ///< the run's figure
  bool disturbed = false;   ///< is_disturbed of its record
};

/// A set of runs' figures (see the file comment).
struct run_summary {
  double median = std::numeric_limits<double>::quiet_NaN();  ///< of the undisturbed runs; of all if none was
  std::size_t undisturbed = 0;  ///< runs not disturbed
  std::size_t runs = 0;         ///< all runs
  double min = std::numeric_limits<double>::quiet_NaN();  ///< over all runs
  double max = std::numeric_limits<double>::quiet_NaN();  ///< over all runs
  /// Whether median is over every run because none was undisturbed.
  constexpr bool all_disturbed() const noexcept { return runs > 0 && undisturbed == 0; }
};

/// The values the figure is the median of: the undisturbed runs', or every run's if none was.
inline std::vector<double> undisturbed_values(std::span<const classified_run> runs) {
  std::vector<double> kept, all;
  for (const classified_run& r : runs) {
    all.push_back(r.value);
    if (!r.disturbed) kept.push_back(r.value);
  }
  return kept.empty() ? all : kept;
}

/// The summary of `runs`. Complexity: O(n log n). Of no runs: NaNs and zero counts.
inline run_summary summarize(std::span<const classified_run> runs) {
  run_summary s;
  s.runs = runs.size();
  if (runs.empty()) return s;
  s.undisturbed = static_cast<std::size_t>(
      std::count_if(runs.begin(), runs.end(), [](const classified_run& r) { return !r.disturbed; }));
  s.median = median_of(undisturbed_values(runs));
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end(), [](const classified_run& a, const classified_run& b) {
    return a.value < b.value;
  });
  s.min = lo->value;
  s.max = hi->value;
  return s;
}

}  // namespace rcubatch_examples
