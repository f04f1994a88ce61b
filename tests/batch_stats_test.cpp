// batch_stats: phase names and per-phase time slots.
#include <rcubatch/batch_stats.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rcubatch {
namespace {

TEST(batch_stats, every_phase_has_a_distinct_name) {
  std::set<std::string> names;
  for (std::size_t p = 0; p < kPhases; ++p) names.emplace(to_string(static_cast<phase>(p)));
  EXPECT_EQ(names.size(), kPhases);
  EXPECT_EQ(to_string(phase::validate), "validate");
  EXPECT_EQ(to_string(phase::grace_period_1), "grace_period_1");
  EXPECT_EQ(to_string(phase::destroy), "destroy");
}  // the order phases run in: rollback_many_test (runs_the_phases_in_the_documented_order)

TEST(batch_stats, starts_at_zero_and_accumulates_time_per_phase) {
  batch_stats s;
  EXPECT_EQ(s.grace_periods, 0u);
  EXPECT_FALSE(s.refused);
  s.time_of(phase::notify) += std::chrono::nanoseconds(5);
  s.time_of(phase::notify) += std::chrono::nanoseconds(7);
  EXPECT_EQ(s.time_of(phase::notify).count(), 12);
  EXPECT_EQ(s.time_of(phase::uninit).count(), 0);
}

}  // namespace
}  // namespace rcubatch
