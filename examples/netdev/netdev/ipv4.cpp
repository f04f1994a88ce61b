#include "netdev/ipv4.hpp"

#include <charconv>

namespace netdev {

namespace {
std::optional<unsigned> parse_uint(std::string_view s, unsigned max) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty() || v > max) return std::nullopt;
  return v;
}
}  // namespace

std::optional<ipv4> parse_ipv4(std::string_view text) {
  ipv4 a = 0;
  for (int i = 0; i < 4; ++i) {
    const auto dot = text.find('.');
    if ((i < 3) == (dot == std::string_view::npos)) return std::nullopt;
    auto octet = parse_uint(text.substr(0, dot), 255);
    if (!octet) return std::nullopt;
    a = (a << 8) | *octet;
    text = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  }
  return a;
}

std::optional<ipv4_prefix> parse_prefix(std::string_view text) {
  const auto slash = text.find('/');
  auto a = parse_ipv4(text.substr(0, slash));
  if (!a) return std::nullopt;
  ipv4_prefix p{*a, 32};
  if (slash != std::string_view::npos) {
    auto len = parse_uint(text.substr(slash + 1), 32);
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
