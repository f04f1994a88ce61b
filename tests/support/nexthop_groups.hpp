// tests/support/nexthop_groups.hpp — the membership tests' objects (membership.hpp): nexthops shared
// by nexthop groups, as Linux's nh_grp_entry model has them, each keyed by id in a memb rculfhash
// index, with a poison word a destroy hook may set, and member_ids (a reader's walk of a group).
// The policies stay in each test (their destroy hooks differ): tests/membership_test.cpp,
// tests/interaction_rows_test.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>

#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/membership.hpp>
#include <rcubatch/registrable.hpp>

#include "mid_walk_reader.hpp"
#include "objects.hpp"

namespace rcubatch::test {

struct nh_group;
struct nexthop : registrable<nexthop> {
  explicit nexthop(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<nexthop> by_id;
  memberships<nexthop, nh_group> groups;
  std::atomic<std::uint64_t> poison{kAlive};
};
struct nh_group : registrable<nh_group> {
  explicit nh_group(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  lfht_hook<nh_group> by_id;
  member_list<nexthop, &nexthop::groups> members{*this};
  std::atomic<std::uint64_t> poison{kAlive};
};
using nexthop_ids = lfht_index<nexthop, &nexthop::by_id, key_member<&nexthop::id>, flavor::memb>;
using group_ids = lfht_index<nh_group, &nh_group::by_id, key_member<&nh_group::id>, flavor::memb>;

/// The ids of a group's members, walked as a reader walks them (one read section).
inline std::set<std::uint64_t> member_ids(const nh_group& g) {
  return ids_walked<flavor::memb, std::set<std::uint64_t>>([&] { return g.members.rcu_range(); });
}

}  // namespace rcubatch::test
