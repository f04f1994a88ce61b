// rcubatch/misuse.hpp — how rcubatch reacts when it is used wrongly.
//
// RCU misuse is silent in liburcu 0.13.2: synchronize inside a read-side section deadlocks (memb,
// mb, bp) or quietly takes the thread offline (qsbr); rcu_barrier inside one prints once and returns
// without waiting; a reader on an unregistered thread is simply not waited for. rcubatch checks for
// these and for its own contract violations, and reacts with the process-wide policy:
//
//   rcubatch::set_misuse_policy(rcubatch::misuse_policy::report);
//   auto reporter = [&log](rcubatch::misuse_kind, std::string_view m) noexcept {
//     log.emplace_back(m);                      // a callable with state: kept by reference
//   };
//   rcubatch::set_misuse_reporter(reporter);
//   (compiled in tests/header_examples_test.cpp)
//
// - throw_error (default): throw rcubatch::misuse_error before anything is changed. In a context
//   that cannot throw (a noexcept hook's callee, a destructor) it reports instead, as `report`.
// - abort_process: report, then std::abort() (an assert that stays in release).
// - report: call the reporter (stderr by default), then refuse the one operation (the queue push,
//   the object's place in the batch, the whole batch when called from a read-side section).
//
// Fatal cases ignore the policy and always report then abort, because no safe way to go on exists:
// an object destroyed while readers can still reach it, a bare grace-period wait requested from
// inside a read-side section (waiting deadlocks, not waiting frees early).
//
// Diagnostics never allocate: messages are composed in a fixed buffer (detail::diag_text, longer
// text is cut), so a report from a noexcept context cannot end in std::terminate when memory is
// exhausted. Only throw_error allocates (the exception), and only where throwing is allowed.
//
// Thread safety: the policy is an atomic; the reporter is swapped under a mutex and called outside
// it, from whichever thread hit the misuse. Change them at start-up or in tests
// (scoped_misuse_policy), not while other threads rely on them.
#pragma once

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

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
  queued_too_late,           ///< batch::queue after the notify phase (from batch_notify, uninit, destroy)
  reader_not_registered,     ///< read section on a thread not registered with the flavor
  reader_offline,            ///< qsbr: read section on an offline thread, or offline inside a section
  foreign_cookie,            ///< a grace-period cookie passed to a domain that did not issue it
  not_in_read_section,       ///< an operation that needs a read-side section called outside one
  retired_twice,             ///< the same retire_node retired while it is already retired
  not_in_batch,              ///< batch::queue of a type with no lane in the batch; retire_with an owner outside it; a parent whose policy owns no children (owned.hpp)
  waits_for_own_batch,       ///< async_unregister wait/drain/run from a hook of its own running batch
  ref_overflow,              ///< hold() beyond ref_count::kMaxHolders holders of one object
  holds_writer_lock,         ///< a call that takes the writer lock (or waits for a batch that does) by its holder
  wrong_registry,            ///< an object unregistered through a registry (or reclaimer) it is not published in
  ref_token_unknown,         ///< tracked refs: a put without its hold (a token that holds nothing on this object)
  ref_token_put_twice,       ///< tracked refs: a token put a second time
  ref_token_leaked,          ///< tracked refs: a token (or its object, or the process) ended with the hold never put
  attached_twice,            ///< a second async_unregister attached to a registry that has one (combine_registry_unregister)
};
inline constexpr std::size_t kMisuseKinds = 23;

constexpr std::string_view to_string(misuse_kind k) noexcept {
  constexpr std::array<std::string_view, kMisuseKinds> names{
      "blocking_in_read_section", "not_registered",         "already_unregistering",
      "queued_in_other_queue",    "destroyed_while_linked", "register_twice",
      "ref_underflow",            "hold_after_drain",       "queued_too_late",
      "reader_not_registered",    "reader_offline",         "foreign_cookie",
      "not_in_read_section",      "retired_twice",          "not_in_batch",
      "waits_for_own_batch",      "ref_overflow",           "holds_writer_lock",
      "wrong_registry",           "ref_token_unknown",      "ref_token_put_twice",
      "ref_token_leaked",         "attached_twice"};
  return names[static_cast<std::size_t>(k)];
}

enum class misuse_policy : unsigned char { throw_error, abort_process, report };

/// Thrown under misuse_policy::throw_error; the operation that threw changed nothing.
class misuse_error : public std::logic_error {
 public:
  /// The error for `kind`, with the diagnostic `what`.
  misuse_error(misuse_kind kind, const std::string& what) : std::logic_error(what), kind_(kind) {}
  /// Which misuse it was.
  misuse_kind kind() const noexcept { return kind_; }

