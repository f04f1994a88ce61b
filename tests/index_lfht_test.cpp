// lfht_index: the typed rculfhash wrapper, over the four liburcu flavors with real reader threads.
// The abort-on-misuse checks are under test, in every build type — and they are on by default,
// NDEBUG (the dev and bench presets, every CMake Release build) or not: nothing defines
// RCUBATCH_INDEX_CHECKS here.
#include <rcubatch/index/lfht_index.hpp>
static_assert(RCUBATCH_INDEX_CHECKS == 1, "lfht_index's read-side checks must be on unless the user opts out");

#include <rcubatch.hpp>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <ranges>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/flavors.hpp"
#include "support/index_session.hpp"
#include "support/watchdog.hpp"
#include "support/misuse_capture.hpp"

namespace rcubatch {
namespace {

constexpr std::uint64_t kAlive = test::kSessionAlive;
constexpr std::uint64_t kPoison = test::kSessionPoison;
using session = test::indexed_session<lfht_hook>;
static_assert(!std::is_standard_layout_v<session>);
using arena = test::session_arena<session>;
using test::find_in_guard;
using test::ids_equal_to;

template <class F>
using name_index = lfht_index<session, &session::by_name, key_member<&session::name>, F>;
template <class F>
using id_index = lfht_index<session, &session::by_id, key_member<&session::id>, F>;
static_assert(std::ranges::input_range<name_index<flavor::memb>>);

template <class F>
class lfht_index_test : public ::testing::Test {
 protected:
  thread_registration<F> reg_;
  arena arena_;
};
TYPED_TEST_SUITE(lfht_index_test, test::real_flavors, test::flavor_names);


TYPED_TEST(lfht_index_test, add_unique_refuses_a_duplicate_key_and_keeps_the_first) {
  name_index<TypeParam> index;
  session& a = this->arena_.make("alice", 1);
  session& dup = this->arena_.make("alice", 2);
  EXPECT_TRUE(index.add_unique(a));
  EXPECT_FALSE(index.add_unique(dup));
  EXPECT_EQ(index.size(), 1u);
  EXPECT_FALSE(dup.by_name.is_linked()) << "a refused object stays free to reuse";
  EXPECT_EQ(find_in_guard(index, std::string("alice")), &a);
  EXPECT_TRUE(index.unlink(a));
}


TYPED_TEST(lfht_index_test, add_links_duplicates_and_for_each_equal_visits_each_once) {
  name_index<TypeParam> index;
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(index.add(this->arena_.make("x", i)));
  ASSERT_TRUE(index.add(this->arena_.make("y", 4)));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(index.add(this->arena_.make("other" + std::to_string(i), 100 + i)));
  EXPECT_EQ(index.size(), 44u);
  EXPECT_EQ(ids_equal_to(index, "x"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ids_equal_to(index, "y"), (std::vector<int>{4}));
  EXPECT_EQ(ids_equal_to(index, "z"), (std::vector<int>{}));
  session* one = find_in_guard(index, "x");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->name, "x") << "find returns one of the duplicates";
  EXPECT_FALSE(index.add_unique(this->arena_.make("x", 5))) << "add_unique still refuses a taken key";
  session& second = *this->arena_.all[1];
  EXPECT_TRUE(index.unlink(second));
  EXPECT_EQ(ids_equal_to(index, "x"), (std::vector<int>{1, 3})) << "unlinking one duplicate keeps the others";
  for (auto& s : this->arena_.all) index.unlink(*s);
  EXPECT_TRUE(index.empty());
}

TYPED_TEST(lfht_index_test, add_of_a_linked_object_is_diagnosed_and_changes_nothing) {
  name_index<TypeParam> index;
  session& a = this->arena_.make("alice", 1);
  ASSERT_TRUE(index.add(a));
  const unsigned long before = misuse_count(misuse_kind::register_twice);
  EXPECT_THROW(index.add(a), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::register_twice), before + 1);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(ids_equal_to(index, "alice"), (std::vector<int>{1}));
  EXPECT_TRUE(index.unlink(a));
}

TYPED_TEST(lfht_index_test, finds_a_string_key_by_string_view_and_by_literal) {
  name_index<TypeParam> index;
  session& a = this->arena_.make_linked(index, "alice", 1);
  EXPECT_EQ(find_in_guard(index, std::string_view("alice")), &a);
  EXPECT_EQ(find_in_guard(index, "alice"), &a);
  EXPECT_EQ(find_in_guard(index, "alic"), nullptr);
  EXPECT_TRUE(index.unlink(a));
}

TYPED_TEST(lfht_index_test, two_indexes_on_one_object_find_the_same_owner) {
  name_index<TypeParam> by_name;
  id_index<TypeParam> by_id;
  for (int i = 0; i < 100; ++i) {
    session& s = this->arena_.make("s" + std::to_string(i), i);
    ASSERT_TRUE(by_name.add_unique(s));
    ASSERT_TRUE(by_id.add_unique(s));
  }
  for (int i = 0; i < 100; ++i) {
    session* n = find_in_guard(by_name, "s" + std::to_string(i));
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n, find_in_guard(by_id, i)) << "the owner pointer, not offsetof, leads back to the object";
    EXPECT_EQ(n->kind(), 1) << "the vtable is intact: the pointer is the object's, not the hook's";
    EXPECT_EQ(n->id, i);
  }
  for (auto& s : this->arena_.all) {
    EXPECT_TRUE(by_name.unlink(*s));
    EXPECT_TRUE(by_id.unlink(*s));
  }
}

