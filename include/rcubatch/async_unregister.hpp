// rcubatch/async_unregister.hpp — unregister without waiting: tickets, combined batches, a memory budget.
//
//   rcubatch::registry<sessions_policy> sessions;
//   rcubatch::async_unregister reclaimer(sessions);     // a background reclaimer thread
//   sessions.add(*s);                                   // registered as usual
//   sessions.add(*s2);
//   auto ticket = reclaimer.submit(*s);                 // unlisted now; never waits for a GP
//   reclaimer.poll(ticket);                             // destroyed yet? (never blocks)
//   reclaimer.wait(ticket);                             // until *s is destroyed
//   reclaimer.unregister(*s2);                          // submit + wait: callers combine
//   reclaimer.drain();                                  // everything submitted so far is gone
//   (compiled in tests/header_examples_test.cpp)
//
// What it is: an object beside a registry (it keeps a reference; one per registry) that takes
// the registry's objects one at a time from any number of threads and tears them down in
// combined batches: one rollback_many with a lane per policy, ≤ 2 grace periods per batch
// whatever the number of requests and threads in it.
//
// submit(obj), under the registry's writer lock: the policy's validate (may throw: nothing
// changed), the budget's charge and the request's record, then its unlist — lookups miss obj
// from the call on — and a ticket returned. The reclaimer's own mutex is not taken, except by
// the submit that makes a batch due or starts the age timer (issue 35: reclaim_protocol.hpp). It never waits for a grace period (it may wait for the writer lock, and
// for the memory budget, below). Everything else runs later, in a batch, on the reclaimer:
// close_many, grace period #1, notify (cascades through batch::queue, any lane), batch_notify,
// uninit (retire, retire_with), grace period #2 if anything was unlinked after #1, the ref
// drain, destroy — the phases and guarantees of rollback_many.hpp, with the dismantle flag set
// for every object of the batch from the batch's start (not from submit). The objects were
// unlisted at submit, so no batch unlists them again; dependents queued by notify are unlisted by
// the batch as usual (a mark on each submitted object tells the two apart: registrable.hpp).
// The batch releases the writer lock during its waits (unlock_during_waits, on by default in
// async_options): submitters are not held up by its grace periods. With it off, the lock is still
// released for the ref drain and destroy unless hold_lock_through_drain (registry.hpp's Locking).
//
// Who runs a batch. Callers that wait — wait(), unregister(), drain() — lead, in either mode
// (liburcu's synchronize_rcu combines its waiters the same way, with no timer): if no batch is
// running and their request was not taken yet, they run the batch of everything pending at once,
// on their own thread; if one is running, they wait for it, and the first of them to see it end
// leads the next one, which takes every request that arrived meanwhile. So W synchronous callers
// combine into batches of up to W requests, and callers that resubmit as soon as they return —
// a closed loop — join the next batch instead of the one after (a gather: one yield, never a
// timer; detail/reclaim_waiters.hpp). A lone unregister() — no batch running, nothing pending —
// runs the batch of its object at once with the registry's own policies, without a ticket or
// per-request bookkeeping, so it pays what a plain unregister_one would (detail/reclaim_direct.hpp).
// Requests nobody waits for (submit only) are run by the background thread the object
// owns (reclaim_mode::background_thread) or, in reclaim_mode::manual, by run_now(), run_if_due()
// and budget-blocked submits, when a batch is due. A batch's hooks therefore run on whichever
// thread leads it. Under qsbr the background thread is registered with the flavor and goes
// offline whenever it sleeps or waits for a lock; so do callers while they block (wait, budget,
// locks): a qsbr writer's synchronize never waits for them.
//
// Attached to its registry (async_options::combine_registry_unregister, off by default): the
// constructor attaches this reclaimer to the registry's combining gate (combining.hpp) as its
// listener, which turns the gate on while attached: the registry's own registry::unregister(obj),
// try_unregister(obj) and try_unregister<I>(key) from many threads then share batches of the
// registry (registry.hpp, "Combining") — one path, the registry's, with registry_options; the
// reclaimer only counts them: each batch of them is a batch in stats() and its calls that queued
// an object are requests that took no ticket (as a lone unregister's), without latency samples and
// without on_batch (the gate calls it under its mutex). They are not charged to the budget: a
// synchronous caller holds at most its own object unlisted. Submits, waits and this object's own
// unregister are unchanged. The destructor detaches first (registry calls in flight go on without
// it: they never used it), then drains. At most one reclaimer per registry attaches: a second is
// misuse (attached_twice).
//
// When a batch is due (for requests nobody waits for): when the pending requests reach
// async_options::batch_count, their bytes batch_bytes, or the oldest request's age max_age — the
// age counted from the later of its submit and the end of the previous batch. Also at once when a
// submitter is blocked by the budget, and for drain().
//
// Pipelined grace periods: every object a batch starts with was unlisted at its submit, so when
// a grace period that began after the batch's last submit has already ended by the time the batch
// starts (typically the previous batch's #2, or another writer's), the batch skips its #1 —
// counted in batch_stats::gps_pipelined — unless a lane has close_many (which runs before #1 and
// may need it). Dependents queued by notify are still covered by #2; the ordering guarantees
// above do not change.
//
// Memory budget: each request is charged an estimate of its object's bytes — the policy's
// optional `std::size_t pending_bytes(const T&)` hook (checked by shape: a member of that name
// that cannot be called so is a compile error), sizeof(T) without one — from submit
// until its batch ends (destroyed), or parks (below: its held objects are their holders' then,
// so a holder's own submits never wait for its put). A submit that would take the charged total above
// async_options::budget_bytes blocks until enough batches end (over_budget::block), or is
// refused at once, nothing changed (over_budget::refuse: an empty ticket). One request is
// always admitted when nothing is charged, so an object larger than the budget cannot deadlock;
// submits made from a hook of this reclaimer's own batch (destroy) are never blocked. So the
// unlisted-but-not-destroyed memory stays ≤ budget_bytes + one object, whatever the producers'
// rate; the bookkeeping is bounded with it (per request: a timestamp) and
// the latency statistics are a fixed histogram (512 counters), not samples.
//
// Statistics (stats(), async_stats.hpp): per batch (async_batch_report, also given to
// async_options::on_batch): requests combined, distinct submitting threads, the batch's
// batch_stats; per reclaimer:
// requests, batches, grace periods, p50/p99/max request→destroy latency (to the end of the
// request's batch; a log2 histogram with 8 sub-buckets per octave: within 12.5 %; a submit is
// stamped with the CPU's cycle counter where there is one, x86, turned into nanoseconds against
// this object's own steady_clock readings: detail/latency_histogram.hpp), pending
// count/bytes now and their high-water marks, submitters blocked by the budget, refusals.
//
// try_submit(obj) and try_submit<Index>(key): the same, for requests that may race another
// thread's delete of the same object: a lost race is a result (already_unregistering, not_found),
// not misuse; by key, the lookup happens under the writer lock, so nobody touches freed memory.
//
// Take-over (issue 35). A submitted object waits in this reclaimer's queue, unlisted, with
// going_away() true and state() still registered; a submitted owned child stays in its parent's
// list. If another batch reaches it first — a cascade (batch::queue from a parent's notify), its
// owned parent's batch, this reclaimer's own batch of its parent — that batch takes it over and
// destroys it (it skips the unlist: the mark). Legal, not misuse; its ticket completes only once
// it is destroyed (the taking batch tells this reclaimer after the destroy: a node tied to the
// object, detail/reclaim_protocol.hpp). So a parent's batch never waits for a child's batch that
// may not run (a manual reclaimer nobody runs, a writer lock the parent's drain holds, the
// reclaimer's own next batch). A second delete of a submitted object (registry::try_unregister,
// try_submit) is a lost race: already_unregistering.
//
// Parking (the hand-back). A batch whose ref drain still finds objects held after its first pass
// and one flush (a packet queued to userspace) parks, and the batch ends — its run, its budget
// bytes (the held objects are their holders' now) and its callers are released, and the tickets
// of its objects already destroyed are done. The held objects wait in the reclaimer's lot, which
// one thread polls: the background thread, or in manual mode whichever caller runs batches next
// (wait, unregister, drain, run_now, run_if_due). No thread is started for a parked batch,
// however many park (as the kernel keeps a device waiting for its references on the todo list
// while the rest proceeds; detail/reclaim_lot.hpp). A lone unregister() of a held object (the direct path)
// waits for its own object on its own thread, but gives the run and its bytes up first. With
// hold_lock_through_drain a batch does not park: its drain keeps the writer lock, which every
// batch behind it needs anyway, until the last put.
//
// Tickets complete per object: a ticket is done once its object is destroyed (and no take-over
// holds its batch back: reclaim_protocol.hpp), whatever the tickets before it; poll and wait ask
// that. drain() waits until every ticket up to its start is done. The protocol:
// reclaim_protocol.hpp.
// Ordering: everything a submitter did before submit(obj) happens-before obj's destroy; obj's
// destroy happens-before the return of wait/poll == true/drain for its ticket.
//
// Misuse, diagnosed through misuse.hpp before anything changes (throw_error throws; report
// refuses: an empty ticket, false): submit of an object that is not registered (not_registered),
// submitted twice or already in a batch (already_unregistering), sitting in another queue
// (queued_in_other_queue), submit / wait / drain / unregister inside a read-side section of the
// flavor (blocking_in_read_section; a submit inside one not opened by a read_guard only when it
// would wait: submit's contract), poll / wait on an empty ticket, another reclaimer's ticket
// or one never issued (foreign_cookie; under report poll answers true and wait returns), an
// object registered in another registry (wrong_registry). A batch taking over a submitted object
// is not misuse (Take-over, above).
// Hooks run under the writer lock except destroy (which runs without it unless
// hold_lock_through_drain): a hook must not call this object's members, except submit() from
// destroy. wait, unregister, drain, run_now and run_if_due from any hook of this reclaimer's batch,
// or from on_batch on the background thread, are diagnosed (waits_for_own_batch: refused) instead
// of deadlocking; submit (or any of them) on a thread that holds the registry's writer lock — a
// hook before destroy, destroy under hold_lock_through_drain, code under writer_lock() — is
// diagnosed too (holds_writer_lock: refused). Under qsbr every blocking wait (writer lock,
// budget, tickets, the reclaimer's idle wait) is taken offline (detail/blocking.hpp).
//
// Thread safety: every member may be called concurrently from threads registered with the
// registry's flavor (and the indexes' flavor), except the destructor.
//
// Pieces in their own headers, included here: async_types.hpp (async_options, the ticket, the
// result), async_stats.hpp (async_stats, async_batch_report), detail/reclaim_protocol.hpp (who
// waits and who wakes whom; when a ticket completes), detail/reclaim_budget.hpp (the budget's
// arithmetic), detail/reclaim_waiters.hpp (the waiting callers, the gather),
// detail/reclaim_direct.hpp (a lone unregister's batch), detail/reclaim_slots.hpp (the queue
// sets and their batch engines), detail/reclaim_lot.hpp (the parked batches),
// detail/reclaim_thread.hpp (which reclaimer's batch this thread runs), detail/submitted_lane.hpp
// (the lane policy of a batch: the registry's, without validate), detail/latency_histogram.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rcubatch/async_stats.hpp"
#include "rcubatch/async_types.hpp"
#include "rcubatch/batch_stats.hpp"
#include "rcubatch/combining.hpp"
#include "rcubatch/detail/latency_histogram.hpp"
#include "rcubatch/detail/probe.hpp"
#include "rcubatch/detail/reclaim_budget.hpp"
#include "rcubatch/detail/reclaim_direct.hpp"
#include "rcubatch/detail/reclaim_lot.hpp"
#include "rcubatch/detail/reclaim_protocol.hpp"
#include "rcubatch/detail/reclaim_slots.hpp"
#include "rcubatch/detail/reclaim_thread.hpp"
#include "rcubatch/detail/reclaim_waiters.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/policy.hpp"
#include "rcubatch/read_guard.hpp"
#include "rcubatch/registry.hpp"
#include "rcubatch/rollback_many.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch {

