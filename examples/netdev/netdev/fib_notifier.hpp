// netdev/fib_notifier.hpp — the FIB's reaction to unregistering devices (fib_netdev_event).
//
// Per device (NETDEV_UNREGISTER): unlink and retire that device's routes — O(its routes), and mark
// the FIB dirty. Per batch (NETDEV_UNREGISTER_BATCH): the one container-wide step, a sweep
// of the FIBs that lost routes. A batch of 10,000 devices therefore sweeps once, not 10,000 times.
#pragma once

#include <vector>

#include "netdev/netns.hpp"
#include "netdev/notifier.hpp"

namespace netdev {

class fib_notifier final : public netdev_notifier {
 public:
  void on_event(const netdev_event& e) noexcept override {
    if (e.kind == netdev_event_kind::unregister) {
      fib& f = e.dev->ns->routes();
      if (f.remove_routes_of(*e.dev, *e.batch) > 0 && !contains(&f)) dirty_.push_back(&f);
    } else if (e.kind == netdev_event_kind::unregister_batch) {
      for (fib* f : dirty_) f->sweep();
      dirty_.clear();
    }
  }

 private:
  bool contains(const fib* f) const noexcept {
    for (const fib* d : dirty_)
      if (d == f) return true;
    return false;
  }
  // A batch touches few namespaces (one, or those of one `netns del`): a linear set is enough.
  // push_back may throw only on OOM inside a noexcept hook, which terminates — acceptable here.
  std::vector<fib*> dirty_;  // writer lock
};

}  // namespace netdev
