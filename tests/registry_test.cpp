// registry: the façade over the primitives. Exact GP counts with the counting flavor (the indexes
// are real rculfhash tables on memb, used by this thread only); real memb and qsbr readers racing
// the batches, checking a poison word; the misuse it must refuse before changing anything.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <atomic>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/cascade.hpp"
#include "support/checking_readers.hpp"
#include "support/counting.hpp"
#include "support/flavors.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

struct item : registrable<item> {
  item(int i, std::string n) : id(i), name(std::move(n)) {}
  int id;
  std::string name;
  lfht_hook<item> by_id, by_name;
  std::atomic<std::uint64_t> poison{kAlive};
};
template <class F>
using item_by_id = lfht_index<item, &item::by_id, key_member<&item::id>, F>;
template <class F>
using item_by_name = lfht_index<item, &item::by_name, key_member<&item::name>, F>;
using by_id = item_by_id<flavor::memb>;
using by_name = item_by_name<flavor::memb>;

using CF = counting_flavor<struct registry_test_tag>;
static_assert(std::is_same_v<registry<indexed<item, by_id>>, basic_registry<default_flavor, std::mutex, indexed<item, by_id>>>);

/// Two indexes, no uninit: a batch unlinks nothing after GP #1, so it costs one GP.
struct items : indexed<item, by_id, by_name> {
  int destroyed = 0;
  void destroy(item* i) noexcept {
    ++destroyed;
    delete i;
  }
};
/// The same with a (void) uninit: the batch assumes it unlinked something, so it costs two GPs.
struct items_with_uninit : items {
  void uninit(item&) noexcept {}
};

struct registry_counting : counting_test<registry_test_tag> {
  thread_registration<flavor::memb> reg_;  // the indexes are memb rculfhash tables
};

TEST_F(registry_counting, add_find_unregister_one_costs_what_the_policy_says) {
  basic_registry<CF, std::mutex, items> one_gp;
  auto* a = new item(1, "a");
  ASSERT_TRUE(one_gp.add(*a));
  EXPECT_EQ(a->state(), reg_state::registered);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(one_gp.find<by_id>(guard, 1), a);
    EXPECT_EQ(one_gp.find<by_name>(guard, "a"), a);
  }
  EXPECT_EQ(CF::synchronizes(), 0u) << "add runs no grace period";
  const batch_stats st = one_gp.unregister(*a);
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_EQ(CF::synchronizes(), 1u);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(one_gp.policy<items>().destroyed, 1);
  EXPECT_TRUE(one_gp.index<by_id>().empty());
  EXPECT_TRUE(one_gp.index<by_name>().empty());

  CF::reset();
  basic_registry<CF, std::mutex, items_with_uninit> two_gps;
  auto* b = new item(2, "b");
  ASSERT_TRUE(two_gps.add(*b));
  EXPECT_EQ(two_gps.unregister(*b).grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
}

TEST_F(registry_counting, unregister_many_of_ten_thousand_costs_two_grace_periods) {
  constexpr int kN = 10'000;
  basic_registry<CF, std::mutex, items_with_uninit> reg;
  std::vector<item*> all;
  for (int i = 0; i < kN; ++i) {
    all.push_back(new item(i, "item-" + std::to_string(i)));
    ASSERT_TRUE(reg.add(*all.back()));
  }
  ASSERT_EQ(reg.index<by_id>().size(), static_cast<std::size_t>(kN));
  const batch_stats st = reg.unregister_many(all);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(st.objects, static_cast<std::size_t>(kN));
  EXPECT_EQ(reg.policy<items_with_uninit>().destroyed, kN);
  EXPECT_TRUE(reg.index<by_id>().empty());
  EXPECT_TRUE(reg.index<by_name>().empty());
}

TEST_F(registry_counting, unregister_many_with_an_object_named_twice_unregisters_it_once) {
  // As unreg_queue::push: the second name moves the object to the queue's tail, so the batch
  // holds it once — destroyed once, counted once (push_range, by contrast, refuses a repeat).
  basic_registry<CF, std::mutex, items_with_uninit> reg;
  std::vector<item*> all;
  for (int i = 0; i < 3; ++i) {
    all.push_back(new item(i, "item-" + std::to_string(i)));
    ASSERT_TRUE(reg.add(*all.back()));
  }
  const std::vector<item*> named{all[0], all[1], all[0], all[2], all[2]};
  const batch_stats st = reg.unregister_many(named);
  EXPECT_EQ(st.objects, 3u);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(reg.policy<items_with_uninit>().destroyed, 3);
  EXPECT_TRUE(reg.index<by_id>().empty());
}

