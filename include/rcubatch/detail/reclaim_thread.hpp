// rcubatch/detail/reclaim_thread.hpp — what the calling thread is doing for an async_unregister:
// running one of its batches (the hooks), or being its background thread.
//
// The reclaimer asks this before it blocks or charges the budget, because the answer changes what
// is legal: a submit from a hook of the reclaimer's own batch (destroy) must never wait for the
// budget, which only that batch's end releases; a wait, drain or run from such a hook, or from
// on_batch on the background thread, would wait for batches that only this thread can finish
// (misuse waits_for_own_batch, refused instead of a deadlock). Thread-locals, because the hooks
// are the user's code: nothing else carries "on whose behalf" through them.
#pragma once

#include <atomic>
#include <cstdint>
#include <tuple>
#include <utility>

#include "rcubatch/read_guard.hpp"

namespace rcubatch::detail {

/// Each async_unregister's id (tickets carry it: a foreign ticket is diagnosed).
inline std::atomic<std::uint64_t> g_next_reclaimer_id{1};
/// The async_unregister whose batch the calling thread is running (its hooks), if any.
inline thread_local const void* t_running_batch_of = nullptr;
/// The async_unregister whose background reclaimer thread this is (on_batch runs there), if any.
inline thread_local const void* t_reclaimer_thread_of = nullptr;

/// Marks the calling thread as running `reclaimer`'s batch (its hooks: submit from destroy is
/// counted and never budget-blocked; the waits are diagnosed) for its scope.
struct running_batch_mark {
  explicit running_batch_mark(const void* reclaimer) noexcept
      : outer(std::exchange(t_running_batch_of, reclaimer)) {}
  ~running_batch_mark() { t_running_batch_of = outer; }
  running_batch_mark(const running_batch_mark&) = delete;
  running_batch_mark& operator=(const running_batch_mark&) = delete;
  const void* outer;
};

/// The background thread's registration with every flavor of its registry (the registry's and
/// the indexes'), for its lifetime: its batches' grace periods and read sections need it.
template <class Tuple>
struct thread_registrations;
template <class... Fs>
struct thread_registrations<std::tuple<Fs...>> {
  std::tuple<thread_registration<Fs>...> registrations;
};

}  // namespace rcubatch::detail
