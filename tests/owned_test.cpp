// owned.hpp: the parent→children relation the library keeps. Exact GP counts on the counting
// flavor (the indexes are real rculfhash tables on memb, used by this thread only); the destroy
// order checked in every destroy hook; children deleted alone (by key, by object, submitted to an
// async_unregister) never reaching a later parent batch; the misuse add refuses.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/gp_gate.hpp"
#include "support/checking_readers.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

struct session;
struct stream;
struct chunk;

/// A great-grandchild: a chunk owns pieces (depth 4).
struct piece : registrable<piece> {
  explicit piece(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<piece> by_id;
  owner_hook<chunk> owner;
};
/// A grandchild: a stream owns chunks (depth 3).
struct chunk : registrable<chunk> {
  explicit chunk(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<chunk> by_id;
  owner_hook<stream> owner;
  owned_list<piece, &piece::owner> pieces;
  std::atomic<int> alive_pieces{0};
};
struct stream : registrable<stream> {
  explicit stream(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<stream> by_id;
  hlist_hook<stream> by_id_hlist;  // for the registry on hlist_index
  owner_hook<session> owner;
  owned_list<chunk, &chunk::owner> chunks;
  std::atomic<int> alive_chunks{0};
  std::atomic<std::uint64_t> poison{kAlive};  // decremented by each chunk's destroy: 0 when the stream's destroy runs
};
struct session : registrable<session> {
  explicit session(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<session> by_id;
  hlist_hook<session> by_id_hlist;  // for the registry on hlist_index
  owned_list<stream, &stream::owner> streams;
  std::atomic<int> alive_streams{0};
  std::atomic<std::uint64_t> poison{kAlive};  // decremented by each stream's destroy: 0 when the session's destroy runs
};
using session_ids = lfht_index<session, &session::by_id, key_member<&session::id>, flavor::memb>;
using stream_ids = lfht_index<stream, &stream::by_id, key_member<&stream::id>, flavor::memb>;
using chunk_ids = lfht_index<chunk, &chunk::by_id, key_member<&chunk::id>, flavor::memb>;
using piece_ids = lfht_index<piece, &piece::by_id, key_member<&piece::id>, flavor::memb>;

/// What the destroy hooks saw: a parent destroyed while one of its children was not.
struct order_log {
  std::atomic<long> destroyed{0};
  std::atomic<long> parent_before_child{0};
};
inline order_log g_order;

struct session_policy : indexed<session, session_ids>, owning<&session::streams> {
  void destroy(session* s) noexcept {
    if (s->alive_streams != 0) g_order.parent_before_child.fetch_add(1);
    g_order.destroyed.fetch_add(1);
    delete s;
  }
};
struct stream_policy : indexed<stream, stream_ids>, owning<&stream::chunks> {
  void destroy(stream* st) noexcept {
    if (st->alive_chunks != 0) g_order.parent_before_child.fetch_add(1);
    if (session* s = st->owner.parent()) --s->alive_streams;  // the parent is still alive: checked above
    g_order.destroyed.fetch_add(1);
    delete st;
  }
};
struct chunk_policy : indexed<chunk, chunk_ids>, owning<&chunk::pieces> {
  void destroy(chunk* c) noexcept {
    if (c->alive_pieces != 0) g_order.parent_before_child.fetch_add(1);
    if (stream* st = c->owner.parent()) --st->alive_chunks;
    g_order.destroyed.fetch_add(1);
    delete c;
  }
};
struct piece_policy : indexed<piece, piece_ids> {
  void destroy(piece* p) noexcept {
    if (chunk* c = p->owner.parent()) --c->alive_pieces;
    g_order.destroyed.fetch_add(1);
    delete p;
  }
};

using CF = counting_flavor<struct owned_test_tag>;
using table = basic_registry<CF, std::mutex, session_policy, stream_policy, chunk_policy, piece_policy>;

struct owned : counting_test<owned_test_tag> {
  owned() {
    g_order.destroyed = 0;
    g_order.parent_before_child = 0;
  }
  thread_registration<flavor::memb> reg_;  // the indexes are memb rculfhash tables

