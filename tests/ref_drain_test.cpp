// The ref drain: out-of-order destroy, wake-up on the last put, stall report, rebroadcast.
#include <functional>
#include <string_view>

// ref_drain.hpp's test seam: called with "putter inside released" by a last put() between its
// wake-up of the drain and its last touch of the drain, and with "drain waits for putters" by the
// drain while it waits for such puts. Defined before the header is included; no other
// translation unit of this binary includes it.
namespace drain_probe {
inline std::function<void(std::string_view)> at;
}
#define RCUBATCH_REF_DRAIN_TEST_PROBE(where) (::drain_probe::at ? ::drain_probe::at(where) : void())

#include <atomic>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/destroy_order.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

struct tag;
using fake = counting_flavor<tag>;

TEST(ref_drain, destroys_each_object_as_its_last_reference_drops_in_any_order) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  auto nodes = make_registered(3);
  for (node* n : nodes) n->refs().hold();
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  batch_stats stats;
  std::thread writer([&] { stats = rollback_many(q, ordering_policy{&order}, domain); });
  // Release in an order unlike both queue order (the drain's order) and its reverse; wait for each
  // destroy before the next put, so the recorded order can only be the release order.
  std::size_t released = 0;
  for (int id : {1, 0, 2}) {
    nodes[static_cast<std::size_t>(id)]->refs().put();
    order.wait_for_count(++released);
  }
  writer.join();
  EXPECT_EQ(order.ids, (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(stats.objects, 3u);
  // Whether the drain was woken by each put, not a timer, is decided by windows_test.cpp's
  // drain_windows.a_put_after_the_drain_started_waiting_wakes_it (here the put may land first).
  EXPECT_EQ(stats.stall_reports, 0u);
}

std::vector<std::string> g_lines;
node* g_held = nullptr;

TEST(ref_drain, the_drain_does_not_return_while_the_last_putter_is_still_inside_released) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  unreg_queue<node> q;
  node* const held = queue_registered(q, 1)[0];
  held->refs().hold();
  std::mutex m;
  std::condition_variable cv;
  bool drain_waits = false, drain_returned = false;
  bool returned_while_putter_inside = false;
  drain_probe::at = [&](std::string_view where) {
    if (where == "drain waits for putters") {
      std::lock_guard l(m);
      drain_waits = true;
      cv.notify_all();
    } else if (where == "putter inside released") {
      // Park the putter until the drain has either reached its wait for putters or returned.
      std::unique_lock l(m);
      cv.wait(l, [&] { return drain_waits || drain_returned; });
      returned_while_putter_inside = drain_returned;
    }
  };
  watchdog dog(std::chrono::seconds(30), "a drain and its last putter inside released()");
  std::latch drain_sleeps(1);
  std::atomic<bool> hooked{false};
  rollback_options opts;
  opts.drain.before_sleep = [&] {  // the object is marked draining: its last put() tells the drain
    if (!hooked.exchange(true)) drain_sleeps.count_down();
  };
  std::thread writer([&] {
    (void)rollback_many(q, ordering_policy{&order}, domain, opts);
    std::lock_guard l(m);
    drain_returned = true;
    cv.notify_all();
  });
  drain_sleeps.wait();
  held->refs().put();  // the last put: parks inside released() until the drain shows its hand
  writer.join();
  drain_probe::at = nullptr;
  EXPECT_FALSE(returned_while_putter_inside) << "the drain returned (its mutex and condition variable gone) "
                                                "while the putter was still inside released()";
  EXPECT_EQ(order.ids, std::vector<int>{0});
}

TEST(ref_drain, a_held_reference_produces_the_stall_report_naming_the_object) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  auto nodes = make_registered(2);
  nodes[1]->refs().hold();
  g_held = nodes[1];
  g_lines.clear();
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(1);
  // The reporter plays the holder that finally lets go once it is named: no sleep needed.
  opts.drain.reporter = [](std::string_view line) noexcept {
    g_lines.emplace_back(line);
    if (g_held) std::exchange(g_held, nullptr)->refs().put();
  };
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  const batch_stats s = rollback_many(q, ordering_policy{&order}, domain, opts);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0], "waiting for dev1 to become free. Usage count = 1");
  EXPECT_EQ(s.stall_reports, 1u);
  EXPECT_EQ(order.ids, (std::vector<int>{0, 1})) << "the free one went first; the held one after its put";
}

