// The rows of docs/guide.md's interaction table ("Features together") that no other test shows:
// the deferred flush (registry::unregister_many_deferred) beside an attached async_unregister and
// on tracked and sharded holds; memberships (membership.hpp) across a replace; a chunked unlist
// (rollback_options::unlist_chunk) met by replaces and add_under between two of its chunks. Real
// memb grace periods and rculfhash indexes; every wait that could hang is under a watchdog; each
// test asserts what the row says, and names it.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/deferred_destroy.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/membership.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/ref_tracker.hpp>
#include <rcubatch/registry.hpp>
#include <rcubatch/sharded_refs.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <latch>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "support/indexed_item.hpp"
#include "support/mid_walk_reader.hpp"
#include "support/nexthop_groups.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;

// ---- unregister_many_deferred × an attached async_unregister ----

std::atomic<int> g_item_destroyed[16];
struct items : indexed<item, by_id> {
  void destroy(item* i) noexcept {
    g_item_destroyed[i->id].fetch_add(1);
    delete i;
  }
};
using item_table = basic_registry<flavor::memb, std::mutex, items>;

TEST(interaction_rows, a_deferred_flush_beside_an_attached_reclaimer_is_its_own_batch_and_refuses_an_object_submitted_there) {
  // Row "unregister_many_deferred × attached async_unregister": the flush never goes through the
  // reclaimer (it is one batch already); an object already submitted to the reclaimer is misuse in
  // it (queued_in_other_queue: one object, one batch), diagnosed before anything changed; the
  // reclaimer's ticket for that object completes by its own batch, each object destroyed once.
  for (auto& d : g_item_destroyed) d = 0;
  watchdog dog(60s, "a deferred flush beside an attached reclaimer");
  thread_registration<flavor::memb> self;
  item_table reg;
  deferred_destroy flusher;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000,
                                                .max_age = std::chrono::hours(1),
                                                .combine_registry_unregister = true});
  std::vector<item*> all = add_items(reg, 10);
  const unregister_ticket submitted = reclaimer.submit(*all[3]);  // pending: no batch due by count or age
  ASSERT_TRUE(static_cast<bool>(submitted));

  try {
    (void)reg.unregister_many_deferred(all, flusher);
    ADD_FAILURE() << "an object already submitted to the reclaimer was taken into the flush";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::queued_in_other_queue);
  }
  for (int id : {0, 1, 2, 4, 9}) EXPECT_TRUE(findable(reg, id)) << "nothing changed: " << id << " still published";
  EXPECT_EQ(reg.counters().batches.batches, 0u) << "no batch ran";

  std::vector<item*> others;
  for (item* x : all)
    if (x != all[3]) others.push_back(x);
  flush_ticket flushed = reg.unregister_many_deferred(others, flusher);
  EXPECT_EQ(flushed.wait().objects, 9u);
  EXPECT_EQ(reclaimer.stats().submitted, 1u) << "the flush did not go through the attached reclaimer";
  EXPECT_EQ(g_item_destroyed[3].load(), 0) << "the submitted object waits for the reclaimer's batch";
  reclaimer.wait(submitted);
  EXPECT_EQ(g_item_destroyed[3].load(), 1);

  item* extra = add_item(reg, 10);
  EXPECT_EQ(reg.unregister(*extra).objects, 1u);
  EXPECT_EQ(reclaimer.stats().submitted, 2u) << "registry::unregister does go through it (attached)";
  for (int id = 0; id <= 10; ++id) EXPECT_EQ(g_item_destroyed[id].load(), 1) << "object " << id << " destroyed once";
}

// ---- unregister_many_deferred × tracked and sharded holds ----

struct tracked_node : tracked_registrable<tracked_node> {
  explicit tracked_node(int i) : id(i) {}
  int id;
  lfht_hook<tracked_node> by_id;
};
struct sharded_node : sharded_registrable<sharded_node> {
  explicit sharded_node(int i) : id(i) {}
  int id;
  lfht_hook<sharded_node> by_id;
};
using tracked_ids = lfht_index<tracked_node, &tracked_node::by_id, key_member<&tracked_node::id>>;
using sharded_ids = lfht_index<sharded_node, &sharded_node::by_id, key_member<&sharded_node::id>>;

