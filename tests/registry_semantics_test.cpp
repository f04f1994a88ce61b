// registry semantics, round 2 (issue 37): reload by key, a replace that keeps the children, a
// family published whole, a child added under its parent's key, conditional delete by key,
// add-and-hold, flush by predicate, a bounded table, constructors that forward to the policies.
// Exact GP counts with the counting flavor (the indexes are memb rculfhash tables this thread
// alone uses); real memb readers racing the writers where the claim is about readers.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/checking_readers.hpp"
#include "support/counting.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizer presets run the 100,000-route test with 10,000 routes
#else
constexpr bool kSanitized = false;
#endif

// --- one object type: an entry with an id and a version --------------------------------------

struct entry : registrable<entry> {
  entry(int i, int v) : id(i), version(v) {}
  int id;
  int version;
  lfht_hook<entry> by_id;
  std::atomic<std::uint64_t> poison{kAlive};
};
using entry_ids = lfht_index<entry, &entry::by_id, key_member<&entry::id>, flavor::memb>;

/// Counts destroys; frees.
struct entries : indexed<entry, entry_ids> {
  std::atomic<int> destroyed{0};
  void destroy(entry* e) noexcept {
    destroyed.fetch_add(1);
    delete e;
  }
};

using CF = counting_flavor<struct registry_semantics_tag>;
struct semantics_counting : counting_test<registry_semantics_tag> {
  thread_registration<flavor::memb> reg_;  // the indexes are memb rculfhash tables
};

entry* find_entry(basic_registry<CF, std::mutex, entries>& reg, int id) {
  read_guard<flavor::memb> guard;
  return reg.find<entry_ids>(guard, id);
}

// --- try_replace by key ----------------------------------------------------------------------

TEST_F(semantics_counting, try_replace_by_key_replaces_the_object_with_that_key_or_says_not_found) {
  basic_registry<CF, std::mutex, entries> reg(domain);
  auto* v1 = new entry(1, 1);
  ASSERT_TRUE(reg.add(*v1));

  auto* v2 = new entry(1, 2);
  const replace_result r = reg.try_replace<entry_ids>(1, *v2);
  EXPECT_TRUE(r);
  EXPECT_EQ(r.status, replace_status::replaced);
  EXPECT_EQ(r.stats.grace_periods, 1u);
  EXPECT_EQ(reg.policy<entries>().destroyed.load(), 1);
  EXPECT_EQ(find_entry(reg, 1), v2);

  entry stray(9, 1);  // no object has key 9: nothing changed, stray is still the caller's
  const replace_result missing = reg.try_replace<entry_ids>(9, stray);
  EXPECT_FALSE(missing);
  EXPECT_EQ(missing.status, replace_status::not_found);
  EXPECT_EQ(stray.state(), reg_state::uninitialized);
  EXPECT_FALSE(stray.by_id.is_linked());
  EXPECT_EQ(CF::synchronizes(), 1u) << "not_found runs no grace period";
  EXPECT_EQ(reg.unregister(*v2).objects, 1u);
}

/// Destroys into a graveyard (freed by the test after its readers stop), poisoning first.
struct entries_poisoned : indexed<entry, entry_ids> {
  std::mutex m;
  std::vector<std::unique_ptr<entry>>* graveyard = nullptr;
  void destroy(entry* e) noexcept {
    e->poison.store(kPoison);
    const std::scoped_lock lock(m);   // two writers' batches destroy concurrently (no writer lock then)
    graveyard->emplace_back(e);       // reserved by the test: no allocation here
  }
};

/// A memb registry of entries destroyed into its graveyard, freed after the registry.
struct poisoned_table {
  explicit poisoned_table(std::size_t expected) {
    graveyard.reserve(expected);
    reg.policy<entries_poisoned>().graveyard = &graveyard;
  }
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  std::vector<std::unique_ptr<entry>> graveyard;  // declared before reg: outlives it
  basic_registry<flavor::memb, std::mutex, entries_poisoned> reg{domain};
};

