// rcubatch/unreg_queue.hpp — the objects a caller wants unregistered together.
//
//   rcubatch::unreg_queue<device> q;
//   for (device* d : doomed) q.push(*d);          // O(1), no allocation
//   rcubatch::rollback_many(q, policy, domain);   // one batch, ≤ 2 GPs
//
// What a registry's dellink(obj, queue) fills (the kernel's unregister_netdevice_queue). Queueing
// is idempotent — pushing an object already in this queue moves it to the tail and never links it
// twice (the veth lesson: a driver may queue itself and its peer, and get queued again).
//
// Thread safety: none of its own; use it under the registry's writer lock like the registry.
// Misuse, diagnosed by policy (misuse.hpp), the object left where it was:
//   - an object that is not registered (never registered → not_registered; already being
//     unregistered or gone → already_unregistering);
//   - an object sitting in another queue (queued_in_other_queue). Under misuse_policy::report it
//     is moved here after the report, as the kernel's list_move would.
// Destroying a queue unlinks what it still holds; the objects stay registered.
#pragma once

#include <cstddef>
#include <string>

#include <boost/intrusive/list.hpp>

#include "rcubatch/registrable.hpp"

namespace rcubatch {

namespace detail {
template <class T>
using unreg_list = boost::intrusive::list<T, boost::intrusive::base_hook<unreg_hook>,
                                          boost::intrusive::constant_time_size<true>>;

/// The diagnostic half of check_queueable, out of line so the check itself inlines into push.
template <class T>
[[gnu::cold, gnu::noinline]] bool refuse_unqueueable(const registrable<T>& obj, const char* where) {
  const reg_state s = obj.state();
  const misuse_kind kind = s == reg_state::uninitialized ? misuse_kind::not_registered
                                                         : misuse_kind::already_unregistering;
  const char* why = s == reg_state::registered ? " and already in a running batch" : "";
  diagnose(kind, std::string(where) + ": object is " + std::string(to_string(s)) + why +
                     ", only registered objects can be unregistered");
  return false;
}

/// Checks that `obj` may join a queue or batch. Returns false under misuse_policy::report.
template <class T>
bool check_queueable(const registrable<T>& obj, const char* where) {
  if (obj.state() == reg_state::registered && registrable_access::batch(obj) == nullptr) [[likely]]
    return true;
  return refuse_unqueueable(obj, where);
}
}  // namespace detail

template <class T>
class unreg_queue {
  using access = detail::registrable_access;

 public:
  using list_type = detail::unreg_list<T>;
  using iterator = typename list_type::iterator;
  using const_iterator = typename list_type::const_iterator;

  unreg_queue() = default;
  unreg_queue(const unreg_queue&) = delete;
  unreg_queue& operator=(const unreg_queue&) = delete;
  ~unreg_queue() { clear(); }

  /// Queues `obj` (moves it to the tail if already here). Returns false if it was refused under
  /// misuse_policy::report; throws misuse_error under throw_error. Complexity: O(1).
  bool push(T& obj) {
    registrable<T>& r = obj;
    if (!detail::check_queueable(r, "unreg_queue::push")) return false;
    const void*& owner = access::owner(r);
    if (owner == this) {
      list_.erase(list_.iterator_to(obj));
    } else if (owner != nullptr) {
      detail::diagnose(misuse_kind::queued_in_other_queue,
                       "unreg_queue::push: object already sits in another unregistration queue; "
                       "one object belongs to one batch");
      unlink_from_other_queue(obj);  // report policy: move it here, as the kernel's list_move does
    }
    list_.push_back(obj);
    owner = this;
    return true;
  }

  /// Removes `obj` if it is queued here; no effect otherwise. Complexity: O(1).
  void remove(T& obj) noexcept {
    registrable<T>& r = obj;
    if (access::owner(r) != this) return;
    list_.erase(list_.iterator_to(obj));
    access::owner(r) = nullptr;
  }

  bool contains(const T& obj) const noexcept {
    return access::owner(const_cast<registrable<T>&>(static_cast<const registrable<T>&>(obj))) == this;
  }

  std::size_t size() const noexcept { return list_.size(); }
  bool empty() const noexcept { return list_.empty(); }
  iterator begin() noexcept { return list_.begin(); }
  iterator end() noexcept { return list_.end(); }
  const_iterator begin() const noexcept { return list_.begin(); }
  const_iterator end() const noexcept { return list_.end(); }

  /// Unqueues everything; the objects stay registered.
  void clear() noexcept {
    list_.clear_and_dispose([](T* obj) { access::owner(*static_cast<registrable<T>*>(obj)) = nullptr; });
  }

  /// For rollback_many: calls `adopt(obj)` for each queued object (which must set its owner),
  /// then moves them all to the end of `into` (the batch's list) in one O(1) splice.
  template <class Adopt>
  void splice_into(list_type& into, Adopt&& adopt) noexcept {
    for (T& obj : list_) adopt(static_cast<registrable<T>&>(obj));
    into.splice(into.end(), list_);
  }

 private:
  // Only queues are owners here: objects in a running batch are refused by check_queueable.
  static void unlink_from_other_queue(T& obj) noexcept {
    auto* other = static_cast<unreg_queue*>(const_cast<void*>(access::owner(static_cast<registrable<T>&>(obj))));
    other->list_.erase(other->list_.iterator_to(obj));
    access::owner(static_cast<registrable<T>&>(obj)) = nullptr;
  }

  list_type list_;
};

}  // namespace rcubatch
