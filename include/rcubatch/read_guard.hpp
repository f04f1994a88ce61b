// rcubatch/read_guard.hpp — RAII read-side sections and thread registration.
//
//   rcubatch::thread_registration<> reg;          // once per reader thread, for its lifetime
//   {
//     rcubatch::read_guard<> guard;               // read-side section
//     device* d = slot.load(std::memory_order_acquire);  // d stays valid until the guard ends
//     use(*d);
//   }
//
//   rcubatch::thread_registration<rcubatch::flavor::qsbr> qsbr_reg;   // a qsbr reader thread
//   rcubatch::quiescent_state<rcubatch::flavor::qsbr>();   // qsbr readers: announce often
//   (compiled in tests/header_examples_test.cpp)
//
// Thread safety / memory ordering: a read_guard pins every object reachable when it began until
// it ends; publish pointers with std::atomic release stores and read them with acquire loads
// (or rculfhash). Under ThreadSanitizer the guard adds the annotation that tells TSan about the
// reader → grace-period ordering (detail/tsan.hpp).
//
// Misuse, diagnosed (each of these would let a grace period end under a reader that still holds
// a pointer, so the object is freed under it):
//   reader_not_registered  a read_guard on a thread not registered with the flavor (bp registers
//                          lazily and is exempt). A thread registered by calling liburcu directly
//                          must say so: thread_registration<F> mark{rcubatch::adopt_registration}.
//                          If it does not, the report is printed and the repair's second
//                          register call then trips liburcu's own check, which aborts.
//                          (liburcu's own `registered` bit is not reachable without _LGPL_SOURCE:
//                          see detail::reader_state in flavor.hpp.)
//   reader_offline         qsbr: a read_guard on an offline thread (inside an offline_scope), or an
//                          offline_scope opened inside a read_guard.
// Policy: the guard's constructor is noexcept (guards open in noexcept code everywhere), so these
// are reported as detail::diagnose_noexcept does — abort under abort_process, report under report
// and under throw_error (which cannot throw here) — and then *repaired*, because a read section
// cannot be refused: an unregistered thread is registered for the rest of its life (unregistered
// at thread exit), an offline qsbr thread is brought online until its outermost guard ends, and an
// offline_scope inside a guard is refused (the thread stays online). The reader is protected
// either way; the report tells you the code is wrong.
// Never block on a grace period (grace_domain::synchronize, rollback_many) inside a guard: rcubatch
// diagnoses it. Under qsbr a registered thread is a reader whenever it is online: a thread that
// sleeps or blocks for long must go offline (offline_scope) or it stalls every grace period.
//
// Cost: memb read_lock/unlock are two function calls and a compiler barrier (no fence); the
// registration/offline check adds one thread-local byte compare and a not-taken branch (g++ -O2:
// `cmpb $0, %fs:19(%r15); je` before the read_lock call). Measured 2026-12-01 11:17 UTC with a
// scratch benchmark (/tmp/rg_bench.cpp, not committed): one registered memb thread, a loop of
// guard + one acquire load of a table slot + one dependent load, 50 M sections per repetition,
// the c925af9 guard (no check) and this one alternating, 11 repetitions in one process:
//   g++ -std=c++20 -O2 -DNDEBUG -DURCU_INLINE_SMALL_FUNCTIONS -Iinclude /tmp/rg_bench.cpp
//       -lurcu-memb -o /tmp/rg_bench && /tmp/rg_bench
//   median 19.6 ns/section without the check, 21.6 ns with it; median of the per-repetition
//   ratios 1.005 (range 0.87-1.45: the 2-vCPU VM had load average 7 from other builds). The
//   check's cost is below this machine's run-to-run spread.
#pragma once

#include <string_view>

#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch {

/// Tag for thread_registration: the thread was registered with the flavor by other code (a direct
/// liburcu call, a framework); rcubatch only records it.
struct adopt_registration_t {
  explicit adopt_registration_t() = default;
};
inline constexpr adopt_registration_t adopt_registration{};

