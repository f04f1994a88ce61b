// netdev/netns.hpp — a network namespace: its devices, indexes, FIB and tunnel tables.
//
// Readers find devices by name or ifindex (hlist_index) or walk the device list (liburcu rculist);
// publish/unpublish are O(1), so creating or removing one device never scans the others (the
// dev_alloc_name / sysctl quadratic traps of seed 003).
//
// Thread safety: lookup_*, for_each_device and routes().lookup inside a read-side section;
// everything else under the registry's writer lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <urcu/rculist.h>

#include "netdev/fib.hpp"
#include "netdev/net_device.hpp"
#include "netdev/tunnel_table.hpp"

namespace netdev {

/// The ifindex itself as its hash, as the kernel's dev_index_hash (ifindex & mask): ifindexes are
/// handed out sequentially and never reused, so consecutive devices land in consecutive buckets —
/// no two live devices share a bucket until the index space wraps the table, and a batch unlisting
/// devices in creation order walks the bucket array sequentially instead of at random.
struct ifindex_hash {
  unsigned long operator()(int ifindex) const noexcept { return static_cast<unsigned long>(ifindex); }
};
/// Names and ifindexes: writer-serialized RCU hash chains (hlist_index), as the kernel's
/// dev_name_head / dev_index_head under RTNL — every update here holds the registry's writer lock.
using device_name_index =
    rcubatch::hlist_index<net_device, &net_device::name_hook, rcubatch::key_member<&net_device::name>, index_flavor>;
using device_ifindex_index = rcubatch::hlist_index<net_device, &net_device::index_hook,
                                                   rcubatch::key_member<&net_device::ifindex>, index_flavor, ifindex_hash>;

class netns {
 public:
  /// Requires: `flavor` outlives the namespace (lfht_runtime_flavor::of<F>()'s objects are static).
  netns(std::string name, const index_flavor* flavor);
  ~netns();
  netns(const netns&) = delete;
  netns& operator=(const netns&) = delete;

  const std::string& name() const noexcept { return name_; }

  /// Writer: makes `dev` visible to readers. Requires: its name is free (name_taken), and a
  /// read-side section (rculfhash's list updates need one; the indexes take their own read lock,
  /// which nests inside it, and defer their growth to grow_indexes).
  void publish(net_device& dev);
  /// Writer, outside read-side sections, after publish: frees the tables the indexes' resizes
  /// replaced once there are 8 or more (one grace period; hlist_index on a run-time flavor frees
  /// them only when asked).
  void grow_indexes();
  /// Writer: makes room in both indexes for `more` devices beyond those published, so that adding
  /// them grows no table (hlist_index::reserve) — for a command that states its count (modprobe
  /// dummy numdummies=N). A hint: if the bigger tables cannot be allocated, nothing changes and
  /// the indexes grow as they fill.
  void reserve_devices(std::size_t more) noexcept;
  /// For a bulk create, a few devices ahead of publish(dev): starts loading the lines of `dev`
  /// that publishing reads and writes (its state, name, index hooks and list node). Changes nothing.
  static void prefetch_device(const net_device& dev) noexcept {
    constexpr std::uintptr_t kLine = 64;
    const auto end = reinterpret_cast<std::uintptr_t>(&dev.list_node + 1);
    for (auto line = reinterpret_cast<std::uintptr_t>(&dev) & ~(kLine - 1); line < end; line += kLine)
      __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
  }
  /// Writer, for a bulk create, a few devices ahead of publish(dev) and after prefetch_device(dev)
  /// has had time to bring its name in: starts loading the index buckets publish(dev) will write
  /// (hlist_index::prefetch_add; hashes the name). Changes nothing.
  void prefetch_publish(const net_device& dev) const noexcept {
    by_name_.prefetch_add(dev);
    by_index_.prefetch_add(dev);
  }
  /// Writer: unpublishes `dev` from the list and both hashes (the batch's unlist phase).
  /// Requires: a read-side section, as for publish.
  void unpublish(net_device& dev) noexcept;
  bool name_taken(std::string_view name) const noexcept { return find_locked(name) != nullptr; }
  net_device* find_locked(std::string_view name) const noexcept;

  /// Readers (or the writer, under its lock).
  net_device* lookup_name(std::string_view name) const noexcept;
  net_device* lookup_index(int ifindex) const noexcept;
  template <class F>
  void for_each_device(F&& f) {
    for (cds_list_head* p = rcu_dereference(devices_.next); p != &devices_; p = rcu_dereference(p->next)) {
      rcubatch::annotate_subscribe(p);
      f(*device_list_node::owner(p));
    }
  }

  /// Users outside the writer lock (xmit senders) hold the namespace for as long as they use it;
  /// registry::netns_del waits for them to leave before freeing it (the kernel's get_net/put_net).
  /// Requires for hold(): the namespace is known alive (the caller got it from the registry and
  /// no netns_del of it has completed).
  void hold() noexcept { users_.fetch_add(1, std::memory_order_relaxed); }
  void put() noexcept { users_.fetch_sub(1, std::memory_order_release); }
  unsigned users() const noexcept { return users_.load(std::memory_order_acquire); }

  std::size_t device_count() const noexcept { return by_index_.size(); }
  /// Resizes the name and ifindex indexes have started (grown, shrunk, reserved), both together.
  std::size_t index_resizes() const noexcept { return by_name_.resizes() + by_index_.resizes(); }
  fib& routes() noexcept { return fib_; }
  const fib& routes() const noexcept { return fib_; }
  tunnel_table& tunnels(link_kind k) noexcept { return k == link_kind::gre ? gre_ : ipip_; }

 private:
  std::string name_;
  device_name_index by_name_;
  device_ifindex_index by_index_;
  cds_list_head devices_;
  std::atomic<unsigned> users_{0};
  fib fib_;
  tunnel_table ipip_;
  tunnel_table gre_;
};

}  // namespace netdev
