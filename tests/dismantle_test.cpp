// synchronize_unless_dismantling: the macvlan hash_del(!dismantle) pattern.
#include <rcubatch/dismantle.hpp>
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include "support/counting.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

struct dismantle : counting_test<struct dismantle_tag> {};

TEST_F(dismantle, a_live_object_still_waits_for_its_own_grace_period) {
  auto nodes = make_registered(1);
  EXPECT_TRUE(synchronize_unless_dismantling(*nodes[0], domain));
  EXPECT_EQ(fake::synchronizes(), 1u);
  EXPECT_EQ(domain.stats().dismantle_elided, 0u);
  unregister_one(*nodes[0], recording_policy{}, domain);
}

TEST_F(dismantle, every_sub_component_wait_is_elided_and_counted_during_a_batch) {
  struct macvlan_like_policy {
    static constexpr bool publishes_nothing() { return true; }
    grace_domain<fake>* d;
    bool uninit(node& n, batch& b) noexcept {
      // unlink the MAC from the port's RCU hash here, then:
      b.note_unlinked();
      synchronize_unless_dismantling(n, *d);  // no wait: the batch's GP #2 covers it
      return true;
    }
  };
  constexpr int kN = 500;
  unreg_queue<node> q;
  queue_registered(q, kN);
  const batch_stats s = rollback_many(q, macvlan_like_policy{&domain}, domain);
  EXPECT_EQ(s.dismantle_elided, static_cast<unsigned>(kN));
  EXPECT_EQ(domain.stats().dismantle_elided, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_EQ(fake::synchronizes(), 2u);
}

TEST_F(dismantle, an_elision_after_the_first_grace_period_makes_the_batch_run_the_second) {
  // The sub-component unlinks in notify (after GP #1) and skips its own GP because the object is
  // dismantling; nothing else in the batch needs GP #2. Before the fix the batch never heard of the
  // skipped GP: one GP in all, and the object was destroyed with no GP after that unlink.
  struct unlink_in_notify_policy {
    grace_domain<fake>* d;
    void unlist(node&) noexcept {}
    void notify(node& n) noexcept { synchronize_unless_dismantling(n, *d); }  // no note_unlinked
  };
  unreg_queue<node> q;
  queue_registered(q, 3);
  const batch_stats s = rollback_many(q, unlink_in_notify_policy{&domain}, domain);
  EXPECT_EQ(s.dismantle_elided, 3u);
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_EQ(fake::synchronizes(), 2u);
}

TEST_F(dismantle, an_elision_before_the_first_grace_period_needs_no_second) {
  struct unlink_in_unlist_policy {
    grace_domain<fake>* d;
    void unlist(node& n) noexcept { synchronize_unless_dismantling(n, *d); }  // GP #1 covers it
  };
  unreg_queue<node> q;
  queue_registered(q, 3);
  const batch_stats s = rollback_many(q, unlink_in_unlist_policy{&domain}, domain);
  EXPECT_EQ(s.dismantle_elided, 3u);
  EXPECT_EQ(s.grace_periods, 1u);
}

}  // namespace
}  // namespace rcubatch::test
