// rcubatch/detail/reclaim_waiters.hpp — async_unregister's synchronous callers: who waits in
// wait_until_completed, and who of those a batch end released and has not called again.
//
// Every caller that waits (wait, unregister, drain) links a wait_entry on its own stack, under
// the reclaimer's m_, from its first look to its return — as liburcu's synchronize_rcu queues its
// urcu_wait nodes. What the reclaimer knows about its waiters is read off these entries, not kept
// in counters beside them (issue 35: the sleeper/away counters described the same thing from
// outside and drifted from it).
//
// Why it asks (the gather): a waiting caller leads the next batch only once every caller the
// last batch released has run again. They are runnable (woken, inside the reclaimer), and a
// closed-loop caller resubmits as soon as it returns, so the next batch takes their requests too
// instead of leaving them for the batch after — a gather on an event certain to come soon, not a
// timer. Likewise, until every caller the last batch released — its leader too — has called
// again (callers_away), a lone unregister takes a ticket instead of the direct path, and a caller
// about to lead yields the CPU once first: on a shared CPU a woken thread preempts its waker, so
// the batch would otherwise start before they can join (measured, issue 24: two writers on one
// CPU combined nothing). One yield, never a wait: a caller that never calls again costs the next
// leader one yield, once. A caller that returned has no entry any more, so "called again" is a
// thread-local mark (t_released_by_batch), matched against the last batch that ended.
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/intrusive/list.hpp>

namespace rcubatch::detail {

/// The batch (a generation id, or a direct batch's id from the same counter) that last completed
/// a synchronous call of this thread (unregister, wait) — as its leader or a follower; 0 once
/// the thread came back (reclaim_waiters::came_back) or when it is unknown.
inline thread_local std::uint64_t t_released_by_batch = 0;

/// A synchronous caller waiting in wait_until_completed, on its own stack.
/// Boost.Intrusive: no allocation per wait, O(1) link and unlink.
struct wait_entry : boost::intrusive::list_base_hook<> {
  std::uint64_t seq = 0;  // the ticket it waits for (drain: every ticket up to it)
  bool flush = false;     // drain's wait: done_through, not ticket_done
  bool asleep = false;    // in done_cv_'s wait (offline under qsbr)
};

/// The waiters of one reclaimer and the callers its last batch released. Requires: every member
/// under the reclaimer's m_. The waiting path's other fields (running_, taken_, the ticket
/// completion and the lot) decide whether a waiter is done or leads; these say who waits, who of
/// them a batch end released, and who left since and has not called again.
class reclaim_waiters {
 public:
  /// Links an entry for the scope of a wait (m_ is held at every exit of the wait, a throw
  /// included, so the unlink is under m_ too).
  class linked {
   public:
    linked(reclaim_waiters& w, wait_entry& e) noexcept : w_(w), e_(e) { w_.waiters_.push_back(e_); }
    ~linked() { w_.waiters_.erase(w_.waiters_.iterator_to(e_)); }
    linked(const linked&) = delete;
    linked& operator=(const linked&) = delete;

   private:
    reclaim_waiters& w_;
    wait_entry& e_;
  };

  /// A batch `id` ended: every waiter whose request is settled (≤ `settled`: no running batch
  /// has it) is released, with those earlier batches released still inside the wait (runnable,
  /// not yet returned). Away until they call again (came_back).
  void batch_released(std::uint64_t id, std::uint64_t settled) noexcept { released(id, 0, settled); }
  /// A lone unregister's batch `id` ended (the direct path): its caller, this thread, is inside
  /// the reclaimer until it returns, without an entry — away as well, and marked.
  void direct_released(std::uint64_t id, std::uint64_t settled) noexcept {
    t_released_by_batch = released(id, 1, settled);
  }

  /// The calling thread is back (unregister, wait): if the last batch released it, one fewer of
  /// its callers is away.
  void came_back() noexcept {
    if (t_released_by_batch == 0) return;
    if (t_released_by_batch == last_released_batch_ && callers_away_ != 0) --callers_away_;
    t_released_by_batch = 0;
  }
  /// A waiter returns: the last batch that ended released it (it counted this caller away).
  void returning() const noexcept { t_released_by_batch = last_released_batch_; }

  /// Callers the last batch released (or earlier ones) have not called again since.
  bool callers_away() const noexcept { return callers_away_ != 0; }

  /// Waiters whose wait is over (`done(entry)`) and that have not run since a batch end woke
  /// them. A waiting caller leads the next batch only once this is 0 (the gather, above).
  template <class Done>
  std::size_t released_still_asleep(const Done& done) const noexcept {
    std::size_t n = 0;
    for (const wait_entry& e : waiters_) n += e.asleep && done(e) ? 1 : 0;
    return n;
  }

 private:
  std::uint64_t released(std::uint64_t id, std::size_t direct, std::uint64_t settled) noexcept {
    last_released_batch_ = id;
    callers_away_ = direct + released_inside(settled);
    return id;
  }
  /// Waiters whose batch ended (or parked): no running batch has their request.
  std::size_t released_inside(std::uint64_t settled) const noexcept {
    std::size_t n = 0;
    for (const wait_entry& e : waiters_) n += e.seq <= settled ? 1 : 0;
    return n;
  }

  boost::intrusive::list<wait_entry> waiters_;  // every caller in wait_until_completed, on its stack
  std::uint64_t last_released_batch_ = 0;       // the last batch that ended (batch_released)
  std::size_t callers_away_ = 0;                // callers it released (or earlier ones) not called again since
};

}  // namespace rcubatch::detail
