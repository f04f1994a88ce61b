// owned.hpp, the readers' side (issue 37 item 5): owned_list::rcu_range walked inside a read_guard
// while a writer adds children and deletes them by batch, and while it replaces the parent keeping
// its children (owned_list::splice_back), with real memb grace periods. Every destroyed child and
// session is poisoned and kept (freed after the readers stop), so a reader that reaches one counts
// it; each walk's length is bounded by the children ever added (a walk that loops would hang, and
// the watchdog fails it).
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "support/checking_readers.hpp"
#include "support/mid_walk_reader.hpp"
#include "support/objects.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

struct session;
struct stream : registrable<stream> {
  explicit stream(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<stream> by_id;
  owner_hook<session> owner;
  std::atomic<std::uint64_t> poison{kAlive};
};
struct session : registrable<session> {
  explicit session(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<session> by_id;
  owned_list<stream, &stream::owner> streams;
  std::atomic<std::uint64_t> poison{kAlive};
};
using session_ids = lfht_index<session, &session::by_id, key_member<&session::id>, flavor::memb>;
using stream_ids = lfht_index<stream, &stream::by_id, key_member<&stream::id>, flavor::memb>;

/// Destroyed children and sessions, poisoned and kept until the readers have stopped.
inline std::vector<std::unique_ptr<stream>>* g_dead = nullptr;
inline std::vector<std::unique_ptr<session>>* g_dead_sessions = nullptr;
/// Run by the session policy's replace and publish right after it published a session (the
/// writer lock held, the replace or add not finished), if set.
inline std::function<void()> g_after_publish;

struct session_policy : indexed<session, session_ids>, owning<&session::streams> {
  void replace(session& old, session& fresh) {
    indexed<session, session_ids>::replace(old, fresh);
    if (g_after_publish) g_after_publish();
  }
  publish_result publish(session& s) {
    const publish_result r = indexed<session, session_ids>::publish(s);
    if (g_after_publish && r == publish_result::published) g_after_publish();
    return r;
  }
  void destroy(session* s) noexcept {
    s->poison.store(kPoison);
    g_dead_sessions->emplace_back(s);  // reserved by the test: no allocation here
  }
};
struct stream_policy : indexed<stream, stream_ids> {
  void destroy(stream* st) noexcept {
    st->poison.store(kPoison);
    g_dead->emplace_back(st);  // reserved by the test: no allocation here
  }
};
using table = basic_registry<flavor::memb, std::mutex, session_policy, stream_policy>;

/// The ids of the children a reader's walk yields, at rest.
std::vector<std::uint64_t> walk_ids(const session& s) {
  return ids_walked<flavor::memb, std::vector<std::uint64_t>>([&] { return s.streams.rcu_range(); });
}
/// The ids of the children in the writer's view.
std::vector<std::uint64_t> writer_ids(const session& s) {
  std::vector<std::uint64_t> ids;
  for (const stream& st : s.streams) ids.push_back(st.id);
  return ids;
}

/// What a reader run inside a publish found: session 1 (or nullptr), and the ids its walk yielded.
struct reader_view {
  const session* found = nullptr;
  std::vector<std::uint64_t> seen;
};
/// Runs `change` with g_after_publish set to a reader on its own thread (no lock, no grace
/// period: it cannot wait for the writer) that finds session 1 by key and walks its children, each
/// time the session policy publishes or replaces a session; returns what the last reader saw.
template <class Change>
reader_view read_inside_the_publish(table& t, Change&& change) {
  reader_view v;
  g_after_publish = [&t, &v] {
    std::thread reader([&] {
      thread_registration<flavor::memb> registered;
      read_guard<flavor::memb> guard;
      v.found = t.find<session_ids>(guard, std::uint64_t{1});
      v.seen.clear();
      if (v.found != nullptr)
        for (const stream& st : v.found->streams.rcu_range()) v.seen.push_back(st.id);
    });
    reader.join();
  };
  std::forward<Change>(change)();
  g_after_publish = nullptr;
  return v;
}

/// A registry on real memb grace periods, its destroyed children kept until the test ends.
struct owned_readers : ::testing::Test {
  owned_readers() {
    dead.reserve(kMostDestroyed);
    dead_sessions.reserve(kMostSessions);
    g_dead = &dead;
    g_dead_sessions = &dead_sessions;
  }
  ~owned_readers() override {
    g_after_publish = nullptr;
    g_dead = nullptr;
    g_dead_sessions = nullptr;
  }
  static constexpr std::size_t kMostDestroyed = 16'000;
  static constexpr std::size_t kMostSessions = 4'096;
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  table t{domain};
  std::vector<std::unique_ptr<stream>> dead;
  std::vector<std::unique_ptr<session>> dead_sessions;

