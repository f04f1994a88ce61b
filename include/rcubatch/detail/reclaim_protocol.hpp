// rcubatch/detail/reclaim_protocol.hpp — who waits, who wakes whom, and when a ticket completes,
// in an async_unregister; and ticket_completion, the part of it that decides the last.
//
// The protocol (what formal-model/ checks; every name below is a member of async_unregister
// unless said otherwise). One mutex m_ guards the state; two condition variables: work_cv_
// (a batch may be due, or the lot was told: the background thread) and done_cv_ (a batch ended
// or parked, bytes were released, a taken-over object was destroyed, the lot was told or polled:
// waiters, blocked submitters, the destructor).
//
//   Submitter (submit, try_submit; submit_locked, record_request, publish): under the writer
//     lock, queues the object in the current slot, looks at the budget without m_ (full: leaves
//     the writer lock, waits in reserve — below — and tries again with its bytes charged),
//     charges its bytes (a lock-free read-modify-write: a reserve may charge between the look and
//     it, hence budget + one object), unlists, then publishes: issued = its ticket (pending =
//     issued − taken) — under m_ only on a transition (the first pending request, a threshold
//     crossed, a submit from this reclaimer's hook), then, m_ released, notifies work_cv_ (unless
//     its caller waits: it leads) and, if a submitter is blocked (blocked_now_), done_cv_. A
//     submit that is no transition stores issued without m_ (issue 35: a lock round trip was ~57
//     of a submit's ~740 instructions) and changes no condition a sleeper waits on: every sleeper
//     that looks at pending looks for pending > 0 or a threshold, which only a transition makes
//     true (publish's comment). It then loads blocked_now_ (seq_cst, after the store) and, if a
//     submitter is blocked, takes m_ (an empty critical section) and notifies work_cv_ and
//     done_cv_: a second guard, since a blocked submitter already saw pending > 0 under m_ — the
//     model finds no wake-up that needs it (below).
//   Budget-blocked submitter (reserve): under m_, ++blocked_now_ and notifies work_cv_ (a batch
//     is due for the background thread); then, m_ held, while the bytes do not fit: in manual
//     mode, if no batch runs and requests are pending, runs one itself (Batch, below); else
//     sleeps on done_cv_. Woken by every release of bytes (batch end, park, unreserve) and by a
//     publish that sees it in blocked_now_.
//   Waiter (wait, unregister, drain, a registry call combined through the reclaimer;
//     wait_until_completed): links a wait_entry on its own stack in waiters_ (under m_, until it
//     returns; asleep set while it sleeps), then under m_, loop: its ticket done (ticket_done;
//     drain: done_through) → return; in manual mode, the lot due (told, or a drain timer) and nobody polling it → it
//     polls the Lot; no batch running and its request not taken (and the callers the last batch
//     released are awake: no entry asleep whose wait is over) → it leads: runs the Batch of
//     everything pending on its own thread; else sleeps on done_cv_ (in manual mode until the
//     lot's next timer).
//   Lone unregister (claim_direct/run_direct): under m_, nothing running or pending and the
//     bytes fit → claims the run, runs a batch of its one object, releases the run, notifies
//     done_cv_ (no ticket). If its drain is about to sleep on a holder, it releases the run and
//     its bytes first (release_direct_claim) and waits for its own object alone.
//   Runner (the background thread; reclaimer_loop — the only thread the reclaimer starts): under
//     m_, loop: stopping, nothing pending and the lot empty → exit; the lot due → polls the Lot;
//     no batch running and one due → runs the Batch; else sleeps on work_cv_ (until the oldest
//     request's age deadline or the lot's next timer).
//   Batch (run_batch_unlocked): claims the run (running = true) under m_; under the writer lock
//     takes every pending request (taken = issued, pending = 0, the next slot becomes current);
//     runs the slot's engine (rollback_many's, kept in the slot). If its ref drain still finds
//     objects held after its first pass and one flush, it parks (run_after_grace_periods_or_park:
//     the drain stays in the engine, its lock released, every last put now tells the lot); the
//     tickets of the held objects are recorded in the slot (note_parked_tickets). At the end,
//     under m_: a parked slot joins the lot (told, so it is polled once at least);
//     ticket_completion::batch_ended (may advance completed); running = false; its bytes
//     released (a parked batch's held objects are their holders' now); notifies done_cv_ (and
//     work_cv_ if requests are pending or it parked).
//   Last put (ref_count::put of a draining object, ref_drain.hpp): marks the count told under the
//     drain's lock and notifies the drain's condition variable; a parked drain's put then calls
//     lot_told: under m_ the lot is told; notifies work_cv_ and done_cv_.
//   Lot (poll_lot, one thread at a time: polling): under m_ clears told, then for each parked
//     slot, without m_: its drain destroys what was let go and runs its timers; a slot that holds
//     nothing more is finished under the writer lock, and under m_ leaves the lot (its tickets
//     are done); notifies done_cv_ if one did.
//   Taking batch (another writer's batch whose notify — a cascade, an owned parent's batch —
//     queues an object waiting in a slot; batch::queue → takeover_listener::taken_over): under
//     the writer lock the object moves into that batch; under m_ ++takeovers open; a node tied to
//     the object is disposed right after its destroy: under m_ --open and, at 0,
//     ticket_completion::takeover_destroyed (may advance completed); notifies done_cv_.
//
// Completion rule: a ticket is done when completed (ticket_completion) reached it — every batch up
// to it ended, and not while a batch that lost objects to a taking batch has ended and a
// taken-over object is still alive — and no slot of the lot holds it. Hence: ticket done ⇒ its
// object destroyed. Tickets complete per object, not in submit order.
// Wake-up rule: every change that can let a sleeper go on (running false, completed advancing,
// bytes released, open reaching 0, pending leaving 0) is made under m_ and followed by notify_all
// on the condition variable that sleeper waits on. The one change made without m_ (a submit that
// is no transition: pending from k ≥ 1 to k + 1, under every threshold) lets no sleeper go on.
//
// The model (formal-model/reclaimer.pml; README.md there says what each check printed). Its
// processes stand for: syncer — unregister (submit, then Waiter); submitter — submit, later
// wait(ticket) (Waiter), or with SUBMIT_ONLY never; runner — the Runner; holder — the Last put;
// run_batch — the Batch (its end, end_batch; the lot's poll is a batch that destroys what was
// handed back). The submit is one step under m_ (PUBLISH=0, before 2026-12-05) or (PUBLISH=1)
// the steps above, each its own: the look at the budget (the writer lock taken), the charge and
// the transition test, then on a transition one step under m_ (transition_seq_, the store of
// issued, the load of blocked_now_) and one per notify; otherwise the store of issued, the load
// of blocked_now_, the empty critical section, the notifies. reserve's ++blocked_now_, each of
// its looks at fits/pending and its wait are steps with m_ held between them; so are the
// Runner's due() look, its deadline's second look at pending (an age timer only if requests are
// pending and no batch runs) and its wait. The checks: no deadlock, no lost wake-up (every
// caller returns, every object is destroyed), ticket done ⇒ object destroyed, charge ≤ budget +
// one object. Mutants it catches: the first pending request published without m_ (the Runner
// sleeps with no timer), a transition published without m_ (a blocked submitter or the Runner,
// between its look and its wait, misses the notify), a transition that does not notify done_cv_
// for a blocked submitter. The handshake (a publish without m_ seeing blocked_now_ > 0; reached
// when one caller submits twice) may be reordered or dropped with no check failing: a sleeper
// needs it only when the transition test is wrong (with the first mutant, reordered, it fails).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rcubatch::detail {