TEST(registry_semantics, a_replace_by_key_racing_a_delete_by_key_is_one_result_each_never_misuse) {
  // Two writers × 10,000 rounds: one replaces key i by key, the other deletes key i by key, released
  // together by a barrier. Every round: the delete finds the old or the new version (unregistered),
  // the replace either replaced or found nothing (not_found); 0 misuse (throw_error would escape);
  // after the round the key is gone. A reader looks the current key up throughout: it sees
  // version 1, version 2 or (after the delete) nothing, never a destroyed object.
  constexpr int kRounds = 10'000;
  watchdog dog(std::chrono::seconds(240), "try_replace racing try_unregister by key");
  poisoned_table table(2 * kRounds + 1);
  auto& reg = table.reg;

  std::atomic<int> current{0};
  std::atomic<long> bad_versions{0};
  checking_readers<flavor::memb> readers(1, [&](std::uint64_t, const read_guard<flavor::memb>& guard) {
    const entry* e = reg.find<entry_ids>(guard, current.load(std::memory_order_acquire));
    if (e != nullptr && e->version != 1 && e->version != 2) bad_versions.fetch_add(1);
    return lookup_outcome{.missed = false, .poisoned = e != nullptr && e->poison.load() != kAlive};
  });

  std::atomic<int> replaced{0}, replace_not_found{0}, replace_other{0};
  std::atomic<int> deleted{0}, delete_other{0}, still_there{0};
  int round = 0;
  auto next_round = [&]() noexcept {  // runs on one writer while the other waits: the next key's v1
    if (round > 0) {
      read_guard<flavor::memb> guard;
      if (reg.find<entry_ids>(guard, round) != nullptr) still_there.fetch_add(1);
    }
    ++round;
    if (round <= kRounds) {
      current.store(round, std::memory_order_release);
      if (!reg.add(*new entry(round, 1))) still_there.fetch_add(1000);
    }
  };
  std::barrier sync(2, next_round);
  std::thread replacer([&] {
    thread_registration<flavor::memb> registered;
    for (int i = 1; i <= kRounds; ++i) {
      sync.arrive_and_wait();
      auto* n = new entry(i, 2);
      const replace_result r = reg.try_replace<entry_ids>(i, *n);
      if (r.status == replace_status::replaced) {
        replaced.fetch_add(1);
      } else {
        (r.status == replace_status::not_found ? replace_not_found : replace_other).fetch_add(1);
        delete n;  // not replaced: never published, still ours
      }
      dog.kick();
    }
    sync.arrive_and_wait();
  });
  std::thread deleter([&] {
    thread_registration<flavor::memb> registered;
    for (int i = 1; i <= kRounds; ++i) {
      sync.arrive_and_wait();
      const unregister_result r = reg.try_unregister<entry_ids>(i);
      (r.status == unregister_status::unregistered ? deleted : delete_other).fetch_add(1);
    }
    sync.arrive_and_wait();
  });
  replacer.join();
  deleter.join();
  const lookup_tally seen = readers.stop();

  EXPECT_EQ(replaced.load() + replace_not_found.load(), kRounds) << "one result per round for the replace";
  EXPECT_EQ(replace_other.load(), 0);
  EXPECT_EQ(deleted.load(), kRounds) << "the delete finds the old or the new version every round";
  EXPECT_EQ(delete_other.load(), 0);
  EXPECT_EQ(still_there.load(), 0) << "after each round the key is gone";
  EXPECT_EQ(table.graveyard.size(), static_cast<std::size_t>(kRounds + replaced.load()));
  EXPECT_TRUE(reg.index<entry_ids>().empty());
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_EQ(bad_versions.load(), 0);
}

TEST(registry_semantics, a_replace_of_an_object_already_being_unregistered_is_a_result_not_misuse) {
  // The old object is held, so its batch waits in the ref drain (the writer lock released): it is
  // unregistering and still alive. replace by object then reports already_unregistering, changes
  // nothing, and leaves the new object the caller's.
  watchdog dog(std::chrono::seconds(60), "replace of an object in its ref drain");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  basic_registry<flavor::memb, std::mutex, entries> reg(domain);
  auto* old_obj = new entry(5, 1);
  ASSERT_TRUE(reg.add(*old_obj));
  old_obj->refs().hold();
  std::thread deleter([&] {
    thread_registration<flavor::memb> registered;
    reg.unregister(*old_obj);
  });
  while (old_obj->state() == reg_state::registered) std::this_thread::yield();  // its batch unlisted it
  misuse_capture capture;  // under report, a misuse is counted instead of thrown
  scoped_misuse_policy quiet(misuse_policy::report, capture);
  entry fresh(5, 2);
  const replace_result r = reg.replace(*old_obj, fresh);  // waits for the lock: released at the drain
  EXPECT_EQ(r.status, replace_status::already_unregistering);
  EXPECT_FALSE(r);
  EXPECT_EQ(capture.calls, 0) << capture.last_message;
  EXPECT_EQ(fresh.state(), reg_state::uninitialized);
  EXPECT_FALSE(fresh.by_id.is_linked());
  old_obj->refs().put();
  deleter.join();
  EXPECT_EQ(reg.policy<entries>().destroyed.load(), 1);
}

