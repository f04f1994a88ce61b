// rcubatch/detail/reclaim_slots.hpp — async_unregister's queue slots: the set of queues that
// submits fill (current), the ones batches run on, and the batch engine each slot keeps.
//
// A slot is one set of queues (one per policy of the registry) and the per-request data of its
// requests (a generation). Submits fill the current slot under the writer lock; a batch takes
// it whole — the next free slot becomes current — and runs its engine (rollback_many's, with
// the registry's policies minus validate: submitted_lane.hpp) on it. The engine lives in the
// slot, not on the runner's stack, so that a batch whose drain finds held objects can stay
// parked there, in the lot (reclaim_lot.hpp), while its runner goes on: so there may be more
// than two slots, one per parked batch. Each slot's queues tell the reclaimer when another batch
// takes one of their objects over (takeover_listener, reclaim_protocol.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "rcubatch/async_types.hpp"
#include "rcubatch/batch_stats.hpp"
#include "rcubatch/detail/latency_histogram.hpp"
#include "rcubatch/detail/submitted_lane.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/registry.hpp"
#include "rcubatch/rollback_many.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch::detail {

/// The generation (reclaim_generation::id, unique per process) this thread last submitted to: a
/// repeat submit into the same batch skips the distinct-threads set, whose insert (hash + node
/// allocation) was ~10 % of a submit's instructions (callgrind, issue 24).
inline thread_local std::uint64_t t_last_submit_generation = 0;
inline std::atomic<std::uint64_t> g_next_generation_id{1};

/// The per-request data of the requests pending in one slot (request i is ticket first + i).
/// Written by submits under the writer lock; taken whole by the batch that takes the slot.
struct reclaim_generation {
  std::vector<stamp_clock::rep> submit_stamps;  // request i's submit (latency_histogram.hpp)
  std::vector<const registrable_base*> objects;  // request i's object (ticket first + i)
  std::unordered_set<std::thread::id> threads;
  std::uint64_t id = 0;  // from g_next_generation_id when it becomes current_ (open_generation)
  std::size_t bytes = 0;
  std::optional<gp_cookie> unlisted_before;  // taken after the last submit's unlist
};

template <class Registry>
class reclaim_slots;

/// The slots of one reclaimer over basic_registry<Flavor, Lockable, Policies...>. Requires: the
/// registry's writer lock for every member but the constructor.
template <class Flavor, class Lockable, class... Policies>
class reclaim_slots<basic_registry<Flavor, Lockable, Policies...>> {
  using registry_type = basic_registry<Flavor, Lockable, Policies...>;
  template <std::size_t K>
  using policy_at = std::tuple_element_t<K, std::tuple<Policies...>>;
  template <std::size_t K>
  using object_at = typename policy_at<K>::object_type;
  template <std::size_t K>
  using submitted_ref = lane_ref<object_at<K>, submitted_lane<policy_at<K>, object_at<K>>>;
  template <class Seq>
  struct engine_of;
  template <std::size_t... K>
  struct engine_of<std::index_sequence<K...>> {
    using type = engine_for<Flavor, submitted_ref<K>...>;
  };
  using engine_type = typename engine_of<std::index_sequence_for<Policies...>>::type;
  using lane_policies = std::tuple<submitted_lane<Policies, typename Policies::object_type>...>;
  using thread_flavors = thread_flavors_t<Flavor, Policies...>;

 public:
  using pending_queues = std::tuple<unreg_queue<typename Policies::object_type>...>;

  /// One set of queues and its requests: the current one (submits), or one a batch runs on.
  struct slot : boost::intrusive::list_base_hook<> {
    explicit slot(lane_policies l) : lanes(l) {}
    pending_queues queues;
    reclaim_generation requests;
    bool busy = false;                  // a batch runs on it, or is parked on it (writer lock)
    lane_policies lanes;                // the registry's policies, without validate
    std::optional<engine_type> engine;  // the batch running or parked on it
    std::vector<std::uint64_t> held;    // parked: the tickets whose objects it holds, sorted (m_)
  };

  /// Two slots (the current one and the next), whose queues tell `listener` of take-overs.
  /// `registry` and `options` are kept by reference (the reclaimer's). Throws: std::bad_alloc.
  reclaim_slots(registry_type& registry, const async_options& options, takeover_listener& listener)
      : registry_(registry), options_(options), listener_(listener) {
    slots_.push_back(make_slot());
    slots_.push_back(make_slot());
  }

