// netdev/tunnel_table.hpp — a namespace's ipip or gre tunnels, keyed by (remote, local, key).
//
// Receive-side lookups read it under RCU; tunnels are added at newlink and unlinked in their
// uninit hook (phase 5 of the batch, covered by grace period #2), as ipip/ip_gre do in ndo_uninit.
// The kernel keeps four tables (remote+local, remote, local, wildcard) for partial matches; this
// example keeps the exact-match one only.
//
// Thread safety: lookup inside a read-side section; add/remove/find_locked under the writer lock.
#pragma once

#include "netdev/net_device.hpp"
#include "netdev/rcu_table.hpp"

namespace netdev {

class tunnel_table {
 public:
  explicit tunnel_table(const rcu_flavor_struct* flavor) : table_(flavor) {}

  /// Adds a tunnel device; false if another one has the same key (nothing changed).
  bool add(net_device& tunnel);
  void remove(net_device& tunnel) noexcept;
  /// Requires: a read-side section.
  net_device* lookup(const tunnel_params& key) const noexcept;
  /// Writer side: is this key taken?
  bool contains(const tunnel_params& key) const noexcept;
  std::size_t size() const noexcept { return table_.size(); }

 private:
  rcu_table table_;
};

}  // namespace netdev
