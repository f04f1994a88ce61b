// hlist_index: the writer-serialized RCU hash index, over the four liburcu flavors; its resize
// (grow and shrink by moving entries between two tables) under readers; through the registry kit.
#include <functional>

// hlist_index's test seam: called in the middle of every move of a migration (after the entry is
// linked into the new chain, before it leaves the old one), with the moved object. Defined before
// the header is included; no other translation unit of this binary includes hlist_index.hpp.
namespace hlist_probe {
inline std::function<void(const void*)> on_move;
}
#define RCUBATCH_HLIST_INDEX_TEST_PROBE(moved) (::hlist_probe::on_move ? ::hlist_probe::on_move(moved) : void())

#include <rcubatch/index/hlist_index.hpp>

#include <rcubatch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <latch>
#include <limits>
#include <memory>
#include <ranges>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/flavors.hpp"
#include "support/index_session.hpp"
#include "support/misuse_capture.hpp"
#include "support/watchdog.hpp"

namespace rcubatch {
namespace {

constexpr std::uint64_t kAlive = test::kSessionAlive;
constexpr std::uint64_t kPoison = test::kSessionPoison;
using session = test::indexed_session<hlist_hook>;
static_assert(!std::is_standard_layout_v<session>);
using arena = test::session_arena<session>;
using test::find_in_guard;
using test::ids_equal_to;

template <class F>
using name_index = hlist_index<session, &session::by_name, key_member<&session::name>, F>;
template <class F>
using id_index = hlist_index<session, &session::by_id, key_member<&session::id>, F>;
static_assert(std::ranges::input_range<name_index<flavor::memb>>);

template <class F>
class hlist_index_test : public ::testing::Test {
 protected:
  thread_registration<F> reg_;
  arena arena_;
};
TYPED_TEST_SUITE(hlist_index_test, test::real_flavors, test::flavor_names);

TYPED_TEST(hlist_index_test, add_unique_refuses_a_duplicate_key_and_keeps_the_first) {
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

TYPED_TEST(hlist_index_test, add_links_duplicates_and_for_each_equal_visits_each_once) {
  name_index<TypeParam> index;
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(index.add(this->arena_.make("x", i)));
  ASSERT_TRUE(index.add(this->arena_.make("y", 4)));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(index.add(this->arena_.make("other" + std::to_string(i), 100 + i)));
  index.resize(64);  // no resize in progress: each object is in one table
  EXPECT_EQ(index.size(), 44u);
  EXPECT_EQ(ids_equal_to(index, "x"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ids_equal_to(index, "y"), (std::vector<int>{4}));
  EXPECT_EQ(ids_equal_to(index, "z"), (std::vector<int>{}));
  EXPECT_FALSE(index.add_unique(this->arena_.make("x", 5))) << "add_unique still refuses a taken key";
  EXPECT_TRUE(index.unlink(*this->arena_.all[1]));
  EXPECT_EQ(ids_equal_to(index, "x"), (std::vector<int>{1, 3})) << "unlinking one duplicate keeps the others";
  for (auto& s : this->arena_.all) index.unlink(*s);
  EXPECT_TRUE(index.empty());
}

TYPED_TEST(hlist_index_test, adding_a_linked_object_is_diagnosed_and_changes_nothing) {
  name_index<TypeParam> index;
  id_index<TypeParam> other;
  session& a = this->arena_.make("alice", 1);
  ASSERT_TRUE(index.add(a));
  const unsigned long before = misuse_count(misuse_kind::register_twice);
  EXPECT_THROW(index.add(a), misuse_error);
  EXPECT_THROW(index.add_unique(a), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::register_twice), before + 2);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(ids_equal_to(index, "alice"), (std::vector<int>{1}));
  EXPECT_FALSE(other.holds(a));
  EXPECT_TRUE(index.holds(a));
  EXPECT_TRUE(index.unlink(a));
}

TYPED_TEST(hlist_index_test, finds_a_string_key_by_string_view_and_by_literal) {
  name_index<TypeParam> index;
  session& a = this->arena_.make_linked(index, "alice", 1);
  EXPECT_EQ(find_in_guard(index, std::string_view("alice")), &a);
  EXPECT_EQ(find_in_guard(index, "alice"), &a);
  EXPECT_EQ(find_in_guard(index, "alic"), nullptr);
  EXPECT_EQ(index.find_locked("alice"), &a);
  EXPECT_TRUE(index.unlink(a));
}

TYPED_TEST(hlist_index_test, two_indexes_on_one_object_find_the_same_owner) {
  name_index<TypeParam> by_name;
  id_index<TypeParam> by_id;
  session& a = this->arena_.make("alice", 7);
  ASSERT_TRUE(by_name.add_unique(a));
  ASSERT_TRUE(by_id.add_unique(a));
  EXPECT_EQ(find_in_guard(by_name, "alice"), &a);
  EXPECT_EQ(find_in_guard(by_id, 7), &a);
  EXPECT_TRUE(by_name.unlink(a));
  EXPECT_EQ(find_in_guard(by_id, 7), &a) << "unlinking from one index leaves the other";
  EXPECT_TRUE(by_id.unlink(a));
}

TYPED_TEST(hlist_index_test, unlink_then_find_misses_and_a_second_unlink_is_refused) {
  name_index<TypeParam> index;
  session& a = this->arena_.make_linked(index, "alice", 1);
  session& b = this->arena_.make_linked(index, "bob", 2);
  EXPECT_TRUE(index.unlink(a));
  EXPECT_FALSE(index.unlink(a));
  EXPECT_EQ(find_in_guard(index, "alice"), nullptr);
  EXPECT_EQ(find_in_guard(index, "bob"), &b);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_FALSE(a.by_name.is_linked());
  EXPECT_TRUE(index.unlink(b));
}

TYPED_TEST(hlist_index_test, replace_swaps_in_the_new_object_under_the_same_key) {
  name_index<TypeParam> index;
  session& old_s = this->arena_.make_linked(index, "alice", 1);
  session& neighbour = this->arena_.make_linked(index, "bob", 9);
  session& new_s = this->arena_.make("alice", 2);
  session& other = this->arena_.make("carol", 3);
  EXPECT_THROW(index.replace(old_s, other), std::invalid_argument);
  EXPECT_FALSE(other.by_name.is_linked()) << "a refused replace changes nothing";
  EXPECT_TRUE(index.replace(old_s, new_s));
  EXPECT_FALSE(index.replace(old_s, other)) << "old_s is no longer linked";
  EXPECT_EQ(find_in_guard(index, "alice"), &new_s);
  EXPECT_EQ(find_in_guard(index, "bob"), &neighbour);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_TRUE(index.unlink(new_s));
  EXPECT_TRUE(index.unlink(neighbour));
}

TYPED_TEST(hlist_index_test, a_walk_after_a_replace_in_a_shared_chain_and_each_unlink_finds_only_what_is_linked) {
  using one_chain = hlist_index<session, &session::by_name, key_member<&session::name>, TypeParam, test::one_chain_hash,
                                std::equal_to<>>;
  test::replace_at_each_position_in_one_chain<one_chain>(this->arena_);
}

TYPED_TEST(hlist_index_test, add_or_replace_returns_the_object_it_displaced) {
  name_index<TypeParam> index;
  session& a = this->arena_.make("alice", 1);
  session& b = this->arena_.make("alice", 2);
  EXPECT_EQ(index.add_or_replace(a), nullptr);
  EXPECT_EQ(index.add_or_replace(b), &a);
  EXPECT_FALSE(a.by_name.is_linked());
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(find_in_guard(index, "alice"), &b);
  EXPECT_TRUE(index.unlink(b));
}

TYPED_TEST(hlist_index_test, iteration_visits_every_linked_object_once) {
  name_index<TypeParam> index;
  for (int i = 0; i < 100; ++i) this->arena_.make_linked(index, "s" + std::to_string(i), i);
  index.resize(128);  // finish the growth: outside a resize each object is in one table
  std::vector<int> ids;
  {
    read_guard<TypeParam> guard;
    for (session& s : index) ids.push_back(s.id);
  }
  std::sort(ids.begin(), ids.end());
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i) expected[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(ids, expected);
  for (auto& s : this->arena_.all) index.unlink(*s);
}

TYPED_TEST(hlist_index_test, destroying_a_non_empty_index_reports_and_unlinks_the_objects) {
  test::misuse_capture cap;
  scoped_misuse_policy policy(misuse_policy::report, cap);
  session& a = this->arena_.make("alice", 1);
  {
    name_index<TypeParam> index;
    ASSERT_TRUE(index.add_unique(a));
  }
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::destroyed_while_linked);
  EXPECT_FALSE(a.by_name.is_linked());
}

// Growth and shrink in bounded steps: a growth finishes within B/8 updates, only adds start a
// resize, and the replaced tables wait for a grace period of the index's domain. With the default
// grow_factor (4: 16, 64, 256, 1024, 4096 buckets) and with 2 (every power of two).
TYPED_TEST(hlist_index_test, grows_and_shrinks_in_bounded_steps_and_frees_old_tables_after_a_grace_period) {
  for (const std::size_t factor : {std::size_t{4}, std::size_t{2}}) {
  SCOPED_TRACE("grow_factor " + std::to_string(factor));
  this->arena_.all.clear();
  grace_domain<TypeParam> domain;
  name_index<TypeParam> index(hlist_options{.grow_factor = factor}, domain);
  EXPECT_EQ(index.buckets(), 16u);
  constexpr int kObjects = 4096;
  std::size_t longest_resize = 0, updates_resizing = 0, growths = 0;
  for (int i = 0; i < kObjects; ++i) {
    const std::size_t before = index.resizes();
    const std::size_t buckets_before = index.buckets();
    this->arena_.make_linked(index, "g" + std::to_string(i), i);
    if (index.resizing()) ++updates_resizing;
    if (index.resizes() != before) {
      longest_resize = std::max(longest_resize, updates_resizing);
      updates_resizing = 0;
      ++growths;
      EXPECT_EQ(buckets_before + 1, index.size()) << "grows when size() exceeds the buckets";
      EXPECT_EQ(index.buckets(), buckets_before * factor) << "by grow_factor";
    }
  }
  EXPECT_EQ(index.buckets(), 4096u);
  EXPECT_EQ(growths, factor == 4 ? 4u : 8u);
  EXPECT_LE(longest_resize, 4096u / factor / 8) << "a growth from B buckets finishes within B/8 updates";
  EXPECT_GE(index.retired_tables(), 1u) << "no grace period of the domain yet: the old tables wait";
  for (int i = 0; i < kObjects; ++i) ASSERT_EQ(find_in_guard(index, "g" + std::to_string(i)), this->arena_.all[static_cast<std::size_t>(i)].get());
  domain.synchronize();
  ASSERT_TRUE(index.unlink(*this->arena_.all[0]));
  EXPECT_GE(index.retired_tables(), 1u) << "an unlink only unlinks";
  session& extra = this->arena_.make("extra", -1);
  ASSERT_TRUE(index.add_unique(extra));  // an add frees what has elapsed
  EXPECT_EQ(index.retired_tables(), 0u);
  ASSERT_TRUE(index.unlink(extra));
  for (int i = 1; i < kObjects - 10; ++i) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
  EXPECT_EQ(index.buckets(), 4096u) << "unlinks never start a shrink";
  for (int i = 0; i < 1000 && (index.resizing() || index.buckets() > 32); ++i) {  // shrinks finish with updates
    session& s = this->arena_.make("t" + std::to_string(i), -1);
    ASSERT_TRUE(index.add_unique(s));
    ASSERT_TRUE(index.unlink(s));
  }
  EXPECT_FALSE(index.resizing());
  EXPECT_LE(index.buckets(), 32u) << "shrinks below load factor 1/8";
  for (int i = kObjects - 10; i < kObjects; ++i)
    EXPECT_EQ(find_in_guard(index, "g" + std::to_string(i)), this->arena_.all[static_cast<std::size_t>(i)].get());
  index.reclaim();
  EXPECT_EQ(index.retired_tables(), 0u);
  for (int i = kObjects - 10; i < kObjects; ++i) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
  }
}

TYPED_TEST(hlist_index_test, a_presized_index_is_not_shrunk_while_it_fills) {
  name_index<TypeParam> index(hlist_options{.initial_buckets = 1024});
  for (int i = 0; i < 1000; ++i) this->arena_.make_linked(index, "p" + std::to_string(i), i);
  EXPECT_EQ(index.resizes(), 0u);
  EXPECT_EQ(index.buckets(), 1024u);
  for (int i = 0; i < 950; ++i) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
  EXPECT_EQ(index.buckets(), 1024u) << "unlinks leave the shrink to the next add";
  session& s = this->arena_.make_linked(index, "after", -1);
  EXPECT_EQ(index.buckets(), 128u) << "the add after a drain below 1/8 shrinks to bit_ceil(2 x size())";
  ASSERT_TRUE(index.unlink(s));
  for (int i = 950; i < 1000; ++i) ASSERT_TRUE(index.unlink(*this->arena_.all[static_cast<std::size_t>(i)]));
}

TYPED_TEST(hlist_index_test, resize_rounds_up_within_min_and_max_and_keeps_every_object) {
  name_index<TypeParam> index(hlist_options{.initial_buckets = 16, .min_buckets = 16, .max_buckets = 256, .grow = false});
  for (int i = 0; i < 300; ++i) this->arena_.make_linked(index, "r" + std::to_string(i), i);
  EXPECT_EQ(index.buckets(), 16u) << "grow = false";
  index.resize(100);
  EXPECT_EQ(index.buckets(), 128u);
  index.resize(100000);
  EXPECT_EQ(index.buckets(), 256u);
  index.resize(1);
  EXPECT_EQ(index.buckets(), 16u);
  for (int i = 0; i < 300; ++i) ASSERT_NE(find_in_guard(index, "r" + std::to_string(i)), nullptr);
  index.reclaim();
  for (auto& s : this->arena_.all) index.unlink(*s);
}

TYPED_TEST(hlist_index_test, reserve_makes_room_for_a_bulk_add_with_no_growth_and_never_shrinks) {
  name_index<TypeParam> index;  // 16 buckets, grows 4x
  for (int i = 0; i < 10; ++i) this->arena_.make_linked(index, "v" + std::to_string(i), i);
  index.reserve(1000);
  EXPECT_EQ(index.buckets(), 1024u) << "the power of two at or above the count";
  EXPECT_EQ(index.resizes(), 1u);
  for (int i = 10; i < 1000; ++i) this->arena_.make_linked(index, "v" + std::to_string(i), i);
  EXPECT_EQ(index.resizes(), 1u) << "1,000 objects fit: no growth while they are added";
  index.reserve(10);
  EXPECT_EQ(index.buckets(), 1024u) << "reserve never shrinks";
  EXPECT_EQ(index.resizes(), 1u);
  for (int i = 0; i < 1000; ++i) ASSERT_NE(find_in_guard(index, "v" + std::to_string(i)), nullptr);
  index.reclaim();
  for (auto& s : this->arena_.all) ASSERT_TRUE(index.unlink(*s));
}

TYPED_TEST(hlist_index_test, reserve_stops_at_max_buckets) {
  name_index<TypeParam> index(hlist_options{.max_buckets = 64});
  index.reserve(1000);
  EXPECT_EQ(index.buckets(), 64u);
  index.reserve(1000);
  EXPECT_EQ(index.resizes(), 1u) << "at max_buckets already: nothing to do";
  index.reclaim();
}

TEST(hlist_index_sizes, a_table_too_large_for_memory_is_refused_with_bad_alloc_and_changes_nothing) {
  // 2^61 buckets of 8 bytes: the byte count wraps (issue 34); SIZE_MAX: bit_ceil has no answer.
  thread_registration<flavor::memb> reg;
  arena a;
  constexpr std::size_t kWraps = std::size_t{1} << 61;
  constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(name_index<flavor::memb>(hlist_options{.initial_buckets = kWraps}), std::bad_alloc);
  name_index<flavor::memb> index;
  for (int i = 0; i < 100; ++i) a.make_linked(index, "v" + std::to_string(i), i);
  const std::size_t buckets = index.buckets();
  const std::size_t resizes = index.resizes();
  for (std::size_t n : {kWraps, kHuge}) {
    EXPECT_THROW(index.resize(n), std::bad_alloc) << n;
    EXPECT_THROW(index.reserve(n), std::bad_alloc) << n;
    EXPECT_EQ(index.buckets(), buckets);
    EXPECT_EQ(index.resizes(), resizes);
    EXPECT_EQ(index.size(), 100u);
  }
  for (int i = 0; i < 100; ++i) ASSERT_NE(find_in_guard(index, "v" + std::to_string(i)), nullptr) << i;
  a.make_linked(index, "after", 100);  // still usable
  EXPECT_NE(find_in_guard(index, "after"), nullptr);
  name_index<flavor::memb> capped(hlist_options{.max_buckets = 64});
  capped.reserve(kHuge);  // max_buckets caps the request before any size is computed
  EXPECT_EQ(capped.buckets(), 64u);
  index.reclaim();
  capped.reclaim();
  for (auto& s : a.all) ASSERT_TRUE(index.unlink(*s));
}

TEST(hlist_index_oscillation, an_add_inside_a_read_section_defers_the_wait_for_retired_tables_to_one_outside) {
  // After a grow and a shrink the retired tables outweigh the newest: the next resize first waits
  // for a grace period (file comment, "Grace periods"). Inside a read section that wait would
  // deadlock (memb) or drop the reader's protection (qsbr), so it must not run there.
  thread_registration<flavor::memb> reg;
  grace_domain<flavor::memb> domain;  // only this index's waits count here
  name_index<flavor::memb> index(hlist_options{}, domain);
  arena a;
  for (int i = 0; i < 16; ++i) a.make_linked(index, "v" + std::to_string(i), i);
  index.resize(256);
  index.resize(16);  // oscillated: two tables retired, nothing elapsed (nobody ran a GP)
  ASSERT_EQ(index.retired_tables(), 2u);
  ASSERT_EQ(index.buckets(), 16u);
  const std::size_t resizes = index.resizes();
  {
    read_guard<flavor::memb> guard;
    a.make_linked(index, "v16", 16);  // 17 objects in 16 buckets: this add would start a resize
    EXPECT_EQ(domain.stats().grace_periods, 0u) << "the wait ran inside a read section";
    EXPECT_EQ(index.resizes(), resizes) << "the resize waits for an update outside the section";
    EXPECT_NE(index.find("v16"), nullptr);
  }
  a.make_linked(index, "v17", 17);  // outside: waits for the retired tables, then resizes
  EXPECT_EQ(domain.stats().grace_periods, 1u);
  EXPECT_EQ(index.resizes(), resizes + 1);
  EXPECT_EQ(index.retired_tables(), 0u);
  index.reclaim();
  for (auto& s : a.all) ASSERT_TRUE(index.unlink(*s));
}

TYPED_TEST(hlist_index_test, prefetch_add_changes_nothing_before_or_during_a_resize) {
  name_index<TypeParam> index(hlist_options{.grow_factor = 2});
  for (int i = 0; i < 16; ++i) this->arena_.make_linked(index, "f" + std::to_string(i), i);
  session& loose = this->arena_.make("loose", 100);
  index.prefetch_add(loose);
  index.prefetch_add(*this->arena_.all[3]);
  EXPECT_EQ(index.size(), 16u);
  EXPECT_FALSE(index.holds(loose));
  EXPECT_EQ(find_in_guard(index, std::string("loose")), nullptr);
  this->arena_.make_linked(index, "f16", 16);  // the 17th add starts a growth
  ASSERT_TRUE(index.resizing());
  index.prefetch_add(loose);  // the bucket in the newest table
  EXPECT_EQ(index.size(), 17u);
  EXPECT_FALSE(index.holds(loose));
  ASSERT_TRUE(index.add_unique(loose)) << "a prefetched object adds as any other";
  EXPECT_EQ(find_in_guard(index, std::string("loose")), &loose);
  index.resize(64);
  index.reclaim();
  for (auto& s : this->arena_.all) index.unlink(*s);
}

TYPED_TEST(hlist_index_test, reclaim_inside_a_read_section_is_diagnosed) {
  name_index<TypeParam> index;
  for (int i = 0; i < 40; ++i) this->arena_.make_linked(index, "c" + std::to_string(i), i);
  index.resize(64);
  ASSERT_GE(index.retired_tables(), 1u);
  test::misuse_capture cap;
  scoped_misuse_policy policy(misuse_policy::report, cap);
  {
    read_guard<TypeParam> guard;
    index.reclaim();
  }
  EXPECT_EQ(cap.last_kind, misuse_kind::blocking_in_read_section);
  EXPECT_GE(index.retired_tables(), 1u) << "nothing freed";
  index.reclaim();
  EXPECT_EQ(index.retired_tables(), 0u);
  for (auto& s : this->arena_.all) index.unlink(*s);
}

// The resize's guarantee: readers look up keys that stay linked throughout while the writer
// grows and shrinks the table again and again around them (every update moves entries); each
// lookup must find its key. Objects that come and go are poisoned after a grace period and freed;
// a reader that ever sees the poison found an object the index let go too early. Under ASan a
// reader reaching a freed table or object is reported as well.
template <class F>
void readers_find_every_key_during_continuous_resizes() {
  thread_registration<F> reg;
  grace_domain<F> domain;
  name_index<F> index(hlist_options{.grow_factor = 2}, domain);  // doubling: the most resizes
  constexpr int kStable = 200;
  constexpr int kChurn = 3000;  // 16 -> 4096 buckets and back each cycle
  constexpr int kCycles = 100;
  constexpr int kReaders = 2;
  arena stable;
  for (int i = 0; i < kStable; ++i) stable.make_linked(index, "stable" + std::to_string(i), i);
  std::atomic<bool> stop{false};
  std::atomic<long> lookups{0}, misses{0}, poisoned{0}, sections{0};
  std::latch started(kReaders + 1);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      thread_registration<F> reader_reg;
      std::vector<std::string> keys, churn_keys;
      for (int i = 0; i < kStable; ++i) keys.push_back("stable" + std::to_string(i));
      for (int i = 0; i < kChurn; i += 7) churn_keys.push_back("churn" + std::to_string(i));
      started.arrive_and_wait();
      long mine = 0, missed = 0, bad = 0;
      std::size_t k = static_cast<std::size_t>(r) * 31;
      while (!stop.load(std::memory_order_relaxed)) {
        {
          read_guard<F> guard;
          for (int j = 0; j < 64; ++j, ++k) {
            const std::string& key = keys[k % keys.size()];
            session* s = index.find(key);
            ++mine;
            if (s == nullptr) ++missed;
            else if (s->poison.load(std::memory_order_relaxed) != kAlive || s->name != key) ++bad;
            if (session* c = index.find(churn_keys[k % churn_keys.size()]))
              if (c->poison.load(std::memory_order_relaxed) != kAlive) ++bad;
          }
        }
        quiescent_state<F>();
        sections.fetch_add(1, std::memory_order_relaxed);
      }
      lookups.fetch_add(mine);
      misses.fetch_add(missed);
      poisoned.fetch_add(bad);
    });
  }
  test::watchdog dog(std::chrono::seconds(120), "hlist_index readers during continuous resizes");
  started.arrive_and_wait();
  std::size_t grows = 0, shrinks = 0, updates_resizing = 0;
  int next_id = kStable;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::vector<std::unique_ptr<session>> churn;
    std::size_t buckets = index.buckets();
    auto count_resize = [&] {
      if (index.buckets() > buckets) ++grows;
      if (index.buckets() < buckets) ++shrinks;
      buckets = index.buckets();
      if (index.resizing()) ++updates_resizing;
    };
    for (int i = 0; i < kChurn; ++i) {
      churn.push_back(std::make_unique<session>("churn" + std::to_string(i), next_id++));
      ASSERT_TRUE(index.add_unique(*churn.back()));
      count_resize();
    }
    for (std::size_t b : {std::size_t{16384}, std::size_t{1024}, std::size_t{4096}}) {
      index.resize(b);  // whole migrations back to back: the densest moves readers can meet
      count_resize();
    }
    for (auto& s : churn) {
      ASSERT_TRUE(index.unlink(*s));
      count_resize();
    }
    domain.synchronize();  // readers that could still reach the churn objects have finished
    for (auto& s : churn) s->poison.store(kPoison, std::memory_order_relaxed);
    dog.kick();
  }  // churn freed here, a grace period after its unlink
  // Under load the readers may not have run yet: wait until they completed a section (an
  // observable, not a sleep) rather than let the checks below be vacuous.
  while (sections.load() == 0) std::this_thread::yield();
  stop.store(true);
  for (auto& t : readers) t.join();
  for (auto& s : stable.all) ASSERT_TRUE(index.unlink(*s));
  index.reclaim();
  EXPECT_EQ(misses.load(), 0) << "a linked key was not found during a resize (of " << lookups.load() << " lookups)";
  EXPECT_EQ(poisoned.load(), 0) << "a reader found an object a grace period after its unlink";
  EXPECT_GT(lookups.load(), 0) << "the readers looked nothing up: the check above was vacuous";
  std::printf("%ld lookups, %zu of %d updates during a resize, %zu grows, %zu shrinks\n", lookups.load(),
              updates_resizing, kCycles * kChurn * 2, grows, shrinks);
  // Each cycle grows to 4096 buckets and shrinks (200 stable keys: to 1024, the shrink's
  // migration running into the next cycle's adds), so a tenth of the updates or more move entries.
  EXPECT_GE(grows, static_cast<std::size_t>(kCycles)) << "each cycle grows";
  EXPECT_GE(shrinks, static_cast<std::size_t>(kCycles) - 1) << "each cycle shrinks back";
  EXPECT_GT(updates_resizing * 10, static_cast<std::size_t>(kCycles) * kChurn * 2) << "a tenth of the updates or more moved entries";
}

