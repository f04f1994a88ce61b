// rcubatch/registry_deferred.hpp — registry::unregister_many_deferred, the flush that returns
// after its grace periods: the batch's job (its queues and engine, on the heap until a
// deferred_destroy's thread has run its drain and destroys) and the call that starts it and hands
// it over. Out-of-class definitions of basic_registry's members, declared and documented in
// registry.hpp, which includes this file at its end (issue 35: one concept per header).
#pragma once

#include "rcubatch/registry.hpp"

namespace rcubatch {

/// One batch handed to a deferred_destroy: its queues and its engine, on the heap (the lanes
/// point into both) until the reclaimer's thread has finished it. Private to basic_registry
/// (declared there); defined here, with unregister_many_deferred, its one user.
template <class Flavor, class Lockable, class... Policies>
class basic_registry<Flavor, Lockable, Policies...>::flush_job final : public detail::deferred_job {
  basic_registry& registry_;

 public:
  /// Effects: an empty job of registry r: its queues empty, no engine yet.
  explicit flush_job(basic_registry& r) : registry_(r), q(r) {}
  /// Under the writer lock: builds the engine (the registry's lanes and options; the lock
  /// released for the drain, never held across the hand-off) and runs it through its grace
  /// periods. False when the batch ended there (nothing to hand over).
  bool start() { return start(std::index_sequence_for<Policies...>{}); }
  /// On the reclaimer's thread (deferred_job): the batch's drain and destroys, `chunk` objects
  /// between two pauses (a quiescent state; a yield too if `yield`); adds them to the
  /// registry's counters. Returns the batch's final statistics.
  batch_stats run(std::size_t chunk, bool yield) noexcept override {
    detail::registrations_in<thread_flavors> registered;  // for the hooks and the drain's waits
    const batch_stats st = engine->run_after_grace_periods(
        true, detail::destroy_pause{chunk, yield ? &pause_and_yield : &pause, nullptr});
    registry_.batch_totals_.add(st);
    return st;
  }

  /// After start, before the hand-off (the caller's array is alive): a copy of `range` as the
  /// drain's order hint, kept with the job (deferred_options::copy_order_hint). No hint, or no
  /// memory for the copy: nothing (the batch is past its grace periods and must go on; a hint
  /// is only a prefetch).
  template <class Range>
  void keep_order_hint(Range& range) noexcept {
    const detail::order_hint h = order_hint_of(range);
    if (h.objects == nullptr) return;
    using element = std::ranges::range_value_t<std::remove_reference_t<Range>>;
    kept_hint_ = detail::mapped_array(h.size * sizeof(element));
    if (!kept_hint_) return;
    element* const copy = static_cast<element*>(kept_hint_.data());
    std::copy_n(std::ranges::data(range), h.size, copy);
    engine->set_order_hint({h.key, copy, h.size});
  }

  queues q;  ///< the batch's queues: filled under the writer lock by unregister_many_deferred
  /// The batch's engine type: one lane per policy, on the registry's flavor.
  using engine_type = detail::engine_for<
      Flavor, detail::lane_ref<typename Policies::object_type, Policies>...>;
  std::optional<engine_type> engine;  ///< built by start(), under the writer lock

 private:
  detail::mapped_array kept_hint_;  // keep_order_hint's copy, for the drain

  template <std::size_t... K>
  bool start(std::index_sequence<K...>) {
    const auto lock = detail::writer_lock_ref::make<thread_flavors>(
        registry_.mutex_, registry_.options_.unlock_during_waits ? detail::lock_release::grace_periods
                                                                 : detail::lock_release::drain_only);
    detail::batch_context ctx(lock);
    ctx.order = q.order_;  // the caller's array: the push, unlist and uninit passes prefetch through it
    auto refs = std::make_tuple(detail::lane_ref<object_at<K>, std::tuple_element_t<K, std::tuple<Policies...>>>{
        std::get<K>(q.q_), std::get<K>(registry_.policies_)}...);
    std::apply([&](auto&... r) { engine.emplace(*registry_.domain_, registry_.options_.rollback, ctx, r...); }, refs);
    const bool more = engine->run_through_grace_periods();
    engine->set_order_hint();  // the drain runs after the call returns, when the caller's array may be gone
    return more;
  }
  /// Between chunks of the destroy pass, on the reclaimer's thread: a quiescent state in each
  /// qsbr flavor it is online in (a long pass would hold up every grace period otherwise).
  static void pause(void*) noexcept { detail::quiescent_in(std::type_identity<thread_flavors>{}); }
  /// The same, and its core to the other threads (deferred_options::yield_between_chunks).
  static void pause_and_yield(void*) noexcept {
    pause(nullptr);
    std::this_thread::yield();
  }
};

template <class Flavor, class Lockable, class... Policies>
template <class Range>
flush_ticket basic_registry<Flavor, Lockable, Policies...>::unregister_many_deferred(Range&& objects, deferred_destroy& reclaimer) {
  if (!outside_read_section("unregister_many_deferred") || !lock_not_held("registry::unregister_many_deferred")) {
    batch_stats refused;
    refused.refused = true;
    return flush_ticket(refused);
  }
  auto job = std::make_unique<flush_job>(*this);
  auto state = std::make_shared<detail::flush_state>();
  state->wait_fn = &detail::flush_state::wait_offline<thread_flavors>;
  {
    std::unique_lock lock(mutex_);
    // The hint (unregister_many's Cost) for the passes before the return only: flush_job::start
    // drops it before the hand-off, since the drain runs when `objects` may be gone.
    job->q.order_ = order_hint_of(objects);
    push_all(job->q, objects);
    if (job->q.refused_ > 0 && job->q.size() == 0) {
      batch_stats refused;
      refused.refused = true;
      return flush_ticket(refused);
    }
    if (!job->start()) {  // nothing queued (or refused in a read section): done here
      batch_totals_.add(job->engine->stats());
      return flush_ticket(job->engine->stats());
    }
    lock.release();             // the batch's own lock ref releases it now, on this thread
    job->engine->hand_off_lock();
  }
  if (reclaimer.options().copy_order_hint) job->keep_order_hint(objects);
  state->at_handoff = job->engine->stats();
  job->objects = state->at_handoff.objects;
  job->state = state;
  reclaimer.submit<thread_flavors>(std::move(job));
  return flush_ticket(std::move(state));
}

}  // namespace rcubatch
