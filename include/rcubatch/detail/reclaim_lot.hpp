// rcubatch/detail/reclaim_lot.hpp — async_unregister's lot: the batches parked on objects still
// held, which one thread polls until their holders let go (reclaim_protocol.hpp).
//
// A batch whose ref drain still finds objects held after its first pass and one flush parks: its
// engine stays in its queue slot, the slot joins the lot, and the batch ends without them. Each
// held object's last put tells the lot; the one thread that runs it (the background thread, or
// in manual mode whoever runs batches next) polls each slot's drain, and a slot that holds
// nothing more leaves. Meanwhile the slot's tickets of held objects are not done: the lot
// answers for them. No thread per parked batch, however many park.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <boost/intrusive/list.hpp>

namespace rcubatch::detail {

/// The parked slots of one reclaimer. Slot: a boost::intrusive::list_base_hook<>, with `held`
/// (the sorted tickets of its objects still held) and `engine->parked_deadline()` (its drain's
/// next timer). Requires: every member is called under the reclaimer's m_; the slots' `held` and
/// deadlines are written only by the thread that owns the slot (its batch's, then the poller).
template <class Slot>
class reclaim_lot {
  using list_type = boost::intrusive::list<Slot>;

 public:
  using clock = std::chrono::steady_clock;
  using iterator = typename list_type::iterator;

  bool empty() const noexcept { return slots_.empty(); }
  /// Ticket t's object is parked here (not destroyed yet).
  bool holds(std::uint64_t t) const noexcept {
    for (const Slot& s : slots_)
      if (std::binary_search(s.held.begin(), s.held.end(), t)) return true;
    return false;
  }
  /// A ticket up to t is parked here.
  bool holds_any_through(std::uint64_t t) const noexcept {
    for (const Slot& s : slots_)
      if (!s.held.empty() && s.held.front() <= t) return true;
    return false;
  }
  /// How many tickets up to t are parked here.
  std::uint64_t count_through(std::uint64_t t) const noexcept {
    std::uint64_t n = 0;
    for (const Slot& s : slots_)
      n += static_cast<std::uint64_t>(std::upper_bound(s.held.begin(), s.held.end(), t) - s.held.begin());
    return n;
  }

  /// The lot should be polled now: a last put came, or a drain timer is due, and nobody polls.
  bool due(clock::time_point now) const noexcept { return !polling_ && !slots_.empty() && (told_ || now >= deadline_); }
  /// When a drain timer of the lot is due next (clock::time_point::max() when empty).
  clock::time_point deadline() const noexcept { return deadline_; }

  /// A batch parked on s. Told at once: a put may have told its drain before it was here.
  void join(Slot& s) noexcept {
    slots_.push_back(s);
    told_ = true;
    deadline_ = std::min(deadline_, s.engine->parked_deadline());
  }
  /// A parked object's last put came (ref_drain::park's wake).
  void tell() noexcept { told_ = true; }

  /// The poller's walk: begin_poll, then for each slot (the iterators stay valid while others
  /// join: only the poller erases) next or leave, then end_poll.
  iterator begin_poll() noexcept {
    polling_ = true;
    told_ = false;
    return slots_.begin();
  }
  iterator end() noexcept { return slots_.end(); }
  /// s holds nothing more: it leaves the lot (its tickets are done).
  iterator leave(iterator it) noexcept { return slots_.erase(it); }
  void end_poll() noexcept {
    deadline_ = clock::time_point::max();
    for (const Slot& s : slots_) deadline_ = std::min(deadline_, s.engine->parked_deadline());
    polling_ = false;
  }

 private:
  list_type slots_;                                   // parked, oldest first (their slots stay busy)
  clock::time_point deadline_ = clock::time_point::max();  // the earliest drain timer among them
  bool told_ = false;     // a last put came since the lot was last polled
  bool polling_ = false;  // a thread is polling it (one at a time)
};

}  // namespace rcubatch::detail
