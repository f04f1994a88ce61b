// examples/fib — the routing-table template: nexthops, nexthop groups, and routes (prefix/len →
// group) that readers resolve by longest-prefix match while a writer replaces groups, flushes
// the routes of a protocol and deletes nexthops one by one, as `ip nexthop` / `ip route` do.
//
//   fib [routes]      (default 100000; ctest runs it and checks what it prints)
//
// Linux's semantics, kept here: a route names a group and goes with it; deleting a nexthop takes
// it out of every group, and a group left with no nexthop goes too, with its routes; replacing a
// group's members (`ip nexthop replace id G group ...`) keeps its routes pointing at it.
//
// The part specific to rcubatch is between the two "rcubatch" rulers. rcubatch-specific lines:
// 44 of the file's 278 (30 between the rulers, 14 in main), counted as the lines, comments left
// out, that name rcubatch:: or indexed:: or call a member of the registry (t.), a batch (b.),
// the unregister queues (q.) or an owner_hook (.owner.):
//   grep -vE '^\s*//' fib.cpp | grep -cE 'rcubatch::|indexed::|\b[tbq]\.|\.owner\.'   (rcubatch's ctest recounts it)
// Not counted, though it is RCU written by hand: `members` (a group's nexthop array, published
// whole, a deleted nexthop's slot nulled for readers) and each nexthop's list of its groups.
// Lines marked "by hand" are what the registry has no call for: a group's member set replaced in
// one step with its nexthops' edges. Issue 37's shared membership (member_list) keeps such edges,
// but members join a group only once it is published, so a replaced group would be seen empty for
// a moment and readers would fall back to a shorter prefix.
#include <rcubatch.hpp>
#include <rcubatch/index/hlist_index.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

enum class proto : std::uint8_t { kernel, static_route, bgp };
struct group;

// A group's nexthops, published whole through group::active. A deleted nexthop's slot is set to
// null before the first grace period of its batch (readers skip it); the array itself changes
// only by a replace, which publishes a new one and frees the old after a grace period.
struct nexthop;
struct members {
  explicit members(const std::vector<nexthop*>& nhs) : slots(nhs.size()), live(nhs.size()) {
    for (std::size_t i = 0; i < nhs.size(); ++i) slots[i].store(nhs[i], std::memory_order_relaxed);
  }
  const nexthop* pick(std::uint32_t flow) const noexcept {  // ECMP: the flow's slot, or the next live one
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (const nexthop* n = slots[(flow + i) % slots.size()].load(std::memory_order_acquire)) return n;
    return nullptr;
  }
  void drop(const nexthop& n) noexcept {  // writer, under the writer lock
    for (auto& slot : slots) {
      if (slot.load(std::memory_order_relaxed) != &n) continue;
      slot.store(nullptr, std::memory_order_release);
      --live;
    }
  }
  std::vector<std::atomic<nexthop*>> slots;
  std::size_t live;  // writer side
};

// ---- rcubatch ----------------------------------------------------------------------------------
struct route;
struct nexthop : rcubatch::registrable<nexthop> {
  std::uint32_t id = 0, gateway = 0;
  rcubatch::hlist_hook<nexthop> by_id;
  std::vector<group*> groups;  // by hand: the groups it is in, kept in step (writer lock)
};
struct route : rcubatch::registrable<route> {
  std::uint32_t prefix = 0;
  std::uint8_t len = 0;
  proto protocol = proto::kernel;
  rcubatch::hlist_hook<route> by_prefix;
  rcubatch::owner_hook<group> owner;  // its group: the route goes with it, before it
};
struct group : rcubatch::registrable<group> {
  explicit group(std::uint32_t i, const std::vector<nexthop*>& nhs) : id(i), active(new members(nhs)) {}
  ~group() { delete active.load(); }
  std::uint32_t id;
  rcubatch::hlist_hook<group> by_id;
  std::atomic<members*> active;  // by hand: replaced whole by replace_group
  rcubatch::owned_list<route, &route::owner> routes;
};
// Writers share the registry's lock: hlist_index, as the README recommends for that case.
using nexthop_ids = rcubatch::hlist_index<nexthop, &nexthop::by_id, rcubatch::key_member<&nexthop::id>>;
using group_ids = rcubatch::hlist_index<group, &group::by_id, rcubatch::key_member<&group::id>>;
using route_keys = rcubatch::hlist_index<route, &route::by_prefix, rcubatch::key_members<&route::prefix, &route::len>>;

