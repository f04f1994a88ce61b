// async_unregister, issue 35: an object submitted to a reclaimer and then reached by another
// batch (a cascade, its owned parent's batch) is taken over by whichever batch runs first; its
// ticket completes only once it is destroyed; a second, legal delete is no misuse; a parent's
// batch never waits for a child's batch that cannot run; one held object does not stop the
// objects submitted after it. Every test that could hang has a watchdog; no sleeps (latches, GPs
// held open by the counting flavor's on_synchronize, holds released by the test).
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <latch>
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

/// Holds the counting flavor's grace periods until open(): the test acts while a batch is inside
/// its GP #1 (writer lock released, notify not run yet), without timing anything.
class gp_gate {
 public:
  gp_gate() { CF::on_synchronize = [this] { hold(); }; }
  ~gp_gate() { CF::on_synchronize = nullptr; }
  gp_gate(const gp_gate&) = delete;
  gp_gate& operator=(const gp_gate&) = delete;
  void wait_entered() { entered_.wait(); }
  void open() {
    {
      std::scoped_lock l(m_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  void hold() {
    std::unique_lock l(m_);
    if (!entered_counted_) {
      entered_counted_ = true;
      entered_.count_down();
    }
    cv_.wait(l, [this] { return open_; });
  }
  std::latch entered_{1};
  std::mutex m_;
  std::condition_variable cv_;
  bool entered_counted_ = false;
  bool open_ = false;
};

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

// --- items 2 and 3: owned children submitted before their parent's batch -------------------------

struct session2;
struct stream2 : registrable<stream2> {
  explicit stream2(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<stream2> by_id;
  owner_hook<session2> owner;
};
struct session2 : registrable<session2> {
  explicit session2(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<session2> by_id;
  owned_list<stream2, &stream2::owner> streams;
  std::atomic<int> alive_streams{0};
};
using session_ids = lfht_index<session2, &session2::by_id, key_member<&session2::id>, flavor::memb>;
using stream_ids = lfht_index<stream2, &stream2::by_id, key_member<&stream2::id>, flavor::memb>;

struct order_log {
  std::atomic<long> destroyed{0};
  std::atomic<long> parent_before_child{0};
};
inline order_log g_order;

struct session_policy : indexed<session2, session_ids>, owning<&session2::streams> {
  void destroy(session2* s) noexcept {
    if (s->alive_streams != 0) g_order.parent_before_child.fetch_add(1);
    g_order.destroyed.fetch_add(1);
    delete s;
  }
};
struct stream_policy : indexed<stream2, stream_ids> {
  void destroy(stream2* st) noexcept {
    if (session2* s = st->owner.parent()) --s->alive_streams;
    g_order.destroyed.fetch_add(1);
    delete st;
  }
};
using table = basic_registry<CF, std::mutex, session_policy, stream_policy>;

struct owned_takeover : takeover {
  owned_takeover() {
    g_order.destroyed = 0;
    g_order.parent_before_child = 0;
  }
  static session2* open(table& t, std::uint64_t id, int streams) {
    auto* s = new session2(id);
    EXPECT_TRUE(t.add(*s));
    for (int i = 0; i < streams; ++i) {
      auto* st = new stream2(id * 8 + static_cast<std::uint64_t>(i));
      st->owner.set_parent(*s);
      EXPECT_TRUE(t.add(*st));
      ++s->alive_streams;
    }
    return s;
  }
};

enum class flavor_kind { background, manual, attached };
const char* name_of(flavor_kind f) {
  return f == flavor_kind::background ? "background" : f == flavor_kind::manual ? "manual" : "attached";
}

/// Item 2: a child submitted, then its parent deleted with registry::try_unregister on the same
/// thread, nobody running the reclaimer: the parent's batch takes the child over.
void a_parent_deleted_after_its_child_was_submitted(flavor_kind f) {
  // 10 s, not 30: on cdc8a2b the background flavor got through after ~20 s (its reclaimer took the
  // writer lock while the parent's drain released it for a barrier), the manual one never.
  watchdog dog(10s, std::string("a parent deleted after its child was submitted: ") + name_of(f));
  registry_options ro;
  ro.hold_lock_through_drain = true;  // the background reclaimer would need the lock its drain holds
  table t(ro);
  async_options o = f == flavor_kind::background ? async_options{} : manual();
  o.combine_registry_unregister = f == flavor_kind::attached;
  {
    async_unregister reclaimer(t, o);
    session2* s = owned_takeover::open(t, 1, 2);
    stream2* first = &*s->streams.begin();
    const submit_result r = reclaimer.try_submit(*first);
    ASSERT_TRUE(r);
    EXPECT_TRUE(first->going_away());
    const unregister_result parent = t.try_unregister(*s);
    EXPECT_EQ(parent.status, unregister_status::unregistered) << name_of(f);
    EXPECT_EQ(g_order.destroyed.load(), 3) << name_of(f) << ": the session and both streams";
    reclaimer.drain();
    EXPECT_TRUE(reclaimer.poll(r.ticket)) << name_of(f);
    EXPECT_EQ(reclaimer.stats().completed, reclaimer.stats().submitted) << name_of(f);
  }
  EXPECT_EQ(g_order.parent_before_child.load(), 0) << name_of(f);
  EXPECT_TRUE(t.index<stream_ids>().empty());
}

TEST_F(owned_takeover, a_parent_deleted_after_its_child_was_submitted_to_a_manual_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(flavor_kind::manual);
}
TEST_F(owned_takeover, a_parent_deleted_after_its_child_was_submitted_to_a_background_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(flavor_kind::background);
}
TEST_F(owned_takeover, a_parent_deleted_after_its_child_was_submitted_to_an_attached_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(flavor_kind::attached);
}

/// Item 3: the parent's batch is running (inside GP #1, before its notify) when another thread
/// submits the parent's child by key: the parent's notify takes the child, and drain returns.
TEST_F(owned_takeover, a_child_submitted_by_key_while_its_parents_batch_runs_does_not_deadlock_drain) {
  watchdog dog(30s, "a child submitted by key while its parent's batch is in GP #1");
  table t;
  async_unregister reclaimer(t, manual());
  session2* s = open(t, 1, 2);
  ASSERT_TRUE(reclaimer.submit(*s));
  submit_result child;
  {
    gp_gate gate;
    std::thread runner([&] {
      thread_registration<flavor::memb> r;
      reclaimer.drain();
    });
    gate.wait_entered();  // the session's batch: unlisted, in GP #1, writer lock released
    child = reclaimer.try_submit<stream_ids>(std::uint64_t{8});
    EXPECT_TRUE(child) << "the child is still indexed: its submit wins";
    gate.open();
    runner.join();
  }
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(child.ticket));
  EXPECT_EQ(g_order.destroyed.load(), 3);
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
}

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
