// async_unregister attached to its registry (async_options::combine_registry_unregister): the
// registry's own unregister / try_unregister combine through the registry's gate (combining.hpp),
// counted in the reclaimer's stats — callers arriving while a batch runs share one following
// batch (exact GP counts with the counting flavor, the batch held open inside its grace period:
// no sleeps); every object destroyed once across threads; the option off leaves the registry
// alone; a second attach is misuse; the reclaimer's destruction detaches it, without waiting for
// the registry's calls in flight; the registry's misuse is still diagnosed; a registry call from
// a destroy hook runs its own batch. The gate's own contract: tests/combining_test.cpp.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <barrier>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/counted_items.hpp"
#include "support/counting.hpp"
#include "support/indexed_item.hpp"
#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;
using CF = counting_flavor<struct async_attached_test_tag>;


/// The objects: counted_items (support/counted_items.hpp).
using items = counted_items;
using registry_t = basic_registry<CF, std::mutex, items>;

/// Combining on, no batch ever due by age or count: only callers that wait run batches.
async_options combining(async_options o = {}) {
  o.combine_registry_unregister = true;
  o.batch_count = 1'000'000;
  o.max_age = std::chrono::hours(1);
  return o;
}

struct attached : counting_test<async_attached_test_tag> {
  attached() { reset_counted_items(); }
  ~attached() override { reset_counted_items(); }
  thread_registration<flavor::memb> reg_;  // the index is a memb rculfhash table
  registry_t reg;
};

TEST_F(attached, with_the_option_off_registry_unregister_runs_its_own_batch) {
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  item* a = add_item(reg, 1);
  const batch_stats st = reg.unregister(*a);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(reclaimer.stats().submitted, 0u) << "the reclaimer saw nothing";
  EXPECT_EQ(reclaimer.stats().batches, 0u);
}

TEST_F(attached, with_the_option_on_registry_unregister_goes_through_the_reclaimer) {
  async_unregister reclaimer(reg, combining());
  item* a = add_item(reg, 1);
  const batch_stats st = reg.unregister(*a);  // lone caller: the fast path, at once
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_FALSE(findable(reg, 1));
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_EQ(reclaimer.stats().submitted, 1u);
  EXPECT_EQ(reclaimer.stats().batches, 1u);
  item* b = add_item(reg, 2);
  const unregister_result by_object = reg.try_unregister(*b);  // submit, then leads at once
  EXPECT_EQ(by_object.status, unregister_status::unregistered);
  EXPECT_EQ(by_object.unregistered, 1u);
  EXPECT_EQ(by_object.stats.objects, 1u);
  EXPECT_EQ(g_destroyed[2].load(), 1);
  EXPECT_EQ(reclaimer.stats().submitted, 2u);
}

TEST_F(attached, two_callers_arriving_while_a_batch_runs_share_one_following_batch) {
  // Caller L's batch is held inside its grace period (the writer lock held: the registry's
  // options) until two more registry.unregister callers have queued in the gate; they then
  // complete in one batch led by one of them: 2 GPs for 3 objects, and each follower's stats
  // count its own object and the grace period it shared.
  watchdog dog(30s, "registry callers combining through an attached reclaimer");
  async_unregister reclaimer(reg, combining());
  item* l = add_item(reg, 0);
  item* f1 = add_item(reg, 1);
  item* f2 = add_item(reg, 2);

  std::latch in_gp(1);
  std::atomic<bool> first_gp{true};
  CF::on_synchronize = [&] {
    if (!first_gp.exchange(false)) return;
    in_gp.count_down();
    while (reg.combining_waiting() < 2) std::this_thread::yield();  // the two followers'
  };
  batch_stats leader_st, st1, st2;
  std::thread leader = registered_thread([&] { leader_st = reg.unregister(*l); });
  in_gp.wait();
  std::thread a = registered_thread([&] { st1 = reg.unregister(*f1); });
  std::thread b = registered_thread([&] { st2 = reg.unregister(*f2); });
  leader.join();
  a.join();
  b.join();
  CF::on_synchronize = nullptr;

  EXPECT_EQ(CF::synchronizes(), 2u) << "one GP for L's batch, one for the two followers together";
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 2u);
  // Either batch may end last (L's reports after its destroys, when the lock is already the
  // followers'): the largest batch is the shared one.
  EXPECT_EQ(st.max_requests_per_batch, 2u);
  EXPECT_EQ(st.max_threads_per_batch, 2u);
  EXPECT_EQ(leader_st.objects, 1u);
  EXPECT_EQ(st1.objects, 1u) << "its own object: the shared batch's other one is not its result";
  EXPECT_EQ(st2.objects, 1u);
  EXPECT_EQ(st1.batch_id, st2.batch_id) << "one batch";
  EXPECT_EQ(st1.grace_periods, 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
}

