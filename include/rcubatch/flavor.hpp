// rcubatch/flavor.hpp — compile-time traits over the liburcu 0.13.2 flavors.
//
// A flavor is a type with static functions; every rcubatch template takes one (default: memb).
//
//   rcubatch::flavor::memb   membarrier-based, the liburcu default; readers are cheap, a GP with a
//                            busy reader costs ~17 µs here (two membarrier IPIs).
//   rcubatch::flavor::qsbr   quiescent-state based: read_lock is free, threads must announce
//                            quiescent states or go offline; GP ~300 ns here.
//   rcubatch::flavor::mb     full barriers on the read side, GP ~160 ns here.
//   rcubatch::flavor::bp     "bulletproof": lazy registration, fork-safe; GP ~17 µs here.
//
// All four in one type list, and choosing one by name at run time: rcubatch/flavor_list.hpp.
// Link the matching library (CMake: rcubatch::flavor_qsbr etc.). Only the prefixed liburcu headers
// are included: the generic <urcu.h> defines macros named call_rcu, synchronize_rcu, rcu_barrier and
// rcu_read_lock that would rewrite any C++ identifier with those names.
//
// A flavor provides: name, quiescent_state_based, register_thread, unregister_thread, read_lock,
// read_unlock, read_ongoing, quiescent_state, thread_offline, thread_online, synchronize, call and
// barrier — the `rcu_flavor` concept below checks it, so a test double (counting_flavor.hpp) can
// stand in for liburcu. The four liburcu flavors also give table(), their rcu_flavor_struct, for
// liburcu's own data structures (rculfhash: cds_lfht_new_flavor(..., &F::table(), ...)).
//
// Misuse: flavors are raw; call the checked wrappers (read_guard, grace_domain) instead.
#pragma once

#include <concepts>
#include <string_view>

#include <pthread.h>

#include <urcu/urcu-bp.h>
#include <urcu/urcu-mb.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>

#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/fwd.hpp"

// liburcu 0.13.2 guards <urcu/call-rcu.h> with one include guard for all flavors, so only the
// first flavor header included above declares its call_rcu/barrier entry points. Declare all of
// them; the signatures are the library's own, so repeating a declaration is harmless.
extern "C" {
void urcu_memb_call_rcu(struct rcu_head*, void (*)(struct rcu_head*));
void urcu_memb_barrier(void);
void urcu_qsbr_call_rcu(struct rcu_head*, void (*)(struct rcu_head*));
void urcu_qsbr_barrier(void);
void urcu_mb_call_rcu(struct rcu_head*, void (*)(struct rcu_head*));
void urcu_mb_barrier(void);
void urcu_bp_call_rcu(struct rcu_head*, void (*)(struct rcu_head*));
void urcu_bp_barrier(void);
// The same guard hides the per-thread call_rcu data queries (the four flavors' own symbols).
struct call_rcu_data;
struct call_rcu_data* urcu_memb_get_thread_call_rcu_data(void);
pthread_t urcu_memb_get_call_rcu_thread(struct call_rcu_data*);
struct call_rcu_data* urcu_qsbr_get_thread_call_rcu_data(void);
pthread_t urcu_qsbr_get_call_rcu_thread(struct call_rcu_data*);
struct call_rcu_data* urcu_mb_get_thread_call_rcu_data(void);
pthread_t urcu_mb_get_call_rcu_thread(struct call_rcu_data*);
struct call_rcu_data* urcu_bp_get_thread_call_rcu_data(void);
pthread_t urcu_bp_get_call_rcu_thread(struct call_rcu_data*);
// The same guard problem hides all but one flavor's function table from <urcu/flavor.h>.
extern const struct rcu_flavor_struct urcu_memb_flavor;
extern const struct rcu_flavor_struct urcu_qsbr_flavor;
extern const struct rcu_flavor_struct urcu_mb_flavor;
extern const struct rcu_flavor_struct urcu_bp_flavor;
}

