// batch_stats: per-phase time slots and entry counts.
#include <rcubatch/batch_stats.hpp>

#include <gtest/gtest.h>

namespace rcubatch {
namespace {

// Phase names, their order and what a batch enters: phase_test.

TEST(batch_stats, starts_at_zero_and_accumulates_time_per_phase) {
  batch_stats s;
  EXPECT_EQ(s.grace_periods, 0u);
  EXPECT_FALSE(s.refused);
  s.time_of(phase::notify) += std::chrono::nanoseconds(5);
  s.time_of(phase::notify) += std::chrono::nanoseconds(7);
  EXPECT_EQ(s.time_of(phase::notify).count(), 12);
  EXPECT_EQ(s.time_of(phase::uninit).count(), 0);
  for (std::size_t p = 0; p < kPhases; ++p) EXPECT_EQ(s.entries_of(static_cast<phase>(p)), 0u);
}

}  // namespace
}  // namespace rcubatch
