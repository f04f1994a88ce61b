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
//   (compiled in tests/header_examples_test.cpp)
//
// Each skipped GP is counted in the batch's stats (dismantle_elided) and the domain's. The dismantle
// flag is not stored per object: it is derived through the queue the object sits in, and it turns
// on for the whole batch at once, when rollback_many starts running on the queues (before any
// close_many), and off for an object when it is released for destroy. A dependent sees it as soon
// as batch::queue moves it into its lane's queue. So the skip is safe wherever a hook calls it:
// before grace period #1 that GP covers the unlink; after it (notify, uninit), the elision itself
// tells the batch that GP #2 is needed.
#pragma once

#include "rcubatch/batch.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

/// Effects: waits for a grace period unless `owner` is being dismantled by a running batch; then
/// records the elision in the batch, which runs its own GP #2 if the elision came after GP #1.
/// Returns: true when it waited.
/// Requires: called from the thread running owner's batch (its hooks) when owner is dismantling;
/// not inside a read-side section (diagnosed).
/// Blocking: one grace period when owner is not dismantling.
template <class U, class Flavor>
bool synchronize_unless_dismantling(const U& owner, grace_domain<Flavor>& domain) {
  using T = registrable_type_t<U>;
  const detail::registrable_base& r = static_cast<const registrable<T>&>(static_cast<const T&>(owner));
  if (r.dismantling()) {
    domain.note_dismantle_elision();
    if (detail::lane_base* l = detail::registrable_access::lane(r))
      l->owner_batch().note_dismantle_elision();
    return false;
  }
  domain.synchronize();
  return true;
}

}  // namespace rcubatch
