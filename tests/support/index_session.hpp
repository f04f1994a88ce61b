// tests/support/index_session.hpp — the object the index tests (index_lfht_test, index_hlist_test)
// put in their indexes, the arena that owns them, and the two reader-side helpers they share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rcubatch/read_guard.hpp>
#include <rcubatch/registrable.hpp>

namespace rcubatch::test {

inline constexpr std::uint64_t kSessionAlive = 0xA11FE;
inline constexpr std::uint64_t kSessionPoison = 0xDEADDEAD;

/// A session with two hooks of the index's kind (lfht_hook, hlist_hook). Deriving from
/// registrable (and a virtual function) makes it non-standard-layout: the case the hooks' owner
/// pointer exists for.
template <template <class> class Hook>
struct indexed_session : registrable<indexed_session<Hook>> {
  indexed_session(std::string n, int i) : name(std::move(n)), id(i) {}
  virtual ~indexed_session() = default;
  virtual int kind() const { return 1; }

  std::string name;
  int id;
  std::atomic<std::uint64_t> poison{kSessionAlive};
  Hook<indexed_session> by_name;
  Hook<indexed_session> by_id;
};

/// Owns the sessions a test makes; frees them at the end (after every reader has stopped).
template <class Session>
struct session_arena {
  std::vector<std::unique_ptr<Session>> all;
  Session& make(std::string name, int id) { return *all.emplace_back(std::make_unique<Session>(std::move(name), id)); }
  /// make(name, id), linked into `index` by add_unique: for tests whose subject comes after the add.
  template <class Index>
  Session& make_linked(Index& index, std::string name, int id) {
    Session& s = make(std::move(name), id);
    EXPECT_TRUE(index.add_unique(s)) << s.name << " was already in the index";
    return s;
  }
};

/// index.find(key) inside a read_guard of its own.
template <class Index, class K>
auto* find_in_guard(const Index& index, const K& key) {
  read_guard<typename Index::flavor_type> guard;
  return index.find(key);
}

/// The ids for_each_equal visits under `key`, in one read section (sorted: neither index promises
/// an order among duplicates).
template <class Index>
std::vector<int> ids_equal_to(const Index& index, std::string_view key) {
  std::vector<int> ids;
  read_guard<typename Index::flavor_type> guard;
  const std::size_t n = index.for_each_equal(key, [&](auto& s) { ids.push_back(s.id); });
  EXPECT_EQ(n, ids.size());
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// One hash for every key: every object lands in one chain, so the operations below exercise the
/// chain's own links (each node's back-pointer included) rather than the buckets.
struct one_chain_hash {
  using is_transparent = void;
  template <class K>
  unsigned long operator()(const K&) const noexcept {
    return 0x5EED;
  }
};

/// The names of the objects a walk of `index` visits, in one read section (sorted).
template <class Index>
std::vector<std::string> walked_names(const Index& index) {
  std::vector<std::string> names;
  read_guard<typename Index::flavor_type> guard;
  for (const auto& s : index) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  return names;
}

/// Five objects in one chain (Index hashes with one_chain_hash); the one at `replaced` (in add
/// order) is replaced by a new object with its key; then all are unlinked, the new one first or
/// last. After each unlink a walk visits exactly the objects still linked, size() agrees, and a
/// lookup of an unlinked key finds nothing. Whatever the chain's order, one of the five runs
/// unlinks the replaced object's chain successor after the replace: a successor whose back-pointer
/// still led into the old object would stay reachable from the new one.
template <class Index, class Session>
void replace_in_one_chain_then_unlink_all(session_arena<Session>& arena, std::size_t replaced, bool new_one_first) {
  Index index;
  std::vector<Session*> linked;
  for (int i = 0; i < 5; ++i) linked.push_back(&arena.make_linked(index, "k" + std::to_string(i), i));
  Session& fresh = arena.make("k" + std::to_string(replaced), 100);
  ASSERT_TRUE(index.replace(*linked[replaced], fresh));
  linked[replaced] = &fresh;
  std::vector<std::string> expected{"k0", "k1", "k2", "k3", "k4"};
  ASSERT_EQ(walked_names(index), expected);
  std::vector<Session*> order;
  if (new_one_first) order.push_back(&fresh);
  for (Session* s : linked)
    if (s != &fresh) order.push_back(s);
  if (!new_one_first) order.push_back(&fresh);
  for (Session* s : order) {
    ASSERT_TRUE(index.unlink(*s)) << s->name;
    expected.erase(std::find(expected.begin(), expected.end(), s->name));
    EXPECT_EQ(walked_names(index), expected) << "after unlinking " << s->name << " (id " << s->id << ")";
    EXPECT_EQ(index.size(), expected.size());
    EXPECT_EQ(find_in_guard(index, s->name), nullptr) << s->name << " is unlinked";
  }
}

/// replace_in_one_chain_then_unlink_all for each of the five positions, the new object unlinked
/// last, then first.
template <class Index, class Session>
void replace_at_each_position_in_one_chain(session_arena<Session>& arena) {
  for (bool new_one_first : {false, true})
    for (std::size_t replaced = 0; replaced < 5; ++replaced) {
      SCOPED_TRACE(::testing::Message() << "replaced #" << replaced << (new_one_first ? ", unlinked first" : ""));
      replace_in_one_chain_then_unlink_all<Index>(arena, replaced, new_one_first);
    }
}

}  // namespace rcubatch::test