TYPED_TEST(lfht_index_test, unlink_then_find_misses_and_a_second_unlink_is_refused) {
  name_index<TypeParam> index;
  session& a = this->arena_.make_linked(index, "alice", 1);
  session& b = this->arena_.make_linked(index, "bob", 2);
  EXPECT_TRUE(index.unlink(a));
  EXPECT_EQ(find_in_guard(index, "alice"), nullptr);
  EXPECT_EQ(find_in_guard(index, "bob"), &b);
  EXPECT_FALSE(index.unlink(a)) << "not linked any more";
  EXPECT_EQ(index.size(), 1u);
  name_index<TypeParam> other;
  EXPECT_FALSE(other.unlink(b)) << "linked, but in another index";
  EXPECT_TRUE(index.contains(b));
  EXPECT_FALSE(other.contains(b));
  EXPECT_TRUE(index.unlink(b));
  EXPECT_TRUE(index.empty());
}

TYPED_TEST(lfht_index_test, replace_swaps_in_the_new_object_under_the_same_key) {
  name_index<TypeParam> index;
  session& old_s = this->arena_.make("alice", 1);
  session& new_s = this->arena_.make("alice", 2);
  session& other = this->arena_.make("bob", 3);
  ASSERT_TRUE(index.add_unique(old_s));
  EXPECT_TRUE(index.replace(old_s, new_s));
  EXPECT_EQ(find_in_guard(index, "alice"), &new_s);
  EXPECT_FALSE(old_s.by_name.is_linked());
  EXPECT_EQ(index.size(), 1u);
  EXPECT_FALSE(index.replace(old_s, other)) << "old_s is not linked any more";
  EXPECT_THROW(index.replace(new_s, other), std::invalid_argument) << "keys differ";
  EXPECT_EQ(find_in_guard(index, "alice"), &new_s) << "a refused replace changes nothing";
  EXPECT_FALSE(other.by_name.is_linked());
  EXPECT_TRUE(index.unlink(new_s));
}

TYPED_TEST(lfht_index_test, a_walk_after_a_replace_in_a_shared_chain_and_each_unlink_finds_only_what_is_linked) {
  using one_chain = lfht_index<session, &session::by_name, key_member<&session::name>, TypeParam, test::one_chain_hash,
                                std::equal_to<>>;
  test::replace_at_each_position_in_one_chain<one_chain>(this->arena_);
}

