// rcubatch/ref_tracker.hpp — who holds it: tracked references, chosen per type.
//
//   struct device : rcubatch::tracked_registrable<device> { std::string name; };
//   device dev;
//   rcubatch::ref_token t = dev.refs().hold("rx_queue");   // records the tag and this line
//   for (const rcubatch::ref_holder& h : rcubatch::holders(dev))
//     log(h.tag, h.where.file_name(), h.where.line());      // "rx_queue", "rx.cpp", 42
//   dev.refs().put(t);
//   (compiled in tests/header_examples_test.cpp)
//
// Why: a stalled drain used to print "waiting for eth0 to become free. Usage count = 1" and
// nothing else — the kernel's most reported netdev message for a decade, until ref_tracker made it
// name every holder. A tracked hold returns a token recording a caller-given tag and the caller's
// std::source_location until its put; the drain's stall report lists the live holders of the
// object it waits for (one line each), and holders(obj) lists them at any time (a debugger, a
// health endpoint, a test).
//
// Opt-in per type (derive from tracked_registrable<T> instead of registrable<T>), not per
// registry or per process: a run-time switch would cost every hold of every type a load and a
// branch, and every object room for a tracker; per type, a type that does not choose it is
// compiled exactly as before (registrable<T>: 32 bytes, hold = one fetch_add) — zero cost when
// off, by construction (bench/bench_hold_put.cpp measures both). Choose it in a debug build, or
// for the types whose leaks you are chasing (a type alias switched by a build option does it).
// Untracked holds keep working beside tracked ones: refs().hold() / refs().put() without a token,
// and the library's own holds (a dependent's edge to its parent) are counted, not listed.
//
// Misuse, each diagnosed by name (misuse.hpp) and changing nothing:
//   ref_token_unknown     put(token) with a token that holds nothing on this object (default-
//                         constructed, moved from, refused, or taken on another object); and a
//                         plain put() when every hold left on the object is tracked (it would
//                         steal a tracked holder's reference).
//   ref_token_put_twice   put(token) of a token already put.
//   ref_token_leaked      a token destroyed with its hold never put (the hold stays, and stays
//                         listed: the stall report names it); an object destroyed with tracked
//                         holds never put; holds never put when the process exits (a count: their
//                         tokens were never destroyed).
//
// Thread safety: hold/put/holders from any thread; one mutex per object guards its list. A token
// is used by one thread at a time (as any object). Memory ordering: as ref_count (put releases,
// the drain acquires); the list is read and written under its mutex.
// Cost: a tracked hold allocates its record (a tag of up to 47 bytes is copied: it need not
// outlive the hold) and takes the object's mutex; a tracked put takes it again and frees the
// record; a plain put on a tracked type takes it too (the check above). bench/bench_hold_put.cpp:
// BM_HoldPut/tracked against BM_HoldPut/atomic.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <version>  // __cpp_lib_source_location
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

#include <boost/intrusive/list.hpp>

#include "rcubatch/misuse.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

#if defined(__cpp_lib_source_location)
/// Where a tracked hold was taken: std::source_location where the standard library has it.
using source_location = std::source_location;
#else
/// Where a tracked hold was taken. clang 14 with libstdc++ 12 has no std::source_location (its
/// header needs __builtin_source_location, which that clang lacks), so this is the same interface
/// on the builtins GCC and clang both have; evaluated at the caller, as a default argument.
struct source_location {
  /// The caller's location (when used as a default argument: the call site's).
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE()) noexcept {
    source_location where;
    where.file_ = file;
    where.function_ = function;
    where.line_ = line;
    return where;
  }
  /// The source file's name.
  constexpr const char* file_name() const noexcept { return file_; }
  /// The enclosing function's name.
  constexpr const char* function_name() const noexcept { return function_; }
  /// The line.
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  /// 0: the builtins give no column.
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
#endif

/// One live tracked hold, as holders() lists it.
struct ref_holder {
  std::string tag;               ///< the caller's tag (cut at 47 bytes)
  source_location where;    ///< where hold(tag) was called
  std::uint64_t serial = 0;      ///< 1 for the object's first tracked hold, 2 for the next, ...
};

