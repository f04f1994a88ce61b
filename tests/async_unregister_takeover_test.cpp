// async_unregister, issue 35: an object submitted to a reclaimer and then reached by another
// batch (a cascade, its owned parent's batch) is taken over by whichever batch runs first; its
// ticket completes only once it is destroyed; a second, legal delete is no misuse; one held
// object does not stop the objects submitted after it (a parent's batch taking its submitted
// child over: tests/owned_test.cpp). Every test that could hang has a watchdog; no sleeps (latches, GPs
// held open by the counting flavor's on_synchronize, holds released by the test).
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/cascade.hpp"
#include "support/counting.hpp"
#include "support/indexed_item.hpp"
#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;
using CF = counting_flavor<struct async_takeover_test_tag>;

async_options manual(async_options o = {}) {
  o.mode = reclaim_mode::manual;
  o.max_age = std::chrono::hours(1);
  return o;
}

struct takeover : counting_test<async_takeover_test_tag> {
  thread_registration<flavor::memb> reg_;  // the indexes are memb rculfhash tables
};

// --- item 1: a cascade takes a submitted object over ----------------------------------------------

TEST_F(takeover, a_submitted_stream_taken_by_its_sessions_cascade_completes_its_ticket_only_once_destroyed) {
  watchdog dog(30s, "a submitted stream taken over by its session's batch");
  misuse_log seen;
  scoped_misuse_policy policy(misuse_policy::report, seen);
  cascade_log log;
  cascade_registry<CF> reg;
  record_into(reg, log);
  async_unregister reclaimer(reg, manual());
  session* s = open_session(reg, 1, 2);
  stream* st = s->streams[0];
  st->refs().hold();  // a holder: whichever batch takes the stream waits for it in its drain
  const submit_result r = reclaimer.try_submit(*st);
  ASSERT_TRUE(r);
  EXPECT_TRUE(st->going_away()) << "a hook can tell a submitted object is going away";
  EXPECT_EQ(st->state(), reg_state::registered) << "registered until a batch takes it";
  EXPECT_FALSE(s->going_away());
  EXPECT_EQ(reg.try_unregister(*st).status, unregister_status::already_unregistering)
      << "a second delete by object of a submitted object is a lost race, not misuse";
  std::thread writer([&] {
    thread_registration<flavor::memb> r2;
    EXPECT_EQ(reg.unregister(*s).objects, 3u) << "the session takes both streams, the submitted one too";
  });
  while (s->state() != reg_state::unregistered) std::this_thread::yield();  // its drain waits for st
  EXPECT_EQ(reclaimer.run_now(), 1u) << "the reclaimer's batch finds its request taken over";
  EXPECT_FALSE(reclaimer.poll(r.ticket)) << "the stream is still alive: its ticket is not done";
  st->refs().put();
  writer.join();
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(r.ticket));
  EXPECT_EQ(log.destroyed.size(), 3u);
  EXPECT_EQ(log.stream_unlists[10], 1) << "unlisted once, at submit";
  EXPECT_TRUE(seen.kinds.empty()) << (seen.messages.empty() ? "" : seen.messages.front());
}

// Items 2 and 3 (owned children submitted before their parent's batch): tests/owned_test.cpp.

// --- item 4: one held object does not stall the reclaimer ----------------------------------------

std::atomic<int>* g_destroyed = nullptr;
struct counted_items : indexed<item, by_id> {
  void destroy(item* i) noexcept {
    g_destroyed->fetch_add(1);
    delete i;
  }
};
using item_registry = basic_registry<CF, std::mutex, counted_items>;

/// One object held by the test (a packet queued to userspace) and submitted, then 10,000 more
/// submitted by the holder: they are destroyed while it is still held, and none of the holder's
/// submits waits for it, whether a budget is small or not.
void a_held_object_does_not_stall_the_objects_after_it(std::size_t budget_bytes) {
  constexpr int kLater = 10'000;
  watchdog dog(60s, "10,000 objects submitted after one held object, budget " + std::to_string(budget_bytes));
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  item_registry reg;
  async_options o;
  o.budget_bytes = budget_bytes;
  o.max_age = 0us;
  {
    async_unregister reclaimer(reg, o);
    item* held = add_item(reg, 0);
    held->refs().hold();
    ASSERT_TRUE(reclaimer.submit(*held));
    while (held->state() != reg_state::unregistered) std::this_thread::yield();  // its batch's drain waits
    for (int i = 1; i <= kLater; ++i) ASSERT_TRUE(reclaimer.submit(*add_item(reg, i))) << i;  // never waits on `held`
    while (destroyed.load() < kLater) std::this_thread::yield();  // the batches behind it proceed
    EXPECT_EQ(destroyed.load(), kLater) << "everything but the held object";
    held->refs().put();
    reclaimer.drain();
  }
  EXPECT_EQ(destroyed.load(), kLater + 1);
  g_destroyed = nullptr;
}

TEST_F(takeover, a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it) {
  a_held_object_does_not_stall_the_objects_after_it(std::size_t{64} << 20);
}
TEST_F(takeover, a_held_object_does_not_block_its_holders_submits_on_a_small_budget) {
  a_held_object_does_not_stall_the_objects_after_it(16 * sizeof(item));
}

// --- item 5: mutants the suite did not kill ----------------------------------------------------

TEST_F(takeover, try_unregister_of_an_object_waiting_in_an_unattached_reclaimer_is_a_lost_race_not_misuse) {
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  item_registry reg;  // the default misuse policy: throw_error
  async_unregister reclaimer(reg, manual());
  item* x = add_item(reg, 1);
  ASSERT_TRUE(reclaimer.submit(*x));
  unregister_result r;
  EXPECT_NO_THROW(r = reg.try_unregister(*x));
  EXPECT_EQ(r.status, unregister_status::already_unregistering);
  EXPECT_EQ(r.missed, 1u);
  EXPECT_EQ(destroyed.load(), 0);
  reclaimer.drain();
  EXPECT_EQ(destroyed.load(), 1);
  g_destroyed = nullptr;
}

/// Runs a grace period inside submit's unlist, before the object leaves its index, when asked:
/// a reader that finds the object after that grace period began is not covered by it.
std::atomic<bool> g_gp_in_unlist{false};
grace_domain<CF>* g_domain = nullptr;
struct gp_in_unlist_items : counted_items {
  void unlist(item& i) noexcept {
    if (g_gp_in_unlist) g_domain->synchronize();
    indexed<item, by_id>::unlist(i);
  }
};

TEST_F(takeover, a_grace_period_during_submits_unlist_does_not_let_its_batch_skip_grace_period_1) {
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  basic_registry<CF, std::mutex, gp_in_unlist_items> reg;
  g_domain = &reg.domain();
  async_unregister reclaimer(reg, manual());
  item* x = add_item(reg, 1);
  g_gp_in_unlist = true;
  ASSERT_TRUE(reclaimer.submit(*x));
  g_gp_in_unlist = false;
  const auto before = CF::synchronizes();
  EXPECT_EQ(reclaimer.run_now(), 1u);
  EXPECT_EQ(reclaimer.stats().gps_pipelined, 0u) << "the GP began before the unlist: it does not cover it";
  EXPECT_EQ(CF::synchronizes() - before, 1u) << "grace period #1 ran";
  EXPECT_EQ(destroyed.load(), 1);
  g_destroyed = nullptr;
  g_domain = nullptr;
}

}  // namespace
}  // namespace rcubatch::test
