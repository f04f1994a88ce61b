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

std::optional<ipv4> parse_ipv4(std::string_view text);
/// "A/P" (P in 0..32) or "A" (= /32).
std::optional<ipv4_prefix> parse_prefix(std::string_view text);
std::string to_string(ipv4 a);
std::string to_string(const ipv4_prefix& p);

}  // namespace netdev