// --- conditional delete by key, flush by predicate, capacity, add-and-hold --------------------

TEST_F(semantics_counting, try_unregister_with_a_predicate_deletes_only_when_it_holds_under_the_lock) {
  basic_registry<CF, std::mutex, entries> reg(domain);
  auto* e = new entry(1, 7);
  ASSERT_TRUE(reg.add(*e));
  const unregister_result kept = reg.try_unregister<entry_ids>(1, [](const entry& x) { return x.version > 7; });
  EXPECT_EQ(kept.status, unregister_status::kept);
  EXPECT_FALSE(kept);
  EXPECT_EQ(e->state(), reg_state::registered);
  EXPECT_EQ(CF::synchronizes(), 0u) << "kept: no batch";
  EXPECT_EQ(reg.try_unregister<entry_ids>(2, [](const entry&) { return true; }).status, unregister_status::not_found);
  const unregister_result gone = reg.try_unregister<entry_ids>(1, [](const entry& x) { return x.version == 7; });
  EXPECT_EQ(gone.status, unregister_status::unregistered);
  EXPECT_EQ(gone.unregistered, 1u);
  EXPECT_EQ(reg.policy<entries>().destroyed.load(), 1);
  EXPECT_EQ(find_entry(reg, 1), nullptr);
}

TEST_F(semantics_counting, unregister_if_flushes_every_match_in_one_batch_and_keeps_the_rest) {
  basic_registry<CF, std::mutex, entries> reg(domain);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(reg.add(*new entry(i, i % 2)));  // version: 1 for odd ids
  const unregister_result r = reg.unregister_if<entry_ids>([](const entry& e) { return e.version == 0; });
  EXPECT_EQ(r.status, unregister_status::unregistered);
  EXPECT_EQ(r.unregistered, 50u);
  EXPECT_EQ(r.stats.objects, 50u);
  EXPECT_EQ(CF::synchronizes(), 1u) << "one batch, no uninit: one grace period for all 50";
  EXPECT_EQ(reg.policy<entries>().destroyed.load(), 50);
  EXPECT_EQ(reg.size<entry>(), 50u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(find_entry(reg, i) != nullptr, i % 2 == 1) << i;
  const unregister_result none = reg.unregister_if<entry_ids>([](const entry& e) { return e.version == 0; });
  EXPECT_EQ(none.status, unregister_status::not_found);
  EXPECT_EQ(CF::synchronizes(), 1u) << "nothing matched: no grace period";
  EXPECT_EQ(reg.unregister_if<entry_ids>([](const entry&) { return true; }).unregistered, 50u);
}

/// A table capped at `limit` entries (nf_conntrack_max).
struct bounded_entries : entries {
  explicit bounded_entries(std::size_t l) : limit(l) {}
  std::size_t limit;
  std::size_t capacity() const noexcept { return limit; }
};

TEST_F(semantics_counting, an_add_beyond_the_capacity_is_refused_as_full_and_the_count_is_kept) {
  basic_registry<CF, std::mutex, bounded_entries> reg(registry_options{}, domain, std::size_t{3});
  std::vector<entry*> added;
  for (int i = 0; i < 3; ++i) {
    added.push_back(new entry(i, 0));
    ASSERT_EQ(reg.try_add(*added.back()).status, add_status::added);
  }
  EXPECT_EQ(reg.size<entry>(), 3u);
  entry over(3, 0);
  EXPECT_EQ(reg.try_add(over).status, add_status::full);
  EXPECT_FALSE(reg.add(over));
  EXPECT_EQ(over.state(), reg_state::uninitialized);
  EXPECT_FALSE(over.by_id.is_linked());
  EXPECT_EQ(reg.size<entry>(), 3u);
  // The same key as an added one: a duplicate is a duplicate before it is "full".
  EXPECT_EQ(reg.unregister(*added[0]).objects, 1u);
  EXPECT_EQ(reg.size<entry>(), 2u);
  auto* room = new entry(3, 0);
  EXPECT_EQ(reg.try_add(*room).status, add_status::added) << "a delete makes room";
  entry dup(1, 0);
  EXPECT_EQ(reg.try_add(dup).status, add_status::full);
  added.erase(added.begin());
  added.push_back(room);
  EXPECT_EQ(reg.unregister_many(added).objects, 3u);
}

TEST_F(semantics_counting, add_and_hold_returns_the_object_held_until_the_caller_puts_it) {
  basic_registry<CF, std::mutex, entries> reg(domain);
  auto* e = new entry(1, 0);
  ASSERT_TRUE(reg.add_and_hold(*e));
  EXPECT_EQ(e->state(), reg_state::registered);
  EXPECT_EQ(e->refs().count(), 1u) << "one hold, the caller's";
  entry dup(1, 0);
  const add_result refused = reg.add_and_hold(dup);
  EXPECT_EQ(refused.status, add_status::duplicate);
  EXPECT_EQ(dup.refs().count(), 0u) << "no hold when not added";
  e->refs().put();
  EXPECT_EQ(reg.unregister(*e).objects, 1u);
  EXPECT_EQ(reg.policy<entries>().destroyed.load(), 1);
}

// --- constructors that forward to the policies ----------------------------------------------

/// A policy with state: a pointer given at construction.
struct audited_entries : indexed<entry, entry_ids> {
  explicit audited_entries(int* destroys) : destroys_seen(destroys) {}
  int* destroys_seen;
  void destroy(entry* e) noexcept {
    ++*destroys_seen;
    delete e;
  }
};

TEST_F(semantics_counting, the_registry_constructs_its_policies_and_indexes_from_the_arguments_given) {
  int destroys = 0;
  basic_registry<CF, std::mutex, audited_entries> with_state(registry_options{}, domain, &destroys);
  auto* e = new entry(1, 0);
  ASSERT_TRUE(with_state.add(*e));
  with_state.unregister(*e);
  EXPECT_EQ(destroys, 1) << "the policy's state pointer, given to the registry's constructor";

  basic_registry<CF, std::mutex, indexed<entry, entry_ids>> presized(registry_options{}, domain,
                                                                     lfht_options{.initial_buckets = 1024});
  EXPECT_EQ(presized.index<entry_ids>().buckets(), 1024u) << "the index's options, through indexed's constructor";
  basic_registry<flavor::memb, std::mutex, indexed<entry, entry_ids>> defaults_elsewhere(
      lfht_options{.initial_buckets = 256});
  EXPECT_EQ(defaults_elsewhere.index<entry_ids>().buckets(), 256u);
  EXPECT_EQ(&defaults_elsewhere.domain(), &default_domain<flavor::memb>());
}

// --- families: groups and their routes --------------------------------------------------------

struct group;
struct route : registrable<route> {
  explicit route(int i) : id(i) { constructed.fetch_add(1); }
  int id;
  lfht_hook<route> by_id;
  owner_hook<group> owner;
  std::atomic<std::uint64_t> poison{kAlive};
  static inline std::atomic<long> constructed{0};
};
struct group : registrable<group> {
  group(int i, int v) : id(i), version(v) {}
  int id;
  int version;
  lfht_hook<group> by_id;
  owned_list<route, &route::owner> routes;
  std::atomic<std::uint64_t> poison{kAlive};
};
using route_ids = lfht_index<route, &route::by_id, key_member<&route::id>, flavor::memb>;
using group_ids = lfht_index<group, &group::by_id, key_member<&group::id>, flavor::memb>;

/// Groups destroyed into a graveyard (poisoned; the test frees them after its readers stop).
struct groups : indexed<group, group_ids>, owning<&group::routes> {
  std::vector<std::unique_ptr<group>>* graveyard = nullptr;
  int destroyed = 0;
  void destroy(group* g) noexcept {
    ++destroyed;
    g->poison.store(kPoison);
    if (graveyard != nullptr) graveyard->emplace_back(g);  // reserved by the test
    else delete g;
  }
};
struct routes : indexed<route, route_ids> {
  std::atomic<long> destroyed{0};
  void destroy(route* r) noexcept {
    destroyed.fetch_add(1);
    r->poison.store(kPoison);
    delete r;
  }
};

template <class F>
using fib = basic_registry<F, std::mutex, groups, routes>;

route* find_route(const fib<CF>& reg, int id) {
  read_guard<flavor::memb> guard;
  return reg.find<route_ids>(guard, id);
}
group* find_group(const fib<CF>& reg, int id) {
  read_guard<flavor::memb> guard;
  return reg.find<group_ids>(guard, id);
}

TEST_F(semantics_counting, a_replace_keeping_children_re_parents_them_and_costs_one_grace_period) {
  fib<CF> reg(domain);
  auto* g1 = new group(1, 1);
  std::vector<route*> kids;
  for (int i = 0; i < 10; ++i) kids.push_back(new route(100 + i));
  ASSERT_TRUE(reg.add_with_children(*g1, kids));
  ASSERT_EQ(g1->routes.size(), 10u);

  auto* g2 = new group(1, 2);
  const replace_result r = reg.replace(*g1, *g2, keep_children);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.stats.objects, 1u) << "the old group alone: no child queued";
  EXPECT_EQ(r.stats.grace_periods, 1u);
  EXPECT_EQ(CF::synchronizes(), 1u);
  EXPECT_EQ(reg.policy<groups>().destroyed, 1);
  EXPECT_EQ(reg.policy<routes>().destroyed.load(), 0);
  EXPECT_EQ(g2->routes.size(), 10u);
  for (route* k : kids) {
    EXPECT_EQ(k->owner.parent(), g2);
    EXPECT_EQ(k->state(), reg_state::registered);
    EXPECT_EQ(find_route(reg, k->id), k);
  }
  // By key, the same.
  auto* g3 = new group(1, 3);
  ASSERT_EQ(reg.try_replace<group_ids>(1, *g3, keep_children).status, replace_status::replaced);
  EXPECT_EQ(g3->routes.size(), 10u);
  EXPECT_EQ(kids.front()->owner.parent(), g3);
  EXPECT_EQ(find_group(reg, 1), g3);
  // Without keep_children the children go with the old group (replace's contract).
  auto* g4 = new group(1, 4);
  EXPECT_EQ(reg.replace(*g3, *g4).stats.objects, 11u);
  EXPECT_EQ(reg.policy<routes>().destroyed.load(), 10);
  EXPECT_EQ(reg.unregister(*g4).objects, 1u);
}