TEST_F(registry_counting, a_duplicate_add_leaves_nothing_half_published) {
  basic_registry<CF, std::mutex, items> reg;
  auto* a = new item(1, "a");
  ASSERT_TRUE(reg.add(*a));

  // Refused by the second index (the name is taken) after the first one linked it: undone, and a
  // grace period before add returns, so the caller may free it at once.
  auto* same_name = new item(2, "a");
  EXPECT_FALSE(reg.add(*same_name));
  EXPECT_EQ(same_name->state(), reg_state::uninitialized);
  EXPECT_FALSE(same_name->by_id.is_linked());
  EXPECT_FALSE(same_name->by_name.is_linked());
  EXPECT_EQ(CF::synchronizes(), 1u) << "it was visible in by_id for a moment";
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(reg.find<by_id>(guard, 2), nullptr);
    EXPECT_EQ(reg.find<by_name>(guard, "a"), a);
  }
  EXPECT_EQ(reg.index<by_id>().size(), 1u);
  EXPECT_EQ(reg.index<by_name>().size(), 1u);
  delete same_name;  // uninitialized and unlinked: legal

  // Refused by the first index: never visible, no grace period.
  auto* same_id = new item(1, "b");
  EXPECT_FALSE(reg.add(*same_id));
  EXPECT_EQ(CF::synchronizes(), 1u);
  EXPECT_FALSE(same_id->by_name.is_linked());
  delete same_id;

  reg.unregister(*a);
}

TEST_F(registry_counting, misuse_is_refused_before_anything_changes) {
  basic_registry<CF, std::mutex, items> reg;
  auto* a = new item(1, "a");
  ASSERT_TRUE(reg.add(*a));

  // Adding it again: register_twice, no publish attempted (so no grace period either).
  try {
    reg.add(*a);
    ADD_FAILURE() << "a second add of a registered object must throw";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::register_twice);
  }
  EXPECT_EQ(CF::synchronizes(), 0u);
  EXPECT_EQ(reg.index<by_id>().size(), 1u);

  // add / unregister inside a read-side section of the registry's flavor.
  {
    read_guard<CF> guard;
    auto* b = new item(2, "b");
    try {
      reg.add(*b);
      ADD_FAILURE() << "add inside a read section must throw";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::blocking_in_read_section);
    }
    EXPECT_FALSE(b->by_id.is_linked());
    delete b;
    try {
      reg.unregister(*a);
      ADD_FAILURE() << "unregister inside a read section must throw";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::blocking_in_read_section);
    }
    scoped_misuse_policy quiet(misuse_policy::report, +[](misuse_kind, std::string_view) noexcept {});
    EXPECT_TRUE(reg.unregister(*a).refused);
  }
  EXPECT_EQ(a->state(), reg_state::registered);
  EXPECT_EQ(CF::synchronizes(), 0u);

  // Unregistering an object that was never added; a null pointer in a range: nothing changes,
  // the objects queued before it stay registered.
  item stranger(3, "c");
  EXPECT_THROW(reg.unregister(stranger), misuse_error);
  std::vector<item*> with_null{a, nullptr};
  EXPECT_THROW(reg.unregister_many(with_null), std::invalid_argument);
  EXPECT_EQ(a->state(), reg_state::registered);
  EXPECT_EQ(CF::synchronizes(), 0u);

  EXPECT_EQ(reg.unregister(*a).objects, 1u);
}

// --- several types: sessions own streams, which go in the same batch -----------------------------

// The session/stream cascade: tests/support/cascade.hpp (its sessions' uninit elides their own
// GP: the batch is dismantling).

/// A dellink written against the primitives: the queue set converts to it.
void dellink(session& s, unreg_queue<session>& q) { q.push(s); }

struct registry_cascade : registry_counting {
  registry_cascade() { record_into(reg, log_); }
  cascade_log log_;
  cascade_registry<CF> reg;
};

