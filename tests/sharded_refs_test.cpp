// The sharded reference count: holds and puts on shards while registered, the run-down to one
// atomic when unregistration begins, and the atomic's rules after it.
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using fake = counting_flavor<struct sharded_refs_tag>;

struct route : sharded_registrable<route> {};

struct plain : registrable<plain> {};
static_assert(sizeof(registrable<plain>) == 32, "registrable<T> grew: see the layout in registrable.hpp");
static_assert(sizeof(plain) == 32, "a type that does not choose sharding carries no shards");

/// Keeps destroyed objects' memory (state released) so the test can try a hold afterwards.
struct keep_policy {
  static constexpr bool publishes_nothing() { return true; }
  int destroyed = 0;
  bool switched_at_notify = false;
  std::uint64_t count_at_notify = 0;
  std::latch* notified = nullptr;
  void notify(route& r, batch&) noexcept {
    switched_at_notify = r.refs().switched();
    count_at_notify = static_cast<detail::registrable_base&>(r).refs().count();  // the single atomic
    if (notified != nullptr) notified->count_down();
  }
  void destroy(route*) noexcept { ++destroyed; }
};

TEST(sharded_refs, holds_and_puts_from_several_threads_sum_whatever_shard_each_lands_on) {
  route r;
  constexpr int kThreads = 4, kHolds = 1000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < kHolds; ++i) r.refs().hold();
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(r.refs().count(), std::uint64_t{kThreads * kHolds});
  EXPECT_EQ(static_cast<detail::registrable_base&>(r).refs().count(), 0u) << "nothing on the single atomic yet";
  // Put them all from this one thread: its shard goes negative, the sum is what counts.
  for (int i = 0; i < kThreads * kHolds; ++i) r.refs().put();
  EXPECT_EQ(r.refs().count(), 0u);
  EXPECT_FALSE(r.refs().switched());
}

TEST(sharded_refs, unregistration_switches_the_count_to_the_single_atomic_with_the_holders_sum) {
  fake::reset();
  grace_domain<fake> domain;
  route r;
  r.mark_registered();
  r.refs().hold();
  std::thread([&] { r.refs().hold(); }).join();  // another thread, maybe another shard
  std::latch notified(1), drained(1);
  keep_policy policy;
  policy.notified = &notified;
  unreg_queue<route> q;
  q.push(r);
  batch_stats stats;
  std::thread writer([&] {
    stats = rollback_many(q, policy, domain);
    drained.count_down();
  });
  {
    watchdog dog(std::chrono::seconds(30), "a sharded object's drain");
    notified.wait();  // unregistration has begun: the batch is past its unlist pass
    EXPECT_TRUE(r.refs().switched());
    r.refs().put();
    r.refs().put();  // the last put, on the atomic: wakes the drain
    drained.wait();
  }
  writer.join();
  EXPECT_TRUE(policy.switched_at_notify) << "switched when unregistration began (the unlist pass)";
  EXPECT_EQ(policy.count_at_notify, 2u) << "the shards' sum moved to the atomic";
  EXPECT_EQ(policy.destroyed, 1);
  EXPECT_EQ(stats.objects, 1u);
}

TEST(sharded_refs, after_the_run_down_a_hold_on_the_drained_count_is_refused) {
  fake::reset();
  grace_domain<fake> domain;
  route r;
  r.mark_registered();
  r.refs().hold();
  r.refs().put();
  keep_policy policy;
  unreg_queue<route> q;
  q.push(r);
  rollback_many(q, policy, domain);
  ASSERT_EQ(policy.destroyed, 1);
  misuse_log log;
  scoped_misuse_policy p(misuse_policy::report, log);
  r.refs().hold();  // the shards are closed: the atomic refuses it, as it does for every type
  EXPECT_EQ(log.kinds, (std::vector<misuse_kind>{misuse_kind::hold_after_drain}));
  EXPECT_EQ(r.refs().count(), 0u) << "the refused hold is not counted, on a shard or the atomic";
  EXPECT_TRUE(r.refs().switched());
}

TEST(sharded_refs, a_put_without_a_hold_is_found_by_the_run_down) {
  fake::reset();
  grace_domain<fake> domain;
  route r;
  r.mark_registered();
  misuse_log log;
  scoped_misuse_policy p(misuse_policy::report, log);
  r.refs().put();  // undetectable on a shard (it may be another shard's hold)...
  EXPECT_TRUE(log.kinds.empty());
  keep_policy policy;
  unreg_queue<route> q;
  q.push(r);
  rollback_many(q, policy, domain);  // ...but the sum is negative: diagnosed, the excess dropped
  EXPECT_EQ(log.kinds, (std::vector<misuse_kind>{misuse_kind::ref_underflow}));
  EXPECT_EQ(policy.destroyed, 1) << "the count is zero after the excess put is dropped";
}

TEST(sharded_refs, holds_and_puts_racing_the_run_down_are_all_counted) {
  // Two threads keep holding and putting (each put after its own hold) across many objects while
  // this thread runs each one down; every hold lands on a shard before it closes or on the atomic
  // after, and a put whose hold is in a shard not yet summed must not underflow the atomic.
  constexpr std::size_t kObjects = 20'000;
  std::vector<std::unique_ptr<route>> rs;
  for (std::size_t i = 0; i < kObjects; ++i) {
    rs.push_back(std::make_unique<route>());
    rs.back()->refs().hold();  // the test's own hold keeps each count above zero throughout
  }
  misuse_log log;
  scoped_misuse_policy p(misuse_policy::report, log);  // a put that underflowed would be refused and logged
  std::atomic<bool> stop{false};
  std::latch started(3);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      started.arrive_and_wait();
      for (std::size_t k = static_cast<std::size_t>(t); !stop.load(std::memory_order_relaxed); k = (k + 7) % kObjects) {
        rs[k]->refs().hold();
        rs[k]->refs().put();
      }
    });
  started.arrive_and_wait();
  for (auto& r : rs) detail::sharded_access::run_down(*r);
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_TRUE(log.kinds.empty()) << log.messages.size() << " misuse reports, first: "
                                 << (log.messages.empty() ? "" : log.messages[0]);
  std::size_t wrong = 0;
  for (auto& r : rs) {
    wrong += static_cast<detail::registrable_base&>(*r).refs().count() != 1u;
    r->refs().put();
  }
  EXPECT_EQ(wrong, 0u) << "objects whose atomic did not end at the test's one hold";
}

}  // namespace
}  // namespace rcubatch::test
