// The rule that decides which timed runs the seed table (and the teardown demo) leave out of their
// figures (examples/common/disturbance.hpp), on synthetic run records: no timing, no threads.
#include "disturbance.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace {

using rcubatch_examples::classified_run;
using rcubatch_examples::is_disturbed;
using rcubatch_examples::run_disturbance;
using rcubatch_examples::summarize;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Disturbance, WriterPreemptedIsDisturbed) {
  EXPECT_FALSE(is_disturbed({0, 40e-6}));
  EXPECT_TRUE(is_disturbed({1, 40e-6}));
}

TEST(Disturbance, GracePeriodWaitOverTheLimitIsDisturbed) {
  EXPECT_FALSE(is_disturbed({0, 1000e-6}));  // at the limit: not over it
  EXPECT_TRUE(is_disturbed({0, 1001e-6}));
  EXPECT_TRUE(is_disturbed({0, 7.9e-3}));
  EXPECT_FALSE(is_disturbed({0, 7.9e-3}, 10'000));  // a caller's own limit
}

TEST(Disturbance, UnmeasuredGracePeriodWaitJudgesOnTheWriterAlone) {
  EXPECT_FALSE(is_disturbed({0, kNaN}));
  EXPECT_TRUE(is_disturbed({2, kNaN}));
}

// Five runs of the headline row as seen on 2026-12-03: three quiet ones, one whose GP waited 7.9 ms,
// one whose writer was preempted. The figure is the median of the quiet three; the range spans all.
TEST(Disturbance, SummaryIsTheMedianOfTheUndisturbedRuns) {
  const run_disturbance records[] = {{0, 38e-6}, {0, 7.866e-3}, {0, 41e-6}, {1, 35e-6}, {0, 29e-6}};
  const double seconds[] = {1.64e-3, 9.95e-3, 1.55e-3, 2.81e-3, 1.21e-3};
  std::vector<classified_run> runs;
  for (int i = 0; i < 5; ++i) runs.push_back({seconds[i], is_disturbed(records[i])});
  const auto s = summarize(runs);
  EXPECT_EQ(s.runs, 5u);
  EXPECT_EQ(s.undisturbed, 3u);
  EXPECT_FALSE(s.all_disturbed());
  EXPECT_DOUBLE_EQ(s.median, 1.55e-3);
  EXPECT_DOUBLE_EQ(s.min, 1.21e-3);
  EXPECT_DOUBLE_EQ(s.max, 9.95e-3);
}

TEST(Disturbance, EvenUndisturbedCountTakesTheMeanOfTheMiddleTwo) {
  const std::vector<classified_run> runs{{4.0, false}, {100.0, true}, {1.0, false}, {3.0, false}, {2.0, false}};
  const auto s = summarize(runs);
  EXPECT_EQ(s.undisturbed, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
}

TEST(Disturbance, EveryRunDisturbedFallsBackToAllRunsAndSaysSo) {
  const std::vector<classified_run> runs{{0.30, true}, {0.50, true}, {0.40, true}};
  const auto s = summarize(runs);
  EXPECT_EQ(s.undisturbed, 0u);
  EXPECT_TRUE(s.all_disturbed());
  EXPECT_DOUBLE_EQ(s.median, 0.40);
}

TEST(Disturbance, NoRunsGiveNaNAndZeroCounts) {
  const auto s = summarize(std::vector<classified_run>{});
  EXPECT_EQ(s.runs, 0u);
  EXPECT_EQ(s.undisturbed, 0u);
  EXPECT_FALSE(s.all_disturbed());
  EXPECT_TRUE(std::isnan(s.median));
}

}  // namespace