TEST_F(registry_cascade, unregister_with_takes_the_streams_in_the_same_two_grace_periods) {
  session* s1 = open_session(reg, 1, 3);
  session* s2 = open_session(reg, 2, 2);
  {
    read_guard<flavor::memb> guard;
    ASSERT_NE(reg.find<stream_by_id>(guard, 12), nullptr);
  }
  const batch_stats st = reg.unregister_with([&](auto& q) {
    dellink(*s1, q);  // through the conversion to unreg_queue<session>&
    q.push(*s2);      // through the queue set
  });
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_EQ(st.objects, 7u);
  EXPECT_EQ(st.dependents_added, 5u);
  EXPECT_TRUE(reg.index<session_by_id>().empty());
  EXPECT_TRUE(reg.index<stream_by_id>().empty());
  ASSERT_EQ(log_.destroyed.size(), 7u);
  // Each session after its own streams (ref_drain.hpp, guarantee 2).
  for (int i = 0; i < 3; ++i) EXPECT_LT(log_.position("stream " + std::to_string(10 + i)), log_.position("session 1"));
  for (int i = 0; i < 2; ++i) EXPECT_LT(log_.position("stream " + std::to_string(20 + i)), log_.position("session 2"));
}

TEST_F(registry_cascade, a_held_session_is_destroyed_after_its_streams_and_after_its_holder_lets_go) {
  session* s = open_session(reg, 1, 3);
  std::latch streams_gone(3);
  log_.streams_gone = &streams_gone;
  s->refs().hold();
  bool alive_when_streams_gone = false;
  std::thread holder([&] {
    streams_gone.wait();  // the batch has destroyed every stream, and must be waiting for us
    alive_when_streams_gone = !s->destroyed.load();
    s->refs().put();
  });
  const batch_stats st = reg.unregister(*s);
  holder.join();
  EXPECT_TRUE(alive_when_streams_gone);
  EXPECT_EQ(st.grace_periods, 2u);
  ASSERT_EQ(log_.destroyed.size(), 4u);
  EXPECT_EQ(log_.destroyed.back(), "session 1");
}

// --- the writer lock during the waits ------------------------------------------------------------

TEST_F(registry_counting, the_lock_is_held_through_the_batch_unless_unlock_during_waits) {
  for (bool udw : {false, true}) {
    int lock_free_during_gp = 0;
    basic_registry<CF, std::mutex, items_with_uninit> reg(registry_options{.unlock_during_waits = udw});
    CF::on_synchronize = [&] {  // probes the writer lock from inside each grace period
      if (reg.writer_lock().try_lock()) {
        reg.writer_lock().unlock();
        ++lock_free_during_gp;
      }
    };
    auto* a = new item(1, "a");
    ASSERT_TRUE(reg.add(*a));
    EXPECT_EQ(reg.unregister(*a).grace_periods, 2u);
    EXPECT_EQ(lock_free_during_gp, udw ? 2 : 0) << "unlock_during_waits = " << udw;
    CF::on_synchronize = nullptr;  // it captures this iteration's registry
  }
}

// --- real readers: never a destroyed object ------------------------------------------------------

/// Keeps destroyed items (poisoned) until the readers stopped, so a reader that still reached
/// one would read the poison, not freed memory.
template <class F>
struct poisoning_items : indexed<item, item_by_id<F>> {
  std::vector<std::unique_ptr<item>>* graveyard = nullptr;
  void destroy(item* i) noexcept {
    i->poison.store(kPoison);
    graveyard->emplace_back(i);  // the test reserved room: no allocation here
  }
};

template <class F>
class registry_real : public ::testing::Test {};
TYPED_TEST_SUITE(registry_real, two_reader_disciplines<>);

