// The registry's combining gate (combining.hpp, registry_options::combining; issue 35): a caller
// that finds the writer lock free goes alone; callers queued while the lock is held share one
// batch, each with its own outcome; a leader takes at most max_batch calls; a listener detached
// while calls are in flight is told nothing more and the calls complete; a shared batch that
// throws hands its calls back to run alone; a caller on a call_rcu worker goes alone (never
// follows a leader whose drain's rcu_barrier needs that worker). The writer lock is held by hand
// (writer_lock()) to make callers queue, and released once the gate says they are queued: no
// sleeps; the counting flavor gives exact grace-period counts.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/combining.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
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
using CF = counting_flavor<struct combining_test_tag>;

std::atomic<int> g_refuse_id{-1};  // validate throws for this id

/// counted_items (support/counted_items.hpp) whose validate refuses g_refuse_id.
struct items : counted_items {
  void validate(item& i) {
    if (i.id == g_refuse_id.load()) throw std::runtime_error("validate refuses it");
  }
};
using registry_t = basic_registry<CF, std::mutex, items>;

registry_options combining_on(std::size_t max_batch = 64, bool gather_released = false) {
  registry_options o;
  o.combining.enabled = true;
  o.combining.max_batch = max_batch;
  o.combining.gather_released = gather_released;
  return o;
}

/// What a gate told its listener.
struct recording_listener final : combining_listener {
  void combined_batch_ran(const combined_batch_report& r) noexcept override {
    std::scoped_lock lock(m);
    reports.push_back(r);
  }
  std::vector<combined_batch_report> taken() {
    std::scoped_lock lock(m);
    return reports;
  }
  std::mutex m;
  std::vector<combined_batch_report> reports;
};

/// Waits until n calls are queued in reg's gate (they block there: the test holds the lock).
void until_queued(registry_t& reg, std::size_t n) {
  while (reg.combining_waiting() < n) std::this_thread::yield();
}

/// Holds reg's writer lock while each call starts on a registered thread and queues in the gate,
/// one after the other (the first leads), then releases it and joins them.
void queued_while_the_lock_is_held(registry_t& reg, std::vector<std::function<void()>> calls) {
  std::vector<std::thread> threads;
  {
    std::unique_lock held(reg.writer_lock());
    for (auto& call : calls) {
      threads.push_back(registered_thread(std::move(call)));
      until_queued(reg, threads.size());
    }
  }
  for (auto& t : threads) t.join();
}

struct combining : counting_test<combining_test_tag> {
  combining() { reset_counted_items(); }
  ~combining() override {
    reset_counted_items();
    g_refuse_id = -1;
  }
  thread_registration<flavor::memb> memb_;
};

TEST_F(combining, a_registry_asked_for_combined_batches_of_zero_calls_is_refused_at_construction) {
  try {
    registry_t reg(combining_on(0));
    FAIL() << "max_batch = 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_batch"), std::string::npos) << e.what();
  }
}

TEST_F(combining, a_lone_caller_that_finds_the_lock_free_goes_alone_at_once) {
  registry_t reg(combining_on());
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  item* a = add_item(reg, 1);
  const batch_stats st = reg.unregister(*a);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(st.grace_periods, 1u);
  const auto reports = heard.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].alone) << "no leader waiting and the lock free: it ran without queueing";
  EXPECT_EQ(reports[0].calls, 1u);
  EXPECT_EQ(reports[0].requests, 1u);
  reg.detach_combining_listener(heard);
}

