// netdev/link_ops.hpp — what a link type does, one table per type (the kernel's rtnl_link_ops plus
// the net_device_ops hooks the registry calls), so the registry never switches on the link kind.
//
//   registry step              hook         kernel
//   link_add: validate         validate     rtnl_link_ops::validate + the type's newlink checks
//   link_add: before publish   setup        rtnl_link_ops::newlink / ndo_init (the link state)
//   link_add: after publish    attach       the type's own tables (vlan group, macvlan port, tunnels)
//   link_set up                can_open     ndo_open's refusals (vlan_dev_open: lower down)
//                              open         ndo_open (macvlan: hash the MAC)
//   link_set down / batch      stop         ndo_stop (macvlan: unhash, GP unless dismantling)
//   link_set mtu               change_mtu   ndo_change_mtu
//   link_del                   has_dellink  rtnl_link_ops::dellink exists (lo has none)
//   batch: uninit              uninit       ndo_uninit
//   batch: destroy             destructor   priv_destructor (drop the lower device's reference)
//   legacy (2.6.32) teardown   legacy_gps   the type's own synchronize_net calls in 2.6.32
//
// One file per type defines its table: dummy.cpp (and lo), vlan.cpp, macvlan.cpp, ipip.cpp, gre.cpp;
// vlan and macvlan share the stacked-device part (upper_device.hpp), ipip and gre the tunnel part
// (tunnel_ops.hpp). A null hook does nothing (and validate/can_open/change_mtu accept).
#pragma once

#include <string>

#include <rcubatch/batch.hpp>

#include "netdev/grace_periods.hpp"
#include "netdev/link_request.hpp"
#include "netdev/net_device.hpp"

namespace netdev {

class netns;

/// What setup needs from the registry beyond the request.
struct link_context {
  const index_flavor* flavor = nullptr;  // for the RCU tables a type owns (a macvlan port)
  bool lltx_allowed = true;                   // false in legacy mode: 2.6.32 had no lockless xmit
};

struct link_ops {
  /// Whether `link LOWER` is required (true) or refused (false).
  bool stacked = false;
  /// False for lo: `link del lo` is EOPNOTSUPP (no rtnl_link_ops).
  bool has_dellink = true;
  /// Grace periods 2.6.32 paid for this type on top of the device's own (unregister_vlan_dev's
  /// per-VID synchronize_net: 1 for a vlan). The legacy strategy pays them.
  unsigned legacy_gps = 0;

  /// Stacked types: the device `link LOWER` really attaches to (macvlan on a macvlan: its lower).
  /// Requires: writer lock. Null: `lower` itself.
  net_device* (*real_lower)(net_device& lower) noexcept = nullptr;
  /// The type's checks of a request whose name is valid and free and whose lower device (null
  /// unless stacked) is found and within MAX_NEST_DEV. Returns "" or the error, changes nothing.
  /// Requires: writer lock.
  std::string (*validate)(netns& ns, const link_request& req, const net_device* lower) = nullptr;
  /// Builds `dev.link` (and the MTU, nesting level, lower reference) before `dev` is published.
  /// Requires: validate accepted `req`; writer lock. Throws: std::bad_alloc, with nothing changed.
  void (*setup)(net_device& dev, net_device* lower, const link_request& req, const link_context& ctx) = nullptr;
  /// After publication: links `dev` into the type's own tables. Cannot fail (setup allocated).
  void (*attach)(net_device& dev) noexcept = nullptr;
  /// Why `dev` cannot go up ("" = it can). Requires: writer lock; `dev` DOWN.
  std::string (*can_open)(const net_device& dev) = nullptr;
  /// ndo_open, before `dev` is marked UP. Throws: std::bad_alloc, with nothing changed.
  void (*open)(net_device& dev) = nullptr;
  /// ndo_stop, before `dev` is marked DOWN. Blocking: may wait a grace period through `gps`.
  void (*stop)(net_device& dev, grace_periods& gps) noexcept = nullptr;
  /// Why `mtu` is refused for `dev` ("" = accepted; the registry checks the global maximum).
  std::string (*change_mtu)(const net_device& dev, unsigned mtu) = nullptr;
  /// ndo_uninit in a batch: unlinks `dev` from the type's tables; returns whether readers could
  /// reach anything unlinked (then the batch pays grace period #2).
  bool (*uninit)(net_device& dev, rcubatch::batch& b) noexcept = nullptr;
  /// Just before `dev` is freed, every grace period and reference wait done.
  void (*destructor)(net_device& dev) noexcept = nullptr;
};

extern const link_ops dummy_link_ops;
extern const link_ops loopback_link_ops;
extern const link_ops vlan_link_ops;
extern const link_ops macvlan_link_ops;
extern const link_ops ipip_link_ops;
extern const link_ops gre_link_ops;

/// The table of `kind`. Complexity: O(1).
const link_ops& ops_of(link_kind kind) noexcept;
inline const link_ops& ops_of(const net_device& d) noexcept { return ops_of(d.kind); }

/// "T takes no tunnel parameters" if `req` gives any, else "" (for every non-tunnel type).
std::string refuse_tunnel_params(const link_request& req);

}  // namespace netdev
