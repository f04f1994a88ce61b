#include "netdev/fib.hpp"

namespace netdev {

fib::table::table(const index_flavor* flavor) {
  for (auto& t : by_length) t = std::make_unique<route_index>(*flavor, rcubatch::lfht_options{.initial_buckets = 1});
}

fib::fib(const index_flavor* flavor) : main_(flavor), local_(flavor) {}

fib::~fib() = default;

void fib::add(route& r) noexcept {
  table& t = of(r.table);
  // add may grow the table (allocation); the bucket arrays start at one bucket, and a failed
  // resize leaves the table usable, so this does not fail half-way.
  t.by_length[r.prefix.length]->add(r);
  r.dev->routes.push_back(r);
  t.nonempty.fetch_or(std::uint64_t{1} << r.prefix.length, std::memory_order_release);
}

void fib::unlink(route& r) noexcept {
  of(r.table).by_length[r.prefix.length]->unlink(r);
  r.dev->routes.erase(r.dev->routes.iterator_to(r));
  dirty_ = true;
}

std::size_t fib::remove_routes_of(net_device& dev, rcubatch::batch& batch) noexcept {
  std::size_t removed = 0;
  dev.routes.clear_and_dispose([&](route* r) {
    of(r->table).by_length[r->prefix.length]->unlink(*r);
    batch.retire(*r);  // readers may hold it until the batch's last grace period
    ++removed;
  });
  if (removed > 0) dirty_ = true;  // O(1) per device; the sweep is once per batch
  return removed;
}

void fib::table::sweep() noexcept {
  std::uint64_t mask = 0;
  for (unsigned len = 0; len < kLengths; ++len)
    if (!by_length[len]->empty()) mask |= std::uint64_t{1} << len;
  nonempty.store(mask, std::memory_order_release);
}

void fib::sweep() noexcept {
  if (!dirty_) return;
  main_.sweep();
  local_.sweep();
  dirty_ = false;
}

std::size_t fib::table::size() const noexcept {
  std::size_t n = 0;
  for (const auto& t : by_length) n += t->size();
  return n;
}

std::size_t fib::size() const noexcept { return main_.size(); }
std::size_t fib::local_size() const noexcept { return local_.size(); }

const route* fib::table::lookup(ipv4 address) const noexcept {
  std::uint64_t mask = nonempty.load(std::memory_order_acquire);
  while (mask != 0) {
    const unsigned len = 63 - static_cast<unsigned>(__builtin_clzll(mask));  // longest first
    mask &= ~(std::uint64_t{1} << len);
    const ipv4_prefix p{address, len};
    const ipv4 network = p.network();
    if (const route* r = by_length[len]->find(network)) return r;
  }
  return nullptr;
}

const route* fib::lookup(ipv4 address) const noexcept {
  if (const route* r = local_.lookup(address)) return r;
  return main_.lookup(address);
}

route* fib::find_exact(route_table t, ipv4_prefix prefix) const noexcept {
  const ipv4 network = prefix.network();
  return of(t).by_length[prefix.length]->find_locked(network);
}

}  // namespace netdev