TEST(registry_semantics, a_group_replaced_a_thousand_times_keeps_its_routes_under_two_readers) {
  // A group with 100,000 routes (10,000 under ASan/TSan) replaced 1,000 times keeping its routes,
  // 2 memb readers looking routes and the group up throughout and following each route's parent:
  // 0 misses, 0 destroyed objects seen, 0 routes re-created or destroyed, one GP per replace.
  const int kRoutes = kSanitized ? 10'000 : 100'000;
  constexpr int kReplaces = 1'000;
  watchdog dog(std::chrono::seconds(240), "group replace keeping its routes under readers");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  fib<flavor::memb> reg(domain);
  std::vector<std::unique_ptr<group>> graveyard;
  graveyard.reserve(kReplaces + 1);
  reg.policy<groups>().graveyard = &graveyard;
  {
    std::vector<route*> kids;
    for (int i = 0; i < kRoutes; ++i) kids.push_back(new route(i));
    auto* g = new group(1, 0);
    ASSERT_TRUE(reg.add_with_children(*g, kids));  // the registry's now
  }
  const long created_before = route::constructed.load();
  std::atomic<long> probes{0};
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
    probes.fetch_add(1, std::memory_order_relaxed);
    const route* r = reg.find<route_ids>(guard, static_cast<int>(i % static_cast<std::uint64_t>(kRoutes)));
    const group* parent = r != nullptr ? r->owner.parent() : nullptr;
    const group* by_key = reg.find<group_ids>(guard, 1);
    return lookup_outcome{.missed = r == nullptr || parent == nullptr || by_key == nullptr,
                          .poisoned = (r != nullptr && r->poison.load() != kAlive) ||
                                      (parent != nullptr && parent->poison.load() != kAlive) ||
                                      (by_key != nullptr && by_key->poison.load() != kAlive)};
  });
  unsigned gps = 0, not_one = 0;
  for (int v = 1; v <= kReplaces; ++v) {
    auto* next = new group(1, v);
    const replace_result r = reg.try_replace<group_ids>(1, *next, keep_children);
    if (!r) delete next;
    gps += r.stats.grace_periods;
    not_one += r.stats.grace_periods != 1 ? 1u : 0u;
    if (v % 50 == 0) {  // the readers probe between replaces, even on a loaded machine (progress, not timing)
      const long before = probes.load();
      while (probes.load() < before + 4) std::this_thread::yield();
    }
    dog.kick();
  }
  const lookup_tally seen = readers.stop();
  EXPECT_GT(seen.lookups, 0);
  EXPECT_EQ(seen.misses, 0);
  EXPECT_EQ(seen.poisoned, 0);
  EXPECT_EQ(gps, static_cast<unsigned>(kReplaces)) << "one GP per replace";
  EXPECT_EQ(not_one, 0u);
  EXPECT_EQ(route::constructed.load(), created_before) << "no route re-created";
  EXPECT_EQ(reg.policy<routes>().destroyed.load(), 0);
  EXPECT_EQ(graveyard.size(), static_cast<std::size_t>(kReplaces));
  group* last = nullptr;
  {
    read_guard<flavor::memb> guard;
    last = reg.find<group_ids>(guard, 1);
  }
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->version, kReplaces);
  EXPECT_EQ(last->routes.size(), static_cast<std::size_t>(kRoutes));
  EXPECT_EQ(reg.unregister(*last).objects, static_cast<std::size_t>(kRoutes) + 1);
}

