// netdev/unreg_strategy.hpp — how a registry turns a queue of doomed devices into unregistrations:
// batched (2.6.33+, netdev/batched_unreg.hpp) or the 2.6.32 emulation (netdev/legacy_unreg.hpp).
// The registry holds one strategy and calls it wherever it unregisters; netsim picks it
// (`--mode batched|legacy`, netdev/unreg_strategies.hpp). A user copying the registry keeps batched_unreg.
#pragma once

#include <chrono>
#include <memory>

#include <rcubatch.hpp>

#include "netdev/net_device.hpp"
#include "netdev/registry_counters.hpp"
#include "netdev/unreg_mode.hpp"
#include "netdev/unreg_policy.hpp"

namespace netdev {

/// What a strategy unregisters with: the registry's policy, domain and options, and its counters.
template <class Flavor>
struct unreg_means {
  device_policy<Flavor> policy;
  rcubatch::grace_domain<Flavor>& domain;
  const rcubatch::rollback_options& options;
  registry_counters& counters;
  rcubatch::batch_stats& last_batch;

  /// Adds one rollback_many / unregister_one call's stats to the counters.
  void account(const rcubatch::batch_stats& s) const noexcept {
    ++counters.batches;
    counters.objects_unregistered += s.objects;
    counters.gps_elided += s.gps_elided;
    counters.dismantle_elided += s.dismantle_elided;
    counters.stall_reports += s.stall_reports;
    counters.note_gp_wait(s.time_of(rcubatch::phase::grace_period_1));
    counters.note_gp_wait(s.time_of(rcubatch::phase::grace_period_2));
    counters.batch_totals.add(s);
    last_batch = s;
  }
};

/// domain.synchronize(), its wait noted in counters (registry_counters::longest_gp_wait_ns).
template <class Flavor>
void timed_synchronize(rcubatch::grace_domain<Flavor>& domain, registry_counters& counters) noexcept {
  const auto start = std::chrono::steady_clock::now();
  domain.synchronize();
  counters.note_gp_wait(std::chrono::steady_clock::now() - start);
}

template <class Flavor>
class unreg_strategy {
 public:
  virtual ~unreg_strategy() = default;
  virtual unreg_mode mode() const noexcept = 0;
  /// Whether tunnels may transmit without the tx lock (2.6.32 had no LLTX).
  virtual bool lltx_allowed() const noexcept = 0;
  /// Unregisters and frees every device of `q` and every dependent the notifiers add; `q` is
  /// empty on return. Requires: the registry's writer lock; `q` not empty.
  /// Blocking: the grace periods and reference waits of the strategy's era.
  virtual void unregister(rcubatch::unreg_queue<net_device>& q, const unreg_means<Flavor>& m) = 0;
};

}  // namespace netdev