TYPED_TEST(registry_real, a_reader_never_sees_a_destroyed_object) {
  using F = TypeParam;
  using index = item_by_id<F>;
  constexpr int kN = 2'000;
  constexpr int kRounds = 4;
  thread_registration<F> writer;
  basic_registry<F, std::mutex, poisoning_items<F>> reg;
  std::vector<std::unique_ptr<item>> graveyard;
  graveyard.reserve(kN * kRounds);
  reg.template policy<poisoning_items<F>>().graveyard = &graveyard;

  std::atomic<bool> stop{false};
  std::atomic<long> found{0}, violations{0};
  std::latch reader_ready(1);
  std::thread reader([&] {
    thread_registration<F> reg_reader;
    reader_ready.count_down();
    for (unsigned k = 0; !stop.load(std::memory_order_acquire); ++k) {
      {
        read_guard<F> guard;
        for (int j = 0; j < 16; ++j) {
          const item* it = reg.template find<index>(guard, static_cast<int>((k * 16 + j) % (kN * kRounds)));
          if (it == nullptr) continue;
          found.fetch_add(1, std::memory_order_relaxed);
          if (it->poison.load(std::memory_order_relaxed) != kAlive) violations.fetch_add(1);
        }
      }
      quiescent_state<F>();
    }
  });
  reader_ready.wait();

  for (int round = 0; round < kRounds; ++round) {
    std::vector<item*> mine;
    for (int i = 0; i < kN; ++i) {
      mine.push_back(new item(round * kN + i, ""));
      ASSERT_TRUE(reg.add(*mine.back()));
    }
    const long seen = found.load();
    while (found.load() < seen + 500) std::this_thread::yield();  // a state: it reached live objects
    // Three shapes of teardown: one object, a range, a queue filled by hand.
    EXPECT_EQ(reg.unregister(*mine[0]).objects, 1u);
    const std::vector<item*> half(mine.begin() + 1, mine.begin() + kN / 2);
    const batch_stats many = reg.unregister_many(half);
    EXPECT_EQ(many.objects, half.size());
    EXPECT_LE(many.grace_periods + many.gps_elided, 2u);
    reg.unregister_with([&](unreg_queue<item>& q) {
      for (int i = kN / 2; i < kN; ++i) q.push(*mine[static_cast<std::size_t>(i)]);
    });
    EXPECT_TRUE(reg.template index<index>().empty());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(graveyard.size(), static_cast<std::size_t>(kN * kRounds));
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(found.load(), 0);
}

// --- reliability, round 3 (issue 22): each of these failed (or hung) on c93d650 ----------------

TEST_F(registry_counting, an_object_of_another_registry_is_refused_with_nothing_changed) {
  basic_registry<CF, std::mutex, items> mine, theirs;
  auto* x = new item(1, "x");
  ASSERT_TRUE(theirs.add(*x));
  try {
    mine.unregister(*x);
    ADD_FAILURE() << "unregister through the wrong registry must throw";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::wrong_registry);
  }
  {
    misuse_capture cap;
    scoped_misuse_policy p(misuse_policy::report, cap);
    const std::vector<item*> one{x};
    EXPECT_EQ(mine.unregister_many(one).objects, 0u);
    EXPECT_EQ(cap.last_kind, misuse_kind::wrong_registry);
  }
  EXPECT_EQ(x->state(), reg_state::registered);
  EXPECT_EQ(CF::synchronizes(), 0u);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(theirs.find<by_id>(guard, 1), x);
  }
  EXPECT_EQ(theirs.unregister(*x).objects, 1u);
}

/// Destroys without freeing: the test owns the objects, so it may name one again after its batch.
struct items_kept : indexed<item, by_id, by_name> {
  int destroyed = 0;
  void destroy(item*) noexcept { ++destroyed; }
};

TEST_F(registry_counting, a_second_unregister_of_the_same_object_under_report_is_refused_and_says_so) {
  basic_registry<CF, std::mutex, items_kept> reg;
  item x(1, "x");
  ASSERT_TRUE(reg.add(x));
  EXPECT_EQ(reg.unregister(x).objects, 1u);
  EXPECT_EQ(x.state(), reg_state::released);
  const auto gps = CF::synchronizes();
  misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::report, cap);
  const batch_stats again = reg.unregister(x);
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::already_unregistering);
  EXPECT_TRUE(again.refused) << "the header: stats.refused under report when refused";
  EXPECT_EQ(again.objects, 0u);
  const std::vector<item*> both{&x, &x};
  EXPECT_TRUE(reg.unregister_many(both).refused) << "every object it names refused";
  EXPECT_EQ(CF::synchronizes(), gps) << "no batch, no grace period";
  EXPECT_EQ(reg.policy<items_kept>().destroyed, 1) << "destroyed once";
  // A refused object next to a registered one: the call is not refused, the other one goes.
  item y(2, "y");
  ASSERT_TRUE(reg.add(y));
  const std::vector<item*> mixed{&x, &y};
  const batch_stats st = reg.unregister_many(mixed);
  EXPECT_FALSE(st.refused);
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(reg.policy<items_kept>().destroyed, 2);
}

/// A cascade to a type the batch has no lane for: the parent's notify queues a stream, and the
/// registry has no policy for streams.
struct sessions_only : indexed<session, session_by_id> {
  void notify(session& s, batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);
  }
  void destroy(session* s) noexcept { delete s; }
};

TEST_F(registry_counting, a_cascade_to_a_type_without_a_lane_is_fatal_before_its_parent_is_destroyed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto cascade_without_lane = [] {
    basic_registry<CF, std::mutex, sessions_only> reg;
    auto* s = new session(1);
    auto* st = new stream(10);
    st->mark_registered();  // registered by hand in some other table
    s->streams.push_back(st);
    reg.add(*s);
    reg.unregister(*s);
  };
  EXPECT_DEATH(cascade_without_lane(), "its parent would be destroyed while it can still be found");
}