// The unzip ordering, deterministically: at the midpoint of every move (the test seam above) a
// reader on the writer's own thread must find the moved object and every other linked one, through
// growths (16 -> 1024 buckets by 4 and by 2), a shrink and resize(). A move that unlinked from the
// old chain before linking into the new one fails here on its first move, every run.
TEST(hlist_index_resize, every_object_is_found_in_the_middle_of_every_move) {
  thread_registration<flavor::memb> reg;
  for (const std::size_t factor : {std::size_t{4}, std::size_t{2}}) {
    SCOPED_TRACE("grow_factor " + std::to_string(factor));
    grace_domain<flavor::memb> domain;
    name_index<flavor::memb> index(hlist_options{.grow_factor = factor}, domain);
    arena objects;
    std::size_t moves = 0, moved_missing = 0, other_missing = 0;
    hlist_probe::on_move = [&](const void* moved) {
      ++moves;
      const auto* m = static_cast<const session*>(moved);
      read_guard<flavor::memb> guard;
      if (index.find(m->name) != m) ++moved_missing;
      for (const auto& s : objects.all)
        if (index.holds(*s) && index.find(s->name) != s.get()) ++other_missing;
    };
    for (int i = 0; i < 600; ++i) objects.make_linked(index, "m" + std::to_string(i), i);
    for (int i = 0; i < 560; ++i) ASSERT_TRUE(index.unlink(*objects.all[static_cast<std::size_t>(i)]));
    for (int i = 0; i < 200 && (index.resizing() || index.buckets() > 128); ++i) {  // adds shrink it
      session& t = objects.make("t" + std::to_string(i), -1);
      ASSERT_TRUE(index.add_unique(t));
      ASSERT_TRUE(index.unlink(t));
    }
    index.resize(512);
    hlist_probe::on_move = nullptr;
    EXPECT_EQ(moved_missing, 0u) << "a moved object was in neither chain in the middle of its move";
    EXPECT_EQ(other_missing, 0u);
    EXPECT_GE(moves, 400u) << "the probe saw too few moves: the check above was nearly vacuous";
    EXPECT_GE(index.resizes(), 3u);
    for (auto& s : objects.all) index.unlink(*s);
    domain.synchronize();
    index.reclaim();
  }
}

