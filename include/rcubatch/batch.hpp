// rcubatch/batch.hpp — the running rollback_many, as the policy's hooks see it.
//
//   void notify(streaming_session& s, rcubatch::batch& b) noexcept {
//     for (stream* st : s.streams) b.queue(*st);             // dependents of any type in the batch
//   }
//   void uninit(streaming_session& s, rcubatch::batch& b) noexcept {
//     for (fib_route* r : s.routes) { fib.unlink(r); b.retire(r); }   // freed after GP #2
//   }
//   (compiled in tests/header_examples_test.cpp)
//
// A batch is created by rollback_many and lives on its stack; hooks get it by reference. It is
// one type whatever the flavor and the object types, so hooks can be ordinary functions defined
// in a .cpp file. A batch has one lane per object type (rollback_many(domain, lane(q, policy),
// ...)); each lane runs its own policy's hooks.
//
//   queue(dep)          takes a dependent into the running batch (the cascade: streams of a dying
//                       session). Its type must have a lane in the batch. The object whose notify
//                       queued it is its parent: the parent is destroyed only after it (the
//                       dependent holds a reference on the parent until its own destroy returns).
//   retire(p [, d])     hands over a sub-object readers may still reach: disposed right after the
//                       batch's last grace period, before the objects are destroyed, without
//                       waiting for any holder.
//   retire_with(owner, p [, d])
//                       the same, but disposed right after `owner` (an object of this batch) is
//                       destroyed: for sub-objects that holders of the owner may still use. The
//                       batch keeps them (the node records its owner), each owner's together, in
//                       the order they were tied.
//   note_unlinked()     a hook unlinked something readers can reach and frees it another way: the
//                       second grace period is needed.
//
// Thread safety: only the thread running rollback_many touches the batch (hooks run there).
// Complexity: queue, retire and note_unlinked are O(1) (queue: O(lanes) to find the lane);
// retire(U*) allocates one small node (retire(retire_node&) allocates none). retire_with is O(1)
// when the owner is new or was the last one tied to (retire_with(obj, ...) from obj's own hook),
// else O(retirees tied so far); an owner's release finds its retirees in O(1) when owners are
// released in the order they were first tied to (uninit and the drain both go in join order), else
// in O(retirees still tied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/retire_node.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch {

/// What close_many receives: the objects of one lane that joined the batch in this round, in
/// join order. (Boost.Intrusive's iterators do not declare their copies noexcept, and hooks taking
/// the range by value must be checkable as noexcept, hence this small type.)
template <class T>
class object_range {
 public:
  /// A forward iterator over T& (the objects, not their list nodes).
  using iterator = detail::typed_iterator<T, detail::registrable_list::iterator>;
  /// The objects from `first` up to `last`. Throws: nothing.
  object_range(iterator first, iterator last) noexcept : first_(first), last_(last) {}
  /// Copies are noexcept (the reason this type exists).
  ///@{
  object_range(const object_range& other) noexcept = default;
  object_range& operator=(const object_range& other) noexcept = default;
  ///@}
  /// The range, for range-for; empty() when no object of the lane joined in this round.
  ///@{
  iterator begin() const noexcept { return first_; }
  iterator end() const noexcept { return last_; }
  bool empty() const noexcept { return first_ == last_; }
  ///@}

 private:
  iterator first_;
  iterator last_;
};

class batch;

namespace detail {
struct batch_access;

/// One identity per registrable type: how batch::queue finds the lane of an object's type.
template <class T>
inline constexpr char lane_key = 0;

/// The objects of one type in a running batch, and what the drain needs of their policy. The
/// phases themselves are templates over the lane's policy (rollback_many.hpp), so a pass over a
/// lane calls the hooks directly. The virtual calls are the drain's: one per lane per wake-up
/// (collecting the objects whose last holder let go) and, for objects still held, rebroadcast
/// and the stall report.
class lane_base {
 public:
  lane_base(const void* key, batch& owner, queue_base& q) noexcept : key_(key), batch_(&owner), queue_(&q) {}
  lane_base(const lane_base&) = delete;
  lane_base& operator=(const lane_base&) = delete;

  const void* key() const noexcept { return key_; }
  batch& owner_batch() const noexcept { return *batch_; }
  /// The lane's objects are its queue's: the batch runs on them where they are.
  registrable_list& objects() noexcept { return registrable_access::list_of(*queue_); }
  std::size_t size() const noexcept { return registrable_access::list_of(*queue_).size(); }
  queue_base& queue() const noexcept { return *queue_; }

