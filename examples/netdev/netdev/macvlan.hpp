// netdev/macvlan.hpp — macvlans: a port per lower device with an RCU hash of MACs (receive demux).
//
// A macvlan is hashed while UP. Closing it unhashes it and must wait a grace period before the MAC
// slot may be reused — unless the device is being dismantled by a batch, whose own grace period
// comes later and covers it: rcubatch::synchronize_unless_dismantling (seed 002, the kernel's
// macvlan_hash_del(vlan, !dev->dismantle)). When the lower device goes, `cascade` takes all its
// macvlans into the batch; the port is retired into the batch that removes its last macvlan.
#pragma once

#include <string>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "netdev/net_device.hpp"
#include "netdev/grace_periods.hpp"
#include "netdev/notifier.hpp"

namespace netdev {

/// A MAC's bucket: its six bytes, mixed (the index picks buckets from the low bits).
struct mac_hash {
  unsigned long operator()(const mac_address& m) const noexcept;
};

class macvlan_port : public rcubatch::retire_node {
 public:
  /// Requires: `flavor` outlives the port.
  explicit macvlan_port(const index_flavor* flavor)
      : by_mac_(*flavor, rcubatch::hlist_options{.initial_buckets = 16, .min_buckets = 16}) {
    dispose = [](rcubatch::retire_node* self) noexcept { delete static_cast<macvlan_port*>(self); };
  }

  /// Receive demux. Requires: a read-side section.
  net_device* lookup(const mac_address& mac) const noexcept;

  // Writer lock.
  void attach(net_device& mv) noexcept { members_.push_back(std::get<macvlan_link>(mv.link)); }
  void detach(net_device& mv) noexcept;
  void hash_add(net_device& mv);
  /// Unhashes `mv`; waits a grace period unless it is being dismantled. Returns true if it waited.
  bool hash_del(net_device& mv, grace_periods& gps) noexcept;
  bool empty() const noexcept { return members_.empty(); }
  /// macvlan_passthru(port): its macvlan is in passthru mode (then it is the only one: newlink
  /// refuses a second, so checking the first member is enough).
  bool passthru() const noexcept { return !members_.empty() && members_.front().mode == macvlan_mode::passthru; }
  std::size_t hashed() const noexcept { return by_mac_.size(); }
  template <class F>
  void for_each_member(F&& f) {
    for (macvlan_link& l : members_) f(*l.self);
  }

 private:
  // Writer-serialized hash chains (the writer lock), as macvlan's vlan_hash under RTNL.
  rcubatch::hlist_index<net_device, &net_device::mac_hook, rcubatch::key_member<&net_device::mac>, index_flavor, mac_hash>
      by_mac_;
  boost::intrusive::list<macvlan_link, boost::intrusive::member_hook<macvlan_link, boost::intrusive::list_member_hook<>,
                                                                      &macvlan_link::port_hook>>
      members_;
};

namespace macvlan {

std::string check_newlink(const net_device& lower);
/// ndo_init: the macvlan's link state (its port; upper_device::bind to the lower). Before publication.
void init(net_device& mv, net_device& lower, const index_flavor* flavor);
/// After publication: joins (or creates) the lower device's port.
void attach(net_device& mv) noexcept;
void open(net_device& mv);
/// ndo_stop: unhash, then a grace period unless dismantling.
void stop(net_device& mv, grace_periods& gps) noexcept;
bool uninit(net_device& mv, rcubatch::batch& batch) noexcept;
std::vector<net_device*> dependents(net_device& lower);

class cascade final : public netdev_notifier {
 public:
  void on_event(const netdev_event& e) noexcept override;
};

}  // namespace macvlan
}  // namespace netdev