 private:
  misuse_kind kind_;
};

/// A context-free reporter (the original form; still accepted everywhere).
using misuse_reporter = void (*)(misuse_kind, std::string_view message) noexcept;

/// A reporter with a context: `fn(context, kind, message)`. The context is not owned.
struct misuse_reporter_binding {
  void (*fn)(void* context, misuse_kind, std::string_view message) noexcept = nullptr;  ///< the reporter
  void* context = nullptr;  ///< passed to fn as is
};

namespace detail {

/// A message built without allocation: appends are cut at the capacity (a trailing "…" says so).
class diag_text {
 public:
  static constexpr std::size_t kCapacity = 480;

  diag_text() noexcept = default;
  diag_text(std::string_view s) noexcept { *this += s; }  // NOLINT: implicit, as a string would be
  diag_text(const char* s) noexcept { *this += std::string_view(s); }  // NOLINT

  diag_text& operator+=(std::string_view s) noexcept {
    const std::size_t room = kCapacity - size_;
    const std::size_t n = s.size() < room ? s.size() : room;
    std::memcpy(buf_ + size_, s.data(), n);
    size_ += n;
    if (n < s.size()) cut_ = true;
    buf_[size_] = '\0';
    return *this;
  }
  diag_text& operator+=(const char* s) noexcept { return *this += std::string_view(s); }
  diag_text& operator+=(unsigned long long v) noexcept {
    char digits[24];
    const int n = std::snprintf(digits, sizeof digits, "%llu", v);
    return *this += std::string_view(digits, n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, char> && !std::is_same_v<I, bool>)
  diag_text& operator+=(I v) noexcept {
    if (v < 0) {
      *this += "-";
      return *this += static_cast<unsigned long long>(-static_cast<long long>(v));
    }
    return *this += static_cast<unsigned long long>(v);
  }
  template <class X>
  friend diag_text operator+(diag_text a, const X& b) noexcept {
    a += b;
    return a;
  }

  std::string_view view() const noexcept { return {buf_, size_}; }
  const char* c_str() const noexcept { return buf_; }
  bool cut() const noexcept { return cut_; }

 private:
  char buf_[kCapacity + 1] = {};
  std::size_t size_ = 0;
  bool cut_ = false;
};

inline void stderr_reporter(void*, misuse_kind, std::string_view message) noexcept {
  std::fprintf(stderr, "rcubatch: %.*s\n", static_cast<int>(message.size()), message.data());
}
inline void plain_reporter_trampoline(void* context, misuse_kind k, std::string_view message) noexcept {
  // The context-free form is stored in the binding's context slot (see set_misuse_reporter).
  (*static_cast<misuse_reporter*>(context))(k, message);
}

struct reporter_state {
  std::mutex mutex;
  misuse_reporter_binding binding{&stderr_reporter, nullptr};
  misuse_reporter plain = nullptr;  // storage the trampoline's context points at
};
inline reporter_state& reporter() noexcept {
  static reporter_state state;
  return state;
}

inline std::atomic<misuse_policy> g_misuse_policy{misuse_policy::throw_error};
inline std::array<std::atomic<unsigned long>, kMisuseKinds> g_misuse_counts{};

/// The whole reporter configuration, for saving and restoring (scoped_misuse_policy).
struct reporter_snapshot {
  misuse_reporter_binding binding;
  misuse_reporter plain;
};
inline reporter_snapshot save_reporter() noexcept {
  std::lock_guard lock(reporter().mutex);
  return {reporter().binding, reporter().plain};
}
inline void restore_reporter(const reporter_snapshot& s) noexcept {
  std::lock_guard lock(reporter().mutex);
  reporter().plain = s.plain;
  reporter().binding = s.binding;
  if (s.binding.fn == &plain_reporter_trampoline) reporter().binding.context = &reporter().plain;
}
}  // namespace detail

inline void set_misuse_policy(misuse_policy p) noexcept { detail::g_misuse_policy.store(p); }
inline misuse_policy current_misuse_policy() noexcept { return detail::g_misuse_policy.load(); }

/// Effects: misuse reports go to `r(kind, message)`; nullptr restores the default (stderr).
inline void set_misuse_reporter(misuse_reporter r) noexcept {
  std::lock_guard lock(detail::reporter().mutex);
  detail::reporter().plain = r;
  detail::reporter().binding = r ? misuse_reporter_binding{&detail::plain_reporter_trampoline, &detail::reporter().plain}
                                 : misuse_reporter_binding{&detail::stderr_reporter, nullptr};
}

/// Effects: misuse reports go to `b.fn(b.context, kind, message)`; a null fn restores stderr.
inline void set_misuse_reporter(misuse_reporter_binding b) noexcept {
  std::lock_guard lock(detail::reporter().mutex);
  detail::reporter().binding = b.fn ? b : misuse_reporter_binding{&detail::stderr_reporter, nullptr};
}

/// Effects: misuse reports go to `f(kind, message)`.
/// Requires: `f` outlives its use as the reporter (it is kept by reference, never copied), and
/// calling it is noexcept (checked).
template <class F>
  requires(!std::is_convertible_v<F&, misuse_reporter> && std::is_invocable_v<F&, misuse_kind, std::string_view>)
void set_misuse_reporter(F& f) noexcept {
  static_assert(std::is_nothrow_invocable_v<F&, misuse_kind, std::string_view>,
                "a misuse reporter is called from noexcept contexts: its call operator must be noexcept");
  set_misuse_reporter(misuse_reporter_binding{
      [](void* c, misuse_kind k, std::string_view m) noexcept { (*static_cast<F*>(c))(k, m); }, &f});
}

/// How many times this kind was diagnosed in this process, whatever the policy.
inline unsigned long misuse_count(misuse_kind k) noexcept {
  return detail::g_misuse_counts[static_cast<std::size_t>(k)].load();
}

/// RAII: sets the policy (and optionally the reporter) for a scope; restores both on exit.
/// A callable reporter is kept by reference: it must outlive the scope.
class scoped_misuse_policy {
 public:
  /// Sets the policy p for the scope (the reporter unchanged).
  explicit scoped_misuse_policy(misuse_policy p) noexcept : old_policy_(current_misuse_policy()),
                                                             old_reporter_(detail::save_reporter()) {
    set_misuse_policy(p);
  }
  /// Sets the policy p and the reporter r (a plain function) for the scope.
  scoped_misuse_policy(misuse_policy p, misuse_reporter r) noexcept : scoped_misuse_policy(p) {
    if (r) set_misuse_reporter(r);
  }
  /// Sets the policy p and the callable reporter f (kept by reference) for the scope.
  template <class F>
    requires(!std::is_convertible_v<F&, misuse_reporter> && std::is_invocable_v<F&, misuse_kind, std::string_view>)
  scoped_misuse_policy(misuse_policy p, F& f) noexcept : scoped_misuse_policy(p) {
    set_misuse_reporter(f);
  }
  ~scoped_misuse_policy() {
    set_misuse_policy(old_policy_);
    detail::restore_reporter(old_reporter_);
  }
  scoped_misuse_policy(const scoped_misuse_policy&) = delete;
  scoped_misuse_policy& operator=(const scoped_misuse_policy&) = delete;

