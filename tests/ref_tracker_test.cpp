// Tracked references: who holds an object (holders, the stall report), and each misuse by name.
#include <functional>

// ref_tracker.hpp's test seam: called by a plain put() before it decides, under the tracker's
// lock, whether the object has a plain hold to drop. Defined before the header is included; no
// other translation unit of this binary includes it.
namespace tracker_probe {
inline std::function<void()> before_plain_put_check;
}
#define RCUBATCH_REF_TRACKER_TEST_PROBE() \
  (::tracker_probe::before_plain_put_check ? ::tracker_probe::before_plain_put_check() : void())

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using fake = counting_flavor<struct ref_tracker_tag>;

struct device : tracked_registrable<device> {
  explicit device(int i = 0) : id(i) {}
  int id;
};

/// The tracked kind costs only the types that choose it.
struct plain : registrable<plain> {};
static_assert(sizeof(registrable<plain>) == 32, "registrable<T> grew: see the layout in registrable.hpp");
static_assert(sizeof(plain) == 32, "a type that does not choose tracking carries no tracker");

/// The tags and lines of holders(d), oldest first.
std::vector<std::pair<std::string, unsigned>> tags_and_lines(const device& d) {
  std::vector<std::pair<std::string, unsigned>> out;
  for (const ref_holder& h : holders(d)) out.emplace_back(h.tag, h.where.line());
  return out;
}

TEST(ref_tracker, holders_lists_each_tracked_hold_while_held_and_nothing_after_the_last_put) {
  device d;
  ref_token rx = d.refs().hold("rx_queue"); const unsigned rx_line = rcubatch::source_location::current().line();
  ref_token tx = d.refs().hold("tx_queue"); const unsigned tx_line = rcubatch::source_location::current().line();
  d.refs().hold();  // untracked, beside them: counted, not listed
  EXPECT_EQ(d.refs().count(), 3u);
  EXPECT_EQ(tags_and_lines(d), (std::vector<std::pair<std::string, unsigned>>{{"rx_queue", rx_line},
                                                                                {"tx_queue", tx_line}}));
  const std::vector<ref_holder> hs = holders(d);
  EXPECT_EQ(std::string(hs[0].where.file_name()), std::string(rcubatch::source_location::current().file_name()));
  EXPECT_LT(hs[0].serial, hs[1].serial);
  d.refs().put(rx);
  EXPECT_FALSE(rx.holds());
  EXPECT_EQ(tags_and_lines(d), (std::vector<std::pair<std::string, unsigned>>{{"tx_queue", tx_line}}));
  d.refs().put();  // the untracked one
  d.refs().put(tx);
  EXPECT_TRUE(holders(d).empty());
  EXPECT_EQ(d.refs().count(), 0u);
}

TEST(ref_tracker, a_tag_need_not_outlive_its_hold_and_a_long_one_is_cut) {
  device d;
  ref_token t;
  {
    std::string tag(100, 'x');
    t = d.refs().hold(tag);
  }
  ASSERT_EQ(holders(d).size(), 1u);
  EXPECT_EQ(holders(d)[0].tag, std::string(47, 'x'));
  d.refs().put(t);
}

/// The policy of the stall-report test: names the device, deletes it.
struct device_policy {
  static constexpr bool publishes_nothing() { return true; }
  int destroyed = 0;
  void destroy(device* d) noexcept {
    ++destroyed;
    delete d;
  }
  std::string name(const device& d) const { return "dev" + std::to_string(d.id); }
};

TEST(ref_tracker, the_stall_report_names_each_live_holder_by_tag_and_location) {
  fake::reset();
  grace_domain<fake> domain;
  auto* d = new device(7);
  d->mark_registered();
  ref_token rx = d->refs().hold("rx_queue"); const rcubatch::source_location rx_at = rcubatch::source_location::current();
  d->refs().hold();  // and one untracked holder
  std::vector<std::string> lines;
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(0);
  // The reporter plays the holders, letting go once the whole report is out: no sleep needed.
  opts.drain.reporter_fn = [&](std::string_view line) {
    lines.emplace_back(line);
    if (lines.size() == 3) {
      d->refs().put();
      d->refs().put(rx);
    }
  };
  device_policy policy;
  unreg_queue<device> q;
  q.push(*d);
  const batch_stats s = rollback_many(q, policy, domain, opts);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "waiting for dev7 to become free. Usage count = 2");
  EXPECT_EQ(lines[1], "  held by rx_queue at " + std::string(rx_at.file_name()) + ":" + std::to_string(rx_at.line()) +
                          " (" + rx_at.function_name() + ")");
  EXPECT_EQ(lines[2], "  and 1 untracked hold(s)");
  EXPECT_EQ(s.stall_reports, 1u);
  EXPECT_EQ(policy.destroyed, 1);
}

// --- misuse, each by name ------------------------------------------------------------------------

struct tracked_misuse : ::testing::Test {
  misuse_log log;
  scoped_misuse_policy policy{misuse_policy::report, log};
  device d;
};

TEST_F(tracked_misuse, a_token_put_twice_is_diagnosed_and_refused) {
  ref_token a = d.refs().hold("a");
  ref_token b = d.refs().hold("b");
  d.refs().put(a);
  d.refs().put(a);
  ASSERT_EQ(log.kinds, (std::vector<misuse_kind>{misuse_kind::ref_token_put_twice}));
  EXPECT_NE(log.messages[0].find("already put"), std::string::npos);
  EXPECT_EQ(d.refs().count(), 1u) << "b's hold is not taken by a's second put";
  EXPECT_EQ(holders(d).size(), 1u);
  d.refs().put(b);
}