TEST_F(attached, many_threads_calling_registry_unregister_destroy_each_object_exactly_once) {
  constexpr int kThreads = 4, kEach = 100, kN = kThreads * kEach;
  watchdog dog(60s, "four threads calling registry.unregister through an attached reclaimer");
  async_unregister reclaimer(reg, combining());
  const std::vector<item*> all = add_items(reg, kN);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.push_back(registered_thread([&, t] {
      start.arrive_and_wait();
      for (int i = t * kEach; i < (t + 1) * kEach; ++i) {
        const batch_stats st = reg.unregister(*all[static_cast<std::size_t>(i)]);
        EXPECT_GE(st.objects, 1u);
        EXPECT_EQ(g_destroyed[i].load(), 1) << "destroyed before its unregister returned";
      }
    }));
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kN; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.completed, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(st.objects, static_cast<std::size_t>(kN));
  EXPECT_EQ(CF::synchronizes(), st.grace_periods) << "every GP was one of the reclaimer's batches";
  EXPECT_LE(st.grace_periods, static_cast<std::uint64_t>(kN));
}

TEST_F(attached, a_second_attach_is_diagnosed_and_changes_nothing) {
  async_unregister first(reg, combining());
  try {
    async_unregister second(reg, combining());
    ADD_FAILURE() << "a second reclaimer attached to the same registry";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::attached_twice);
  }
  misuse_capture cap;
  {
    scoped_misuse_policy report(misuse_policy::report, cap);
    async_unregister second(reg, combining());  // constructed, not attached
    EXPECT_EQ(cap.calls, 1);
    EXPECT_EQ(cap.last_kind, misuse_kind::attached_twice);
    item* a = add_item(reg, 1);
    reg.unregister(*a);
    EXPECT_EQ(first.stats().submitted, 1u) << "the first one is still the attached one";
    EXPECT_EQ(second.stats().submitted, 0u);
  }
  item* b = add_item(reg, 2);  // the refused one's destruction did not detach the first
  reg.unregister(*b);
  EXPECT_EQ(first.stats().submitted, 2u);
}

TEST_F(attached, after_the_reclaimer_is_destroyed_registry_unregister_runs_its_own_batch) {
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  {
    async_unregister reclaimer(reg, combining());
    reg.unregister(*a);
    EXPECT_EQ(reclaimer.stats().submitted, 1u);
  }
  const batch_stats st = reg.unregister(*b);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(g_destroyed[2].load(), 1);
  async_unregister again(reg, combining());  // and a new one may attach
  item* c = add_item(reg, 3);
  reg.unregister(*c);
  EXPECT_EQ(again.stats().submitted, 1u);
}

TEST_F(attached, the_reclaimers_destructor_returns_while_a_registry_call_is_in_flight_and_the_call_completes) {
  // A registry call is inside its batch (its destroy hook, held there by the test) when the
  // reclaimer is destroyed: the call never used the reclaimer (the registry's gate ran it), so
  // the destructor returns at once — a wait for the call would hang into the watchdog — and the
  // call completes after, counted nowhere.
  watchdog dog(30s, "a reclaimer destroyed while a registry call is in its batch");
  auto reclaimer = std::make_unique<async_unregister<registry_t>>(reg, combining());
  item* a = add_item(reg, 1);
  std::latch in_hook(1);
  std::latch release(1);
  g_on_destroy = [&](item&) {
    in_hook.count_down();
    release.wait();
  };
  batch_stats st;
  std::thread caller = registered_thread([&] { st = reg.unregister(*a); });
  in_hook.wait();
  reclaimer.reset();
  release.count_down();
  caller.join();
  g_on_destroy = nullptr;
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  item* b = add_item(reg, 2);
  EXPECT_EQ(reg.unregister(*b).objects, 1u) << "detached: the registry's own batch";
}

TEST_F(attached, the_registrys_misuse_is_still_diagnosed_and_changes_nothing) {
  async_unregister reclaimer(reg, combining({.mode = reclaim_mode::manual}));
  item never_added(1);
  auto kind_of = [](auto&& call) {
    try {
      call();
    } catch (const misuse_error& e) {
      return e.kind();
    }
    return misuse_kind::ref_token_leaked;  // "nothing diagnosed": a kind none of these raise
  };
  EXPECT_EQ(kind_of([&] { reg.unregister(never_added); }), misuse_kind::not_registered);
  item* x = add_item(reg, 2);
  ASSERT_TRUE(reclaimer.submit(*x));  // pending: the next registry call takes the submit path
  EXPECT_EQ(kind_of([&] { reg.unregister(*x); }), misuse_kind::already_unregistering);
  const unregister_result lost = reg.try_unregister(*x);
  EXPECT_EQ(lost.status, unregister_status::already_unregistering) << "a lost race is a result";
  EXPECT_EQ(lost.missed, 1u);
  item* y = add_item(reg, 3);
  {
    read_guard<CF> guard;
    EXPECT_EQ(kind_of([&] { reg.unregister(*y); }), misuse_kind::blocking_in_read_section);
  }
  {
    std::scoped_lock holder(reg.writer_lock());
    EXPECT_EQ(kind_of([&] { reg.unregister(*y); }), misuse_kind::holds_writer_lock);
    EXPECT_EQ(kind_of([&] { reg.try_unregister<by_id>(3); }), misuse_kind::holds_writer_lock);
  }
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    EXPECT_TRUE(reg.unregister(never_added).refused);
    std::scoped_lock holder(reg.writer_lock());
    EXPECT_TRUE(reg.unregister(*y).refused);
  }
  EXPECT_TRUE(findable(reg, 3)) << "nothing changed";
  EXPECT_EQ(reclaimer.stats().submitted, 1u) << "only x's submit";
  reclaimer.drain();
  EXPECT_EQ(g_destroyed[2].load(), 1);
  const unregister_result won = reg.try_unregister<by_id>(3);
  EXPECT_EQ(won.status, unregister_status::unregistered);
  EXPECT_EQ(won.stats.objects, 1u);
  EXPECT_EQ(g_destroyed[3].load(), 1);
  EXPECT_EQ(reg.try_unregister<by_id>(3).status, unregister_status::not_found);
}

