// counting_flavor: the test double itself — counts, deferred callbacks, the synchronize hook.
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/counting.hpp"

namespace counting_flavor_tests {
namespace {

struct other_tag;
using other = rcubatch::counting_flavor<other_tag>;

// Named after the flavor, so the ctest names stay counting_flavor.counting_flavor.*.
struct counting_flavor : rcubatch::test::counting_test<struct tag> {
  void SetUp() override { other::reset(); }
};

TEST_F(counting_flavor, counts_synchronize_and_barrier_per_tag) {
  fake::synchronize();
  fake::synchronize();
  fake::barrier();
  EXPECT_EQ(fake::synchronizes(), 2u);
  EXPECT_EQ(fake::barriers(), 1u);
  EXPECT_EQ(other::synchronizes(), 0u) << "another tag has its own counters";
}

/// An rcu_head embedded in its object, the way RCU callbacks find their context.
struct counted_callback {
  rcu_head head{};
  int ran = 0;
  static void run(rcu_head* h) {
    ++reinterpret_cast<counted_callback*>(h)->ran;  // head is the first member
  }
};

TEST_F(counting_flavor, runs_queued_callbacks_at_the_next_grace_period_not_before) {
  counted_callback cb;
  fake::call(&cb.head, &counted_callback::run);
  EXPECT_EQ(cb.ran, 0);
  fake::synchronize();
  EXPECT_EQ(cb.ran, 1);
  fake::barrier();
  EXPECT_EQ(cb.ran, 1) << "each callback runs once";
}

TEST_F(counting_flavor, calls_the_synchronize_hook_inside_each_grace_period) {
  int hooked = 0;
  fake::on_synchronize = [&hooked] { ++hooked; };  // the hook carries its context: no global
  fake::synchronize();
  fake::synchronize();
  EXPECT_EQ(hooked, 2);
  fake::reset();
  fake::synchronize();
  EXPECT_EQ(hooked, 2) << "reset clears the hook";
}

TEST_F(counting_flavor, the_hook_sees_the_count_of_the_grace_period_it_runs_in) {
  std::vector<unsigned long> seen;
  fake::on_synchronize = [&seen] { seen.push_back(fake::synchronizes()); };
  fake::synchronize();
  fake::barrier();  // no hook: barriers are not grace periods
  fake::synchronize();
  EXPECT_EQ(seen, (std::vector<unsigned long>{1, 2}));
}

int g_plain_calls = 0;
void plain_hook() noexcept { ++g_plain_calls; }

TEST_F(counting_flavor, a_plain_function_or_nullptr_still_assigns) {
  g_plain_calls = 0;
  fake::on_synchronize = &plain_hook;
  fake::synchronize();
  fake::on_synchronize = nullptr;
  fake::synchronize();
  EXPECT_EQ(g_plain_calls, 1);
  EXPECT_EQ(fake::synchronizes(), 2u);
}

}  // namespace
}  // namespace counting_flavor_tests