TEST_F(tracked_misuse, a_put_without_its_hold_is_diagnosed_and_refused) {
  device other;
  ref_token mine = d.refs().hold("mine");
  ref_token none;                      // never held
  d.refs().put(none);
  ref_token theirs = other.refs().hold("theirs");
  d.refs().put(theirs);                // taken on another object
  d.refs().put();                      // a plain put while every hold is tracked
  ASSERT_EQ(log.kinds, (std::vector<misuse_kind>(3, misuse_kind::ref_token_unknown)));
  EXPECT_NE(log.messages[1].find("theirs"), std::string::npos);
  EXPECT_EQ(d.refs().count(), 1u);
  EXPECT_EQ(other.refs().count(), 1u);
  d.refs().put(mine);
  other.refs().put(theirs);
  EXPECT_EQ(log.kinds.size(), 3u);
}

TEST_F(tracked_misuse, a_token_destroyed_before_its_put_is_diagnosed_and_its_hold_stays_listed) {
  { ref_token lost = d.refs().hold("lost"); }
  ASSERT_EQ(log.kinds, (std::vector<misuse_kind>{misuse_kind::ref_token_leaked}));
  EXPECT_NE(log.messages[0].find("lost at "), std::string::npos);
  EXPECT_EQ(d.refs().count(), 1u);
  ASSERT_EQ(holders(d).size(), 1u);
  EXPECT_EQ(holders(d)[0].tag, "lost");
  // The leaked hold cannot be put any more; the test lets go through the untracked side door so
  // that `d` can be destroyed (its destructor then reports the hold still listed).
  static_cast<detail::registrable_base&>(d).refs().put();
}

TEST_F(tracked_misuse, an_object_destroyed_with_a_live_tracked_hold_is_diagnosed) {
  auto* doomed = new device;
  ref_token t = doomed->refs().hold("pinned");
  static_cast<detail::registrable_base*>(doomed)->refs().put();  // the count alone would let it go
  delete doomed;
  ASSERT_EQ(log.kinds, (std::vector<misuse_kind>{misuse_kind::ref_token_leaked}));
  EXPECT_NE(log.messages[0].find("object destroyed with 1 tracked hold(s) never put; first: pinned at "),
            std::string::npos);
  EXPECT_TRUE(t.holds());  // its record outlives the object, for the token to free: no report twice
}

TEST(ref_tracker_death, holds_never_put_are_reported_when_the_process_exits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto* d = new device;
        auto* forgotten = new ref_token(d->refs().hold("forgotten"));  // neither put nor destroyed
        (void)forgotten;
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "1 tracked hold\\(s\\) never put when the process exited");
}

// --- tracked and untracked holds of one object, concurrently (issue 34) ------------------------

/// Counts reports from any thread (misuse_log keeps them in order, from one thread only).
struct misuse_counter {
  std::atomic<int> calls{0};
  void operator()(misuse_kind, std::string_view) noexcept { calls.fetch_add(1, std::memory_order_relaxed); }
};

TEST_F(tracked_misuse, a_plain_put_is_taken_when_a_tracked_hold_lands_just_before_its_check) {
  d.refs().hold();  // the plain hold the put drops
  ref_token late;
  tracker_probe::before_plain_put_check = [&] {
    tracker_probe::before_plain_put_check = nullptr;
    late = d.refs().hold("late");  // another holder, between the put's entry and its decision
  };
  d.refs().put();
  tracker_probe::before_plain_put_check = nullptr;
  EXPECT_TRUE(log.kinds.empty()) << (log.messages.empty() ? "" : log.messages[0]);
  EXPECT_EQ(d.refs().count(), 1u) << "the plain hold is dropped; only the tracked one is left";
  ASSERT_TRUE(late.holds());
  d.refs().put(late);
  EXPECT_EQ(d.refs().count(), 0u);
}

TEST(ref_tracker, balanced_plain_and_tracked_holders_on_two_threads_report_nothing_and_leave_no_hold) {
  misuse_counter misuse;
  scoped_misuse_policy policy{misuse_policy::report, misuse};
  device d;
  constexpr int kRounds = 2'000'000;
  watchdog dog(std::chrono::seconds(60), "plain and tracked holders of one object");
  std::latch start(2);
  std::thread plain_holder([&] {
    start.arrive_and_wait();
    for (int i = 0; i < kRounds; ++i) {
      d.refs().hold();
      d.refs().put();
    }
  });
  std::thread tracked_holder([&] {
    start.arrive_and_wait();
    for (int i = 0; i < kRounds; ++i) {
      ref_token t = d.refs().hold("tracked");
      d.refs().put(t);
    }
  });
  plain_holder.join();
  tracked_holder.join();
  EXPECT_EQ(misuse.calls.load(), 0) << "a legitimate plain put was refused as ref_token_unknown";
  EXPECT_EQ(d.refs().count(), 0u) << "a refused put left its hold behind: the object's drain would wait forever";
  EXPECT_TRUE(holders(d).empty());
}

TEST(ref_tracker, untracked_holds_on_an_untracked_type_are_unchanged) {
  plain p;
  p.refs().hold();
  p.refs().put();
  EXPECT_EQ(p.refs().count(), 0u);
}

}  // namespace
}  // namespace rcubatch::test
