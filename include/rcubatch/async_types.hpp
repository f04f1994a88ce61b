// rcubatch/async_types.hpp — the values an async_unregister is configured with and hands back:
// reclaim_mode, over_budget, async_options, unregister_ticket, submit_result.
//
// What each option does, and what the reclaimer does with a ticket, is async_unregister.hpp's
// file comment. Included by async_unregister.hpp (users include that one); include this alone to
// pass options and tickets around without the reclaimer's template (as async_stats.hpp does for
// its statistics).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "rcubatch/async_stats.hpp"
#include "rcubatch/registry_types.hpp"
#include "rcubatch/rollback_many.hpp"

namespace rcubatch {

/// Who runs the batches of an async_unregister.
enum class reclaim_mode : unsigned char {
  background_thread,  ///< a thread the async_unregister owns (registered with the flavor)
  manual,             ///< the application's threads: run_now / run_if_due / wait / drain
};

/// What submit does when the budget is exhausted.
enum class over_budget : unsigned char {
  block,   ///< wait until enough batches end (counted in async_stats::blocked_submits)
  refuse,  ///< return an empty ticket at once, nothing changed (async_stats::refused)
};

/// How an async_unregister batches. Every threshold counts requests pending (submitted, not yet
/// taken by a batch); the budget counts requests not yet destroyed.
struct async_options {
  reclaim_mode mode = reclaim_mode::background_thread;  ///< who runs the batches (reclaim_mode)
  std::size_t batch_count = 4096;                ///< a batch starts at this many pending requests
  std::size_t batch_bytes = std::size_t{4} << 20;  ///< ... or at this many pending bytes
  /// ... or when the oldest pending request is this old, counted from the later of its submit and
  /// the end of the previous batch (see the file comment). 0: as soon as anything is pending.
  std::chrono::microseconds max_age{1000};
  std::size_t budget_bytes = std::size_t{64} << 20;  ///< charged bytes (submitted, not destroyed) at most
  over_budget when_over_budget = over_budget::block;  ///< a submit above the budget blocks or is refused
  /// Release the registry's writer lock during the batch's waits (rollback_many.hpp). Turn it off
  /// only if a lock nests inside the writer lock; submitters then wait for the batches' GPs.
  bool unlock_during_waits = true;
  /// Hold the writer lock through the ref drain and destroy as well (registry_options has the
  /// same switch and says what it costs); only read when unlock_during_waits is off. With it on,
  /// submit from destroy is refused (holds_writer_lock) instead of deadlocking.
  bool hold_lock_through_drain = false;
  rollback_options rollback{};  ///< passed to each batch's rollback_many
  /// Called after each batch on the thread that ran it, outside every lock of this object and of
  /// the registry. Must not throw (an exception is caught and dropped). On the background thread
  /// it must not wait for batches (wait, unregister, drain, run_now: diagnosed, refused).
  std::function<void(const async_batch_report&)> on_batch{};
  /// Attach to the registry's combining gate, so that its own registry::unregister(obj),
  /// try_unregister(obj) and try_unregister<I>(key), called from many threads, share batches of
  /// the registry, counted in this reclaimer's stats() (see "Attached to its registry" in the file
  /// comment; registry_options::combining does the same without a reclaimer). Off: the registry's
  /// calls combine only if its own option says so. At most one reclaimer per registry may attach
  /// (a second: misuse attached_twice).
  bool combine_registry_unregister = false;
};

// The one class that makes tickets (unregister_ticket's friend below).
template <class Registry>
class async_unregister;

/// What submit returns: names one request of one async_unregister. An empty ticket (operator
/// bool false) says the submit was refused. Trivially copyable, compared by value.
class unregister_ticket {
 public:
  unregister_ticket() noexcept = default;
  /// True for an accepted request.
  explicit operator bool() const noexcept { return sequence_ != 0; }
  /// The request's number in its reclaimer, 1, 2, 3, ... in submit order (0: empty ticket).
  std::uint64_t sequence() const noexcept { return sequence_; }
  /// Equal when they name the same request (or are both empty).
  friend bool operator==(unregister_ticket, unregister_ticket) = default;

 private:
  template <class>
  friend class async_unregister;
  unregister_ticket(std::uint64_t seq, std::uint64_t owner) noexcept : sequence_(seq), owner_(owner) {}
  std::uint64_t sequence_ = 0;
  std::uint64_t owner_ = 0;
};

/// What try_submit returns. A lost race is a result, not misuse.
struct submit_result {
  /// unregistered: submitted (ticket set); not_found (by key); already_unregistering (by object);
  /// refused: the budget (over_budget::refuse) or misuse under report, nothing changed.
  unregister_status status = unregister_status::refused;
  unregister_ticket ticket{};  ///< the request's ticket when status is unregistered; empty otherwise
  /// True when submitted.
  explicit operator bool() const noexcept { return status == unregister_status::unregistered; }
};

}  // namespace rcubatch