struct nexthop_policy : rcubatch::indexed<nexthop, nexthop_ids> {
  void unlist(nexthop& n) noexcept {  // by hand: before grace period #1, n leaves its groups too
    indexed::unlist(n);
    for (group* g : n.groups) g->active.load(std::memory_order_relaxed)->drop(n);
  }
  void notify(nexthop& n, rcubatch::batch& b) noexcept {  // by hand: a group left empty goes too
    for (group* g : std::exchange(n.groups, {}))
      if (g->active.load(std::memory_order_relaxed)->live == 0) b.queue(*g);
  }
};
struct group_policy : rcubatch::indexed<group, group_ids>, rcubatch::owning<&group::routes> {
  void unlist(group& g) noexcept {  // by hand: a deleted group leaves its members, minus the edges
    indexed::unlist(g);
    for (auto& slot : g.active.load(std::memory_order_relaxed)->slots)
      if (nexthop* n = slot.load(std::memory_order_relaxed)) std::erase(n->groups, &g);
  }
};
using table = rcubatch::registry<nexthop_policy, group_policy, rcubatch::indexed<route, route_keys>>;

nexthop* add_nexthop(table& t, std::uint32_t id, std::uint32_t gateway) {
  auto* n = new nexthop;
  std::tie(n->id, n->gateway) = std::tuple(id, gateway);
  if (t.add(*n)) return n;
  delete n;  // the id is taken: nothing was published
  return nullptr;
}
// Requires: the members stay registered until this returns (one writer thread, as in main).
group* add_group(table& t, std::uint32_t id, const std::vector<nexthop*>& nhs) {
  auto* g = new group(id, nhs);
  if (!t.add(*g)) {
    delete g;
    return nullptr;
  }
  std::scoped_lock lock(t.writer_lock());  // by hand: the membership edges
  for (nexthop* n : nhs) n->groups.push_back(g);
  return g;
}
// The group is found by its id under the writer lock: one gone or going away refuses the route.
bool add_route(table& t, std::uint32_t group_id, std::uint32_t prefix, std::uint8_t len, proto p) {
  auto* r = new route;
  std::tie(r->prefix, r->len, r->protocol) = std::tuple(prefix, len, p);
  if (t.add_under<group_ids>(group_id, *r)) return true;
  delete r;  // the prefix/len is taken, or no such group: nothing was published
  return false;
}

// `ip nexthop replace id G group ...`: the routes keep pointing at G, readers find the old members
// or the new ones. By hand rather than try_replace<group_ids>(id, fresh, keep_children): the
// nexthops are found and their edges moved under the same hold of the writer lock as the swap.
bool replace_group(table& t, std::uint32_t id, const std::vector<std::uint32_t>& nh_ids) {
  members* old = nullptr;
  {
    std::scoped_lock lock(t.writer_lock());
    group* g = t.index<group_ids>().find_locked(id);
    std::vector<nexthop*> nhs;
    for (std::uint32_t n : nh_ids)
      if (nexthop* found = t.index<nexthop_ids>().find_locked(n)) nhs.push_back(found);
    if (g == nullptr || nhs.empty() || nhs.size() != nh_ids.size()) return false;
    auto fresh = std::make_unique<members>(nhs);
    for (nexthop* n : nhs) n->groups.reserve(n->groups.size() + 1);  // nothing throws past here
    old = g->active.exchange(fresh.release(), std::memory_order_acq_rel);
    for (auto& slot : old->slots)
      if (nexthop* n = slot.load(std::memory_order_relaxed)) std::erase(n->groups, g);
    for (nexthop* n : nhs) n->groups.push_back(g);
  }
  t.domain().synchronize();  // readers still on the old members leave them: one grace period
  delete old;
  return true;
}

// `ip route flush proto P`: one batch, ≤ 2 grace periods.
rcubatch::batch_stats flush(table& t, proto p) {
  return t.unregister_if<route_keys>([p](const route& r) { return r.protocol == p; }).stats;
}

// Longest-prefix match: probe /32 down to /0; a route whose group has no live nexthop is skipped.
const nexthop* lookup(const table& t, const rcubatch::read_guard<>& guard, std::uint32_t addr) {
  for (int len = 32; len >= 0; --len) {
    const std::uint32_t mask = len == 0 ? 0 : ~std::uint32_t{0} << (32 - len);
    const route* r = t.find<route_keys>(guard, std::tuple(addr & mask, static_cast<std::uint8_t>(len)));
    if (r == nullptr) continue;
    if (const nexthop* n = r->owner.parent()->active.load(std::memory_order_acquire)->pick(addr)) return n;
  }
  return nullptr;
}
// ---- rcubatch ----------------------------------------------------------------------------------