std::vector<node*> g_release_on_first_line;

TEST(ref_drain, an_object_whose_last_put_lands_during_the_report_pass_gets_no_line) {
  // Two held objects in one batch; the reporter, on the first line, drops every hold. The pass
  // then reaches dev1 with its count already 0: it is free, and a "Usage count = 0" line would
  // name a holder that no longer exists (a flaky netdev test caught this line in CI).
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  auto nodes = make_registered(2);
  for (node* n : nodes) n->refs().hold();
  g_release_on_first_line = nodes;
  g_lines.clear();
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(1);
  opts.drain.reporter = [](std::string_view line) noexcept {
    g_lines.emplace_back(line);
    for (node* n : std::exchange(g_release_on_first_line, {})) n->refs().put();
  };
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  const batch_stats s = rollback_many(q, ordering_policy{&order}, domain, opts);
  EXPECT_EQ(g_lines, std::vector<std::string>{"waiting for dev0 to become free. Usage count = 1"});
  EXPECT_EQ(s.stall_reports, 1u);
  EXPECT_EQ(order.ids.size(), 2u);
}

TEST(ref_drain, the_rebroadcast_hook_lets_holders_release) {
  fake::reset();
  grace_domain<fake> domain;
  struct cache_policy {
    static constexpr bool publishes_nothing() { return true; }
    int rebroadcasts = 0;
    void rebroadcast(node& n) noexcept {
      ++rebroadcasts;
      n.refs().put();  // the "dst cache" drops its reference when told the device is going
    }
  } p;
  auto nodes = make_registered(1);
  nodes[0]->refs().hold();
  rollback_options opts;
  opts.drain.rebroadcast_interval = std::chrono::milliseconds(0);
  unreg_queue<node> q;
  q.push(*nodes[0]);
  const batch_stats s = rollback_many(q, p, domain, opts);
  EXPECT_EQ(p.rebroadcasts, 1);
  EXPECT_EQ(s.rebroadcasts, 1u);
  EXPECT_EQ(s.objects, 1u);
}

TEST(ref_drain, objects_with_no_holders_are_destroyed_without_waiting) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  unreg_queue<node> q;
  for (node* n : make_registered(1000)) q.push(*n);
  const batch_stats s = rollback_many(q, ordering_policy{&order}, domain);
  EXPECT_EQ(order.ids.size(), 1000u);
  EXPECT_EQ(s.stall_reports, 0u);
  EXPECT_EQ(s.longest_drain_wait, batch_stats::duration::zero());
}


/// What happened, in order, across the drain's thread and liburcu's callback worker.
struct event_log {
  std::mutex m;
  std::vector<std::string> events;
  void add(std::string e) {
    std::lock_guard l(m);
    events.push_back(std::move(e));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard l(m);
    return events;
  }
};

/// A put deferred to the flavor's call_rcu worker: the kernel's "reference dropped by a queued
/// RCU callback" (a lazy call_rcu once kept `ip netns del` waiting for a whole stall interval).
template <class Flavor>
struct deferred_put {
  rcu_head head{};
  node* target = nullptr;
  event_log* log = nullptr;
  static void run(rcu_head* h) {
    auto* self = reinterpret_cast<deferred_put*>(h);  // head is the first member
    self->log->add("callback");
    self->target->refs().put();
  }
};

/// Node 0 is free: the drain's first pass destroys it, and its destroy queues the deferred put of
/// node 1, the held one. So the put is queued after the drain started and before it first sleeps.
template <class Flavor>
struct queue_put_on_destroy_policy {
  static constexpr bool publishes_nothing() { return true; }
  deferred_put<Flavor>* put;
  void destroy(node* n) noexcept {
    if (n->id == 0) call_after_grace_period<Flavor, &deferred_put<Flavor>::run>(&put->head);
    delete n;
  }
  std::string name(const node& n) const { return "dev" + std::to_string(n.id); }
};