  static session* open(table& t, std::uint64_t id, int streams, int chunks_each = 0) {
    auto* s = new session(id);
    EXPECT_TRUE(t.add(*s));
    for (int i = 0; i < streams; ++i) {
      auto* st = new stream(id * 8 + static_cast<std::uint64_t>(i));
      st->owner.set_parent(*s);
      EXPECT_TRUE(t.add(*st));
      ++s->alive_streams;
      for (int j = 0; j < chunks_each; ++j) {
        auto* c = new chunk(st->id * 8 + static_cast<std::uint64_t>(j));
        c->owner.set_parent(*st);
        EXPECT_TRUE(t.add(*c));
        ++st->alive_chunks;
      }
    }
    return s;
  }
};

TEST_F(owned, ten_thousand_parents_with_their_children_cost_two_gps_and_every_child_goes_first) {
  // 10,000 sessions × 1–4 streams, no notify written anywhere: one batch of the sessions takes
  // every stream, with 2 grace periods; every stream is destroyed before its session.
  constexpr std::uint64_t kSessions = 10'000;
  table t;
  std::vector<session*> sessions;
  std::size_t streams = 0;
  for (std::uint64_t id = 0; id < kSessions; ++id) {
    sessions.push_back(open(t, id, static_cast<int>(1 + id % 4)));
    streams += 1 + id % 4;
  }
  EXPECT_EQ(sessions[3]->streams.size(), 4u);
  // Children deleted alone in between (by key, by object): they leave their session's list now
  // and never appear in its batch.
  std::size_t alone = 0;
  for (std::uint64_t id = 0; id < kSessions; id += 10) {
    ASSERT_TRUE(t.try_unregister<stream_ids>(id * 8)) << id;  // the first stream of every 10th session
    ++alone;
  }
  stream* by_object = &*sessions[13]->streams.begin();
  EXPECT_EQ(t.unregister(*by_object).objects, 1u);
  ++alone;
  EXPECT_EQ(sessions[13]->streams.size(), 1u + 13 % 4 - 1);
  EXPECT_EQ(g_order.destroyed.load(), static_cast<long>(alone));
  CF::reset();

  const batch_stats st = t.unregister_many(sessions);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(st.objects, kSessions + streams - alone) << "the streams deleted alone are not in it";
  EXPECT_EQ(st.dependents_added, streams - alone);
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  EXPECT_EQ(g_order.destroyed.load(), static_cast<long>(kSessions + streams));
  EXPECT_TRUE(t.index<session_ids>().empty());
  EXPECT_TRUE(t.index<stream_ids>().empty());
}

TEST_F(owned, any_depth_in_the_same_two_grace_periods) {
  table t;
  std::vector<session*> sessions;
  for (std::uint64_t id = 0; id < 100; ++id) sessions.push_back(open(t, id, 3, 2));
  const batch_stats st = t.unregister_many(sessions);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(st.objects, 100u * (1 + 3 + 3 * 2));
  EXPECT_EQ(st.rounds, 3u) << "sessions, then their streams, then the streams' chunks";
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  EXPECT_TRUE(t.index<chunk_ids>().empty());
}

TEST_F(owned, a_child_deleted_alone_while_held_keeps_its_parent_until_it_is_destroyed) {
  // A stream deleted alone is held by a reader: its batch waits for it (outside the writer lock);
  // meanwhile its session is deleted by another thread. The session's batch does not take the
  // stream (it left the list), yet waits for the stream's destroy before destroying the session.
  watchdog dog(std::chrono::seconds(30), "a held child deleted alone, then its parent");
  table t;
  session* s = open(t, 1, 2);
  stream* held = &*s->streams.begin();
  held->refs().hold();
  std::thread alone([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(t.unregister(*held).objects, 1u);
  });
  while (held->state() != reg_state::unregistered) std::this_thread::yield();  // its batch drains
  EXPECT_EQ(s->streams.size(), 1u);
  std::thread parent([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(t.unregister(*s).objects, 2u) << "the session and its other stream only";
  });
  while (s->state() != reg_state::unregistered) std::this_thread::yield();  // waits for `held`
  EXPECT_EQ(g_order.destroyed.load(), 1) << "the other stream only: the session waits for the held one";
  held->refs().put();
  alone.join();
  parent.join();
  EXPECT_EQ(g_order.destroyed.load(), 3);
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
}

TEST_F(owned, a_child_submitted_to_a_reclaimer_stays_in_the_list_until_its_parents_batch_takes_it_over) {
  // Issue 35: the submitted stream stays in its session's list (going away, so a walker can skip
  // it); the session's batch, running first, takes it over instead of waiting for the
  // reclaimer's batch (which, in manual mode, nobody runs): no wait, every child first.
  watchdog dog(std::chrono::seconds(30), "a submitted child, then its parent");
  table t;
  async_unregister reclaimer(t, async_options{.mode = reclaim_mode::manual});
  session* s = open(t, 1, 3);
  stream* first = &*s->streams.begin();
  const unregister_ticket ticket = reclaimer.submit(*first);
  ASSERT_TRUE(ticket);
  EXPECT_EQ(s->streams.size(), 3u);
  EXPECT_TRUE(first->going_away());
  EXPECT_EQ(t.unregister(*s).objects, 4u) << "the session, its two streams and the submitted one";
  EXPECT_EQ(g_order.destroyed.load(), 4);
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(ticket));
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  // A session submitted (unlisted, going away) takes no new child: a lost race, not misuse.
  session* s2 = open(t, 2, 1);
  ASSERT_TRUE(reclaimer.submit(*s2));
  stream late(99);
  late.owner.set_parent(*s2);
  EXPECT_FALSE(t.add(late));
  EXPECT_EQ(late.state(), reg_state::uninitialized);
  EXPECT_FALSE(late.by_id.is_linked());
  reclaimer.drain();
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
}

TEST_F(owned, a_child_whose_parent_was_never_added_is_refused_with_nothing_published) {
  table t;
  session never(5);
  stream orphan(41);
  orphan.owner.set_parent(never);
  EXPECT_THROW(t.add(orphan), misuse_error);
  misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::report, cap);
  EXPECT_FALSE(t.add(orphan));
  EXPECT_EQ(cap.last_kind, misuse_kind::not_registered);
  EXPECT_FALSE(orphan.by_id.is_linked());
  // A parent in another registry of the same type.
  table other;
  session* elsewhere = new session(6);
  ASSERT_TRUE(other.add(*elsewhere));
  stream stray(49);
  stray.owner.set_parent(*elsewhere);
  EXPECT_FALSE(t.add(stray));
  EXPECT_EQ(cap.last_kind, misuse_kind::wrong_registry);
  EXPECT_FALSE(stray.by_id.is_linked());
  // The parent of an added child cannot change.
  session* s = open(t, 7, 1);
  stream& added = *s->streams.begin();
  added.owner.set_parent(*elsewhere);
  EXPECT_EQ(cap.last_kind, misuse_kind::register_twice);
  EXPECT_EQ(added.owner.parent(), s);
  EXPECT_EQ(other.unregister(*elsewhere).objects, 1u);
  EXPECT_EQ(t.unregister(*s).objects, 2u);
}


TEST_F(owned, a_child_replaced_alone_takes_its_place_in_the_parents_list) {
  table t;
  session* s = open(t, 1, 2);
  stream* old_child = &*s->streams.begin();
  auto* new_child = new stream(old_child->id);  // names no parent: it takes the old one's
  EXPECT_EQ(t.replace(*old_child, *new_child).stats.objects, 1u);
  EXPECT_EQ(new_child->owner.parent(), s);
  EXPECT_EQ(s->streams.size(), 2u);
  ++s->alive_streams;  // the new stream's destroy counts down too
  EXPECT_EQ(t.unregister(*s).objects, 3u) << "the session and both streams, the new one included";
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  EXPECT_TRUE(t.index<stream_ids>().empty());
}

// --- bulk replace: a container and its children (issue 23) ---------------------------------------

TEST_F(owned, replacing_a_session_with_2000_streams_costs_two_gps_and_refusal_changes_nothing) {
  table t;
  session* v1 = open(t, 1, 0);
  std::vector<stream*> old_streams;
  for (std::uint64_t k = 0; k < 2000; ++k) {
    auto* st = new stream(k);
    st->owner.set_parent(*v1);
    ASSERT_TRUE(t.add(*st));
    ++v1->alive_streams;
    old_streams.push_back(st);
  }
  session* other = open(t, 2, 0);  // holds stream 5000, a key the refused version will ask for
  auto* foreign = new stream(5000);
  foreign->owner.set_parent(*other);
  ASSERT_TRUE(t.add(*foreign));
  ++other->alive_streams;
  CF::reset();

  // Refused: one new stream's key is the other session's stream. Nothing changes.
  {
    session v2(1);
    std::vector<std::unique_ptr<stream>> fresh;
    for (std::uint64_t k = 0; k < 1999; ++k) fresh.push_back(std::make_unique<stream>(k));
    fresh.push_back(std::make_unique<stream>(5000));
    std::vector<stream*> ptrs;
    for (auto& f : fresh) ptrs.push_back(f.get());
    const replace_result r = t.replace_with_children(*v1, v2, ptrs);
    EXPECT_FALSE(r);
    EXPECT_EQ(CF::synchronizes(), 1u) << "new objects were visible: one GP before the caller may free them";
    EXPECT_EQ(v2.state(), reg_state::uninitialized);
    EXPECT_FALSE(v2.by_id.is_linked());
    for (auto& f : fresh) EXPECT_FALSE(f->by_id.is_linked());
    EXPECT_EQ(v1->state(), reg_state::registered);
    EXPECT_EQ(v1->streams.size(), 2000u);
    {
      read_guard<flavor::memb> guard;
      EXPECT_EQ(t.find<session_ids>(guard, std::uint64_t{1}), v1);
      for (std::uint64_t k = 0; k < 2000; ++k) EXPECT_EQ(t.find<stream_ids>(guard, k), old_streams[k]);
      EXPECT_EQ(t.find<stream_ids>(guard, std::uint64_t{5000}), foreign);
    }
    // A second try with a new stream named twice: refused too.
    fresh.back() = std::make_unique<stream>(7);
    ptrs.back() = fresh.back().get();
    EXPECT_FALSE(t.replace_with_children(*v1, v2, ptrs));
    EXPECT_EQ(v1->streams.size(), 2000u);
  }
  CF::reset();

  // Accepted: 1,999 streams keep their keys, stream 1999 goes, stream 3000 comes.
  auto* v2 = new session(1);
  std::vector<stream*> fresh;
  for (std::uint64_t k = 0; k < 1999; ++k) fresh.push_back(new stream(k));
  fresh.push_back(new stream(3000));
  v2->alive_streams = 2000;
  const replace_result r = t.replace_with_children(*v1, *v2, fresh);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.swapped, 1999u);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(r.stats.grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(r.stats.objects, 2001u) << "the old session and its 2,000 streams";
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  EXPECT_EQ(v2->streams.size(), 2000u);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<session_ids>(guard, std::uint64_t{1}), v2);
    EXPECT_EQ(t.find<stream_ids>(guard, std::uint64_t{0}), fresh[0]);
    EXPECT_EQ(t.find<stream_ids>(guard, std::uint64_t{1999}), nullptr);
    EXPECT_EQ(t.find<stream_ids>(guard, std::uint64_t{3000}), fresh.back());
  }
  const std::vector<session*> rest{v2, other};
  EXPECT_EQ(t.unregister_many(rest).objects, 2u + 2000u + 1u);
}

