// unreg_queue: O(1), idempotent, rejects what is not registered.
#include <rcubatch/unreg_queue.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace rcubatch {
namespace {

struct item : registrable<item> {
  explicit item(int i) : id(i) {}
  ~item() { detail::registrable_access::set_state(*this, reg_state::released); }  // test-only
  int id;
};

std::vector<int> ids(const unreg_queue<item>& q) {
  std::vector<int> out;
  for (const item& i : q) out.push_back(i.id);
  return out;
}

TEST(unreg_queue, queues_registered_objects_in_order) {
  item a(1), b(2), c(3);
  for (item* i : {&a, &b, &c}) i->mark_registered();
  unreg_queue<item> q;
  q.push(a);
  q.push(b);
  q.push(c);
  EXPECT_EQ(ids(q), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(q.contains(b));
}

TEST(unreg_queue, queueing_twice_moves_to_the_tail_and_never_links_twice) {
  item a(1), b(2);
  a.mark_registered();
  b.mark_registered();
  unreg_queue<item> q;
  q.push(a);
  q.push(b);
  q.push(a);
  EXPECT_EQ(ids(q), (std::vector<int>{2, 1}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(unreg_queue, rejects_an_object_that_was_never_registered) {
  item a(1);
  unreg_queue<item> q;
  EXPECT_THROW(q.push(a), misuse_error);
  EXPECT_TRUE(q.empty());
  scoped_misuse_policy p(misuse_policy::report, [](misuse_kind, std::string_view) noexcept {});
  const unsigned long before = misuse_count(misuse_kind::not_registered);
  EXPECT_FALSE(q.push(a));
  EXPECT_EQ(misuse_count(misuse_kind::not_registered), before + 1);
  EXPECT_TRUE(q.empty());
}

TEST(unreg_queue, an_object_in_another_queue_is_diagnosed_and_left_there) {
  item a(1);
  a.mark_registered();
  unreg_queue<item> first, second;
  first.push(a);
  EXPECT_THROW(second.push(a), misuse_error);
  EXPECT_TRUE(first.contains(a));
  EXPECT_TRUE(second.empty());
}

TEST(unreg_queue, under_report_an_object_in_another_queue_moves_like_list_move) {
  item a(1);
  a.mark_registered();
  unreg_queue<item> first, second;
  first.push(a);
  scoped_misuse_policy p(misuse_policy::report, [](misuse_kind, std::string_view) noexcept {});
  const unsigned long before = misuse_count(misuse_kind::queued_in_other_queue);
  EXPECT_TRUE(second.push(a));
  EXPECT_EQ(misuse_count(misuse_kind::queued_in_other_queue), before + 1);
  EXPECT_TRUE(first.empty());
  EXPECT_TRUE(second.contains(a));
}

TEST(unreg_queue, remove_and_clear_unqueue_without_unregistering) {
  item a(1), b(2);
  a.mark_registered();
  b.mark_registered();
  unreg_queue<item> q;
  q.push(a);
  q.push(b);
  q.remove(a);
  EXPECT_FALSE(q.contains(a));
  EXPECT_FALSE(detail::registrable_access::is_linked(a));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(detail::registrable_access::is_linked(b));
  EXPECT_EQ(b.state(), reg_state::registered);
}

TEST(unreg_queue, its_destructor_unqueues_what_it_still_holds) {
  item a(1);
  a.mark_registered();
  {
    unreg_queue<item> q;
    q.push(a);
  }
  EXPECT_FALSE(detail::registrable_access::is_linked(a));
  unreg_queue<item> again;
  EXPECT_TRUE(again.push(a)) << "free to join another queue";
}

}  // namespace
}  // namespace rcubatch
