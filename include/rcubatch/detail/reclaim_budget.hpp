// rcubatch/detail/reclaim_budget.hpp — async_unregister's memory budget: the bytes charged for
// requests submitted and not yet destroyed (or parked), against async_options::budget_bytes.
//
// One request always fits when nothing is charged, so an object larger than the budget cannot
// deadlock; otherwise a charge fits while the total stays ≤ the limit. Submits charge under the
// registry's writer lock and the reclaimer's m_; a submit's first look (charged(), over()) is made
// under the writer lock alone, so the count is an atomic written only under m_ (load and store,
// no read-modify-write) and read, besides, without it. Who blocks on a full budget, and who wakes
// them, is the reclaimer's (reserve, reclaim_protocol.hpp): this is the arithmetic and the
// high-water mark.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

namespace rcubatch::detail {

/// The budget of one async_unregister. Requires: every member but charged() and over() is called
/// under the reclaimer's m_; those two may be read without it (a first look, exact under m_).
class reclaim_budget {
 public:
  /// Requires: limit ≥ 1 (the reclaimer's constructor checks it).
  explicit reclaim_budget(std::size_t limit) noexcept : limit_(limit) {}

  /// Bytes charged now (requests not yet destroyed, and reservations).
  std::size_t charged() const noexcept { return charged_.load(std::memory_order_relaxed); }
  /// The most ever charged at once.
  std::size_t high_water() const noexcept { return high_water_; }
  /// `bytes` more would pass the limit: submit's first look, under the writer lock (it may be
  /// off by a concurrent reserve or lone unregister, each within the budget: one object).
  bool over(std::size_t bytes) const noexcept { return charged() + bytes > limit_; }
  /// `bytes` may be charged now: nothing is charged, or the total stays within the limit.
  bool fits(std::size_t bytes) const noexcept { return charged() == 0 || charged() + bytes <= limit_; }

  /// Charges `bytes` (whether they fit was decided by the caller).
  void charge(std::size_t bytes) noexcept {
    set(charged() + bytes);
    high_water_ = std::max(high_water_, charged());
  }
  /// Releases `bytes` charged before (a batch ended or parked, a reservation returned).
  void release(std::size_t bytes) noexcept { set(charged() - bytes); }
  /// A reservation of `reserved` bytes turned out to be for an object of `actual` bytes
  /// (try_submit by key found another object): may pass the limit by the difference.
  void recharge(std::size_t reserved, std::size_t actual) noexcept {
    set(charged() - reserved + actual);
    high_water_ = std::max(high_water_, charged());
  }

 private:
  void set(std::size_t v) noexcept { charged_.store(v, std::memory_order_relaxed); }

  const std::size_t limit_;
  std::atomic<std::size_t> charged_{0};  // written under m_ only
  std::size_t high_water_ = 0;           // under m_
};

}  // namespace rcubatch::detail
