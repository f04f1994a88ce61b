// counting_flavor: the test double itself — counts, deferred callbacks, the synchronize hook.
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

namespace rcubatch {
namespace {

struct tag;
using fake = counting_flavor<tag>;
struct other_tag;

int g_ran = 0;
int g_hooked = 0;

TEST(counting_flavor, counts_synchronize_and_barrier_per_tag) {
  fake::reset();
  counting_flavor<other_tag>::reset();
  fake::synchronize();
  fake::synchronize();
  fake::barrier();
  EXPECT_EQ(fake::synchronizes(), 2u);
  EXPECT_EQ(fake::barriers(), 1u);
  EXPECT_EQ(counting_flavor<other_tag>::synchronizes(), 0u) << "another tag has its own counters";
}

TEST(counting_flavor, runs_queued_callbacks_at_the_next_grace_period_not_before) {
  fake::reset();
  g_ran = 0;
  rcu_head head{};
  fake::call(&head, [](rcu_head*) { ++g_ran; });
  EXPECT_EQ(g_ran, 0);
  fake::synchronize();
  EXPECT_EQ(g_ran, 1);
  fake::barrier();
  EXPECT_EQ(g_ran, 1) << "each callback runs once";
}

TEST(counting_flavor, calls_the_synchronize_hook_inside_each_grace_period) {
  fake::reset();
  g_hooked = 0;
  fake::on_synchronize = []() noexcept { ++g_hooked; };
  fake::synchronize();
  fake::synchronize();
  EXPECT_EQ(g_hooked, 2);
  fake::reset();
  fake::synchronize();
  EXPECT_EQ(g_hooked, 2) << "reset clears the hook";
}

}  // namespace
}  // namespace rcubatch