// Where combining cannot pay (nobody else calling), it must cost nothing: counted by the gate
// (combining_stats), not timed. A lone caller that finds the lock free takes neither the gate's
// mutex nor a condition variable; a leader that finds nobody queued behind it takes the mutex
// twice (arrive, take) and finishes without it, waking nobody.
TEST_F(combining, a_lone_caller_takes_no_gate_mutex_and_no_sleep_and_a_lone_leader_takes_it_twice) {
  watchdog dog(30s, "one caller leading while the test holds the writer lock");
  registry_t reg(combining_on());
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  add_item(reg, 3);
  item* d = add_item(reg, 4);
  EXPECT_EQ(reg.unregister(*a).objects, 1u);
  EXPECT_TRUE(reg.try_unregister(*b));
  EXPECT_TRUE(reg.try_unregister<by_id>(3));
  combining_stats s = reg.combining_stats();
  EXPECT_EQ(s.alone, 3u);
  EXPECT_EQ(s.gate_locks, 0u) << "the alone path never touches the gate's mutex";
  EXPECT_EQ(s.followed, 0u);
  EXPECT_EQ(s.wakes, 0u);
  EXPECT_EQ(s.led, 0u);

  queued_while_the_lock_is_held(reg, {[&] { EXPECT_EQ(reg.unregister(*d).objects, 1u); }});
  s = reg.combining_stats();
  EXPECT_EQ(s.alone, 3u);
  EXPECT_EQ(s.led, 1u);
  EXPECT_EQ(s.led_alone, 1u) << "nobody queued behind it";
  EXPECT_EQ(s.gate_locks, 2u) << "arrive and take; its batch of one finished without the mutex";
  EXPECT_EQ(s.followed, 0u) << "a leader never sleeps in the gate";
  EXPECT_EQ(s.wakes, 0u) << "nobody to wake";
  EXPECT_EQ(CF::synchronizes(), 4u);
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
}

// A wake-up goes to a caller asleep in the gate and to no other: with max_batch 1 the first
// leader wakes the second caller (asleep as a follower) to lead; that one's own call, finished
// under the mutex (a listener is attached), is not notified — its caller is the one running.
TEST_F(combining, the_gate_wakes_only_callers_asleep_in_it) {
  watchdog dog(30s, "two callers through a gate of max_batch 1");
  registry_t reg(combining_on(1));
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  queued_while_the_lock_is_held(reg, {[&] { reg.unregister(*a); }, [&] { reg.unregister(*b); }});
  const combining_stats s = reg.combining_stats();
  EXPECT_EQ(s.led, 2u);
  EXPECT_EQ(s.led_alone, 2u);
  EXPECT_EQ(s.followed, 1u) << "the second caller slept until it was made the leader";
  EXPECT_EQ(s.wakes, 1u) << "one wake-up: the next leader's; none to a leader's own call";
  EXPECT_EQ(s.gate_locks, 6u) << "arrive ×2, take ×2, finish ×2 (a listener to tell)";
  EXPECT_EQ(heard.taken().size(), 2u);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(g_destroyed[2].load(), 1);
  reg.detach_combining_listener(heard);
}

TEST_F(combining, callers_queued_while_the_lock_is_held_share_one_batch_each_with_its_own_objects_results) {
  watchdog dog(30s, "callers queued in the gate while the test holds the writer lock");
  registry_t reg(combining_on());
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  item* a = add_item(reg, 1);
  item* c = add_item(reg, 3);
  item never_added(5);
  misuse_capture cap;
  scoped_misuse_policy report(misuse_policy::report, cap);

  batch_stats st_a, st_d;
  unregister_result r_b, r_c;
  queued_while_the_lock_is_held(reg, {[&] { st_a = reg.unregister(*a); },
                                      [&] { r_b = reg.try_unregister<by_id>(99); },  // no such key
                                      [&] { r_c = reg.try_unregister(*c); },
                                      [&] { st_d = reg.unregister(never_added); }});  // misuse: refused

  EXPECT_EQ(CF::synchronizes(), 1u) << "one grace period for the four calls";
  const auto reports = heard.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].alone);
  EXPECT_EQ(reports[0].calls, 4u);
  EXPECT_EQ(reports[0].requests, 2u) << "a and c queued an object; b found none, d was refused";
  EXPECT_EQ(reports[0].batch.objects, 2u);

  EXPECT_EQ(st_a.objects, 1u) << "its own object, not the batch's two";
  EXPECT_EQ(st_a.grace_periods, 1u) << "the grace period it shared";
  EXPECT_FALSE(st_a.refused) << "another call's refusal is not its own";
  EXPECT_EQ(r_c.status, unregister_status::unregistered);
  EXPECT_EQ(r_c.unregistered, 1u);
  EXPECT_EQ(r_c.stats.objects, 1u);
  EXPECT_EQ(r_c.stats.batch_id, st_a.batch_id) << "the same batch";
  EXPECT_EQ(r_b.status, unregister_status::not_found);
  EXPECT_EQ(r_b.missed, 1u);
  EXPECT_EQ(r_b.stats.grace_periods, 0u) << "it queued nothing: zeros, as without combining";
  EXPECT_TRUE(st_d.refused);
  EXPECT_EQ(st_d.objects, 0u);
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::not_registered);
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(g_destroyed[3].load(), 1);
  reg.detach_combining_listener(heard);
}