TEST_F(semantics_counting, add_with_children_with_a_duplicate_key_anywhere_publishes_nothing) {
  fib<CF> reg(domain);
  auto* taken = new route(7);
  ASSERT_TRUE(reg.add(*taken));  // owned by nobody: a route without a group
  group g(1, 0);
  route a(5), b(6), dup(7);
  std::vector<route*> kids{&a, &b, &dup};
  const add_result r = reg.add_with_children(g, kids);
  EXPECT_EQ(r.status, add_status::duplicate);
  EXPECT_FALSE(r);
  for (route* k : kids) {
    EXPECT_EQ(k->state(), reg_state::uninitialized);
    EXPECT_FALSE(k->by_id.is_linked());
  }
  EXPECT_EQ(g.state(), reg_state::uninitialized);
  EXPECT_FALSE(g.by_id.is_linked());
  EXPECT_TRUE(g.routes.empty());
  EXPECT_EQ(find_group(reg, 1), nullptr);
  EXPECT_EQ(find_route(reg, 5), nullptr);
  EXPECT_EQ(CF::synchronizes(), 1u) << "the first children were visible: one grace period before returning";
  // The parent's key taken: the same.
  auto* other = new group(1, 9);
  ASSERT_TRUE(reg.add(*other));
  route c(8);
  std::vector<route*> one{&c};
  group g2(1, 0);
  EXPECT_EQ(reg.add_with_children(g2, one).status, add_status::duplicate);
  EXPECT_FALSE(c.by_id.is_linked());
  EXPECT_EQ(find_route(reg, 8), nullptr);
  EXPECT_EQ(reg.unregister(*other).objects, 1u);
  EXPECT_EQ(reg.unregister(*taken).objects, 1u);
}

