// flavor traits: every liburcu flavor works through the same interface.
#include <rcubatch/flavor.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

#include <atomic>

namespace rcubatch {
namespace {

template <class F>
class flavor_test : public ::testing::Test {};
using all_flavors = ::testing::Types<flavor::memb, flavor::qsbr, flavor::mb, flavor::bp>;
TYPED_TEST_SUITE(flavor_test, all_flavors);

static_assert(rcu_flavor<counting_flavor<>>, "the test double models the same concept");

TYPED_TEST(flavor_test, is_not_in_a_read_section_outside_a_guard_and_is_inside_one) {
  using F = TypeParam;
  thread_registration<F> reg;
  EXPECT_FALSE(in_read_section<F>());
  {
    read_guard<F> guard;
    EXPECT_TRUE(in_read_section<F>());
    {
      read_guard<F> nested;
      EXPECT_TRUE(in_read_section<F>());
    }
    EXPECT_TRUE(in_read_section<F>());
  }
  EXPECT_FALSE(in_read_section<F>());
}

std::atomic<int> g_callbacks{0};
struct counted_head {
  rcu_head head;
};

TYPED_TEST(flavor_test, a_call_runs_its_callback_by_the_next_barrier) {
  using F = TypeParam;
  thread_registration<F> reg;
  const int before = g_callbacks.load();
  auto* h = new counted_head{};
  F::call(&h->head, [](rcu_head* p) {
    g_callbacks.fetch_add(1);
    delete reinterpret_cast<counted_head*>(p);
  });
  {
    offline_scope<F> offline;  // qsbr: the worker's GP must not wait for us
    F::barrier();
  }
  EXPECT_EQ(g_callbacks.load(), before + 1);
}

TYPED_TEST(flavor_test, synchronize_returns_when_no_reader_is_inside_a_section) {
  using F = TypeParam;
  F::synchronize();
  F::synchronize();
  SUCCEED() << F::name;  // a hang here would be the failure
}

TEST(flavor, names_are_the_liburcu_flavor_names) {
  EXPECT_EQ(flavor::memb::name, "memb");
  EXPECT_EQ(flavor::qsbr::name, "qsbr");
  EXPECT_EQ(flavor::mb::name, "mb");
  EXPECT_EQ(flavor::bp::name, "bp");
  EXPECT_TRUE(flavor::qsbr::quiescent_state_based);
  EXPECT_FALSE(flavor::memb::quiescent_state_based);
}

}  // namespace
}  // namespace rcubatch
