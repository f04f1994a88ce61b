// The ref drain: out-of-order destroy, wake-up on the last put, stall report, rebroadcast.
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

struct tag;
using fake = counting_flavor<tag>;

/// Records destroy order and lets the test wait for the n-th destroy without sleeping.
struct destroy_order {
  std::mutex m;
  std::condition_variable cv;
  std::vector<int> ids;
  void add(int id) {
    std::lock_guard l(m);
    ids.push_back(id);
    cv.notify_all();
  }
  void wait_for_count(std::size_t n) {
    std::unique_lock l(m);
    cv.wait(l, [&] { return ids.size() >= n; });
  }
};

struct ordering_policy {
  static constexpr bool publishes_nothing() { return true; }
  destroy_order* order;
  void destroy(node* n) noexcept {
    order->add(n->id);
    delete n;
  }
  std::string name(const node& n) const { return "dev" + std::to_string(n.id); }
};

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

}  // namespace
}  // namespace rcubatch::test
