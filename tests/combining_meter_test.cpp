// The gate's gather_meter (combining.hpp; combining_options::gather_released, issue 35): a
// leader gathers the callers the last shared batch released only while batches so gathered
// cost less per call than the others, measured as they end; one choice in kProbeEvery × (how
// many times dearer) tries the way not preferred. Times are given, not read from a clock: the
// meter's decisions are pure.
#include <rcubatch/combining.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;
using clock_type = gather_meter::clock;

/// Batches ending `gap` apart, each serving `calls` calls, gathered or not, from `t` on; returns
/// the last end.
clock_type::time_point run_batches(gather_meter& m, clock_type::time_point t, int batches, std::chrono::nanoseconds gap,
                                   std::size_t calls, bool gathered) {
  for (int i = 0; i < batches; ++i) {
    t += gap;
    m.ended(calls, gathered, t);
  }
  return t;
}

TEST(gather_meter, prefers_gathering_until_both_ways_are_measured) {
  gather_meter m;
  EXPECT_TRUE(m.prefers_gathering()) << "nothing measured";
  const auto t = run_batches(m, clock_type::time_point{} + 1s, 9, 40us, 1, false);
  EXPECT_GT(m.alone_ns_per_call(), 0.0);
  EXPECT_EQ(m.gathered_ns_per_call(), 0.0);
  EXPECT_TRUE(m.prefers_gathering()) << "gathering not measured yet: it is tried";
  (void)t;
}

TEST(gather_meter, gathered_batches_that_cost_more_per_call_than_batches_alone_are_no_longer_preferred) {
  // 4 calls per gathered batch, 400 µs apart: 100 µs per call, against 40 µs alone (a busy
  // reader on the writers' CPU: every gathering sleep hands it the CPU).
  gather_meter m;
  auto t = run_batches(m, clock_type::time_point{} + 1s, 9, 40us, 1, false);
  t = run_batches(m, t, 8, 400us, 4, true);
  EXPECT_NEAR(m.alone_ns_per_call(), 40'000.0, 1.0);
  EXPECT_GT(m.gathered_ns_per_call(), m.alone_ns_per_call());
  EXPECT_FALSE(m.prefers_gathering());
  EXPECT_FALSE(m.gather_next()) << "the first choice is not a probe";
}

TEST(gather_meter, gathered_batches_that_cost_less_per_call_are_preferred) {
  // 7 calls per gathered batch, 170 µs apart: ~24 µs per call, against 40 µs alone.
  gather_meter m;
  auto t = run_batches(m, clock_type::time_point{} + 1s, 9, 40us, 1, false);
  t = run_batches(m, t, 8, 170us, 7, true);
  EXPECT_LT(m.gathered_ns_per_call(), m.alone_ns_per_call());
  EXPECT_TRUE(m.prefers_gathering());
  EXPECT_TRUE(m.gather_next());
}

TEST(gather_meter, the_way_not_preferred_is_probed_once_every_sixteen_choices_times_how_much_dearer_it_is) {
  // Gathered: 4 calls per batch, 320 µs apart = 80 µs per call, twice the 40 µs alone: a probe
  // (gathering, once) every 2 × 16 = 32 choices.
  gather_meter m;
  auto t = run_batches(m, clock_type::time_point{} + 1s, 9, 40us, 1, false);
  t = run_batches(m, t, 8, 320us, 4, true);
  ASSERT_EQ(m.probe_spacing(), 2 * gather_meter::kProbeEvery);
  unsigned gathered = 0;
  for (unsigned i = 1; i <= 4 * gather_meter::kProbeEvery; ++i) {
    const bool g = m.gather_next();
    EXPECT_EQ(g, i % (2 * gather_meter::kProbeEvery) == 0) << "choice " << i;
    gathered += g ? 1u : 0u;
  }
  EXPECT_EQ(gathered, 2u);
}

}  // namespace
}  // namespace rcubatch::test