 private:
  misuse_policy old_policy_;
  detail::reporter_snapshot old_reporter_;
};

namespace detail {
inline void count_and_report(misuse_kind k, std::string_view msg) noexcept {
  g_misuse_counts[static_cast<std::size_t>(k)].fetch_add(1);
  misuse_reporter_binding b;
  {
    std::lock_guard lock(reporter().mutex);
    b = reporter().binding;
  }
  b.fn(b.context, k, msg);
}

/// Applies the policy. Returns only under misuse_policy::report: the caller then refuses the
/// operation. Throws misuse_error under throw_error (the only allocation on this path).
inline void diagnose(misuse_kind k, std::string_view msg) {
  switch (current_misuse_policy()) {
    case misuse_policy::throw_error: {
      g_misuse_counts[static_cast<std::size_t>(k)].fetch_add(1);
      std::string what = "rcubatch: ";
      what += msg;
      throw misuse_error(k, what);
    }
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
/// Never allocates.
inline void diagnose_noexcept(misuse_kind k, std::string_view msg) noexcept {
  count_and_report(k, msg);
  if (current_misuse_policy() == misuse_policy::abort_process) std::abort();
}

/// Misuse with no safe continuation: report, then abort, under every policy. Never allocates.
[[noreturn]] inline void diagnose_fatal(misuse_kind k, std::string_view msg) noexcept {
  diag_text text(msg);
  text += " (fatal under every misuse policy: going on would free memory readers can reach)";
  count_and_report(k, text.view());
  std::abort();
}
}  // namespace detail

}  // namespace rcubatch
