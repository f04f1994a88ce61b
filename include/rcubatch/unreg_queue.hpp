// rcubatch/unreg_queue.hpp — the objects a caller wants unregistered together.
//
//   rcubatch::unreg_queue<session> q;
//   for (session* s : doomed) q.push(*s);         // O(1), no allocation
//   rcubatch::rollback_many(q, policy, domain);   // one batch, ≤ 2 GPs
//   (compiled in tests/header_examples_test.cpp)
//
// What a registry's dellink(obj, queue) fills (the kernel's unregister_netdevice_queue). Queueing
// is idempotent — pushing an object already in this queue moves it to the tail and never links it
// twice (the veth lesson: a driver may queue itself and its peer, and get queued again).
// unreg_queue<T> takes T and anything derived from it: T is the type whose registrable<T> base
// the objects share (a queue of the base type needs T to have a virtual destructor, or a
// policy whose destroy knows the real type: see push).
//
// Thread safety: none of its own; use it under the registry's writer lock like the registry.
// Misuse, diagnosed by policy (misuse.hpp), the object left where it was:
//   - an object that is not registered (never registered → not_registered; already being
//     unregistered or gone → already_unregistering);
//   - an object sitting in another queue (queued_in_other_queue). Under misuse_policy::report it
//     is moved here after the report, as the kernel's list_move would.
// Destroying a queue unlinks what it still holds; the objects stay registered.
// push_range queues a whole range (objects or pointers) at once, all or nothing: one misused
// object refuses the range, and an object already queued is misuse there (contract at push_range).
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "rcubatch/registrable.hpp"

namespace rcubatch {

namespace detail {
struct queue_access;

/// An iterator over a registrable_list that yields the objects as T&.
template <class T, class BaseIterator>
class typed_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;  // the queue is singly linked
  using value_type = std::remove_const_t<T>;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;

  typed_iterator() noexcept = default;
  explicit typed_iterator(BaseIterator it) noexcept : it_(it) {}
  typed_iterator(const typed_iterator& other) noexcept : it_(other.it_) {}
  typed_iterator& operator=(const typed_iterator& other) noexcept {
    it_ = other.it_;
    return *this;
  }

  T& operator*() const noexcept {
    return static_cast<T&>(static_cast<std::conditional_t<std::is_const_v<T>, const registrable<value_type>&,
                                                            registrable<value_type>&>>(*it_));
  }
  T* operator->() const noexcept { return &**this; }
  typed_iterator& operator++() noexcept {
    ++it_;
    return *this;
  }
  typed_iterator operator++(int) noexcept {
    typed_iterator old = *this;
    ++it_;
    return old;
  }
  friend bool operator==(const typed_iterator& a, const typed_iterator& b) noexcept { return a.it_ == b.it_; }
  BaseIterator base() const noexcept { return it_; }

 private:
  BaseIterator it_{};
};

/// The diagnostic half of check_queueable, out of line so the check itself inlines into push.
[[gnu::cold, gnu::noinline]] inline bool refuse_unqueueable(const registrable_base& obj, const char* where) {
  const reg_state s = obj.state();
  const misuse_kind kind = s == reg_state::uninitialized ? misuse_kind::not_registered
                                                         : misuse_kind::already_unregistering;
  diag_text msg(where);
  msg += ": object is ";
  msg += to_string(s);
  if (s == reg_state::registered) msg += " and already in a running batch";
  msg += ", only registered objects can be unregistered";
  diagnose(kind, msg.view());
  return false;
}

/// Checks that `obj` may join a queue. Returns false under misuse_policy::report.
inline bool check_queueable(const registrable_base& obj, const char* where) {
  if (obj.state() == reg_state::registered && registrable_access::lane(obj) == nullptr) [[likely]]
    return true;
  return refuse_unqueueable(obj, where);
}

/// Checks, at compile time, that a U may be queued where T objects are.
template <class T, class U>
constexpr void check_queueable_type() {
  static_assert(std::is_base_of_v<T, U>, "rcubatch: the object's type is not T or derived from T");
  static_assert(std::is_same_v<registrable_type_t<U>, T>,
                "rcubatch: the object's registrable<X> base is not the queue's T: queue it in an unreg_queue<X>");
  static_assert(std::is_same_v<T, U> || std::has_virtual_destructor_v<T>,
                "rcubatch: an object of a type derived from T is queued as T, and T has no virtual destructor: "
                "the default destroy (delete through T*) would be undefined behaviour. Give T a virtual "
                "destructor, or use unreg_queue<Derived>, or push static_cast<T&>(obj) if your policy's "
                "destroy(T*) deletes the right type");
}
}  // namespace detail