TEST_F(attached, a_registry_call_from_a_hook_of_the_reclaimers_batch_runs_its_own_batch) {
  // destroy runs without the writer lock: registry.unregister there is legal, as without the
  // reclaimer; the gate finds the lock free and the call runs its own batch (a wait for the
  // batch running the hook would deadlock into the watchdog). Both count in the reclaimer.
  watchdog dog(30s, "registry.unregister from a destroy hook of the attached reclaimer's batch");
  async_unregister reclaimer(reg, combining());
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  batch_stats from_hook;
  g_on_destroy = [&](item& i) {
    if (i.id == 1) from_hook = reg.unregister(*b);
  };
  reg.unregister(*a);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(g_destroyed[2].load(), 1);
  EXPECT_EQ(from_hook.objects, 1u);
  EXPECT_EQ(reclaimer.stats().batches, 2u) << "b's batch was its own, not a's";
}

TEST_F(attached, two_threads_deleting_the_same_keys_by_key_exactly_one_wins_each) {
  constexpr int kN = 300;
  watchdog dog(60s, "two threads try_unregister by key through an attached reclaimer");
  async_unregister reclaimer(reg, combining());
  add_items(reg, kN);
  std::atomic<int> won[2] = {0, 0}, lost[2] = {0, 0}, exceptions{0};
  std::barrier each_key(2);  // both threads start every key together: the race on every key
  auto deleter = [&](int t) {
    thread_registration<flavor::memb> r;
    for (int i = 0; i < kN; ++i) {
      each_key.arrive_and_wait();
      try {
        const unregister_result res = reg.try_unregister<by_id>(i);
        if (res.status == unregister_status::unregistered) {
          ++won[t];
          EXPECT_EQ(g_destroyed[i].load(), 1);
        } else {
          EXPECT_EQ(res.status, unregister_status::not_found);
          ++lost[t];
        }
      } catch (...) {  // misuse (found it, then submitted it after the other thread had): a failure
        ++exceptions;
      }
    }
  };
  std::thread t0(deleter, 0), t1(deleter, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(exceptions.load(), 0);
  EXPECT_EQ(won[0] + won[1], kN);
  EXPECT_EQ(lost[0] + lost[1], kN);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
  EXPECT_EQ(reclaimer.stats().completed, static_cast<std::uint64_t>(kN));
}

/// pending_bytes is the one user hook the by-key path calls between finding an object and
/// submitting it. Called without the writer lock held — a window in which another thread could
/// delete that object — it lets the other thread's whole delete run first: the worst schedule,
/// made deterministic. Under the lock (the guarantee) it returns at once.
struct window_items : items {
  std::function<void()> on_unlocked_window;
  std::size_t pending_bytes(const item&) const {
    if (on_unlocked_window) on_unlocked_window();
    return sizeof(item);
  }
};
using window_registry = basic_registry<CF, std::mutex, window_items>;

TEST_F(attached, by_key_the_lookup_and_the_submit_share_one_hold_of_the_writer_lock) {
  watchdog dog(30s, "try_unregister by key against a delete of the same key");
  window_registry wreg;
  async_unregister reclaimer(wreg, combining());
  auto* it = new item(7);
  ASSERT_TRUE(wreg.add(*it));
  std::atomic<bool> other_ran{false};
  wreg.policy<window_items>().on_unlocked_window = [&] {
    if (wreg.writer_lock().held_by_caller() || other_ran.exchange(true)) return;
    registered_thread([&] { EXPECT_EQ(wreg.try_unregister<by_id>(7).status, unregister_status::unregistered); }).join();
  };
  unregister_result mine;
  EXPECT_NO_THROW(mine = wreg.try_unregister<by_id>(7));
  wreg.policy<window_items>().on_unlocked_window = nullptr;
  EXPECT_EQ(g_destroyed[7].load(), 1);
  EXPECT_FALSE(other_ran.load()) << "the hook ran in a window without the writer lock";
  EXPECT_EQ(mine.status, unregister_status::unregistered);
  EXPECT_EQ(mine.stats.objects, 1u);
}

}  // namespace
}  // namespace rcubatch::test