  /// Adds a session and `n` children with ids first, first + 1, ...; returns them.
  session* open(std::uint64_t first, std::uint64_t n, std::vector<stream*>& children) {
    auto* s = new session(1);
    EXPECT_TRUE(t.add(*s));
    for (std::uint64_t i = first; i < first + n; ++i) children.push_back(add_child(*s, i));
    return s;
  }
  /// A reader inside the publish (read_inside_the_publish) found `parent` and walked `ids`; at
  /// rest readers and the writer see the same children; the family goes in one batch.
  void expect_seen_whole(const reader_view& v, session* parent, const std::vector<std::uint64_t>& ids) {
    EXPECT_EQ(v.found, parent) << "the reader ran after the publish";
    EXPECT_EQ(v.seen, ids);
    EXPECT_EQ(walk_ids(*parent), writer_ids(*parent));
    EXPECT_EQ(t.unregister(*parent).objects, 1 + ids.size());
  }
  stream* add_child(session& s, std::uint64_t id) {
    auto* st = new stream(id);
    st->owner.set_parent(s);
    EXPECT_TRUE(t.add(*st));
    return st;
  }
};

TEST_F(owned_readers, a_walk_at_rest_yields_the_children_in_add_order_without_the_deleted_ones) {
  std::vector<stream*> c;
  session* s = open(0, 5, c);
  EXPECT_EQ(walk_ids(*s), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  // The head, a middle one and the tail: each unlink path once.
  const std::vector<stream*> doomed{c[0], c[2], c[4]};
  EXPECT_EQ(t.unregister_many(doomed).objects, 3u);
  EXPECT_EQ(walk_ids(*s), (std::vector<std::uint64_t>{1, 3}));
  add_child(*s, 9);  // linked after the new tail
  EXPECT_EQ(walk_ids(*s), (std::vector<std::uint64_t>{1, 3, 9}));
  EXPECT_EQ(walk_ids(*s), writer_ids(*s));
  EXPECT_EQ(t.unregister(*s).objects, 4u);
}

TEST_F(owned_readers, a_reader_standing_on_a_child_being_deleted_walks_on_to_its_successors) {
  // The reader stops on the first child, inside its read section; the writer deletes that child
  // (its unlist takes it out of the chain) and waits in grace period #1 for the reader; the
  // reader, once the child is unregistering, walks on from it: the children after it are all seen.
  watchdog dog(std::chrono::seconds(60), "a reader mid-walk while its child is deleted");
  std::vector<stream*> c;
  session* s = open(1, 3, c);
  mid_walk_reader<flavor::memb> reader(
      [&](const read_guard<flavor::memb>& guard) {
        return t.find<session_ids>(guard, std::uint64_t{1})->streams.rcu_range();
      },
      [&] { return c[0]->state() != reg_state::registered; });  // the writer's unlist ran
  EXPECT_EQ(t.unregister(*c[0]).objects, 1u);  // waits for the reader in its grace period
  EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(walk_ids(*s), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(t.unregister(*s).objects, 3u);
}

TEST_F(owned_readers, two_readers_walking_a_parents_children_never_see_a_destroyed_child_while_a_writer_adds_and_deletes) {
  // 2 readers find the session and walk its children in a read_guard, over and over, while the
  // writer runs kRounds rounds of: add kPerRound children, delete kPerRound children picked at
  // random among the live ones (head, middle and tail alike) in one batch. Every walk must end,
  // see no destroyed child, and be no longer than the children ever added.
  constexpr int kRounds = 2000;
  constexpr int kPerRound = 8;
  constexpr std::uint64_t kStart = 32;
  static_assert(kRounds * kPerRound <= kMostDestroyed);
  watchdog dog(std::chrono::seconds(240), "readers walking owned children under a writer");
  std::vector<stream*> live;
  session* s = open(0, kStart, live);
  std::uint64_t next_id = kStart;
  constexpr long kEverAdded = kStart + kRounds * kPerRound;
  std::atomic<long> longest_walk{0};
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t, const read_guard<flavor::memb>& guard) {
    const session* p = t.find<session_ids>(guard, std::uint64_t{1});
    bool poisoned = false;
    long steps = 0;
    if (p != nullptr) {
      for (const stream& st : p->streams.rcu_range()) {
        poisoned |= st.poison.load(std::memory_order_relaxed) != kAlive;
        if (++steps > kEverAdded) break;  // a loop: counted below, never spun forever
      }
    }
    long seen = longest_walk.load(std::memory_order_relaxed);
    while (steps > seen && !longest_walk.compare_exchange_weak(seen, steps, std::memory_order_relaxed)) {
    }
    return lookup_outcome{.missed = p == nullptr, .poisoned = poisoned};
  });
  std::mt19937 rng(37);
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound; ++i) live.push_back(add_child(*s, next_id++));
    std::shuffle(live.begin(), live.end(), rng);
    const std::vector<stream*> doomed(live.end() - kPerRound, live.end());
    live.resize(live.size() - kPerRound);
    ASSERT_EQ(t.unregister_many(doomed).objects, static_cast<std::size_t>(kPerRound));
  }
  const lookup_tally seen = readers.stop();
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.misses, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_LE(longest_walk.load(), kEverAdded);
  EXPECT_EQ(dead.size(), static_cast<std::size_t>(kRounds * kPerRound));
  // At rest the readers' chain and the writer's list agree, child for child.
  EXPECT_EQ(s->streams.size(), live.size());
  EXPECT_EQ(walk_ids(*s), writer_ids(*s));
  EXPECT_EQ(t.unregister(*s).objects, 1 + live.size());
}

