// netdev/grace_periods.hpp — the registry's grace periods, as flavor-agnostic link code sees them.
//
// The registry is a template over the liburcu flavor (netsim --flavor picks one at run time), but
// link types are plain code. A sub-component that must wait before reusing memory reaches the
// registry's rcubatch::grace_domain<Flavor> through this interface. (The running batch needs no such
// interface: rcubatch::batch is one type whatever the flavor, so hooks take it directly.)
#pragma once

namespace netdev {

struct net_device;

class grace_periods {
 public:
  /// A grace period unless `dev` is being dismantled by a batch, whose own GP covers it
  /// (rcubatch::synchronize_unless_dismantling). Returns true when it waited.
  virtual bool synchronize_unless_dismantling(const net_device& dev) noexcept = 0;

 protected:
  ~grace_periods() = default;
};

}  // namespace netdev
