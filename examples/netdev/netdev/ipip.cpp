// netdev/ipip.cpp — the ipip link type (net/ipv4/ipip.c): an IPv4-in-IPv4 tunnel, no key.
#include "netdev/tunnel_ops.hpp"

namespace netdev {

namespace {
std::string ipip_validate(netns& ns, const link_request& req, const net_device*) {
  if (std::string e = tunnel::validate_common(req); !e.empty()) return e;
  if (req.tunnel.has_key || req.tunnel.oseq) return "ipip takes no key or oseq";
  return tunnel::validate_key_free(ns, req);
}
void ipip_setup(net_device& dev, net_device*, const link_request& req, const link_context& ctx) {
  tunnel::setup(dev, req, ctx, 1480);  // 1500 - 20
}
}  // namespace

const link_ops ipip_link_ops{.validate = ipip_validate,
                             .setup = ipip_setup,
                             .attach = tunnel::attach,
                             .change_mtu = tunnel::change_mtu,
                             .uninit = tunnel::uninit};

}  // namespace netdev
