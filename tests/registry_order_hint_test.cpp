// registry: unregister_many over an array of pointers hands its batch the array as an order hint
// (rollback_many.hpp, order_hint), through which the push, unlist and drain passes prefetch the
// objects ahead instead of chasing the queue's links. The hint is advisory: these tests give it
// every length around the look-ahead distance (an ASan build reports any read past the array) and
// arrays that disagree with the queue's order (a repeated pointer moves its object to the tail),
// and check that every object is still destroyed exactly once, in one batch, with one GP.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "support/counting.hpp"

namespace rcubatch::test {
namespace {

struct entry : registrable<entry> {
  explicit entry(int i) : id(i) {}
  int id;
  lfht_hook<entry> by_id;
};
using entry_by_id = lfht_index<entry, &entry::by_id, key_member<&entry::id>, flavor::memb>;

/// Records every destroyed object's id, so a double destroy or a missed one shows.
struct entries : indexed<entry, entry_by_id> {
  std::multiset<int> destroyed;
  void destroy(entry* e) noexcept {
    destroyed.insert(e->id);
    delete e;
  }
};

using CF = counting_flavor<struct registry_order_hint_test_tag>;

struct registry_order_hint : counting_test<registry_order_hint_test_tag> {
  thread_registration<flavor::memb> reg_;  // the index is a memb rculfhash table

  /// n fresh entries, added to r, as the vector unregister_many takes.
  static std::vector<entry*> add_n(basic_registry<CF, std::mutex, entries>& r, int n) {
    std::vector<entry*> all;
    for (int i = 0; i < n; ++i) {
      all.push_back(new entry(i));
      EXPECT_TRUE(r.add(*all.back()));
    }
    return all;
  }
  static std::multiset<int> ids(int n) {
    std::multiset<int> s;
    for (int i = 0; i < n; ++i) s.insert(i);
    return s;
  }
};

TEST_F(registry_order_hint, unregister_many_over_arrays_of_every_length_around_the_look_ahead_destroys_each_once) {
  const int k = static_cast<int>(detail::kHintAhead);
  for (int n : {1, 2, k - 1, k, k + 1, 2 * k, 3 * k + 5}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    basic_registry<CF, std::mutex, entries> r;
    const std::vector<entry*> all = add_n(r, n);
    // Exactly n elements in their own heap block: a pass that read past the array would be
    // reported by ASan (the asan-ubsan preset runs this test).
    const batch_stats st = r.unregister_many(all);
    EXPECT_EQ(st.objects, static_cast<std::size_t>(n));
    EXPECT_EQ(st.grace_periods, 1u);
    EXPECT_EQ(r.policy<entries>().destroyed, ids(n));
    EXPECT_TRUE(r.index<entry_by_id>().empty());
  }
}

TEST_F(registry_order_hint, an_array_that_disagrees_with_the_queue_order_still_destroys_each_object_once) {
  constexpr int kN = 40;
  basic_registry<CF, std::mutex, entries> r;
  std::vector<entry*> all = add_n(r, kN);
  // Each of the first ten named twice: the second push moves the object to the queue's tail, so
  // the queue's order is not the array's, and the array is longer than the queue.
  for (int i = 0; i < 10; ++i) all.push_back(all[static_cast<std::size_t>(i)]);
  const batch_stats st = r.unregister_many(all);
  EXPECT_EQ(st.objects, static_cast<std::size_t>(kN));
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_EQ(r.policy<entries>().destroyed, ids(kN)) << "every object destroyed once, none twice";
  EXPECT_TRUE(r.index<entry_by_id>().empty());
}

}  // namespace
}  // namespace rcubatch::test
