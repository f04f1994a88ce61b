#include "netdev/fib.hpp"

namespace netdev {

namespace {
struct same_network {
  ipv4 network;
  bool operator()(cds_lfht_node* n) const noexcept {
    return route_hash_node::of(n)->prefix.address == network;
  }
};
}  // namespace

fib::fib(const rcu_flavor_struct* flavor) {
  for (auto& t : by_length_) t = std::make_unique<rcu_table>(flavor, 1);
}

fib::~fib() = default;

void fib::add_connected(net_device& dev, ipv4_prefix prefix) {
  auto* r = new route(prefix, &dev);
  by_length_[prefix.length]->add(mix_hash(r->prefix.address), &r->node.node);
  dev.routes.push_back(*r);
  nonempty_.fetch_or(std::uint64_t{1} << prefix.length, std::memory_order_release);
}

std::size_t fib::remove_routes_of(net_device& dev, unreg_context& batch) noexcept {
  std::size_t removed = 0;
  dev.routes.clear_and_dispose([&](route* r) {
    by_length_[r->prefix.length]->remove(&r->node.node);
    batch.retire(*r);  // readers may hold it until the batch's last grace period
    ++removed;
  });
  if (removed > 0) dirty_ = true;  // O(1) per device; the sweep is once per batch
  return removed;
}

void fib::sweep() noexcept {
  if (!dirty_) return;
  std::uint64_t mask = 0;
  for (unsigned len = 0; len < kLengths; ++len)
    if (!by_length_[len]->empty()) mask |= std::uint64_t{1} << len;
  nonempty_.store(mask, std::memory_order_release);
  dirty_ = false;
}

std::size_t fib::size() const noexcept {
  std::size_t n = 0;
  for (const auto& t : by_length_) n += t->size();
  return n;
}

const route* fib::lookup(ipv4 address) const noexcept {
  std::uint64_t mask = nonempty_.load(std::memory_order_acquire);
  while (mask != 0) {
    const unsigned len = 63 - static_cast<unsigned>(__builtin_clzll(mask));  // longest first
    mask &= ~(std::uint64_t{1} << len);
    const ipv4_prefix p{address, len};
    const ipv4 network = p.network();
    if (cds_lfht_node* n = by_length_[len]->find(mix_hash(network), same_network{network}))
      return route_hash_node::of(n);
  }
  return nullptr;
}

}  // namespace netdev