TEST(hlist_index_resize, memb_readers_find_every_key_during_continuous_grow_and_shrink) {
  readers_find_every_key_during_continuous_resizes<flavor::memb>();
}
TEST(hlist_index_resize, qsbr_readers_find_every_key_during_continuous_grow_and_shrink) {
  readers_find_every_key_during_continuous_resizes<flavor::qsbr>();
}

// The registry kit takes it as it takes lfht_index: publish into both indexes, a duplicate refused
// and undone, unregister_many tears down through unlist, try_unregister finds by key.
struct device : registrable<device> {
  device(std::string n, int i) : name(std::move(n)), ifindex(i) {}
  std::string name;
  int ifindex;
  hlist_hook<device> by_name_hook;
  hlist_hook<device> by_index_hook;
};
using dev_by_name = hlist_index<device, &device::by_name_hook, key_member<&device::name>>;
using dev_by_index = hlist_index<device, &device::by_index_hook, key_member<&device::ifindex>>;

TEST(hlist_index_registry, indexed_publishes_finds_refuses_and_tears_down) {
  thread_registration<> reg;
  registry<indexed<device, dev_by_name, dev_by_index>> devices;
  std::vector<device*> all;
  for (int i = 1; i <= 1000; ++i) {
    auto* d = new device("dummy" + std::to_string(i), i);
    ASSERT_TRUE(devices.add(*d));
    all.push_back(d);
  }
  auto* dup_name = new device("dummy5", 5000);
  EXPECT_FALSE(devices.add(*dup_name)) << "the name is taken";
  EXPECT_FALSE(dup_name->by_index_hook.is_linked()) << "refused: its add to the second index is undone";
  {
    read_guard<> guard;
    EXPECT_EQ(devices.find<dev_by_name>(guard, "dummy7"), all[6]);
    EXPECT_EQ(devices.find<dev_by_index>(guard, 7), all[6]);
    EXPECT_EQ(devices.find<dev_by_index>(guard, 5000), nullptr);
  }
  EXPECT_TRUE(devices.try_unregister<dev_by_name>(std::string_view("dummy1")));
  EXPECT_FALSE(devices.try_unregister<dev_by_name>(std::string_view("dummy1")));
  const batch_stats stats = devices.unregister_many(std::span(all).subspan(1));
  EXPECT_EQ(stats.objects, 999u);
  EXPECT_EQ(devices.index<dev_by_name>().size(), 0u);
  EXPECT_EQ(devices.index<dev_by_index>().size(), 0u);
  {
    read_guard<> guard;
    EXPECT_EQ(devices.find<dev_by_name>(guard, "dummy500"), nullptr);
  }
  delete dup_name;
}