/// Destroy calls back (a test hook).
struct items_calling_back : items {
  std::function<void(item&)> on_destroy;
  std::function<void(item&)> on_notify;
  void notify(item& i) noexcept {
    if (on_notify) on_notify(i);
  }
  void destroy(item* i) noexcept {
    if (on_destroy) on_destroy(*i);
    items::destroy(i);
  }
};

TEST_F(registry_counting, a_hook_calling_the_registry_under_its_lock_is_refused_not_a_deadlock) {
  watchdog dog(std::chrono::seconds(30), "a hook calling the registry");
  basic_registry<CF, std::mutex, items_calling_back> reg;
  auto* late = new item(9, "late");
  misuse_log log;
  reg.policy<items_calling_back>().on_notify = [&](item&) {  // runs under the writer lock
    scoped_misuse_policy p(misuse_policy::report, log);
    EXPECT_FALSE(reg.add(*late));
    EXPECT_TRUE(reg.unregister(*late).refused);
  };
  auto* x = new item(1, "x");
  ASSERT_TRUE(reg.add(*x));
  EXPECT_EQ(reg.unregister(*x).objects, 1u);
  ASSERT_EQ(log.kinds.size(), 2u);
  EXPECT_EQ(log.kinds[0], misuse_kind::holds_writer_lock);
  EXPECT_EQ(log.kinds[1], misuse_kind::holds_writer_lock);
  EXPECT_EQ(late->state(), reg_state::uninitialized);
  delete late;
}

TEST_F(registry_counting, a_holder_that_writes_while_its_object_drains_is_not_blocked) {
  // Default options: the ref drain runs without the writer lock (the kernel's order). The holder
  // of X adds and unregisters other objects while another thread's batch waits for X.
  watchdog dog(std::chrono::seconds(30), "a holder writing while its object drains");
  basic_registry<CF, std::mutex, items_calling_back> reg;
  std::atomic<int> destroyed_x{0};
  reg.policy<items_calling_back>().on_destroy = [&](item& i) {
    if (i.id == 1) ++destroyed_x;
  };
  auto* x = new item(1, "x");
  auto* z = new item(3, "z");
  ASSERT_TRUE(reg.add(*x));
  ASSERT_TRUE(reg.add(*z));
  x->refs().hold();
  std::thread other([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(reg.unregister(*x).objects, 1u);
  });
  while (x->state() != reg_state::unregistered) std::this_thread::yield();  // the drain waits for X
  auto* y = new item(2, "y");
  EXPECT_TRUE(reg.add(*y));                   // the holder writes: not blocked by its own hold
  EXPECT_EQ(reg.unregister(*z).objects, 1u);  // an unrelated writer is not delayed by X
  EXPECT_EQ(destroyed_x.load(), 0);           // ...and both happened while X was still held
  x->refs().put();
  other.join();
  EXPECT_EQ(destroyed_x.load(), 1);
  EXPECT_EQ(reg.unregister(*y).objects, 1u);
}

/// publish links the object, then fails: its links are undone, but readers may have seen it.
struct items_failing_publish : items {
  publish_result publish(item& i) {
    const publish_result r = items::publish(i);
    if (r == publish_result::published) {
      unlist(i);
      throw std::runtime_error("publish: failed after exposing the object");
    }
    return r;
  }
};

TEST_F(registry_counting, a_publish_that_throws_after_exposing_the_object_waits_a_grace_period) {
  basic_registry<CF, std::mutex, items_failing_publish> reg;
  item x(1, "x");
  EXPECT_THROW(reg.add(x), std::runtime_error);
  EXPECT_EQ(CF::synchronizes(), 1u) << "a reader may hold it: the caller frees it after add returns";
  EXPECT_EQ(x.state(), reg_state::uninitialized);
}

/// notify ties a sub-object to its owner: disposed right after the owner's destroy, not before.
struct items_tying : items_calling_back {
  std::vector<std::string>* log = nullptr;
  void notify(item& i, batch& b) noexcept {
    b.retire_with(i, new int(i.id), [log = log](int* p) noexcept {
      log->push_back("dispose " + std::to_string(*p));
      delete p;
    });
  }
};