namespace rcubatch {

using rcu_callback = void (*)(rcu_head*);

/// What a flavor is: the contract of each function, shared by the four liburcu flavors below and
/// by test doubles (each struct's members only forward to liburcu, so they are not repeated there).
/// "Registered" means between register_thread() and unregister_thread() on the calling thread.
///
///   name                  the liburcu flavor name ("memb", "qsbr", ...), for messages.
///   quiescent_state_based true for qsbr: an online registered thread is a reader at all times.
///   register_thread()     Requires: not registered (liburcu 0.13.2 asserts and aborts; use
///                         thread_registration, which counts nesting). Blocking: takes liburcu's
///                         registry mutex. QSBR: the thread is online on return.
///   unregister_thread()   Requires: registered, outside any read-side section. Blocking: registry
///                         mutex. bp: a no-op (bp threads are unregistered at thread exit).
///   read_lock()/read_unlock()  Requires: registered (bp: registers on first use); nest freely.
///                         Blocking: never; memb: a compiler barrier, no fence. qsbr: no-ops.
///   read_ongoing()        memb, mb, bp: inside read_lock/read_unlock; qsbr: the thread is online.
///   quiescent_state()     qsbr: "I hold no protected pointer"; Requires: registered, online, in
///                         no read-side section. Others: a no-op.
///   thread_offline()/thread_online()  qsbr: leave/rejoin the readers GPs wait for; not nestable
///                         (use offline_scope, which is). Others: no-ops.
///   synchronize()         Effects: returns after every read-side section that began before the
///                         call has ended. Requires: outside any read-side section (deadlock for
///                         memb, mb, bp; qsbr goes offline for the wait). Blocking: yes, a GP.
///   call(head, cb)        Effects: cb(head) runs on liburcu's worker after a grace period.
///                         Requires: registered caller; head valid until cb runs. Blocking: never.
///   barrier()             Effects: waits for every call() callback queued before it.
///                         Requires: outside any read-side section. Blocking: yes.
///   table() (liburcu flavors only)  liburcu's rcu_flavor_struct, for cds_lfht_new_flavor.
///   on_call_rcu_worker() (optional; the four liburcu flavors have it)  true on one of the
///                         flavor's call_rcu worker threads (read it through on_call_rcu_worker<F>()).
/// None of them throws.
template <class F>
concept rcu_flavor = requires(rcu_head* head, rcu_callback cb) {
  { F::name } -> std::convertible_to<std::string_view>;
  { F::quiescent_state_based } -> std::convertible_to<bool>;
  F::register_thread();
  F::unregister_thread();
  F::read_lock();
  F::read_unlock();
  { F::read_ongoing() } -> std::convertible_to<bool>;
  F::quiescent_state();
  F::thread_offline();
  F::thread_online();
  F::synchronize();
  F::call(head, cb);
  F::barrier();
};

namespace detail {
/// Whether the calling thread is the call_rcu worker of `crdp`, the thread's own call_rcu data.
/// liburcu 0.13.2 sets a worker's call_rcu data to its own when it starts (call_rcu_thread) and has
/// no direct "am I a worker" query; any thread may also point its data at a worker
/// (set_thread_call_rcu_data) to direct its callbacks there, so the worker's thread id decides.
inline bool is_call_rcu_worker(struct call_rcu_data* crdp, pthread_t (*worker_of)(struct call_rcu_data*)) noexcept {
  return crdp != nullptr && pthread_equal(worker_of(crdp), pthread_self()) != 0;
}
}  // namespace detail

namespace flavor {

// One struct per flavor; the bodies only forward, so the four read alike on purpose.
/// liburcu's memb flavor, as an rcu_flavor.
struct memb {
  /// The rcu_flavor members, each forwarding to liburcu's urcu_memb_* (contract: rcu_flavor).
  ///@{
  static constexpr std::string_view name = "memb";
  static constexpr bool quiescent_state_based = false;
  static void register_thread() noexcept { urcu_memb_register_thread(); }
  static void unregister_thread() noexcept { urcu_memb_unregister_thread(); }
  static void read_lock() noexcept { urcu_memb_read_lock(); }
  static void read_unlock() noexcept { urcu_memb_read_unlock(); }
  static bool read_ongoing() noexcept { return urcu_memb_read_ongoing() != 0; }
  static void quiescent_state() noexcept {}
  static void thread_offline() noexcept {}
  static void thread_online() noexcept {}
  static void synchronize() noexcept { urcu_memb_synchronize_rcu(); }
  static void call(rcu_head* h, rcu_callback f) noexcept { urcu_memb_call_rcu(h, f); }
  static void barrier() noexcept { urcu_memb_barrier(); }
  static bool on_call_rcu_worker() noexcept {
    return detail::is_call_rcu_worker(urcu_memb_get_thread_call_rcu_data(), urcu_memb_get_call_rcu_thread);
  }
  ///@}
  /// liburcu's function table for this flavor, as rculfhash wants it (cds_lfht_new_flavor).
  static const rcu_flavor_struct& table() noexcept { return urcu_memb_flavor; }
};

/// liburcu's qsbr flavor, as an rcu_flavor.
struct qsbr {
  /// The rcu_flavor members, each forwarding to liburcu's urcu_qsbr_* (contract: rcu_flavor).
  ///@{
  static constexpr std::string_view name = "qsbr";
  static constexpr bool quiescent_state_based = true;
  static void register_thread() noexcept { urcu_qsbr_register_thread(); }
  static void unregister_thread() noexcept { urcu_qsbr_unregister_thread(); }
  static void read_lock() noexcept { urcu_qsbr_read_lock(); }
  static void read_unlock() noexcept { urcu_qsbr_read_unlock(); }
  /// True whenever the thread is online: under QSBR an online thread counts as a reader.
  static bool read_ongoing() noexcept { return urcu_qsbr_read_ongoing() != 0; }
  static void quiescent_state() noexcept { urcu_qsbr_quiescent_state(); }
  static void thread_offline() noexcept { urcu_qsbr_thread_offline(); }
  static void thread_online() noexcept { urcu_qsbr_thread_online(); }
  static void synchronize() noexcept { urcu_qsbr_synchronize_rcu(); }
  static void call(rcu_head* h, rcu_callback f) noexcept { urcu_qsbr_call_rcu(h, f); }
  static void barrier() noexcept { urcu_qsbr_barrier(); }
  static bool on_call_rcu_worker() noexcept {
    return detail::is_call_rcu_worker(urcu_qsbr_get_thread_call_rcu_data(), urcu_qsbr_get_call_rcu_thread);
  }
  ///@}
  /// liburcu's function table for this flavor, as rculfhash wants it (cds_lfht_new_flavor).
  static const rcu_flavor_struct& table() noexcept { return urcu_qsbr_flavor; }
};

/// liburcu's mb flavor, as an rcu_flavor.
struct mb {
  /// The rcu_flavor members, each forwarding to liburcu's urcu_mb_* (contract: rcu_flavor).
  ///@{
  static constexpr std::string_view name = "mb";
  static constexpr bool quiescent_state_based = false;
  static void register_thread() noexcept { urcu_mb_register_thread(); }
  static void unregister_thread() noexcept { urcu_mb_unregister_thread(); }
  static void read_lock() noexcept { urcu_mb_read_lock(); }
  static void read_unlock() noexcept { urcu_mb_read_unlock(); }
  static bool read_ongoing() noexcept { return urcu_mb_read_ongoing() != 0; }
  static void quiescent_state() noexcept {}
  static void thread_offline() noexcept {}
  static void thread_online() noexcept {}
  static void synchronize() noexcept { urcu_mb_synchronize_rcu(); }
  static void call(rcu_head* h, rcu_callback f) noexcept { urcu_mb_call_rcu(h, f); }
  static void barrier() noexcept { urcu_mb_barrier(); }
  static bool on_call_rcu_worker() noexcept {
    return detail::is_call_rcu_worker(urcu_mb_get_thread_call_rcu_data(), urcu_mb_get_call_rcu_thread);
  }
  ///@}
  /// liburcu's function table for this flavor, as rculfhash wants it (cds_lfht_new_flavor).
  static const rcu_flavor_struct& table() noexcept { return urcu_mb_flavor; }
};

/// liburcu's bp flavor, as an rcu_flavor. bp registers threads lazily on their first read_lock
/// and has no unregister entry point.
struct bp {
  /// The rcu_flavor members, each forwarding to liburcu's urcu_bp_* (contract: rcu_flavor).
  ///@{
  static constexpr std::string_view name = "bp";
  static constexpr bool quiescent_state_based = false;
  static constexpr bool registers_lazily = true;
  static void register_thread() noexcept { urcu_bp_register_thread(); }
  static void unregister_thread() noexcept {}
  static void read_lock() noexcept { urcu_bp_read_lock(); }
  static void read_unlock() noexcept { urcu_bp_read_unlock(); }
  static bool read_ongoing() noexcept { return urcu_bp_read_ongoing() != 0; }
  static void quiescent_state() noexcept {}
  static void thread_offline() noexcept {}
  static void thread_online() noexcept {}
  static void synchronize() noexcept { urcu_bp_synchronize_rcu(); }
  static void call(rcu_head* h, rcu_callback f) noexcept { urcu_bp_call_rcu(h, f); }
  static void barrier() noexcept { urcu_bp_barrier(); }
  static bool on_call_rcu_worker() noexcept {
    return detail::is_call_rcu_worker(urcu_bp_get_thread_call_rcu_data(), urcu_bp_get_call_rcu_thread);
  }
  ///@}
  /// liburcu's function table for this flavor, as rculfhash wants it (cds_lfht_new_flavor).
  static const rcu_flavor_struct& table() noexcept { return urcu_bp_flavor; }
};

}  // namespace flavor

// That the four satisfy rcu_flavor is checked where they are listed: rcubatch/flavor_list.hpp.

/// True when threads of F need no registration before their first read_lock: a flavor says so
/// with `static constexpr bool registers_lazily = true;` (bp, which registers on first use; the
/// counting_flavor test double, which protects nothing). read_guard diagnoses the others.
template <class F>
inline constexpr bool registers_lazily = [] {
  if constexpr (requires { F::registers_lazily; }) {
    return static_cast<bool>(F::registers_lazily);
  } else {
    return false;
  }
}();

namespace detail {
/// What rcubatch knows about the calling thread as a reader of Flavor. liburcu 0.13.2 keeps a
/// `registered` bit in its own per-thread reader struct (urcu_memb_reader etc., an exported TLS
/// symbol), but the struct's layout is only declared by the LGPL static headers that need
/// _LGPL_SOURCE, which rcubatch does not define; copying that private layout would break silently
/// on the next liburcu. So rcubatch keeps its own flags, set by thread_registration and
/// offline_scope: a thread registered by calling liburcu directly must say so
/// (thread_registration<F>{adopt_registration}). One struct, so read_guard's fast path reads one
/// flag (`ready`) in the same cache line as the depth it updates anyway.
template <class Flavor>
struct reader_state {
  unsigned read_depth = 0;         ///< read_guards open (QSBR: liburcu's read_ongoing means online)
  unsigned registrations = 0;      ///< thread_registration objects alive, nested ones included
  unsigned adoptions = 0;          ///< thread_registration{adopt_registration} objects alive
  unsigned offline_depth = 0;      ///< offline_scopes alive (the outermost took the thread offline)
  bool liburcu_worker = false;     ///< a call_rcu worker, registered by liburcu for its lifetime
  bool auto_registered = false;    ///< registered by read_guard after a reader_not_registered report
  bool online_for_guard = false;   ///< QSBR: the outermost guard brought an offline thread online
  bool ready = registers_lazily<Flavor>;  ///< registered and (QSBR) online: read_guard's fast path

