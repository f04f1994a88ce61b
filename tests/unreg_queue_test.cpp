// unreg_queue: O(1), idempotent, rejects what is not registered.
#include <rcubatch/unreg_queue.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
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

// ---- push_range: the bulk push (issue 36): in order, all or nothing.

/// Whether no object of `objs` sits in a queue (no owner, hook unlinked).
bool none_queued(const std::vector<node*>& objs) {
  for (const node* p : objs)
    if (detail::registrable_access::owner(*p) != nullptr || detail::registrable_access::is_linked(*p)) return false;
  return true;
}

TEST(unreg_queue, push_range_queues_a_range_in_order_after_what_is_already_queued) {
  queue_only_nodes n(5);
  unreg_queue<node> q;
  q.push(n[4]);
  std::vector<node*> ptrs{&n[2], &n[0], &n[1]};  // pointers, in an order that is not id order
  EXPECT_TRUE(q.push_range(ptrs.begin(), ptrs.end()));
  std::vector<std::reference_wrapper<node>> refs{n[3]};  // objects, through a projection
  EXPECT_TRUE(q.push_range(refs, [](std::reference_wrapper<node> r) -> node& { return r.get(); }));
  EXPECT_EQ(ids(q), (std::vector<int>{5, 3, 1, 2, 4}));
  EXPECT_EQ(q.size(), 5u);
  q.push(n[0]);  // the queue stays whole: a later push finds the tail and the count right
  EXPECT_EQ(ids(q), (std::vector<int>{5, 3, 2, 4, 1}));
}

TEST(unreg_queue, push_range_refuses_a_range_with_an_unregistered_object_in_the_middle_and_links_none) {
  queue_only_nodes n(4);
  node stray(99);  // never registered
  unreg_queue<node> q;
  q.push(n[0]);
  std::vector<node*> range{&n[1], &n[2], &stray, &n[3]};
  EXPECT_THROW(q.push_range(range), misuse_error);
  EXPECT_EQ(ids(q), (std::vector<int>{1}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_TRUE(none_queued({&n[1], &n[2], &stray, &n[3]}));
  scoped_misuse_policy p(misuse_policy::report, quiet_reporter);
  const unsigned long before = misuse_count(misuse_kind::not_registered);
  EXPECT_FALSE(q.push_range(range));
  EXPECT_EQ(misuse_count(misuse_kind::not_registered), before + 1);
  EXPECT_EQ(ids(q), (std::vector<int>{1}));
  EXPECT_TRUE(none_queued({&n[1], &n[2], &stray, &n[3]}));
  q.push(n[1]);  // and the queue's tail and count are still right
  EXPECT_EQ(ids(q), (std::vector<int>{1, 2}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(unreg_queue, push_range_refuses_an_object_named_twice_or_already_queued_and_links_none) {
  queue_only_nodes n(3);
  unreg_queue<node> q, other;
  scoped_misuse_policy p(misuse_policy::report, quiet_reporter);
  const unsigned long before = misuse_count(misuse_kind::queued_in_other_queue);
  std::vector<node*> twice{&n[0], &n[1], &n[0]};
  EXPECT_FALSE(q.push_range(twice));
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(none_queued({&n[0], &n[1]}));
  other.push(n[2]);
  std::vector<node*> elsewhere{&n[0], &n[2]};
  EXPECT_FALSE(q.push_range(elsewhere));
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(none_queued({&n[0]}));
  EXPECT_TRUE(other.contains(n[2])) << "left in its queue, unlike push under report";
  EXPECT_EQ(misuse_count(misuse_kind::queued_in_other_queue), before + 2);
}

TEST(unreg_queue, push_range_of_a_null_pointer_throws_invalid_argument_and_links_none) {
  queue_only_nodes n(2);
  unreg_queue<node> q;
  std::vector<node*> range{&n[0], nullptr, &n[1]};
  EXPECT_THROW(q.push_range(range), std::invalid_argument);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(none_queued({&n[0], &n[1]}));
}

TEST(unreg_queue, push_range_of_an_empty_range_changes_nothing) {
  queue_only_nodes n(1);
  unreg_queue<node> q;
  q.push(n[0]);
  std::vector<node*> empty;
  EXPECT_TRUE(q.push_range(empty));
  EXPECT_EQ(ids(q), (std::vector<int>{1}));
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace
}  // namespace rcubatch::test
