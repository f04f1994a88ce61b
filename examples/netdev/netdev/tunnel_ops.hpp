// netdev/tunnel_ops.hpp — what ipip and gre share (ip_tunnel.c): the tunnel parameters, the
// namespace's tunnel table of the type, the MTU range. Internal to ipip.cpp and gre.cpp.
#pragma once

#include <string>

#include "netdev/link_ops.hpp"
#include "netdev/netns.hpp"

namespace netdev::tunnel {

/// ip_tunnel_newlink / ip_tunnel_change_mtu: 68..65515.
inline std::string check_mtu(unsigned mtu) {
  return mtu < 68 || mtu > 65515 ? "RTNETLINK answers: Invalid argument" : std::string();
}
inline std::string change_mtu(const net_device&, unsigned mtu) { return check_mtu(mtu); }

/// The MTU range. Either endpoint may be left out (0.0.0.0, "any"): ip_tunnel_newlink takes a
/// tunnel with only a remote or only a local address like any other.
inline std::string validate_common(const link_request& req) {
  if (req.mtu)
    if (std::string e = check_mtu(*req.mtu); !e.empty()) return e;
  return {};
}
/// The key of the namespace's fallback device (gre0, tunl0: no endpoints, no key). netsim does not
/// create that device, but its key is taken all the same.
inline bool is_fallback_key(const tunnel_params& p) noexcept { return p.remote == 0 && p.local == 0 && !p.has_key; }
/// A free key in the namespace's table of req.kind (ip_tunnel_newlink: ip_tunnel_find → EEXIST).
inline std::string validate_key_free(netns& ns, const link_request& req) {
  if (is_fallback_key(req.tunnel))
    return "RTNETLINK answers: File exists (the fallback " + std::string(req.kind == link_kind::gre ? "gre0" : "tunl0") +
           " has no endpoints and no key)";
  if (ns.tunnels(req.kind).contains(req.tunnel))
    return "RTNETLINK answers: File exists (a tunnel with these endpoints and key)";
  return {};
}

/// The tunnel link state with `mtu` (ip_tunnel_bind_dev: 1500 - the encapsulation).
inline void setup(net_device& dev, const link_request& req, const link_context& ctx, unsigned mtu) {
  auto& t = dev.link.emplace<tunnel_link>();  // throws bad_alloc (tunnel_tx) with dev.link unchanged
  t.params = req.tunnel;
  // Lockless xmit unless the tunnel stamps output sequences (seed 001); 2.6.32 had no LLTX.
  t.lltx = ctx.lltx_allowed && !req.tunnel.oseq;
  dev.mtu = mtu;
}

/// Cannot fail: validate checked the key free.
inline void attach(net_device& dev) noexcept { dev.ns->tunnels(dev.kind).add(dev); }
inline bool uninit(net_device& dev, rcubatch::batch&) noexcept {
  dev.ns->tunnels(dev.kind).remove(dev);
  return true;
}

}  // namespace netdev::tunnel
