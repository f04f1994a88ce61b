// membership.hpp: members shared by several parents (issue 37 item 6), modelled on Linux's nexthop
// groups. Real memb grace periods and rculfhash indexes; every destroyed object is poisoned and
// kept until the readers stop, so a reader that reaches one counts it. A model (a set of member
// ids per group) says what every group must hold after each delete.
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/membership.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "support/checking_readers.hpp"
#include "support/mid_walk_reader.hpp"
#include "support/misuse_capture.hpp"
#include "support/nexthop_groups.hpp"
#include "support/objects.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

/// Destroyed objects, poisoned and kept until the readers have stopped.
struct graveyard {
  std::vector<std::unique_ptr<nexthop>> nexthops;
  std::vector<std::unique_ptr<nh_group>> groups;
};
inline graveyard* g_dead = nullptr;

struct group_policy : indexed<nh_group, group_ids>,
                      having_members<&nh_group::members, &queue_when_empty<&nh_group::members>> {
  void destroy(nh_group* g) noexcept {
    g->poison.store(kPoison);
    g_dead->groups.emplace_back(g);  // reserved by the test: no allocation here
  }
};
struct nexthop_policy : indexed<nexthop, nexthop_ids> {
  void destroy(nexthop* n) noexcept {
    n->poison.store(kPoison);
    g_dead->nexthops.emplace_back(n);
  }
};
using table = basic_registry<flavor::memb, std::mutex, group_policy, nexthop_policy>;

struct membership : ::testing::Test {
  membership() {
    dead.nexthops.reserve(64);
    dead.groups.reserve(1000);
    g_dead = &dead;
  }
  ~membership() override { g_dead = nullptr; }
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  graveyard dead;
  table t{domain};

  bool join(nh_group& g, nexthop& n) {
    std::scoped_lock lock(t.writer_lock());
    return g.members.join(n);
  }
  nexthop* add_nexthop(std::uint64_t id) {
    auto* n = new nexthop(id);
    EXPECT_TRUE(t.add(*n));
    return n;
  }
  /// Adds a group with these members, joined in this order.
  nh_group* add_group(std::uint64_t id, std::initializer_list<nexthop*> members) {
    auto* g = new nh_group(id);
    EXPECT_TRUE(t.add(*g));
    for (nexthop* n : members) EXPECT_TRUE(join(*g, *n));
    return g;
  }
};

TEST_F(membership, deleting_a_member_leaves_every_group_and_deletes_the_groups_it_leaves_empty_in_the_same_batch) {
  nexthop* a = add_nexthop(1);
  nexthop* b = add_nexthop(2);
  nexthop* c = add_nexthop(3);
  nh_group* g1 = add_group(10, {a, b});
  nh_group* g2 = add_group(20, {b, c});
  EXPECT_EQ(b->groups.size(), 2u);
  // b leaves both groups; neither is left empty.
  batch_stats st = t.unregister(*b);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(g1->members.size(), 1u);
  EXPECT_EQ(member_ids(*g1), (std::set<std::uint64_t>{1}));
  EXPECT_EQ(member_ids(*g2), (std::set<std::uint64_t>{3}));
  // a was g1's last member: g1 goes in a's batch, within two grace periods.
  st = t.unregister(*a);
  EXPECT_EQ(st.objects, 2u);
  EXPECT_LE(st.grace_periods, 2u);
  ASSERT_EQ(dead.groups.size(), 1u);
  EXPECT_EQ(dead.groups[0].get(), g1);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<group_ids>(guard, std::uint64_t{10}), nullptr);
    EXPECT_EQ(t.find<group_ids>(guard, std::uint64_t{20}), g2);
  }
  EXPECT_EQ(t.unregister(*g2).objects, 1u);  // its member c stays
  EXPECT_EQ(t.unregister(*c).objects, 1u);   // in no group now
}