namespace detail {
struct tracked_access;

/// The record of one tracked hold, linked in its object's list until its put.
struct tracked_hold : boost::intrusive::list_base_hook<> {
  static constexpr std::size_t kTagBytes = 48;
  tracked_hold(std::string_view t, source_location w) noexcept : where(w) {
    const std::size_t n = std::min(t.size(), kTagBytes - 1);
    std::memcpy(tag, t.data(), n);
    tag[n] = '\0';
  }
  std::string_view tag_view() const noexcept { return tag; }
  char tag[kTagBytes];
  source_location where;
  std::uint64_t serial = 0;
  // Who lets go of the record after misuse: a token destroyed unput marks it abandoned, an object
  // destroyed with it still listed marks it orphaned; whichever comes second frees it.
  static constexpr unsigned char kLive = 0, kAbandoned = 1, kOrphaned = 2;
  std::atomic<unsigned char> fate{kLive};
};

/// "<tag> at <file>:<line> (<function>)", for messages and stall lines.
inline void describe(diag_text& out, std::string_view tag, const source_location& where) noexcept {
  out += tag;
  out += " at ";
  out += where.file_name();
  out += ":";
  out += static_cast<unsigned long long>(where.line());
  out += " (";
  out += where.function_name();
  out += ")";
}

/// Tracked holds whose tokens were not put yet, process-wide: what the exit check reports.
inline std::atomic<std::int64_t> g_tracked_holds_live{0};

/// Reports, when the process exits, tracked holds that were never put and whose tokens were
/// never destroyed (a token destroyed unput is reported by its destructor, by name).
struct tracked_exit_check {
  tracked_exit_check() noexcept { (void)reporter(); }  // built first, so destroyed after this
  ~tracked_exit_check() {
    const std::int64_t live = g_tracked_holds_live.load();
    if (live <= 0) return;
    diag_text msg("");
    msg += static_cast<unsigned long long>(live);
    msg += " tracked hold(s) never put when the process exited (their tokens were never destroyed)";
    diagnose_noexcept(misuse_kind::ref_token_leaked, msg.view());
  }
};
inline void arm_tracked_exit_check() noexcept { static tracked_exit_check check; }

/// One object's live tracked holds.
class ref_tracker {
  using list = boost::intrusive::list<tracked_hold, boost::intrusive::constant_time_size<true>>;

 public:
  ref_tracker() = default;
  ref_tracker(const ref_tracker&) = delete;
  ref_tracker& operator=(const ref_tracker&) = delete;

  /// Diagnoses holds never put (ref_token_leaked); their records stay for their tokens to free.
  ~ref_tracker() {
    std::lock_guard lock(mutex_);
    if (live_.empty()) return;
    diag_text msg("object destroyed with ");
    msg += static_cast<unsigned long long>(live_.size());
    msg += " tracked hold(s) never put; first: ";
    describe(msg, live_.front().tag_view(), live_.front().where);
    diagnose_noexcept(misuse_kind::ref_token_leaked, msg.view());
    live_.clear_and_dispose([](tracked_hold* h) {
      if (h->fate.exchange(tracked_hold::kOrphaned, std::memory_order_acq_rel) == tracked_hold::kAbandoned) delete h;
    });
  }

  void link(tracked_hold& h) noexcept {
    std::lock_guard lock(mutex_);
    h.serial = ++serial_;
    live_.push_back(h);
  }
  void unlink(tracked_hold& h) noexcept {
    std::lock_guard lock(mutex_);
    live_.erase(live_.iterator_to(h));
  }
  /// Whether the object's count exceeds its tracked holds: a plain put() has a plain hold to
  /// drop. The count is read under the lock, as link() and unlink() change the list: a tracked
  /// hold counts itself before it links and a tracked put unlinks before it drops its count, so
  /// under the lock count >= listed holds + the caller's own plain hold, whatever other threads
  /// do. (A count read before the lock let a hold(tag) link in between: 1 plain hold counted,
  /// then 1 listed, and a legitimate put() was refused as ref_token_unknown — issue 34.)
  bool has_untracked(const ref_count& count) const noexcept {
    std::lock_guard lock(mutex_);
    return count.count() > live_.size();
  }
  std::size_t size() const noexcept {
    std::lock_guard lock(mutex_);
    return live_.size();
  }
  /// Copies the live holds, oldest first. Throws: std::bad_alloc.
  std::vector<ref_holder> snapshot() const {
    std::vector<ref_holder> out;
    std::lock_guard lock(mutex_);
    out.reserve(live_.size());
    for (const tracked_hold& h : live_) out.push_back({std::string(h.tag_view()), h.where, h.serial});
    return out;
  }

 private:
  mutable std::mutex mutex_;
  list live_;                 // guarded by mutex_
  std::uint64_t serial_ = 0;  // guarded by mutex_
};

}  // namespace detail