  bool registered() const noexcept {
    return registers_lazily<Flavor> || registrations != 0 || adoptions != 0 || liburcu_worker || auto_registered;
  }
  bool offline() const noexcept {
    return Flavor::quiescent_state_based && offline_depth != 0 && !online_for_guard;
  }
  void update() noexcept { ready = registered() && !offline(); }
};

template <class Flavor>
inline thread_local reader_state<Flavor> reader{};
}  // namespace detail

/// Effects: true when the calling thread is inside a read-side section of Flavor, where blocking
/// on a grace period deadlocks (memb, mb, bp) or silently drops the reader's protection (qsbr):
/// a read_guard<Flavor> is open, or (not qsbr) liburcu's own read_ongoing() says so.
/// Complexity: O(1); one liburcu call for memb, mb and bp. Blocking: never.
template <class Flavor>
bool in_read_section() noexcept {
  if (detail::reader<Flavor>.read_depth > 0) return true;
  if constexpr (Flavor::quiescent_state_based) {
    return false;
  } else {
    return Flavor::read_ongoing();
  }
}

/// Effects: true when the calling thread is one of Flavor's liburcu call_rcu worker threads (it is
/// running a callback queued with Flavor::call, or call_after_grace_period). There, Flavor's
/// barrier can never return: liburcu's rcu_barrier queues a callback on every worker, this one
/// included, and waits for them all, and this worker runs nothing else until its current callback
/// returns ("rcu_barrier() should never be called from a call_rcu() thread", liburcu's
/// doc/rcu-api.md). The ref drain skips its barrier there (ref_drain.hpp, guarantee 5). False for a
/// flavor without on_call_rcu_worker() (a test double whose barrier runs callbacks inline).
/// Complexity: O(1), two liburcu calls. Blocking: never. Thread safety: any thread.
template <class Flavor>
bool on_call_rcu_worker() noexcept {
  if constexpr (requires { { Flavor::on_call_rcu_worker() } -> std::convertible_to<bool>; }) {
    return Flavor::on_call_rcu_worker();
  } else {
    return false;
  }
}

/// Effects: runs Cb(head) after a grace period on liburcu's call_rcu worker (Flavor::call), with
/// the ThreadSanitizer edges the raw call lacks: everything the caller did before, and every read
/// section that ended before the grace period, happen-before Cb.
/// liburcu overwrites head->func, so the callback is a template argument, not a runtime pointer.
/// The worker is registered by liburcu, and is marked so: Cb may open read_guard<Flavor>.
/// Requires: the caller is registered with Flavor; `head` stays valid until Cb runs. A process that
/// used it must call grace_domain::barrier() (liburcu rcu_barrier) before exit: 0.13.2 never stops
/// its worker.
/// Throws: nothing. Complexity: O(1) (a lock-free enqueue). Blocking: never; Cb runs later.
template <class Flavor, rcu_callback Cb>
void call_after_grace_period(rcu_head* head) noexcept {
  detail::tsan_release(head);
  Flavor::call(head, [](rcu_head* h) {
    auto& self = detail::reader<Flavor>;
    if (!self.liburcu_worker) {
      self.liburcu_worker = true;
      self.update();
    }
    detail::tsan_acquire(h);
    // liburcu's worker waited for a grace period TSan cannot see: say so, or every reader's
    // access to what Cb frees is reported as a race with the free.
    detail::tsan_grace_period_ended<Flavor>();
    Cb(h);
  });
}

}  // namespace rcubatch
