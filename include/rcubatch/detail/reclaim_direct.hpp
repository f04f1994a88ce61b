// rcubatch/detail/reclaim_direct.hpp — async_unregister's direct path: a lone unregister() run
// at once, without a ticket.
//
// When no batch is running, nothing is pending and the bytes fit, a lone synchronous caller
// claims the run and charges its bytes in one critical section of the reclaimer's m_
// (claim_direct) and tears its object down at once, on its own thread: validated and unlisted by
// the batch itself with the registry's own policies — what registry::unregister runs — without a
// ticket or a submit's per-request bookkeeping (the generation's timestamps and thread set, a
// second lock round trip). So it pays what a plain unregister_one would, plus the claim and its
// release. Callers arriving meanwhile submit and wait; the first of them leads the next batch.
// If its drain is about to sleep on a holder of its object, it gives the run and its bytes up
// first (the batches behind it proceed) and waits for its own object alone.
//
// This is the batch itself and the two counts the reclaimer's statistics need; the claim, its
// release and the wake-ups stay with the reclaimer's state (reclaim_protocol.hpp, "Lone
// unregister").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "rcubatch/async_types.hpp"
#include "rcubatch/batch_stats.hpp"
#include "rcubatch/detail/reclaim_thread.hpp"
#include "rcubatch/registry.hpp"
#include "rcubatch/rollback_many.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch::detail {

template <class Registry>
class reclaim_direct;

/// The direct path of one reclaimer over basic_registry<Flavor, Lockable, Policies...>.
/// Requires: the counters under the reclaimer's m_.
template <class Flavor, class Lockable, class... Policies>
class reclaim_direct<basic_registry<Flavor, Lockable, Policies...>> {
  using registry_type = basic_registry<Flavor, Lockable, Policies...>;
  using pending_queues = std::tuple<unreg_queue<typename Policies::object_type>...>;
  using thread_flavors = thread_flavors_t<Flavor, Policies...>;
  template <std::size_t K>
  using policy_at = std::tuple_element_t<K, std::tuple<Policies...>>;

 public:
  /// `registry` and `options` are kept by reference (the reclaimer's).
  reclaim_direct(registry_type& registry, const async_options& options) noexcept
      : registry_(registry), options_(options) {}

  /// Requires: m_. A direct request was claimed (claim_direct).
  void claimed() noexcept { ++in_flight_; }
  /// Requires: m_. A claimed request ended; `ran`: its batch ran (not refused before or by it).
  void ended(bool ran) noexcept {
    --in_flight_;
    if (ran) ++completed_;
  }
  /// Requires: m_. `n` requests completed without a ticket elsewhere (the registry's combined
  /// calls, counted as this path's: combined_batch_ran).
  void completed_elsewhere(std::size_t n) noexcept { completed_ += n; }
  /// Requires: m_. Direct requests not yet destroyed (one holds the run; others gave it up on a holder).
  std::size_t in_flight() const noexcept { return in_flight_; }
  /// Requires: m_. Requests completed without a ticket.
  std::uint64_t completed() const noexcept { return completed_; }

  /// Requires: the caller claimed the run (claim_direct). One batch of t (and the dependents its
  /// hooks queue), validated and unlisted by the batch itself with the registry's own policies,
  /// under the reclaimer's rollback and lock options and its running-batch mark (`reclaimer`: a
  /// destroy may submit). `release()`: once at most, when the drain is about to sleep on a holder
  /// (after the user's own before_sleep). Returns nullopt when t was refused before the batch
  /// (not registered, already going away, another queue: diagnosed by the queue or the
  /// registry), else the batch's stats (`refused`: a misuse under report, nothing changed).
  /// Throws: what validate or a misuse under throw_error throws.
  template <std::size_t k, class T, class Release>
  std::optional<batch_stats> run(T& t, const void* reclaimer, Release& release) {
    std::unique_lock writer(registry_.writer_lock());  // offline while waiting under qsbr
    pending_queues q;
    if (!std::get<k>(q).push(t)) return std::nullopt;  // not registered, already going away: diagnosed there
    if (!registry_.admit_queued(std::get<k>(q), t, "async_unregister::unregister")) return std::nullopt;  // diagnosed
    const running_batch_mark mark(reclaimer);
    return run_lanes_with_registry_policies(q, release, std::index_sequence_for<Policies...>{});
  }

 private:
  /// Requires: the writer lock. A batch of q whose lanes are the registry's own policies
  /// (validate and unlist run in the batch, as registry::unregister's), with the reclaimer's options.
  template <class Release, std::size_t... K>
  batch_stats run_lanes_with_registry_policies(pending_queues& q, Release& release, std::index_sequence<K...>) {
    const auto lock = writer_lock_ref::make<thread_flavors>(
        registry_.writer_lock(),
        lock_release_for(options_.unlock_during_waits, options_.hold_lock_through_drain));
    auto specs = std::make_tuple(lane(std::get<K>(q), registry_.template policy<policy_at<K>>())...);
    rollback_options rollback = options_.rollback;  // a held object keeps only its own caller waiting
    rollback.drain.before_sleep = [this, &release] {
      if (options_.rollback.drain.before_sleep) options_.rollback.drain.before_sleep();
      release();
    };
    return run_specs(registry_.domain(), rollback, batch_context(lock), std::get<K>(specs)...);
  }

  registry_type& registry_;
  const async_options& options_;
  std::size_t in_flight_ = 0;    // claimed requests not yet destroyed (under m_)
  std::uint64_t completed_ = 0;  // requests completed without a ticket (under m_)
};

}  // namespace rcubatch::detail
