// netdev/unreg_policy.hpp — the rcubatch policy of the netdev registry: the part a user copies.
//
// rcubatch::rollback_many(queue, policy, domain) (and unregister_one, for the legacy path) runs
// these hooks in the order Linux's unregister_netdevice_many runs its steps; the library supplies
// the grace periods between them, skips those already elapsed, and waits for the holders' refs.
//
//   hook          kernel step it stands for
//   close_many    dev_close_many: take every UP device of the round down at once
//   unlist        unlist_netdevice: remove from the name/index hashes and the device list
//                 — then grace period #1 (the library's), for readers of the primary indexes
//   notify        the NETDEV_UNREGISTER notifier chain, once per device (vlan/macvlan cascades
//                 queue their uppers into the same batch here)
//   batch_notify  NETDEV_UNREGISTER_BATCH, once per batch
//   uninit        ndo_uninit: unlink from the link type's own tables; returns whether readers
//                 could reach anything unlinked — if none did, grace period #2 is skipped
//   (library)     netdev_run_todo / netdev_wait_allrefs_any: wait for every holder's reference
//   destroy       free_netdev (with the link type's destructor: drop the lower device's ref)
//   name          the device's name, for the library's stall reports ("waiting for %s")
//
// A registry of another kind of object keeps the same shape: one hook per step, each touching
// only its own structures; the batch& parameter lets a notifier add dependents to the batch.
#pragma once

#include <string_view>

#include <rcubatch.hpp>
#include <rcubatch/batch.hpp>

#include "netdev/link_ops.hpp"
#include "netdev/net_device.hpp"
#include "netdev/netns.hpp"
#include "netdev/notifier.hpp"

namespace netdev {

template <class Flavor>
class registry;

/// The policy rollback_many / unregister_one call for a registry<Flavor>'s devices.
/// Requires: run under the registry's writer lock (the library's contract for policies).
template <class Flavor>
struct device_policy {
  registry<Flavor>& r;

  /// Phase 1, once per round. Every device here is dismantling, so closing skips both the
  /// dev_deactivate grace period (v3.0's dev_deactivate_many) and the macvlan hash_del one.
  void close_many(rcubatch::object_range<net_device> devices) noexcept {
    for (net_device& d : devices)
      if (d.is_up()) r.stop_device(d);
  }
  void unlist(net_device& d) noexcept {
    rcubatch::read_guard<Flavor> section;  // one inline read lock for the list and both hashes
    d.ns->unpublish(d);
  }
  void notify(net_device& d, rcubatch::batch& b) noexcept {
    r.notifiers_.notify({netdev_event_kind::unregister, &d, &b});
  }
  void batch_notify(rcubatch::batch& b) noexcept {
    r.notifiers_.notify({netdev_event_kind::unregister_batch, nullptr, &b});
  }
  /// ndo_uninit: unlink from the link type's secondary structures. Returns whether anything
  /// readers can reach was unlinked, so a batch of plain dummies skips grace period #2.
  bool uninit(net_device& d, rcubatch::batch& b) noexcept {
    auto hook = ops_of(d).uninit;
    return hook != nullptr && hook(d, b);
  }
  void destroy(net_device* d) noexcept {
    if (auto destructor = ops_of(*d).destructor) destructor(*d);
    delete d;
  }
  std::string_view name(const net_device& d) const noexcept { return d.name; }
};

}  // namespace netdev