namespace detail {

/// Thread exit: undoes a registration that read_guard made after a reader_not_registered report
/// (liburcu would otherwise keep the dead thread's reader struct in its registry).
template <class Flavor>
struct auto_registration_release {
  auto_registration_release() noexcept = default;
  auto_registration_release(const auto_registration_release&) = delete;
  auto_registration_release& operator=(const auto_registration_release&) = delete;
  ~auto_registration_release() {
    auto& self = reader<Flavor>;
    if (self.auto_registered && self.registrations == 0 && self.read_depth == 0) {
      tsan_reader_leaves<Flavor>();
      Flavor::unregister_thread();
    }
    self.auto_registered = false;
    self.update();
  }
};

/// read_guard's slow path: the thread is unregistered, or (qsbr) offline. Diagnoses, then repairs.
template <class Flavor>
[[gnu::cold, gnu::noinline]] void reader_not_ready() noexcept {
  auto& self = reader<Flavor>;
  if (!self.registered()) {
    diag_text m("read_guard<");
    m += Flavor::name;
    m += "> opened on a thread not registered with ";
    m += Flavor::name;
    m += ": no grace period would wait for it. Register the thread (rcubatch::thread_registration<";
    m += Flavor::name;
    m += ">), or mark a thread registered through liburcu (thread_registration{adopt_registration}). "
         "Repaired: the thread is now registered until it exits.";
    diagnose_noexcept(misuse_kind::reader_not_registered, m.view());
    static thread_local auto_registration_release<Flavor> release_at_exit;
    (void)release_at_exit;
    Flavor::register_thread();  // QSBR: online on return
    self.auto_registered = true;
    self.update();
  }
  if (self.offline()) {
    diag_text m("read_guard<");
    m += Flavor::name;
    m += "> opened on an offline thread (inside an offline_scope): grace periods do not wait for "
         "offline threads. Repaired: the thread is online until its outermost read_guard ends.";
    diagnose_noexcept(misuse_kind::reader_offline, m.view());
    Flavor::thread_online();
    self.online_for_guard = true;
    self.update();
  }
}

/// The outermost guard of an offline thread that read_guard brought online has ended.
template <class Flavor>
[[gnu::cold, gnu::noinline]] void end_online_for_guard() noexcept {
  auto& self = reader<Flavor>;
  self.online_for_guard = false;
  Flavor::thread_offline();
  self.update();
}

}  // namespace detail

/// A read-side section of Flavor for the object's lifetime; guards nest.
template <class Flavor>
class read_guard {
 public:
  /// Effects: enters a read-side section: every object reachable now stays valid until the guard
  /// ends (no grace period of Flavor can end meanwhile).
  /// Requires: the thread is registered with Flavor (thread_registration; bp: none needed) and,
  /// for qsbr, online. Diagnosed (reader_not_registered, reader_offline) and repaired, see above.
  /// Throws: nothing, under every misuse policy (abort_process aborts on misuse).
  /// Complexity: O(1): the flavor's read_lock plus one thread-local flag test.
  /// Blocking: never, except once per misused thread (registering takes liburcu's registry mutex).
  read_guard() noexcept {
    if (!detail::reader<Flavor>.ready) [[unlikely]] detail::reader_not_ready<Flavor>();
    Flavor::read_lock();
    ++detail::reader<Flavor>.read_depth;
  }
  /// Effects: leaves the section; pointers read inside it must not be used afterwards.
  /// Requires: destroyed on the thread that made it, in reverse order of nested guards.
  /// Complexity: O(1). Blocking: never.
  ~read_guard() {
    auto& self = detail::reader<Flavor>;
    --self.read_depth;
    detail::tsan_reader_leaves<Flavor>();  // before the unlock: after it, a GP may already have ended
    Flavor::read_unlock();
    if constexpr (Flavor::quiescent_state_based) {
      if (self.online_for_guard && self.read_depth == 0) [[unlikely]] detail::end_online_for_guard<Flavor>();
    }
  }
  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;
};

