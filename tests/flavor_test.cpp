// flavor traits: every liburcu flavor works through the same interface.
#include <rcubatch/flavor.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/flavors.hpp"

namespace rcubatch {
namespace {

template <class F>
class flavor_test : public ::testing::Test {};
TYPED_TEST_SUITE(flavor_test, test::real_flavors);

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

std::atomic<unsigned long> g_reports_in_callback{~0ul};
std::atomic<bool> g_callback_was_in_section{false};
void read_in_callback(rcu_head* h) {
  const unsigned long before = misuse_count(misuse_kind::reader_not_registered);
  {
    read_guard<flavor::memb> guard;  // liburcu registered its worker; rcubatch knows it
    g_callback_was_in_section = in_read_section<flavor::memb>();
  }
  g_reports_in_callback = misuse_count(misuse_kind::reader_not_registered) - before;
  delete reinterpret_cast<counted_head*>(h);
}

TEST(flavor, a_call_after_grace_period_callback_may_open_a_read_guard_undiagnosed) {
  thread_registration<flavor::memb> reg;
  call_after_grace_period<flavor::memb, &read_in_callback>(&(new counted_head{})->head);
  flavor::memb::barrier();
  EXPECT_EQ(g_reports_in_callback.load(), 0u) << "the call_rcu worker counted as unregistered";
  EXPECT_TRUE(g_callback_was_in_section.load());
}

// Under ThreadSanitizer (the tsan preset), the free in the callback must be ordered after a
// reader's access by the grace period alone: the reader signals "done" with a relaxed store,
// which gives TSan no edge, and stays registered until the free, so without call_after_grace_period's grace-period edge TSan reports
// the reader's load racing the delete. In other builds it checks only that the callback ran.
struct payload {
  rcu_head head{};
  int value = 7;
};
std::atomic<int> g_payload_frees{0};
void free_payload(rcu_head* h) {
  delete reinterpret_cast<payload*>(h);  // head is the first member
  g_payload_frees.fetch_add(1, std::memory_order_release);
}

TEST(flavor, a_call_after_grace_period_free_is_ordered_after_the_readers_sections) {
  thread_registration<flavor::memb> reg;
  auto* p = new payload;
  std::atomic<bool> read_done{false};
  std::atomic<int> seen{0};
  std::thread reader([&] {
    thread_registration<flavor::memb> r;
    {
      read_guard<flavor::memb> guard;
      seen.store(p->value, std::memory_order_relaxed);
    }
    read_done.store(true, std::memory_order_relaxed);
    // Stay registered until the free: unregistering takes liburcu's registry mutex, which TSan
    // sees, and would order this thread before the worker's next grace period.
    while (g_payload_frees.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  });
  while (!read_done.load(std::memory_order_relaxed)) std::this_thread::yield();
  call_after_grace_period<flavor::memb, &free_payload>(&p->head);
  flavor::memb::barrier();
  reader.join();
  EXPECT_EQ(seen.load(), 7);
  EXPECT_EQ(g_payload_frees.load(), 1);
}

TEST(flavor, only_bp_and_the_test_double_register_lazily) {
  static_assert(registers_lazily<flavor::bp> && registers_lazily<counting_flavor<>>);
  static_assert(!registers_lazily<flavor::memb> && !registers_lazily<flavor::qsbr> &&
                !registers_lazily<flavor::mb>);
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