/// Objects to unregister together, in one batch (contract in the file comment above).
template <class T>
class unreg_queue : private detail::queue_base {
  static_assert(std::is_same_v<registrable_type_t<T>, T>,
                "rcubatch: unreg_queue<T> needs T to derive from rcubatch::registrable<T> (the queue's T is "
                "the type named in the registrable base)");
  using access = detail::registrable_access;
  using list_type = detail::registrable_list;

 public:
  using value_type = T;  ///< the objects' type
  /// Forward iterators over the queued objects, in push order.
  ///@{
  using iterator = detail::typed_iterator<T, list_type::iterator>;
  using const_iterator = detail::typed_iterator<const T, list_type::const_iterator>;
  ///@}

  unreg_queue() = default;
  unreg_queue(const unreg_queue&) = delete;
  unreg_queue& operator=(const unreg_queue&) = delete;
  ~unreg_queue() { clear(); }

  /// Effects: queues `obj` (moves it to the tail if already here).
  /// Requires: obj is registered and in no running batch; U is T or derived from it (a derived
  /// U needs T's destructor virtual — a compile error otherwise; see check_queueable_type).
  /// Returns: false if it was refused under misuse_policy::report.
  /// Throws: misuse_error under misuse_policy::throw_error, changing nothing.
  /// Complexity: O(1), no allocation; O(its position) for an object already in a queue (the
  /// queue is singly linked: taking it out needs the node before it). The common case — a
  /// registered object in no queue, pushed into a queue no batch runs on — is always inlined and
  /// reads the object's owner and state once each (a call per push, and the general path's
  /// repeated loads, were measurable in a batch's cost: issue 13's A/B); every other case, the
  /// diagnostics included, takes the out-of-line path.
  template <class U>
  [[gnu::always_inline]] bool push(U& obj) {
    detail::check_queueable_type<T, U>();
    detail::registrable_base& r = static_cast<registrable<T>&>(static_cast<T&>(obj));
    // In no queue means in no batch either (a batch runs on its queues' lists in place).
    if (access::owner(r) == nullptr && r.state() == reg_state::registered && running_lane() == nullptr) [[likely]] {
      link_at_tail(r);
      return true;
    }
    return push_other(r);
  }

