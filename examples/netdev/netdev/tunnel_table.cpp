#include "netdev/tunnel_table.hpp"

namespace netdev {

namespace {
unsigned long hash_key(const tunnel_params& p) noexcept {
  return mix_hash((std::uint64_t{p.remote} << 32 | p.local) ^ mix_hash(p.has_key ? p.key + 1UL : 0UL));
}

bool same_key(const tunnel_params& a, const tunnel_params& b) noexcept {
  return a.remote == b.remote && a.local == b.local && a.has_key == b.has_key && (!a.has_key || a.key == b.key);
}

const tunnel_params& params_of(cds_lfht_node* n) noexcept {
  return std::get<tunnel_link>(device_hash_node::owner(n)->link).params;
}

struct key_match {
  const tunnel_params& key;
  bool operator()(cds_lfht_node* n) const noexcept { return same_key(params_of(n), key); }
};
}  // namespace

bool tunnel_table::add(net_device& tunnel) {
  auto& t = std::get<tunnel_link>(tunnel.link);
  t.node.dev = &tunnel;
  return table_.add_unique(hash_key(t.params), key_match{t.params}, &t.node.node) == &t.node.node;
}

void tunnel_table::remove(net_device& tunnel) noexcept { table_.remove(&std::get<tunnel_link>(tunnel.link).node.node); }

net_device* tunnel_table::lookup(const tunnel_params& key) const noexcept {
  cds_lfht_node* n = table_.find(hash_key(key), key_match{key});
  return n == nullptr ? nullptr : device_hash_node::owner(n);
}

bool tunnel_table::contains(const tunnel_params& key) const noexcept {
  return table_.find_locked(hash_key(key), key_match{key}) != nullptr;
}

}  // namespace netdev