TEST_F(membership, deleting_a_group_leaves_its_members_registered_and_in_their_other_groups) {
  nexthop* a = add_nexthop(1);
  nexthop* b = add_nexthop(2);
  nh_group* g1 = add_group(10, {a, b});
  nh_group* g2 = add_group(20, {b});
  const batch_stats st = t.unregister(*g1);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_TRUE(a->groups.empty());
  EXPECT_EQ(b->groups.size(), 1u);
  EXPECT_EQ(a->state(), reg_state::registered);
  EXPECT_EQ(b->state(), reg_state::registered);
  EXPECT_EQ(member_ids(*g2), (std::set<std::uint64_t>{2}));
  // a, in no group now, goes alone; b takes g2 (left empty) with it.
  EXPECT_EQ(t.unregister(*a).objects, 1u);
  EXPECT_EQ(t.unregister(*b).objects, 2u);
  EXPECT_EQ(dead.groups.size(), 2u);
}

TEST_F(membership, a_group_and_one_of_its_members_deleted_in_one_batch_remove_each_edge_once) {
  // a is in g1 and g2; g1 and a go in one batch. Within a round the lanes run in the registry's
  // policy order, so the scenario runs on two registries: the group's unlist first (t), then the
  // member's (members_first). Every edge is removed once (a second removal: ASan, or the batch's
  // retired_twice), g2 keeps b, and g1, already in the batch, is not queued again.
  basic_registry<flavor::memb, std::mutex, nexthop_policy, group_policy> members_first(domain);
  auto scenario = [&](auto& reg) {
    auto* a = new nexthop(1);
    auto* b = new nexthop(2);
    auto* g1 = new nh_group(10);
    auto* g2 = new nh_group(20);
    for (nexthop* n : {a, b}) ASSERT_TRUE(reg.add(*n));
    for (nh_group* g : {g1, g2}) ASSERT_TRUE(reg.add(*g));
    {
      std::scoped_lock lock(reg.writer_lock());
      for (nh_group* g : {g1, g2})
        for (nexthop* n : {a, b}) ASSERT_TRUE(g->members.join(*n));
    }
    const batch_stats st = reg.unregister_with([&](auto& q) {
      q.push(*g1);
      q.push(*a);
    });
    EXPECT_EQ(st.objects, 2u);
    EXPECT_LE(st.grace_periods, 2u);
    EXPECT_EQ(b->groups.size(), 1u);
    EXPECT_EQ(member_ids(*g2), std::set<std::uint64_t>{2});
    EXPECT_EQ(reg.unregister(*b).objects, 2u);  // g2 left empty
  };
  scenario(t);
  scenario(members_first);
  EXPECT_EQ(dead.groups.size(), 4u);
  EXPECT_EQ(dead.nexthops.size(), 4u);
}

TEST_F(membership, join_refuses_a_member_twice_and_an_object_never_added_and_changes_nothing) {
  nexthop* a = add_nexthop(1);
  nh_group* g = add_group(10, {a});
  misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::report, cap);
  EXPECT_FALSE(join(*g, *a));
  EXPECT_EQ(cap.last_kind, misuse_kind::register_twice);
  nexthop stranger(2);
  EXPECT_FALSE(join(*g, stranger));
  EXPECT_EQ(cap.last_kind, misuse_kind::not_registered);
  EXPECT_EQ(cap.calls, 2);
  EXPECT_EQ(g->members.size(), 1u);
  EXPECT_TRUE(stranger.groups.empty());
  EXPECT_EQ(t.unregister(*a).objects, 2u);  // g left empty
}

/// A group policy that forgot having_members<>: its groups' edges would outlive them.
struct groups_without_members : indexed<nh_group, group_ids> {
  void destroy(nh_group* g) noexcept { group_policy{}.destroy(g); }
};