using hlist_index_death = hlist_index_test<flavor::memb>;

TEST_F(hlist_index_death, find_outside_a_read_guard_aborts_with_a_sentence) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  name_index<flavor::memb> index;
  EXPECT_DEATH((void)index.find("alice"), "hlist_index::find: called outside a read_guard");
  EXPECT_DEATH((void)index.begin(), "hlist_index::begin: called outside a read_guard");
  EXPECT_DEATH((void)index.for_each_equal("alice", [](session&) {}),
               "hlist_index::for_each_equal: called outside a read_guard");
}

/// A hash that, once armed, calls back into the index: a second writer inside the first one's call.
struct reentrant_hash {
  static inline std::function<void()> on_hash;
  template <class K>
  unsigned long operator()(const K& key) const noexcept {
    if (on_hash) std::exchange(on_hash, nullptr)();
    return lfht_hash{}(key);
  }
};
using reentrant_index = hlist_index<session, &session::by_name, key_member<&session::name>, flavor::memb, reentrant_hash>;

#ifndef NDEBUG
/// An unlink inside an add_unique's hash: two writer calls at once on one index.
void overlapping_writers() {
  reentrant_index index;
  session a("alice", 1);
  session b("bob", 2);
  index.add_unique(a);
  reentrant_hash::on_hash = [&] { index.unlink(a); };
  index.add_unique(b);
}
#endif