/// An asynchronous unregister over a registry (see the file comment): declared for every
/// Registry above, defined for basic_registry<Flavor, Lockable, Policies...>.
template <class Flavor, class Lockable, class... Policies>
class async_unregister<basic_registry<Flavor, Lockable, Policies...>> final : private detail::takeover_listener,
                                                                             private combining_listener {
 public:
  using registry_type = basic_registry<Flavor, Lockable, Policies...>;  ///< the registry it unregisters from
  using flavor_type = Flavor;                                           ///< the registry's liburcu flavor
  using clock = std::chrono::steady_clock;                              ///< what ages and latencies are measured with

 private:
  static constexpr std::size_t kTypes = sizeof...(Policies);
  using slot_set = detail::reclaim_slots<registry_type>;  // the queue sets (reclaim_slots.hpp)
  using queue_slot = typename slot_set::slot;
  template <class U>
  static constexpr std::size_t slot_of() {
    using T = registrable_type_t<U>;
    constexpr std::size_t k = detail::position_of<T, typename Policies::object_type...>();
    static_assert(k < kTypes, "rcubatch::async_unregister: no policy of the registry handles the object's type");
    return k;
  }
  using generation = detail::reclaim_generation;  // one queue set's pending requests (reclaim_slots.hpp)
  template <std::size_t K>
  using policy_at = std::tuple_element_t<K, std::tuple<Policies...>>;
  template <std::size_t K>
  using object_at = typename policy_at<K>::object_type;
  // Checked by shape like every hook: a pending_bytes that cannot be called as
  // `std::size_t pending_bytes(const T&)` would otherwise be skipped silently, and the budget
  // would charge sizeof(T) instead.
  static_assert(((!detail::names_pending_bytes<Policies> ||
                  detail::has_pending_bytes<Policies, typename Policies::object_type>) && ...),
                "rcubatch::async_unregister: a policy's member `pending_bytes` cannot be called as "
                "`std::size_t pending_bytes(const T&)` with its object type T (take the object by const "
                "reference; return something convertible to std::size_t)");

 public:
  /// Effects: a reclaimer for `registry` (kept by reference: it must outlive this object); in
  /// background_thread mode starts its thread (registered with Flavor).
  /// With combine_registry_unregister, attaches to the registry (see the file comment).
  /// Requires: at most one async_unregister per registry; the thresholds are ≥ 1 (batch_count,
  /// batch_bytes; budget_bytes ≥ 1), else std::invalid_argument.
  /// Misuse (attached_twice): combine_registry_unregister on a registry another reclaimer is
  /// attached to — throw_error throws (nothing constructed, the other stays attached); under
  /// report this one is constructed unattached.
  /// Throws: std::invalid_argument as above; misuse_error as above; std::system_error if the
  /// thread cannot start (detached again first). Complexity: O(1). Blocking: never.
  explicit async_unregister(registry_type& registry, async_options options = {})
      : registry_(registry), options_(checked(std::move(options))), slots_(registry_, options_, *this) {
    current_ = slots_.front();
    open_generation(current_->requests, 0);
    if (options_.combine_registry_unregister) attach_to_registry();
    try {
      if (options_.mode == reclaim_mode::background_thread) thread_ = std::thread([this] { reclaimer_loop(); });
    } catch (...) {
      if (attached_) registry_.detach_combining_listener(*this);
      throw;
    }
  }
  async_unregister(const async_unregister&) = delete;
  async_unregister& operator=(const async_unregister&) = delete;

  /// Effects: detaches from the registry's gate if attached — the gate tells it nothing more;
  /// registry calls in flight go on without it (they never used it), and later ones combine only
  /// if registry_options::combining says so —, then drain() (every submitted object is
  /// destroyed), then stops the background thread.
  /// Requires: no other thread calls a member meanwhile or afterwards (the registry's calls may
  /// go on: see above); called outside read-side sections of Flavor (a destructor cannot refuse:
  /// drained anyway, after a report).
  /// Blocking: the gate's mutex (a batch's report), then until the pending batches ran (offline
  /// under qsbr). Throws: nothing.
  ~async_unregister() {
    if (attached_) registry_.detach_combining_listener(*this);
    drain_noexcept();
    {
      std::unique_lock lock(m_);
      // Objects taken over by other writers' batches: their nodes call back here after each
      // destroy (drain waited for those of its tickets; any other is still counted here). And
      // parked batches (their last puts call back here): drain waited for their tickets.
      while (completion_.takeovers_open() != 0 || !lot_.empty()) {
        if (polls_lot_here() && lot_.due(clock::now())) {
          poll_lot(lock);
          continue;
        }
        wait_for_lot(done_cv_, lock);
      }
      stop_ = true;
    }
    work_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// Requires: obj (a T of one of the registry's policies, or derived from it) is registered in
  /// this registry and was not submitted before; the caller is registered with Flavor (and the
  /// indexes' flavor), outside read-side sections, and not inside a hook of a running batch that
  /// holds the writer lock (destroy is fine).
  /// Effects: under the writer lock runs the policy's validate, charges obj's bytes against the
  /// budget, records the request and runs the policy's unlist (lookups miss obj from here on;
  /// obj.going_away() is true; an owned child stays in its parent's list: Take-over in the file
  /// comment), and returns its ticket; if the bytes do not fit, it releases the lock first and blocks or is
  /// refused (see the file comment), then tries again. obj is destroyed later, by a batch. Refused (empty ticket, nothing changed): over_budget::refuse and the budget full;
  /// misuse under misuse_policy::report.
  /// Misuse (blocking_in_read_section): inside a read_guard's section, always; inside a section
  /// opened with the flavor's own read_lock (no read_guard; only liburcu can tell, at a cost of
  /// ~22 instructions per call), only when the submit would wait — for the writer lock held by
  /// another thread, or for the budget — as that wait may be for this reader's grace period. A
  /// submit there that waits for nothing goes through: its object is destroyed by a batch after a
  /// grace period, which waits for this reader as for any.
  /// Throws: misuse_error (throw_error) for the misuse above; what validate throws;
  /// std::bad_alloc — in each case nothing changed.
  /// Complexity: O(1) expected (a GP cookie snapshot, the policy's validate and unlist).
  /// Blocking: the writer lock (never held by a batch through a grace period unless
  /// unlock_during_waits is off); the budget under over_budget::block. Never a grace period.
  template <class U>
  [[gnu::flatten]] unregister_ticket submit(U& obj) {
    return submit_request(obj, false, false).ticket;
  }

  /// "Delete it unless it is already going away", for a caller that knows obj is alive (it holds
  /// a reference, or owns it until its destroy) but not whether another thread is deleting it.
  /// Requires, Effects, Blocking, Complexity: as submit. Returns: unregistered with the ticket;
  /// already_unregistering (nothing changed, no exception) when obj is already in a batch, a
  /// queue (submitted here before), or gone to its drain — a lost race; refused when the budget
  /// refused it (over_budget::refuse) or on misuse under report. Misuse, still diagnosed: obj
  /// never registered (not_registered), registered in another registry (wrong_registry), inside
  /// a read-side section, by the writer lock's holder. Throws: as submit.
  template <class U>
  [[gnu::flatten]] submit_result try_submit(U& obj) {
    return submit_request(obj, false, true);
  }

  /// Delete by key without waiting: the lookup and the submit happen under the writer lock, so
  /// two threads submitting (or deleting, registry::try_unregister) the same key race safely:
  /// exactly one gets unregistered, the other not_found, and neither touches freed memory.
  /// Requires: I is an index of one of the registry's policies with `T* find_locked(const K&)`
  /// (lfht_index); as submit otherwise. Effects: the object with that key, if any, is submitted
  /// as by submit. Returns: unregistered with its ticket, not_found (no object has that key: never
  /// added, or already unlisted by another writer), or refused (budget, misuse under report).
  /// Budget: the found object's bytes are charged with the request, under the lock. When they do
  /// not fit, the lock is released, they are charged ahead (blocking or refused: over_budget) and
  /// the lookup is made again; if it finds another object of other bytes, the charge is corrected
  /// to them (may pass the budget by that difference: one object).
  /// Throws, Blocking: as submit. Complexity: as submit, plus one lookup (two if the budget was full).
  template <class I, class K>
  submit_result try_submit(const K& key) {
    constexpr std::size_t k = slot_of<std::remove_pointer_t<decltype(registry_.template index<I>().find_locked(key))>>();
    submit_result r;
    r.status = unregister_status::refused;
    if (!outside_read_section("try_submit") || !writer_lock_not_held("try_submit")) return r;
    return submit_found<k>([&]() -> object_at<k>* { return registry_.template index<I>().find_locked(key); });
  }

 private:
  /// try_submit by key's body, for the object `find()` returns under the writer lock (nullptr:
  /// not_found).
  template <std::size_t k, class Find>
  submit_result submit_found(Find&& find) {
    using T = object_at<k>;
    std::size_t bytes = 0;
    return with_budget_retry(bytes, [&](bool reserved, bool& no_room) {
      T* t = find();
      if (t == nullptr) {
        if (reserved) unreserve(bytes);
        submit_result missing;
        missing.status = unregister_status::not_found;
        return missing;
      }
      const std::size_t found_bytes = bytes_of<k>(*t);
      if (reserved && found_bytes != bytes) recharge(bytes, found_bytes);
      bytes = found_bytes;
      return submit_locked<k>(*t, bytes, reserved, false, true, no_room);
    });
  }

  /// submit's body. `caller_waits`: the caller will wait for this request and lead its batch
  /// (unregister), so the background thread is not woken for it (a wake-up and a context switch
  /// per request cost a synchronous caller more than the batch's bookkeeping). `lost_race_is_result`:
  /// try_submit (an object already going away is a result, not misuse).
  /// The budget is charged under the writer lock, in the critical section of m_ that records the
  /// request (one round trip of m_ per submit; callgrind, issue 24: a separate reserve before the
  /// writer lock was a second one). Only when the budget is full does the caller leave the writer
  /// lock, block (or be refused) in reserve, and try again with its bytes charged ahead.
  /// Flattened (everything it calls inlined but the out-of-line cold paths): the submit is one
  /// function, without the calls and frames GCC otherwise leaves between its pieces (callgrind,
  /// issue 35).
  template <class U>
  [[gnu::flatten]] submit_result submit_request(U& obj, bool caller_waits, bool lost_race_is_result) {
    constexpr std::size_t k = slot_of<U>();
    using T = object_at<k>;
    T& t = static_cast<T&>(obj);
    submit_result r;
    r.status = unregister_status::refused;
    // A read_guard's section here, always; one the flavor's own read_lock opened, before the
    // submit would wait (lock_writer, submit_over_budget): outside_read_guard.
    if (!outside_read_guard("submit") || !writer_lock_not_held("submit")) return r;
    std::size_t bytes = bytes_of<k>(t);
    {
      // The first attempt, inline: nothing reserved yet, so nothing to release if it throws (the
      // retry loop's frame and handler cost every submit ~40 instructions; callgrind, issue 35).
      bool no_room = false;
      auto& writer = registry_.writer_lock();
      if (!lock_writer(writer, "submit")) return r;  // in a read-side section: diagnosed, not waited
      std::lock_guard lock(writer, std::adopt_lock);  // no unique_lock: its null and owns tests
      r = submit_locked<k>(t, bytes, false, caller_waits, lost_race_is_result, no_room);
      if (!no_room) [[likely]]
        return r;
    }
    return submit_over_budget<k>(t, bytes, caller_waits, lost_race_is_result);
  }

  /// Takes the writer lock for a submit, which checked that its thread does not hold it
  /// (writer_lock_not_held) and is in no read_guard (outside_read_guard): an uncontended
  /// try_lock first, without lock()'s second look at the holder (a thread-id read and compare
  /// per submit); when contended, lock_writer_waiting. Returns false, the lock not taken, when
  /// that diagnosed a read-side section (misuse under report).
  template <class Lock>
  bool lock_writer(Lock& lock, const char* what) {
    if constexpr (requires { { lock.try_lock() } -> std::convertible_to<bool>; }) {
      if (lock.try_lock()) [[likely]]
        return true;
    }
    return lock_writer_waiting(lock, what);
  }
  /// lock_writer's contended path, out of line: the full read-section check (the flavor's own:
  /// it would wait, maybe for this reader's grace period), then lock() (offline while waiting
  /// under qsbr, counted for yield_to_waiter).
  template <class Lock>
  [[gnu::noinline]] bool lock_writer_waiting(Lock& lock, const char* what) {
    if (!outside_read_section(what)) return false;
    lock.lock();
    return true;
  }

  /// submit_request after its first attempt found the budget full: out of line (rare).
  template <std::size_t k>
  [[gnu::noinline]] submit_result submit_over_budget(object_at<k>& t, std::size_t bytes, bool caller_waits,
                                                     bool lost_race_is_result) {
    // It may wait from here on (reserve, the writer lock): the full read-section check, as in
    // lock_writer (submit_request checked only for a read_guard's section).
    if (!outside_read_section("submit") || !reserve(bytes)) {  // misuse, or over_budget::refuse: nothing changed
      submit_result r;
      r.status = unregister_status::refused;
      return r;
    }
    return with_budget_retry(bytes, [&](bool, bool& no_room) {
      return submit_locked<k>(t, bytes, true, caller_waits, lost_race_is_result, no_room);
    }, true);
  }

  /// The budget loop (try_submit by key; submit_over_budget): `attempt(reserved, no_room)` under
  /// the writer lock; when it found the budget full (no_room, nothing changed), `bytes` are
  /// charged ahead by reserve without the lock (blocking, or refused: then attempt's refusal is
  /// the result) and it runs again with reserved set. A reservation is released if attempt throws
  /// (attempt releases it otherwise). `reserved`: charged ahead already.
  template <class Attempt>
  submit_result with_budget_retry(std::size_t& bytes, Attempt&& attempt, bool reserved = false) {
    for (;;) {
      submit_result r;
      bool no_room = false;
      try {
        std::unique_lock lock(registry_.writer_lock());  // offline while waiting under qsbr
        r = attempt(reserved, no_room);
        if (!no_room) return r;
      } catch (...) {
        if (reserved) unreserve(bytes);
        throw;
      }
      if (!reserve(bytes)) return r;  // over_budget::refuse: nothing changed
      reserved = true;
    }
  }

  /// Requires: the writer lock. Queues t, runs validate, charges `bytes` (unless `reserved`:
  /// charged ahead by reserve), records the request, runs unlist. `reserved` bytes are unreserved
  /// here when t is not submitted and nothing threw (on an exception, by the caller, once).
  /// Not `reserved` and the budget full (and not a submit from this reclaimer's own hook):
  /// nothing changed, `no_room` set — the caller blocks in reserve without the writer lock.
  template <std::size_t k>
  submit_result submit_locked(object_at<k>& t, std::size_t bytes, bool reserved, bool caller_waits,
                              bool lost_race_is_result, bool& no_room) {
    using T = object_at<k>;
    submit_result r;
    r.status = unregister_status::refused;
    // The first look at the budget, without m_ (see the charge below). An object larger than the
    // budget (admitted when nothing is charged) always takes reserve's path, exact under m_.
    if (!reserved && budget_.over(bytes) && detail::t_running_batch_of != this) {
      no_room = true;  // nothing changed, validate not run: the caller blocks or is refused, then retries
      return r;
    }
    unreg_queue<T>& q = std::get<k>(current_->queues);
    r.status = queue_checked<k>(t, q, lost_race_is_result);  // a misuse under throw_error: the caller unreserves
    if (r.status != unregister_status::unregistered) {
      if (reserved) unreserve(bytes);
      return r;
    }
    generation& g = current_->requests;
    try {
      if constexpr (detail::hooks_of<policy_at<k>, T>::has_validate)
        registry_.template policy<policy_at<k>>().validate(t);
      make_room_for_one(g);
    } catch (...) {
      q.remove(t);
      throw;
    }
    // --- nothing below throws ---
    // Unlisted from its indexes, but left in its owner's list (owned.hpp), if any: a parent's batch
    // that runs before this object's takes it over (its notify queues it), so the parent never
    // waits for a batch that may not run (issue 35); whichever batch takes it unlinks it there.
    // Unlisted before the request is recorded (both under the writer lock, which every reader of
    // the record takes, so the order is not observable): the record's values are then not live
    // across the unlist's calls into liburcu (callee-saved registers and spills; callgrind, issue 35).
    detail::hooks_of<policy_at<k>, T>{registry_.template policy<policy_at<k>>()}.unlist(t);
    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist
    g.unlisted_before.emplace(registry_.domain().snapshot());  // emplace: no test of the optional
    const std::uint64_t seq = record_request(g, bytes, reserved);
    g.objects.push_back(&static_cast<const detail::registrable_base&>(t));
    publish(g, seq, caller_waits);
    r.ticket = unregister_ticket(seq, id_);
    RCUBATCH_PROBE(async_submit, id_, seq, bytes);
    return r;
  }

  /// Requires: the writer lock. Queues t in q (current_'s) unless a check refuses it first:
  /// returns unregistered when queued; already_unregistering for a lost race (try_submit);
  /// refused after a misuse diagnosed under report (throw_error throws: nothing changed).
  template <std::size_t k>
  unregister_status queue_checked(object_at<k>& t, unreg_queue<object_at<k>>& q, bool lost_race_is_result) {
    if (lost_race_is_result) {
      const reg_state st = t.state();
      if (st != reg_state::uninitialized &&
          (st != reg_state::registered || detail::registrable_access::owner(t) != nullptr))
        return unregister_status::already_unregistering;  // in a batch, in a queue (here, or a cascade's), or gone
    }
    // q is current_'s: no batch runs on it (push_new_idle), and t in it was submitted twice.
    if (!detail::queue_access::push_new_idle(q, t,
                                             "async_unregister::submit: the object was already submitted and its "
                                             "batch has not run; submit each object once"))
      return unregister_status::refused;  // submitted twice, not registered, in a batch, or in another queue: diagnosed
    if (!registry_.admit_queued(q, t, "async_unregister::submit")) return unregister_status::refused;  // diagnosed
    return unregister_status::unregistered;
  }

  /// Requires: the writer lock. The generation's per-request vectors have room for one more
  /// (geometric growth: their push_back in submit_locked cannot throw), its id is set, and the
  /// calling thread is in its set of submitting threads (its id was set when it became current_:
  /// open_generation). Throws: std::bad_alloc.
  static void make_room_for_one(generation& g) {
    if (g.submit_stamps.size() == g.submit_stamps.capacity()) [[unlikely]] {
      // objects first: if the second reserve throws, objects still has room wherever
      // submit_stamps has (only submit_stamps' room is checked above).
      const std::size_t room = std::max<std::size_t>(64, 2 * g.submit_stamps.capacity());
      g.objects.reserve(room);
      g.submit_stamps.reserve(room);
    }
    if (detail::t_last_submit_generation != g.id) {
      g.threads.insert(std::this_thread::get_id());
      detail::t_last_submit_generation = g.id;
    }
  }

  /// Requires: the writer lock (or the constructor); `next` is empty (it becomes current_).
  /// Reserves next's per-request vectors for n requests (open_generation: as many as the
  /// generation a batch takes now had, and at least kRoom's), so that the next generation's
  /// submits do not grow them from 64 by doubling — a reallocation and a copy of every earlier
  /// request per doubling, paid by submitters under the writer lock (callgrind, issue 35: ~18
  /// instructions per submit at W = 8). The allocation is the batch's (or the constructor's),
  /// made once. Best effort: out of memory, the submits grow them as before (and report bad_alloc
  /// there), so a batch never fails for it. objects first, as in make_room_for_one.
  /// Requires: as make_room_like. `next` gets its id (a submit compares it with the thread's last:
  /// make_room_for_one) and room for n requests.
  void open_generation(generation& next, std::size_t n) noexcept {
    next.id = detail::g_next_generation_id.fetch_add(1, std::memory_order_relaxed);
    make_room_like(next, std::max(n, std::min(2 * options_.batch_count, kRoom)));
  }
  static void make_room_like(generation& next, std::size_t n) noexcept {
    if (n <= next.submit_stamps.capacity()) return;
    try {
      next.objects.reserve(n);
      next.submit_stamps.reserve(n);
    } catch (const std::bad_alloc&) {
    }
  }

  /// Requires: the writer lock (every submit's bookkeeping is under it: issue 35, callgrind — the
  /// reclaimer's m_ per submit was a lock and an unlock of ~57 instructions of a submit's ~740).
  /// Charges `bytes` (unless `reserved`), counts them in g and stamps the request; returns its
  /// ticket, published by publish() once its object is unlisted. Nothing throws.
  std::uint64_t record_request(generation& g, std::size_t bytes, bool reserved) noexcept {
    if (!reserved) {
      // The look at the budget (submit_locked) was made under the writer lock, which every
      // other submit's charge is made under too: only reserve or a lone unregister's claim
      // (under m_) can have charged since, each within the budget or alone, so with this object
      // (≤ the budget) the charge stays ≤ budget + one object — the file comment's bound.
      // Looking again here would mean running validate a second time on the retry.
      budget_.charge(bytes);
    }
    g.bytes += bytes;
    g.submit_stamps.push_back(detail::stamp_clock::now());
    return issued_.load(std::memory_order_relaxed) + 1;  // only submits store it, under the writer lock
  }

  /// Requires: the writer lock; request `seq` recorded in g (current_: record_request) and its object
  /// unlisted. Publishes it (issued_: waiters, drain, the thresholds see it) and wakes whom it
  /// concerns. Most submits take no lock here: m_ only on a transition that someone waits on —
  /// the first pending request (it starts the age timer: oldest_, and the clock is read for it
  /// alone), a threshold crossed (the background thread runs the batch), a submit from this
  /// reclaimer's own hook (drain chains on them) — and to wake a submitter blocked on the budget.
  /// Why no wake-up is lost without m_: issued_ and taken_ change only under the writer lock
  /// (held here), so this submit alone decides the transitions; a thread that decides to sleep
  /// on what it read under m_ (the background thread's due(), a blocked submitter's pending())
  /// either read before this publish — then this submit, on a transition, locks m_ before it
  /// notifies, after that thread sleeps — or read after it. A submitter blocked on the budget is
  /// counted in blocked_now_ before it looks at issued_, and this submit stores issued_ before it
  /// loads blocked_now_ (both seq_cst): if it reads 0, the blocked one reads this request.
  void publish(const generation& g, std::uint64_t seq, bool caller_waits) noexcept {
    // Wake the reclaimer on the first request (it arms the age timer) and when a threshold is
    // crossed, not on every request past it: a notify per submit costs more than the submit.
    // The next such request and byte count are kept ready (transition_seq_, transition_bytes_),
    // so that the others pay two compares.
    // The rest out of line (publish_transition, wake_blocked_submitter): this hot path then
    // runs straight through, without GCC's jumps to and from its blocks (callgrind, issue 35).
    const bool from_hook = detail::t_running_batch_of == this;
    if (seq == transition_seq_ || g.bytes >= transition_bytes_ || from_hook) [[unlikely]] {
      publish_transition(g, seq, caller_waits, from_hook);
      return;
    }
    issued_.store(seq);
    if (blocked_now_.load() != 0) [[unlikely]]
      wake_blocked_submitter();
  }
  /// publish's wake-up of a submitter blocked on the budget, for a request that is no transition.
  [[gnu::cold, gnu::noinline]] void wake_blocked_submitter() noexcept {
    { std::scoped_lock state(m_); }  // the blocked one is asleep, or has not looked yet (see above)
    work_cv_.notify_all();
    done_cv_.notify_all();  // a manual submitter blocked on the budget may run the batch
  }
  /// publish for a request that is a transition (the first pending, the batch_count-th, the
  /// bytes threshold crossed) or a submit from this reclaimer's own hook: under m_.
  [[gnu::noinline]] void publish_transition(const generation& g, std::uint64_t seq, bool caller_waits,
                                            bool from_hook) noexcept {
    const auto pending = static_cast<std::size_t>(seq - taken_);
    const bool crossed = g.bytes >= transition_bytes_;
    const bool wake = seq == transition_seq_ || crossed;
    if (seq == transition_seq_)  // the first request, then the batch_count-th
      transition_seq_ = pending < options_.batch_count ? taken_ + options_.batch_count : kNever;
    if (crossed) transition_bytes_ = std::numeric_limits<std::size_t>::max();
    bool wake_blocked = false;
    {
      std::scoped_lock state(m_);
      issued_.store(seq);
      if (pending == 1) oldest_ = clock::now();
      if (crossed) bytes_due_ = true;
      if (from_hook) ++hook_submits_;
      wake_blocked = blocked_now_.load() > 0;
    }
    if ((wake && !caller_waits) || wake_blocked) work_cv_.notify_all();
    if (wake_blocked) done_cv_.notify_all();
  }

 public:

  /// Effects: true once the ticket's object has been destroyed (tickets complete per object, not
  /// in submit order: Parking in the file comment). Never blocks, never runs a batch.
  /// Misuse (foreign_cookie): an empty ticket, another reclaimer's, or one not issued yet —
  /// throw_error throws; under report answers true.
  /// Throws: misuse_error as above. Complexity: O(1) (one mutex).
  bool poll(unregister_ticket t) {
    if (!check_ticket(t, "poll")) return true;
    std::scoped_lock lock(m_);
    return ticket_done(t.sequence_);
  }

  /// Effects: returns once the ticket's object has been destroyed. Leads (see the file comment):
  /// runs the batch itself, at once, unless one is running or already took the request.
  /// Requires: outside read-side sections; not from a hook of this reclaimer's batches.
  /// Misuse: as poll (then returns at once); inside a read-side section (blocking_in_read_section);
  /// from a hook of this reclaimer's batch (waits_for_own_batch). Either: returns at once.
  /// Throws: misuse_error as above; what a batch run on this thread throws (none: hooks after
  /// validate are noexcept). Blocking: until the ticket's batch ends (≤ the running batch and its
  /// own, with no timer). Offline while blocked under qsbr.
  void wait(unregister_ticket t) {
    if (!check_ticket(t, "wait")) return;
    if (!outside_own_batch("wait") || !outside_read_section("wait")) return;
    wait_until_completed(t.sequence_, false);
  }

  /// Effects: submit(obj) then wait for its ticket; concurrent callers combine into batches
  /// without a timer (leader/follower, see wait_until_completed).
  /// Returns false if the submit was refused (budget under over_budget::refuse, misuse under
  /// report). Throws, Blocking: as submit and wait.
  template <class U>
  bool unregister(U& obj) {
    if (!outside_own_batch("unregister") || !outside_read_section("unregister")) return false;
    constexpr std::size_t k = slot_of<U>();
    object_at<k>& direct = static_cast<object_at<k>&>(obj);
    const std::size_t bytes = bytes_of<k>(direct);
    if (claim_direct(bytes)) return run_direct<k>(direct, bytes);
    const unregister_ticket t = submit_request(obj, true, false).ticket;
    if (!t) return false;
    wait_until_completed(t.sequence_, false);
    return true;
  }

  /// Effects: runs batches now, without waiting for thresholds, until every request submitted
  /// before the call — and every request submitted by this reclaimer's own hooks meanwhile (work
  /// chained from destroy) — is destroyed. Cascades are in their parents' batches.
  /// Requires: outside read-side sections (misuse blocking_in_read_section otherwise: refused).
  /// Blocking: until then. Offline while blocked under qsbr. Throws: misuse_error as above.
  void drain() {
    if (!outside_own_batch("drain") || !outside_read_section("drain")) return;
    drain_noexcept();
  }

  /// Effects: runs one batch of every request pending now, on the calling thread (after the
  /// running one, if any, ends). Returns the number of requests it completed (0: nothing pending).
  /// Requires: outside read-side sections (else refused, 0). Any mode.
  /// Blocking: the batch (≤ 2 GPs and its ref drain). Throws: misuse_error (read section).
  std::size_t run_now() {
    if (!outside_own_batch("run_now") || !outside_read_section("run_now")) return 0;
    std::unique_lock lock(m_);
    if (polls_lot_here() && lot_.due(clock::now())) poll_lot(lock);
    while (running_) wait_offline(done_cv_, lock);
    return run_claimed(lock);
  }

  /// Effects: as run_now if a batch is due (a threshold crossed, a blocked submitter, a drain
  /// waiting) and none is running; else returns 0 at once. In manual mode both first destroy the
  /// parked objects whose holders let go since (the lot: Parking in the file comment).
  /// Complexity: O(1) when nothing is due. Blocking, Throws: as run_now.
  std::size_t run_if_due() {
    if (!outside_own_batch("run_if_due") || !outside_read_section("run_if_due")) return 0;
    std::unique_lock lock(m_);
    if (polls_lot_here() && lot_.due(clock::now())) poll_lot(lock);
    if (running_ || !due(clock::now())) return 0;
    return run_claimed(lock);
  }

  /// Effects: the totals (async_stats). Complexity: O(histogram) = 512 reads. Blocking: short locks.
  async_stats stats() const {
    async_stats s;
    {
      std::scoped_lock lock(m_);
      s = totals_;
      s.submitted = issued_.load() + direct_.completed();
      s.completed = completion_.completed() - parked_tickets() + direct_.completed();
      s.pending_count = outstanding_count();
      s.pending_bytes = budget_.charged();
      s.pending_count_high_water = std::max(high_water_count_, s.pending_count);
      s.pending_bytes_high_water = budget_.high_water();
      s.blocked_now = blocked_now_.load();
      s.domain = registry_.domain().stats();
    }
    const detail::latency_recorder::summary l = latency_.read();
    s.latency_p50 = l.p50;
    s.latency_p99 = l.p99;
    s.latency_max = l.max;
    return s;
  }

  /// The registry and the options given at construction. Throws: nothing.
  ///@{
  registry_type& registry() noexcept { return registry_; }
  const async_options& options() const noexcept { return options_; }
  ///@}

 private:
  /// The constructor's check of the thresholds, before anything is built.
  static async_options checked(async_options o) {
    if (o.batch_count == 0 || o.batch_bytes == 0 || o.budget_bytes == 0)
      throw std::invalid_argument(
          "rcubatch::async_unregister: batch_count, batch_bytes and budget_bytes must be at least 1");
    return o;
  }

  template <std::size_t K, class T>
  std::size_t bytes_of(const T& t) {
    if constexpr (detail::has_pending_bytes<policy_at<K>, T>) {
      return static_cast<std::size_t>(registry_.template policy<policy_at<K>>().pending_bytes(t));
    } else {
      return sizeof(T);
    }
  }

  /// Every generation's least room (open_generation): twice batch_count — a generation passes
  /// batch_count while the reclaimer is late to take it (callgrind, issue 35: 6,001 at W = 8;
  /// a generation after a small batch grew from that batch's size, ~12 instructions per submit)
  /// — at most 8,192 requests (128 KiB, allocated by the batch that opens the generation).
  static constexpr std::size_t kRoom = 8192;

  /// Requires: m_ or the writer lock. Requests submitted (published) and not yet taken by a
  /// batch; their bytes are current_->requests.bytes (under the writer lock; bytes_due_ says
  /// under m_ whether they reached batch_bytes).
  std::size_t pending() const noexcept { return static_cast<std::size_t>(issued_.load() - taken_); }

  /// Requires: m_. Requests not yet done (parked ones included), lone unregisters' too.
  std::size_t outstanding_count() const noexcept {
    return static_cast<std::size_t>(issued_.load() - completion_.completed() + parked_tickets()) + direct_.in_flight();
  }
  /// Requires: m_. The high-water count, noted before every decrease of outstanding_count()
  /// (a batch's end, a take-over's destroy, a parked batch finished, a lone unregister's end),
  /// and in stats(): submits only raise it, and they take no m_ (publish), so its maximum is
  /// reached just before a decrease or now.
  void note_high_water_count() noexcept { high_water_count_ = std::max(high_water_count_, outstanding_count()); }

  /// The check of every member that waits for batches (all but submit and poll): not from a hook
  /// of this reclaimer's running batch, which would wait for itself — a deadlock.
  /// Also not from the background reclaimer thread itself (async_options::on_batch runs there):
  /// it would wait for batches that only it runs. And not by the holder of the writer lock.
  bool outside_own_batch(const char* what) {
    if (detail::t_running_batch_of != this && detail::t_reclaimer_thread_of != this) [[likely]]
      return writer_lock_not_held(what);
    detail::diag_text msg("async_unregister::");
    msg += what;
    msg += detail::t_running_batch_of == this
               ? " called from a hook of this reclaimer's running batch: it would wait for that batch to "
                 "end, which waits for the hook (only submit may be called, from destroy)"
               : " called on this reclaimer's own background thread (from on_batch): it would wait for "
                 "batches that only this thread runs";
    detail::diagnose(misuse_kind::waits_for_own_batch, msg.view());
    return false;
  }

  /// Not by the thread holding the registry's writer lock (a hook of a registry batch that holds
  /// it, code under writer_lock()): submit takes it, the waits wait for batches that take it.
  // The checks every submit makes are inline; their reports are cold and out of line, so the
  // fast path neither calls a function nor spills registers for a diag_text it never builds
  // (callgrind, issue 35).
  bool writer_lock_not_held(const char* what) {
    if (!registry_.writer_lock().held_by_caller()) [[likely]]
      return true;
    return report_writer_lock_held(what);
  }
  [[gnu::cold, gnu::noinline]] bool report_writer_lock_held(const char* what) {
    detail::diag_text caller("async_unregister::");
    caller += what;
    return registry_.lock_not_held(caller.view().data());
  }

  bool outside_read_section(const char* what) {
    if (!in_read_section<Flavor>()) [[likely]]
      return true;
    return report_inside_read_section(what);
  }
  /// outside_read_section for a read_guard's section only (rcubatch's own thread-local depth,
  /// three instructions): submit's check before it knows whether it will wait. A section opened
  /// with the flavor's own read_lock is asked of liburcu (a call and a thread-local lookup in
  /// liburcu: 22 of a submit's instructions, callgrind, issue 35) only where it can matter —
  /// before the submit waits for the writer lock or the budget, which may wait for this reader's
  /// grace period (lock_writer, submit_over_budget). Under qsbr the two checks are the same.
  bool outside_read_guard(const char* what) {
    if (detail::reader<Flavor>.read_depth == 0) [[likely]]
      return true;
    return report_inside_read_section(what);
  }
  [[gnu::cold, gnu::noinline]] bool report_inside_read_section(const char* what) {
    detail::diag_text msg("async_unregister::");
    msg += what;
    msg += " called inside a read-side section of ";
    msg += Flavor::name;
    msg += ": it takes the writer lock or waits for batches, which wait for this reader's grace period";
    detail::diagnose(misuse_kind::blocking_in_read_section, msg.view());
    return false;
  }

  bool check_ticket(unregister_ticket t, const char* what) {
    const std::uint64_t issued = issued_.load();  // a ticket handed out was published before
    if (t.owner_ == id_ && t.sequence_ != 0 && t.sequence_ <= issued) [[likely]]
      return true;
    detail::diag_text msg("async_unregister::");
    msg += what;
    if (t.sequence_ == 0) {
      msg += ": the ticket is empty (its submit was refused): there is nothing to wait for";
    } else if (t.owner_ != id_) {
      msg += ": the ticket was issued by another async_unregister (#";
      msg += t.owner_;
      msg += "), not this one (#";
      msg += id_;
      msg += ")";
    } else {
      msg += ": ticket #";
      msg += t.sequence_;
      msg += " was never issued (the last one is #";
      msg += issued;
      msg += ")";
    }
    detail::diagnose(misuse_kind::foreign_cookie, msg.view());
    return false;
  }

  using thread_flavors = detail::thread_flavors_t<Flavor, Policies...>;
  using offline_while_blocked = detail::offline_while_blocked<thread_flavors>;

  /// Charges `bytes`; false when refused. Blocks (block mode) until they fit.
  bool reserve(std::size_t bytes) {
    std::unique_lock lock(m_);
    const bool from_own_hook = detail::t_running_batch_of == this;
    if (!budget_.fits(bytes) && !from_own_hook) {
      if (options_.when_over_budget == over_budget::refuse) {
        ++totals_.refused;
        return false;
      }
      ++totals_.blocked_submits;
      ++blocked_now_;
      RCUBATCH_PROBE(async_budget_block, id_, bytes, budget_.charged());
      work_cv_.notify_all();
      while (!budget_.fits(bytes)) {
        if (options_.mode == reclaim_mode::manual && !running_ && pending() > 0) {
          run_claimed(lock);
          continue;
        }
        wait_offline(done_cv_, lock);
      }
      --blocked_now_;
    }
    budget_.charge(bytes);
    return true;
  }
  /// try_submit by key: the object found under the lock is charged its own bytes, not those of
  /// the first lookup's (may pass the budget by that difference: one object).
  void recharge(std::size_t reserved, std::size_t actual) noexcept {
    {
      std::scoped_lock lock(m_);
      budget_.recharge(reserved, actual);
    }
    if (actual < reserved) done_cv_.notify_all();
  }
  void unreserve(std::size_t bytes) noexcept {
    {
      std::scoped_lock lock(m_);
      budget_.release(bytes);
    }
    done_cv_.notify_all();
  }

  /// Every condition-variable wait of this object: offline under qsbr (detail/blocking.hpp).
  template <class Lock>
  static void wait_offline(std::condition_variable& cv, Lock& lock) {
    offline_while_blocked offline;
    cv.wait(lock);
  }
  template <class Lock>
  static void wait_offline_until(std::condition_variable& cv, Lock& lock, clock::time_point deadline) {
    offline_while_blocked offline;
    if (deadline == clock::time_point::max()) {
      cv.wait(lock);  // no deadline (wait_until at the clock's maximum may overflow)
    } else {
      cv.wait_until(lock, deadline);
    }
  }
  /// A wait of a thread that runs the lot here (polls_lot_here): until the lot's next timer.
  template <class Lock>
  void wait_for_lot(std::condition_variable& cv, Lock& lock) {
    wait_offline_until(cv, lock, polls_lot_here() ? lot_.deadline() : clock::time_point::max());
  }

  /// Requires: m_ held. A batch should start now (if none is running).
  bool due(clock::time_point now) const noexcept {
    if (pending() == 0) return false;
    if (pending() >= options_.batch_count || bytes_due_) return true;
    if (blocked_now_.load() > 0 || flush_through_ > taken_ || stop_) return true;
    return now >= age_deadline();
  }
  clock::time_point age_deadline() const noexcept { return std::max(oldest_, last_batch_end_) + options_.max_age; }

  /// Requires: m_. The entry's wait is over.
  bool entry_done(const detail::wait_entry& e) const noexcept {
    return e.flush ? done_through(e.seq) : ticket_done(e.seq);
  }

  /// Blocks until the ticket seq is done (`flush`, drain: every ticket up to seq). A caller
  /// that waits leads (liburcu's synchronize_rcu combines its waiters the same way, with no
  /// timer): no batch running and its request not yet taken → it runs the batch of everything
  /// pending now, on its own thread, at once; a batch running → it waits for that batch, and the
  /// first waiter to see it end leads the next one, which takes every request that arrived
  /// meanwhile. So W synchronous callers combine into batches of up to W requests and none waits
  /// for max_age (that timer is for submit-only traffic, which the background thread or
  /// run_if_due picks up). `flush`: drain's requests are due at once for the background thread too.
  /// The caller waits on its wait_entry, linked in waiters_ until it returns (m_ is held at every
  /// exit, a throw included).
  void wait_until_completed(std::uint64_t seq, bool flush) {
    std::unique_lock lock(m_);
    if (flush && flush_through_ < seq) {
      flush_through_ = seq;
      work_cv_.notify_all();
    }
    waiters_.came_back();
    detail::wait_entry me;
    me.seq = seq;
    me.flush = flush;
    if (entry_done(me)) return;
    const detail::reclaim_waiters::linked linked(waiters_, me);
    bool yielded = false;
    while (!entry_done(me)) {
      if (polls_lot_here() && lot_.due(clock::now())) {  // manual mode: a waiter runs the lot
        poll_lot(lock);
        continue;
      }
      if (!running_ && taken_ < seq && released_still_asleep() == 0) {
        lead(lock, yielded);
        continue;
      }
      sleep_as_waiter(me, lock);
    }
    waiters_.returning();  // counted away by the batch that released it (batch_released)
  }

  /// wait_until_completed's turn to lead (`state` holds m_): runs the batch of everything pending
  /// — unless callers the last batch released have not called again and it did not yield yet.
  void lead(std::unique_lock<std::mutex>& state, bool& yielded) {
    if (waiters_.callers_away() && !yielded) {
      // Callers the last batch released, or its leader, have not called again yet: they are
      // runnable and inside this object (or just returned), and a closed-loop caller calls
      // again at once. Sharing a CPU with them, this caller would start the batch before they
      // can join it (a woken thread preempts its waker). Let them run once — a yield, not a
      // wait: bounded, and a caller that never calls again stalls nobody. Online under qsbr:
      // a yield does not block (the thread stays runnable), so no GP waits on it for long.
      yielded = true;
      state.unlock();
      std::this_thread::yield();
      state.lock();
      return;
    }
    run_claimed(state);
  }

  /// wait_until_completed's sleep (`state` holds m_) until a batch ends (or the lot's timer).
  void sleep_as_waiter(detail::wait_entry& me, std::unique_lock<std::mutex>& state) {
    me.asleep = true;
    wait_for_lot(done_cv_, state);
    me.asleep = false;
    if (!running_ && pending() > 0 && released_still_asleep() == 0)
      done_cv_.notify_all();  // the last caller released by the batch that ended is up: lead the next
  }

  /// Requires: m_. Waiters whose wait is over and that have not run since a batch end woke them
  /// (reclaim_waiters.hpp: the gather).
  std::size_t released_still_asleep() const noexcept {
    return waiters_.released_still_asleep([this](const detail::wait_entry& e) { return entry_done(e); });
  }

  void drain_noexcept() noexcept {
    try {
      for (;;) {
        std::uint64_t target, chained;
        {
          std::scoped_lock lock(m_);
          target = issued_.load();
          chained = hook_submits_;
        }
        wait_until_completed(target, true);
        std::scoped_lock lock(m_);
        if (hook_submits_ == chained) return;  // no batch submitted more meanwhile
      }
    } catch (...) {  // only a misuse under throw_error can get here; the work is still drained
    }
  }

  void reclaimer_loop() noexcept {
    detail::thread_registrations<thread_flavors> registrations;
    detail::t_reclaimer_thread_of = this;
    std::unique_lock lock(m_);
    for (;;) {
      if (stop_ && pending() == 0 && lot_.empty()) return;
      const auto now = clock::now();
      if (lot_.due(now)) {  // the lot's one runner in background mode
        poll_lot(lock);
        continue;
      }
      if (!running_ && due(now)) {
        try {
          run_claimed(lock);
        } catch (...) {  // misuse under throw_error from a batch: nothing else throws here
          if (!lock.owns_lock()) lock.lock();
        }
        continue;
      }
      const auto deadline = pending() > 0 && !running_ ? age_deadline() : clock::time_point::max();
      wait_offline_until(work_cv_, lock, std::min(deadline, lot_.deadline()));
    }
  }

  /// One batch of everything pending. Requires: `state` holds m_ and no batch is running (the
  /// caller checked running_): this claims the run, releases m_ for the batch, and holds m_ again
  /// on return. Returns the requests completed (0: nothing was pending).
  std::size_t run_claimed(std::unique_lock<std::mutex>& state) {
    running_ = true;
    state.unlock();
    std::size_t requests = 0;
    try {
      requests = run_batch_unlocked();
    } catch (...) {  // only misuse (a batch from a read-side section) can throw: release the claim
      state.lock();
      running_ = false;
      done_cv_.notify_all();
      work_cv_.notify_all();
      throw;
    }
    state.lock();
    return requests;
  }

  /// Requires: m_. Adds a batch that ended to the totals.
  void count_batch(const async_batch_report& report) noexcept {
    ++totals_.batches;
    totals_.grace_periods += report.batch.grace_periods;
    totals_.gps_pipelined += report.batch.gps_pipelined;
    totals_.objects += report.batch.objects;
    totals_.max_requests_per_batch = std::max(totals_.max_requests_per_batch, report.requests);
    totals_.max_threads_per_batch = std::max(totals_.max_threads_per_batch, report.threads);
    totals_.last_batch = report;
    totals_.all_batches.add(report.batch);
  }

  /// After a batch, outside every lock: async_options::on_batch, whose exceptions are dropped
  /// (documented).
  void call_on_batch(const async_batch_report& report) noexcept {
    if (!options_.on_batch) return;
    try {
      options_.on_batch(report);
    } catch (...) {  // documented: dropped
    }
  }

  /// The claim of a lone unregister's direct path (reclaim_direct.hpp): no batch running and
  /// nothing pending → it claims the run and charges `bytes` in one critical section of m_.
  /// False (nothing changed): a batch running, requests pending (they would be overtaken), a
  /// caller the last batch released not back yet (reclaim_waiters.hpp: it may join a batch), or
  /// the budget full — the caller takes the submit-and-wait path then.
  bool claim_direct(std::size_t bytes) {
    std::scoped_lock lock(m_);
    waiters_.came_back();
    if (running_ || pending() != 0 || blocked_now_.load() != 0 || waiters_.callers_away() || !budget_.fits(bytes))
      return false;
    running_ = true;
    budget_.charge(bytes);
    direct_.claimed();
    note_high_water_count();
    return true;
  }

  /// Requires: claim_direct(bytes) returned true. Runs t's batch (reclaim_direct::run). Returns
  /// false when refused (misuse under report); rethrows what validate or a misuse under throw_error throws. Either way the claim
  /// and the charge are released, and waiters woken.
  template <std::size_t k>
  bool run_direct(object_at<k>& t, std::size_t bytes) {
    const auto start = clock::now();
    bool released = false;  // the claim, given up when its drain went to sleep on a holder
    auto release = [this, bytes, &released] {
      if (!std::exchange(released, true)) release_direct_claim(bytes);
    };
    std::optional<batch_stats> st;  // none: refused before the batch (diagnosed there)
    try {
      st = direct_.template run<k>(t, this, release);
    } catch (...) {
      finish_direct(bytes, released, nullptr, clock::time_point{});
      throw;
    }
    const bool ran = st && !st->refused;  // refused (report): nothing changed
    finish_direct(bytes, released, ran ? &*st : nullptr, start);
    return ran;
  }

  /// A direct batch's drain is about to sleep on its object's holder: the caller waits for its own
  /// object only, so the run and the charge go now (the batches behind it proceed; the object is
  /// its holder's until the last put). Once, from the drain's before_sleep.
  void release_direct_claim(std::size_t bytes) noexcept {
    {
      std::scoped_lock lock(m_);
      running_ = false;
      budget_.release(bytes);
    }
    done_cv_.notify_all();
    work_cv_.notify_all();
  }

  /// run_direct's end: releases the claim and the charge (unless `released` already:
  /// release_direct_claim); with `st` (the batch ran), counts the batch and its one request as a
  /// batch of submits would be.
  void finish_direct(std::size_t bytes, bool released, const batch_stats* st, clock::time_point start) noexcept {
    const auto end = clock::now();
    async_batch_report report;
    bool more = false;
    {
      std::scoped_lock lock(m_);
      if (!released) {
        running_ = false;
        budget_.release(bytes);
      }
      note_high_water_count();
      direct_.ended(st != nullptr);
      if (st != nullptr) {
        report.requests = 1;
        report.threads = 1;
        report.batch = *st;
        last_batch_end_ = end;
        count_batch(report);
        // Its one caller is this thread, inside this object until it returns (no entry).
        waiters_.direct_released(detail::g_next_generation_id.fetch_add(1, std::memory_order_relaxed),
                                 completion_.settled());
      }
      more = pending() > 0;
    }
    done_cv_.notify_all();  // callers that submitted meanwhile lead the next batch
    if (more) work_cv_.notify_all();
    if (st == nullptr) return;
    latency_.add(end - start);
    call_on_batch(report);
  }

  /// The tickets a batch took: (after, through], and their bytes, charged until it ends or parks.
  struct batch_range {
    std::uint64_t after = 0;
    std::uint64_t through = 0;
    std::size_t bytes = 0;
    std::uint64_t id = 0;  // its generation's id (reclaim_waiters::batch_released)
  };

  /// One batch of everything pending (run_claimed claimed the run): under the writer lock, takes
  /// the current slot — the next becomes current — and runs it (run_taken). Returns the requests
  /// it took (0: none pending; the claim released).
  std::size_t run_batch_unlocked() {
    std::unique_lock writer(registry_.writer_lock());  // offline while waiting under qsbr
    queue_slot* const next = slots_.free_slot(current_);     // may allocate: before anything changes
    queue_slot& taking = *current_;
    open_generation(next->requests, taking.requests.submit_stamps.size());  // best effort room (never throws)
    batch_range range;
    {
      std::scoped_lock lock(m_);
      if (pending() == 0) {
        running_ = false;
        done_cv_.notify_all();
        return 0;
      }
      const std::uint64_t issued = issued_.load();  // every submit published (the writer lock)
      range = batch_range{taken_, issued, taking.requests.bytes, 0};
      taken_ = issued;
      bytes_due_ = false;
      transition_seq_ = issued + 1;
      transition_bytes_ = options_.batch_bytes;
      current_ = next;
    }
    return run_taken(taking, range, writer);
  }

  /// Requires: `writer` holds the writer lock; `taking`, the slot of the tickets `range` took.
  /// Runs its batch under the running-batch mark, records a parked batch's held tickets, and
  /// ends it (end_batch). Returns the requests it took.
  template <class WriterLock>
  std::size_t run_taken(queue_slot& taking, batch_range range, WriterLock& writer) {
    const auto requests = static_cast<std::size_t>(range.through - range.after);
    taking.busy = true;
    generation taken;
    std::swap(taken, taking.requests);
    range.id = taken.id;
    const bool lost = slot_set::queued_count(taking) != requests;  // some taken over (reclaim_protocol.hpp)
    RCUBATCH_PROBE(async_batch_start, id_, range.through, requests);

    async_batch_report report;
    report.requests = requests;
    report.threads = taken.threads.size();
    bool finished = true;
    {
      const detail::running_batch_mark mark(this);
      finished = slots_.run(taking, taken.unlisted_before, report.batch, &lot_told, this);
    }
    if (finished) {
      taking.busy = false;
      writer.unlock();
    } else {
      slot_set::note_parked_tickets(taking, taken, range.after);
      writer.release();  // parked: the engine left the lock released (run_after_grace_periods_or_park)
    }
    latency_.add_since(taken.submit_stamps);
    end_batch(range, lost, finished ? nullptr : &taking, report);
    return requests;
  }

  /// The end of run_batch_unlocked's batch, finished or `parked` (its slot joins the lot):
  /// completion, the run and the budget released — a parked batch's held objects are their
  /// holders' now —, waiters woken, on_batch.
  void end_batch(const batch_range& range, bool lost, queue_slot* parked, const async_batch_report& report) {
    const auto end = clock::now();
    bool more = false;
    {
      std::scoped_lock lock(m_);
      note_high_water_count();
      if (parked != nullptr) lot_.join(*parked);
      if (const std::uint64_t t = completion_.batch_ended(range.through, lost)) completed_to(t);
      last_batch_end_ = end;
      count_batch(report);
      budget_.release(range.bytes);
      running_ = false;
      // Released: the callers waiting for this batch (its leader too, when a caller leads it).
      waiters_.batch_released(range.id, completion_.settled());
      more = pending() > 0;
    }
    done_cv_.notify_all();
    if (more || parked != nullptr) work_cv_.notify_all();  // the timer; the lot's runner
    call_on_batch(report);
  }

  // --- the lot: parked batches, run by one thread (Parking in the file comment) ---

  /// Requires: m_. Ticket t is done: its batch ended, no take-over holds it back, and its object
  /// is not parked.
  bool ticket_done(std::uint64_t t) const noexcept { return completion_.completed() >= t && !lot_.holds(t); }
  /// Requires: m_. Every ticket up to t is done (drain).
  bool done_through(std::uint64_t t) const noexcept {
    return completion_.completed() >= t && !lot_.holds_any_through(t);
  }
  /// Requires: m_. Tickets up to completion_.completed() whose objects are parked.
  std::uint64_t parked_tickets() const noexcept {
    // Every submit asks (its high-water count): the empty lot, the usual case, answers without
    // the out-of-line walk or the completion's atomic load.
    return lot_.empty() ? 0 : lot_.count_through(completion_.completed());
  }

  /// The one thread that runs the lot: the background thread, or in manual mode the callers
  /// that run batches (wait, unregister, drain, run_now, run_if_due, the destructor).
  bool polls_lot_here() const noexcept {
    return options_.mode == reclaim_mode::manual || detail::t_reclaimer_thread_of == this;
  }
  /// A parked batch's last put (ref_drain::park): any thread.
  static void lot_told(void* self) noexcept {
    auto* me = static_cast<async_unregister*>(self);
    {
      std::scoped_lock lock(me->m_);
      me->lot_.tell();
    }
    me->work_cv_.notify_all();  // the background thread
    me->done_cv_.notify_all();  // manual mode: the waiters
  }

  /// Requires: `state` holds m_; polls_lot_here(); lot_.due. Polls every parked batch once (m_
  /// released meanwhile; the slots stay in the lot, so their tickets stay held): each destroys
  /// what its holders let go; one that holds nothing more is finished under the writer lock and
  /// leaves the lot, and its tickets are done. Holds m_ again on return.
  void poll_lot(std::unique_lock<std::mutex>& state) {
    bool finished_any = false;
    for (auto it = lot_.begin_poll(); it != lot_.end();) {
      queue_slot& s = *it;
      state.unlock();
      std::size_t left = 0;
      {
        const detail::running_batch_mark mark(this);  // destroy may submit
        left = s.engine->poll_parked();
      }
      if (left != 0) {
        state.lock();
        ++it;
        continue;
      }
      std::unique_lock writer(registry_.writer_lock());  // offline while waiting under qsbr
      s.engine->finish_parked();
      state.lock();
      note_high_water_count();
      it = lot_.leave(it);
      s.held.clear();
      s.busy = false;  // under the writer lock too (free_slot)
      finished_any = true;
      writer.unlock();
    }
    lot_.end_poll();
    if (finished_any) done_cv_.notify_all();
  }


  /// Requires: m_; ticket_completion advanced to t.
  void completed_to([[maybe_unused]] std::uint64_t t) noexcept {
    RCUBATCH_PROBE(async_complete, id_, t, 0);
  }

  /// A batch took an object over from a slot (batch::queue, under the writer lock): counted
  /// open until the node's dispose — right after that batch destroyed it — calls back.
  retire_node* taken_over(detail::registrable_base&) noexcept override {
    auto* node = new (std::nothrow) takeover_node(this);
    if (node == nullptr) {  // the ticket then completes with this reclaimer's batch, as before issue 35
      detail::diagnose_noexcept(misuse_kind::queued_in_other_queue,
                                "async_unregister: out of memory recording an object another batch took over: its "
                                "ticket may complete before that batch destroys it");
      return nullptr;
    }
    std::scoped_lock lock(m_);
    completion_.taken_over();
    return node;
  }
  void takeover_destroyed() noexcept {
    bool wake = false;
    {
      std::scoped_lock lock(m_);
      note_high_water_count();
      if (const std::uint64_t t = completion_.takeover_destroyed()) completed_to(t);
      wake = completion_.takeovers_open() == 0;  // waiters, and the destructor, may wait for it
    }
    if (wake) done_cv_.notify_all();
  }
  /// The node a taking batch disposes after the object's destroy (batch::tell_takeover).
  struct takeover_node final : retire_node {
    explicit takeover_node(async_unregister* owner) noexcept : self(owner) {
      dispose = [](retire_node* n) noexcept {
        auto* me = static_cast<takeover_node*>(n);
        async_unregister* const s = me->self;
        delete me;
        s->takeover_destroyed();
      };
    }
    async_unregister* self;
  };

  // --- attached to the registry (combine_registry_unregister): the registry's gate combines its
  // unregister calls (combining.hpp) and tells this reclaimer about each batch of them ---

  /// A batch of the registry's gate calls ended (combining_listener, called under the gate's
  /// mutex on the batch's leader thread): counted in stats() as requests that took no ticket,
  /// like run_direct's, and as a batch. on_batch is not called for it (the gate's mutex is held).
  void combined_batch_ran(const combined_batch_report& r) noexcept override {
    async_batch_report report;
    report.requests = r.requests;
    report.threads = r.requests;  // one call per thread
    report.batch = r.batch;
    std::scoped_lock lock(m_);
    direct_.completed_elsewhere(r.requests);
    count_batch(report);
  }

  void attach_to_registry() {
    if (registry_.attach_combining_listener(*this)) {
      attached_ = true;
      return;
    }
    detail::diagnose(misuse_kind::attached_twice,
                     "async_unregister: combine_registry_unregister on a registry another async_unregister is "
                     "attached to (at most one reclaimer per registry); this one was not attached");
  }

  registry_type& registry_;
  const async_options options_;
  const std::uint64_t id_ = detail::g_next_reclaimer_id.fetch_add(1, std::memory_order_relaxed);

  // Under the registry's writer lock: the slots (submits fill current_'s; a batch runs on the one
  // it took, busy until it ends — a parked batch keeps its slot, so there may be more than two).
  slot_set slots_;
  queue_slot* current_ = nullptr;  // written under the writer lock and m_; read under either

  // Under m_: the request counters and the state of the reclaimer.
  mutable std::mutex m_;
  std::condition_variable work_cv_;  // a batch may be due: the reclaimer (or a manual waiter)
  std::condition_variable done_cv_;  // a batch ended: waiters, blocked submitters
  // Last ticket issued (published): stored by submits under the writer lock alone (publish), read
  // anywhere; seq_cst against blocked_now_ (publish's comment).
  std::atomic<std::uint64_t> issued_{0};
  std::uint64_t taken_ = 0;          // last ticket taken by a batch
  detail::ticket_completion completion_;  // which tickets are done (reclaim_protocol.hpp)
  std::uint64_t flush_through_ = 0;  // drain: batches are due until taken_ reaches it
  std::uint64_t hook_submits_ = 0;   // submits made from this reclaimer's own hooks
  detail::reclaim_budget budget_{options_.budget_bytes};  // bytes submitted, not destroyed or parked
  std::size_t high_water_count_ = 0;
  std::atomic<std::size_t> blocked_now_{0};  // changed under m_; read by submits without it (publish)
  // Under the writer lock: the next request (ticket) and the generation's byte count at which a
  // submit takes publish's transition path (the first request, then the batch_count-th;
  // batch_bytes) — reset at the take. kNever: none left in this generation.
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t transition_seq_ = 1;
  std::size_t transition_bytes_ = options_.batch_bytes;
  bool bytes_due_ = false;  // current_'s bytes reached batch_bytes (set by the submit that crossed, cleared at the take: both under m_ and the writer lock)
  detail::reclaim_direct<registry_type> direct_{registry_, options_};  // lone unregisters (reclaim_direct.hpp)
  // The waiting path: running_, taken_ and completion_ (with the lot) decide whether a waiter is
  // done or leads; waiters_ says who waits, who of them a batch end released, and who left since
  // and has not called again (reclaim_waiters.hpp).
  detail::reclaim_waiters waiters_;
  clock::time_point oldest_{};
  clock::time_point last_batch_end_{};
  bool running_ = false;
  bool stop_ = false;
  detail::reclaim_lot<queue_slot> lot_;  // parked batches (reclaim_lot.hpp), polled by one thread
  async_stats totals_{};

  detail::latency_recorder latency_;  // request→destroy latencies (its own mutex)

  // combine_registry_unregister: attached to the registry's gate as its listener.
  bool attached_ = false;

  std::thread thread_;    // last: started after everything above is constructed
};

/// Deduction: `async_unregister reclaimer(registry);`
template <class Flavor, class Lockable, class... Policies>
async_unregister(basic_registry<Flavor, Lockable, Policies...>&) -> async_unregister<basic_registry<Flavor, Lockable, Policies...>>;
template <class Flavor, class Lockable, class... Policies>
async_unregister(basic_registry<Flavor, Lockable, Policies...>&, async_options)
    -> async_unregister<basic_registry<Flavor, Lockable, Policies...>>;

}  // namespace rcubatch