/// Poisons at destroy; the test frees after the readers stop.
struct graveyard {
  std::vector<std::unique_ptr<session>> sessions;
  std::vector<std::unique_ptr<stream>> streams;
};
inline graveyard* g_graveyard = nullptr;
struct poisoned_sessions : indexed<session, session_ids>, owning<&session::streams> {
  void destroy(session* s) noexcept {
    s->poison.store(kPoison);
    g_graveyard->sessions.emplace_back(s);  // reserved by the test: no allocation here
  }
};
struct poisoned_streams : indexed<stream, stream_ids> {
  void destroy(stream* st) noexcept {
    if (st->owner.parent()->poison.load() != kAlive) g_order.parent_before_child.fetch_add(1);
    st->poison.store(kPoison);
    g_graveyard->streams.emplace_back(st);
  }
};

TEST(owned_replace, readers_always_find_a_live_session_and_live_streams) {
  // 2 readers look up the session and its streams (and each stream's parent) continuously while
  // 20 bulk replaces of the session and its 2,000 streams run with real memb grace periods: 0
  // misses, 0 destroyed objects seen, 2 GPs per replace.
  constexpr int kReplaces = 20;
  constexpr std::uint64_t kStreams = 2000;
  watchdog dog(std::chrono::seconds(120), "bulk replace under readers");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  basic_registry<flavor::memb, std::mutex, poisoned_sessions, poisoned_streams> t(domain);
  graveyard dead;
  dead.sessions.reserve(kReplaces + 1);
  dead.streams.reserve((kReplaces + 1) * kStreams);
  g_graveyard = &dead;
  g_order.parent_before_child = 0;
  auto make = [&](int round, std::vector<stream*>& out) {
    auto* s = new session(1);
    out.clear();
    for (std::uint64_t k = 0; k + 1 < kStreams; ++k) out.push_back(new stream(k));  // shared keys
    out.push_back(new stream(100'000 + static_cast<std::uint64_t>(round)));         // one of its own
    return s;
  };
  std::vector<stream*> fresh;
  session* current = make(0, fresh);
  ASSERT_TRUE(t.add(*current));
  for (stream* st : fresh) {
    st->owner.set_parent(*current);
    ASSERT_TRUE(t.add(*st));
  }
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
    const session* s = t.find<session_ids>(guard, std::uint64_t{1});
    const stream* st = t.find<stream_ids>(guard, i % (kStreams - 1));
    return lookup_outcome{.missed = s == nullptr || st == nullptr,
                          .poisoned = (s && s->poison.load() != kAlive) || (st && st->poison.load() != kAlive) ||
                                      (st && st->owner.parent()->poison.load() != kAlive)};
  });
  int wrong_gps = 0;
  for (int round = 1; round <= kReplaces; ++round) {
    session* next = make(round, fresh);
    const replace_result r = t.replace_with_children(*current, *next, fresh);
    ASSERT_TRUE(r);
    if (r.stats.grace_periods != 2) ++wrong_gps;
    current = next;
  }
  const lookup_tally seen = readers.stop();
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.misses, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_EQ(wrong_gps, 0);
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  EXPECT_EQ(dead.sessions.size(), static_cast<std::size_t>(kReplaces));
  EXPECT_EQ(dead.streams.size(), kReplaces * kStreams);
  EXPECT_EQ(t.unregister(*current).objects, 1 + kStreams);
  g_graveyard = nullptr;
}

