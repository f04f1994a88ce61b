// rcubatch/grace_domain.hpp — grace periods for one flavor: counted, coalesced, with cookies.
//
//   rcubatch::grace_domain<> domain;          // usually one per registry
//   slot.store(nullptr);                      // unlink: readers cannot find obj any more
//   auto cookie = domain.snapshot();          // "a GP that starts after now"
//   domain.synchronize();                     // other work; here another caller's GP
//   const bool waited = domain.wait_for(cookie);  // false: that GP ended after the snapshot
//   delete obj;
//   (compiled in tests/header_examples_test.cpp)
//
// wait_for blocks only if no GP that started after the snapshot has ended yet.
//
// liburcu 0.13.2 has no polling API (start_poll/poll_state arrived in 0.14), so the domain keeps
// its own sequence number, advanced only by its own synchronize(): even = idle, odd = a GP in
// progress. A cookie taken at sequence s is the sequence at which a GP that *started* after s has
// *ended*; it is satisfied once the sequence reaches it. A GP already running when the cookie is
// taken never satisfies it (it may have passed a reader that then found the unlinked object).
// GPs run by other code (call_rcu workers, another domain) are not seen — conservative, never
// unsafe.
//
// A cookie names the domain that issued it (a per-process id given at construction, never
// reused). Another domain's cookie is misuse (foreign_cookie): its sequence says nothing about
// this domain's grace periods. gp_cookie{} — the default cookie, "nothing to wait for" — is issued
// by no domain and is elapsed for every domain.
//
// Concurrent synchronize() calls on one domain are coalesced: a caller that waited for the domain's
// GP mutex returns at once if a whole GP ran while it waited (counted in stats().coalesced).
//
// Memory ordering. For any read-side section R of Flavor (a read_guard<Flavor> on a registered
// thread; qsbr: while online) and any call X on this domain that is synchronize(), wait_for(c) or
// an elapsed(c) that returns true, where c came from a snapshot() call S on this domain: if R began
// before S (for synchronize, before X began), then the end of R happens-before the return of X,
// so everything R did (its loads of an object included) happens-before the code after X that
// frees the object. And for any store U (an unlink) sequenced before S: every section R that did
// not end before X returned began after U — an acquire load in R of the location U wrote returns
// U's value or a later one, never the unlinked pointer. So "unlink; c = snapshot(); ...;
// wait_for(c) or elapsed(c) == true; free" never frees an object a reader can still reach.
// snapshot() is a seq_cst read-modify-write, which orders the unlinks before the sequence read;
// the GP that satisfies c incremented the sequence after that read, and liburcu's synchronize
// (membarrier / fences / QSBR counters) gives the reader-side half. elapsed(c) == false and
// wait_for on a foreign cookie under report (which runs a full GP, below) promise the same only
// for what they say. Under ThreadSanitizer every return that promises it (synchronize, wait_for,
// elapsed == true, barrier) acquires the token readers release when their sections end
// (detail/tsan.hpp), so TSan sees the edge too.
//
// Thread safety: every member may be called from any thread registered with Flavor, concurrently.
// Under qsbr a caller that waits (for the GP mutex or the GP) is offline while it waits, and online
// again when the member returns (detail/blocking.hpp). Blocking members (synchronize, wait_for, barrier) diagnose a call from inside a read-side section
// as fatal misuse: waiting would deadlock and not waiting would free early.
//
// Cost: one memb GP with a busy reader ≈ 17 µs on the 2-vCPU test VM (shared/DESIGN.md); the
// cookie check is one atomic load and one compare of the domain id.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "rcubatch/detail/blocking.hpp"
#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch {

/// A grace-period cookie: see grace_domain::snapshot. Trivially copyable, two words, compared by
/// value. The default cookie (both fields 0) is elapsed for every domain.
struct gp_cookie {
  std::uint64_t sequence = 0;  ///< the domain sequence that satisfies it (even)
  std::uint64_t domain = 0;    ///< the issuing domain's id (0: issued by none)
  /// Equal when both fields are.
  friend bool operator==(gp_cookie, gp_cookie) = default;
};

/// A grace_domain's counters (grace_domain::stats): what it waited for and what it saved.
struct domain_stats {
  std::uint64_t grace_periods = 0;      ///< flavor synchronize calls actually made
  std::uint64_t elided_by_cookie = 0;   ///< wait_for calls that found their GP already ended
  std::uint64_t coalesced = 0;          ///< synchronize calls served by a concurrent caller's GP
  std::uint64_t dismantle_elided = 0;   ///< GPs skipped by synchronize_unless_dismantling
  std::uint64_t barriers = 0;           ///< flavor barrier calls
};

namespace detail {
/// Domain ids: 1, 2, 3, ... in construction order, never reused within a process (a domain at
/// the address of a destroyed one is still another domain).
inline std::atomic<std::uint64_t> g_next_domain_id{1};
}  // namespace detail