/// Registers the calling thread with Flavor for the object's lifetime (QSBR: online on return).
/// Registrations nest: only the outermost one calls liburcu, so a helper may register a thread its
/// caller already registered.
template <class Flavor>
class thread_registration {
 public:
  /// Effects: registers the calling thread with Flavor unless it is registered already (by an
  /// enclosing thread_registration, an adopted registration, or a repaired read_guard).
  /// Requires: destroyed on the same thread. Throws: nothing.
  /// Complexity: O(1). Blocking: the outermost one takes liburcu's registry mutex.
  thread_registration() noexcept {
    auto& self = detail::reader<Flavor>;
    if (!self.registered()) Flavor::register_thread();
    ++self.registrations;
    self.update();
  }
  /// Effects: records that the thread was registered with Flavor by other code; calls nothing in
  /// liburcu, now or at destruction.
  /// Requires: the thread really is registered with Flavor for the object's lifetime (rcubatch
  /// cannot check it: see detail::reader_state). Throws: nothing. Complexity: O(1).
  explicit thread_registration(adopt_registration_t) noexcept : adopted_(true) {
    auto& self = detail::reader<Flavor>;
    ++self.adoptions;
    self.update();
  }
  /// Effects: the outermost registration unregisters the thread from Flavor.
  /// Requires: no read_guard<Flavor> open on the thread (liburcu requires it).
  /// Complexity: O(1). Blocking: the outermost one takes liburcu's registry mutex.
  ~thread_registration() {
    auto& self = detail::reader<Flavor>;
    if (adopted_) {
      --self.adoptions;
    } else {
      --self.registrations;
      if (!self.registered()) {
        detail::tsan_reader_leaves<Flavor>();
        Flavor::unregister_thread();
      }
    }
    self.update();
  }
  thread_registration(const thread_registration&) = delete;
  thread_registration& operator=(const thread_registration&) = delete;

 private:
  bool adopted_ = false;
};

/// Effects: QSBR: announces that the calling thread holds no RCU-protected pointer any more, so
/// grace periods waiting for it may end. No-op for other flavors, and for an offline qsbr thread
/// (liburcu's quiescent_state would bring it back online).
/// Requires: not inside a read_guard<Flavor>: diagnosed as blocking_in_read_section (a pointer read
/// in the guard would lose protection) under the policy; under report nothing is announced.
/// Throws: misuse_error under throw_error on that misuse. Complexity: O(1). Blocking: never.
template <class Flavor>  // default: fwd.hpp
void quiescent_state() {
  const auto& self = detail::reader<Flavor>;
  if (self.read_depth > 0) {
    detail::diag_text m("quiescent_state<");
    m += Flavor::name;
    m += "> called inside a read_guard: the guard's pointers would lose protection";
    detail::diagnose(misuse_kind::blocking_in_read_section, m.view());
    return;
  }
  if (Flavor::quiescent_state_based && self.offline_depth > 0) return;
  detail::tsan_reader_leaves<Flavor>();
  Flavor::quiescent_state();
}

/// QSBR: takes the thread offline for a scope (blocking, sleeping); online again at the end.
/// Scopes nest: only the outermost one goes offline and comes back online. No-op for other flavors.
template <class Flavor>  // default: fwd.hpp
class offline_scope {
 public:
  /// Effects: the outermost scope takes the thread offline: grace periods stop waiting for it.
  /// Requires: not inside a read_guard<Flavor> (qsbr: diagnosed as reader_offline with
  /// diagnose_noexcept — abort under abort_process, else reported — and refused: the thread stays
  /// online, its guard keeps protecting it). Throws: nothing. Complexity: O(1). Blocking: never.
  offline_scope() noexcept {
    auto& self = detail::reader<Flavor>;
    if constexpr (Flavor::quiescent_state_based) {
      if (self.read_depth > 0) [[unlikely]] {
        detail::diag_text m("offline_scope<");
        m += Flavor::name;
        m += "> opened inside a read_guard: a grace period would end while the guard still holds "
             "pointers. Refused: the thread stays online.";
        detail::diagnose_noexcept(misuse_kind::reader_offline, m.view());
        refused_ = true;
        return;
      }
    }
    if (self.offline_depth++ == 0) {
      detail::tsan_reader_leaves<Flavor>();
      Flavor::thread_offline();
    }
    self.update();
  }
  /// Effects: the outermost scope brings the thread back online; an inner one changes nothing.
  /// Requires: destroyed on the same thread, inner scopes first. Complexity: O(1). Blocking: never.
  ~offline_scope() {
    if (refused_) return;
    auto& self = detail::reader<Flavor>;
    if (--self.offline_depth == 0) Flavor::thread_online();
    self.update();
  }
  offline_scope(const offline_scope&) = delete;
  offline_scope& operator=(const offline_scope&) = delete;

 private:
  bool refused_ = false;
};

}  // namespace rcubatch