TEST_F(membership, a_group_with_members_whose_policy_declares_no_having_members_is_refused_before_anything_changes) {
  basic_registry<flavor::memb, std::mutex, groups_without_members, nexthop_policy> forgetful(domain);
  auto* a = new nexthop(1);
  auto* g = new nh_group(10);
  ASSERT_TRUE(forgetful.add(*a));
  ASSERT_TRUE(forgetful.add(*g));
  {
    std::scoped_lock lock(forgetful.writer_lock());
    ASSERT_TRUE(g->members.join(*a));
  }
  misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::report, cap);
  EXPECT_TRUE(forgetful.unregister(*g).refused);
  EXPECT_EQ(cap.last_kind, misuse_kind::not_in_batch);
  EXPECT_EQ(g->state(), reg_state::registered);
  EXPECT_EQ(g->members.size(), 1u);
  EXPECT_TRUE(dead.groups.empty());
  // Torn down with the primitives (this registry refuses g): the member goes (no relation here,
  // so its edge stays in g's list), then g, whose member_list frees the edge at its destruction.
  EXPECT_EQ(forgetful.unregister(*a).objects, 1u);
  std::scoped_lock lock(forgetful.writer_lock());
  unreg_queue<nh_group> q;
  ASSERT_TRUE(q.push(*g));
  EXPECT_EQ(rollback_many(q, forgetful.policy<groups_without_members>(), forgetful.domain()).objects, 1u);
  EXPECT_EQ(dead.groups.size(), 1u);
}

TEST_F(membership, a_reader_standing_on_a_groups_first_member_walks_on_to_the_end_while_the_group_is_deleted) {
  // The reader stops on the first edge of g, inside its read section; the writer deletes g (its
  // unlist unlinks and retires every edge) and then waits in grace period #1 for the reader; the
  // reader, once g is unregistering, walks on: every member is still there, through edges the
  // batch has not freed yet.
  watchdog dog(std::chrono::seconds(60), "a reader mid-walk while its group is deleted");
  const std::vector<nexthop*> nhs{add_nexthop(1), add_nexthop(2), add_nexthop(3)};
  nh_group* g = add_group(10, {nhs[0], nhs[1], nhs[2]});
  mid_walk_reader<flavor::memb> reader(
      [&](const read_guard<flavor::memb>& guard) {
        return t.find<group_ids>(guard, std::uint64_t{10})->members.rcu_range();
      },
      [&] { return g->state() != reg_state::registered; });  // the writer's unlist ran
  EXPECT_EQ(t.unregister(*g).objects, 1u);  // waits for the reader in its grace period
  EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));
  for (nexthop* n : nhs) {
    EXPECT_EQ(n->state(), reg_state::registered);
    EXPECT_TRUE(n->groups.empty());
  }
  EXPECT_EQ(t.unregister_many(nhs).objects, 3u);
}

