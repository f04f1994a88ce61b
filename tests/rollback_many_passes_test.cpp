// rollback_many's passes that are skipped or fused when they have nothing to do (issue 36): each
// shortcut still keeps the guarantee its pass gave — owned children queued and destroyed before
// their parent; holders drained before destroy; destroys in join order, dependents first.
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/destroy_order.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

// --- the notify pass of an owning<> policy: skipped when no object has a child ------------------

struct shelf;
struct box;

/// A grandchild: boxes own items; items own nothing.
struct item : registrable<item> {
  explicit item(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  hlist_hook<item> by_id;
  owner_hook<box> owner;
};
struct box : registrable<box> {
  explicit box(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  hlist_hook<box> by_id;
  owner_hook<shelf> owner;
  owned_list<item, &item::owner> items;
  int alive_items = 0;  // decremented by each item's destroy: 0 when the box's destroy runs
};
struct shelf : registrable<shelf> {
  explicit shelf(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  hlist_hook<shelf> by_id;
  owned_list<box, &box::owner> boxes;
  int alive_boxes = 0;  // decremented by each box's destroy: 0 when the shelf's destroy runs
};
using shelf_ids = hlist_index<shelf, &shelf::by_id, key_member<&shelf::id>, flavor::memb>;
using box_ids = hlist_index<box, &box::by_id, key_member<&box::id>, flavor::memb>;
using item_ids = hlist_index<item, &item::by_id, key_member<&item::id>, flavor::memb>;

/// What the destroy hooks saw, in order: "shelf:1", "box:9", ...; and any parent destroyed
/// while a child of it was not.
struct destroy_log {
  std::vector<std::string> order;
  int parent_before_child = 0;
};
inline destroy_log g_log;

// No notify hook anywhere: the notify pass's only work is queueing owned children.
struct shelf_policy : indexed<shelf, shelf_ids>, owning<&shelf::boxes> {
  void destroy(shelf* s) noexcept {
    if (s->alive_boxes != 0) ++g_log.parent_before_child;
    g_log.order.push_back("shelf:" + std::to_string(s->id));
    delete s;
  }
};
struct box_policy : indexed<box, box_ids>, owning<&box::items> {
  void destroy(box* b) noexcept {
    if (b->alive_items != 0) ++g_log.parent_before_child;
    if (shelf* s = b->owner.parent()) --s->alive_boxes;
    g_log.order.push_back("box:" + std::to_string(b->id));
    delete b;
  }
};
struct item_policy : indexed<item, item_ids> {
  void destroy(item* i) noexcept {
    if (box* b = i->owner.parent()) --b->alive_items;
    g_log.order.push_back("item:" + std::to_string(i->id));
    delete i;
  }
};

using CF = counting_flavor<struct rollback_many_passes_tag>;
using store = basic_registry<CF, std::mutex, shelf_policy, box_policy, item_policy>;

struct notify_skip : counting_test<rollback_many_passes_tag> {
  notify_skip() { g_log = {}; }
  thread_registration<flavor::memb> reg_;  // the indexes' flavor

