// rcubatch/detail/reclaim_budget.hpp — async_unregister's memory budget: the bytes charged for
// requests submitted and not yet destroyed (or parked), against async_options::budget_bytes.
//
// One request always fits when nothing is charged, so an object larger than the budget cannot
// deadlock; otherwise a charge fits while the total stays ≤ the limit. A submit looks and charges
// under the registry's writer lock alone (no reclaimer mutex: issue 35, a submit's instructions);
// reserve, a lone unregister's claim and every release run under the reclaimer's m_. The two
// sides can interleave, so the count is an atomic changed by read-modify-writes; each side
// serializes its own looks and charges (writer lock, m_), so one look of each can pass before
// either charges: the total stays ≤ the limit + one object. The high-water mark is not kept by
// the charges (a submit would pay for it): a count that only charges raise peaks just before a
// release, whose read-modify-write returns that peak, or now — so releases (under m_) note it,
// and high_water() looks at now too. Who
// blocks on a full budget, and who wakes them, is the reclaimer's (reserve,
// reclaim_protocol.hpp): this is the arithmetic and the high-water mark.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>

namespace rcubatch::detail {

/// A policy's optional `std::size_t pending_bytes(const T&)`: the bytes a request for t is charged
/// (sizeof(T) without one). Checked by shape where it is used (async_unregister's static_assert).
template <class P, class T>
concept has_pending_bytes = requires(P& p, const T& t) {
  { p.pending_bytes(t) } -> std::convertible_to<std::size_t>;
};

/// The budget of one async_unregister. Requires: release, recharge and high_water under the
/// reclaimer's m_; charged, over, fits and charge anywhere (a look and its charge under one lock:
/// the writer lock for submits, m_ for the rest — so that at most one look per lock can be
/// overtaken: the bound above).
class reclaim_budget {
 public:
  /// Requires: limit ≥ 1 (the reclaimer's constructor checks it).
  explicit reclaim_budget(std::size_t limit) noexcept : limit_(limit) {}

  /// Bytes charged now (requests not yet destroyed, and reservations).
  std::size_t charged() const noexcept { return charged_.load(std::memory_order_relaxed); }
  /// The most ever charged at once.
  std::size_t high_water() const noexcept { return std::max(high_water_, charged()); }
  /// `bytes` more would pass the limit: submit's look, under the writer lock (it may be off by a
  /// concurrent reserve or lone unregister, each within the budget: one object).
  bool over(std::size_t bytes) const noexcept { return charged() + bytes > limit_; }
  /// `bytes` may be charged now: nothing is charged, or the total stays within the limit.
  bool fits(std::size_t bytes) const noexcept { return charged() == 0 || charged() + bytes <= limit_; }

  /// Charges `bytes` (whether they fit was decided by the caller).
  void charge(std::size_t bytes) noexcept { charged_.fetch_add(bytes, std::memory_order_relaxed); }
  /// Releases `bytes` charged before (a batch ended or parked, a reservation returned).
  void release(std::size_t bytes) noexcept {
    high_water_ = std::max(high_water_, charged_.fetch_sub(bytes, std::memory_order_relaxed));
  }
  /// A reservation of `reserved` bytes turned out to be for an object of `actual` bytes
  /// (try_submit by key found another object): may pass the limit by the difference.
  void recharge(std::size_t reserved, std::size_t actual) noexcept {
    if (actual >= reserved) {
      charge(actual - reserved);
    } else {
      release(reserved - actual);
    }
  }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> charged_{0};  // charges and releases: read-modify-writes
  std::size_t high_water_ = 0;           // the peaks releases saw (under m_)
};

}  // namespace rcubatch::detail