// --- bulk replace of a parent that is itself owned (issue 34) -------------------------------------

/// Nothing of the family is findable any more, in any index.
void expect_nothing_findable(table& t, std::initializer_list<std::uint64_t> stream_keys,
                             std::initializer_list<std::uint64_t> chunk_keys,
                             std::initializer_list<std::uint64_t> piece_keys) {
  read_guard<flavor::memb> guard;
  // Only compared with nullptr: on failure the object found names a destroyed parent.
  for (std::uint64_t k : stream_keys) EXPECT_EQ(t.find<stream_ids>(guard, k), nullptr) << "stream " << k;
  for (std::uint64_t k : chunk_keys) EXPECT_EQ(t.find<chunk_ids>(guard, k), nullptr) << "chunk " << k;
  for (std::uint64_t k : piece_keys) EXPECT_EQ(t.find<piece_ids>(guard, k), nullptr) << "piece " << k;
  EXPECT_TRUE(t.index<session_ids>().empty());
  EXPECT_TRUE(t.index<stream_ids>().empty());
  EXPECT_TRUE(t.index<chunk_ids>().empty());
  EXPECT_TRUE(t.index<piece_ids>().empty());
}

TEST_F(owned, a_stream_replaced_with_its_chunks_is_destroyed_with_its_session) {
  // Depth 3: a session owns streams 8 and 9, each owning chunks. Stream 8 is replaced with three
  // new chunks; then the session is deleted: its batch takes the new stream (in the session's
  // list, where the old one was) and its chunks, and every object is destroyed exactly once.
  table t;
  session* s = open(t, 1, 2, 2);  // streams 8, 9; chunks 64, 65 and 72, 73
  long created = 1 + 2 + 4;
  stream* old_st = &*s->streams.begin();
  auto* new_st = new stream(old_st->id);  // names no parent: it takes the old one's
  std::vector<chunk*> fresh{new chunk(64), new chunk(65), new chunk(66)};
  new_st->alive_chunks = 3;
  created += 1 + 3;
  const replace_result r = t.replace_with_children(*old_st, *new_st, fresh);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.swapped, 2u);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(r.stats.objects, 3u) << "the old stream and its two chunks";
  EXPECT_EQ(new_st->owner.parent(), s);
  ASSERT_EQ(s->streams.size(), 2u) << "the new stream takes the old one's place in the session's list";
  bool listed = false;
  for (stream& st : s->streams) listed = listed || &st == new_st;
  EXPECT_TRUE(listed) << "the new stream is in its session's list";
  ++s->alive_streams;  // the old stream's destroy counted one down; the new one will too

  const batch_stats st = t.unregister(*s);
  EXPECT_EQ(st.objects, 1u + 2u + 3u + 2u) << "the session, both streams and all their chunks";
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(g_order.destroyed.load(), created) << "each object destroyed once, none left behind";
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  expect_nothing_findable(t, {8, 9}, {64, 65, 66, 72, 73}, {});
}

