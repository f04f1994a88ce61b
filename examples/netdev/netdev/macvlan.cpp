#include "netdev/macvlan.hpp"

#include <cstring>

#include "netdev/link_ops.hpp"
#include "netdev/upper_device.hpp"

namespace netdev {

unsigned long mac_hash::operator()(const mac_address& m) const noexcept {
  unsigned long x = 0;
  std::memcpy(&x, m.data(), m.size());
  return rcubatch::lfht_hash::mix(x);
}

net_device* macvlan_port::lookup(const mac_address& mac) const noexcept { return by_mac_.find(mac); }

void macvlan_port::detach(net_device& mv) noexcept { members_.erase(members_.iterator_to(std::get<macvlan_link>(mv.link))); }

void macvlan_port::hash_add(net_device& mv) {
  auto& l = std::get<macvlan_link>(mv.link);
  // A run-time flavor has no grace domain: the tables the hash's resizes replaced are freed here
  // (one grace period; ndo_open runs outside read-side sections) once there are 8.
  if (by_mac_.retired_tables() >= 8) by_mac_.reclaim();
  by_mac_.add(mv);  // duplicates allowed, as before: a MAC is not checked unique here
  l.hashed = true;
}

bool macvlan_port::hash_del(net_device& mv, grace_periods& gps) noexcept {
  auto& l = std::get<macvlan_link>(mv.link);
  if (!l.hashed) return false;
  by_mac_.unlink(mv);
  l.hashed = false;
  return gps.synchronize_unless_dismantling(mv);
}

namespace macvlan {

std::string check_newlink(const net_device& lower) {
  // macvlan_port_create (drivers/net/macvlan.c): only Ethernet devices (dev->type ==
  // ARPHRD_ETHER), never a loopback: EINVAL. ipip and gre are ARPHRD_TUNNEL / ARPHRD_IPGRE.
  if (lower.kind == link_kind::loopback || lower.kind == link_kind::ipip || lower.kind == link_kind::gre)
    return "RTNETLINK answers: Invalid argument";
  return {};
}

void init(net_device& mv, net_device& lower, const index_flavor* flavor) {
  // The port first: the only step that can fail (bad_alloc, its hash table), and before the
  // macvlan is published, so a failure leaves no half-created device.
  macvlan_port* port = lower.macvlans.load(std::memory_order_relaxed);
  if (port == nullptr) {
    port = new macvlan_port(flavor);
    lower.macvlans.store(port, std::memory_order_release);
  }
  auto& l = mv.link.emplace<macvlan_link>();
  l.port = port;
  upper_device::bind(mv, l, lower);
}

void attach(net_device& mv) noexcept { std::get<macvlan_link>(mv.link).port->attach(mv); }

void open(net_device& mv) { std::get<macvlan_link>(mv.link).port->hash_add(mv); }

void stop(net_device& mv, grace_periods& gps) noexcept { std::get<macvlan_link>(mv.link).port->hash_del(mv, gps); }

bool uninit(net_device& mv, rcubatch::batch& batch) noexcept {
  auto& l = std::get<macvlan_link>(mv.link);
  l.port->detach(mv);
  if (l.port->empty()) {
    l.lower->macvlans.store(nullptr, std::memory_order_release);
    batch.retire(*l.port);
  }
  return true;
}

std::vector<net_device*> dependents(net_device& lower) {
  std::vector<net_device*> out;
  if (macvlan_port* p = lower.macvlans.load(std::memory_order_relaxed))
    p->for_each_member([&](net_device& d) { out.push_back(&d); });
  return out;
}

void cascade::on_event(const netdev_event& e) noexcept {
  if (e.kind != netdev_event_kind::unregister) return;
  if (macvlan_port* p = e.dev->macvlans.load(std::memory_order_relaxed))
    p->for_each_member([&](net_device& d) { e.batch->queue(d); });
}

}  // namespace macvlan

namespace {
net_device* macvlan_real_lower(net_device& lower) noexcept {
  // macvlan_common_newlink: a macvlan on a macvlan attaches to the real lower device.
  if (auto* m = std::get_if<macvlan_link>(&lower.link)) return m->lower;
  return &lower;
}
/// dev_validate_mtu (net/core/dev.c) against the min_mtu ether_setup gave the macvlan (ETH_MIN_MTU):
/// the extack that ip prints. rtnl_create_link checks a requested MTU so before the type's newlink.
std::string below_min_mtu(unsigned mtu) { return mtu < kEthMinMtu ? "Error: mtu less than device minimum." : std::string(); }
std::string macvlan_validate(netns&, const link_request& req, const net_device* lower) {
  if (req.mtu)
    if (std::string e = below_min_mtu(*req.mtu); !e.empty()) return e;
  if (std::string e = macvlan::check_newlink(*lower); !e.empty()) return e;
  // macvlan_common_newlink, on the real lower's port: EINVAL for any macvlan beside a passthru
  // one (macvlan_passthru(port)), and for a passthru one beside any other (port->count).
  if (const macvlan_port* port = lower->macvlans.load(std::memory_order_relaxed))
    if (port->passthru() || (req.mode == macvlan_mode::passthru && !port->empty())) return "RTNETLINK answers: Invalid argument";
  return upper_device::validate_common(req, *lower);
}
void macvlan_setup(net_device& dev, net_device* lower, const link_request& req, const link_context& ctx) {
  macvlan::init(dev, *lower, ctx.flavor);
  std::get<macvlan_link>(dev.link).mode = req.mode;
}
std::string macvlan_change_mtu(const net_device& dev, unsigned mtu) {
  // dev_set_mtu_ext: dev_validate_mtu first, then macvlan_change_mtu: EINVAL above the lower's MTU.
  if (std::string e = below_min_mtu(mtu); !e.empty()) return e;
  return upper_device::above_lower_mtu(dev, mtu) ? "RTNETLINK answers: Invalid argument" : std::string();
}
}  // namespace

const link_ops macvlan_link_ops{.stacked = true,
                                .real_lower = macvlan_real_lower,
                                .validate = macvlan_validate,
                                .setup = macvlan_setup,
                                .attach = macvlan::attach,
                                .open = macvlan::open,
                                .stop = macvlan::stop,
                                .change_mtu = macvlan_change_mtu,
                                .uninit = macvlan::uninit,
                                .destructor = upper_device::release_lower};

}  // namespace netdev
