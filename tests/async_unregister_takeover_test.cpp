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
#include <filesystem>
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

enum class flavor_of_reclaimer { background, manual, attached };

/// One object held by the test (a packet queued to userspace) and submitted, then 10,000 more
/// submitted by the holder. Each reclaimer flavor: the background thread runs the batches; in
/// manual mode the holder does (run_now, wait); attached, the registry's own unregister combines
/// through the reclaimer as well. The held object's batch parks and hands it to the lot, so:
/// none of the holder's submits waits for it (whether the budget is small or not), the ticket of
/// the last of the 10,000 is done while the held object is still held (tickets complete per
/// object, not in submit order), the held object's own ticket is not, and the last put lets it
/// go without anyone else waiting. No spare thread: the lot has one runner.
void a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer flavor, std::size_t budget_bytes) {
  constexpr int kLater = 10'000;
  watchdog dog(60s, "10,000 objects submitted after one held object, budget " + std::to_string(budget_bytes));
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  item_registry reg;
  async_options o = flavor == flavor_of_reclaimer::manual ? manual() : async_options{};
  o.budget_bytes = budget_bytes;
  if (flavor != flavor_of_reclaimer::manual) o.max_age = 0us;
  o.combine_registry_unregister = flavor == flavor_of_reclaimer::attached;
  int extra = 0;  // objects deleted through the registry (attached)
  {
    async_unregister reclaimer(reg, o);
    item* held = add_item(reg, 0);
    held->refs().hold();
    const unregister_ticket held_ticket = reclaimer.submit(*held);
    ASSERT_TRUE(held_ticket);
    if (flavor == flavor_of_reclaimer::manual) {
      EXPECT_EQ(reclaimer.run_now(), 1U) << "its batch parks and returns";
    }
    while (held->state() != reg_state::unregistered) std::this_thread::yield();  // its batch's drain parked it
    unregister_ticket last;
    for (int i = 1; i <= kLater; ++i) {
      last = reclaimer.submit(*add_item(reg, i));  // never waits on `held` (the budget neither)
      ASSERT_TRUE(last) << i;
    }
    if (flavor == flavor_of_reclaimer::attached) {
      reg.unregister(*add_item(reg, kLater + 1));  // synchronous, combined: its own batch only
      ++extra;
      EXPECT_GE(destroyed.load(), 1) << "its own object, at least";
    }
    reclaimer.wait(last);  // leads in manual mode; in order behind the held object before issue 35
    EXPECT_TRUE(reclaimer.poll(last));
    EXPECT_EQ(destroyed.load(), kLater + extra) << "everything but the held object";
    EXPECT_FALSE(reclaimer.poll(held_ticket)) << "its object is still held";
    EXPECT_EQ(held->state(), reg_state::unregistered);
    EXPECT_EQ(reclaimer.stats().pending_count, 1U) << "the held object only";
    held->refs().put();
    reclaimer.wait(held_ticket);  // the lot's runner destroys it
    EXPECT_EQ(destroyed.load(), kLater + extra + 1);
    reclaimer.drain();
  }
  EXPECT_EQ(destroyed.load(), kLater + extra + 1);
  g_destroyed = nullptr;
}

TEST_F(takeover, a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::background, std::size_t{64} << 20);
}
TEST_F(takeover, a_held_object_does_not_block_its_holders_submits_on_a_small_budget) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::background, 16 * sizeof(item));
}
TEST_F(takeover, a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it_to_a_manual_reclaimer) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::manual, std::size_t{64} << 20);
}
TEST_F(takeover, a_held_object_does_not_block_its_holders_submits_to_a_manual_reclaimer_on_a_small_budget) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::manual, 16 * sizeof(item));
}
TEST_F(takeover, a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it_to_an_attached_reclaimer) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::attached, std::size_t{64} << 20);
}
TEST_F(takeover, a_held_object_does_not_block_its_holders_submits_to_an_attached_reclaimer_on_a_small_budget) {
  a_held_object_does_not_stall_the_objects_after_it(flavor_of_reclaimer::attached, 16 * sizeof(item));
}

/// The threads of this process now (Linux: /proc/self/task), or 0 where that cannot be read.
std::size_t threads_now() {
  std::error_code ec;
  std::size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? 0 : n;
}

/// Fifty objects held by the test, each in a batch of its own on the background thread: every
/// batch parks its object in the lot and the reclaimer starts no thread for it (r35-core started
/// a spare runner per parked batch: a leaking holder could make threads grow without bound).
TEST_F(takeover, fifty_batches_parked_on_held_objects_start_no_thread) {
  constexpr int kHeld = 50;
  watchdog dog(60s, "fifty parked batches");
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  item_registry reg;
  async_options o;
  o.max_age = 0us;
  {
    async_unregister reclaimer(reg, o);
    const std::size_t before = threads_now();
    if (before == 0) GTEST_SKIP() << "no /proc/self/task here";
    std::vector<item*> held;
    for (int i = 0; i < kHeld; ++i) {
      held.push_back(add_item(reg, i));
      held.back()->refs().hold();
      ASSERT_TRUE(reclaimer.submit(*held.back()));
      while (held.back()->state() != reg_state::unregistered) std::this_thread::yield();  // drained: it parks
    }
    EXPECT_EQ(threads_now(), before) << "no thread per parked batch";
    EXPECT_EQ(destroyed.load(), 0);
    for (item* h : held) h->refs().put();
    reclaimer.drain();
    EXPECT_EQ(destroyed.load(), kHeld);
    EXPECT_EQ(threads_now(), before);
  }
  g_destroyed = nullptr;
}

/// A leader whose own object was destroyed returns though the batch it led parked on another
/// caller's held object (the Spin model's HOLD_UNTIL_OTHERS: issue 35 found r35-core's parking
/// still kept that leader in the drain). Manual mode: unregister leads the batch of both.
TEST_F(takeover, a_caller_leading_a_batch_that_parks_on_another_callers_held_object_returns) {
  watchdog dog(60s, "a leader whose batch parked on a held object");
  std::atomic<int> destroyed{0};
  g_destroyed = &destroyed;
  item_registry reg;
  {
    async_options o = manual();
    o.rollback.drain.stall_report_interval = std::chrono::hours(1);  // only the last put wakes the lot
    async_unregister reclaimer(reg, o);
    item* held = add_item(reg, 0);
    held->refs().hold();
    const unregister_ticket held_ticket = reclaimer.submit(*held);
    ASSERT_TRUE(held_ticket);
    std::thread leader([&] {
      thread_registration<flavor::memb> r;
      // Its request joins the held object's (pending): it leads the batch of both, which parks.
      EXPECT_TRUE(reclaimer.unregister(*add_item(reg, 1)));
    });
    leader.join();  // hangs (the watchdog) if the leader stays in the parked batch's drain
    EXPECT_EQ(destroyed.load(), 1) << "the leader's own object";
    EXPECT_FALSE(reclaimer.poll(held_ticket));
    EXPECT_EQ(reclaimer.run_now(), 0U);  // polls the lot once (it was told when the batch parked)
    EXPECT_FALSE(reclaimer.poll(held_ticket));
    held->refs().put();  // from here only this put can make the lot's runner look again
    reclaimer.wait(held_ticket);  // manual mode: the waiter runs the lot
    EXPECT_EQ(destroyed.load(), 2);
  }
  EXPECT_EQ(destroyed.load(), 2);
  g_destroyed = nullptr;
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
