// netdev/unreg_context.hpp — what flavor-agnostic code sees of the registry's RCU machinery.
//
// The registry is a template over the liburcu flavor (netsim --flavor picks one at run time), but
// link types, the FIB and the notifier subscribers are plain code. They reach the running batch
// and the grace-period domain through these two small interfaces, which registry<Flavor>
// implements by forwarding to rcubatch::batch<net_device, Flavor> and rcubatch::grace_domain<Flavor>.
#pragma once

#include <rcubatch/batch.hpp>

namespace netdev {

struct net_device;

/// The running unregister batch (rcubatch::batch), as notifier subscribers and uninit hooks see it.
class unreg_context {
 public:
  /// A dependent joins this batch (a vlan of a dying lower device). O(1), idempotent.
  virtual bool queue(net_device& dependent) noexcept = 0;
  /// `node` is freed after the batch's last grace period. Requires: already unlinked.
  virtual void retire(rcubatch::retire_node& node) noexcept = 0;

 protected:
  ~unreg_context() = default;
};

/// The registry's grace periods, for sub-components that must wait before reusing memory.
class grace_periods {
 public:
  /// A grace period unless `dev` is being dismantled by a batch, whose own GP covers it
  /// (rcubatch::synchronize_unless_dismantling). Returns true when it waited.
  virtual bool synchronize_unless_dismantling(const net_device& dev) noexcept = 0;

 protected:
  ~grace_periods() = default;
};

}  // namespace netdev
