// netdev/gre.cpp — the gre link type (net/ipv4/ip_gre.c): a tunnel with an optional key and
// output sequence numbers (oseq: the tx lock, so no lockless xmit — seed 001).
#include "netdev/tunnel_ops.hpp"

namespace netdev {

namespace {
std::string gre_validate(netns& ns, const link_request& req, const net_device*) {
  if (std::string e = tunnel::validate_common(req); !e.empty()) return e;
  return tunnel::validate_key_free(ns, req);
}
void gre_setup(net_device& dev, net_device*, const link_request& req, const link_context& ctx) {
  tunnel::setup(dev, req, ctx, req.tunnel.has_key ? 1472 : 1476);  // the gre header, + 4 with a key
}
}  // namespace

const link_ops gre_link_ops{.validate = gre_validate,
                            .setup = gre_setup,
                            .attach = tunnel::attach,
                            .change_mtu = tunnel::change_mtu,
                            .uninit = tunnel::uninit};

}  // namespace netdev
