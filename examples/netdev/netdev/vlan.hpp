// netdev/vlan.hpp — 802.1Q vlans: a 4096-VID group per lower device, and the unregister cascade.
//
// Receive path: lower->vlans (an RCU-published vlan_group*) → group->find(vid) → the vlan device.
// Deleting a vlan only clears its slot (in its uninit hook, covered by the batch's grace period
// #2): no per-vlan grace period, unlike 2.6.32's synchronize_net in unregister_vlan_dev. When the
// lower device is unregistered, `cascade` queues every vlan into the same batch, so the whole
// cascade costs the batch's two grace periods whatever the number of vlans (seed 000).
// The group is retired into the batch that removes its last vlan.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "netdev/net_device.hpp"
#include "netdev/notifier.hpp"

namespace netdev {

/// The slots are keyed by (protocol, VID), as the kernel's vlan_group keeps one array per
/// protocol (vlan_devices_arrays[VLAN_PROTO_NUM][...], vlan_proto_idx): an 802.1ad vlan 50 and an
/// 802.1Q vlan 50 live side by side on one lower device.
/// They come in parts allocated on first use, as vlan_group_prealloc_vid does: a lower device
/// with one vlan costs one 1 KiB part, not 2 × 32 KiB (10,000 dummies with a vlan each took
/// 341 MB with a flat array).
class vlan_group : public rcubatch::retire_node {
 public:
  static constexpr unsigned kProtocols = 2;  // 802.1Q, 802.1ad
  static constexpr unsigned kVids = 4096;
  static constexpr unsigned kPartVids = 128;
  static constexpr unsigned kPartsPerProtocol = kVids / kPartVids;
  static constexpr unsigned kParts = kProtocols * kPartsPerProtocol;
  vlan_group() noexcept {
    dispose = [](rcubatch::retire_node* self) noexcept { delete static_cast<vlan_group*>(self); };
  }
  ~vlan_group() {
    for (auto& p : parts_) delete p.load(std::memory_order_relaxed);
  }
  vlan_group(const vlan_group&) = delete;
  vlan_group& operator=(const vlan_group&) = delete;

  /// Requires: a read-side section (or the writer lock).
  net_device* find(bool protocol_8021ad, std::uint16_t vid) const noexcept {
    const part* p = parts_[part_index(protocol_8021ad, vid)].load(std::memory_order_acquire);
    return p == nullptr ? nullptr : (*p)[vid % kPartVids].load(std::memory_order_acquire);
  }

  // Writer lock.
  /// Allocates the part holding (protocol, vid) if it has none. Throws: std::bad_alloc (nothing changed).
  void prealloc(bool protocol_8021ad, std::uint16_t vid);
  /// Requires: prealloc of `vlan`'s protocol and VID done.
  void attach(net_device& vlan) noexcept;
  void detach(net_device& vlan) noexcept;
  bool empty() const noexcept { return members_.empty(); }
  std::size_t size() const noexcept { return members_.size(); }
  template <class F>
  void for_each_member(F&& f) {
    for (vlan_link& l : members_) f(*l.self);
  }

 private:
  using part = std::array<std::atomic<net_device*>, kPartVids>;
  static constexpr unsigned part_index(bool protocol_8021ad, std::uint16_t vid) noexcept {
    return (protocol_8021ad ? kPartsPerProtocol : 0) + vid / kPartVids;
  }
  std::array<std::atomic<part*>, kParts> parts_{};  // parts live until the group is freed
  // The vlans in creation order, so the cascade is O(vlans), not a scan of 4096 slots.
  boost::intrusive::list<vlan_link, boost::intrusive::member_hook<vlan_link, boost::intrusive::list_member_hook<>,
                                                                   &vlan_link::group_hook>>
      members_;
};

namespace vlan {

/// Empty when `vid` can be added on `lower`; else the error message (vlan_newlink's checks).
std::string check_newlink(const net_device& lower, bool protocol_8021ad, long vid);
/// The vlans on `lower` (for NETDEV_UP/DOWN propagation, vlan_device_event).
std::vector<net_device*> uppers(net_device& lower);
/// ndo_init: the vlan's link state (VID; upper_device::bind to the lower device).
/// Before the device is published, so a reader that finds it sees a complete `link`.
void init(net_device& vlan, net_device& lower, bool protocol_8021ad, std::uint16_t vid);
/// After publication: makes the vlan reachable from its lower device (the VID slot).
void attach(net_device& vlan) noexcept;
/// Uninit hook: clears the slot; the last vlan retires the group. Returns true (unlinked).
bool uninit(net_device& vlan, rcubatch::batch& batch) noexcept;
/// The vlans on `lower`, for the legacy one-device-at-a-time path.
std::vector<net_device*> dependents(net_device& lower);

/// NETDEV_UNREGISTER of a lower device: every vlan on it joins the batch.
class cascade final : public netdev_notifier {
 public:
  void on_event(const netdev_event& e) noexcept override;
};

}  // namespace vlan
}  // namespace netdev