  /// The first slot (the constructor's current one).
  slot* front() noexcept { return slots_.front().get(); }

  /// A slot no batch runs on, other than `current` (a new one when every other is busy: batches
  /// parked). Throws: std::bad_alloc (nothing changed).
  slot* free_slot(const slot* current) {
    for (const auto& s : slots_)
      if (!s->busy && s.get() != current) return s.get();
    slots_.push_back(make_slot());
    return slots_.back().get();
  }

  /// Builds s's engine (it lives in the slot: a parked batch stays there) and runs the batch; its
  /// stats in `out`. False: it parked (the lock left released; `told(ctx)` at each last put).
  bool run(slot& s, const std::optional<gp_cookie>& unlisted_before, batch_stats& out, void (*told)(void*) noexcept,
           void* ctx) {
    return run(s, unlisted_before, out, told, ctx, std::index_sequence_for<Policies...>{});
  }

  /// The objects a slot holds: one per request unless another batch took some over (a cascade,
  /// an owned parent's batch) before this batch ran — legal (reclaim_protocol.hpp): that batch
  /// destroys them, and the tickets complete once they are destroyed (ticket_completion).
  static std::size_t queued_count(const slot& s) noexcept {
    return std::apply([](const auto&... q) { return (q.size() + ... + 0); }, s.queues);
  }

  /// Requires: `s`'s batch parked, not yet in the lot (nobody else walks its lanes). Records in
  /// s.held the tickets whose objects it still holds (request i of `g` is ticket after + 1 + i),
  /// sorted. An object the batch queued itself (a dependent) holds its parent, which is held
  /// too. Out of memory: diagnosed, and those tickets complete with the batch, before their
  /// objects are destroyed.
  static void note_parked_tickets(slot& s, const reclaim_generation& g, std::uint64_t after) noexcept {
    s.held.clear();
    try {
      std::vector<const registrable_base*> parked;
      s.engine->each_parked([&](registrable_base& r) { parked.push_back(&r); });
      std::sort(parked.begin(), parked.end());
      for (std::size_t i = 0; i < g.objects.size(); ++i)
        if (std::binary_search(parked.begin(), parked.end(), g.objects[i])) s.held.push_back(after + 1 + i);
    } catch (...) {
      s.held.clear();
      diagnose_noexcept(misuse_kind::queued_in_other_queue,
                        "async_unregister: out of memory recording the tickets of a parked batch: they "
                        "complete before their held objects are destroyed");
    }
  }

 private:
  /// A slot whose queues tell the listener when a batch takes one of their objects over.
  std::unique_ptr<slot> make_slot() {
    auto s = [this]<std::size_t... K>(std::index_sequence<K...>) {
      return std::make_unique<slot>(lane_policies(submitted_lane<policy_at<K>, object_at<K>>(
          registry_.template policy<policy_at<K>>())...));
    }(std::index_sequence_for<Policies...>{});
    std::apply([this](auto&... q) { (queue_access::set_takeover(queue_access::base(q), &listener_), ...); },
               s->queues);
    return s;
  }

  template <std::size_t... K>
  bool run(slot& s, const std::optional<gp_cookie>& unlisted_before, batch_stats& out, void (*told)(void*) noexcept,
           void* ctx, std::index_sequence<K...>) {
    const auto lock = writer_lock_ref::make<thread_flavors>(
        registry_.writer_lock(),
        lock_release_for(options_.unlock_during_waits, options_.hold_lock_through_drain));
    batch_context bctx(lock);
    bctx.unlisted_before = unlisted_before;
    auto refs = std::make_tuple(submitted_ref<K>{std::get<K>(s.queues), std::get<K>(s.lanes)}...);
    std::apply([&](auto&... r) { s.engine.emplace(registry_.domain(), options_.rollback, bctx, r...); }, refs);
    bool finished = true;
    if (s.engine->run_through_grace_periods()) finished = s.engine->run_after_grace_periods_or_park(told, ctx);
    out = s.engine->stats();
    return finished;
  }

  registry_type& registry_;
  const async_options& options_;
  takeover_listener& listener_;
  std::vector<std::unique_ptr<slot>> slots_;  // a batch runs on the one it took, busy until it ends
};

}  // namespace rcubatch::detail