/// Destroys, counted; whether one ran on the caller's thread; each counted down on `each`, if set.
struct destroy_log {
  std::atomic<int> destroyed{0};
  std::atomic<bool> on_caller{false};
  std::thread::id caller;
  std::atomic<std::latch*> each{nullptr};
  void on_destroy() noexcept {
    if (std::this_thread::get_id() == caller) on_caller = true;
    destroyed.fetch_add(1);
    if (std::latch* l = each.load()) l->count_down();
  }
};
inline destroy_log* g_holds_log = nullptr;

struct tracked_policy : indexed<tracked_node, tracked_ids> {
  void destroy(tracked_node* n) noexcept {
    g_holds_log->on_destroy();
    delete n;
  }
};
struct sharded_policy : indexed<sharded_node, sharded_ids> {
  void destroy(sharded_node* n) noexcept {
    g_holds_log->on_destroy();
    delete n;
  }
};
using holds_table = basic_registry<flavor::memb, std::mutex, tracked_policy, sharded_policy>;

TEST(interaction_rows, a_deferred_flush_of_held_tracked_and_sharded_objects_runs_the_sharded_counts_down_at_once_and_destroys_both_once_let_go) {
  // Rows "unregister_many_deferred × tracked holds" and "× sharded holds": the call returns with
  // every object unpublished and the sharded counts already run down to their single atomic (at
  // unlist, on the caller's thread, under the lock); the held ones wait on the reclaimer's thread
  // for their holders (tracked and plain alike), the others are destroyed meanwhile; the tickets
  // complete once the holders let go. No destroy runs on the caller's thread.
  watchdog dog(60s, "a deferred flush of held tracked and sharded objects");
  thread_registration<flavor::memb> self;
  std::latch six(6);
  destroy_log log;
  log.caller = std::this_thread::get_id();
  log.each = &six;
  g_holds_log = &log;
  holds_table reg;
  // One reclaimer per flush: a reclaimer finishes its batches in order, so the sharded flush
  // would wait behind the tracked one's held object.
  deferred_destroy tracked_flusher, sharded_flusher;
  std::vector<tracked_node*> tracked;
  std::vector<sharded_node*> sharded;
  for (int i = 0; i < 4; ++i) {
    tracked.push_back(new tracked_node(i));
    ASSERT_TRUE(reg.add(*tracked.back()));
    sharded.push_back(new sharded_node(i));
    ASSERT_TRUE(reg.add(*sharded.back()));
  }
  ref_token token = tracked[1]->refs().hold("interaction_rows: the tracked holder");
  sharded[2]->refs().hold();
  EXPECT_FALSE(sharded[2]->refs().switched()) << "sharded while registered";

  flush_ticket tracked_flush = reg.unregister_many_deferred(tracked, tracked_flusher);
  flush_ticket sharded_flush = reg.unregister_many_deferred(sharded, sharded_flusher);
  // Only the held objects may be touched now: the others may be destroyed already.
  EXPECT_TRUE(sharded[2]->refs().switched()) << "run down at unlist, before the call returned";
  EXPECT_EQ(sharded[2]->refs().count(), 1u) << "the holders' sum, in the single atomic";
  EXPECT_EQ(tracked[1]->refs().count(), 1u);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(reg.find<tracked_ids>(guard, 1), nullptr) << "unpublished when the call returns";
    EXPECT_EQ(reg.find<sharded_ids>(guard, 2), nullptr);
  }
  six.wait();  // every object but the two held ones
  EXPECT_FALSE(tracked_flush.ready()) << "the tracked holder has not let go";
  EXPECT_FALSE(sharded_flush.ready()) << "the sharded holder has not let go";
  EXPECT_EQ(log.destroyed.load(), 6);
  log.each = nullptr;  // the two left are destroyed only after the puts below
  tracked[1]->refs().put(token);
  sharded[2]->refs().put();
  EXPECT_EQ(tracked_flush.wait().objects, 4u);
  EXPECT_EQ(sharded_flush.wait().objects, 4u);
  EXPECT_EQ(log.destroyed.load(), 8);
  EXPECT_FALSE(log.on_caller.load()) << "every destroy ran on the reclaimer's thread";
  g_holds_log = nullptr;
}