TYPED_TEST(lfht_index_test, add_or_replace_returns_the_object_it_displaced) {
  name_index<TypeParam> index;
  session& first = this->arena_.make("alice", 1);
  session& second = this->arena_.make("alice", 2);
  EXPECT_EQ(index.add_or_replace(first), nullptr);
  EXPECT_EQ(index.add_or_replace(second), &first);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_FALSE(first.by_name.is_linked());
  EXPECT_EQ(find_in_guard(index, "alice"), &second);
  EXPECT_TRUE(index.unlink(second));
}

TYPED_TEST(lfht_index_test, iteration_visits_every_linked_object_once) {
  name_index<TypeParam> index;
  constexpr int kCount = 1000;
  for (int i = 0; i < kCount; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("n" + std::to_string(i), i)));
  for (int i = 0; i < kCount; i += 2) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
  std::vector<int> seen(kCount, 0);
  int visited = 0;
  {
    read_guard<TypeParam> guard;
    for (session& s : index) {
      ++seen[static_cast<std::size_t>(s.id)];
      ++visited;
    }
    EXPECT_EQ(std::ranges::distance(index.begin(), index.end()), kCount / 2);
  }
  EXPECT_EQ(visited, kCount / 2);
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i % 2) << i;
  for (int i = 1; i < kCount; i += 2) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
}

TYPED_TEST(lfht_index_test, adding_a_linked_object_is_diagnosed_and_changes_nothing) {
  name_index<TypeParam> index;
  name_index<TypeParam> other;
  session& a = this->arena_.make_linked(index, "alice", 1);
  const unsigned long before = misuse_count(misuse_kind::register_twice);
  EXPECT_THROW(index.add_unique(a), misuse_error);
  EXPECT_THROW(other.add_unique(a), misuse_error);
  EXPECT_THROW(other.add_or_replace(a), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::register_twice), before + 3);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_TRUE(other.empty());
  EXPECT_TRUE(index.contains(a));
  EXPECT_TRUE(index.unlink(a));
}

TYPED_TEST(lfht_index_test, destroying_a_non_empty_index_reports_and_unlinks_the_objects) {
  session& a = this->arena_.make("alice", 1);
  session& b = this->arena_.make("bob", 2);
  const unsigned long before = misuse_count(misuse_kind::destroyed_while_linked);
  {
    scoped_misuse_policy report(misuse_policy::report, &test::quiet_reporter);
    name_index<TypeParam> index;
    ASSERT_TRUE(index.add_unique(a));
    ASSERT_TRUE(index.add_unique(b));
  }
  EXPECT_EQ(misuse_count(misuse_kind::destroyed_while_linked), before + 1);
  EXPECT_FALSE(a.by_name.is_linked()) << "unlinked, so it can go into another index";
  EXPECT_FALSE(b.by_name.is_linked());
  name_index<TypeParam> next;
  EXPECT_TRUE(next.add_unique(a));
  EXPECT_TRUE(next.unlink(a));
}

TYPED_TEST(lfht_index_test, on_add_growth_doubles_the_buckets_outside_read_sections_only) {
  name_index<TypeParam> index(lfht_options{.initial_buckets = 16});
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("a" + std::to_string(i), i)));
  EXPECT_EQ(index.buckets(), 16u) << "full, not over";
  ASSERT_TRUE(index.add_unique(this->arena_.make("a16", 16)));
  EXPECT_EQ(index.buckets(), 32u);
  {
    read_guard<TypeParam> guard;  // one section around many updates: resizing must wait
    for (int i = 17; i < 40; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("a" + std::to_string(i), i)));
    index.grow_if_needed();
    EXPECT_EQ(index.buckets(), 32u);
  }
  index.grow_if_needed();
  EXPECT_EQ(index.buckets(), 64u);
  for (auto& s : this->arena_.all) ASSERT_TRUE(index.unlink(*s));
  EXPECT_EQ(index.buckets(), 64u) << "on_add never shrinks";
  for (int i = 0; i < 40; ++i) EXPECT_EQ(find_in_guard(index, "a" + std::to_string(i)), nullptr);
}

