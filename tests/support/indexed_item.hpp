// tests/support/indexed_item.hpp — the registry tests' object: an int key in one memb rculfhash
// index (lfht_index), and the helpers that add one and look one up.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/read_guard.hpp>
#include <rcubatch/registrable.hpp>

namespace rcubatch::test {

/// A registrable object with an int key.
struct item : registrable<item> {
  explicit item(int i) : id(i) {}
  int id;
  lfht_hook<item> by_id;
};
using by_id = lfht_index<item, &item::by_id, key_member<&item::id>>;  // memb rculfhash

/// Returns a new item with that id, added to reg (the add expected to succeed).
item* add_item(auto& reg, int id) {
  auto* it = new item(id);
  EXPECT_TRUE(reg.add(*it));
  return it;
}

/// Returns n new items with ids 0 .. n-1, added to reg.
std::vector<item*> add_items(auto& reg, int n) {
  std::vector<item*> all;
  for (int i = 0; i < n; ++i) all.push_back(add_item(reg, i));
  return all;
}

/// Whether a reader finds the id in reg's by_id index.
template <class Registry>
bool findable(Registry& reg, int id) {
  read_guard<flavor::memb> guard;
  return reg.template find<by_id>(guard, id) != nullptr;
}

}  // namespace rcubatch::test