// ---- memberships × replace ----

struct group_policy : indexed<nh_group, group_ids>,
                      having_members<&nh_group::members, &queue_when_empty<&nh_group::members>> {};
using fib_table = basic_registry<flavor::memb, std::mutex, group_policy, indexed<nexthop, nexthop_ids>>;

TEST(interaction_rows, a_replace_drops_the_memberships_of_the_old_version_and_a_group_it_leaves_empty_goes_in_its_batch) {
  // Row "memberships × replace": replacing a member tears the old version down as a delete does —
  // its edges leave every group (readers stop finding it there), each group it left gets the hook
  // (queue_when_empty: a group left with no member goes in the replace's batch) — and the new
  // version is in no group. Replacing a group drops its edges: the new group has no members, the
  // members stay registered. (membership.hpp: join again under the writer lock.)
  thread_registration<flavor::memb> self;
  fib_table t;
  auto* n1 = new nexthop(1);
  auto* n2 = new nexthop(2);
  auto* g10 = new nh_group(10);
  auto* g20 = new nh_group(20);
  for (auto* n : {n1, n2}) ASSERT_TRUE(t.add(*n));
  for (auto* g : {g10, g20}) ASSERT_TRUE(t.add(*g));
  {
    std::scoped_lock lock(t.writer_lock());
    ASSERT_TRUE(g10->members.join(*n1));
    ASSERT_TRUE(g10->members.join(*n2));
    ASSERT_TRUE(g20->members.join(*n1));
  }

  auto* n1b = new nexthop(1);
  const replace_result member_replaced = t.replace(*n1, *n1b);
  ASSERT_TRUE(member_replaced);
  EXPECT_EQ(member_replaced.stats.objects, 2u) << "the old nexthop and group 20, which it left empty";
  EXPECT_EQ(member_ids(*g10), (std::set<std::uint64_t>{2})) << "the old version left group 10";
  EXPECT_TRUE(n1b->groups.empty()) << "the new version joined nothing";
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<group_ids>(guard, std::uint64_t{20}), nullptr) << "group 20 went with its last member";
    EXPECT_EQ(t.find<nexthop_ids>(guard, std::uint64_t{1}), n1b);
  }

  auto* g10b = new nh_group(10);
  const replace_result group_replaced = t.replace(*g10, *g10b);
  ASSERT_TRUE(group_replaced);
  EXPECT_EQ(group_replaced.stats.objects, 1u) << "the old group alone: its members stay";
  EXPECT_TRUE(g10b->members.empty());
  EXPECT_EQ(member_ids(*g10b), (std::set<std::uint64_t>{}));
  EXPECT_TRUE(n2->groups.empty()) << "the old group's edge left its member";
  EXPECT_EQ(n2->state(), reg_state::registered);
  {
    std::scoped_lock lock(t.writer_lock());
    EXPECT_TRUE(g10b->members.join(*n2)) << "joining again is the way back";
  }
  EXPECT_EQ(member_ids(*g10b), (std::set<std::uint64_t>{2}));
  const std::vector<nh_group*> groups{g10b};
  EXPECT_EQ(t.unregister_many(groups).objects, 1u);
  const std::vector<nexthop*> nexthops{n1b, n2};
  EXPECT_EQ(t.unregister_many(nexthops).objects, 2u);
}

// ---- a chunked unlist × replace and add_under between two chunks ----

struct box;
struct node : registrable<node> {
  explicit node(int i) : id(i) {}
  int id;
  lfht_hook<node> by_id;
  owner_hook<box> owner;
};
struct box : registrable<box> {
  explicit box(int i) : id(i) {}
  int id;
  lfht_hook<box> by_id;
  owned_list<node, &node::owner> nodes;
};
using node_ids = lfht_index<node, &node::by_id, key_member<&node::id>>;
using box_ids = lfht_index<box, &box::by_id, key_member<&box::id>>;