TYPED_TEST(lfht_index_test, resizes_are_counted_and_timed_and_adds_without_growth_are_not) {
  name_index<TypeParam> index(lfht_options{.initial_buckets = 16});
  const auto time_before = lfht_total_resize_time();
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("t" + std::to_string(i), i)));
  EXPECT_EQ(index.resizes(), 0u) << "full, not over: no resize";
  EXPECT_EQ(lfht_total_resize_time(), time_before);
  ASSERT_TRUE(index.add_unique(this->arena_.make("t16", 16)));
  EXPECT_EQ(index.resizes(), 1u);
  const auto time_after_growth = lfht_total_resize_time();
  EXPECT_GT(time_after_growth, time_before) << "a cds_lfht_resize call takes more than 0 ns of steady_clock";
  index.resize(128);
  EXPECT_EQ(index.resizes(), 2u);
  EXPECT_GT(lfht_total_resize_time(), time_after_growth);
  for (auto& s : this->arena_.all) ASSERT_TRUE(index.unlink(*s));
  EXPECT_EQ(index.resizes(), 2u) << "on_add never shrinks: unlinks resize nothing";
}

TYPED_TEST(lfht_index_test, max_buckets_caps_on_add_growth) {
  name_index<TypeParam> index(lfht_options{.initial_buckets = 8, .max_buckets = 32});
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("m" + std::to_string(i), i)));
  EXPECT_EQ(index.buckets(), 32u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(find_in_guard(index, "m" + std::to_string(i)), this->arena_.all[static_cast<std::size_t>(i)].get());
  for (auto& s : this->arena_.all) ASSERT_TRUE(index.unlink(*s));
}

/// Pins the calling thread to its current CPU for a scope: rculfhash's node accounting keeps one
/// counter per CPU, so on one CPU its resize decisions are the same in every run.
class pinned_to_one_cpu {
 public:
  pinned_to_one_cpu() {
    pthread_getaffinity_np(pthread_self(), sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  }
  ~pinned_to_one_cpu() { pthread_setaffinity_np(pthread_self(), sizeof(old_), &old_); }
  pinned_to_one_cpu(const pinned_to_one_cpu&) = delete;
  pinned_to_one_cpu& operator=(const pinned_to_one_cpu&) = delete;

 private:
  cpu_set_t old_{};
};

TYPED_TEST(lfht_index_test, automatic_growth_survives_a_fill_and_a_mass_unlink_then_destroys) {
  // 0.13.2 resizes in its own worker: unlinking 40,000 objects from 32,768 buckets queues a
  // shrink (at 16,384 nodes), which waits there for a grace period, and destroy waits for that
  // worker. From an online qsbr thread that wait deadlocks unless the index takes the thread
  // offline for it. The table starts large so that the fill launches no resize: 0.13.2 can lose
  // its "resize launched" flag (lfht_growth::automatic), and a table that then stops growing
  // makes 40,000 adds quadratic.
  pinned_to_one_cpu pin;
  auto index = std::make_unique<name_index<TypeParam>>(
      lfht_options{.initial_buckets = 1UL << 15, .growth = lfht_growth::automatic});
  constexpr int kCount = 40000;
  for (int i = 0; i < kCount; ++i) ASSERT_TRUE(index->add_unique(this->arena_.make("x" + std::to_string(i), i)));
  for (int i = 0; i < kCount; i += 7) ASSERT_EQ(find_in_guard(*index, "x" + std::to_string(i))->id, i);
  for (auto& s : this->arena_.all) ASSERT_TRUE(index->unlink(*s));
  EXPECT_TRUE(index->empty());
  index.reset();
  if constexpr (TypeParam::quiescent_state_based) {
    EXPECT_TRUE(TypeParam::read_ongoing()) << "online again";
  }
}

TYPED_TEST(lfht_index_test, resize_rounds_up_within_min_and_max_and_keeps_every_object) {
  name_index<TypeParam> index(lfht_options{.min_buckets = 8, .max_buckets = 256, .growth = lfht_growth::manual});
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(index.add_unique(this->arena_.make("r" + std::to_string(i), i)));
  EXPECT_EQ(index.buckets(), 16u) << "manual: adds never resize";
  index.resize(100);
  EXPECT_EQ(index.buckets(), 128u);
  index.resize(100000);
  EXPECT_EQ(index.buckets(), 256u);
  index.resize(2);
  EXPECT_EQ(index.buckets(), 8u);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(find_in_guard(index, "r" + std::to_string(i)), this->arena_.all[static_cast<std::size_t>(i)].get());
  for (auto& s : this->arena_.all) ASSERT_TRUE(index.unlink(*s));
}

TYPED_TEST(lfht_index_test, resize_inside_a_read_section_is_diagnosed) {
  name_index<TypeParam> index(lfht_options{.growth = lfht_growth::manual});
  read_guard<TypeParam> guard;
  const unsigned long before = misuse_count(misuse_kind::blocking_in_read_section);
  EXPECT_THROW(index.resize(1024), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::blocking_in_read_section), before + 1);
  EXPECT_EQ(index.buckets(), 16u);
}

