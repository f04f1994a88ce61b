#include "netdev/net_device.hpp"

#include <cstdio>

namespace netdev {

namespace {
constexpr std::array<std::string_view, 6> kKindNames{"dummy", "vlan", "macvlan", "ipip", "gre", "loopback"};
constexpr std::array<std::string_view, 5> kMacvlanModes{"vepa", "private", "bridge", "passthru", "source"};

mac_address mac_for(int ifindex) noexcept {
  // Locally administered unicast, unique per ifindex: the macvlan hash needs distinct MACs.
  const auto i = static_cast<std::uint32_t>(ifindex);
  return {0x02, 0x00, std::uint8_t(i >> 24), std::uint8_t(i >> 16), std::uint8_t(i >> 8), std::uint8_t(i)};
}
}  // namespace

std::string_view to_string(link_kind k) noexcept { return kKindNames[static_cast<std::size_t>(k)]; }

std::optional<link_kind> parse_link_kind(std::string_view s) noexcept {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == s && static_cast<link_kind>(i) != link_kind::loopback) return static_cast<link_kind>(i);
  return std::nullopt;
}

std::string_view to_string(macvlan_mode m) noexcept { return kMacvlanModes[static_cast<std::size_t>(m)]; }

std::optional<macvlan_mode> parse_macvlan_mode(std::string_view s) noexcept {
  for (std::size_t i = 0; i < kMacvlanModes.size(); ++i)
    if (kMacvlanModes[i] == s) return static_cast<macvlan_mode>(i);
  return std::nullopt;
}

std::string to_string(const mac_address& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

net_device::net_device(std::string n, link_kind k, netns& owner, int index)
    : name(std::move(n)), ifindex(index), kind(k), ns(&owner),
      mac(k == link_kind::loopback ? mac_address{} : mac_for(index)), mtu(k == link_kind::loopback ? 65536 : 1500) {
  CDS_INIT_LIST_HEAD(&list_node.link);
  list_node.dev = this;
}

}  // namespace netdev