TEST(registry_semantics, add_with_children_under_two_readers_never_shows_a_parent_without_all_its_children) {
  // The writer adds 2,000 families of 32 routes each (group g, routes g*32 .. g*32+31) and deletes
  // them again, 64 at a time; 2 memb readers probe groups throughout (every other probe the family
  // being added): whenever a group is found, all 32 of its routes are found too, each naming it.
  // (32 children: a parent published first stays visible without them long enough to be seen.)
  constexpr int kFamilies = 2'000;
  constexpr int kKids = 32;
  watchdog dog(std::chrono::seconds(240), "add_with_children under readers");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  fib<flavor::memb> reg(domain);
  std::atomic<long> groups_seen{0};
  std::atomic<int> being_added{0};
  checking_readers<flavor::memb> readers(2, [&](std::uint64_t i, const read_guard<flavor::memb>& guard) {
    // Every other probe: the family being added right now (where a parent published before its
    // children would show); the others: any family.
    const int g = i % 2 == 0 ? being_added.load(std::memory_order_relaxed) : static_cast<int>(i % kFamilies);
    const group* p = reg.find<group_ids>(guard, g);
    if (p == nullptr) return lookup_outcome{};
    groups_seen.fetch_add(1, std::memory_order_relaxed);
    bool missing = false;
    for (int j = 0; j < kKids; ++j) {
      const route* r = reg.find<route_ids>(guard, g * kKids + j);
      missing = missing || r == nullptr || r->owner.parent() != p;
    }
    return lookup_outcome{.missed = missing, .poisoned = p->poison.load() != kAlive};
  });
  std::vector<group*> live;
  for (int g = 0; g < kFamilies; ++g) {
    auto* parent = new group(g, 0);
    std::vector<route*> kids;
    for (int j = 0; j < kKids; ++j) kids.push_back(new route(g * kKids + j));
    being_added.store(g, std::memory_order_relaxed);
    ASSERT_TRUE(reg.add_with_children(*parent, kids));
    live.push_back(parent);
    if (live.size() == 64) {  // delete in batches, once a reader has found one of these 64 families
      const long before = groups_seen.load();
      while (groups_seen.load() == before) std::this_thread::yield();  // progress, not timing: the watchdog guards it
      reg.unregister_many(live);
      live.clear();
    }
    dog.kick();
  }
  const lookup_tally seen = readers.stop();
  reg.unregister_many(live);
  EXPECT_GT(seen.lookups, 0);
  EXPECT_GT(groups_seen.load(), 0);
  EXPECT_EQ(seen.misses, 0) << "a group was found without all its routes";
  EXPECT_EQ(seen.poisoned, 0);
}

