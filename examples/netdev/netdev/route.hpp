// netdev/route.hpp — one FIB entry: a connected route owned by the device it points to.
#pragma once

#include <boost/intrusive/list_hook.hpp>
#include <rcubatch/batch.hpp>
#include <rcubatch/index/lfht_index.hpp>

#include "netdev/ipv4.hpp"

namespace netdev {

struct net_device;

/// Readers reach it through the FIB's hash; its device reaches it through `dev_hook`, which is what
/// makes removing a device's routes O(its own routes) instead of a walk of the whole table (seed
/// 004). A retire_node, so a batch frees it after its last grace period without allocating.
struct route;

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
  }
  rcubatch::lfht_hook<route> hook;  // the FIB's table of its prefix length (route is not standard-layout)
  const ipv4_prefix prefix;
  net_device* const dev;
  const route_table table;
  const route_origin origin;
  const ipv4 gateway;  // 0: on-link (scope link); else `via gateway`
  boost::intrusive::list_member_hook<> dev_hook;  // the owning device's route list; writer lock
};

}  // namespace netdev