  /// Takes the dependent `r` (registered, in no running batch) into this lane: out of the queue
  /// it sits in, if any, to the tail of this lane's queue. Its batch and dismantle flag follow.
  /// O(1), or O(its position in that queue) when it sat in one (the queue is singly linked).
  void adopt(registrable_base& r) noexcept {
    if (registrable_access::owner(r) != nullptr) queue_access::remove_from_owner(r);
    objects().push_back(r);
    registrable_access::set_owner(r, queue_);
  }

  /// Destroys every object of this lane whose count drained and told the drain (the drain's
  /// rescan, in join order); returns how many. Complexity: O(objects still held in this lane).
  virtual std::size_t release_told() noexcept = 0;
  /// The policy's rebroadcast and the stall line, for an object still held.
  virtual void rebroadcast(registrable_base& r) noexcept = 0;
  virtual bool has_rebroadcast() const noexcept = 0;
  virtual void report_stall(const registrable_base& r, std::size_t& reports) noexcept = 0;

 protected:
  ~lane_base() = default;

 private:
  const void* key_;
  batch* batch_;
  queue_base* queue_;  // its list holds every object of this lane, in the order they joined
};

template <class U, class Disposer>
struct boxed_retiree final : retire_node {
  boxed_retiree(U* p, Disposer d) : object(p), disposer(std::move(d)) {
    dispose = [](retire_node* self) noexcept {
      auto* box = static_cast<boxed_retiree*>(self);
      box->disposer(box->object);
      delete box;
    };
  }
  U* object;
  Disposer disposer;
};
}  // namespace detail

/// The running rollback_many, as the policy's hooks see it: queue dependents, retire sub-objects,
/// note extra unlinks (the operations and their contracts are in the file comment above).
class batch {
  using access = detail::registrable_access;

 public:
  batch(const batch&) = delete;
  batch& operator=(const batch&) = delete;

  /// Effects: takes `dependent` into this batch, in the lane of its registrable type: it is
  /// closed, unlisted, notified, uninited and destroyed with the others, at no extra grace period.
  /// Called from notify(obj, b), it records obj as the dependent's parent: obj is destroyed only
  /// after the dependent (however long the dependent is held).
  /// Returns true when the dependent is (or already was) going away: already in this batch (no
  /// effect), or already in another running batch — a legal race when writers release the lock
  /// during waits; the parent then waits for it the same way, unless it already has a parent.
  /// Misuse (reported, never thrown: hooks are noexcept), returns false and leaves it out:
  /// queued after the notify phase (queued_too_late), not registered (not_registered), already
  /// gone (already_unregistering). Fatal under every policy (reported, then abort): its type has
  /// no lane in this batch (not_in_batch) — the parent would be destroyed under it.
  /// Complexity: O(number of lanes).
  template <class U>
  bool queue(U& dependent) noexcept {
    using X = registrable_type_t<U>;
    detail::registrable_base& r = static_cast<registrable<X>&>(static_cast<X&>(dependent));
    detail::lane_base* in = access::lane(r);
    if (in != nullptr && is_own_lane(in)) return true;
    if (!accepting_dependents_) {
      detail::diagnose_noexcept(misuse_kind::queued_too_late,
                                "batch::queue called after the notify phase (from batch_notify, uninit or "
                                "destroy): dependents must be queued from notify; it is left out of this batch");
      return false;
    }
    if (in != nullptr) {  // in another running batch: it is already going
      record_parent(r);
      return true;
    }
    if (r.state() != reg_state::registered) {
      detail::diag_text msg("batch::queue: dependent is ");
      msg += to_string(r.state());
      msg += "; it is left out of this batch";
      detail::diagnose_noexcept(r.state() == reg_state::uninitialized ? misuse_kind::not_registered
                                                                      : misuse_kind::already_unregistering,
                                msg.view());
      return false;
    }
    detail::lane_base* lane = find_lane(&detail::lane_key<X>);
    if (lane == nullptr) {
      // Fatal: the batch is past its point of no return (grace period #1 has ended), and leaving
      // the dependent out would destroy its parent while the dependent stays findable and points
      // at it. A missing lane is a composition error that the first run of the code shows.
      detail::diagnose_fatal(misuse_kind::not_in_batch,
                             "batch::queue: the dependent's type has no lane in this batch (pass "
                             "rcubatch::lane(queue, policy) for it to rollback_many, or a policy for it to the "
                             "registry): its parent would be destroyed while it can still be found");
    }
    detail::queue_base* const from = access::owner(r);
    lane->adopt(r);
    record_parent(r);
    ++stats_.dependents_added;
    if (from != nullptr) tell_takeover(*from, r);
    return true;
  }