/// Grace periods of one liburcu flavor, with cookies and coalescing of concurrent callers (the
/// contracts are on each member and in the file comment above).
template <class Flavor>
class grace_domain {
  static_assert(rcu_flavor<Flavor>, "grace_domain<Flavor>: Flavor must model rcubatch::rcu_flavor "
                                    "(see flavor.hpp or counting_flavor.hpp).");

 public:
  using flavor_type = Flavor;  ///< the liburcu flavor whose grace periods this domain waits for

  /// Effects: a domain with no GP run yet and a fresh id. Throws: nothing. Complexity: O(1).
  grace_domain() noexcept = default;
  grace_domain(const grace_domain&) = delete;
  grace_domain& operator=(const grace_domain&) = delete;

  /// This domain's id, as carried by its cookies (gp_cookie::domain). Never 0.
  std::uint64_t id() const noexcept { return id_; }

  /// Effects: a cookie satisfied once a GP of this domain that started after this call has ended.
  /// Call it after the unlinks it must cover.
  /// Throws: nothing. Complexity: O(1), one atomic RMW, no lock. Blocking: never.
  gp_cookie snapshot() const noexcept {
    // An RMW rather than a fence + load: it orders the caller's unlinks before the read just the
    // same, and ThreadSanitizer models it (it does not model standalone fences).
    const std::uint64_t s = sequence_.fetch_add(0, std::memory_order_seq_cst);
    // s even (idle): the next GP to start covers us and ends at s + 2. s odd (a GP in progress,
    // which may have passed a reader before our unlink): the one after it, ending at s + 3.
    return gp_cookie{(s + 3) & ~std::uint64_t{1}, id_};
  }

  /// Effects: true once the GP the cookie asks for has ended; then the memory-ordering paragraph
  /// above holds for the caller, as after wait_for. gp_cookie{} is always elapsed.
  /// Requires: c was issued by this domain, or is gp_cookie{}. Another domain's cookie is
  /// diagnosed (foreign_cookie, with diagnose_noexcept: abort under abort_process, else reported)
  /// and answered false, so a caller that then waits is safe.
  /// Throws: nothing. Complexity: O(1), one atomic load. Blocking: never.
  bool elapsed(gp_cookie c) const noexcept {
    if (c.domain != id_) [[unlikely]] {
      if (c == gp_cookie{}) return true;
      detail::diagnose_noexcept(misuse_kind::foreign_cookie, foreign_cookie_message("elapsed", c).view());
      return false;
    }
    if (!reached(c)) return false;
    detail::tsan_grace_period_ended<Flavor>();
    return true;
  }

  /// Effects: blocks until a full grace period has elapsed since the call began (one run by this
  /// call, or by a concurrent caller after this call began: coalesced).
  /// Requires: not inside a read-side section of Flavor (fatal under every policy).
  /// Throws: nothing. Complexity: O(1) plus one GP. Blocking: yes, on the domain's GP mutex and
  /// on at most one flavor GP.
  void synchronize() {
    check_blocking_allowed("synchronize");
    wait_until_elapsed(snapshot());
  }

  /// cond_synchronize. Effects: returns false at once if the cookie's GP has ended (counted in
  /// elided_by_cookie), else waits for it (running one unless a concurrent caller's serves) and
  /// returns true.
  /// Requires: not inside a read-side section (fatal under every policy); c was issued by this
  /// domain or is gp_cookie{}. Another domain's cookie is diagnosed (foreign_cookie) before
  /// anything happens: throw_error throws, abort_process aborts, report runs a full grace period
  /// of this domain (as synchronize) and returns true — never an early return.
  /// Throws: misuse_error, only for a foreign cookie under throw_error; then nothing changed.
  /// Complexity: O(1) plus at most one GP. Blocking: as synchronize, unless the GP has ended.
  bool wait_for(gp_cookie c) {
    check_blocking_allowed("wait_for");
    if (c.domain != id_) [[unlikely]] {
      if (c == gp_cookie{}) return note_elided();
      detail::diagnose(misuse_kind::foreign_cookie, foreign_cookie_message("wait_for", c).view());
      wait_until_elapsed(snapshot());
      return true;
    }
    if (reached(c)) return note_elided();
    wait_until_elapsed(c);
    return true;
  }