TEST_F(owned, a_chunk_replaced_with_its_pieces_four_levels_down_is_destroyed_with_its_session) {
  // Depth 4: session 1 → stream 8 → chunk 64 → pieces. Chunk 64 (owned by an owned stream) is
  // replaced with new pieces; then the session goes, and takes the new chunk and its pieces.
  table t;
  session* s = open(t, 1, 1, 1);  // stream 8, chunk 64
  stream* st = &*s->streams.begin();
  chunk* old_c = &*st->chunks.begin();
  auto* old_piece = new piece(512);
  old_piece->owner.set_parent(*old_c);
  ASSERT_TRUE(t.add(*old_piece));
  ++old_c->alive_pieces;
  long created = 1 + 1 + 1 + 1;
  auto* new_c = new chunk(64);
  std::vector<piece*> fresh{new piece(512), new piece(513)};
  new_c->alive_pieces = 2;
  created += 1 + 2;
  const replace_result r = t.replace_with_children(*old_c, *new_c, fresh);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.stats.objects, 2u) << "the old chunk and its piece";
  EXPECT_EQ(new_c->owner.parent(), st);
  ASSERT_EQ(st->chunks.size(), 1u);
  EXPECT_EQ(&*st->chunks.begin(), new_c) << "the new chunk takes the old one's place in its stream's list";
  ++st->alive_chunks;

  // And one level up: stream 8 replaced with a new chunk of its own, the replaced chunk's
  // pieces (owned by an old child) going with the old version.
  auto* new_st = new stream(8);
  std::vector<chunk*> next{new chunk(64)};
  new_st->alive_chunks = 1;
  created += 2;
  const replace_result r2 = t.replace_with_children(*st, *new_st, next);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2.stats.objects, 1u + 1u + 2u) << "the old stream, its chunk and that chunk's two pieces";
  ASSERT_EQ(s->streams.size(), 1u);
  EXPECT_EQ(&*s->streams.begin(), new_st);
  ++s->alive_streams;

  EXPECT_EQ(t.unregister(*s).objects, 3u) << "the session, the new stream and its chunk";
  EXPECT_EQ(g_order.destroyed.load(), created) << "each object destroyed once, none left behind";
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
  expect_nothing_findable(t, {8}, {64}, {512, 513});
}

