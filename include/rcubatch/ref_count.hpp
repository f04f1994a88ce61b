// rcubatch/ref_count.hpp — the reference count every registrable object carries, one word.
//
//   obj.refs().hold();      // a holder (an in-flight packet, a cache) keeps obj alive
//   use(obj);
//   obj.refs().put();       // the last put after unregistration wakes the batch's ref drain
//   (compiled in tests/header_examples_test.cpp)
//
// The registry's own link is not counted: a registered object with no holders has count 0. When a
// batch starts draining it sets a flag bit in the same word; the put that brings the count to zero
// with that bit set is the one that notifies — no polling, and no lost wake-up, because the flag
// and the count change in one atomic word. Telling the drain sets a second bit (kTold), under the
// drain's lock, after the put's last use of the object: the drain destroys an object only once it
// reads that bit, so it may find its ready objects by rescanning them (ref_drain.hpp) and the
// putter never touches a destroyed object.
//
// A ref_count exists only inside a registrable<T> (registrable.hpp): it stores no pointer to its
// drain. The last put() finds the drain through its object: the object's queue (kept until the
// object's destroy returns) leads to the batch running on it and its drain (registrable.hpp,
// detail::last_put_of_draining). That keeps the count at 4 bytes (beside the object's state byte: registrable.hpp).
//
// Thread safety: hold and put from any thread. The drain side (registrable_access) from the
// draining thread only.
// Memory ordering: put releases, the drain acquires, so everything a holder did happens before
// the object is destroyed.
// Misuse: put without hold (underflow), or hold on an object whose count already drained to zero
// (nothing can legitimately find it any more), are diagnosed.
// Cost: hold = one relaxed fetch_add; put = one acq_rel CAS. A single shared counter: it
// bounces between cores under heavy concurrent hold/put (the kernel uses per-CPU counters there).
#pragma once

#include <atomic>
#include <cstdint>

#include "rcubatch/misuse.hpp"

namespace rcubatch {

class ref_count;

namespace detail {
class registrable_base;
class counted_base;
struct registrable_access;
/// The slow path of the last put() of a draining count: finds the drain through the object and
/// tells it. Defined in registrable.hpp (included at the end of this header).
inline void last_put_of_draining(ref_count& refs) noexcept;
}  // namespace detail

/// An object's reference count: hold() / put() (contract in the file comment above). Lives only
/// inside a registrable<T>; the last put() of a draining object tells its batch's drain.
class ref_count {
  // 32 bits, so that the count and registrable's state byte share one 8-byte word of the header.
  static constexpr std::uint32_t kDraining = std::uint32_t{1} << 31;
  static constexpr std::uint32_t kTold = std::uint32_t{1} << 30;  // the drain was told: count 0 for good
  static constexpr std::uint32_t kCount = kTold - 1;

 public:
  /// The most holders one object may have at once (2^29). A hold beyond it is refused and
  /// diagnosed (ref_overflow) — in practice a hold leaked in a loop. The limit sits at half the
  /// count's range, so concurrent holds racing past it can never carry into the marks.
  static constexpr std::uint32_t kMaxHolders = (kCount >> 1) + 1;

 private:

 public:
  ref_count(const ref_count&) = delete;
  ref_count& operator=(const ref_count&) = delete;

  /// Effects: takes a reference: the object's batch will not destroy it before the matching put().
  /// Requires: the caller reached the object legitimately (inside a read section, or through a
  /// reference it already holds). Misuse: a hold on an object whose count already drained to zero
  /// is refused and diagnosed (hold_after_drain); so is a hold beyond kMaxHolders (ref_overflow).
  /// Complexity: one relaxed fetch_add. Thread safety: any thread.
  void hold() noexcept {
    const std::uint32_t old = word_.fetch_add(1, std::memory_order_relaxed);
    if ((old & kCount) >= kMaxHolders) [[unlikely]] {
      word_.fetch_sub(1, std::memory_order_relaxed);
      detail::diagnose_noexcept(misuse_kind::ref_overflow,
                                "hold() beyond 2^29 holders of one object (a hold leaked in a loop?); "
                                "the hold is refused");
      return;
    }
    if ((old & ~kTold) == kDraining) {
      // Refuse: keeping the reference would make its put() notify a drain that already finished.
      word_.fetch_sub(1, std::memory_order_relaxed);
      detail::diagnose_noexcept(misuse_kind::hold_after_drain,
                                "hold() on an object whose references already drained to zero: "
                                "it is unregistered and about to be destroyed; the hold is refused");
    }
  }