/// The boxes' unlist, counted: after each, it waits until a writer waits for the lock (but after
/// the last), so that writer gets in exactly between that chunk (of one box) and the next.
struct chunk_gate {
  std::atomic<int> unlisted{0};
  int hold_until = 0;  // counts 1 .. hold_until - 1 wait for a writer
  const void* registry = nullptr;
  bool (*writer_waiting)(const void*) = nullptr;
};
inline chunk_gate* g_gate = nullptr;

struct node_policy : indexed<node, node_ids> {};
struct box_policy : indexed<box, box_ids>, owning<&box::nodes> {
  using base = indexed<box, box_ids>;
  void unlist(box& b) noexcept {
    base::unlist(b);
    if (g_gate == nullptr) return;
    const int count = g_gate->unlisted.fetch_add(1) + 1;
    g_gate->unlisted.notify_all();
    if (count < g_gate->hold_until)
      while (!g_gate->writer_waiting(g_gate->registry)) std::this_thread::yield();
  }
};
using box_table = basic_registry<flavor::memb, std::mutex, node_policy, box_policy>;

TEST(interaction_rows, replaces_and_add_under_between_two_chunks_of_an_unlist_meet_its_objects_as_going_away) {
  // Rows "chunked unlist × replace" and "× add_under": 9 boxes (2 nodes each) unregistered in one
  // batch unlisted one box per chunk; a writer gets in between each two chunks, once each:
  //   - a box of a later chunk (box 8, still found): try_replace by key (keep_children) and
  //     replace by object return already_unregistering, nothing changed; a replace of its child by
  //     key too (its owner is going away); add_under that box returns parent_gone;
  //   - a box of an earlier chunk (box 0, unlisted): try_replace not_found, add_under parent_gone;
  //   - a box outside the batch (box 100): add_under adds, replace keeping children replaces (its
  //     own batch, between two chunks of the other).
  // The chunked batch is still one batch: 27 objects, ≤ 2 grace periods.
  watchdog dog(60s, "a writer between the chunks of an unlist");
  thread_registration<flavor::memb> self;
  registry_options opts;
  opts.rollback.unlist_chunk = 1;
  box_table t(opts);
  std::vector<box*> doomed;
  auto add_box = [&](int id) {
    auto* b = new box(id);
    EXPECT_TRUE(t.add(*b));
    for (int k = 1; k <= 2; ++k) {
      auto* n = new node(id * 10 + k);
      n->owner.set_parent(*b);
      EXPECT_TRUE(t.add(*n));
    }
    return b;
  };
  for (int id = 0; id <= 8; ++id) doomed.push_back(add_box(id));
  box* outside = add_box(100);
  chunk_gate gate;
  gate.hold_until = 9;  // a writer between chunks 1|2, ..., 8|9
  gate.registry = &t;
  gate.writer_waiting = [](const void* r) {
    return const_cast<box_table*>(static_cast<const box_table*>(r))->writer_lock().contended();
  };
  g_gate = &gate;

  // What the writer got between chunk k and k + 1 (k = 1 .. 8); -1: it threw.
  int got[9] = {};
  auto* fresh8 = new box(8);
  auto* fresh8_by_object = new box(8);
  auto* fresh81 = new node(81);
  auto* under8 = new node(500);
  auto* under100 = new node(501);
  auto* fresh100 = new box(100);
  auto* fresh0 = new box(0);
  auto* under0 = new node(502);
  std::thread writer([&] {
    thread_registration<flavor::memb> registered;
    const auto between = [&](int k, auto op) {
      for (int seen = gate.unlisted.load(); seen < k; seen = gate.unlisted.load()) gate.unlisted.wait(seen);
      try {
        got[k] = static_cast<int>(op());
      } catch (...) {
        got[k] = -1;
      }
    };
    between(1, [&] { return t.try_replace<box_ids>(8, *fresh8, keep_children).status; });
    between(2, [&] { return t.replace(*doomed[8], *fresh8_by_object).status; });
    between(3, [&] { return t.try_replace<node_ids>(81, *fresh81).status; });
    between(4, [&] { return t.add_under<box_ids>(8, *under8).status; });
    between(5, [&] { return t.add_under<box_ids>(100, *under100).status; });
    between(6, [&] { return t.try_replace<box_ids>(0, *fresh0).status; });
    between(7, [&] { return t.add_under<box_ids>(0, *under0).status; });
    // Last: a batch of its own, whose grace period may let the chunked batch take the lock back.
    between(8, [&] { return t.replace(*outside, *fresh100, keep_children).status; });
  });
  const batch_stats st = t.unregister_many(doomed);
  writer.join();
  g_gate = nullptr;

  EXPECT_EQ(got[1], static_cast<int>(replace_status::already_unregistering)) << "try_replace of a later chunk's box";
  EXPECT_EQ(got[2], static_cast<int>(replace_status::already_unregistering)) << "replace by object of it";
  EXPECT_EQ(got[3], static_cast<int>(replace_status::already_unregistering)) << "try_replace of its child";
  EXPECT_EQ(got[4], static_cast<int>(add_status::parent_gone)) << "add_under a later chunk's box";
  EXPECT_EQ(got[5], static_cast<int>(add_status::added)) << "add_under a box outside the batch";
  EXPECT_EQ(got[6], static_cast<int>(replace_status::not_found)) << "try_replace of an earlier chunk's box";
  EXPECT_EQ(got[7], static_cast<int>(add_status::parent_gone)) << "add_under an earlier chunk's box";
  EXPECT_EQ(got[8], static_cast<int>(replace_status::replaced)) << "replace keeping children of a box outside it";
  EXPECT_EQ(st.objects, 27u) << "9 boxes and their 18 nodes: nothing the writer tried joined or left the batch";
  EXPECT_LE(st.grace_periods, 2u);
  EXPECT_EQ(fresh8->state(), reg_state::uninitialized) << "nothing published by the refused calls";
  EXPECT_EQ(fresh8_by_object->state(), reg_state::uninitialized);
  EXPECT_EQ(fresh81->state(), reg_state::uninitialized);
  EXPECT_EQ(under8->state(), reg_state::uninitialized);
  EXPECT_EQ(fresh0->state(), reg_state::uninitialized);
  EXPECT_EQ(under0->state(), reg_state::uninitialized);
  for (node* unpublished : {fresh81, under8, under0}) delete unpublished;
  for (box* unpublished : {fresh8, fresh8_by_object, fresh0}) delete unpublished;
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<box_ids>(guard, 8), nullptr);
    EXPECT_EQ(t.find<box_ids>(guard, 100), fresh100);
    EXPECT_EQ(t.find<node_ids>(guard, 501), under100);
  }
  EXPECT_EQ(fresh100->nodes.size(), 3u) << "box 100's two nodes moved to its new version, and the one added under it";
  for (const node& n : fresh100->nodes) EXPECT_EQ(n.owner.parent(), fresh100);
  EXPECT_EQ(t.unregister(*fresh100).objects, 4u);
}

