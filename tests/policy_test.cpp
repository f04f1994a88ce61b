// policy: every hook optional; shapes detected; uninit's return decides GP #2.
#include <rcubatch/policy.hpp>
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include "support/counting.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

struct policy : counting_test<struct policy_tag> {};
using hooks_of = detail::policy_hooks<recording_policy, node>;

struct only_destroy {
  static constexpr bool publishes_nothing() { return true; }
  void destroy(node* n) noexcept { delete n; }
};
struct one_arg_hooks {
  static constexpr bool publishes_nothing() { return true; }
  int notified = 0, uninited = 0;
  void notify(node&) noexcept { ++notified; }
  void uninit(node&) noexcept { ++uninited; }
};

// Hooks are found by name whatever their shape; the call forms decide which overload runs.
static_assert(hooks_of::has_unlist && hooks_of::unlist_ok);
static_assert(hooks_of::has_notify && hooks_of::notify_b_ok);
static_assert(!hooks_of::has_validate);
static_assert(hooks_of::has_name);
static_assert(!detail::policy_hooks<only_destroy, node>::has_unlist);
static_assert(detail::policy_hooks<one_arg_hooks, node>::notify_ok);
// A hook template (taking the batch as a template parameter) is found by name too.
struct template_hooks {
  void unlist(node&) noexcept {}
  template <class B>
  void notify(node&, B&) noexcept {}
};
static_assert(detail::policy_hooks<template_hooks, node>::has_notify);
// A const policy whose hooks are const is accepted, and its hooks are called.
struct const_hooks {
  void unlist(node&) const noexcept {}
};
static_assert(detail::policy_hooks<const const_hooks, node>::check());

TEST_F(policy, hooks_may_take_the_batch_or_not) {
  one_arg_hooks p;
  unreg_queue<node> q;
  queue_registered(q, 5);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_EQ(p.notified, 5);
  EXPECT_EQ(p.uninited, 5);
  EXPECT_EQ(s.grace_periods, 2u) << "a void uninit counts as having unlinked something";
}

TEST_F(policy, an_uninit_returning_false_everywhere_skips_the_second_grace_period) {
  unreg_queue<node> q;
  queue_registered(q, 5);
  EXPECT_EQ(rollback_many(q, recording_policy{.uninit_unlinks = false}, domain).grace_periods, 1u);
}

TEST_F(policy, one_uninit_returning_true_is_enough_to_need_it) {
  struct picky {
    static constexpr bool publishes_nothing() { return true; }
    bool uninit(node& n) noexcept { return n.id == 3; }
  };
  unreg_queue<node> q;
  queue_registered(q, 5);
  EXPECT_EQ(rollback_many(q, picky{}, domain).grace_periods, 2u);
}

TEST_F(policy, objects_without_a_name_hook_are_reported_as_unnamed) {
  only_destroy p;
  detail::policy_hooks<only_destroy, node> hooks{p};
  node n(1);
  EXPECT_EQ(hooks.name(n), "<unnamed object>");
  recording_policy r;
  hooks_of named{r};
  EXPECT_EQ(named.name(n), "node1");
}

}  // namespace
}  // namespace rcubatch::test