TEST_F(owned, a_replace_with_children_whose_owner_is_going_away_is_refused_with_nothing_changed) {
  // The stream's session is submitted to a reclaimer (unlisted, going away): the new stream could
  // not join its list, so the replace is refused, as replace and add are, before anything changes.
  table t;
  async_unregister reclaimer(t, async_options{.mode = reclaim_mode::manual});
  session* s = open(t, 1, 1, 1);
  stream* old_st = &*s->streams.begin();
  ASSERT_TRUE(reclaimer.submit(*s));
  stream new_st(old_st->id);
  chunk c(old_st->id * 8);
  std::vector<chunk*> fresh{&c};
  const replace_result r = t.replace_with_children(*old_st, new_st, fresh);
  EXPECT_FALSE(r);
  EXPECT_EQ(new_st.state(), reg_state::uninitialized);
  EXPECT_FALSE(new_st.by_id.is_linked());
  EXPECT_FALSE(c.by_id.is_linked());
  EXPECT_EQ(old_st->state(), reg_state::registered);
  reclaimer.drain();
  EXPECT_EQ(g_order.destroyed.load(), 3);
  EXPECT_EQ(g_order.parent_before_child.load(), 0);
}

// --- an owner_hook whose parent's policy owns nothing (issue 34) ---------------------------------