// ---- combining × the deferred flush, × hold_lock_through_drain ----

/// A combining row's setup: a registered thread, its own domain, and options whose callers
/// combine (combining.hpp) and whose drain, the first time it is about to sleep on a held object,
/// runs `first_sleep` (if set) and opens drain_sleeps.
struct combining_row {
  combining_row() {
    for (auto& d : g_item_destroyed) d = 0;
    options.combining.enabled = true;
    options.rollback.drain.before_sleep = [this] {
      if (told.exchange(true)) return;
      if (first_sleep) first_sleep();
      drain_sleeps.count_down();
    };
  }
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  std::latch drain_sleeps{1};
  std::atomic<bool> told{false};
  std::function<void()> first_sleep;
  registry_options options;
};

TEST(interaction_rows, a_gate_caller_beside_a_deferred_flush_draining_a_held_object_goes_alone_and_finds_that_object_going_away) {
  // Row "combining × deferred flush": the flush is one batch of its own (never through the
  // gate); its drain runs on the flusher's thread without the writer lock, so a gate caller
  // meanwhile finds the lock free and goes alone at once; try_unregister of the flushed object
  // still held is a lost race (already_unregistering), nothing changed.
  watchdog dog(60s, "a gate caller beside a deferred flush draining a held object");
  combining_row row;
  item_table reg(row.options, row.domain);
  struct alone_listener final : combining_listener {
    void combined_batch_ran(const combined_batch_report& r) noexcept override { alone = r.alone && r.calls == 1; }
    bool alone = false;
  } heard;
  ASSERT_TRUE(reg.attach_combining_listener(heard));
  deferred_destroy flusher;
  std::vector<item*> flushed_items = add_items(reg, 3);  // ids 0..2
  item* other = add_item(reg, 3);
  flushed_items[1]->refs().hold();
  flush_ticket flushed = reg.unregister_many_deferred(flushed_items, flusher);
  row.drain_sleeps.wait();  // the flusher's drain waits for object 1
  unregister_result lost;
  EXPECT_NO_THROW(lost = reg.try_unregister(*flushed_items[1])) << "a lost race is a result, not misuse";
  EXPECT_EQ(lost.status, unregister_status::already_unregistering);
  const batch_stats st = reg.unregister(*other);  // the lock is free: alone, at once
  EXPECT_EQ(st.objects, 1u);
  EXPECT_TRUE(heard.alone) << "its batch went alone: the flush's drain does not hold the writer lock";
  EXPECT_EQ(g_item_destroyed[3].load(), 1);
  EXPECT_EQ(g_item_destroyed[1].load(), 0) << "still held";
  reg.detach_combining_listener(heard);
  flushed_items[1]->refs().put();
  EXPECT_EQ(flushed.wait().objects, 3u);
  for (int id = 0; id <= 3; ++id) EXPECT_EQ(g_item_destroyed[id].load(), 1) << "object " << id << " destroyed once";
}

