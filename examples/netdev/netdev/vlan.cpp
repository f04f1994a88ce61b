#include "netdev/vlan.hpp"

#include <memory>

#include "netdev/link_ops.hpp"
#include "netdev/upper_device.hpp"

namespace netdev::vlan {

std::string check_newlink(const net_device& lower, bool protocol_8021ad, long vid) {
  // vlan_validate: an id must be below VLAN_VID_MASK (4095); 0 is a valid id.
  if (vid < 0 || vid > 4094) return "Error: 8021q: Invalid VLAN id.";
  // vlan_check_real_dev: lo (and the tunnels) are NETIF_F_VLAN_CHALLENGED.
  if (lower.kind == link_kind::loopback) return "Error: 8021q: VLANs not supported on device.";
  if (lower.kind == link_kind::ipip || lower.kind == link_kind::gre) return "cannot add a vlan on a tunnel";
  const vlan_group* g = lower.vlans.load(std::memory_order_acquire);
  // vlan_check_real_dev: EEXIST only when the same (protocol, VID) is taken.
  if (g != nullptr && g->find(protocol_8021ad, static_cast<std::uint16_t>(vid)) != nullptr)
    return "vlan id " + std::to_string(vid) + " already exists on " + lower.name;
  return {};
}

void init(net_device& vlan, net_device& lower, bool protocol_8021ad, std::uint16_t vid) {
  // The group first: the only step that can fail (bad_alloc), and before the vlan is published,
  // so a failure leaves no half-created device (an empty group is what the lower would get anyway).
  // A new group gets its part before it is published; an existing one only gains a part.
  if (vlan_group* g = lower.vlans.load(std::memory_order_relaxed)) {
    g->prealloc(protocol_8021ad, vid);
  } else {
    auto fresh = std::make_unique<vlan_group>();
    fresh->prealloc(protocol_8021ad, vid);
    lower.vlans.store(fresh.release(), std::memory_order_release);
  }
  auto& l = vlan.link.emplace<vlan_link>();
  l.vid = vid;
  l.protocol_8021ad = protocol_8021ad;
  upper_device::bind(vlan, l, lower);
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

namespace {
std::string vlan_validate(netns&, const link_request& req, const net_device* lower) {
  if (req.vid < 0) return "vlan needs \"id N\"";
  if (std::string e = vlan::check_newlink(*lower, req.vlan_8021ad, req.vid); !e.empty()) return e;
  return upper_device::validate_common(req, *lower);
}
void vlan_setup(net_device& dev, net_device* lower, const link_request& req, const link_context&) {
  vlan::init(dev, *lower, req.vlan_8021ad, static_cast<std::uint16_t>(req.vid));
}
std::string vlan_can_open(const net_device& dev) {
  // vlan_dev_open: ENETDOWN while the lower device is down.
  return upper_device::of(dev)->lower->is_up() ? std::string() : "RTNETLINK answers: Network is down";
}
std::string vlan_change_mtu(const net_device& dev, unsigned mtu) {
  // vlan_dev_change_mtu: ERANGE above the lower device's MTU.
  return upper_device::above_lower_mtu(dev, mtu) ? "RTNETLINK answers: Numerical result out of range" : std::string();
}
}  // namespace

const link_ops vlan_link_ops{.stacked = true,
                             .legacy_gps = 1,  // unregister_vlan_dev's synchronize_net
                             .validate = vlan_validate,
                             .setup = vlan_setup,
                             .attach = vlan::attach,
                             .can_open = vlan_can_open,
                             .change_mtu = vlan_change_mtu,
                             .uninit = vlan::uninit,
                             .destructor = upper_device::release_lower};

void vlan_group::prealloc(bool protocol_8021ad, std::uint16_t vid) {
  auto& p = parts_[part_index(protocol_8021ad, vid)];
  if (p.load(std::memory_order_relaxed) == nullptr) p.store(new part{}, std::memory_order_release);
}

void vlan_group::attach(net_device& vlan) noexcept {
  auto& l = std::get<vlan_link>(vlan.link);
  members_.push_back(l);
  (*parts_[part_index(l.protocol_8021ad, l.vid)].load(std::memory_order_relaxed))[l.vid % kPartVids].store(&vlan, std::memory_order_release);
}

void vlan_group::detach(net_device& vlan) noexcept {
  auto& l = std::get<vlan_link>(vlan.link);
  (*parts_[part_index(l.protocol_8021ad, l.vid)].load(std::memory_order_relaxed))[l.vid % kPartVids].store(nullptr, std::memory_order_release);
  members_.erase(members_.iterator_to(l));
}

}  // namespace netdev
