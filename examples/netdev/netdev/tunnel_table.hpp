// netdev/tunnel_table.hpp — a namespace's ipip or gre tunnels, keyed by (remote, local, key).
//
// Receive-side lookups read it under RCU; tunnels are added at newlink and unlinked in their
// uninit hook (phase 5 of the batch, covered by grace period #2), as ipip/ip_gre do in ndo_uninit.
// The kernel keeps four tables (remote+local, remote, local, wildcard) for partial matches; this
// example keeps the exact-match one only.
//
// Thread safety: lookup inside a read-side section; add/remove/contains under the writer lock,
// which is why the table is an hlist_index (writer-serialized hash chains, as ip_tunnel's under RTNL).
#pragma once

#include <cstddef>

#include "netdev/net_device.hpp"

namespace netdev {

/// The key of a tunnel device: its parameters (fixed at creation, so while it is linked).
struct tunnel_key_of {
  const tunnel_params& operator()(const net_device& tunnel) const noexcept {
    return std::get_if<tunnel_link>(&tunnel.link)->params;  // only tunnels are ever linked
  }
};
/// The key is (remote, local, key if has_key): `oseq` and an unused key do not tell tunnels apart.
struct tunnel_key_hash {
  unsigned long operator()(const tunnel_params& p) const noexcept;
};
struct tunnel_key_equal {
  bool operator()(const tunnel_params& a, const tunnel_params& b) const noexcept {
    return a.remote == b.remote && a.local == b.local && a.has_key == b.has_key && (!a.has_key || a.key == b.key);
  }
};

class tunnel_table {
 public:
  /// Requires: `flavor` outlives the table.
  explicit tunnel_table(const index_flavor* flavor)
      : table_(*flavor, rcubatch::hlist_options{.initial_buckets = 16, .min_buckets = 16}) {}

  /// Adds a tunnel device; false if another one has the same key (nothing changed).
  bool add(net_device& tunnel) { return table_.add_unique(tunnel); }
  void remove(net_device& tunnel) noexcept { table_.unlink(tunnel); }
  /// Requires: a read-side section.
  net_device* lookup(const tunnel_params& key) const noexcept { return table_.find(key); }
  /// Writer side: is this key taken?
  bool contains(const tunnel_params& key) const noexcept { return table_.find_locked(key) != nullptr; }
  std::size_t size() const noexcept { return table_.size(); }
  /// Writer, outside read-side sections: frees the tables its resizes replaced once there are
  /// `at_least` (one grace period; hlist_index on a run-time flavor frees them only when asked).
  void reclaim_retired(std::size_t at_least) {
    if (table_.retired_tables() >= at_least) table_.reclaim();
  }

 private:
  rcubatch::hlist_index<net_device, &net_device::tunnel_hook, tunnel_key_of, index_flavor, tunnel_key_hash,
                        tunnel_key_equal>
      table_;
};

}  // namespace netdev