  /// Effects: queues the objects of [first, last), in that order, at the tail — the objects
  /// proj(*it) names (an object, or a pointer to one: unregister_many's forms) — or none of them.
  /// An object push would refuse (not registered, already going away), one already in a queue
  /// (another, this one, or earlier in the range), or a queue whose batch is running refuses the
  /// whole range, diagnosed as push diagnoses it, and the queue and every object are left as
  /// they were. Unlike push, an object already in a queue is a misuse here (push moves it; a bulk
  /// caller naming one object twice has a bug).
  /// Requires: as push, for each object; It a forward iterator; proj, and It's increment,
  /// dereference and comparison, do not throw (the objects are linked as the range is walked).
  /// Returns: false if the range was refused under misuse_policy::report (nothing queued).
  /// Throws: misuse_error under misuse_policy::throw_error, std::invalid_argument for a null
  /// pointer (naming its position); nothing queued in either case.
  /// Complexity: one pass, O(distance(first, last)), no allocation; an empty range is a no-op.
  /// Why not push in a loop: push_back writes the list's header (last node, count) for every
  /// object. Here the linking is Boost's slist::insert_after(pos, first, last), which keeps the
  /// last node and the count in locals and writes the header once (the demo's push walk 1.5 →
  /// 1.2 ns per object, the same 19 instructions: bench/RESULTS.md, issue 36); each object is
  /// checked by the iterator's end test as Boost reaches it, so a refused object stops the insert
  /// there, and the prefix already linked is erased again. Boost has no documented way to link a
  /// chain of nodes built by hand (incorporate_after is marked experimental), and checking in a
  /// pass of its own first cost a second walk over the objects (22 instructions per object).
  template <std::forward_iterator It, std::sentinel_for<It> S, class Proj = std::identity>
  bool push_range(It first, S last, Proj proj = {}) {
    if (first == last) return true;
    if (running_lane() != nullptr) [[unlikely]] {
      detail::diagnose(misuse_kind::queued_too_late,
                       "unreg_queue::push_range into a queue whose batch is running; hooks queue dependents "
                       "with batch::queue");
      return false;
    }
    const typename list_type::iterator before = list().empty() ? list().before_begin() : list().last();
    no_step step;
    const std::optional<It> refused = link_range(before, first, last, proj, step);  // where it stopped, if refused
    if (refused) [[unlikely]] {
      const detail::registrable_base* const r = base_of(std::invoke(proj, **refused));
      const detail::queue_base* const seen_owner = r == nullptr ? nullptr : access::owner(*r);
      list().erase_after_and_dispose(before, list().end(),
                                     [](detail::registrable_base* obj) { access::set_owner(*obj, nullptr); });
      return refuse_in_range(r, seen_owner, static_cast<std::size_t>(std::ranges::distance(first, *refused)));
    }
    return true;
  }

  /// push_range over a whole range: push_range(std::ranges::begin(r), std::ranges::end(r), proj).
  template <std::ranges::forward_range R, class Proj = std::identity>
  bool push_range(R&& r, Proj proj = {}) {
    return push_range(std::ranges::begin(r), std::ranges::end(r), std::move(proj));
  }

 private:
  /// The registrable base of a range's element: an object, or a pointer to one (nullptr: null).
  template <class E>
  static detail::registrable_base* base_of(E&& e) noexcept {
    if constexpr (std::is_pointer_v<std::remove_cvref_t<E>>) {
      using U = std::remove_pointer_t<std::remove_cvref_t<E>>;
      detail::check_queueable_type<T, U>();
      if (e == nullptr) return nullptr;
      return static_cast<detail::registrable_base*>(static_cast<registrable<T>*>(static_cast<T*>(e)));
    } else {
      using U = std::remove_reference_t<E>;
      detail::check_queueable_type<T, U>();
      return static_cast<detail::registrable_base*>(static_cast<registrable<T>*>(static_cast<T*>(&e)));
    }
  }

  /// link_range's step for push_range: nothing beyond the link.
  struct no_step {
    void operator()(detail::registrable_base&) const noexcept {}
  };

  /// Links the objects of [first, last) at the tail, checking each as push_range says, and calls
  /// step(obj) for each accepted object right before Boost links it (rollback_range's fused walk
  /// unlists it there: rollback_many.hpp). Stops at the first refused element and returns where
  /// it is, the accepted prefix linked (the list whole); nullopt when every element was accepted.
  /// Does not test for a running batch (rollback_range links into its own running queue).
  /// `marked`: the objects were marked this queue's by mark_range (rollback_range checks the
  /// whole range first, so that a refused element changes nothing); an element is then accepted
  /// if it is marked so, instead of if it is in no queue.
  template <class It, class S, class Proj, class Step>
  std::optional<It> link_range(It first, S last, Proj& proj, Step& step, bool marked = false) {
    typename list_type::iterator before = list().before_begin();
    if (!list().empty()) before = list().last();
    return link_range(before, first, last, proj, step, marked);
  }
  /// link_range after `before`, the list's last node (its before_begin() when empty).
  template <class It, class S, class Proj, class Step>
  std::optional<It> link_range(typename list_type::iterator before, It first, S last, Proj& proj, Step& step,
                               bool marked = false) {
    std::optional<It> refused;
    if (marked) {  // checked already: the walk only links (and steps)
      list().insert_after(before, checking_iterator<It, S, Proj, Step, true>{first, &last, &proj, this, &refused, &step},
                          checking_iterator<It, S, Proj, Step, true>{});
    } else {
      list().insert_after(before, checking_iterator<It, S, Proj, Step>{first, &last, &proj, this, &refused, &step},
                          checking_iterator<It, S, Proj, Step>{});
    }
    return refused;
  }

