// owned.hpp, the readers' side (issue 37 item 5): owned_list::rcu_range walked inside a read_guard
// while a writer adds children and deletes them by batch, with real memb grace periods. Every
// destroyed child is poisoned and kept (freed after the readers stop), so a reader that reaches one
// counts it; each walk's length is bounded by the children ever added (a walk that loops would
// hang, and the watchdog fails it).
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
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
};
using session_ids = lfht_index<session, &session::by_id, key_member<&session::id>, flavor::memb>;
using stream_ids = lfht_index<stream, &stream::by_id, key_member<&stream::id>, flavor::memb>;

/// Destroyed children, poisoned and kept until the readers have stopped.
inline std::vector<std::unique_ptr<stream>>* g_dead = nullptr;

struct session_policy : indexed<session, session_ids>, owning<&session::streams> {
  void destroy(session* s) noexcept { delete s; }
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

/// A registry on real memb grace periods, its destroyed children kept until the test ends.
struct owned_readers : ::testing::Test {
  owned_readers() {
    dead.reserve(kMostDestroyed);
    g_dead = &dead;
  }
  ~owned_readers() override { g_dead = nullptr; }
  static constexpr std::size_t kMostDestroyed = 16'000;
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  table t{domain};
  std::vector<std::unique_ptr<stream>> dead;

  /// Adds a session and `n` children with ids first, first + 1, ...; returns them.
  session* open(std::uint64_t first, std::uint64_t n, std::vector<stream*>& children) {
    auto* s = new session(1);
    EXPECT_TRUE(t.add(*s));
    for (std::uint64_t i = first; i < first + n; ++i) children.push_back(add_child(*s, i));
    return s;
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

}  // namespace
}  // namespace rcubatch::test