TEST_F(registry_counting, a_sub_object_tied_in_notify_is_disposed_right_after_its_owner) {
  basic_registry<CF, std::mutex, items_tying> reg;
  std::vector<std::string> log;
  reg.policy<items_tying>().log = &log;
  reg.policy<items_tying>().on_destroy = [&](item& i) { log.push_back("destroy " + std::to_string(i.id)); };
  auto* a = new item(1, "a");
  auto* b = new item(2, "b");
  ASSERT_TRUE(reg.add(*a));
  ASSERT_TRUE(reg.add(*b));
  const std::vector<item*> both{a, b};
  EXPECT_EQ(reg.unregister_many(both).objects, 2u);
  EXPECT_EQ(log, (std::vector<std::string>{"destroy 1", "dispose 1", "destroy 2", "dispose 2"}));
}

// --- delete by key, and races that are not misuse (issue 23, item 1) -----------------------------

TEST_F(registry_counting, try_unregister_by_key_tells_unregistered_from_not_found) {
  basic_registry<CF, std::mutex, items> reg;
  auto* a = new item(1, "a");
  auto* b = new item(2, "b");
  ASSERT_TRUE(reg.add(*a));
  ASSERT_TRUE(reg.add(*b));
  const unregister_result r = reg.try_unregister<by_name>(std::string("a"));
  EXPECT_TRUE(r);
  EXPECT_EQ(r.status, unregister_status::unregistered);
  EXPECT_EQ(r.unregistered, 1u);
  EXPECT_EQ(r.stats.objects, 1u);
  const unregister_result again = reg.try_unregister<by_name>(std::string("a"));
  EXPECT_FALSE(again);
  EXPECT_EQ(again.status, unregister_status::not_found);
  EXPECT_EQ(again.stats.objects, 0u);
  EXPECT_EQ(CF::synchronizes(), 1u) << "not found: no batch, no grace period";
  // Many keys in one batch: found, missing, and a key named twice.
  auto* c = new item(3, "c");
  ASSERT_TRUE(reg.add(*c));
  const std::vector<int> keys{2, 9, 3, 2};
  const unregister_result many = reg.try_unregister_many<by_id>(keys);
  EXPECT_EQ(many.status, unregister_status::unregistered);
  EXPECT_EQ(many.unregistered, 2u);
  EXPECT_EQ(many.missed, 2u);
  EXPECT_EQ(many.stats.objects, 2u);
  EXPECT_EQ(CF::synchronizes(), 2u);
  EXPECT_TRUE(reg.index<by_id>().empty());
}

TEST_F(registry_counting, try_unregister_by_object_reports_a_lost_race_as_a_result) {
  basic_registry<CF, std::mutex, items> reg;
  auto* a = new item(1, "a");
  ASSERT_TRUE(reg.add(*a));
  a->refs().hold();  // the caller knows it is alive: it holds it
  std::thread other([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(reg.try_unregister(*a).status, unregister_status::unregistered);
  });
  while (a->state() != reg_state::unregistered) std::this_thread::yield();  // its batch drains
  const unregister_result lost = reg.try_unregister(*a);  // no exception: a lost race
  EXPECT_EQ(lost.status, unregister_status::already_unregistering);
  EXPECT_EQ(lost.missed, 1u);
  a->refs().put();
  other.join();
  // Misuse stays misuse: an object never registered.
  item stranger(7, "s");
  EXPECT_THROW(reg.try_unregister(stranger), misuse_error);
}

/// Destroys counted atomically: two threads' drains (outside the writer lock) destroy concurrently.
struct items_counted_atomically : indexed<item, by_id, by_name> {
  std::atomic<int> destroyed{0};
  void destroy(item* i) noexcept {
    destroyed.fetch_add(1);
    delete i;
  }
};

TEST(registry_race, two_threads_deleting_the_same_key_exactly_one_wins) {
  // 10,000 keys; two threads walk them in the same order, each deleting every key, so they race
  // for each one (real memb grace periods). Exactly one `unregistered` per key, the other
  // `not_found`; no exception; nothing freed twice (ASan).
  constexpr int kKeys = 10'000;
  watchdog dog(std::chrono::seconds(120), "two threads deleting the same keys");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  basic_registry<flavor::memb, std::mutex, items_counted_atomically> reg(domain);
  for (int k = 0; k < kKeys; ++k) ASSERT_TRUE(reg.add(*new item(k, std::to_string(k))));
  std::vector<std::atomic<int>> wins(kKeys), losses(kKeys);
  std::latch start(2);
  auto deleter = [&] {
    thread_registration<flavor::memb> r;
    start.arrive_and_wait();
    for (int k = 0; k < kKeys; ++k)
      (reg.try_unregister<by_id>(k) ? wins : losses)[static_cast<std::size_t>(k)].fetch_add(1);
  };
  std::thread a(deleter), b(deleter);
  a.join();
  b.join();
  int bad = 0;
  for (int k = 0; k < kKeys; ++k)
    if (wins[static_cast<std::size_t>(k)].load() != 1 || losses[static_cast<std::size_t>(k)].load() != 1) ++bad;
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(reg.policy<items_counted_atomically>().destroyed.load(), kKeys);
  EXPECT_TRUE(reg.index<by_id>().empty());
}