  /// rollback_range's check of a whole range before anything of it is unlisted: each element
  /// is checked as push_range checks it and marked this queue's (nothing linked: the list is
  /// untouched), so that an object named twice is caught at its second place. Returns the
  /// first refused element (the ones before it stay marked: unmark_range), nullopt if none.
  template <class It, class S, class Proj>
  std::optional<It> mark_range(It first, S last, Proj& proj) noexcept {
    for (It it = first; it != last; ++it) {
      detail::registrable_base* const r = base_of(std::invoke(proj, *it));
      if (r == nullptr || access::owner(*r) != nullptr || r->state() != reg_state::registered) [[unlikely]]
        return it;
      access::set_owner(*r, this);
    }
    return std::nullopt;
  }
  /// Undoes mark_range over [first, last), the elements it accepted.
  template <class It, class Proj>
  void unmark_range(It first, It last, Proj& proj) noexcept {
    for (It it = first; it != last; ++it) access::set_owner(*base_of(std::invoke(proj, *it)), nullptr);
  }

  /// push_range's view of the caller's range for Boost's insert_after: yields the objects'
  /// registrable bases, marking each owned by this queue as Boost links it (and running the
  /// caller's step on it); its end test
  /// (Boost's `f != l`, once per element, right before `*f`) checks the next object and ends the
  /// range at a refused one, so that Boost leaves the list whole (header written) with the
  /// accepted prefix linked. The mark is how an object named twice is caught. A
  /// default-constructed one is the end.
  /// Marked: the range passed mark_range (each object checked and marked this queue's): no
  /// check and no mark again.
  template <class It, class S, class Proj, class Step, bool Marked = false>
  struct checking_iterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = detail::registrable_base;
    using difference_type = std::ptrdiff_t;
    using pointer = detail::registrable_base*;
    using reference = detail::registrable_base&;
    It it{};
    const S* last = nullptr;  // nullptr: this is the end
    Proj* proj = nullptr;
    unreg_queue* queue = nullptr;
    std::optional<It>* refused = nullptr;
    Step* step = nullptr;
    // The object the last end test accepted (Boost dereferences right after it): the element is
    // read and projected once.
    mutable detail::registrable_base* current = nullptr;