// ---- A replace that keeps the children (owned_list::splice_back) under readers ----
// Decided: a reader of the old parent sees every child, never stops short. Mid-walk, it goes on
// through the moved children (their nexts are unchanged); found before the replace and walked after
// it, it follows the old parent's head, which splice_back keeps pointing into the moved chain.

TEST_F(owned_readers, a_reader_standing_mid_walk_on_the_old_parent_across_a_replace_keeping_children_walks_on_to_every_child) {
  // The reader stands on the old session's first child, inside its read section; the writer
  // replaces the session keeping its children (they move to the new one, re-pointed after the
  // splice) and waits in the old session's grace period for the reader; the reader walks on from
  // there once the children name the new session. A reader starting on the new session at rest
  // then sees the same children, in the same order, as the writer's list.
  watchdog dog(std::chrono::seconds(60), "a reader mid-walk on a parent replaced keeping its children");
  std::vector<stream*> c;
  session* old = open(1, 3, c);
  auto* fresh = new session(1);
  mid_walk_reader<flavor::memb> reader(
      [&](const read_guard<flavor::memb>& guard) {
        return t.find<session_ids>(guard, std::uint64_t{1})->streams.rcu_range();
      },
      [&] { return c[2]->owner.parent() == fresh; });  // the last child re-pointed: the move is done
  const replace_result r = t.replace(*old, *fresh, keep_children);  // waits for the reader in its GP
  EXPECT_TRUE(r);
  EXPECT_EQ(r.stats.objects, 1u) << "the old session alone: no child queued";
  EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(walk_ids(*fresh), (std::vector<std::uint64_t>{1, 2, 3})) << "a reader starting on the new session";
  EXPECT_EQ(walk_ids(*fresh), writer_ids(*fresh));
  EXPECT_EQ(dead.size(), 0u);
  EXPECT_EQ(t.unregister(*fresh).objects, 4u);
}