// --- drains and call_rcu threads (issue 34, item 5) ---------------------------------------------

using memb_items_registry = basic_registry<flavor::memb, std::mutex, items_counted_atomically>;

/// What a call_rcu callback of these tests works on (a callback is a plain function: it finds
/// its test through this; one test at a time).
struct deferred_work {
  rcu_head head{};
  memb_items_registry* reg = nullptr;
  item* obj = nullptr;
  std::latch done{1};
  std::size_t objects = 0;
  bool added = false;
};
deferred_work* g_deferred = nullptr;

/// A deferred teardown: unregisters g_deferred->obj from a memb call_rcu worker.
void unregister_deferred(rcu_head*) {
  g_deferred->objects = g_deferred->reg->unregister(*g_deferred->obj).objects;
  g_deferred->done.count_down();
}
/// A deferred publish: takes the writer lock (add) from a memb call_rcu worker.
void add_deferred(rcu_head*) {
  g_deferred->added = g_deferred->reg->add(*g_deferred->obj);
  g_deferred->done.count_down();
}

TEST(registry_call_rcu, an_unregister_from_a_call_rcu_callback_completes_once_the_holder_lets_go_during_its_drain) {
  watchdog dog(std::chrono::seconds(30), "unregister from a call_rcu callback, object held into the drain");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  std::latch drain_sleeps(1);
  std::atomic<bool> told{false};
  registry_options opts;  // default: the lock is released for the drain
  opts.rollback.drain.before_sleep = [&] {
    if (!told.exchange(true)) drain_sleeps.count_down();
  };
  memb_items_registry reg(opts, domain);
  auto* x = new item(1, "x");
  ASSERT_TRUE(reg.add(*x));
  x->refs().hold();
  deferred_work work;
  work.reg = &reg;
  work.obj = x;
  g_deferred = &work;
  call_after_grace_period<flavor::memb, unregister_deferred>(&work.head);
  drain_sleeps.wait();  // the drain on the call_rcu worker found X held and is about to sleep
  EXPECT_EQ(reg.policy<items_counted_atomically>().destroyed.load(), 0);
  x->refs().put();
  work.done.wait();
  EXPECT_EQ(work.objects, 1u);
  EXPECT_EQ(reg.policy<items_counted_atomically>().destroyed.load(), 1);
  EXPECT_EQ(domain.stats().barriers, 0u) << "no rcu_barrier on a call_rcu worker: it would wait for itself";
  g_deferred = nullptr;
  domain.barrier();  // call_after_grace_period's requirement: nothing queued at exit
}

TEST(registry_call_rcu, a_queued_callback_that_takes_the_writer_lock_does_not_deadlock_a_drain_holding_it) {
  watchdog dog(std::chrono::seconds(30), "hold_lock_through_drain and a call_rcu callback taking the writer lock");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  deferred_work work;
  std::atomic<bool> queued{false};
  registry_options opts;
  opts.hold_lock_through_drain = true;
  opts.rollback.drain.before_sleep = [&] {  // runs before the drain's barrier, lock held
    if (!queued.exchange(true)) call_after_grace_period<flavor::memb, add_deferred>(&work.head);
  };
  memb_items_registry reg(opts, domain);
  auto* x = new item(1, "x");
  ASSERT_TRUE(reg.add(*x));
  x->refs().hold();
  work.reg = &reg;
  work.obj = new item(2, "y");
  g_deferred = &work;
  std::size_t unregistered = 0;
  std::thread writer([&] {
    thread_registration<flavor::memb> r;
    unregistered = reg.unregister(*x).objects;
  });
  work.done.wait();  // the callback took the lock during the drain's barrier
  EXPECT_TRUE(work.added);
  EXPECT_EQ(reg.policy<items_counted_atomically>().destroyed.load(), 0) << "X is still held";
  x->refs().put();
  writer.join();
  EXPECT_EQ(unregistered, 1u);
  EXPECT_EQ(reg.policy<items_counted_atomically>().destroyed.load(), 1);
  {
    read_guard<flavor::memb> guard;
    EXPECT_NE(reg.find<by_id>(guard, 2), nullptr) << "the deferred add published Y";
  }
  EXPECT_EQ(reg.unregister(*work.obj).objects, 1u);
  g_deferred = nullptr;
  domain.barrier();
}