TEST_F(membership, a_thousand_groups_of_eight_from_64_nexthops_empty_and_go_as_linux_deletes_them_under_two_readers) {
  // 1,000 groups × 8 distinct members drawn from 64 nexthops. 2 readers find groups by id and walk
  // their members throughout. First 100 groups are deleted (their members stay, in their other
  // groups); then the 64 nexthops one by one: after each, every remaining group holds exactly the
  // model's members, a group left with none is gone in the same batch, and no batch costs more
  // than 2 grace periods. The readers never reach a destroyed group or nexthop.
  constexpr std::uint64_t kNexthops = 64;
  constexpr std::uint64_t kGroups = 1000;
  constexpr int kPerGroup = 8;
  constexpr std::uint64_t kGroupsDeletedFirst = 100;
  watchdog dog(std::chrono::seconds(240), "nexthop groups under readers");
  std::mt19937 rng(37);
  std::vector<nexthop*> nhs;
  for (std::uint64_t i = 0; i < kNexthops; ++i) nhs.push_back(add_nexthop(i));
  std::map<std::uint64_t, nh_group*> groups;                 // the live ones
  std::map<std::uint64_t, std::set<std::uint64_t>> model;    // group id → member ids
  std::vector<std::uint64_t> pool(kNexthops);
  for (std::uint64_t i = 0; i < kNexthops; ++i) pool[i] = i;
  for (std::uint64_t gid = 0; gid < kGroups; ++gid) {
    nh_group* g = add_group(1000 + gid, {});
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int k = 0; k < kPerGroup; ++k) {
      ASSERT_TRUE(join(*g, *nhs[pool[k]]));
      model[g->id].insert(pool[k]);
    }
    groups[g->id] = g;
  }
  auto check_all = [&] {
    long wrong = 0;
    for (const auto& [id, g] : groups) {
      if (g->members.size() != model[id].size() || member_ids(*g) != model[id]) ++wrong;
    }
    for (nexthop* n : nhs) {
      std::size_t in = 0;
      for (const auto& [id, ids] : model) in += ids.count(n->id);
      if (n->groups.size() != in) ++wrong;
    }
    return wrong;
  };
  ASSERT_EQ(check_all(), 0);

  // Every other walk is of the group the writer is about to touch (published before each delete),
  // so walks overlap the unlinks; the rest sweep all groups.
  std::atomic<std::uint64_t> hot{1000};
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
    const std::uint64_t id = i % 2 == 0 ? hot.load(std::memory_order_relaxed) : 1000 + i % kGroups;
    const nh_group* g = t.find<group_ids>(guard, id);
    bool poisoned = false;
    int steps = 0;
    if (g != nullptr) {
      poisoned = g->poison.load(std::memory_order_relaxed) != kAlive;
      for (const nexthop& n : g->members.rcu_range()) {
        poisoned |= n.poison.load(std::memory_order_relaxed) != kAlive;
        if (++steps > kPerGroup) break;  // never more members than joined: counted as poisoned
      }
      poisoned |= steps > kPerGroup;
    }
    return lookup_outcome{.missed = false, .poisoned = poisoned};  // groups go: a miss is expected
  });

  long wrong_members = 0;
  long wrong_batches = 0;
  unsigned most_gps = 0;
  // Groups deleted by themselves: their members stay, in their other groups.
  for (std::uint64_t gid = 0; gid < kGroupsDeletedFirst; ++gid) {
    nh_group* g = groups.at(1000 + gid);
    hot.store(g->id, std::memory_order_relaxed);
    const batch_stats st = t.unregister(*g);
    if (st.objects != 1) ++wrong_batches;
    most_gps = std::max(most_gps, static_cast<unsigned>(st.grace_periods));
    groups.erase(1000 + gid);
    model.erase(1000 + gid);
  }
  wrong_members += check_all();
  for (nexthop* n : nhs) {
    if (n->state() != reg_state::registered) ++wrong_batches;
  }
  // Nexthops deleted one by one, in a random order.
  std::vector<nexthop*> order = nhs;
  std::shuffle(order.begin(), order.end(), rng);
  std::size_t groups_deleted_with_members = 0;
  for (nexthop* n : order) {
    std::vector<std::uint64_t> emptied;
    bool hot_set = false;
    for (auto& [id, ids] : model) {
      if (ids.count(n->id) != 0 && !hot_set) {
        hot.store(id, std::memory_order_relaxed);  // a group n is leaving
        hot_set = true;
      }
    }
    for (auto& [id, ids] : model) {
      if (ids.erase(n->id) != 0 && ids.empty()) emptied.push_back(id);
    }
    const batch_stats st = t.unregister(*n);
    if (st.objects != 1 + emptied.size()) ++wrong_batches;
    most_gps = std::max(most_gps, static_cast<unsigned>(st.grace_periods));
    groups_deleted_with_members += emptied.size();
    for (std::uint64_t id : emptied) {
      groups.erase(id);
      model.erase(id);
      read_guard<flavor::memb> guard;
      if (t.find<group_ids>(guard, id) != nullptr) ++wrong_batches;
    }
    nhs.erase(std::find(nhs.begin(), nhs.end(), n));
    wrong_members += check_all();
  }
  const lookup_tally seen = readers.stop();
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_EQ(wrong_members, 0);
  EXPECT_EQ(wrong_batches, 0);
  EXPECT_LE(most_gps, 2u);
  EXPECT_TRUE(groups.empty());
  EXPECT_EQ(groups_deleted_with_members, kGroups - kGroupsDeletedFirst);
  EXPECT_EQ(dead.groups.size(), kGroups);
  EXPECT_EQ(dead.nexthops.size(), kNexthops);
}

}  // namespace
}  // namespace rcubatch::test
