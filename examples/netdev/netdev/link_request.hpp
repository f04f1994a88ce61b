// netdev/link_request.hpp — what `ip link add` asks for (the registry's link_add and the link
// types' validate/setup hooks read it).
#pragma once

#include <optional>
#include <string>

#include "netdev/net_device.hpp"

namespace netdev {

struct link_request {
  std::string name;
  link_kind kind = link_kind::dummy;
  std::string lower;         // vlan, macvlan
  long vid = -1;             // vlan
  tunnel_params tunnel{};    // ipip, gre
  bool has_remote = false;
  bool has_local = false;
  bool vlan_8021ad = false;                       // vlan: `protocol 802.1ad`
  macvlan_mode mode = macvlan_mode::vepa;         // macvlan: `mode M`
  std::optional<unsigned> mtu;                    // `mtu N`; default 1500, a stacked device its lower's
};

}  // namespace netdev
