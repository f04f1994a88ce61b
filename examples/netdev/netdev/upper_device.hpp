// netdev/upper_device.hpp — what vlan and macvlan share as devices stacked on a lower device:
// the link to it (held by a reference for the upper's lifetime), the nesting level, the inherited
// MTU and the MTU bound, and the request checks common to both.
#pragma once

#include <string>

#include "netdev/link_request.hpp"
#include "netdev/net_device.hpp"

namespace netdev::upper_device {

/// The upper part of `d`'s link state, or null if `d` is not stacked.
inline upper_link* of(net_device& d) noexcept {
  if (auto* v = std::get_if<vlan_link>(&d.link)) return v;
  return std::get_if<macvlan_link>(&d.link);
}
inline const upper_link* of(const net_device& d) noexcept { return of(const_cast<net_device&>(d)); }

/// The checks after the type's own: an MTU above the lower's is EINVAL (vlan_newlink,
/// macvlan_common_newlink), and no tunnel parameters.
std::string validate_common(const link_request& req, const net_device& lower);
/// Links `l` (already emplaced in `dev.link`) to `lower`: holds a reference on it, and `dev`
/// takes its nesting level + 1 and its MTU. Cannot fail.
void bind(net_device& dev, upper_link& l, net_device& lower) noexcept;
/// The destructor hook: drops the reference bind took.
void release_lower(net_device& dev) noexcept;
/// Whether `mtu` exceeds the lower device's (each type answers it with its own errno).
bool above_lower_mtu(const net_device& dev, unsigned mtu) noexcept;

}  // namespace netdev::upper_device
