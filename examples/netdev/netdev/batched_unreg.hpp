// netdev/batched_unreg.hpp — 2.6.33+'s unregister_netdevice_many: the whole queue (and every
// dependent the notifiers add) in one rcubatch::rollback_many, ≤ 2 grace periods per command.
#pragma once

#include "netdev/unreg_strategy.hpp"

namespace netdev {

template <class Flavor>
class batched_unreg final : public unreg_strategy<Flavor> {
 public:
  unreg_mode mode() const noexcept override { return unreg_mode::batched; }
  bool lltx_allowed() const noexcept override { return true; }
  void unregister(rcubatch::unreg_queue<net_device>& q, const unreg_means<Flavor>& m) override {
    m.account(rcubatch::rollback_many(q, device_policy<Flavor>(m.policy), m.domain, m.options));
  }
};

}  // namespace netdev