TEST_F(hlist_index_death, overlapping_writers_abort_in_debug_builds) {
#ifdef NDEBUG
  GTEST_SKIP() << "the writer-serialization check is compiled in only without NDEBUG";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(overlapping_writers(), "hlist_index::unlink: two writers at once");
#endif
}

// The run-time flavor (what netsim uses): the same index behind lfht_runtime_flavor::of<F>().
template <class F>
void runtime_flavor_round_trip() {
  thread_registration<F> reg;
  using runtime_index = hlist_index<session, &session::by_name, key_member<&session::name>, lfht_runtime_flavor>;
  runtime_index index(lfht_runtime_flavor::of<F>());
  arena objects;
  for (int i = 0; i < 100; ++i) objects.make_linked(index, "rt" + std::to_string(i), i);
  EXPECT_EQ(index.buckets(), 256u);  // 16, 64, 256: grow_factor 4
  EXPECT_GE(index.retired_tables(), 1u) << "no domain: updates never free a retired table";
  {
    read_guard<F> guard;
    for (int i = 0; i < 100; ++i) ASSERT_EQ(index.find("rt" + std::to_string(i)), objects.all[static_cast<std::size_t>(i)].get());
  }
  index.reclaim();
  EXPECT_EQ(index.retired_tables(), 0u);
  for (auto& s : objects.all) ASSERT_TRUE(index.unlink(*s));
}
TEST(hlist_index_runtime, memb) { runtime_flavor_round_trip<flavor::memb>(); }
TEST(hlist_index_runtime, qsbr) { runtime_flavor_round_trip<flavor::qsbr>(); }