/// Runs the batch of nodes 0 (free) and 1 (held, its last put queued by 0's destroy) with a
/// stall interval of 0: a drain that slept before flushing would report at once. `unblock` is
/// what the stall reporter does so that even a drain that does not flush finishes.
template <class Flavor>
std::vector<std::string> drain_with_a_queued_last_put(grace_domain<Flavor>& domain, batch_stats& stats,
                                                      std::function<void()> unblock) {
  event_log log;
  auto nodes = make_registered(2);
  nodes[1]->refs().hold();
  deferred_put<Flavor> put{{}, nodes[1], &log};
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(0);
  opts.drain.reporter_fn = [&](std::string_view line) {
    log.add("stall: " + std::string(line));
    unblock();
  };
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  watchdog dog(std::chrono::seconds(30), "a drain waiting for a put queued in call_rcu");
  stats = rollback_many(q, queue_put_on_destroy_policy<Flavor>{&put}, domain, opts);
  return log.snapshot();
}

TEST(ref_drain, a_last_put_in_a_queued_callback_is_flushed_before_the_drain_sleeps) {
  // The fake flavor runs queued callbacks only in synchronize or barrier, and no grace period
  // follows the drain's first pass: only the drain's own flush can run the put before it sleeps.
  fake::reset();
  grace_domain<fake> domain;
  batch_stats stats;
  const auto events = drain_with_a_queued_last_put(domain, stats, [] { fake::barrier(); });
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "callback") << "the callback ran before the first stall report";
  EXPECT_EQ(events.size(), 1u);
  EXPECT_EQ(stats.stall_reports, 0u);
  EXPECT_EQ(stats.drain_flushes, 1u);
  EXPECT_EQ(stats.objects, 2u);
}

TEST(ref_drain, a_last_put_in_a_queued_liburcu_call_rcu_callback_is_flushed_before_the_first_stall_report) {
  thread_registration<flavor::memb> registered;
  grace_domain<flavor::memb> domain;
  batch_stats stats;
  // A drain that did not flush would report at once (interval 0) and then wait for the worker.
  const auto events = drain_with_a_queued_last_put(domain, stats, [] {});
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "callback") << "the callback ran before the first stall report";
  EXPECT_EQ(stats.stall_reports, 0u);
  EXPECT_GE(stats.drain_flushes, 1u);
  EXPECT_EQ(stats.objects, 2u);
  domain.barrier();
}

TEST(ref_drain, the_before_sleep_hook_runs_before_the_first_sleep_and_its_put_ends_the_drain) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  event_log log;
  auto nodes = make_registered(1);
  node* cached = nodes[0];
  cached->refs().hold();  // a per-thread cache's reference, dropped when the cache is flushed
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(0);
  opts.drain.before_sleep = [&] {
    log.add("flush");
    if (cached != nullptr) std::exchange(cached, nullptr)->refs().put();
  };
  opts.drain.reporter_fn = [&](std::string_view line) {
    log.add("stall: " + std::string(line));
    if (cached != nullptr) std::exchange(cached, nullptr)->refs().put();
  };
  unreg_queue<node> q;
  q.push(*nodes[0]);
  const batch_stats s = rollback_many(q, ordering_policy{&order}, domain, opts);
  EXPECT_EQ(log.snapshot(), (std::vector<std::string>{"flush"}));
  EXPECT_EQ(s.stall_reports, 0u);
  EXPECT_EQ(fake::barriers(), 1u) << "the barrier ran after the hook, before the rescan";
  EXPECT_EQ(order.ids, (std::vector<int>{0}));
}

TEST(ref_drain, a_drain_with_no_holders_does_not_flush) {
  fake::reset();
  grace_domain<fake> domain;
  destroy_order order;
  bool hooked = false;
  rollback_options opts;
  opts.drain.before_sleep = [&] { hooked = true; };
  unreg_queue<node> q;
  for (node* n : make_registered(3)) q.push(*n);
  const batch_stats s = rollback_many(q, ordering_policy{&order}, domain, opts);
  EXPECT_FALSE(hooked);
  EXPECT_EQ(fake::barriers(), 0u);
  EXPECT_EQ(s.drain_flushes, 0u);
}

}  // namespace
}  // namespace rcubatch::test
