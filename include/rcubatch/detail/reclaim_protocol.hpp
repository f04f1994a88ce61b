// rcubatch/detail/reclaim_protocol.hpp — who waits, who wakes whom, and when a ticket completes,
// in an async_unregister; and ticket_completion, the part of it that decides the last.
//
// The protocol (what formal-model/ checks; every name below is a member of async_unregister
// unless said otherwise). One mutex m_ guards the state; two condition variables: work_cv_
// (a batch may be due: runners) and done_cv_ (a batch ended or parked, bytes were released, a
// taken-over object was destroyed: waiters, blocked submitters, the destructor).
//
//   Submitter (submit, try_submit; submit_locked): under the writer lock, queues the object in
//     the current slot, charges its bytes if they fit (else: leaves the writer lock and waits in
//     reserve — below), then under m_: ++issued, ++pending; notifies work_cv_ on the first
//     request and when a threshold is crossed (and done_cv_ if a submitter is blocked); unlists.
//   Budget-blocked submitter (reserve): under m_, while the bytes do not fit: in manual mode, if
//     no batch runs and requests are pending, runs one itself (Batch, below); else sleeps on
//     done_cv_. Woken by every release of bytes (batch end, park, unreserve).
//   Waiter (wait, unregister, drain, a registry call combined through the reclaimer;
//     wait_until_completed): under m_, loop: completed ≥ its ticket → return; no batch running
//     and its request not taken (and the callers the last batch released are awake) → it leads:
//     runs the Batch of everything pending on its own thread; else sleeps on done_cv_.
//   Lone unregister (claim_direct/run_direct): under m_, nothing running or pending and the
//     bytes fit → claims the run, runs a batch of its one object, releases the run, notifies
//     done_cv_ (no ticket).
//   Runner (the background thread, and each spare runner started when a batch parks;
//     reclaimer_loop): under m_, loop: stopping and nothing pending → exit; no batch running and
//     one due → runs the Batch; else sleeps on work_cv_ (until the oldest request's age deadline).
//   Batch (run_batch_unlocked): claims the run (running = true) under m_; under the writer lock
//     takes every pending request (taken = issued, pending = 0, the next slot becomes current);
//     runs rollback_many on the taken slot. If its ref drain finds objects still held after its
//     first pass, it parks: under m_ running = false, its range is recorded as parked, its bytes
//     leave the budget; notifies done_cv_ and work_cv_ (a spare runner is started in background
//     mode when no runner is idle); the drain then sleeps until the Last put. At the end, under
//     m_: ticket_completion::batch_ended (may advance completed), running = false unless it
//     parked, its bytes released unless it parked; notifies done_cv_ (and work_cv_ if requests
//     are pending).
//   Last put (ref_count::put of a draining object, ref_drain.hpp): marks the count told under the
//     drain's lock and notifies the drain's condition variable; the parked batch destroys the
//     object and ends as above.
//   Taking batch (another writer's batch whose notify — a cascade, an owned parent's batch —
//     queues an object waiting in a slot; batch::queue → takeover_listener::taken_over): under
//     the writer lock the object moves into that batch; under m_ ++takeovers open; a node tied to
//     the object is disposed right after its destroy: under m_ --open and, at 0,
//     ticket_completion::takeover_destroyed (may advance completed); notifies done_cv_.
//
// Completion rule (ticket_completion): tickets complete in order; completed advances to the end
// of the longest prefix of taken ranges whose batches ended, never past a parked batch, and not
// while a batch that lost objects to a taking batch has ended and a taken-over object is still
// alive. Hence: ticket done ⇒ every object of it and before it destroyed.
// Wake-up rule: every change that can let a sleeper go on (running false, completed advancing,
// bytes released, open reaching 0) is made under m_ and followed by notify_all on the condition
// variable that sleeper waits on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rcubatch::detail {

/// When an async_unregister's tickets complete (see the file comment). Requires: every member
/// is called under the reclaimer's m_. Allocates only when a batch parks (one entry per batch
/// parked at a time).
class ticket_completion {
 public:
  /// The last ticket completed: every object of every ticket up to it was destroyed.
  std::uint64_t completed() const noexcept { return completed_; }
  /// Objects taken over from the reclaimer's queues and not yet destroyed.
  std::size_t takeovers_open() const noexcept { return open_; }

  /// A batch of the tickets (after, through] parks (its drain waits for holders). Throws
  /// std::bad_alloc (then nothing changed: the batch simply does not park).
  void batch_parked(std::uint64_t after, std::uint64_t through) {
    parked_.emplace_back(after, through);
    parked_max_ = std::max(parked_max_, through);
  }
  /// The highest ticket whose batch ended or parked: a request up to it is in no running batch.
  std::uint64_t settled() const noexcept { return std::max(ended_, parked_max_); }

  /// The batch of (after, through] ended; `parked` if it had parked; `lost` if objects of it
  /// were taken over before it ran. Returns the new completed(), or 0 if it did not advance.
  std::uint64_t batch_ended(std::uint64_t after, std::uint64_t through, bool parked, bool lost) noexcept {
    if (parked) std::erase(parked_, std::pair{after, through});
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
    std::uint64_t target = ended_;
    for (const auto& [after, through] : parked_) target = std::min(target, after);
    if (target <= completed_) return 0;
    completed_ = target;
    return target;
  }

  std::uint64_t completed_ = 0;            // the answer: tickets up to it are done
  std::uint64_t ended_ = 0;                // the highest ticket whose batch ended
  std::uint64_t parked_max_ = 0;           // the highest ticket whose batch parked
  std::size_t open_ = 0;                   // taken-over objects still alive
  bool waits_for_takeovers_ = false;       // a batch that lost objects ended while open_ != 0
  std::vector<std::pair<std::uint64_t, std::uint64_t>> parked_;  // (after, through] of parked batches
};

}  // namespace rcubatch::detail