/// A tracked hold, from hold(tag) until put(token). Move-only. Destroying it before its put is
/// diagnosed (ref_token_leaked) and leaves the hold in place.
class [[nodiscard]] ref_token {
 public:
  /// A token that holds nothing.
  ref_token() noexcept = default;
  /// Takes over `o`'s hold; `o` then holds nothing.
  ref_token(ref_token&& o) noexcept
      : tracker_(o.tracker_), hold_(std::exchange(o.hold_, nullptr)), where_(o.where_), spent_(o.spent_) {}
  /// Takes over `o`'s hold; a hold this token still had is diagnosed as leaked first.
  ref_token& operator=(ref_token&& o) noexcept {
    if (this != &o) {
      leak_check();
      tracker_ = o.tracker_;
      hold_ = std::exchange(o.hold_, nullptr);
      where_ = o.where_;
      spent_ = o.spent_;
    }
    return *this;
  }
  ref_token(const ref_token&) = delete;
  ref_token& operator=(const ref_token&) = delete;
  /// Diagnoses a hold never put (ref_token_leaked).
  ~ref_token() { leak_check(); }

  /// True while it holds (taken, not yet put, not moved from).
  bool holds() const noexcept { return hold_ != nullptr; }

 private:
  friend class tracked_ref_count;
  ref_token(const detail::ref_tracker& t, detail::tracked_hold& h) noexcept : tracker_(&t), hold_(&h), where_(h.where) {}

  /// A token ending with its hold unput: reported by name (unless its object's destructor already
  /// did); the process's count of live tracked holds forgets it either way (the exit check
  /// counts only tokens never destroyed).
  void leak_check() noexcept {
    if (hold_ == nullptr) return;
    detail::tracked_hold* const h = std::exchange(hold_, nullptr);
    detail::g_tracked_holds_live.fetch_sub(1, std::memory_order_relaxed);
    if (h->fate.load(std::memory_order_acquire) != detail::tracked_hold::kOrphaned) {
      detail::diag_text msg("a tracked hold's token was destroyed without put: ");
      detail::describe(msg, h->tag_view(), h->where);
      msg += "; the hold stays (the stall report lists it)";
      detail::diagnose_noexcept(misuse_kind::ref_token_leaked, msg.view());
    }
    if (h->fate.exchange(detail::tracked_hold::kAbandoned, std::memory_order_acq_rel) == detail::tracked_hold::kOrphaned)
      delete h;
  }

  const detail::ref_tracker* tracker_ = nullptr;
  detail::tracked_hold* hold_ = nullptr;  // owned while linked in tracker_'s list
  source_location where_{};          // of the hold: named when the token is put again
  bool spent_ = false;                    // put already
};

/// What tracked_registrable<T>::refs() returns: ref_count's hold()/put()/count(), plus tracked
/// holds (hold(tag) → token, put(token)).
class tracked_ref_count {
 public:
  /// Effects: an untracked hold (counted, not listed), as ref_count::hold.
  void hold() noexcept { count_->hold(); }

  /// Effects: a tracked hold: counted, and listed with `tag` and `where` until put(token).
  /// Returns: its token; one that holds nothing when the hold is refused (hold_after_drain,
  /// ref_overflow: diagnosed as for ref_count). Throws: std::bad_alloc (its record), nothing
  /// changed. Complexity: one allocation, one fetch_add, the object's mutex.
  ref_token hold(std::string_view tag, source_location where = source_location::current()) {
    auto* h = new detail::tracked_hold(tag, where);
    if (!count_->acquire()) {
      delete h;
      return {};
    }
    tracker_->link(*h);  // after the count: the tracked holds never exceed the count
    detail::arm_tracked_exit_check();
    detail::g_tracked_holds_live.fetch_add(1, std::memory_order_relaxed);
    return ref_token(*tracker_, *h);
  }

  /// Effects: drops an untracked hold. Misuse: when every hold left is tracked, it is refused and
  /// diagnosed (ref_token_unknown): it would drop a tracked holder's reference.
  void put() noexcept {
#ifdef RCUBATCH_REF_TRACKER_TEST_PROBE
    // Test seam (tests/ref_tracker_test.cpp): another hold(tag) may land here, before the check
    // takes the tracker's lock. Not defined otherwise: no cost.
    RCUBATCH_REF_TRACKER_TEST_PROBE();
#endif
    if (!tracker_->has_untracked(*count_)) {
      detail::diagnose_noexcept(misuse_kind::ref_token_unknown,
                                "put() without a token on an object whose every hold is tracked: a put without its "
                                "hold (or use put(token)); the put is refused");
      return;
    }
    count_->put();
  }

