// rcubatch/policy.hpp — the registry's teardown hooks: all optional, checked at compile time.
//
// A policy is any type; rollback_many calls the members it has, in this order:
//
//   phase | member                                  | may throw | runs
//   ------+-----------------------------------------+-----------+------------------------------
//   0     | validate(T&)                            | yes       | per queued object, before any change
//   1     | close_many(object_range<T>)             | no        | once per round
//   2     | unlist(T&)                              | no        | per object; state → unregistering
//   –     | grace period #1                         |           | once
//   3     | notify(T&, batch&) / notify(T&)         | no        | per object; may queue dependents
//   4     | batch_notify(batch&)                    | no        | once
//   5     | uninit(T&, batch&) / uninit(T&)         | no        | per object, dependents first
//   –     | grace period #2 (if anything unlinked)  |           | once
//   6     | rebroadcast(T&), name(const T&)         | no        | ref drain, for objects still held
//   7     | destroy(T*)  (default: delete)          | no        | per object, as its refs drop
//
// Everything after validate runs past the point of no return and must be noexcept; a hook with the
// wrong shape or without noexcept is a compile error whose message says which and why.
// uninit may return bool: false means "I unlinked nothing readers can reach", so a batch whose
// hooks all say so (and retire nothing) skips grace period #2. A void uninit counts as true.
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "rcubatch/batch.hpp"

namespace rcubatch::detail {

template <class P, class T> concept has_validate = requires(P& p, T& t) { p.validate(t); };
template <class P, class T> concept has_close_many = requires(P& p, object_range<T> r) { p.close_many(r); };
template <class P, class T> concept has_unlist = requires(P& p, T& t) { p.unlist(t); };
template <class P, class T, class B> concept has_notify_b = requires(P& p, T& t, B& b) { p.notify(t, b); };
template <class P, class T> concept has_notify = requires(P& p, T& t) { p.notify(t); };
template <class P, class B> concept has_batch_notify = requires(P& p, B& b) { p.batch_notify(b); };
template <class P, class T, class B> concept has_uninit_b = requires(P& p, T& t, B& b) { p.uninit(t, b); };
template <class P, class T> concept has_uninit = requires(P& p, T& t) { p.uninit(t); };
template <class P, class T> concept has_destroy = requires(P& p, T* t) { p.destroy(t); };
template <class P, class T> concept has_rebroadcast = requires(P& p, T& t) { p.rebroadcast(t); };
template <class P, class T> concept has_name = requires(P& p, const T& t) {
  { p.name(t) } -> std::convertible_to<std::string_view>;
};

/// Calls the policy's hooks, or does nothing where a hook is absent. Checks noexcept once.
template <class Policy, class T, class Flavor>
struct policy_hooks {
  using batch_type = batch<T, Flavor>;
  Policy& p;

  static constexpr void check() {
    if constexpr (has_close_many<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().close_many(std::declval<object_range<T>>())),
                    "Policy::close_many runs after the point of no return and must be noexcept.");
    if constexpr (has_unlist<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().unlist(std::declval<T&>())),
                    "Policy::unlist runs after the point of no return and must be noexcept.");
    if constexpr (has_notify_b<Policy, T, batch_type>)
      static_assert(noexcept(std::declval<Policy&>().notify(std::declval<T&>(), std::declval<batch_type&>())),
                    "Policy::notify runs after the point of no return and must be noexcept.");
    else if constexpr (has_notify<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().notify(std::declval<T&>())),
                    "Policy::notify runs after the point of no return and must be noexcept.");
    if constexpr (has_batch_notify<Policy, batch_type>)
      static_assert(noexcept(std::declval<Policy&>().batch_notify(std::declval<batch_type&>())),
                    "Policy::batch_notify runs after the point of no return and must be noexcept.");
    if constexpr (has_uninit_b<Policy, T, batch_type>)
      static_assert(noexcept(std::declval<Policy&>().uninit(std::declval<T&>(), std::declval<batch_type&>())),
                    "Policy::uninit runs after the point of no return and must be noexcept.");
    else if constexpr (has_uninit<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().uninit(std::declval<T&>())),
                    "Policy::uninit runs after the point of no return and must be noexcept.");
    if constexpr (has_destroy<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().destroy(std::declval<T*>())),
                    "Policy::destroy runs after the point of no return and must be noexcept.");
    if constexpr (has_rebroadcast<Policy, T>)
      static_assert(noexcept(std::declval<Policy&>().rebroadcast(std::declval<T&>())),
                    "Policy::rebroadcast runs during the ref drain and must be noexcept.");
    static_assert(std::is_nothrow_destructible_v<T> || has_destroy<Policy, T>,
                  "T must be nothrow destructible, or the policy must provide destroy(T*) noexcept.");
  }

  static constexpr bool has_validate_hook = has_validate<Policy, T>;
  void validate(T& t) { if constexpr (has_validate<Policy, T>) p.validate(t); }
  void close_many(object_range<T> r) noexcept { if constexpr (has_close_many<Policy, T>) p.close_many(r); }
  void unlist(T& t) noexcept { if constexpr (has_unlist<Policy, T>) p.unlist(t); }
  void notify(T& t, batch_type& b) noexcept {
    if constexpr (has_notify_b<Policy, T, batch_type>) p.notify(t, b);
    else if constexpr (has_notify<Policy, T>) p.notify(t);
  }
  static constexpr bool has_any_notify = has_notify_b<Policy, T, batch_type> || has_notify<Policy, T>;
  void batch_notify(batch_type& b) noexcept { if constexpr (has_batch_notify<Policy, batch_type>) p.batch_notify(b); }
  /// Returns whether the hook may have unlinked something readers can reach.
  bool uninit(T& t, batch_type& b) noexcept {
    if constexpr (has_uninit_b<Policy, T, batch_type>) return call_uninit([&] { return p.uninit(t, b); });
    else if constexpr (has_uninit<Policy, T>) return call_uninit([&] { return p.uninit(t); });
    else return false;
  }
  static constexpr bool has_any_uninit = has_uninit_b<Policy, T, batch_type> || has_uninit<Policy, T>;
  void destroy(T* t) noexcept {
    if constexpr (has_destroy<Policy, T>) p.destroy(t);
    else delete t;
  }
  void rebroadcast(T& t) noexcept { if constexpr (has_rebroadcast<Policy, T>) p.rebroadcast(t); }
  static constexpr bool has_rebroadcast_hook = has_rebroadcast<Policy, T>;
  std::string name(const T& t) const {
    if constexpr (has_name<Policy, T>) return std::string(std::string_view(p.name(t)));
    else return "<unnamed object>";
  }

 private:
  template <class F>
  static bool call_uninit(F&& f) noexcept {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return true;
    } else {
      return static_cast<bool>(f());
    }
  }
};

}  // namespace rcubatch::detail
