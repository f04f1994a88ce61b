// rcubatch/batch.hpp — the running rollback_many, as the policy's hooks see it.
//
//   void notify(device& d, rcubatch::batch<device>& b) noexcept {
//     for (device& vlan : vlans_on(d)) b.queue(vlan);       // dependents join this batch
//   }
//   void uninit(device& d, rcubatch::batch<device>& b) noexcept {
//     for (route* r : d.routes) { fib.unlink(r); b.retire(r); }   // freed after GP #2
//   }
//
// A batch is created by rollback_many and lives on its stack; hooks get it by reference.
// queue() takes more objects into the running batch (the cascade: vlans of a dying lower device),
// retire() hands over sub-objects that readers may still reach (freed after the batch's last grace
// period, after the objects are destroyed), note_unlinked() says a hook unlinked something readers
// can reach without retiring anything (so the second grace period is needed).
//
// Thread safety: only the thread running rollback_many touches the batch.
// Complexity: queue, retire and note_unlinked are O(1); retire(U*) allocates one small node
// (retire(retire_node&) allocates none).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include <boost/intrusive/slist.hpp>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/unreg_queue.hpp"

namespace rcubatch {

/// A sub-object retired into a batch without allocation: derive from it, set dispose.
struct retire_node : boost::intrusive::slist_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>> {
  void (*dispose)(retire_node*) noexcept = nullptr;
};

/// What close_many receives: the objects that joined the batch in this round, in join order.
/// (A plain subrange would do, but Boost.Intrusive's iterators do not declare their copies
/// noexcept, and hooks taking the range by value must be checkable as noexcept.)
template <class T>
class object_range {
 public:
  using iterator = typename detail::unreg_list<T>::iterator;
  object_range(iterator first, iterator last) noexcept : first_(first), last_(last) {}
  object_range(const object_range& other) noexcept : first_(other.first_), last_(other.last_) {}
  object_range& operator=(const object_range& other) noexcept {
    first_ = other.first_;
    last_ = other.last_;
    return *this;
  }
  iterator begin() const noexcept { return first_; }
  iterator end() const noexcept { return last_; }
  bool empty() const noexcept { return first_ == last_; }

 private:
  iterator first_;
  iterator last_;
};

namespace detail {
struct batch_access;

/// The non-template part that dismantle.hpp reaches through an object's batch pointer.
class batch_base {
 public:
  void note_dismantle_elision() noexcept { ++stats_.dismantle_elided; }
  const batch_stats& stats() const noexcept { return stats_; }

 protected:
  batch_stats stats_;
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

template <class T, class Flavor>
class batch : public detail::batch_base {
  using access = detail::registrable_access;
  using list_type = detail::unreg_list<T>;

 public:
  using object_type = T;
  using flavor_type = Flavor;
  using iterator = typename list_type::iterator;

  batch(const batch&) = delete;
  batch& operator=(const batch&) = delete;

  /// Takes `dependent` into this batch: it is closed, unlisted, notified, uninited and destroyed
  /// with the others, at no extra grace period. Already in this batch: no effect, returns true.
  /// Not registered: diagnosed (noexcept context: reported, never thrown), returns false.
  bool queue(T& dependent) noexcept {
    registrable<T>& r = dependent;
    if (access::owner(r) == this) return true;
    if (!accepting_dependents_) {
      detail::diagnose_noexcept(misuse_kind::already_unregistering,
                                "batch::queue called after the notify phase (from batch_notify or uninit): "
                                "dependents must be queued from notify; it is left out of this batch");
      return false;
    }
    if (r.state() != reg_state::registered || access::batch(r) != nullptr) {
      detail::diagnose_noexcept(
          r.state() == reg_state::uninitialized ? misuse_kind::not_registered : misuse_kind::already_unregistering,
          std::string("batch::queue: dependent is ") + std::string(to_string(r.state())) +
              (access::batch(r) ? " and in another running batch" : "") + "; it is left out of this batch");
      return false;
    }
    if (access::owner(r) != nullptr) detach_from_queue(dependent);
    adopt(dependent);
    ++stats_.dependents_added;
    return true;
  }

  /// Frees `p` with `d` after the batch's last grace period. Requires: `p` is already unlinked from
  /// everything readers can reach. If the small node cannot be allocated, runs one grace period
  /// inline and frees `p` at once (counted in stats().retire_fallback_gps) — slower, never unsafe.
  template <class U, class Disposer = std::default_delete<U>>
  void retire(U* p, Disposer d = Disposer{}) noexcept {
    if (p == nullptr) return;
    auto* box = new (std::nothrow) detail::boxed_retiree<U, Disposer>(p, d);
    if (box == nullptr) {
      domain_.synchronize();
      ++stats_.retire_fallback_gps;
      ++stats_.grace_periods;
      d(p);
      return;
    }
    retire(*box);
  }

  /// Allocation-free retire: `node.dispose(&node)` runs after the batch's last grace period and
  /// after every object is destroyed, in retire order.
  void retire(retire_node& node) noexcept {
    retired_.push_back(node);
    ++stats_.retired;
    unlinked_after_gp1_ = true;
  }

  /// A hook unlinked something readers can reach (and frees it some other way): GP #2 is needed.
  void note_unlinked() noexcept { unlinked_after_gp1_ = true; }

  bool contains(const T& obj) const noexcept {
    return access::owner(const_cast<registrable<T>&>(static_cast<const registrable<T>&>(obj))) == this;
  }
  std::size_t size() const noexcept { return objects_.size(); }
  iterator begin() noexcept { return objects_.begin(); }
  iterator end() noexcept { return objects_.end(); }
  grace_domain<Flavor>& domain() noexcept { return domain_; }

 private:
  friend struct detail::batch_access;

  explicit batch(grace_domain<Flavor>& d) noexcept : domain_(d) {}

  void adopt(T& obj) noexcept {
    registrable<T>& r = obj;
    objects_.push_back(obj);
    access::owner(r) = this;
    access::batch(r) = this;
    access::set_dismantle(r, mark_dismantle_);
  }

  /// Takes every object of `q` in one pass and one O(1) splice.
  void adopt_all(unreg_queue<T>& q, bool dismantle) noexcept {
    mark_dismantle_ = dismantle;
    q.splice_into(objects_, [this](registrable<T>& r) noexcept {
      access::owner(r) = this;
      access::batch(r) = this;
      access::set_dismantle(r, mark_dismantle_);
    });
  }

  void detach_from_queue(T& obj) noexcept {
    auto* q = static_cast<unreg_queue<T>*>(const_cast<void*>(access::owner(static_cast<registrable<T>&>(obj))));
    q->remove(obj);
  }

  void dispose_retired() noexcept {
    retired_.clear_and_dispose([](retire_node* n) { n->dispose(n); });
  }

  grace_domain<Flavor>& domain_;
  list_type objects_;  // every object of the batch, in the order they joined
  // FIFO: sub-objects are disposed in the order they were retired.
  boost::intrusive::slist<retire_node, boost::intrusive::cache_last<true>,
                          boost::intrusive::constant_time_size<false>>
      retired_;
  bool unlinked_after_gp1_ = false;
  bool accepting_dependents_ = true;
  bool mark_dismantle_ = true;
};

}  // namespace rcubatch
