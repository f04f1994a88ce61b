// rcubatch/read_guard.hpp — RAII read-side sections and thread registration.
//
//   rcubatch::thread_registration<> reg;          // once per reader thread, for its lifetime
//   {
//     rcubatch::read_guard<> guard;               // read-side section
//     device* d = table.lookup(name);             // d stays valid until the guard ends
//   }
//   rcubatch::quiescent_state<rcubatch::flavor::qsbr>();   // qsbr readers: announce often
//
// Thread safety / memory ordering: a read_guard pins every object reachable when it began until
// it ends; publish pointers with std::atomic release stores and read them with acquire loads
// (or rculfhash). Under ThreadSanitizer the guard adds the annotation that tells TSan about the
// reader → grace-period ordering (detail/tsan.hpp).
//
// Misuse: a thread must be registered before its first guard (except bp). Never block on a grace
// period (grace_domain::synchronize, rollback_many) inside a guard: rcubatch diagnoses it.
// Under qsbr a registered thread is a reader whenever it is online: a thread that sleeps or blocks
// for long must go offline (offline_scope) or it stalls every grace period.
//
// Cost: memb read_lock/unlock are two function calls and a compiler barrier (no fence).
#pragma once

#include "rcubatch/flavor.hpp"
#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch {

template <class Flavor>
class read_guard {
 public:
  read_guard() noexcept {
    Flavor::read_lock();
    ++detail::read_depth<Flavor>;
  }
  ~read_guard() {
    --detail::read_depth<Flavor>;
    detail::tsan_reader_leaves<Flavor>();  // before the unlock: after it, a GP may already have ended
    Flavor::read_unlock();
  }
  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;
};

/// Registers the calling thread with Flavor for the object's lifetime (QSBR: online on return).
template <class Flavor>
class thread_registration {
 public:
  thread_registration() noexcept { Flavor::register_thread(); }
  ~thread_registration() {
    detail::tsan_reader_leaves<Flavor>();
    Flavor::unregister_thread();
  }
  thread_registration(const thread_registration&) = delete;
  thread_registration& operator=(const thread_registration&) = delete;
};

/// QSBR: the calling thread holds no RCU-protected pointer any more. No-op for other flavors.
/// Requires: not inside a read_guard (diagnosed: a pointer read in the guard would lose protection).
template <class Flavor = default_flavor>
void quiescent_state() {
  if (detail::read_depth<Flavor> > 0) {
    detail::diagnose(misuse_kind::blocking_in_read_section,
                     std::string("quiescent_state<") + std::string(Flavor::name) +
                         "> called inside a read_guard: the guard's pointers would lose protection");
    return;
  }
  detail::tsan_reader_leaves<Flavor>();
  Flavor::quiescent_state();
}

/// QSBR: takes the thread offline for a scope (blocking, sleeping); online again at the end.
template <class Flavor = default_flavor>
class offline_scope {
 public:
  offline_scope() noexcept {
    detail::tsan_reader_leaves<Flavor>();
    Flavor::thread_offline();
  }
  ~offline_scope() { Flavor::thread_online(); }
  offline_scope(const offline_scope&) = delete;
  offline_scope& operator=(const offline_scope&) = delete;
};

}  // namespace rcubatch
