#include "netdev/tunnel_table.hpp"

#include <cstdint>

namespace netdev {

unsigned long tunnel_key_hash::operator()(const tunnel_params& p) const noexcept {
  using rcubatch::lfht_hash;
  return lfht_hash::mix((std::uint64_t{p.remote} << 32 | p.local) ^ lfht_hash::mix(p.has_key ? p.key + 1UL : 0UL));
}

}  // namespace netdev