  /// Effects: drops the hold `t` took; `t` then holds nothing. Misuse (refused, diagnosed): a
  /// token already put (ref_token_put_twice), one that holds nothing or was taken on another
  /// object (ref_token_unknown). Do not touch the object after the last put.
  void put(ref_token& t) noexcept {
    if (t.hold_ == nullptr) {
      detail::diag_text msg;
      if (t.spent_) {
        msg += "put(token) of a token already put (its hold was taken at ";
        msg += t.where_.file_name();
        msg += ":";
        msg += static_cast<unsigned long long>(t.where_.line());
        msg += "); the put is refused";
        detail::diagnose_noexcept(misuse_kind::ref_token_put_twice, msg.view());
      } else {
        msg += "put(token) with a token that holds nothing (default-constructed, moved from, or its hold was "
               "refused): a put without its hold; the put is refused";
        detail::diagnose_noexcept(misuse_kind::ref_token_unknown, msg.view());
      }
      return;
    }
    if (t.tracker_ != tracker_) {
      detail::diag_text msg("put(token) on another object than its hold's: ");
      detail::describe(msg, t.hold_->tag_view(), t.hold_->where);
      msg += "; the put is refused";
      detail::diagnose_noexcept(misuse_kind::ref_token_unknown, msg.view());
      return;
    }
    tracker_->unlink(*t.hold_);
    delete std::exchange(t.hold_, nullptr);
    t.spent_ = true;
    detail::g_tracked_holds_live.fetch_sub(1, std::memory_order_relaxed);
    count_->put();  // last: it may let the drain destroy the object (and its tracker)
  }

  /// Returns: the holders, tracked and untracked (a snapshot).
  std::uint64_t count() const noexcept { return count_->count(); }

 private:
  template <class T>
  friend class tracked_registrable;
  tracked_ref_count(ref_count& c, detail::ref_tracker& t) noexcept : count_(&c), tracker_(&t) {}
  ref_count* count_;
  detail::ref_tracker* tracker_;
};

/// Derive from this instead of registrable<T> to track T's holds (the rest is registrable<T>'s).
template <class T>
class tracked_registrable : public registrable<T> {
 public:
  tracked_registrable() = default;

  /// The object's count with tracked holds: hold(), hold(tag), put(), put(token), count().
  tracked_ref_count refs() noexcept { return {detail::registrable_base::refs(), tracker_}; }
  /// As above, for count() on a const object.
  tracked_ref_count refs() const noexcept { return const_cast<tracked_registrable&>(*this).refs(); }

 private:
  friend struct detail::tracked_access;
  mutable detail::ref_tracker tracker_;
};

namespace detail {
struct tracked_access {
  template <class T>
  static const ref_tracker& tracker(const tracked_registrable<T>& o) noexcept {
    return o.tracker_;
  }
};
/// Whether T chose tracked references.
template <class T>
inline constexpr bool is_tracked_v = std::is_base_of_v<tracked_registrable<T>, T>;

/// The stall report's holder lines for `obj` (one per live tracked hold, then the untracked
/// rest), sent to `emit(std::string_view)` outside the object's lock (a reporter may put).
template <class T, class Emit>
void report_holders(const tracked_registrable<T>& obj, std::uint64_t count, Emit&& emit) noexcept {
  std::vector<ref_holder> live;
  try {
    live = tracked_access::tracker(obj).snapshot();
  } catch (...) {
    emit(std::string_view("  <holders unavailable: out of memory>"));
    return;
  }
  for (const ref_holder& h : live) {
    diag_text line("  held by ");
    describe(line, h.tag, h.where);
    emit(line.view());
  }
  if (count > live.size()) {
    diag_text line("  and ");
    line += static_cast<unsigned long long>(count - live.size());
    line += " untracked hold(s)";
    emit(line.view());
  }
}
}  // namespace detail

/// Returns: the live tracked holds of `obj`, oldest first (empty once every tracked hold is
/// put). Untracked holds are not listed (count() counts them). Throws: std::bad_alloc.
/// Thread safety: any thread, while the object is alive (a holder, a reader inside a section).
template <class T>
std::vector<ref_holder> holders(const tracked_registrable<T>& obj) {
  return detail::tracked_access::tracker(obj).snapshot();
}

}  // namespace rcubatch
