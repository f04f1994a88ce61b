// bench/hlist_floor.hpp — the floor an RCU hash index is measured against: liburcu's cds_hlist
// chains in a presized bucket array, kernel style (the kernel's dev_name_head / dev_index_head
// under RTNL): cds_hlist_add_head_rcu, cds_hlist_del_rcu, a reader's walk of one chain. No
// resize, no hash cached in the node, no writer checks; the same hash as hlist_index (lfht_hash).
// The caller serializes writers and frees an unlinked object only after a grace period.
// Written here rather than taken from a library because liburcu ships the list primitives
// (urcu/rcuhlist.h) but no table on them; this is the least code a table needs.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <vector>

#include <rcubatch/annotate.hpp>
#include <rcubatch/index/hlist_index.hpp>  // detail::hlist_load_link: the chain load TSan is told to skip
#include <rcubatch/index/lfht_index.hpp>  // lfht_hash

#include <urcu/rcuhlist.h>

namespace rcubatch_bench {

/// The member an object embeds once per hlist_floor it is in. The node comes first, so a chain's
/// node converts back to its hook (pointer-interconvertible: no container_of on a non-standard-layout T).
template <class T>
struct floor_hook {
  cds_hlist_node node{};
  T* owner = nullptr;
};

/// A presized table of `buckets(n)` cds_hlist chains keyed by KeyOf(T).
template <class T, floor_hook<T> T::*Hook, class KeyOf, class Hash = rcubatch::lfht_hash>
class hlist_floor {
 public:
  /// n: the expected size; the table has bit_ceil(n) buckets (load factor ≤ 1 up to n) and never resizes.
  explicit hlist_floor(std::size_t n) : mask_(std::bit_ceil(std::max<std::size_t>(n, 1)) - 1), heads_(mask_ + 1) {}
  hlist_floor(const hlist_floor&) = delete;
  hlist_floor& operator=(const hlist_floor&) = delete;

  /// Writer: links obj unless its key is linked already (a registry must check; returns false then).
  bool add_unique(T& obj) {
    const auto& key = key_of_(obj);
    const unsigned long hv = hash_(key);
    if (find_in(key, hv) != nullptr) return false;
    floor_hook<T>& h = obj.*Hook;
    h.owner = &obj;
    rcubatch::annotate_publish(&h.node);  // nothing outside TSan builds
    cds_hlist_add_head_rcu(&h.node, &heads_[hv & mask_]);
    return true;
  }

  /// Writer: unlinks obj (linked here); readers may still reach it until a grace period ends.
  void unlink(T& obj) noexcept { cds_hlist_del_rcu(&(obj.*Hook).node); }

  /// Reader, inside a read section: the object with that key, or nullptr.
  template <class K>
  T* find(const K& key) const noexcept {
    return find_in(key, hash_(key));
  }

 private:
  template <class K>
  T* find_in(const K& key, unsigned long hv) const noexcept {
    for (cds_hlist_node* n = rcubatch::detail::hlist_load_link(heads_[hv & mask_].next); n != nullptr;
         n = rcubatch::detail::hlist_load_link(n->next)) {
      rcubatch::annotate_subscribe(n);
      T* o = reinterpret_cast<floor_hook<T>*>(n)->owner;
      if (key_of_(*o) == key) return o;
    }
    return nullptr;
  }

  std::size_t mask_;
  std::vector<cds_hlist_head> heads_;
  [[no_unique_address]] KeyOf key_of_{};
  [[no_unique_address]] Hash hash_{};
};

}  // namespace rcubatch_bench