// Readers look names up in threads while the writer adds, replaces and unlinks; an unlinked
// object is poisoned only after a grace period and freed at the end. A reader that ever sees the
// poison found an object the index let go too early.
TYPED_TEST(lfht_index_test, readers_never_see_an_object_retired_after_a_grace_period) {
  using F = TypeParam;
  name_index<F> index(lfht_options{.initial_buckets = 4});
  grace_domain<F> domain;
  constexpr int kNames = 64;
  constexpr int kRounds = 200;
  constexpr int kReaders = 2;
  std::atomic<bool> stop{false};
  std::atomic<long> found{0};
  std::atomic<long> poisoned{0};
  std::latch started(kReaders + 1);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      thread_registration<F> reg;
      started.arrive_and_wait();
      std::vector<std::string> keys;
      for (int i = 0; i < kNames; ++i) keys.push_back("k" + std::to_string(i));
      std::vector<session*> held;
      while (!stop.load(std::memory_order_relaxed)) {
        long mine = 0;
        {
          read_guard<F> guard;  // everything found is checked again at the end of the section
          held.clear();
          for (const std::string& key : keys) {
            if (session* s = index.find(key)) {
              ++mine;
              held.push_back(s);
              if (s->poison.load(std::memory_order_relaxed) != kAlive || s->name != key) poisoned.fetch_add(1);
            }
          }
          for (session& s : index) {
            if (s.poison.load(std::memory_order_relaxed) != kAlive) poisoned.fetch_add(1);
          }
          for (session* s : held) {
            if (s->poison.load(std::memory_order_relaxed) != kAlive) poisoned.fetch_add(1);
          }
        }
        quiescent_state<F>();
        if (mine > 0) found.fetch_add(mine);  // published per section: the writer waits for it
      }
    });
  }
  test::watchdog dog(std::chrono::seconds(120), "lfht_index readers during adds, replaces and unlinks");
  started.arrive_and_wait();

  std::vector<session*> live(kNames, nullptr);
  std::vector<session*> retired;
  int next_id = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kNames; ++i) {
      session& s = this->arena_.make("k" + std::to_string(i), next_id++);
      if (live[static_cast<std::size_t>(i)] == nullptr) {
        ASSERT_TRUE(index.add_unique(s));
      } else if (round % 2 == 0) {
        ASSERT_TRUE(index.replace(*live[static_cast<std::size_t>(i)], s));
        retired.push_back(live[static_cast<std::size_t>(i)]);
      } else {
        ASSERT_TRUE(index.unlink(*live[static_cast<std::size_t>(i)]));
        retired.push_back(live[static_cast<std::size_t>(i)]);
        ASSERT_TRUE(index.add_unique(s));
      }
      live[static_cast<std::size_t>(i)] = &s;
    }
    domain.synchronize();
    for (session* s : retired) s->poison.store(kPoison, std::memory_order_relaxed);
    retired.clear();
  }
  // Under load the readers may not have run yet: every key is linked now, so wait until they
  // found some (an observable, not a sleep) rather than let the check below be vacuous.
  while (found.load() == 0) std::this_thread::yield();
  stop.store(true);
  for (auto& t : readers) t.join();
  for (session* s : live) ASSERT_TRUE(index.unlink(*s));
  EXPECT_EQ(poisoned.load(), 0);
  EXPECT_GT(found.load(), 0) << "the readers found nothing: the check above was vacuous";
}