// --- atomic replace (issue 23, item 2) ------------------------------------------------------------

TEST_F(registry_counting, replace_swaps_in_every_index_and_tears_the_old_one_down) {
  basic_registry<CF, std::mutex, items> reg;
  auto* v1 = new item(1, "cfg");
  ASSERT_TRUE(reg.add(*v1));
  auto* v2 = new item(1, "cfg");
  const batch_stats st = reg.replace(*v1, *v2).stats;
  EXPECT_EQ(st.objects, 1u);
  EXPECT_EQ(st.grace_periods, 1u) << "no uninit: the old version costs one GP";
  EXPECT_EQ(reg.policy<items>().destroyed, 1);
  EXPECT_EQ(v2->state(), reg_state::registered);
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(reg.find<by_id>(guard, 1), v2);
    EXPECT_EQ(reg.find<by_name>(guard, "cfg"), v2);
  }
  // A key that differs in one index: nothing changed, the old version stays published.
  item wrong(1, "other");
  EXPECT_THROW(reg.replace(*v2, wrong), std::invalid_argument);
  EXPECT_EQ(v2->state(), reg_state::registered);
  EXPECT_EQ(wrong.state(), reg_state::uninitialized);
  EXPECT_FALSE(wrong.by_id.is_linked());
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(reg.find<by_id>(guard, 1), v2);
    EXPECT_EQ(reg.find<by_name>(guard, "cfg"), v2);
  }
  // A new object that is not fresh: misuse, nothing changed.
  auto* other = new item(2, "x");
  ASSERT_TRUE(reg.add(*other));
  EXPECT_THROW(reg.replace(*v2, *other), misuse_error);
  EXPECT_EQ(reg.policy<items>().destroyed, 1);
  const std::vector<item*> rest{v2, other};
  EXPECT_EQ(reg.unregister_many(rest).objects, 2u);
}

/// Poisons at destroy; the test frees after the readers stop.
struct items_poisoned_at_destroy : indexed<item, by_id, by_name> {
  std::vector<std::unique_ptr<item>>* graveyard = nullptr;
  void destroy(item* i) noexcept {
    i->poison.store(kPoison);
    graveyard->emplace_back(i);  // reserved by the test: no allocation here
  }
};

TEST(registry_replace, readers_always_find_exactly_one_live_version) {
  // 2 readers look the key up continuously while 1,000 replaces run (real memb GPs): every lookup
  // finds a version (0 misses) and never a destroyed one (0 poisoned).
  constexpr int kReplaces = 1'000;
  watchdog dog(std::chrono::seconds(120), "replace under readers");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  basic_registry<flavor::memb, std::mutex, items_poisoned_at_destroy> reg(domain);
  std::vector<std::unique_ptr<item>> graveyard;
  graveyard.reserve(kReplaces + 1);
  reg.policy<items_poisoned_at_destroy>().graveyard = &graveyard;
  item* current = new item(7, "cfg");
  ASSERT_TRUE(reg.add(*current));
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t, const read_guard<flavor::memb>& guard) {
    const item* by_key = reg.find<by_id>(guard, 7);
    const item* by_name_key = reg.find<by_name>(guard, "cfg");
    return lookup_outcome{.missed = by_key == nullptr || by_name_key == nullptr,
                          .poisoned = (by_key && by_key->poison.load() != kAlive) ||
                                      (by_name_key && by_name_key->poison.load() != kAlive)};
  });
  unsigned gps = 0;
  for (int i = 0; i < kReplaces; ++i) {
    auto* next = new item(7, "cfg");
    const batch_stats st = reg.replace(*current, *next).stats;
    gps += st.grace_periods;
    current = next;
  }
  const lookup_tally seen = readers.stop();
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.misses, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_EQ(gps, static_cast<unsigned>(kReplaces)) << "one GP per replace (no uninit)";
  EXPECT_EQ(graveyard.size(), static_cast<std::size_t>(kReplaces));
  EXPECT_EQ(reg.unregister(*current).objects, 1u);
}

}  // namespace
}  // namespace rcubatch::test