TEST_F(combining, a_leader_takes_at_most_max_batch_calls_and_the_rest_get_the_next_leader) {
  watchdog dog(30s, "four callers through a gate of max_batch 2");
  registry_t reg(combining_on(2));
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  std::vector<item*> all;
  for (int i = 0; i < 4; ++i) all.push_back(add_item(reg, i));
  std::vector<std::function<void()>> calls;
  for (item* it : all) calls.emplace_back([&reg, it] { EXPECT_EQ(reg.unregister(*it).objects, 1u); });
  queued_while_the_lock_is_held(reg, std::move(calls));
  const auto reports = heard.taken();
  ASSERT_EQ(reports.size(), 2u) << "two batches of two";
  EXPECT_EQ(reports[0].calls, 2u);
  EXPECT_EQ(reports[1].calls, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
  reg.detach_combining_listener(heard);
}

TEST_F(combining, with_gather_released_after_a_shared_batch_a_lone_caller_leads_once_then_the_callers_it_released_are_forgotten) {
  // A shared batch of two releases two callers: the next lone caller leads a batch instead of
  // going alone, sleeping for them at most as long as their batch took (here they never come
  // back: this thread made both calls); then they are forgotten and callers go alone again.
  watchdog dog(30s, "lone callers after a shared batch");
  registry_t reg(combining_on(64, true));
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  std::vector<item*> all;
  for (int i = 0; i < 5; ++i) all.push_back(add_item(reg, i));
  queued_while_the_lock_is_held(reg, {[&] { reg.unregister(*all[0]); }, [&] { reg.unregister(*all[1]); }});
  for (int i = 2; i < 5; ++i) EXPECT_EQ(reg.unregister(*all[i]).objects, 1u);
  const auto reports = heard.taken();
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(reports[0].calls, 2u);
  EXPECT_FALSE(reports[1].alone) << "a released caller was still away: it led";
  EXPECT_TRUE(reports[2].alone) << "the one still away was forgotten when the leader stopped waiting";
  EXPECT_TRUE(reports[3].alone);
  reg.detach_combining_listener(heard);
}

TEST_F(combining, a_listener_detached_while_a_call_is_in_its_batch_is_told_nothing_more_and_the_call_completes) {
  // The call leads a batch (it queued while the test held the lock) whose destroy hook the test
  // holds; the detach returns meanwhile (it waits for no call: a wait would hang into the
  // watchdog), and the batch's end is not reported to the detached listener.
  watchdog dog(30s, "a listener detached while a call is inside its batch");
  registry_t reg;  // combining off: the listener alone turns it on
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  item* a = add_item(reg, 1);
  std::latch in_hook(1);
  std::latch release(1);
  g_on_destroy = [&](item&) {
    in_hook.count_down();
    release.wait();
  };
  batch_stats st;
  std::thread caller;
  {
    std::unique_lock held(reg.writer_lock());
    caller = registered_thread([&] { st = reg.unregister(*a); });
    until_queued(reg, 1);
  }
  in_hook.wait();
  reg.detach_combining_listener(heard);
  release.count_down();
  caller.join();
  g_on_destroy = nullptr;
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_TRUE(heard.taken().empty()) << "the batch ended after the detach";
  item* b = add_item(reg, 2);
  EXPECT_EQ(reg.unregister(*b).objects, 1u);
  EXPECT_TRUE(heard.taken().empty()) << "detached: nothing more";
}

TEST_F(combining, a_shared_batch_whose_validate_throws_hands_each_call_back_to_run_alone) {
  watchdog dog(30s, "a shared batch whose validate throws");
  registry_t reg(combining_on());
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  g_refuse_id = 2;
  bool a_threw = true, b_threw = false;
  queued_while_the_lock_is_held(reg, {[&] {
                                        try {
                                          reg.unregister(*a);
                                          a_threw = false;
                                        } catch (const std::runtime_error&) {
                                        }
                                      },
                                      [&] {
                                        try {
                                          reg.unregister(*b);
                                        } catch (const std::runtime_error&) {
                                          b_threw = true;
                                        }
                                      }});
  EXPECT_FALSE(a_threw) << "a's own batch, run alone after the shared one threw";
  EXPECT_TRUE(b_threw) << "b's validate exception reaches b's caller";
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(g_destroyed[2].load(), 0);
  EXPECT_TRUE(findable(reg, 2)) << "nothing of b changed";
  const combining_stats s = reg.combining_stats();
  EXPECT_EQ(s.handed_back, 2u) << "both calls had queued an object: both handed back";
  EXPECT_EQ(s.alone, 0u) << "a call handed back is not one that went alone at once";
  g_refuse_id = -1;
  reg.unregister(*b);
}

TEST_F(combining, many_threads_through_the_gate_destroy_each_object_exactly_once) {
  // Eight threads, six rounds: each round the test holds the writer lock until all eight calls
  // are queued (the first leads), so every round takes batches of 3, 3 and 2 calls (max_batch 3):
  // the left-over calls get a new leader twice a round. Every object destroyed once, before its
  // call returns; no batch over max_batch; no call alone (a leader always waited).
  watchdog dog(30s, "eight threads through the gate, a round at a time");
  registry_t reg(combining_on(3));
  recording_listener heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  constexpr int kThreads = 8, kPer = 6;
  std::vector<item*> all;
  for (int i = 0; i < kThreads * kPer; ++i) all.push_back(add_item(reg, i));
  std::barrier round_starts(kThreads + 1), round_ends(kThreads + 1);
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t)
    callers.push_back(registered_thread([&, t] {
      for (int i = 0; i < kPer; ++i) {
        round_starts.arrive_and_wait();
        item* it = all[static_cast<std::size_t>(t * kPer + i)];
        const int id = it->id;
        if (i % 2 == 0) {
          EXPECT_EQ(reg.unregister(*it).objects, 1u);
        } else {
          EXPECT_EQ(reg.try_unregister<by_id>(id).status, unregister_status::unregistered);
        }
        EXPECT_EQ(g_destroyed[id].load(), 1) << "destroyed before its call returned";
        round_ends.arrive_and_wait();
      }
    }));
  for (int i = 0; i < kPer; ++i) {
    {
      std::unique_lock held(reg.writer_lock());
      round_starts.arrive_and_wait();
      until_queued(reg, kThreads);
    }
    round_ends.arrive_and_wait();
  }
  for (auto& t : callers) t.join();
  for (int i = 0; i < kThreads * kPer; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
  const auto reports = heard.taken();
  ASSERT_EQ(reports.size(), static_cast<std::size_t>(3 * kPer)) << "three batches a round";
  std::size_t calls = 0;
  for (const combined_batch_report& r : reports) {
    EXPECT_FALSE(r.alone);
    EXPECT_LE(r.calls, 3u) << "max_batch";
    EXPECT_EQ(r.requests, r.calls);
    calls += r.calls;
  }
  EXPECT_EQ(calls, static_cast<std::size_t>(kThreads * kPer));
  EXPECT_EQ(CF::synchronizes(), static_cast<std::uint64_t>(3 * kPer)) << "one grace period a batch";
  reg.detach_combining_listener(heard);
}

// --- qsbr: a follower asleep in the gate is offline -----------------------------------------------

/// The same objects in a registry whose grace periods are qsbr's.
using qsbr_registry = basic_registry<flavor::qsbr, std::mutex, items>;

TEST_F(combining, under_qsbr_a_follower_asleep_in_the_gate_does_not_hold_up_its_leaders_grace_period) {
  // Two qsbr writers, online, queue while the test holds the writer lock; the leader's batch
  // then waits for a qsbr grace period, which an online follower asleep in the gate would never
  // let end (a hang into the watchdog). This thread is not registered with qsbr.
  watchdog dog(30s, "a qsbr follower asleep in the gate");
  qsbr_registry reg(combining_on());
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  std::vector<std::thread> callers;
  const auto caller = [&reg](item* it) {
    return registered_thread([&reg, it] {
      thread_registration<flavor::qsbr> online;
      EXPECT_EQ(reg.unregister(*it).objects, 1u);
    });
  };
  {
    std::unique_lock held(reg.writer_lock());
    callers.push_back(caller(a));
    while (reg.combining_waiting() < 1) std::this_thread::yield();
    callers.push_back(caller(b));
    while (reg.combining_waiting() < 2) std::this_thread::yield();
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(g_destroyed[1].load(), 1);
  EXPECT_EQ(g_destroyed[2].load(), 1);
}

// --- a caller on a call_rcu worker (issue 35, the gate's seam with deferred teardown) ---------

/// A std::mutex that counts the threads blocked in lock(): a test waits for "a caller is now
/// blocked for the writer lock" without sleeping (a caller that never blocks is not counted).
struct observed_mutex {
  void lock() {
    if (m.try_lock()) return;
    blocked.fetch_add(1);
    m.lock();
    blocked.fetch_sub(1);
  }
  bool try_lock() { return m.try_lock(); }
  void unlock() { m.unlock(); }
  std::mutex m;
  std::atomic<int> blocked{0};
};

/// Real memb grace periods and barriers (the counting flavor's barrier runs no worker).
using memb_registry = basic_registry<flavor::memb, observed_mutex, items>;

/// What the call_rcu callback below works on (a callback is a plain function).
struct worker_unregister {
  rcu_head head{};
  memb_registry* reg = nullptr;
  item* obj = nullptr;
  std::atomic<bool> started{false};
  std::latch done{1};
  std::size_t objects = 0;
};
worker_unregister* g_worker = nullptr;

/// A deferred teardown: registry::unregister from a memb call_rcu worker.
void unregister_on_worker(rcu_head*) {
  g_worker->started = true;
  g_worker->objects = g_worker->reg->unregister(*g_worker->obj).objects;
  g_worker->done.count_down();
}

TEST_F(combining, a_caller_on_a_call_rcu_worker_never_waits_in_the_gate_for_a_leader_whose_drain_needs_that_worker) {
  // Leader L queues (the test holds the writer lock); a call_rcu callback then calls unregister
  // while L waits. Had it followed L, L's batch would drain X (held) and run rcu_barrier, which
  // waits for this worker, asleep in the gate until L's batch ends: a deadlock, into the
  // watchdog. A caller on a worker goes alone instead (combining.hpp, "Alone").
  watchdog dog(30s, "a call_rcu worker's unregister while a leader's drain runs rcu_barrier");
  grace_domain<flavor::memb> memb_domain;
  std::latch drain_sleeps(1);
  std::atomic<bool> told{false};
  registry_options o = combining_on();
  o.rollback.drain.before_sleep = [&] {  // L's drain found X held; its barrier comes next
    if (!told.exchange(true)) drain_sleeps.count_down();
  };
  memb_registry reg(o, memb_domain);
  item* x = add_item(reg, 1);
  item* y = add_item(reg, 2);
  x->refs().hold();
  worker_unregister work;
  work.reg = &reg;
  work.obj = y;
  g_worker = &work;
  std::thread leader;
  {
    std::unique_lock held(reg.writer_lock());
    leader = registered_thread([&] { EXPECT_EQ(reg.unregister(*x).objects, 1u); });
    while (reg.combining_waiting() < 1) std::this_thread::yield();  // L leads, blocked for the lock
    call_after_grace_period<flavor::memb, unregister_on_worker>(&work.head);
    // The worker's call is queued behind L (a follower: the seam) or blocked for the lock itself
    // (alone): either way it waits for this thread to let go.
    while (reg.combining_waiting() < 2 && reg.writer_lock().underlying().blocked.load() < 2) std::this_thread::yield();
  }
  drain_sleeps.wait();  // some batch found X held: L's, whose barrier needs the worker to be free
  work.done.wait();     // the worker's call returned: it did not wait for L's batch
  EXPECT_EQ(work.objects, 1u);
  EXPECT_EQ(g_destroyed[2].load(), 1);
  EXPECT_EQ(g_destroyed[1].load(), 0) << "X is still held";
  x->refs().put();
  leader.join();
  EXPECT_EQ(g_destroyed[1].load(), 1);
  g_worker = nullptr;
  memb_domain.barrier();  // call_after_grace_period's requirement: nothing queued at exit
}

}  // namespace
}  // namespace rcubatch::test