  /// `count` shelves with ids from `first`, none with a box.
  static std::vector<shelf*> shelves(store& t, std::uint64_t first, std::uint64_t count) {
    std::vector<shelf*> out;
    for (std::uint64_t id = first; id < first + count; ++id) {
      auto* s = new shelf(id);
      EXPECT_TRUE(t.add(*s));
      out.push_back(s);
    }
    return out;
  }
  static box* add_box(store& t, shelf& s, std::uint64_t id) {
    auto* b = new box(id);
    b->owner.set_parent(s);
    EXPECT_TRUE(t.add(*b));
    ++s.alive_boxes;
    return b;
  }
  static item* add_item(store& t, box& b, std::uint64_t id) {
    auto* i = new item(id);
    i->owner.set_parent(b);
    EXPECT_TRUE(t.add(*i));
    ++b.alive_items;
    return i;
  }
};

TEST_F(notify_skip, a_batch_of_parents_without_children_makes_no_notify_pass) {
  store t;
  const std::vector<shelf*> all = shelves(t, 0, 100);
  const batch_stats st = t.unregister_many(all);
  EXPECT_EQ(st.objects, 100u);
  EXPECT_EQ(st.entries_of(phase::notify), 0u) << "no shelf has a box: nothing to queue, no pass";
  EXPECT_EQ(st.dependents_added, 0u);
  EXPECT_EQ(st.rounds, 1u);
  EXPECT_EQ(g_log.order.size(), 100u);
  EXPECT_TRUE(t.index<shelf_ids>().empty());
}

TEST_F(notify_skip, one_parent_with_children_among_childless_ones_still_has_them_queued_and_destroyed_first) {
  store t;
  const std::vector<shelf*> all = shelves(t, 0, 100);
  for (std::uint64_t b = 0; b < 3; ++b) add_box(t, *all[57], 1000 + b);
  CF::reset();
  const batch_stats st = t.unregister_many(all);
  EXPECT_EQ(st.objects, 103u) << "the 100 shelves and shelf 57's 3 boxes";
  EXPECT_EQ(st.dependents_added, 3u);
  EXPECT_EQ(st.entries_of(phase::notify), 1u) << "the shelves' pass; the boxes own no items: none for them";
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(g_log.parent_before_child, 0);
  // Dependents in a later lane go before every object of an earlier lane (ref_drain.hpp, 3).
  ASSERT_EQ(g_log.order.size(), 103u);
  EXPECT_EQ(g_log.order[0], "box:1000");
  EXPECT_EQ(g_log.order[2], "box:1002");
  EXPECT_EQ(g_log.order[3], "shelf:0");
  EXPECT_TRUE(t.index<box_ids>().empty());
}

TEST_F(notify_skip, a_grandchild_under_one_child_makes_a_second_round_that_still_goes_first) {
  // Shelf 5's box 500 holds two items; box 501 holds none. Round 1 queues the boxes (shelf 5 has
  // children), round 2 the items (box 500 has some): both passes run, and every child goes first.
  store t;
  const std::vector<shelf*> all = shelves(t, 0, 10);
  box* full = add_box(t, *all[5], 500);
  add_box(t, *all[5], 501);
  add_item(t, *full, 7000);
  add_item(t, *full, 7001);
  const batch_stats st = t.unregister_many(all);
  EXPECT_EQ(st.objects, 14u);
  EXPECT_EQ(st.rounds, 3u);
  EXPECT_EQ(st.entries_of(phase::notify), 2u) << "the shelves' pass and the boxes' pass";
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(g_log.parent_before_child, 0);
  ASSERT_EQ(g_log.order.size(), 14u);
  EXPECT_EQ(g_log.order[0], "item:7000");
  EXPECT_EQ(g_log.order[1], "item:7001");
  EXPECT_TRUE(t.index<item_ids>().empty());
}

TEST_F(notify_skip, a_child_unlisted_before_its_parent_in_the_same_batch_still_goes_first) {
  // The box's own batch entry (queued by the caller, in the same batch as its shelf, a later
  // lane) leaves the shelf's list at its unlist. The shelf is unlisted first (lane order), with
  // the box still in its list: its notify pass runs and finds the box already in the batch.
  store t;
  const std::vector<shelf*> all = shelves(t, 0, 4);
  box* b = add_box(t, *all[2], 200);
  CF::reset();
  const batch_stats st = t.unregister_with([&](auto& q) {
    for (shelf* s : all) q.push(*s);
    q.push(*b);
  });
  EXPECT_EQ(st.objects, 5u);
  EXPECT_EQ(st.dependents_added, 0u) << "the box was in the batch already";
  EXPECT_EQ(st.grace_periods, 1u) << "everything was unlinked before the first";
  EXPECT_EQ(g_log.parent_before_child, 0);
  ASSERT_EQ(g_log.order.size(), 5u);
  EXPECT_EQ(g_log.order[0], "box:200");
}

// --- the drain's walk: the free objects destroyed as it meets them, the held ones kept for later -

struct drain_walk : counting_test<struct drain_walk_tag> {};

TEST_F(drain_walk, held_objects_among_free_ones_wait_for_their_put_while_the_free_ones_go_at_once_in_join_order) {
  watchdog dog(std::chrono::seconds(30), "a drain whose held objects are put after its first walk");
  destroy_order order;
  auto nodes = make_registered(6);
  nodes[1]->refs().hold();
  nodes[4]->refs().hold();
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  batch_stats stats;
  std::thread writer([&] { stats = rollback_many(q, ordering_policy{&order}, domain); });
  EXPECT_EQ(order.wait_for_count(4), (std::vector<int>{0, 2, 3, 5})) << "the free ones, in join order";
  EXPECT_EQ(nodes[1]->state(), reg_state::unregistered) << "held: not destroyed, still readable";
  nodes[4]->refs().put();
  EXPECT_EQ(order.wait_for_count(5).back(), 4);
  nodes[1]->refs().put();
  EXPECT_EQ(order.wait_for_count(6).back(), 1);
  writer.join();
  EXPECT_EQ(stats.objects, 6u);
  EXPECT_TRUE(q.empty());
}

TEST_F(drain_walk, a_parent_before_its_dependent_in_one_lane_is_destroyed_after_it_in_the_rescan) {
  // Node 1 queues node 9 from its notify: 9 joins after it (join order), holds a reference on it
  // until 9's destroy returns; the walk meets 1 first, finds it held, and keeps it for the rescan.
  watchdog dog(std::chrono::seconds(30), "a parent held by its dependent's edge through the drain's walk");
  std::vector<std::string> log;
  auto nodes = make_registered(3);
  auto dep = make_registered(1, 9);
  nodes[1]->dependents = {dep[0]};
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  const batch_stats s = rollback_many(q, recording_policy{.log = &log}, domain);
  std::vector<std::string> destroys;
  for (const std::string& line : log)
    if (line.rfind("destroy:", 0) == 0) destroys.push_back(line);
  EXPECT_EQ(destroys, (std::vector<std::string>{"destroy:0", "destroy:2", "destroy:9", "destroy:1"}));
  EXPECT_EQ(s.objects, 4u);
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_TRUE(q.empty());
}

TEST_F(drain_walk, a_drain_in_chunks_pauses_between_every_two_objects_and_never_after_the_last) {
  // The pause a deferred destroy runs between chunks (a quiescent state under qsbr), driven
  // through the engine as the registry's flush_job drives it: the drain has a walk of its own
  // for batches without chunks, and this one must not take it.
  std::vector<std::string> log;
  auto nodes = make_registered(7);
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  recording_policy policy{.log = &log};
  using spec = detail::lane_ref<node, recording_policy>;
  spec lane{q, policy};
  const rollback_options opts{};  // the engine keeps a reference to it until the batch ends
  detail::engine_for<fake, spec> engine(domain, opts, detail::batch_context{}, lane);
  ASSERT_TRUE(engine.run_through_grace_periods());
  const auto pause = [](void* arg) noexcept { static_cast<std::vector<std::string>*>(arg)->push_back("pause"); };
  const batch_stats s = engine.run_after_grace_periods(false, detail::destroy_pause{2, pause, &log});
  std::vector<std::string> drain;
  for (const std::string& line : log)
    if (line == "pause" || line.rfind("destroy:", 0) == 0) drain.push_back(line);
  EXPECT_EQ(drain, (std::vector<std::string>{"destroy:0", "destroy:1", "pause", "destroy:2", "destroy:3", "pause",
                                             "destroy:4", "destroy:5", "pause", "destroy:6"}));
  EXPECT_EQ(s.objects, 7u);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace rcubatch::test
