// netdev/legacy_unreg.hpp — the 2.6.32 emulation (the lab half of the example, for the seed
// table's "before" column): each device alone, its dependents first, paying the grace periods
// 2.6.32 paid — 2 per device, +1 if it was UP (dev_deactivate), + the link type's own
// (link_ops::legacy_gps: +1 per vlan, unregister_vlan_dev), +1 per UP macvlan (hash_del, as
// 2.6.32 had no dismantle flag) — as real, counted domain.synchronize() calls.
#pragma once

#include <vector>

#include "netdev/link_ops.hpp"
#include "netdev/macvlan.hpp"
#include "netdev/unreg_strategy.hpp"
#include "netdev/vlan.hpp"

namespace netdev {

template <class Flavor>
class legacy_unreg final : public unreg_strategy<Flavor> {
 public:
  unreg_mode mode() const noexcept override { return unreg_mode::legacy; }
  bool lltx_allowed() const noexcept override { return false; }

  void unregister(rcubatch::unreg_queue<net_device>& q, const unreg_means<Flavor>& m) override {
    // Pop one at a time: unregistering a device frees its dependents, which may sit later in q.
    while (!q.empty()) {
      net_device& d = *q.begin();
      q.remove(d);
      unregister_tree(d, q, m);
    }
  }

 private:
  /// 2.6.32's rollback_registered(dev), dependents first (its vlan/macvlan notifiers unregistered
  /// each upper device alone, with all of that device's grace periods). Iterative — an explicit
  /// stack, depth-first, dependents in their list order — so no stack of devices, however built,
  /// can overflow the thread's stack.
  static void unregister_tree(net_device& root, rcubatch::unreg_queue<net_device>& pending, const unreg_means<Flavor>& m) {
    struct frame {
      net_device* dev;
      bool expanded;
    };
    std::vector<frame> stack{{&root, false}};
    while (!stack.empty()) {
      frame& top = stack.back();
      if (top.expanded) {
        net_device* d = top.dev;
        stack.pop_back();
        unregister_alone(*d, m);
        continue;
      }
      top.expanded = true;
      net_device* d = top.dev;  // `top` dies with the pushes below
      std::vector<net_device*> deps = vlan::dependents(*d);
      for (net_device* mv : macvlan::dependents(*d)) deps.push_back(mv);
      for (auto it = deps.rbegin(); it != deps.rend(); ++it) {
        pending.remove(**it);  // O(1); it goes now, with its lower device
        stack.push_back({*it, false});
      }
    }
  }

  /// One device, its dependents already gone.
  static void unregister_alone(net_device& d, const unreg_means<Flavor>& m) {
    // dev_close: dev_deactivate's grace period (+1 if UP). ndo_stop runs in the batch's close_many
    // below, where a macvlan's hash_del pays its own grace period (+1): 2.6.32 had no dismantle
    // flag, so the batch runs with mark_dismantle = false.
    if (d.is_up()) timed_synchronize(m.domain, m.counters);
    for (unsigned i = 0; i < ops_of(d).legacy_gps; ++i) {
      timed_synchronize(m.domain, m.counters);  // the type's own, e.g. unregister_vlan_dev's per-VID synchronize_net
      ++m.counters.legacy_extra_gps;
    }
    rcubatch::rollback_options legacy = m.options;
    legacy.mark_dismantle = false;
    const rcubatch::batch_stats s = rcubatch::unregister_one(d, device_policy<Flavor>(m.policy), m.domain, legacy);
    m.account(s);
    for (unsigned paid = s.grace_periods + s.gps_elided; paid < 2; ++paid) {
      timed_synchronize(m.domain, m.counters);  // 2.6.32 always ran both synchronize_net calls
      ++m.counters.legacy_extra_gps;
    }
  }
};

}  // namespace netdev
