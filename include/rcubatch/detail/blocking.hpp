// rcubatch/detail/blocking.hpp — every blocking wait of a registered thread, offline under qsbr.
//
// Under QSBR an online registered thread is a reader at all times: if it blocks (a mutex, a
// condition variable, a grace period, the memory budget, a ticket) while online, every grace
// period of that flavor waits for it; if what it waits for is itself waiting for a grace period
// (a writer holding the writer lock through its GP, the reclaimer), that is a deadlock (measured:
// two online qsbr threads calling a mutex-guarded synchronize never return). So every wait in
// rcubatch that can block goes through offline_while_blocked — one helper, so a new wait cannot
// forget it — and comes back online after. For memb, mb and bp it compiles to nothing.
//
//   detail::offline_while_blocked<Flavor> offline;   // offline from here (qsbr, online threads)
//   cv.wait(lock);                                    // online again at the end of the scope
//
//   detail::lock_offline<Flavors>(mutex);            // try_lock first: no offline/online
//                                                    // round trip when the lock is free
//
// The thread goes offline only when it is online (liburcu's read_ongoing) and inside no
// read_guard: inside a guard, going offline would drop the guard's protection, and the callers
// diagnose a blocking call there as blocking_in_read_section before they wait; a thread that is
// not registered, or already offline, has nothing to leave. Nested scopes are fine: offline_scope
// counts them. `Flavors` may be one flavor or a std::tuple of them (a registry's flavor and its
// indexes' flavors, duplicates allowed).
#pragma once

#include <concepts>
#include <optional>
#include <tuple>

#include "rcubatch/flavor.hpp"
#include "rcubatch/read_guard.hpp"

namespace rcubatch::detail {

/// Offline for its scope in one flavor, when that flavor is quiescent-state based and the thread
/// is online in it outside any read_guard; otherwise nothing.
template <class F>
class offline_in_flavor {
 public:
  offline_in_flavor() noexcept {
    if constexpr (F::quiescent_state_based) {
      if (reader<F>.read_depth == 0 && F::read_ongoing()) scope_.emplace();
    }
  }
  offline_in_flavor(const offline_in_flavor&) = delete;
  offline_in_flavor& operator=(const offline_in_flavor&) = delete;

 private:
  struct none {};
  [[no_unique_address]] std::conditional_t<F::quiescent_state_based, std::optional<offline_scope<F>>, none> scope_;
};

/// Offline in each of Flavors (or of the flavors of a std::tuple<Flavors...>) for its scope.
template <class... Flavors>
class offline_while_blocked {
 public:
  offline_while_blocked() noexcept = default;
  offline_while_blocked(const offline_while_blocked&) = delete;
  offline_while_blocked& operator=(const offline_while_blocked&) = delete;

 private:
  std::tuple<offline_in_flavor<Flavors>...> scopes_;
};
template <class... Flavors>
class offline_while_blocked<std::tuple<Flavors...>> : public offline_while_blocked<Flavors...> {};

/// Whether any of the flavors is quiescent-state based (only then is there anything to do).
template <class... Flavors>
inline constexpr bool any_quiescent_state_based = (Flavors::quiescent_state_based || ...);
template <class... Flavors>
inline constexpr bool any_quiescent_state_based<std::tuple<Flavors...>> = (Flavors::quiescent_state_based || ...);

/// Takes `lock` as a blocking wait: a free lock is taken online (try_lock, when the type has it);
/// a contended one is waited for offline.
template <class Flavors, class Lockable>
void lock_offline(Lockable& lock) {
  if constexpr (!any_quiescent_state_based<Flavors>) {
    lock.lock();
  } else {
    if constexpr (requires { { lock.try_lock() } -> std::convertible_to<bool>; }) {
      if (lock.try_lock()) return;
    }
    offline_while_blocked<Flavors> offline;
    lock.lock();
  }
}

/// True when the calling thread is a call_rcu worker of any of Flavors (one flavor or a
/// std::tuple of them; on_call_rcu_worker, flavor.hpp). Such a thread must not wait for work that
/// may need a barrier of one of them: the barrier would wait for this worker (combining.hpp's
/// gate sends such a caller alone). O(flavors), never blocks.
template <class... Flavors>
struct on_call_rcu_worker_of {
  static bool now() noexcept { return (on_call_rcu_worker<Flavors>() || ...); }
};
template <class... Flavors>
struct on_call_rcu_worker_of<std::tuple<Flavors...>> : on_call_rcu_worker_of<Flavors...> {};

}  // namespace rcubatch::detail
