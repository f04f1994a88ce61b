// policy: every hook optional; shapes detected; uninit's return decides GP #2.
#include <rcubatch/policy.hpp>
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace rcubatch::test {
namespace {

struct tag;
using fake = counting_flavor<tag>;
using hooks_of = detail::policy_hooks<recording_policy, node, fake>;

struct only_destroy {
  void destroy(node* n) noexcept { delete n; }
};
struct one_arg_hooks {
  int notified = 0, uninited = 0;
  void notify(node&) noexcept { ++notified; }
  void uninit(node&) noexcept { ++uninited; }
};

static_assert(detail::has_unlist<recording_policy, node>);
static_assert(detail::has_notify_b<recording_policy, node, batch<node, fake>>);
static_assert(!detail::has_validate<recording_policy, node>);
static_assert(detail::has_name<recording_policy, node>);
static_assert(!detail::has_unlist<only_destroy, node>);
static_assert(detail::has_notify<one_arg_hooks, node>);

TEST(policy, hooks_may_take_the_batch_or_not) {
  fake::reset();
  grace_domain<fake> domain;
  one_arg_hooks p;
  unreg_queue<node> q;
  for (node* n : make_registered(5)) q.push(*n);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_EQ(p.notified, 5);
  EXPECT_EQ(p.uninited, 5);
  EXPECT_EQ(s.grace_periods, 2u) << "a void uninit counts as having unlinked something";
}

TEST(policy, an_uninit_returning_false_everywhere_skips_the_second_grace_period) {
  fake::reset();
  grace_domain<fake> domain;
  unreg_queue<node> q;
  for (node* n : make_registered(5)) q.push(*n);
  EXPECT_EQ(rollback_many(q, recording_policy{nullptr, false}, domain).grace_periods, 1u);
}

TEST(policy, one_uninit_returning_true_is_enough_to_need_it) {
  fake::reset();
  grace_domain<fake> domain;
  struct picky {
    bool uninit(node& n) noexcept { return n.id == 3; }
  };
  unreg_queue<node> q;
  for (node* n : make_registered(5)) q.push(*n);
  EXPECT_EQ(rollback_many(q, picky{}, domain).grace_periods, 2u);
}

TEST(policy, objects_without_a_name_hook_are_reported_as_unnamed) {
  only_destroy p;
  detail::policy_hooks<only_destroy, node, fake> hooks{p};
  node n(1);
  EXPECT_EQ(hooks.name(n), "<unnamed object>");
  recording_policy r;
  hooks_of named{r};
  EXPECT_EQ(named.name(n), "node1");
}

}  // namespace
}  // namespace rcubatch::test
