// rcubatch/dismantle.hpp — letting a sub-component skip its own grace period during a batch.
//
// A sub-component that unlinks something readers can reach normally waits for a grace period
// before freeing it. When its owner is being dismantled by a batch, that wait is redundant: the
// batch's own grace period comes later and covers it (the kernel's macvlan_hash_del(vlan,
// !dev->dismantle)). Objects that survive — an address change, a move — still wait.
//
//   void macvlan_port::remove_mac(macvlan& m) {
//     hash_.unlink(m.mac_node);
//     rcubatch::synchronize_unless_dismantling(m, domain_);   // free wait during a batch
//   }
//
// Each skipped GP is counted in the batch's stats (dismantle_elided) and the domain's.
#pragma once

#include "rcubatch/batch.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

/// Waits for a grace period unless `owner` is being dismantled by a running batch.
/// Returns true when it waited. Requires: not inside a read-side section (diagnosed).
template <class T, class Flavor>
bool synchronize_unless_dismantling(const registrable<T>& owner, grace_domain<Flavor>& domain) {
  if (owner.dismantling()) {
    domain.note_dismantle_elision();
    if (detail::batch_base* b = detail::registrable_access::batch(owner)) b->note_dismantle_elision();
    return false;
  }
  domain.synchronize();
  return true;
}

}  // namespace rcubatch
