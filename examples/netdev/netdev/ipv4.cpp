#include "netdev/ipv4.hpp"

#include <bit>
#include <charconv>
#include <utility>

namespace netdev {

namespace {
/// strtoul(s, &end, 0) without sign or blanks: "0x1f" is hex, "017" octal, else decimal.
/// Returns the value and how many characters it read (0: no digits).
std::pair<unsigned long long, std::size_t> read_base0(std::string_view s) {
  int base = 10;
  std::size_t skip = 0;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    skip = 2;
  } else if (!s.empty() && s[0] == '0') {
    base = 8;
  }
  unsigned long long v = 0;
  auto [end, ec] = std::from_chars(s.data() + skip, s.data() + s.size(), v, base);
  const auto read = static_cast<std::size_t>(end - s.data());
  if (ec == std::errc::result_out_of_range) return {~0ULL, read};
  if (read == skip) {
    // "0x" with no hex digit: strtoul reads the "0" alone.
    return skip == 2 ? std::pair{0ULL, std::size_t{1}} : std::pair{0ULL, std::size_t{0}};
  }
  return {v, read};
}

/// The prefix length after '/' (iproute2 get_netmask): an integer (base 0), or a dotted mask of
/// contiguous ones ("255.255.0.0" is 16).
std::optional<unsigned> parse_length(std::string_view s) {
  auto [v, read] = read_base0(s);
  if (read != 0 && read == s.size()) {
    if (v > 32) return std::nullopt;
    return static_cast<unsigned>(v);
  }
  auto mask = parse_ipv4(s);
  if (!mask) return std::nullopt;
  const unsigned ones = static_cast<unsigned>(std::countl_one(*mask));
  if (ones < 32 && (*mask << ones) != 0) return std::nullopt;  // not contiguous (mask2bits)
  return ones;
}
}  // namespace

// iproute2's get_addr_ipv4 (lib/utils.c): one to four dot-separated parts, each read as strtoul
// base 0 and at most 255; the missing trailing bytes are zero ("10.0.0" is 10.0.0.0, "172.16" is
// 172.16.0.0, "010.1" is 8.1.0.0). inet_aton's other forms ("10.65536") are not accepted.
std::optional<ipv4> parse_ipv4(std::string_view text) {
  ipv4 a = 0;
  int parts = 0;
  for (;;) {
    auto [v, read] = read_base0(text);
    if (read == 0 || v > 255) return std::nullopt;
    a |= static_cast<ipv4>(v) << (24 - 8 * parts);
    ++parts;
    text.remove_prefix(read);
    if (text.empty()) return a;
    if (parts == 4 || text[0] != '.') return std::nullopt;
    text.remove_prefix(1);
  }
}

// get_prefix_1: the address as get_addr_ipv4 reads it, then "/" and get_netmask's length; no
// "/" is a /32.
std::optional<ipv4_prefix> parse_prefix(std::string_view text) {
  const auto slash = text.find('/');
  auto a = parse_ipv4(text.substr(0, slash));
  if (!a) return std::nullopt;
  ipv4_prefix p{*a, 32};
  if (slash != std::string_view::npos) {
    auto len = parse_length(text.substr(slash + 1));
    if (!len) return std::nullopt;
    p.length = *len;
  }
  return p;
}

std::string to_string(ipv4 a) {
  return std::to_string(a >> 24) + '.' + std::to_string((a >> 16) & 255) + '.' + std::to_string((a >> 8) & 255) +
         '.' + std::to_string(a & 255);
}

std::string to_string(const ipv4_prefix& p) { return to_string(p.address) + '/' + std::to_string(p.length); }

}  // namespace netdev