  /// Effects: disposes `p` with `d` right after the batch's last grace period, before the
  /// objects are destroyed, without waiting for holders.
  /// Requires: `p` is already unlinked from everything readers can reach, and nothing a holder
  /// of a batch object may still use (else retire_with).
  /// If the small node cannot be allocated, runs one grace period inline and disposes `p` at
  /// once (counted in stats().retire_fallback_gps): slower, never unsafe.
  template <class U, class Disposer = std::default_delete<U>>
  void retire(U* p, Disposer d = Disposer{}) noexcept {
    if (p == nullptr) return;
    if (auto* box = box_or_dispose(p, d)) retire(*box);
  }

  /// Allocation-free retire. Misuse: a node already retired is reported (retired_twice) and
  /// left where it is.
  void retire(retire_node& node) noexcept {
    if (!accept_retiree(node)) return;
    node.tied_to = 0;
    retired_.push_back(node);
  }

  /// Effects: disposes `p` right after `owner` is destroyed (after its destroy hook returns, so
  /// after every holder of `owner` let go). Requires: `owner` is an object of this batch
  /// (diagnosed: not_in_batch, and then disposed with the untied retirees' safety net: after
  /// every object of the batch is destroyed).
  template <class Owner, class U, class Disposer = std::default_delete<U>>
  void retire_with(Owner& owner, U* p, Disposer d = Disposer{}) noexcept {
    if (p == nullptr) return;
    if (auto* box = box_or_dispose(p, d)) retire_with(owner, *box);
  }

  /// Allocation-free retire_with.
  template <class Owner>
  void retire_with(Owner& owner, retire_node& node) noexcept {
    using X = registrable_type_t<Owner>;
    detail::registrable_base& r = static_cast<registrable<X>&>(static_cast<X&>(owner));
    if (!accept_retiree(node)) return;
    if (!is_own_lane(access::lane(r))) {
      detail::diagnose_noexcept(misuse_kind::not_in_batch,
                                "batch::retire_with: the owner is not an object of this batch; the sub-object "
                                "is disposed after every object of the batch is destroyed");
      node.tied_to = 0;
      late_.push_front(node);
      return;
    }
    tie(r, node);
  }

  /// Effects: a hook unlinked something readers can reach (and frees it some other way): when
  /// called after the first grace period, the second one is needed and will run.
  void note_unlinked() noexcept {
    if (past_gp1_) unlinked_after_gp1_ = true;
  }

  /// Effects: records a grace period a sub-component skipped because the batch covers it
  /// (synchronize_unless_dismantling). After the first grace period this requires the second.
  void note_dismantle_elision() noexcept {
    ++stats_.dismantle_elided;
    note_unlinked();
  }

  /// True if `obj` is an object of this batch (any lane).
  template <class U>
  bool contains(const U& obj) const noexcept {
    using X = registrable_type_t<U>;
    const detail::registrable_base& r = static_cast<const registrable<X>&>(static_cast<const X&>(obj));
    return is_own_lane(access::lane(r));
  }

  /// The objects of type U in this batch, in join order (empty if U has no lane).
  template <class U>
  object_range<U> objects_of() noexcept {
    detail::lane_base* lane = find_lane(&detail::lane_key<U>);
    if (lane == nullptr) return object_range<U>({}, {});
    return object_range<U>(typename object_range<U>::iterator(lane->objects().begin()),
                           typename object_range<U>::iterator(lane->objects().end()));
  }

