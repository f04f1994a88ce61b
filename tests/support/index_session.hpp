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

}  // namespace rcubatch::test