TEST(lfht_index_writers, two_writers_without_a_common_lock_keep_an_exact_size_and_one_winner_per_key) {
  // Each writer adds its own kOwn keys and unlinks every other one, and both race add_unique on
  // kShared keys of their own objects: rculfhash decides each race, the index's count must agree.
  constexpr int kOwn = 50'000;
  constexpr int kShared = 10'000;
  test::watchdog dog(std::chrono::seconds(120), "two lfht_index writers without a lock");
  thread_registration<flavor::memb> reg;
  id_index<flavor::memb> index;
  arena a;
  std::vector<session*> own[2], shared[2];
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < kOwn; ++i) own[w].push_back(&a.make("own", w * kOwn + i));
    for (int i = 0; i < kShared; ++i) shared[w].push_back(&a.make("shared", 2 * kOwn + i));
  }
  std::atomic<int> shared_won{0}, unlinked{0};
  std::latch start(2);
  auto writer = [&](int w) {
    thread_registration<flavor::memb> r;
    start.arrive_and_wait();
    for (int i = 0; i < kOwn; ++i) {
      EXPECT_TRUE(index.add_unique(*own[w][static_cast<std::size_t>(i)]));
      if (i < kShared && index.add_unique(*shared[w][static_cast<std::size_t>(i)])) shared_won.fetch_add(1);
      if (i % 2 == 1 && index.unlink(*own[w][static_cast<std::size_t>(i - 1)])) unlinked.fetch_add(1);
    }
  };
  std::thread w0(writer, 0), w1(writer, 1);
  w0.join();
  w1.join();
  EXPECT_EQ(shared_won.load(), kShared) << "exactly one add_unique of each shared key links";
  EXPECT_EQ(unlinked.load(), kOwn);
  EXPECT_EQ(index.size(), static_cast<std::size_t>(kOwn + kShared)) << "updates lost by the count";
  std::size_t walked = 0;
  {
    read_guard<flavor::memb> guard;
    for ([[maybe_unused]] const session& s : index) ++walked;
  }
  EXPECT_EQ(walked, index.size());
  for (auto& s : a.all) index.unlink(*s);
  EXPECT_EQ(index.size(), 0u);
  // Then both cycle add/unlink of a few objects each: the count's line bounces between them.
  constexpr int kCycles = 2'000'000;
  std::latch again(2);
  auto cycler = [&](int w) {
    thread_registration<flavor::memb> r;
    again.arrive_and_wait();
    for (int i = 0; i < kCycles; ++i) {
      session& s = *own[w][static_cast<std::size_t>(i % 64)];
      EXPECT_TRUE(index.add_unique(s));
      EXPECT_TRUE(index.unlink(s));
    }
  };
  std::thread c0(cycler, 0), c1(cycler, 1);
  c0.join();
  c1.join();
  EXPECT_EQ(index.size(), 0u) << "updates lost by the count";
}

using lfht_index_death = lfht_index_test<flavor::memb>;