  /// Effects: drops a reference taken by hold(); the put that brings a draining object's count
  /// to zero notifies the drain (and may let it destroy the object at once: do not touch the
  /// object after put()). Misuse: put without a hold is diagnosed (ref_underflow) and changes
  /// nothing — a CAS, so an underflow can never disturb the draining mark (a fetch_sub and an
  /// undo did: racing begin_drain, the undo could clear the mark and the drain waited forever).
  /// Memory ordering: release; the drain's acquire makes everything the holder did visible to
  /// destroy. Complexity: one CAS (a loop only under concurrent hold/put of the same object).
  void put() noexcept {
    std::uint32_t old = word_.load(std::memory_order_relaxed);
    do {
      if ((old & kCount) == 0) {
        detail::diagnose_noexcept(misuse_kind::ref_underflow, "put() without a matching hold()");
        return;
      }
    } while (!word_.compare_exchange_weak(old, old - 1, std::memory_order_acq_rel, std::memory_order_relaxed));
    // The drain published the way to itself (the object's queue, its drain) before setting
    // kDraining; our acq_rel RMW saw the bit, so we see it. The object cannot be destroyed
    // before the drain is told (kTold, set by the drain's released() under its lock).
    if (old == (kDraining | 1)) detail::last_put_of_draining(*this);
  }

  /// Returns: the current number of holders (a snapshot; exact only when nobody holds or puts
  /// concurrently). Complexity: one acquire load.
  std::uint64_t count() const noexcept { return word_.load(std::memory_order_acquire) & kCount; }

 private:
  friend class detail::counted_base;
  friend struct detail::registrable_access;
  ref_count() = default;

  /// For the ref drain's fused step: if nobody holds the object, marks the count as draining
  /// (count 0) and returns true — the caller destroys it at once; otherwise changes nothing and
  /// returns false (then begin_drain). A plain load and store, for the same reason and with the
  /// same uncaught window as begin_drain's common case below; the draining mark still makes a
  /// later (misuse) hold() diagnosed. Requires: the batch's last grace period has ended.
  bool try_drain_unheld() noexcept {
    if (word_.load(std::memory_order_acquire) != 0) return false;
    word_.store(kDraining, std::memory_order_relaxed);
    return true;
  }

  /// For the ref drain, once per object: marks the count as draining. Returns true when it is
  /// already zero (no put() will notify); otherwise the put() that reaches zero notifies the
  /// drain, exactly once. Requires: the batch's last grace period has ended, and the object's
  /// queue leads to this batch's drain (registrable_access::set_drain), written before this call.
  bool begin_drain() noexcept {
    // Common case, no holder: after the batch's last grace period nobody can find the object, so
    // no legitimate hold() can start from zero — a plain load and store suffice, and no put() will
    // ever notify. Skipping the locked RMW here was 26% of the demo's batch (a lock op stalls on
    // each cache miss). The store sets kDraining, so a (misuse) hold() after it is diagnosed as
    // hold_after_drain. What is NOT caught: a misuse hold() that lands between the load and the
    // store is overwritten (lost); the object is destroyed while that holder uses it, and the
    // holder's later put() is diagnosed as ref_underflow — late, but not silent.
    if (word_.load(std::memory_order_acquire) == 0) {
      word_.store(kDraining, std::memory_order_relaxed);
      return true;
    }
    // acq_rel: publishes the way to the drain to the last put(), which reads this RMW's value.
    const std::uint32_t old = word_.fetch_or(kDraining, std::memory_order_acq_rel);
    return (old & kCount) == 0;
  }

  /// For the drain's released(), told by the last put(), under the drain's lock: marks the count
  /// as told. The putter's last use of the object is before this; an RMW, so a racing (misuse,
  /// refused) hold's increment and undo are not lost. Release: pairs with drained_and_told().
  void mark_told() noexcept { word_.fetch_or(kTold, std::memory_order_release); }

  /// For the drain's rescan: true once the last put() told the drain (count 0 for good; the
  /// putter is done with the object). Acquire: everything every holder did is visible.
  bool drained_and_told() const noexcept {
    return word_.load(std::memory_order_acquire) == (kDraining | kTold);
  }

  std::atomic<std::uint32_t> word_{0};
};

}  // namespace rcubatch

// The definition of detail::last_put_of_draining: it needs the object a count lives in. (Included
// last, so this header and registrable.hpp may be included in either order.)
#include "rcubatch/registrable.hpp"
