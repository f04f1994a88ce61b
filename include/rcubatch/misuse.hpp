// rcubatch/misuse.hpp — how rcubatch reacts when it is used wrongly.
//
// RCU misuse is silent in liburcu 0.13.2: synchronize inside a read-side section deadlocks (memb,
// mb, bp) or quietly takes the thread offline (qsbr); rcu_barrier inside one prints once and returns
// without waiting. rcubatch checks for these and for its own contract violations, and reacts with
// the process-wide policy:
//
//   rcubatch::set_misuse_policy(rcubatch::misuse_policy::report);
//
// - throw_error (default): throw rcubatch::misuse_error before anything is changed.
// - abort_process: print the diagnostic to stderr and std::abort() (an assert that stays in release).
// - report: call the reporter (stderr by default), then refuse the one operation (the queue push,
//   the object's place in the batch, the whole batch when called from a read-side section).
//
// Fatal cases ignore the policy and always report then abort, because no safe way to go on exists:
// an object destroyed while readers can still reach it, or a bare grace-period wait requested from
// inside a read-side section (waiting deadlocks, not waiting frees early).
//
// Thread safety: the policy, the reporter and the counters are atomics; change them at start-up or in
// tests (scoped_misuse_policy), not while other threads rely on them.
#pragma once

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rcubatch {

enum class misuse_kind : unsigned char {
  blocking_in_read_section,  ///< synchronize/barrier/rollback_many called inside a read-side section
  not_registered,            ///< queued or unregistered an object that was never registered
  already_unregistering,     ///< unregistered an object that is already going away (or gone)
  queued_in_other_queue,     ///< pushed to a queue while sitting in another batch's queue
  destroyed_while_linked,    ///< destroyed while registered, queued or in a running batch
  register_twice,            ///< mark_registered on an object that is not freshly constructed
  ref_underflow,             ///< put() without a matching hold()
  hold_after_drain,          ///< hold() on an object whose references already drained to zero
};
inline constexpr std::size_t kMisuseKinds = 8;

constexpr std::string_view to_string(misuse_kind k) noexcept {
  constexpr std::array<std::string_view, kMisuseKinds> names{
      "blocking_in_read_section", "not_registered",         "already_unregistering",
      "queued_in_other_queue",    "destroyed_while_linked", "register_twice",
      "ref_underflow",            "hold_after_drain"};
  return names[static_cast<std::size_t>(k)];
}

enum class misuse_policy : unsigned char { throw_error, abort_process, report };

/// Thrown under misuse_policy::throw_error; the operation that threw changed nothing.
class misuse_error : public std::logic_error {
 public:
  misuse_error(misuse_kind kind, const std::string& what) : std::logic_error(what), kind_(kind) {}
  misuse_kind kind() const noexcept { return kind_; }

 private:
  misuse_kind kind_;
};

using misuse_reporter = void (*)(misuse_kind, std::string_view message) noexcept;

namespace detail {
inline void stderr_reporter(misuse_kind, std::string_view message) noexcept {
  std::fprintf(stderr, "rcubatch: %.*s\n", static_cast<int>(message.size()), message.data());
}
inline std::atomic<misuse_policy> g_misuse_policy{misuse_policy::throw_error};
inline std::atomic<misuse_reporter> g_misuse_reporter{&stderr_reporter};
inline std::array<std::atomic<unsigned long>, kMisuseKinds> g_misuse_counts{};
}  // namespace detail

inline void set_misuse_policy(misuse_policy p) noexcept { detail::g_misuse_policy.store(p); }
inline misuse_policy current_misuse_policy() noexcept { return detail::g_misuse_policy.load(); }
/// nullptr restores the default (stderr).
inline void set_misuse_reporter(misuse_reporter r) noexcept {
  detail::g_misuse_reporter.store(r ? r : &detail::stderr_reporter);
}
/// How many times this kind was diagnosed in this process, whatever the policy.
inline unsigned long misuse_count(misuse_kind k) noexcept {
  return detail::g_misuse_counts[static_cast<std::size_t>(k)].load();
}

/// RAII: sets the policy (and optionally the reporter) for a scope; restores both on exit.
class scoped_misuse_policy {
 public:
  explicit scoped_misuse_policy(misuse_policy p, misuse_reporter r = nullptr) noexcept
      : old_policy_(current_misuse_policy()), old_reporter_(detail::g_misuse_reporter.load()) {
    set_misuse_policy(p);
    if (r) set_misuse_reporter(r);
  }
  ~scoped_misuse_policy() {
    set_misuse_policy(old_policy_);
    set_misuse_reporter(old_reporter_);
  }
  scoped_misuse_policy(const scoped_misuse_policy&) = delete;
  scoped_misuse_policy& operator=(const scoped_misuse_policy&) = delete;

 private:
  misuse_policy old_policy_;
  misuse_reporter old_reporter_;
};

namespace detail {
inline void count_and_report(misuse_kind k, const std::string& msg) noexcept {
  g_misuse_counts[static_cast<std::size_t>(k)].fetch_add(1);
  g_misuse_reporter.load()(k, msg);
}

/// Applies the policy. Returns only under misuse_policy::report: the caller then refuses the operation.
inline void diagnose(misuse_kind k, const std::string& msg) {
  switch (current_misuse_policy()) {
    case misuse_policy::throw_error:
      g_misuse_counts[static_cast<std::size_t>(k)].fetch_add(1);
      throw misuse_error(k, "rcubatch: " + msg);
    case misuse_policy::abort_process:
      count_and_report(k, msg);
      std::abort();
    case misuse_policy::report:
      count_and_report(k, msg);
      return;
  }
}

/// For contexts that cannot throw (destructors, hooks after the point of no return). Throw is
/// downgraded to report; returns under report and throw_error, aborts under abort_process.
inline void diagnose_noexcept(misuse_kind k, const std::string& msg) noexcept {
  count_and_report(k, msg);
  if (current_misuse_policy() == misuse_policy::abort_process) std::abort();
}

/// Misuse with no safe continuation: report, then abort, under every policy.
[[noreturn]] inline void diagnose_fatal(misuse_kind k, const std::string& msg) noexcept {
  count_and_report(k, msg + " (fatal under every misuse policy: going on would free memory readers can reach)");
  std::abort();
}
}  // namespace detail

}  // namespace rcubatch