  /// Effects: waits for every Flavor::call callback queued before it (liburcu rcu_barrier), from
  /// any thread. liburcu itself only prints and returns when called inside a read-side section;
  /// this diagnoses it as fatal.
  /// Requires: not inside a read-side section; not on one of Flavor's call_rcu worker threads
  /// (on_call_rcu_worker<Flavor>(), flavor.hpp: liburcu's barrier would wait for that worker
  /// forever; the ref drain skips its barrier there). Throws: nothing.
  /// Complexity: O(queued callbacks). Blocking: yes, until they ran (at least one GP).
  void barrier() {
    check_blocking_allowed("barrier");
    {
      detail::offline_while_blocked<Flavor> offline;  // qsbr: the callbacks wait for a GP
      Flavor::barrier();
    }
    barriers_.fetch_add(1, std::memory_order_relaxed);
    detail::tsan_grace_period_ended<Flavor>();
  }

  /// Effects: records a GP that a sub-component skipped because its object was being dismantled
  /// (stats().dismantle_elided). Throws: nothing. Complexity: O(1). Blocking: never.
  void note_dismantle_elision() noexcept { dismantle_elided_.fetch_add(1, std::memory_order_relaxed); }

  /// Effects: the counters; each is exact, the set is not one atomic snapshot while GPs run.
  /// Throws: nothing. Complexity: O(1). Blocking: never.
  domain_stats stats() const noexcept {
    return domain_stats{grace_periods_.load(), elided_by_cookie_.load(), coalesced_.load(),
                        dismantle_elided_.load(), barriers_.load()};
  }

 private:
  /// The sequence has reached the cookie's: its GP has ended. Requires: c is this domain's.
  bool reached(gp_cookie c) const noexcept { return sequence_.load(std::memory_order_seq_cst) >= c.sequence; }

  bool note_elided() noexcept {
    elided_by_cookie_.fetch_add(1, std::memory_order_relaxed);
    detail::tsan_grace_period_ended<Flavor>();
    return false;
  }

  /// Takes the GP mutex; a caller that waited for it while another ran a whole GP after its
  /// cookie was taken is served by that GP (coalesced) instead of running its own. Under qsbr the
  /// caller is offline for the whole wait (detail/blocking.hpp): online, it would stall the GP
  /// that the mutex's holder runs while it waits for that holder.
  void wait_until_elapsed(gp_cookie c) noexcept {
    detail::offline_while_blocked<Flavor> offline;
    std::lock_guard lock(gp_mutex_);
    // GPs run only under this mutex, so here the sequence is even: a GP in progress cannot be
    // mistaken for an ended one at this point (the race with one is in the lock-free paths).
    if (reached(c)) {
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

  detail::diag_text foreign_cookie_message(std::string_view what, gp_cookie c) const noexcept {
    detail::diag_text m("grace_domain<");
    m += Flavor::name;
    m += ">::";
    m += what;
    m += ": the cookie (sequence ";
    m += c.sequence;
    m += ") was issued by ";
    if (c.domain == 0) {
      m += "no domain";
    } else {
      m += "domain #";
      m += c.domain;
    }
    m += ", not by this domain (#";
    m += id_;
    m += "): its sequence says nothing about this domain's grace periods";
    return m;
  }

  static void check_blocking_allowed(std::string_view what) noexcept {
    if (in_read_section<Flavor>()) {
      detail::diag_text m("grace_domain<");
      m += Flavor::name;
      m += ">::";
      m += what;
      m += " called inside a read-side section: it would deadlock (memb, mb, bp) or drop the "
           "reader's protection (qsbr)";
      detail::diagnose_fatal(misuse_kind::blocking_in_read_section, m.view());
    }
  }

  std::mutex gp_mutex_;                             // serializes GPs so the sequence stays meaningful
  mutable std::atomic<std::uint64_t> sequence_{0};  // even = idle, odd = GP in progress
  const std::uint64_t id_ = detail::g_next_domain_id.fetch_add(1, std::memory_order_relaxed);
  std::atomic<std::uint64_t> grace_periods_{0};
  std::atomic<std::uint64_t> elided_by_cookie_{0};
  std::atomic<std::uint64_t> coalesced_{0};
  std::atomic<std::uint64_t> dismantle_elided_{0};
  std::atomic<std::uint64_t> barriers_{0};
};

/// Effects: the process's grace domain for Flavor, made on first use (as folly's
/// rcu_default_domain()). Registries use it unless given another, so all of them coalesce their
/// grace periods and share one cookie sequence.
/// It is never destroyed: a function-local static would be destroyed at exit while a detached
/// thread, or a static registry constructed before the first call, may still wait on it; this one
/// lives in static storage with no destructor call (it holds no resource but a mutex and counters).
/// Throws: nothing. Complexity: O(1). Blocking: never. Thread safety: any thread, concurrently.
template <class Flavor>  // default: fwd.hpp
grace_domain<Flavor>& default_domain() noexcept {
  union immortal {
    immortal() noexcept : domain() {}
    ~immortal() {}  // on purpose: the domain outlives every static destructor
    grace_domain<Flavor> domain;
  };
  static immortal holder;
  return holder.domain;
}

}  // namespace rcubatch