/// When an async_unregister's tickets complete, as far as batches and take-overs decide it (see
/// the file comment): the watermark completed(). A ticket at or below it is done unless its
/// object is parked (async_unregister asks its lot). Requires: every member is called under the
/// reclaimer's m_. Never allocates.
class ticket_completion {
 public:
  /// Every ticket up to it whose object is not parked is done (its object destroyed).
  std::uint64_t completed() const noexcept { return completed_; }
  /// Objects taken over from the reclaimer's queues and not yet destroyed.
  std::size_t takeovers_open() const noexcept { return open_; }
  /// The highest ticket whose batch ended (finished or parked): a request up to it is in no
  /// running batch.
  std::uint64_t settled() const noexcept { return ended_; }

  /// The batch that took the tickets up to `through` ended (finished, or parked: its held objects
  /// are the lot's); `lost` if objects of it were taken over before it ran. Returns the new
  /// completed(), or 0 if it did not advance.
  std::uint64_t batch_ended(std::uint64_t through, bool lost) noexcept {
    ended_ = std::max(ended_, through);
    if (lost && open_ != 0) waits_for_takeovers_ = true;
    return advance();
  }

  void taken_over() noexcept { ++open_; }
  /// A taken-over object was destroyed. Returns the new completed(), or 0.
  std::uint64_t takeover_destroyed() noexcept { return --open_ == 0 ? advance() : 0; }

 private:
  std::uint64_t advance() noexcept {
    if (waits_for_takeovers_ && open_ != 0) return 0;
    waits_for_takeovers_ = false;
    if (ended_ <= completed_) return 0;
    completed_ = ended_;
    return completed_;
  }

  std::uint64_t completed_ = 0;            // the answer: tickets up to it are done (unless parked)
  std::uint64_t ended_ = 0;                // the highest ticket whose batch ended or parked
  std::size_t open_ = 0;                   // taken-over objects still alive
  bool waits_for_takeovers_ = false;       // a batch that lost objects ended while open_ != 0
};

}  // namespace rcubatch::detail
