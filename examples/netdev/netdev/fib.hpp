// netdev/fib.hpp — an RCU-readable IPv4 forwarding table with longest-prefix match.
//
//   fib.add_connected(dev, {10.0.0.1, 24});       // writer: route 10.0.0.0/24 dev D
//   { read_guard g; const route* r = fib.lookup(addr); }   // reader: longest prefix wins
//   fib.remove_routes_of(dev, batch);             // writer: O(dev's routes), routes retired
//   fib.sweep();                                  // once per batch (NETDEV_UNREGISTER_BATCH)
//
// Why not a trie: liburcu has no RCU longest-prefix structure and the brief rules out hand-rolled
// concurrent containers. One rculfhash per prefix length (0..32) keyed by the masked network gives
// lock-free readers and O(1) updates; a lookup probes at most 33 tables from /32 down, skipping
// empty lengths with a bitmask. Removing one device's routes never walks other routes (the 4.x
// fib_trie regression of seed 004); the mask of empty lengths is recomputed once per batch.
//
// Thread safety: lookup inside a read-side section; everything else under the writer lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "netdev/net_device.hpp"
#include "netdev/route.hpp"
#include <rcubatch/batch.hpp>

namespace netdev {

/// A route's key in its prefix length's table: the masked network.
struct route_network_of {
  ipv4 operator()(const route& r) const noexcept { return r.prefix.address; }  // route() masked it
};
/// The routes of one prefix length in one table, several per network (add, not add_unique: two
/// devices may have connected routes to the same subnet; the first added is found). lfht_index,
/// though every update is under the writer lock, where the README recommends hlist_index: that
/// one links an add at the head of its chain, so the last route added would be found instead.
using route_index = rcubatch::lfht_index<route, &route::hook, route_network_of, index_flavor>;

class fib {
 public:
  /// Requires: `flavor` outlives the FIB.
  explicit fib(const index_flavor* flavor);
  ~fib();

  /// The connected route of an address: prefix.network()/length via dev, in the main table.
  void add_connected(net_device& dev, ipv4_prefix prefix) { add(*new route(prefix, &dev)); }
  /// Links `r` (allocated by the caller) into its table and its device's route list. Cannot fail.
  void add(route& r) noexcept;
  /// Unlinks one route from its table and its device's list; the caller frees it after a grace
  /// period (or retires it into a batch).
  void unlink(route& r) noexcept;
  /// Unlinks every route of `dev` and retires it into the batch. O(dev's routes).
  std::size_t remove_routes_of(net_device& dev, rcubatch::batch& batch) noexcept;
  /// Container-wide step, once per batch: forget prefix lengths that became empty.
  void sweep() noexcept;

  /// The route for `address`: the local table first, then main, as Linux's default rules
  /// (0: local, 32766: main). Longest-prefix match in each. Requires: a read-side section.
  const route* lookup(ipv4 address) const noexcept;
  /// The first route of `table` for exactly `prefix` (network and length), or null. Writer lock.
  route* find_exact(route_table table, ipv4_prefix prefix) const noexcept;

  /// Number of routes in the main table (the tables count their nodes). Writer lock.
  std::size_t size() const noexcept;
  std::size_t local_size() const noexcept;

 private:
  static constexpr unsigned kLengths = 33;
  struct table {
    explicit table(const index_flavor* flavor);
    const route* lookup(ipv4 address) const noexcept;
    std::size_t size() const noexcept;
    void sweep() noexcept;
    std::array<std::unique_ptr<route_index>, kLengths> by_length;
    std::atomic<std::uint64_t> nonempty{0};     // bit L set: some /L route may exist
  };
  table& of(route_table t) noexcept { return t == route_table::local ? local_ : main_; }
  const table& of(route_table t) const noexcept { return t == route_table::local ? local_ : main_; }
  table main_;
  table local_;
  bool dirty_ = false;                         // routes removed since the last sweep; writer lock
};

}  // namespace netdev