TEST_F(semantics_counting, add_under_resolves_the_parent_by_key_and_refuses_a_gone_parent) {
  fib<CF> reg(domain);
  auto* g = new group(1, 0);
  ASSERT_TRUE(reg.add(*g));
  auto* r = new route(10);
  const add_result added = reg.add_under<group_ids>(1, *r);
  ASSERT_EQ(added.status, add_status::added);
  EXPECT_EQ(r->owner.parent(), g);
  EXPECT_EQ(g->routes.size(), 1u);

  route orphan(11);
  EXPECT_EQ(reg.add_under<group_ids>(2, orphan).status, add_status::parent_gone) << "no group has key 2";
  EXPECT_EQ(orphan.owner.parent(), nullptr);
  EXPECT_FALSE(orphan.by_id.is_linked());

  auto* other = new group(3, 0);
  ASSERT_TRUE(reg.add(*other));
  route names_other(12);
  names_other.owner.set_parent(*other);
  EXPECT_THROW(reg.add_under<group_ids>(1, names_other), std::invalid_argument);
  EXPECT_FALSE(names_other.by_id.is_linked());

  EXPECT_EQ(reg.unregister(*g).objects, 2u) << "the group and the route added under its key";
  route late(13);
  EXPECT_EQ(reg.add_under<group_ids>(1, late).status, add_status::parent_gone) << "the group is gone";
  EXPECT_FALSE(late.by_id.is_linked());
  EXPECT_EQ(find_route(reg, 13), nullptr);
  EXPECT_EQ(reg.unregister(*other).objects, 1u);
}

TEST_F(semantics_counting, try_replace_with_children_by_key_says_not_found_and_leaves_the_new_family_unpublished) {
  fib<CF> reg(domain);
  group fresh(4, 0);
  route kid(40);
  std::vector<route*> kids{&kid};
  const replace_result r = reg.try_replace_with_children<group_ids>(4, fresh, kids);
  EXPECT_EQ(r.status, replace_status::not_found);
  EXPECT_FALSE(fresh.by_id.is_linked());
  EXPECT_FALSE(kid.by_id.is_linked());
  auto* g = new group(4, 0);
  ASSERT_TRUE(reg.add(*g));
  auto* g2 = new group(4, 1);
  auto* k2 = new route(41);
  std::vector<route*> next{k2};
  const replace_result ok = reg.try_replace_with_children<group_ids>(4, *g2, next);
  EXPECT_EQ(ok.status, replace_status::replaced);
  EXPECT_TRUE(ok.replaced);
  EXPECT_EQ(find_group(reg, 4), g2);
  EXPECT_EQ(reg.unregister(*g2).objects, 2u);
}

}  // namespace
}  // namespace rcubatch::test
