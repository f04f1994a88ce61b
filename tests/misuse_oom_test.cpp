// Out of memory while diagnosing misuse in noexcept code must still report and refuse, never end in
// std::terminate (issue 12 defect 4: every noexcept diagnostic built a std::string).
//
// This binary replaces the global operator new (tests/support/replaced_operator_new.hpp; its own
// executable, so the other tests keep the sanitizers' allocator checks): while no_memory is alive
// every allocation throws std::bad_alloc.
#include <rcubatch/rollback_many.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string_view>

#include "support/objects.hpp"
#include "support/replaced_operator_new.hpp"  // g_fail_every_allocation

namespace rcubatch {
namespace {

using test::node;

/// Counts reports without allocating.
std::atomic<int> g_reports{0};
void count_report(misuse_kind, std::string_view) noexcept { g_reports.fetch_add(1); }

struct no_memory {
  no_memory() { g_fail_every_allocation = true; }
  ~no_memory() { g_fail_every_allocation = false; }
};

TEST(misuse_out_of_memory, an_underflowing_put_is_reported_with_no_memory_left) {
  scoped_misuse_policy p(misuse_policy::report, &count_report);
  node n;  // a ref_count exists only inside a registrable object
  ref_count& r = n.refs();
  g_reports = 0;
  {
    no_memory oom;
    r.put();  // misuse: diagnosed from noexcept code
    r.hold();
    r.put();
  }
  EXPECT_EQ(g_reports.load(), 1);
  EXPECT_EQ(r.count(), 0u);
}

TEST(misuse_out_of_memory, a_late_queue_and_a_double_retire_are_reported_with_no_memory_left) {
  scoped_misuse_policy p(misuse_policy::report, &count_report);
  using F = counting_flavor<struct oom_tag>;
  grace_domain<F> domain;
  auto* a = new node;
  auto* late = new node;
  a->mark_registered();
  late->mark_registered();
  struct sub_object : retire_node {
    sub_object() {
      dispose = [](retire_node*) noexcept {};
    }
  } sub;
  struct policy {
    node* late;
    retire_node* sub;
    void unlist(node&) noexcept {}
    void uninit(node&, batch& b) noexcept {
      no_memory oom;
      b.queue(*late);  // queued_too_late, from noexcept code
      b.retire(*sub);
      b.retire(*sub);  // retired_twice
    }
  } pol{late, &sub};
  unreg_queue<node> q;
  q.push(*a);
  g_reports = 0;
  rollback_many(q, pol, domain);
  EXPECT_EQ(g_reports.load(), 2);
  EXPECT_EQ(late->state(), reg_state::registered);
  unregister_one(*late, pol, domain);  // cleanup (its uninit reports twice more)
}

}  // namespace
}  // namespace rcubatch