    reference operator*() const {
      if constexpr (!Marked) access::set_owner(*current, queue);
      (*step)(*current);
      return *current;
    }
    checking_iterator& operator++() {
      ++it;
      return *this;
    }
    // Only ever `element != end` (Boost's loop).
    bool operator!=(const checking_iterator&) const {
      if (it == *last) return false;
      current = base_of(std::invoke(*proj, *it));
      if constexpr (Marked) return true;
      if (current != nullptr && access::owner(*current) == nullptr && current->state() == reg_state::registered)
          [[likely]]
        return true;
      refused->emplace(it);
      return false;
    }
  };

  /// push_range's diagnosis of the element at `index` (r: its base, nullptr for a null pointer).
  /// seen_owner: the object's queue when it was refused (push_range's undo may have cleared it).
  [[gnu::cold, gnu::noinline]] bool refuse_in_range(const detail::registrable_base* r,
                                                    const detail::queue_base* seen_owner, std::size_t index) {
    detail::diag_text where("unreg_queue::push_range: element ");
    where += static_cast<unsigned long long>(index);
    if (r == nullptr) {
      where += " is a null pointer; nothing was queued";
      throw std::invalid_argument(std::string(where.view()));
    }
    if (seen_owner != nullptr) {
      where += seen_owner == this ? ": object is already in this queue (queued before, or twice in the range)"
                                  : ": object already sits in another unregistration queue";
      where += "; push_range takes objects in no queue (push moves a queued one); nothing was queued";
      detail::diagnose(misuse_kind::queued_in_other_queue, where.view());
      return false;
    }
    where += " (nothing was queued)";
    return detail::check_queueable(*r, where.view().data());
  }

  /// push for everything but the common case: misuse (diagnosed), a re-push (to the tail), an
  /// object in another queue (diagnosed, then moved here under misuse_policy::report).
  [[gnu::noinline]] bool push_other(detail::registrable_base& r) {
    if (!detail::check_queueable(r, "unreg_queue::push")) return false;
    if (running_lane() != nullptr) [[unlikely]] {
      // The batch works on this queue's list in place: a push would slip an object into it
      // without its close/unlist (batch::queue is the way in from a hook).
      detail::diagnose(misuse_kind::queued_too_late,
                       "unreg_queue::push into a queue whose batch is running; hooks queue dependents "
                       "with batch::queue");
      return false;
    }
    detail::queue_base* const owner = access::owner(r);
    if (owner == this) {
      if (&list().back() == &r) return true;  // already the tail
      access::erase(list(), r);
    } else if (owner != nullptr) {
      detail::diagnose(misuse_kind::queued_in_other_queue,
                       "unreg_queue::push: object already sits in another unregistration queue; "
                       "one object belongs to one batch");
      unlink_from_other_queue(r);  // report policy: move it here, as the kernel's list_move does
    }
    link_at_tail(r);
    return true;
  }

  /// push for a caller that knows no batch runs on this queue and for which an object already
  /// here is misuse (async_unregister's submit into its current queues, under the writer lock:
  /// a batch takes a set of queues only after current_ has moved on to another, free set, so no
  /// running lane is ever attached to these; an object already here was submitted twice). The
  /// common case is push's without the running-lane test, and the test for an object already
  /// here is made only off it (a queued object has an owner): two loads and two branches fewer
  /// per submit than contains then push (callgrind, issue 35). `again`: the diagnosis of an
  /// object already here (misuse already_unregistering). Returns, Throws: as push.
  template <class U>
  [[gnu::always_inline]] bool push_new_idle(U& obj, const char* again) {
    detail::check_queueable_type<T, U>();
    detail::registrable_base& r = static_cast<registrable<T>&>(static_cast<T&>(obj));
    if (access::owner(r) == nullptr && r.state() == reg_state::registered) [[likely]] {
      link_at_tail(r);
      return true;
    }
    return push_new_other(r, again);
  }
  [[gnu::noinline]] bool push_new_other(detail::registrable_base& r, const char* again) {
    if (access::owner(r) == this && access::is_linked(r)) {
      detail::diagnose(misuse_kind::already_unregistering, again);
      return false;
    }
    return push_other(r);
  }

  /// The one place an object joins this queue.
  void link_at_tail(detail::registrable_base& r) noexcept {
    list().push_back(r);
    access::set_owner(r, this);
  }

 public:
  /// Effects: removes `obj` if it is queued here and no batch runs on this queue; no effect
  /// otherwise. Complexity: O(1) for the head, else O(its position) (the queue is singly linked).
  void remove(T& obj) noexcept {
    detail::registrable_base& r = static_cast<registrable<T>&>(obj);
    if (!contains(obj) || running_lane() != nullptr) return;
    access::erase(list(), r);
    access::set_owner(r, nullptr);
  }

  /// True if obj is in this queue. Throws: nothing. O(1).
  bool contains(const T& obj) const noexcept {
    const detail::registrable_base& r = static_cast<const registrable<T>&>(obj);
    return access::owner(r) == static_cast<const detail::queue_base*>(this) && access::is_linked(r);
  }

  /// The number of queued objects, whether there is none, and the objects in push order.
  /// Throws: nothing. O(1).
  ///@{
  std::size_t size() const noexcept { return list().size(); }
  bool empty() const noexcept { return list().empty(); }
  iterator begin() noexcept { return iterator(list().begin()); }
  iterator end() noexcept { return iterator(list().end()); }
  const_iterator begin() const noexcept { return const_iterator(list().begin()); }
  const_iterator end() const noexcept { return const_iterator(list().end()); }
  ///@}

  /// Effects: unqueues everything; the objects stay registered. Complexity: O(size()).
  /// Requires: no batch runs on this queue.
  void clear() noexcept {
    list().clear_and_dispose([](detail::registrable_base* obj) { access::set_owner(*obj, nullptr); });
  }

 private:
  friend struct detail::queue_access;

  list_type& list() noexcept { return access::list_of(*this); }
  const list_type& list() const noexcept { return access::list_of(const_cast<unreg_queue&>(*this)); }

  // Only queues are owners here: objects in a running batch are refused by check_queueable.
  static void unlink_from_other_queue(detail::registrable_base& r) noexcept {
    access::erase(access::list_of(*access::owner(r)), r);
    access::set_owner(r, nullptr);
  }
};