TEST_F(hlist_index_death, a_runtime_flavor_find_outside_a_read_guard_aborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  hlist_index<session, &session::by_name, key_member<&session::name>, lfht_runtime_flavor> index(
      lfht_runtime_flavor::of<flavor::memb>());
  EXPECT_DEATH((void)index.find("alice"), "hlist_index::find: called outside a read_guard");
}

TEST(hlist_index_options, a_count_that_is_not_a_power_of_two_is_named) {
  try {
    name_index<flavor::memb> index(hlist_options{.initial_buckets = 12});
    FAIL() << "12 buckets accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string_view(e.what()).find("initial_buckets = 12"), std::string_view::npos) << e.what();
  }
  EXPECT_THROW((name_index<flavor::memb>(hlist_options{.min_buckets = 64, .max_buckets = 32})), std::invalid_argument);
}

TEST(hlist_index_options, a_grow_factor_below_2_or_not_a_power_of_two_is_named) {
  for (const std::size_t factor : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{6}}) {
    try {
      name_index<flavor::memb> index(hlist_options{.grow_factor = factor});
      ADD_FAILURE() << "grow_factor " << factor << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string_view(e.what()).find("grow_factor"), std::string_view::npos) << e.what();
    }
  }
  name_index<flavor::memb> by_8(hlist_options{.grow_factor = 8});
  arena objects;
  for (int i = 0; i < 17; ++i) objects.make_linked(by_8, "f" + std::to_string(i), i);
  EXPECT_EQ(by_8.buckets(), 128u) << "16 buckets, then 8x at the 17th add";
  for (auto& s : objects.all) by_8.unlink(*s);
}

}  // namespace
}  // namespace rcubatch
