// netdev/notifier.hpp — the netdevice notifier chain (register_netdevice_notifier).
//
// Subscribers react to device events; the unregister events carry the running batch so that a
// subscriber can take dependents into it (vlan, macvlan) or retire what it unlinks (FIB routes).
// `unregister` is sent once per device after grace period #1; `unregister_batch` once per batch,
// for container-wide work (the kernel's NETDEV_UNREGISTER_BATCH).
//
// Thread safety: subscribe and notify under the registry's writer lock.
// Cost: notify is O(subscribers); each subscriber must be O(1) or O(its own objects) per device.
#pragma once

#include <vector>

#include <rcubatch/batch.hpp>

namespace netdev {

struct net_device;

enum class netdev_event_kind { registered, up, going_down, down, unregister, unregister_batch };

struct netdev_event {
  netdev_event_kind kind;
  net_device* dev = nullptr;       // null for unregister_batch
  rcubatch::batch* batch = nullptr;  // set for unregister and unregister_batch
};

class netdev_notifier {
 public:
  virtual void on_event(const netdev_event& e) noexcept = 0;

 protected:
  ~netdev_notifier() = default;
};

class notifier_chain {
 public:
  void subscribe(netdev_notifier& n) { subscribers_.push_back(&n); }
  void notify(const netdev_event& e) noexcept {
    for (netdev_notifier* n : subscribers_) n->on_event(e);
  }

 private:
  std::vector<netdev_notifier*> subscribers_;  // writer lock
};

}  // namespace netdev
