#include "netdev/upper_device.hpp"

#include "netdev/link_ops.hpp"

namespace netdev::upper_device {

std::string validate_common(const link_request& req, const net_device& lower) {
  if (req.mtu && *req.mtu > lower.mtu) return "RTNETLINK answers: Invalid argument";
  return refuse_tunnel_params(req);
}

void bind(net_device& dev, upper_link& l, net_device& lower) noexcept {
  l.self = &dev;
  l.lower = &lower;
  lower.refs().hold();
  dev.lower_level = lower.lower_level + 1;
  dev.mtu = lower.mtu;
}

void release_lower(net_device& dev) noexcept { of(dev)->lower->refs().put(); }

bool above_lower_mtu(const net_device& dev, unsigned mtu) noexcept { return mtu > of(dev)->lower->mtu; }

}  // namespace netdev::upper_device
