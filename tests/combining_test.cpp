// The registry's combining gate (combining.hpp, registry_options::combining; issue 35): a caller
// that finds the writer lock free goes alone; callers queued while the lock is held share one
// batch, each with its own outcome; a leader takes at most max_batch calls; a listener detached
// while calls are in flight is told nothing more and the calls complete; a shared batch that
// throws hands its calls back to run alone. The writer lock is held by hand (writer_lock()) to
// make callers queue, and released once the gate says they are queued: no sleeps; the counting
// flavor gives exact grace-period counts.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/combining.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/indexed_item.hpp"
#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;
using CF = counting_flavor<struct combining_test_tag>;

constexpr int kMaxIds = 64;
std::atomic<int> g_destroyed[kMaxIds];
std::function<void(item&)> g_on_destroy;   // the destroy hook's extra work, if set
std::atomic<int> g_refuse_id{-1};          // validate throws for this id

/// No uninit: a batch unlinks nothing after GP #1, so it costs one GP.
struct items : indexed<item, by_id> {
  void validate(item& i) {
    if (i.id == g_refuse_id.load()) throw std::runtime_error("validate refuses it");
  }
  void destroy(item* i) noexcept {
    ++g_destroyed[i->id];
    if (g_on_destroy) g_on_destroy(*i);
    delete i;
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

template <class F>
std::thread registered_thread(F f) {
  return std::thread([f = std::move(f)]() mutable {
    thread_registration<flavor::memb> r;  // the index's flavor
    f();
  });
}

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
  combining() {
    for (auto& d : g_destroyed) d = 0;
  }
  ~combining() override {
    g_on_destroy = nullptr;
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
  g_refuse_id = -1;
  reg.unregister(*b);
}

TEST_F(combining, many_threads_through_the_gate_destroy_each_object_exactly_once) {
  watchdog dog(60s, "eight threads through the gate");
  registry_t reg(combining_on(3));
  constexpr int kThreads = 8, kPer = 6;
  std::vector<item*> all;
  for (int i = 0; i < kThreads * kPer; ++i) all.push_back(add_item(reg, i));
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t)
    callers.push_back(registered_thread([&, t] {
      for (int i = 0; i < kPer; ++i) {
        item* it = all[static_cast<std::size_t>(t * kPer + i)];
        const int id = it->id;
        if (i % 2 == 0) {
          EXPECT_EQ(reg.unregister(*it).objects, 1u);
        } else {
          EXPECT_EQ(reg.try_unregister<by_id>(id).status, unregister_status::unregistered);
        }
        EXPECT_EQ(g_destroyed[id].load(), 1) << "destroyed before its call returned";
      }
    }));
  for (auto& t : callers) t.join();
  for (int i = 0; i < kThreads * kPer; ++i) EXPECT_EQ(g_destroyed[i].load(), 1) << i;
  EXPECT_LE(CF::synchronizes(), static_cast<std::uint64_t>(kThreads * kPer));
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

}  // namespace
}  // namespace rcubatch::test