int main(int argc, char** argv) {
  constexpr std::uint32_t kNexthops = 64, kGroups = 1'000, kDefault = 1'000'000;  // kDefault: nexthop and group ids
  const long routes_wanted = argc > 1 ? std::atol(argv[1]) : 100'000;
  if (argc > 2 || routes_wanted < 1 || routes_wanted > 10'000'000) {
    std::fprintf(stderr, "usage: fib [routes]   (routes: 1 to 10000000, default 100000)\n");
    return 2;
  }
  rcubatch::thread_registration<> registered;  // every thread that reads or writes registers
  table t;

  // 64 nexthops; group i has the 8 whose id is i mod 8 (so deleting nexthops one by one empties
  // groups late); a default route 0/0 through a nexthop no group shares, so every lookup resolves.
  std::vector<nexthop*> nh;
  for (std::uint32_t i = 0; i < kNexthops; ++i) nh.push_back(add_nexthop(t, i, 0x0a000001 + i));
  if (std::ranges::count(nh, nullptr) != 0) return 1;  // an id taken twice: not here
  std::size_t refused = 0;
  for (std::uint32_t g = 0; g < kGroups; ++g) {
    std::vector<nexthop*> m;
    for (std::uint32_t k = 0; k < 8; ++k) m.push_back(nh[g % 8 + 8 * k]);
    refused += add_group(t, g, m) == nullptr;
  }
  refused += add_group(t, kDefault, {add_nexthop(t, kDefault, 0x0a0000fe)}) == nullptr;
  if (refused != 0 || !add_route(t, kDefault, 0, 0, proto::kernel)) return 1;

  std::mt19937 rng(37);
  long routes = 0, duplicates = 0, bgp = 0;
  while (routes < routes_wanted) {
    const auto len = static_cast<std::uint8_t>(8 + rng() % 25);
    const std::uint32_t prefix = static_cast<std::uint32_t>(rng()) & (~std::uint32_t{0} << (32 - len));
    const proto p = rng() % 4 == 0 ? proto::static_route : proto::bgp;
    if (!add_route(t, static_cast<std::uint32_t>(rng() % kGroups), prefix, len, p)) {
      ++duplicates;  // the same prefix/len drawn twice: refused, nothing published
      continue;
    }
    ++routes;
    bgp += p == proto::bgp;
  }
  std::printf("fib: %u nexthops, %u groups, %ld routes (%ld bgp, %ld duplicates refused)\n", kNexthops + 1,
              kGroups + 1, routes + 1, bgp, duplicates);

  // Two readers resolve random addresses for as long as the writer works.
  std::atomic<bool> stop{false};
  std::atomic<unsigned long long> lookups{0}, misses{0};
  std::latch readers_started(2);
  std::vector<std::thread> readers;
  for (unsigned r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      rcubatch::thread_registration<> reg;
      std::mt19937 flows(r);
      readers_started.count_down();
      while (!stop.load(std::memory_order_relaxed)) {
        rcubatch::read_guard<> guard;
        const nexthop* n = lookup(t, guard, static_cast<std::uint32_t>(flows()));
        if (n == nullptr) misses.fetch_add(1, std::memory_order_relaxed);
        lookups.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  readers_started.wait();

  // Group 7 swaps between two member sets 1,000 times; its routes stay.
  const std::uint64_t gps_before = t.counters().domain.grace_periods;
  const std::size_t routes_before = t.index<route_keys>().size();
  for (unsigned i = 0; i < 1'000; ++i)
    if (!replace_group(t, 7, i % 2 == 0 ? std::vector<std::uint32_t>{1, 2, 3} : std::vector<std::uint32_t>{7, 15, 23}))
      return 1;
  std::printf("replaced group 7 1000 times under 2 readers: %llu grace periods, %zu routes before and %zu after\n",
              static_cast<unsigned long long>(t.counters().domain.grace_periods - gps_before), routes_before,
              t.index<route_keys>().size());

  const rcubatch::batch_stats flushed = flush(t, proto::bgp);
  std::printf("flushed %zu bgp routes in one batch with %u grace periods\n", flushed.objects, flushed.grace_periods);

  // Nexthops deleted one by one, by id: each leaves its groups; the groups it leaves empty go too.
  std::size_t groups_gone = 0, routes_gone = 0;
  unsigned gps = 0, most = 0;
  for (std::uint32_t id = 0; id < kNexthops; ++id) {
    const std::size_t g0 = t.index<group_ids>().size(), r0 = t.index<route_keys>().size();
    const rcubatch::unregister_result r = t.try_unregister<nexthop_ids>(id);
    if (!r) return 1;
    groups_gone += g0 - t.index<group_ids>().size();
    routes_gone += r0 - t.index<route_keys>().size();
    gps += r.stats.grace_periods;
    most = std::max(most, r.stats.grace_periods);
  }
  std::printf("deleted %u nexthops one by one: %zu groups left empty went with them, and their %zu routes, "
              "in %u grace periods, at most %u per delete\n",
              kNexthops, groups_gone, routes_gone, gps, most);

  stop = true;
  for (auto& r : readers) r.join();
  std::printf("readers: %llu lookups, %llu misses\n", lookups.load(), misses.load());
  if (!t.try_unregister<nexthop_ids>(kDefault)) return 1;  // its group and the default route with it
  const bool ok = misses.load() == 0 && lookups.load() > 0 && flushed.objects == static_cast<std::size_t>(bgp) &&
                  t.index<nexthop_ids>().empty() && t.index<group_ids>().empty() && t.index<route_keys>().empty();
  std::printf(ok ? "fib: every bgp route flushed, every object gone, no miss\n" : "fib: FAILED\n");
  return ok ? 0 : 1;
}
