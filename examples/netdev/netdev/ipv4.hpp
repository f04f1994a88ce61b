// netdev/ipv4.hpp — IPv4 addresses and prefixes as netsim parses and prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netdev {

using ipv4 = std::uint32_t;  // host byte order

struct ipv4_prefix {
  ipv4 address = 0;  // as given (the interface address); network() masks it
  unsigned length = 32;
  ipv4 mask() const noexcept { return length == 0 ? 0 : ~ipv4{0} << (32 - length); }
  ipv4 network() const noexcept { return address & mask(); }
};

/// As ip reads an IPv4 address (get_addr_ipv4): 1 to 4 parts, each 0..255 in base 0 ("0x0a",
/// "012"), missing trailing bytes zero ("10.0.0" = 10.0.0.0, "172.16" = 172.16.0.0).
std::optional<ipv4> parse_ipv4(std::string_view text);
/// "A/P" or "A" (= /32), A as parse_ipv4 reads it and P 0..32 in base 0 or a contiguous dotted
/// mask (get_prefix_1, get_netmask): "10.0.0/24", "172.16/12", "10.0.0.0/255.0.0.0".
std::optional<ipv4_prefix> parse_prefix(std::string_view text);
std::string to_string(ipv4 a);
std::string to_string(const ipv4_prefix& p);

}  // namespace netdev