namespace detail {
/// What a batch needs of a queue: its list (to splice) and the queue a queued object sits in.
struct queue_access {
  template <class T>
  static queue_base& base(unreg_queue<T>& q) noexcept { return q; }
  /// unreg_queue::push_new_idle (async_unregister's submit).
  template <class T, class U>
  [[gnu::always_inline]] static bool push_new_idle(unreg_queue<T>& q, U& obj, const char* again) {
    return q.push_new_idle(obj, again);
  }
  /// Takes `r` out of the queue that owns it (a cascade stealing a dependent from a queue no
  /// batch runs on). O(its position in that queue).
  /// The listener told when a batch takes an object of q over (nullptr: none). Set it before q
  /// holds anything; an async_unregister sets it on its own queues.
  static takeover_listener* takeover(const queue_base& q) noexcept { return q.takeover_; }
  static void set_takeover(queue_base& q, takeover_listener* l) noexcept { q.takeover_ = l; }
  static void remove_from_owner(registrable_base& r) noexcept {
    registrable_access::erase(registrable_access::list_of(*registrable_access::owner(r)), r);
    registrable_access::set_owner(r, nullptr);
  }
  /// rollback_range (rollback_many.hpp): push_range's checks and link, with `step` run on each
  /// accepted object, into a queue whose batch runs; stops at a refused element (returned).
  template <class T, class It, class S, class Proj, class Step>
  static std::optional<It> link_range(unreg_queue<T>& q, It first, S last, Proj& proj, Step& step,
                                      bool marked = false) {
    return q.link_range(first, last, proj, step, marked);
  }
  template <class T, class It, class S, class Proj>
  static std::optional<It> mark_range(unreg_queue<T>& q, It first, S last, Proj& proj) noexcept {
    return q.mark_range(first, last, proj);
  }
  template <class T, class It, class Proj>
  static void unmark_range(unreg_queue<T>& q, It first, It last, Proj& proj) noexcept {
    q.unmark_range(first, last, proj);
  }
  /// The registrable base of a range element (nullptr for a null pointer), as push_range sees it.
  template <class T, class E>
  static registrable_base* base_of(E&& e) noexcept {
    return unreg_queue<T>::base_of(std::forward<E>(e));
  }
  /// push_range's diagnosis of a refused element (throws std::invalid_argument for a null one).
  template <class T>
  static bool refuse_in_range(unreg_queue<T>& q, const registrable_base* r, const queue_base* seen_owner,
                              std::size_t index) {
    return q.refuse_in_range(r, seen_owner, index);
  }
};
}  // namespace detail

}  // namespace rcubatch
