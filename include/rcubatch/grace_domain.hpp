// rcubatch/grace_domain.hpp — grace periods for one flavor: counted, coalesced, with cookies.
//
//   rcubatch::grace_domain<> domain;          // usually one per registry
//   unlink(obj);
//   auto cookie = domain.snapshot();          // "a GP that starts after now"
//   ...                                       // other work; maybe another thread runs a GP
//   domain.wait_for(cookie);                  // blocks only if no such GP has ended yet
//   delete obj;
//
// liburcu 0.13.2 has no polling API (start_poll/poll_state arrived in 0.14), so the domain keeps
// its own sequence number, advanced only by its own synchronize(): even = idle, odd = a GP in
// progress. A cookie taken at sequence s is the sequence at which a GP that *started* after s has
// *ended*; it is satisfied once the sequence reaches it. GPs run by other code (call_rcu workers,
// another domain) are not seen — conservative, never unsafe.
//
// Concurrent synchronize() calls on one domain are coalesced: a caller that waited for the domain's
// GP mutex returns at once if a whole GP ran while it waited (counted in stats().coalesced).
//
// Thread safety: every member may be called from any registered thread. Blocking members
// (synchronize, wait_for, barrier) diagnose a call from inside a read-side section as fatal misuse:
// waiting would deadlock and not waiting would free early.
//
// Cost: one memb GP with a busy reader ≈ 17 µs on the 2-vCPU test VM (shared/DESIGN.md); the
// cookie check is one atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch {

/// A grace-period cookie: see grace_domain::snapshot. Trivially copyable; 0 is always elapsed.
struct gp_cookie {
  std::uint64_t sequence = 0;
  friend bool operator==(gp_cookie, gp_cookie) = default;
};

struct domain_stats {
  std::uint64_t grace_periods = 0;      ///< flavor synchronize calls actually made
  std::uint64_t elided_by_cookie = 0;   ///< wait_for calls that found their GP already ended
  std::uint64_t coalesced = 0;          ///< synchronize calls served by a concurrent caller's GP
  std::uint64_t dismantle_elided = 0;   ///< GPs skipped by synchronize_unless_dismantling
  std::uint64_t barriers = 0;           ///< flavor barrier calls
};

template <class Flavor>
class grace_domain {
  static_assert(rcu_flavor<Flavor>, "grace_domain<Flavor>: Flavor must model rcubatch::rcu_flavor "
                                    "(see flavor.hpp or counting_flavor.hpp).");

 public:
  using flavor_type = Flavor;

  grace_domain() = default;
  grace_domain(const grace_domain&) = delete;
  grace_domain& operator=(const grace_domain&) = delete;

  /// Effects: a cookie satisfied once a GP that started after this call has ended.
  /// Complexity: O(1), no lock. Call it after the unlinks it must cover.
  gp_cookie snapshot() const noexcept {
    // An RMW rather than a fence + load: it orders the caller's unlinks before the read just the
    // same, and ThreadSanitizer models it (it does not model standalone fences).
    const std::uint64_t s = sequence_.fetch_add(0, std::memory_order_seq_cst);
    return gp_cookie{(s + 3) & ~std::uint64_t{1}};
  }

  /// True once the GP the cookie asks for has ended. Never blocks.
  bool elapsed(gp_cookie c) const noexcept { return sequence_.load(std::memory_order_seq_cst) >= c.sequence; }

  /// Blocks until a full grace period has elapsed since the call began.
  /// Requires: the caller is registered (qsbr: online or not) and not inside a read-side section.
  void synchronize() {
    check_blocking_allowed("synchronize");
    wait_until_elapsed(snapshot());
  }

  /// cond_synchronize: returns at once if the cookie's GP has ended, else runs one. Returns true
  /// when it had to wait.
  bool wait_for(gp_cookie c) {
    check_blocking_allowed("wait_for");
    if (elapsed(c)) {
      elided_by_cookie_.fetch_add(1, std::memory_order_relaxed);
      detail::tsan_grace_period_ended<Flavor>();
      return false;
    }
    wait_until_elapsed(c);
    return true;
  }

  /// Waits for every Flavor::call callback queued before it (liburcu rcu_barrier), from any thread.
  /// liburcu itself only prints and returns when called inside a read-side section; this diagnoses.
  void barrier() {
    check_blocking_allowed("barrier");
    Flavor::barrier();
    barriers_.fetch_add(1, std::memory_order_relaxed);
    detail::tsan_grace_period_ended<Flavor>();
  }

  /// Records a GP that a sub-component skipped because its object was being dismantled.
  void note_dismantle_elision() noexcept { dismantle_elided_.fetch_add(1, std::memory_order_relaxed); }

  domain_stats stats() const noexcept {
    return domain_stats{grace_periods_.load(), elided_by_cookie_.load(), coalesced_.load(),
                        dismantle_elided_.load(), barriers_.load()};
  }

 private:
  /// Takes the GP mutex; a caller that waited for it while another ran a whole GP after its
  /// cookie was taken is served by that GP (coalesced) instead of running its own.
  void wait_until_elapsed(gp_cookie c) noexcept {
    std::lock_guard lock(gp_mutex_);
    if (elapsed(c)) {
      coalesced_.fetch_add(1, std::memory_order_relaxed);
    } else {
      run_grace_period_locked();
    }
    detail::tsan_grace_period_ended<Flavor>();
  }

  void run_grace_period_locked() noexcept {
    sequence_.fetch_add(1, std::memory_order_seq_cst);  // odd: in progress
    Flavor::synchronize();
    sequence_.fetch_add(1, std::memory_order_seq_cst);  // even: ended
    grace_periods_.fetch_add(1, std::memory_order_relaxed);
  }

  static void check_blocking_allowed(const char* what) noexcept {
    if (in_read_section<Flavor>()) {
      detail::diagnose_fatal(misuse_kind::blocking_in_read_section,
                             std::string("grace_domain<") + std::string(Flavor::name) + ">::" + what +
                                 " called inside a read-side section: it would deadlock (memb, mb, bp) "
                                 "or drop the reader's protection (qsbr)");
    }
  }

  std::mutex gp_mutex_;                       // serializes GPs so the sequence stays meaningful
  mutable std::atomic<std::uint64_t> sequence_{0};  // even = idle, odd = GP in progress
  std::atomic<std::uint64_t> grace_periods_{0};
  std::atomic<std::uint64_t> elided_by_cookie_{0};
  std::atomic<std::uint64_t> coalesced_{0};
  std::atomic<std::uint64_t> dismantle_elided_{0};
  std::atomic<std::uint64_t> barriers_{0};
};

}  // namespace rcubatch