TEST_F(owned_readers, a_reader_that_found_the_old_parent_before_a_replace_keeping_children_and_walks_after_it_sees_every_child) {
  // The reader finds the session and, before walking, waits inside its read section until the
  // replace has moved the children; its walk of the old session then starts from the old head,
  // which still leads into the moved chain: every child, none destroyed (the replace's grace
  // period waits for the reader). Were the head nulled, it would see a session with no children,
  // which no version ever had.
  watchdog dog(std::chrono::seconds(60), "a late reader of a parent replaced keeping its children");
  std::vector<stream*> c;
  session* old = open(1, 3, c);
  auto* fresh = new session(1);
  late_walk_reader<flavor::memb> reader(
      [&](const read_guard<flavor::memb>& guard) { return t.find<session_ids>(guard, std::uint64_t{1}); },
      [&] { return c[2]->owner.parent() == fresh; },
      [](const session* found) { return found->streams.rcu_range(); });
  ASSERT_TRUE(t.replace(*old, *fresh, keep_children));  // waits for the reader in its GP
  EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(dead_sessions.size(), 1u) << "the old session, destroyed after the reader left";
  EXPECT_EQ(walk_ids(*fresh), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(t.unregister(*fresh).objects, 4u);
}

TEST_F(owned_readers, a_reader_finding_the_new_parent_the_moment_a_replace_keeping_children_publishes_it_sees_every_child) {
  // The session policy's replace runs a reader right after it published the new session, before
  // the replace goes on (the writer lock held): the reader finds the new session by key and walks
  // it. It sees every child: the new session's readers' chain is the old one's before the publish
  // (it was linked only after the publish once, and such a reader saw none: found by this test's
  // last one under TSan).
  watchdog dog(std::chrono::seconds(60), "a reader inside a replace keeping children");
  std::vector<stream*> c;
  session* old = open(1, 3, c);
  auto* fresh = new session(1);
  const reader_view v = read_inside_the_publish(t, [&] { ASSERT_TRUE(t.replace(*old, *fresh, keep_children)); });
  expect_seen_whole(v, fresh, {1, 2, 3});
}

TEST_F(owned_readers, a_reader_finding_the_parent_the_moment_add_with_children_publishes_it_sees_every_child) {
  // The session policy's publish runs a reader right after it published the session, before
  // add_with_children goes on (the writer lock held). The children are in the session's readers'
  // chain before its publish (they were linked only after it once, and such a reader saw none).
  watchdog dog(std::chrono::seconds(60), "a reader inside add_with_children");
  auto* s = new session(1);
  std::vector<stream*> kids{new stream(1), new stream(2), new stream(3)};
  const reader_view v =
      read_inside_the_publish(t, [&] { ASSERT_EQ(t.add_with_children(*s, kids).status, add_status::added); });
  expect_seen_whole(v, s, {1, 2, 3});
}

TEST_F(owned_readers, a_reader_finding_the_new_parent_the_moment_replace_with_children_publishes_it_sees_every_new_child) {
  // As above, for replace_with_children: the policy's replace runs the reader right after the new
  // session took the old one's place; it sees the new children (2 replacing old ones by key, 1
  // new), never an empty list.
  watchdog dog(std::chrono::seconds(60), "a reader inside replace_with_children");
  std::vector<stream*> c;
  session* old = open(1, 3, c);
  auto* fresh = new session(1);
  std::vector<stream*> kids{new stream(2), new stream(3), new stream(4)};
  const reader_view v =
      read_inside_the_publish(t, [&] { ASSERT_TRUE(t.replace_with_children(*old, *fresh, kids).replaced); });
  expect_seen_whole(v, fresh, {2, 3, 4});
}

TEST_F(owned_readers, two_readers_walking_a_parent_replaced_a_thousand_times_keeping_its_children_see_every_lasting_child_and_none_destroyed) {
  // 2 readers find session 1 and walk its children, over and over (every fourth time yielding
  // between the lookup and the walk, so that replaces land there too), while the writer runs
  // kRounds rounds of: replace the session keeping its children (by object and by key in turn),
  // add kPerRound children under it by key, delete kPerRound of the children added since the
  // start, picked at random (head, middle and tail of that part), in one batch. The kLasting
  // children added first are never deleted: every walk, of whichever version its reader found,
  // must see all of them, in order, and nothing destroyed; no walk is longer than the children
  // ever added; every replace tears down the old session alone, in one grace period.
  constexpr int kRounds = 1000;
  constexpr int kPerRound = 4;
  constexpr std::uint64_t kLasting = 8;
  constexpr std::uint64_t kChurn = 16;
  static_assert(kRounds * kPerRound <= kMostDestroyed && kRounds + 1 <= kMostSessions);
  constexpr long kEverAdded = kLasting + kChurn + kRounds * kPerRound;
  watchdog dog(std::chrono::seconds(240), "readers walking a parent replaced keeping its children");
  std::vector<stream*> lasting;
  session* s = open(0, kLasting, lasting);
  std::vector<stream*> churn;
  std::uint64_t next_id = kLasting;
  for (std::uint64_t i = 0; i < kChurn; ++i) churn.push_back(add_child(*s, next_id++));

  std::atomic<long> longest_walk{0}, stopped_short{0}, walks{0};
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
    const session* p = t.find<session_ids>(guard, std::uint64_t{1});
    if (i % 4 == 0) std::this_thread::yield();  // widens the lookup-to-walk window (not synchronization)
    bool poisoned = p != nullptr && p->poison.load(std::memory_order_relaxed) != kAlive;
    long steps = 0;
    std::uint64_t lasting_seen = 0;  // the lasting ids 0, 1, ... met in that order
    if (p != nullptr) {
      for (const stream& st : p->streams.rcu_range()) {
        poisoned |= st.poison.load(std::memory_order_relaxed) != kAlive;
        if (st.id < kLasting && st.id == lasting_seen) ++lasting_seen;
        if (++steps > kEverAdded) break;  // a loop: counted below, never spun forever
      }
      if (lasting_seen != kLasting) stopped_short.fetch_add(1, std::memory_order_relaxed);
    }
    walks.fetch_add(1, std::memory_order_relaxed);
    long seen = longest_walk.load(std::memory_order_relaxed);
    while (steps > seen && !longest_walk.compare_exchange_weak(seen, steps, std::memory_order_relaxed)) {
    }
    return lookup_outcome{.missed = p == nullptr, .poisoned = poisoned};
  });

  std::mt19937 rng(41);
  unsigned not_alone = 0, not_one_gp = 0, not_replaced = 0, not_added = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto* fresh = new session(1);
    const replace_result r = round % 2 == 0 ? t.replace(*s, *fresh, keep_children)
                                            : t.try_replace<session_ids>(std::uint64_t{1}, *fresh, keep_children);
    if (!r) {
      ++not_replaced;
      delete fresh;
      continue;
    }
    s = fresh;
    not_alone += r.stats.objects != 1 ? 1u : 0u;
    not_one_gp += r.stats.grace_periods != 1 ? 1u : 0u;
    for (int k = 0; k < kPerRound; ++k) {
      auto* st = new stream(next_id++);
      if (t.add_under<session_ids>(std::uint64_t{1}, *st).status == add_status::added) churn.push_back(st);
      else {
        ++not_added;
        delete st;
      }
    }
    std::shuffle(churn.begin(), churn.end(), rng);
    const std::vector<stream*> doomed(churn.end() - kPerRound, churn.end());
    churn.resize(churn.size() - kPerRound);
    ASSERT_EQ(t.unregister_many(doomed).objects, static_cast<std::size_t>(kPerRound));
    if (round % 50 == 0) {  // the readers walk between rounds, even on a loaded machine (progress, not timing)
      const long before = walks.load();
      while (walks.load() < before + 4) std::this_thread::yield();
    }
    dog.kick();
  }
  const lookup_tally seen = readers.stop();
  EXPECT_EQ(not_replaced, 0u);
  EXPECT_EQ(not_added, 0u);
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.misses, 0) << "readers find the old session or the new one";
  EXPECT_EQ(seen.poisoned, 0) << "no destroyed child or session reached";
  EXPECT_EQ(stopped_short.load(), 0) << "every walk met every lasting child, in order";
  EXPECT_LE(longest_walk.load(), kEverAdded);
  EXPECT_EQ(not_alone, 0u) << "a replace keeping the children tears down the old session alone";
  EXPECT_EQ(not_one_gp, 0u);
  EXPECT_EQ(dead.size(), static_cast<std::size_t>(kRounds * kPerRound));
  EXPECT_EQ(dead_sessions.size(), static_cast<std::size_t>(kRounds));
  // At rest the readers' chain and the writer's list agree, child for child, lasting ones first.
  EXPECT_EQ(s->streams.size(), kLasting + churn.size());
  const std::vector<std::uint64_t> at_rest = writer_ids(*s);
  EXPECT_EQ(walk_ids(*s), at_rest);
  EXPECT_EQ(std::vector<std::uint64_t>(at_rest.begin(), at_rest.begin() + kLasting),
            (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.unregister(*s).objects, 1 + kLasting + churn.size());
}

}  // namespace
}  // namespace rcubatch::test
