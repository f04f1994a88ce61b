// owned.hpp: the parent→children relation the library keeps. Exact GP counts on the counting
// flavor (the indexes are real rculfhash tables on memb, used by this thread only); the destroy
// order checked in every destroy hook; children deleted alone (by key, by object, submitted to an
// async_unregister) never reaching a later parent batch; the misuse add refuses.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

struct session;
struct stream;

/// A grandchild: a stream owns chunks (depth 3).
struct chunk : registrable<chunk> {
  explicit chunk(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<chunk> by_id;
  owner_hook<stream> owner;
};
struct stream : registrable<stream> {
  explicit stream(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<stream> by_id;
  owner_hook<session> owner;
  owned_list<chunk, &chunk::owner> chunks;
  std::atomic<int> alive_chunks{0};  // decremented by each chunk's destroy: 0 when the stream's destroy runs
};
struct session : registrable<session> {
  explicit session(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<session> by_id;
  owned_list<stream, &stream::owner> streams;
  std::atomic<int> alive_streams{0};  // decremented by each stream's destroy: 0 when the session's destroy runs
};
using session_ids = lfht_index<session, &session::by_id, key_member<&session::id>, flavor::memb>;
using stream_ids = lfht_index<stream, &stream::by_id, key_member<&stream::id>, flavor::memb>;
using chunk_ids = lfht_index<chunk, &chunk::by_id, key_member<&chunk::id>, flavor::memb>;

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
struct chunk_policy : indexed<chunk, chunk_ids> {
  void destroy(chunk* c) noexcept {
    if (stream* st = c->owner.parent()) --st->alive_chunks;
    g_order.destroyed.fetch_add(1);
    delete c;
  }
};

using CF = counting_flavor<struct owned_test_tag>;
using table = basic_registry<CF, std::mutex, session_policy, stream_policy, chunk_policy>;

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

TEST_F(owned, a_child_submitted_to_a_reclaimer_leaves_the_list_at_submit) {
  watchdog dog(std::chrono::seconds(30), "a submitted child, then its parent");
  table t;
  async_unregister reclaimer(t, async_options{.mode = reclaim_mode::manual});
  session* s = open(t, 1, 3);
  stream* first = &*s->streams.begin();
  ASSERT_TRUE(reclaimer.submit(*first));
  EXPECT_EQ(s->streams.size(), 2u);
  // Before the reclaimer's batch runs, the session goes: its batch does not take the submitted
  // stream, and waits for its destroy (the edge the submit recorded) before destroying the session.
  std::thread parent([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(t.unregister(*s).objects, 3u);
  });
  while (s->state() != reg_state::unregistered) std::this_thread::yield();  // its drain waits
  EXPECT_EQ(g_order.destroyed.load(), 2) << "its other two streams; the session waits for the submitted one";
  reclaimer.drain();
  parent.join();
  EXPECT_EQ(g_order.destroyed.load(), 4);
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

}  // namespace
}  // namespace rcubatch::test
