// netdev/rcu_table.hpp — an owning handle on one liburcu rculfhash table.
//
// Every RCU-readable index of the example (device names, ifindexes, FIB prefixes, tunnel keys,
// macvlan MACs) is an rculfhash: lock-free lookups for readers, O(1) amortized updates, automatic
// resizing — so creating 100,000 devices never walks a chain proportional to the device count.
//
// The table is tied to the liburcu flavor the registry runs (netsim --flavor), given as liburcu's
// own `rcu_flavor_struct` (rcubatch's `Flavor::table()`). That lets the link-type code stay flavor-agnostic (plain .cpp files):
// writer-side calls take the flavor's read lock themselves, because rculfhash requires it even
// for updates; reader-side calls (find) require the caller's read_guard. Hot writer paths (a batch
// unlisting 10,000 devices) use the `_in_section` forms instead and take one inline read_guard per
// device around all of its updates: a read lock through the flavor struct is an out-of-line call
// into liburcu plus a __tls_get_addr, ~90 instructions per lock/unlock pair.
//
// Thread safety: add/remove/size under the registry's writer lock; find from any registered
// thread inside a read-side section. Destroy only when empty and outside read-side sections
// (cds_lfht_destroy on an auto-resize table inside one can deadlock in 0.13.2).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string_view>

#include <rcubatch/annotate.hpp>
#include <rcubatch/flavor.hpp>  // the flavor headers must precede rculfhash.h
#include <urcu/rculfhash.h>

namespace netdev {

/// A 64-bit mix for keys with structure (MACs, addresses, string hashes).
inline unsigned long mix_hash(unsigned long x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdUL;
  x ^= x >> 33;
  return x;
}
inline unsigned long hash_name(std::string_view s) noexcept { return mix_hash(std::hash<std::string_view>{}(s)); }

class rcu_table {
 public:
  explicit rcu_table(const rcu_flavor_struct* flavor, unsigned long initial_buckets = 16);
  ~rcu_table();
  rcu_table(const rcu_table&) = delete;
  rcu_table& operator=(const rcu_table&) = delete;

  /// Writer side. Inserts `node` unless a node matching `match` exists; returns the node now in
  /// the table under that key (== node on success).
  template <class Match>
  cds_lfht_node* add_unique(unsigned long hash, const Match& match, cds_lfht_node* node) {
    cds_lfht_node* in = nullptr;
    {
      section s(flavor_);
      rcubatch::annotate_publish(node);  // liburcu's publication is invisible to TSan
      in = cds_lfht_add_unique(table_, hash, &trampoline<Match>, &match, node);
      if (in == node) ++size_;
    }
    grow_if_needed();
    return in;
  }
  /// Writer side. Inserts `node`, duplicates allowed.
  void add(unsigned long hash, cds_lfht_node* node) {
    {
      section s(flavor_);
      add_in_section(hash, node);
    }
    grow_if_needed();
  }
  /// Writer side. Unlinks `node`; readers may still see it until a grace period has passed.
  bool remove(cds_lfht_node* node) {
    section s(flavor_);
    return remove_in_section(node);
  }
  /// The same, for a caller already inside a read-side section (under the writer lock). After an
  /// add_in_section the caller calls grow_if_needed() once it has left the section.
  void add_in_section(unsigned long hash, cds_lfht_node* node) {
    rcubatch::annotate_publish(node);
    cds_lfht_add(table_, hash, node);
    ++size_;
  }
  bool remove_in_section(cds_lfht_node* node) noexcept {
    if (cds_lfht_del(table_, node) != 0) return false;
    --size_;
    return true;
  }

  /// Writer side, outside any read-side section: doubles the bucket count (synchronously, in this
  /// thread: growing needs no grace period in rculfhash) once the table holds more nodes than
  /// buckets. Never shrinks. Amortized O(1) per add.
  void grow_if_needed() {
    if (size_ <= buckets_) return;
    while (buckets_ < size_) buckets_ *= 2;
    resize();
  }

  /// Wall time spent in grow_if_needed's resizes, all tables of the process together. rculfhash
  /// fills each new bucket order of ≥ 8,192 buckets in helper threads (one per CPU) and joins them,
  /// so this time is mostly *not* in the calling thread's CPU time: netsim's `time` prints it to
  /// tell that wait apart from preemption.
  static std::chrono::nanoseconds total_grow_time() noexcept;

  /// Reader side (caller holds the read lock), or writer side under the writer lock.
  template <class Match>
  cds_lfht_node* find(unsigned long hash, const Match& match) const {
    cds_lfht_iter it;
    cds_lfht_lookup(table_, hash, &trampoline<Match>, &match, &it);
    cds_lfht_node* found = cds_lfht_iter_get_node(&it);
    if (found != nullptr) rcubatch::annotate_subscribe(found);
    return found;
  }
  /// Writer side: find, taking the read lock for the call (the writer lock keeps the result alive).
  template <class Match>
  cds_lfht_node* find_locked(unsigned long hash, const Match& match) const {
    section s(flavor_);
    return find(hash, match);
  }

  std::size_t size() const noexcept { return size_; }  // written under the writer lock
  bool empty() const noexcept { return size_ == 0; }

 private:
  struct section {  // the flavor's read lock, for writer-side rculfhash calls
    explicit section(const rcu_flavor_struct* f) noexcept : f_(f) { f_->read_lock(); }
    ~section() { f_->read_unlock(); }
    const rcu_flavor_struct* f_;
  };
  template <class Match>
  static int trampoline(cds_lfht_node* node, const void* match) {
    rcubatch::annotate_subscribe(node);  // pairs with annotate_publish in add / add_unique
    return (*static_cast<const Match*>(match))(node) ? 1 : 0;
  }

  void resize();  // to buckets_, timed

  const rcu_flavor_struct* flavor_;
  unsigned long buckets_;        // the size last asked of rculfhash; writer lock
  cds_lfht* table_;
  std::size_t size_ = 0;         // writer lock
};

}  // namespace netdev