  /// Objects in all lanes, dependents included.
  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < lane_count_; ++i) n += lanes_[i]->size();
    return n;
  }

  /// The running batch's statistics so far (filled in as its phases end). Throws: nothing.
  const batch_stats& stats() const noexcept { return stats_; }

 private:
  friend struct detail::batch_access;

  batch(detail::lane_base* const* lanes, std::size_t count, void* domain, void (*synchronize)(void*) noexcept) noexcept
      : lanes_(lanes), lane_count_(count), domain_(domain), synchronize_(synchronize) {}

  bool is_own_lane(const detail::lane_base* l) const noexcept {
    for (std::size_t i = 0; i < lane_count_; ++i)
      if (lanes_[i] == l) return true;
    return false;
  }
  detail::lane_base* find_lane(const void* key) const noexcept {
    for (std::size_t i = 0; i < lane_count_; ++i)
      if (lanes_[i]->key() == key) return lanes_[i];
    return nullptr;
  }

  /// The dependent holds a reference on the object whose notify is running, released when the
  /// dependent's destroy returns (ref_drain.hpp): that is what orders the two destroys.
  void record_parent(detail::registrable_base& dep) noexcept {
    if (current_parent_ == nullptr || current_parent_ == &dep) return;
    current_parent_->refs().hold();
    detail::registrable_base* expected = nullptr;
    if (!access::parent(dep).compare_exchange_strong(expected, current_parent_, std::memory_order_acq_rel)) {
      current_parent_->refs().put();  // it already has a parent (or was just destroyed): first edge wins
    }
  }

  static std::uintptr_t address_of(const detail::registrable_base& owner) noexcept {
    return reinterpret_cast<std::uintptr_t>(&owner);
  }

  /// Keeps `node` with the other retirees of `owner`, in tied_ (each owner's retirees together).
  /// r was taken from `from` (a queue no batch ran on): its listener, if any, gets a node disposed
  /// right after r's destroy (tied, without the retire's second grace period: nothing a reader
  /// can reach is freed by it).
  void tell_takeover(detail::queue_base& from, detail::registrable_base& r) noexcept {
    detail::takeover_listener* const l = detail::queue_access::takeover(from);
    if (l == nullptr) [[likely]]
      return;
    if (retire_node* node = l->taken_over(r)) tie(r, *node);
  }

  void tie(detail::registrable_base& owner, retire_node& node) noexcept {
    node.tied_to = address_of(owner);
    if (!access::has_tied(owner)) {  // its first: a group of its own at the end
      access::set_has_tied(owner);
      tied_.push_back(node);
      return;
    }
    if (tied_.back().tied_to == node.tied_to) {  // the common case: the last owner tied to again
      tied_.push_back(node);
      return;
    }
    auto last = tied_.begin();  // its group is elsewhere: insert after the group's last node
    while (last->tied_to != node.tied_to) ++last;
    for (auto n = std::next(last); n != tied_.end() && n->tied_to == node.tied_to; ++n) last = n;
    tied_.insert_after(last, node);
  }

  /// Moves the retirees tied to `owner` into `group` (in tie order), right before its destroy.
  /// Looks right after the group taken last first (owners are usually released in the order
  /// their retirees were tied), else searches from the front.
  void take_tied_to(const detail::registrable_base& r, detail::retire_fifo& group) noexcept {
    const std::uintptr_t owner = address_of(r);
    auto prev = tied_cursor_ != nullptr ? tied_.iterator_to(*tied_cursor_) : tied_.before_begin();
    auto it = std::next(prev);
    if (it == tied_.end() || it->tied_to != owner) {
      prev = tied_.before_begin();
      for (it = tied_.begin(); it != tied_.end() && it->tied_to != owner; ++it) prev = it;
      if (it == tied_.end()) return;
    }
    for (auto n = std::next(prev); n != tied_.end() && n->tied_to == owner; n = std::next(prev)) {
      retire_node& taken = *n;
      tied_.erase_after(prev);
      group.push_back(taken);
    }
    // The next group starts after prev, which stays in tied_ (taking prev's own group later moves
    // the cursor to that group's predecessor): the cursor never dangles.
    tied_cursor_ = prev == tied_.before_begin() ? nullptr : &*prev;
  }

  bool accept_retiree(retire_node& node) noexcept {
    if (node.is_linked()) {
      detail::diagnose_noexcept(misuse_kind::retired_twice,
                                "batch::retire: this retire_node is already retired; it is disposed once");
      return false;
    }
    ++stats_.retired;
    // Retired before the first grace period: that one covers it. After: the second is needed.
    note_unlinked();
    return true;
  }

  template <class U, class Disposer>
  retire_node* box_or_dispose(U* p, Disposer& d) noexcept {
    auto* box = new (std::nothrow) detail::boxed_retiree<U, Disposer>(p, std::move(d));
    if (box != nullptr) return box;
    synchronize_(domain_);
    ++stats_.retire_fallback_gps;
    ++stats_.grace_periods;
    d(p);
    return nullptr;
  }

  detail::lane_base* const* lanes_;
  std::size_t lane_count_;
  void* domain_;                          // the grace_domain, for retire's out-of-memory fallback
  void (*synchronize_)(void*) noexcept;
  bool accepting_dependents_ = true;      // closed after the notify rounds
  bool past_gp1_ = false;
  bool unlinked_after_gp1_ = false;       // something readers could reach was unlinked after GP #1
  detail::registrable_base* current_parent_ = nullptr;  // the object whose notify is running
  detail::retire_fifo retired_;           // untied: disposed right after the last grace period
  detail::retire_fifo tied_;              // retire_with: each owner's together, disposed after it
  retire_node* tied_cursor_ = nullptr;    // the node before the group expected next (nullptr: front)
  detail::retire_chain late_;             // retire_with an owner outside the batch: after the drain
  batch_stats stats_;
};

}  // namespace rcubatch
