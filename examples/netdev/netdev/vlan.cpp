#include "netdev/vlan.hpp"

#include <memory>

namespace netdev::vlan {

std::string check_newlink(const net_device& lower, long vid) {
  // vlan_validate: an id must be below VLAN_VID_MASK (4095); 0 is a valid id.
  if (vid < 0 || vid > 4094) return "Error: 8021q: Invalid VLAN id.";
  // vlan_check_real_dev: lo (and the tunnels) are NETIF_F_VLAN_CHALLENGED.
  if (lower.kind == link_kind::loopback) return "Error: 8021q: VLANs not supported on device.";
  if (lower.kind == link_kind::ipip || lower.kind == link_kind::gre) return "cannot add a vlan on a tunnel";
  const vlan_group* g = lower.vlans.load(std::memory_order_acquire);
  if (g != nullptr && g->find(static_cast<std::uint16_t>(vid)) != nullptr)
    return "vlan id " + std::to_string(vid) + " already exists on " + lower.name;
  return {};
}

void init(net_device& vlan, net_device& lower, std::uint16_t vid) {
  // The group first: the only step that can fail (bad_alloc), and before the vlan is published,
  // so a failure leaves no half-created device (an empty group is what the lower would get anyway).
  // A new group gets its part before it is published; an existing one only gains a part.
  if (vlan_group* g = lower.vlans.load(std::memory_order_relaxed)) {
    g->prealloc(vid);
  } else {
    auto fresh = std::make_unique<vlan_group>();
    fresh->prealloc(vid);
    lower.vlans.store(fresh.release(), std::memory_order_release);
  }
  auto& l = vlan.link.emplace<vlan_link>();
  l.self = &vlan;
  l.lower = &lower;
  l.vid = vid;
  lower.refs().hold();
}

void attach(net_device& vlan) noexcept {
  std::get<vlan_link>(vlan.link).lower->vlans.load(std::memory_order_relaxed)->attach(vlan);
}

bool uninit(net_device& vlan, rcubatch::batch& batch) noexcept {
  auto& l = std::get<vlan_link>(vlan.link);
  vlan_group* g = l.lower->vlans.load(std::memory_order_relaxed);
  g->detach(vlan);
  if (g->empty()) {
    l.lower->vlans.store(nullptr, std::memory_order_release);
    batch.retire(*g);  // readers may still be inside find(): freed after grace period #2
  }
  return true;
}

void release_lower(net_device& vlan) noexcept { std::get<vlan_link>(vlan.link).lower->refs().put(); }

std::vector<net_device*> uppers(net_device& lower) { return dependents(lower); }

std::vector<net_device*> dependents(net_device& lower) {
  std::vector<net_device*> out;
  if (vlan_group* g = lower.vlans.load(std::memory_order_relaxed))
    g->for_each_member([&](net_device& d) { out.push_back(&d); });
  return out;
}

void cascade::on_event(const netdev_event& e) noexcept {
  if (e.kind != netdev_event_kind::unregister) return;
  if (vlan_group* g = e.dev->vlans.load(std::memory_order_relaxed))
    g->for_each_member([&](net_device& d) { e.batch->queue(d); });
}

}  // namespace netdev::vlan

namespace netdev {

void vlan_group::prealloc(std::uint16_t vid) {
  auto& p = parts_[vid / kPartVids];
  if (p.load(std::memory_order_relaxed) == nullptr) p.store(new part{}, std::memory_order_release);
}

void vlan_group::attach(net_device& vlan) noexcept {
  auto& l = std::get<vlan_link>(vlan.link);
  members_.push_back(l);
  (*parts_[l.vid / kPartVids].load(std::memory_order_relaxed))[l.vid % kPartVids].store(&vlan, std::memory_order_release);
}

void vlan_group::detach(net_device& vlan) noexcept {
  auto& l = std::get<vlan_link>(vlan.link);
  (*parts_[l.vid / kPartVids].load(std::memory_order_relaxed))[l.vid % kPartVids].store(nullptr, std::memory_order_release);
  members_.erase(members_.iterator_to(l));
}

}  // namespace netdev
