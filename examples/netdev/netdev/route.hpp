// netdev/route.hpp — one FIB entry: a connected route owned by the device it points to.
#pragma once

#include <boost/intrusive/list_hook.hpp>
#include <rcubatch/batch.hpp>
#include <urcu/rculfhash.h>

#include "netdev/ipv4.hpp"

namespace netdev {

struct net_device;

/// Readers reach it through the FIB's hash; its device reaches it through `dev_hook`, which is what
/// makes removing a device's routes O(its own routes) instead of a walk of the whole table (seed
/// 004). A retire_node, so a batch frees it after its last grace period without allocating.
struct route;

/// route is not standard-layout (it derives from retire_node), so its hash node carries a back pointer.
struct route_hash_node {
  cds_lfht_node node{};
  route* owner = nullptr;
  static route* of(cds_lfht_node* n) noexcept { return caa_container_of(n, route_hash_node, node)->owner; }
};

/// The two tables of Linux's default rules: `local` (addresses of this host, looked up first)
/// and `main` (everything `ip route` shows).
enum class route_table : unsigned char { main, local };
/// proto kernel (made from an address, fib_add_ifaddr) or proto boot (`ip route add`).
enum class route_origin : unsigned char { kernel, boot };

struct route : rcubatch::retire_node {
  route(ipv4_prefix p, net_device* d, route_table t = route_table::main, route_origin o = route_origin::kernel,
        ipv4 gw = 0) noexcept
      : prefix{p.network(), p.length}, dev(d), table(t), origin(o), gateway(gw) {
    dispose = [](rcubatch::retire_node* self) noexcept { delete static_cast<route*>(self); };
    node.owner = this;
  }
  route_hash_node node{};
  const ipv4_prefix prefix;
  net_device* const dev;
  const route_table table;
  const route_origin origin;
  const ipv4 gateway;  // 0: on-link (scope link); else `via gateway`
  boost::intrusive::list_member_hook<> dev_hook;  // the owning device's route list; writer lock
};

}  // namespace netdev
