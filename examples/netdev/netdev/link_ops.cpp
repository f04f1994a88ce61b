#include "netdev/link_ops.hpp"

#include <array>

namespace netdev {

const link_ops& ops_of(link_kind kind) noexcept {
  // Indexed by link_kind's values, in its declaration order.
  static const std::array<const link_ops*, 6> table{&dummy_link_ops, &vlan_link_ops,  &macvlan_link_ops,
                                                    &ipip_link_ops,  &gre_link_ops,   &loopback_link_ops};
  return *table[static_cast<std::size_t>(kind)];
}

std::string refuse_tunnel_params(const link_request& req) {
  if (req.has_remote || req.has_local || req.tunnel.has_key || req.tunnel.oseq)
    return std::string(to_string(req.kind)) + " takes no tunnel parameters";
  return {};
}

}  // namespace netdev