/// The same session and stream types, in a registry whose session policy forgot owning<>.
struct sessions_owning_nothing : indexed<session, session_ids> {
  int destroyed = 0;
  void destroy(session* s) noexcept {
    ++destroyed;
    delete s;
  }
};
struct streams_owned_by_nobody : indexed<stream, stream_ids> {
  void destroy(stream* st) noexcept { delete st; }
};

TEST_F(owned, a_parent_named_by_an_owner_hook_whose_policy_owns_nothing_is_refused_before_anything_changes) {
  using forgetful = basic_registry<CF, std::mutex, sessions_owning_nothing, streams_owned_by_nobody>;
  forgetful t;
  auto* s = new session(1);
  ASSERT_TRUE(t.add(*s));
  auto* st = new stream(8);
  st->owner.set_parent(*s);
  ASSERT_TRUE(t.add(*st));  // published, but in no list: no relation names streams here
  const auto refused_text = [](const std::string& what) {
    return what.find("declares no rcubatch::owning<&Parent::list>") != std::string::npos;
  };
  try {
    t.unregister(*s);
    ADD_FAILURE() << "tearing down a parent its children still name must be refused";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::not_in_batch);
    EXPECT_TRUE(refused_text(e.what())) << e.what();
  }
  {
    misuse_capture cap;
    scoped_misuse_policy p(misuse_policy::report, cap);
    EXPECT_TRUE(t.unregister(*s).refused);
    EXPECT_EQ(t.try_unregister<session_ids>(std::uint64_t{1}).status, unregister_status::refused);
    async_unregister reclaimer(t, async_options{.mode = reclaim_mode::manual});
    EXPECT_FALSE(reclaimer.submit(*s));
    EXPECT_EQ(cap.calls, 3);
    EXPECT_EQ(cap.last_kind, misuse_kind::not_in_batch);
    EXPECT_TRUE(refused_text(cap.last_message)) << cap.last_message;
  }
  EXPECT_EQ(s->state(), reg_state::registered);
  EXPECT_EQ(t.policy<sessions_owning_nothing>().destroyed, 0) << "not destroyed under its stream";
  EXPECT_EQ(CF::synchronizes(), 0u) << "no batch ran";
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<session_ids>(guard, std::uint64_t{1}), s);
    EXPECT_EQ(t.find<stream_ids>(guard, std::uint64_t{8}), st);
  }
  // The stream goes alone; the session stays refused by this registry (an owner_hook named it),
  // so the test takes it down with the primitives, under the registry's lock.
  EXPECT_EQ(t.unregister(*st).objects, 1u);
  std::scoped_lock lock(t.writer_lock());
  unreg_queue<session> q;
  ASSERT_TRUE(q.push(*s));
  EXPECT_EQ(rollback_many(q, t.policy<sessions_owning_nothing>(), t.domain()).objects, 1u);
  EXPECT_EQ(t.policy<sessions_owning_nothing>().destroyed, 1);
}

// --- bulk replace on hlist_index (issue 34) ------------------------------------------------------

using session_hids = hlist_index<session, &session::by_id_hlist, key_member<&session::id>, flavor::memb>;
using stream_hids = hlist_index<stream, &stream::by_id_hlist, key_member<&stream::id>, flavor::memb>;
/// Sessions and streams on hlist_index only (the index the README recommends for registries).
struct hlist_sessions : indexed<session, session_hids>, owning<&session::streams> {
  int destroyed = 0;
  void destroy(session* s) noexcept {
    ++destroyed;
    delete s;
  }
};
struct hlist_streams : indexed<stream, stream_hids> {
  int destroyed = 0;
  void destroy(stream* st) noexcept {
    ++destroyed;
    delete st;
  }
};