TEST(interaction_rows, with_hold_lock_through_drain_a_shared_batch_keeps_the_writer_lock_while_its_followers_wait_for_a_held_object) {
  // Row "combining × hold_lock_through_drain": callers queued behind the test's hold of the
  // writer lock share one batch; its drain (on the leader's thread) keeps the lock while it waits
  // for a held object, and the follower's call returns only once that object is let go (its
  // batch ended). Nothing needs the follower meanwhile: no deadlock.
  watchdog dog(60s, "hold_lock_through_drain and a shared batch waiting for a held object");
  combining_row row;
  row.options.hold_lock_through_drain = true;
  item_table* table = nullptr;
  std::atomic<bool> lock_held_in_drain{false};
  row.first_sleep = [&] { lock_held_in_drain = table->writer_lock().held_by_caller(); };
  item_table reg(row.options, row.domain);
  table = &reg;
  item* held = add_item(reg, 1);
  item* free_one = add_item(reg, 2);
  held->refs().hold();
  std::atomic<bool> follower_returned{false};
  std::thread leader, follower;
  const auto caller = [](item_table& r, item* it, std::atomic<bool>* returned) {
    return std::thread([&r, it, returned] {
      thread_registration<flavor::memb> registered;
      EXPECT_EQ(r.unregister(*it).objects, 1u);
      if (returned != nullptr) *returned = true;
    });
  };
  {
    std::unique_lock lock(reg.writer_lock());
    leader = caller(reg, held, nullptr);
    while (reg.combining_waiting() < 1) std::this_thread::yield();
    follower = caller(reg, free_one, &follower_returned);
    while (reg.combining_waiting() < 2) std::this_thread::yield();
  }
  row.drain_sleeps.wait();
  EXPECT_TRUE(lock_held_in_drain.load()) << "hold_lock_through_drain: the shared batch's drain keeps the lock";
  EXPECT_FALSE(follower_returned.load()) << "the follower's batch has not ended: object 1 is held";
  EXPECT_EQ(g_item_destroyed[1].load(), 0);
  held->refs().put();
  leader.join();
  follower.join();
  EXPECT_TRUE(follower_returned.load());
  EXPECT_EQ(g_item_destroyed[1].load(), 1);
  EXPECT_EQ(g_item_destroyed[2].load(), 1);
}

}  // namespace
}  // namespace rcubatch::test