TEST_F(lfht_index_death, find_outside_a_read_guard_aborts_with_a_sentence) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  name_index<flavor::memb> index;
  EXPECT_DEATH((void)index.find("alice"), "lfht_index::find: called outside a read_guard");
  EXPECT_DEATH((void)index.begin(), "lfht_index::begin: called outside a read_guard");
  EXPECT_DEATH((void)index.for_each_equal("alice", [](session&) {}),
               "lfht_index::for_each_equal: called outside a read_guard");
}

// lfht_runtime_flavor: the same index with the flavor picked at run time (code that is not a
// template over the flavor, such as netdev's link types).
using runtime_name_index = lfht_index<session, &session::by_name, key_member<&session::name>, lfht_runtime_flavor>;

template <class F>
void runtime_flavor_round_trip() {
  thread_registration<F> reg;
  const lfht_runtime_flavor& rt = lfht_runtime_flavor::of<F>();
  EXPECT_EQ(rt.name, F::name);
  EXPECT_EQ(rt.table, &F::table());
  EXPECT_EQ(&rt, &lfht_runtime_flavor::of<F>()) << "one description per flavor";
  arena a;
  runtime_name_index index(rt, lfht_options{.initial_buckets = 1});
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(index.add_unique(a.make("s" + std::to_string(i), i)));
  ASSERT_TRUE(index.add(a.make("s7", 1000)));
  EXPECT_FALSE(index.add_unique(a.make("s8", 1001)));
  EXPECT_EQ(index.size(), 101u);
  EXPECT_GE(index.buckets(), 128u) << "on_add growth runs through the runtime flavor's read lock";
  {
    read_guard<F> guard;
    EXPECT_TRUE(rt.in_read_section());
    session* s = index.find("s42");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, 42);
    std::vector<int> ids;
    EXPECT_EQ(index.for_each_equal("s7", [&](session& x) { ids.push_back(x.id); }), 2u);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<int>{7, 1000}));
    std::size_t n = 0;
    for (session& x : index) n += x.name.empty() ? 0 : 1;
    EXPECT_EQ(n, 101u);
  }
  session* one = index.find_locked("s1");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->id, 1);
  for (auto& s : a.all) index.unlink(*s);
  EXPECT_TRUE(index.empty());
}

TEST(lfht_index_runtime, memb) { runtime_flavor_round_trip<flavor::memb>(); }
TEST(lfht_index_runtime, qsbr) { runtime_flavor_round_trip<flavor::qsbr>(); }
TEST(lfht_index_runtime, mb) { runtime_flavor_round_trip<flavor::mb>(); }
TEST(lfht_index_runtime, bp) { runtime_flavor_round_trip<flavor::bp>(); }

TEST(lfht_index_runtime, its_checks_are_the_compile_time_flavors) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  {
    thread_registration<flavor::memb> reg;
    runtime_name_index index(lfht_runtime_flavor::of<flavor::memb>());
    EXPECT_DEATH((void)index.find("alice"), "lfht_index::find: called outside a read_guard");
    EXPECT_DEATH((void)index.for_each_equal("alice", [](session&) {}),
                 "lfht_index::for_each_equal: called outside a read_guard");
  }
  {
    thread_registration<flavor::qsbr> reg;
    runtime_name_index index(lfht_runtime_flavor::of<flavor::qsbr>());
    session s("alice", 1);
    offline_scope<flavor::qsbr> offline;
    EXPECT_DEATH((void)index.add(s), "lfht_index::add: called from a qsbr thread that is offline");
  }
}

TEST(lfht_index_qsbr, an_update_from_an_offline_qsbr_thread_aborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  thread_registration<flavor::qsbr> reg;
  name_index<flavor::qsbr> index;
  session s("alice", 1);
  offline_scope<flavor::qsbr> offline;
  EXPECT_DEATH((void)index.add_unique(s), "lfht_index::add_unique: called from a qsbr thread that is offline");
}

