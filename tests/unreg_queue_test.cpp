// unreg_queue: O(1), idempotent, rejects what is not registered.
#include <rcubatch/unreg_queue.hpp>

#include <gtest/gtest.h>

#include <vector>

#include "support/misuse_capture.hpp"
#include "support/objects.hpp"

namespace rcubatch::test {
namespace {

std::vector<int> ids(const unreg_queue<node>& q) {
  std::vector<int> out;
  for (const node& n : q) out.push_back(n.id);
  return out;
}

TEST(unreg_queue, queues_registered_objects_in_order) {
  queue_only_nodes n(3);  // ids 1, 2, 3
  unreg_queue<node> q;
  n.push_all(q);
  EXPECT_EQ(ids(q), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(q.contains(n[1]));
}

TEST(unreg_queue, queueing_twice_moves_to_the_tail_and_never_links_twice) {
  queue_only_nodes n(2);
  unreg_queue<node> q;
  n.push_all(q);
  q.push(n[0]);
  EXPECT_EQ(ids(q), (std::vector<int>{2, 1}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(unreg_queue, rejects_an_object_that_was_never_registered) {
  node a(1);
  unreg_queue<node> q;
  EXPECT_THROW(q.push(a), misuse_error);
  EXPECT_TRUE(q.empty());
  scoped_misuse_policy p(misuse_policy::report, quiet_reporter);
  const unsigned long before = misuse_count(misuse_kind::not_registered);
  EXPECT_FALSE(q.push(a));
  EXPECT_EQ(misuse_count(misuse_kind::not_registered), before + 1);
  EXPECT_TRUE(q.empty());
}

/// A registered node sitting in `first`, which a test pushes into `second`.
struct pushed_from_another_queue : ::testing::Test {
  queue_only_nodes n{1};
  node& a = n[0];
  unreg_queue<node> first, second;
  pushed_from_another_queue() { first.push(a); }
};

TEST_F(pushed_from_another_queue, is_diagnosed_and_left_there) {
  EXPECT_THROW(second.push(a), misuse_error);
  EXPECT_TRUE(first.contains(a));
  EXPECT_TRUE(second.empty());
}

TEST_F(pushed_from_another_queue, under_report_moves_like_list_move) {
  scoped_misuse_policy p(misuse_policy::report, quiet_reporter);
  const unsigned long before = misuse_count(misuse_kind::queued_in_other_queue);
  EXPECT_TRUE(second.push(a));
  EXPECT_EQ(misuse_count(misuse_kind::queued_in_other_queue), before + 1);
  EXPECT_TRUE(first.empty());
  EXPECT_TRUE(second.contains(a));
}

TEST(unreg_queue, remove_and_clear_unqueue_without_unregistering) {
  queue_only_nodes n(2);
  node &a = n[0], &b = n[1];
  unreg_queue<node> q;
  n.push_all(q);
  q.remove(a);
  EXPECT_FALSE(q.contains(a));
  EXPECT_FALSE(detail::registrable_access::is_linked(a));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(detail::registrable_access::is_linked(b));
  EXPECT_EQ(b.state(), reg_state::registered);
}

TEST(unreg_queue, its_destructor_unqueues_what_it_still_holds) {
  queue_only_nodes n(1);
  node& a = n[0];
  {
    unreg_queue<node> q;
    q.push(a);
  }
  EXPECT_FALSE(detail::registrable_access::is_linked(a));
  unreg_queue<node> again;
  EXPECT_TRUE(again.push(a)) << "free to join another queue";
}

}  // namespace
}  // namespace rcubatch::test