TEST_F(owned, a_session_on_hlist_indexes_is_replaced_with_its_streams) {
  basic_registry<CF, std::mutex, hlist_sessions, hlist_streams> t;
  auto* v1 = new session(1);
  ASSERT_TRUE(t.add(*v1));
  for (std::uint64_t k = 0; k < 100; ++k) {
    auto* st = new stream(k);
    st->owner.set_parent(*v1);
    ASSERT_TRUE(t.add(*st));
  }
  auto* v2 = new session(1);
  std::vector<stream*> fresh;
  for (std::uint64_t k = 1; k <= 100; ++k) fresh.push_back(new stream(k));  // 0 goes, 100 comes
  CF::reset();
  const replace_result r = t.replace_with_children(*v1, *v2, fresh);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.swapped, 99u);
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(r.stats.objects, 101u) << "the old session and its 100 streams";
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(v2->streams.size(), 100u);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(t.find<session_hids>(guard, std::uint64_t{1}), v2);
    EXPECT_EQ(t.find<stream_hids>(guard, std::uint64_t{0}), nullptr);
    EXPECT_EQ(t.find<stream_hids>(guard, std::uint64_t{1}), fresh[0]);
    EXPECT_EQ(t.find<stream_hids>(guard, std::uint64_t{100}), fresh.back());
  }
  EXPECT_EQ(t.unregister(*v2).objects, 101u);
  EXPECT_EQ(t.policy<hlist_sessions>().destroyed, 2);
  EXPECT_EQ(t.policy<hlist_streams>().destroyed, 200);
  EXPECT_TRUE(t.index<stream_hids>().empty());
}

// --- issue 35: a child submitted to a reclaimer, then its parent -------------------------------

enum class reclaimer_kind { background, manual, attached };
const char* name_of(reclaimer_kind f) {
  return f == reclaimer_kind::background ? "background" : f == reclaimer_kind::manual ? "manual" : "attached";
}

/// Item 2: a child submitted, then its parent deleted with registry::try_unregister on the same
/// thread, nobody running the reclaimer (manual), or a background one that would need the writer
/// lock the parent's drain holds (hold_lock_through_drain): the parent's batch takes the child over.
void a_parent_deleted_after_its_child_was_submitted(reclaimer_kind f) {
  // 10 s, not 30: on cdc8a2b the background flavor got through after ~20 s (its reclaimer took the
  // writer lock while the parent's drain released it for a barrier), the manual one never.
  watchdog dog(std::chrono::seconds(10), std::string("a parent deleted after its child was submitted: ") + name_of(f));
  registry_options ro;
  ro.hold_lock_through_drain = true;
  table t(ro);
  async_options o;
  if (f != reclaimer_kind::background) {
    o.mode = reclaim_mode::manual;
    o.max_age = std::chrono::hours(1);
  }
  o.combine_registry_unregister = f == reclaimer_kind::attached;
  {
    async_unregister reclaimer(t, o);
    session* s = owned::open(t, 1, 2);
    stream* first = &*s->streams.begin();
    const submit_result r = reclaimer.try_submit(*first);
    ASSERT_TRUE(r);
    EXPECT_TRUE(first->going_away());
    EXPECT_EQ(t.try_unregister(*s).status, unregister_status::unregistered) << name_of(f);
    EXPECT_EQ(g_order.destroyed.load(), 3) << name_of(f) << ": the session and both streams";
    reclaimer.drain();
    EXPECT_TRUE(reclaimer.poll(r.ticket)) << name_of(f);
    EXPECT_EQ(reclaimer.stats().completed, reclaimer.stats().submitted) << name_of(f);
  }
  EXPECT_EQ(g_order.parent_before_child.load(), 0) << name_of(f);
  EXPECT_TRUE(t.index<stream_ids>().empty());
}

TEST_F(owned, a_parent_deleted_after_its_child_was_submitted_to_a_manual_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(reclaimer_kind::manual);
}
TEST_F(owned, a_parent_deleted_after_its_child_was_submitted_to_a_background_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(reclaimer_kind::background);
}
TEST_F(owned, a_parent_deleted_after_its_child_was_submitted_to_an_attached_reclaimer_takes_the_child_over) {
  a_parent_deleted_after_its_child_was_submitted(reclaimer_kind::attached);
}

/// Item 3: the parent's batch is running (inside GP #1, before its notify) when another thread
/// submits the parent's child by key: the parent's notify takes the child, and drain returns.
TEST_F(owned, a_child_submitted_by_key_while_its_parents_batch_runs_does_not_deadlock_drain) {
  watchdog dog(std::chrono::seconds(30), "a child submitted by key while its parent's batch is in GP #1");
  table t;
  async_unregister reclaimer(t, async_options{.mode = reclaim_mode::manual, .max_age = std::chrono::hours(1)});
  session* s = open(t, 1, 2);
  ASSERT_TRUE(reclaimer.submit(*s));
  submit_result child;
  {
    gp_gate_of<CF> gate;
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

}  // namespace
}  // namespace rcubatch::test