TEST(lfht_index_options, a_count_that_is_not_a_power_of_two_is_named) {
  using idx = name_index<flavor::memb>;
  try {
    idx bad(lfht_options{.initial_buckets = 12});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("initial_buckets = 12"), std::string::npos) << e.what();
  }
  EXPECT_THROW(idx(lfht_options{.min_buckets = 0}), std::invalid_argument);
  EXPECT_THROW(idx(lfht_options{.max_buckets = 100}), std::invalid_argument);
  EXPECT_THROW(idx(lfht_options{.min_buckets = 64, .max_buckets = 32}), std::invalid_argument);
  idx capped(lfht_options{.initial_buckets = 64, .max_buckets = 32});
  EXPECT_EQ(capped.buckets(), 32u) << "the initial count is clamped to the maximum";
}

TEST(lfht_index_options, the_default_hash_mixes_integers_and_agrees_across_string_types) {
  lfht_hash h;
  EXPECT_NE(h(1) & 0xff, 1u) << "std::hash<int> is the identity; rculfhash wants the low bits mixed";
  EXPECT_EQ(h(std::string("alice")), h(std::string_view("alice")));
  EXPECT_EQ(h(std::string("alice")), h("alice"));
  enum class color : int { red = 3 };
  EXPECT_EQ(h(color::red), h(3));
}

// key_members (issue 23, item 5): a composite key with the built-in hash, found with a tuple of
// other but comparable element types; the elements' order matters.
struct tunnel : registrable<tunnel> {
  tunnel(int o, std::string k) : owner(o), kind(std::move(k)) {}
  int owner;
  std::string kind;
  lfht_hook<tunnel> by_owner_kind;
};
using owner_kind_index = lfht_index<tunnel, &tunnel::by_owner_kind, key_members<&tunnel::owner, &tunnel::kind>>;

TEST(lfht_index_memb, a_composite_key_needs_no_hand_written_key_or_hash) {
  thread_registration<flavor::memb> reg;
  owner_kind_index index;
  tunnel a(1, "gre"), b(1, "ipip"), c(2, "gre"), clash(1, "gre");
  ASSERT_TRUE(index.add_unique(a));
  ASSERT_TRUE(index.add_unique(b));
  ASSERT_TRUE(index.add_unique(c));
  EXPECT_FALSE(index.add_unique(clash)) << "(1, gre) is taken";
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(index.find(std::tuple(1, std::string("gre"))), &a);
    EXPECT_EQ(index.find(std::tuple(1, std::string_view("ipip"))), &b);
    EXPECT_EQ(index.find(std::tuple(2, std::string_view("gre"))), &c);
    EXPECT_EQ(index.find(std::tuple(2, std::string_view("ipip"))), nullptr);
  }
  lfht_hash h;
  EXPECT_EQ(h(std::tuple(1, std::string("gre"))), h(std::tuple(1, std::string_view("gre"))));
  EXPECT_NE(h(std::tuple(1, 2)), h(std::tuple(2, 1)));
  for (tunnel* t : {&a, &b, &c}) EXPECT_TRUE(index.unlink(*t));
  grace_domain<flavor::memb>().synchronize();  // a GP after the unlinks, before the objects go
}

TEST(lfht_index_memb, destroying_an_automatic_index_inside_a_read_section_is_reported) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the table is leaked on purpose, which LeakSanitizer reports";
#else
  thread_registration<flavor::memb> reg;
  const unsigned long before = misuse_count(misuse_kind::blocking_in_read_section);
  {
    scoped_misuse_policy report(misuse_policy::report, &test::quiet_reporter);
    auto index = std::make_unique<name_index<flavor::memb>>(lfht_options{.growth = lfht_growth::automatic});
    read_guard<flavor::memb> guard;
    index.reset();
  }
  EXPECT_EQ(misuse_count(misuse_kind::blocking_in_read_section), before + 1);
#endif
}

}  // namespace
}  // namespace rcubatch
