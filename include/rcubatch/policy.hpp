// rcubatch/policy.hpp — the registry's teardown hooks: optional, found by name, checked by shape.
//
// A policy is a class; rollback_many calls the hooks it has. This table is the one reference for
// them (README, docs/guide.md and rollback_many.hpp point here); the phases themselves — their order, the grace
// periods between them, what each one's time covers — are kPhaseTable in phase.hpp, and kHooks
// below is this table's first two columns for code and tests. "Lock" is the caller's writer lock:
// held throughout a plain rollback_many; with unlock_during_waits(lock) it is released during the
// grace periods, the disposals and the drain, and re-taken for the hooks marked "held".
//
//  hook                                     | phase        | runs                          | lock            | may                         | must not
//  -----------------------------------------+--------------+-------------------------------+-----------------+-----------------------------+------------------------
//  validate(T&)              may throw      | validate     | per queued object, first      | held            | throw: nothing has changed  | change anything
//  close_many(object_range<T>) noexcept     | close        | once per lane per round       | held            | stop traffic, mark closing  | free, block on a GP
//  unlist(T&) noexcept  (required*)         | unlist       | per object; → unregistering   | held            | unlink from RCU indexes     | free, block on a GP
//  notify(T&, batch&) / notify(T&)          | notify       | per object, round by round    | held            | b.queue(dependent), unlink  | free, block on a GP
//  batch_notify(batch&) noexcept            | batch_notify | once per lane                 | held            | container-wide unlinks      | queue, free, block
//  uninit(T&, batch&) / uninit(T&)          | uninit       | per object, lanes last to     | held            | unlink, b.retire*, note_... | queue, free, block
//                                           |              | first, each in join order (o) |                 |                             |
//    returns void or bool (false: "I unlinked nothing readers can reach")
//  rebroadcast(T&) noexcept, name(const T&) | ref_drain    | objects still held            | held (re-taken) | ask holders to let go       | block
//  destroy(T*) noexcept (default: delete)   | ref_drain    | per object, as its refs drop; | released (udw)  | free the object             | touch the registry's
//                                           |              | after its dependents; then    |                 |                             | indexes (lock not held)
//                                           |              | its retire_with sub-objects   |                 |                             |
//
// (o) Join order: the queued objects, then the dependents queued from their notify, so within a
// lane a parent's uninit runs before its dependents' (unregister_netdevice_many calls ndo_uninit
// in list order too); a later lane's objects (typically the dependents) go before an earlier lane's. It was
// newest first until 2026-12-01: walking forwards is what lets the queue be singly linked (an
// 8-byte hook, registrable.hpp) and was cheaper (issue 13's A/B). An uninit must not rely on
// a dependent's uninit having run; destroys still go dependents first (ref_drain.hpp).
// (udw) = only under unlock_during_waits (and, for a registry or an async_unregister, by default:
// they release their lock for the drain unless hold_lock_through_drain); otherwise held. destroy
// runs without the lock on purpose: the object is unreachable, and re-taking the lock per object
// would serialize every destroy against the other writers (the kernel's netdev_run_todo frees
// devices after dropping RTNL too). So a destroy hook must not touch shared registry state.
// * unlist is required: a policy without it must say so with
//     static constexpr bool publishes_nothing = true;
//   (in a local class: static constexpr bool publishes_nothing() { return true; })
//   (a batch that unpublishes nothing would free objects readers can still find).
//
// Hooks are found by name, then checked: a member named like a hook that cannot be called as that
// hook (it takes a derived type or a pointer, it is not const on a const policy, its batch
// parameter is not rcubatch::batch&) is a compile error naming the hook and its expected shape,
// never a silently skipped hook. Everything after validate runs past the point of no return and
// must be noexcept (also a compile error). Without destroy, T must be nothrow destructible, and
// a polymorphic T needs a virtual destructor (delete through T* otherwise is undefined).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "rcubatch/batch.hpp"
#include "rcubatch/phase.hpp"

namespace rcubatch {

/// A row of the hook table above: a hook's name and the phase it runs in.
struct hook_row {
  std::string_view name;  ///< the hook's member name
  phase runs_in;          ///< the phase it runs in
};

/// Every hook a policy may have, in the order the phases call them. A new row goes with its line
/// in policy_hooks::has (a row it does not know is a compile error).
inline constexpr std::array<hook_row, 9> kHooks{{
    {"validate", phase::validate},
    {"close_many", phase::close},
    {"unlist", phase::unlist},
    {"notify", phase::notify},
    {"batch_notify", phase::batch_notify},
    {"uninit", phase::uninit},
    {"rebroadcast", phase::ref_drain},
    {"name", phase::ref_drain},
    {"destroy", phase::ref_drain},
}};

}  // namespace rcubatch

namespace rcubatch::detail {

/// Converts to any lvalue reference or pointer: probes "is there a callable with this name and
/// arity" when the name probe below cannot run (a final policy class).
struct any_arg {
  template <class U>
  operator U&() const noexcept;
};

// Name probes: Derived inherits the policy and a base that has a member named `hook`; naming
// Derived::hook is ambiguous exactly when the policy has a member of that name, whatever its
// signature, template-ness or overloads (the usual "has member named" idiom).
#define RCUBATCH_DETAIL_NAME_PROBE(hook)                                                        \
  struct hook##_name_base {                                                                     \
    void hook();                                                                                \
  };                                                                                            \
  template <class P>                                                                            \
  struct hook##_name_probe : P, hook##_name_base {};                                            \
  template <class P>                                                                            \
  concept names_##hook =                                                                        \
      (std::is_class_v<P> && !std::is_final_v<P> && !requires { &hook##_name_probe<P>::hook; }) || \
      requires(P& p) { p.hook(any_arg{}); } || requires(P& p) { p.hook(any_arg{}, any_arg{}); };
RCUBATCH_DETAIL_NAME_PROBE(validate)
RCUBATCH_DETAIL_NAME_PROBE(close_many)
RCUBATCH_DETAIL_NAME_PROBE(unlist)
RCUBATCH_DETAIL_NAME_PROBE(notify)
RCUBATCH_DETAIL_NAME_PROBE(batch_notify)
RCUBATCH_DETAIL_NAME_PROBE(uninit)
RCUBATCH_DETAIL_NAME_PROBE(destroy)
RCUBATCH_DETAIL_NAME_PROBE(rebroadcast)
RCUBATCH_DETAIL_NAME_PROBE(name)
RCUBATCH_DETAIL_NAME_PROBE(pending_bytes)  // async_unregister's budget hook (checked there)
#undef RCUBATCH_DETAIL_NAME_PROBE

/// `static constexpr bool publishes_nothing = true;` in a policy (in a local class, which may not
/// have static data members: `static constexpr bool publishes_nothing() { return true; }`): its
/// objects sit in no RCU-visible index, so it needs no unlist.
template <class P>
concept says_publishes_nothing = requires { requires static_cast<bool>(P::publishes_nothing); } ||
                                 requires { requires static_cast<bool>(P::publishes_nothing()); };

/// Calls a policy's hooks (P may be const), after checking their shapes once (check()).
template <class P, class T>
struct policy_hooks {
  using M = std::remove_cv_t<P>;  // names are looked up on the unqualified class
  P& p;

  // The call forms, on the policy as it was passed (const or not).
  static constexpr bool validate_ok = requires(P& pol, T& t) { pol.validate(t); };
  static constexpr bool close_many_ok = requires(P& pol, object_range<T> r) { pol.close_many(r); };
  static constexpr bool unlist_ok = requires(P& pol, T& t) { pol.unlist(t); };
  static constexpr bool notify_b_ok = requires(P& pol, T& t, batch& b) { pol.notify(t, b); };
  static constexpr bool notify_ok = requires(P& pol, T& t) { pol.notify(t); };
  static constexpr bool batch_notify_ok = requires(P& pol, batch& b) { pol.batch_notify(b); };
  static constexpr bool uninit_b_ok = requires(P& pol, T& t, batch& b) { pol.uninit(t, b); };
  static constexpr bool uninit_ok = requires(P& pol, T& t) { pol.uninit(t); };
  static constexpr bool destroy_ok = requires(P& pol, T* t) { pol.destroy(t); };
  static constexpr bool rebroadcast_ok = requires(P& pol, T& t) { pol.rebroadcast(t); };
  static constexpr bool name_ok = requires(P& pol, const T& t) {
    { pol.name(t) } -> std::convertible_to<std::string_view>;
  };
  // The same on a non-const policy: tells "not const" from "wrong parameters".
  static constexpr bool unlist_mutable_ok = requires(M& pol, T& t) { pol.unlist(t); };

  static constexpr bool has_validate = names_validate<M> || validate_ok;
  static constexpr bool has_close_many = names_close_many<M> || close_many_ok;
  static constexpr bool has_unlist = names_unlist<M> || unlist_ok;
  static constexpr bool has_notify = names_notify<M> || notify_b_ok || notify_ok;
  static constexpr bool has_batch_notify = names_batch_notify<M> || batch_notify_ok;
  static constexpr bool has_uninit = names_uninit<M> || uninit_b_ok || uninit_ok;
  static constexpr bool has_destroy = names_destroy<M> || destroy_ok;
  static constexpr bool has_rebroadcast = names_rebroadcast<M> || rebroadcast_ok;
  static constexpr bool has_name = names_name<M> || name_ok;

  /// Whether this policy has the hook named `hook`, a kHooks name (another name, evaluated at
  /// compile time, is a compile error: every row of kHooks is looked up by has_hook_in).
  static constexpr bool has(std::string_view hook) {
    if (hook == "validate") return has_validate;
    if (hook == "close_many") return has_close_many;
    if (hook == "unlist") return has_unlist;
    if (hook == "notify") return has_notify;
    if (hook == "batch_notify") return has_batch_notify;
    if (hook == "uninit") return has_uninit;
    if (hook == "rebroadcast") return has_rebroadcast;
    if (hook == "name") return has_name;
    if (hook == "destroy") return has_destroy;
    throw "rcubatch: a row of kHooks names a hook policy_hooks::has does not know";
  }
  /// Whether this policy has a hook that runs in phase `p` (phase_entered::with_its_hook).
  static constexpr bool has_hook_in(phase p) {
    bool found = false;
    for (const hook_row& h : kHooks) found = (has(h.name) && h.runs_in == p) || found;  // looks every row up
    return found;
  }

  static constexpr bool check() {
    static_assert(std::is_class_v<M>, "rcubatch: a policy must be a class type");
    static_assert(has_hook_in(phase::validate) || true, "rcubatch: every row of kHooks names a known hook");
    constexpr bool is_const = std::is_const_v<P>;
    static_assert(!(is_const && has_unlist && !unlist_ok && unlist_mutable_ok),
                  "rcubatch: the policy was passed as const, and its unlist (like any hook that is not a const "
                  "member) cannot be called on it: pass the policy by value or non-const reference, or make "
                  "its hooks const");
    if constexpr (has_validate)
      static_assert(validate_ok, "rcubatch: the policy's member `validate` cannot be called as "
                                 "`void validate(T&)` with the queue's object type T (T& of the registrable<T> "
                                 "type, not a derived type or a pointer; const hooks on a const policy)");
    if constexpr (has_close_many) {
      static_assert(close_many_ok, "rcubatch: the policy's member `close_many` cannot be called as "
                                   "`void close_many(rcubatch::object_range<T>) noexcept` with the queue's object "
                                   "type T (const hooks on a const policy)");
      if constexpr (close_many_ok)
        static_assert(noexcept(std::declval<P&>().close_many(std::declval<object_range<T>>())),
                      "Policy::close_many runs after the point of no return and must be noexcept.");
    }
    if constexpr (has_unlist) {
      static_assert(unlist_ok, "rcubatch: the policy's member `unlist` cannot be called as "
                               "`void unlist(T&) noexcept` with the queue's object type T (T& of the "
                               "registrable<T> type, not a derived type or a pointer; const hooks on a const "
                               "policy): a skipped unlist would free objects readers can still find");
      if constexpr (unlist_ok)
        static_assert(noexcept(std::declval<P&>().unlist(std::declval<T&>())),
                      "Policy::unlist runs after the point of no return and must be noexcept.");
    } else {
      static_assert(says_publishes_nothing<M>,
                    "rcubatch: the policy has no unlist(T&) hook, so nothing would unpublish the objects before "
                    "they are freed. Add `void unlist(T&) noexcept`, or declare "
                    "`static constexpr bool publishes_nothing = true;` if the objects sit in no RCU-visible index");
    }
    if constexpr (has_notify) {
      static_assert(notify_b_ok || notify_ok,
                    "rcubatch: the policy's member `notify` cannot be called as "
                    "`void notify(T&, rcubatch::batch&) noexcept` or `void notify(T&) noexcept` with the queue's "
                    "object type T (the batch parameter must be rcubatch::batch&; const hooks on a const policy)");
      if constexpr (notify_b_ok)
        static_assert(noexcept(std::declval<P&>().notify(std::declval<T&>(), std::declval<batch&>())),
                      "Policy::notify runs after the point of no return and must be noexcept.");
      else if constexpr (notify_ok)
        static_assert(noexcept(std::declval<P&>().notify(std::declval<T&>())),
                      "Policy::notify runs after the point of no return and must be noexcept.");
    }
    if constexpr (has_batch_notify) {
      static_assert(batch_notify_ok, "rcubatch: the policy's member `batch_notify` cannot be called as "
                                     "`void batch_notify(rcubatch::batch&) noexcept` (const hooks on a const policy)");
      if constexpr (batch_notify_ok)
        static_assert(noexcept(std::declval<P&>().batch_notify(std::declval<batch&>())),
                      "Policy::batch_notify runs after the point of no return and must be noexcept.");
    }
    if constexpr (has_uninit) {
      static_assert(uninit_b_ok || uninit_ok,
                    "rcubatch: the policy's member `uninit` cannot be called as "
                    "`void|bool uninit(T&, rcubatch::batch&) noexcept` or `void|bool uninit(T&) noexcept` with the "
                    "queue's object type T (the batch parameter must be rcubatch::batch&; const hooks on a const "
                    "policy)");
      if constexpr (uninit_b_ok)
        static_assert(noexcept(std::declval<P&>().uninit(std::declval<T&>(), std::declval<batch&>())),
                      "Policy::uninit runs after the point of no return and must be noexcept.");
      else if constexpr (uninit_ok)
        static_assert(noexcept(std::declval<P&>().uninit(std::declval<T&>())),
                      "Policy::uninit runs after the point of no return and must be noexcept.");
    }
    if constexpr (has_destroy) {
      static_assert(destroy_ok, "rcubatch: the policy's member `destroy` cannot be called as "
                                "`void destroy(T*) noexcept` with the queue's object type T (T* of the "
                                "registrable<T> type; const hooks on a const policy)");
      if constexpr (destroy_ok)
        static_assert(noexcept(std::declval<P&>().destroy(std::declval<T*>())),
                      "Policy::destroy runs after the point of no return and must be noexcept.");
    } else {
      static_assert(std::is_nothrow_destructible_v<T>,
                    "T must be nothrow destructible, or the policy must provide destroy(T*) noexcept.");
      static_assert(!std::is_polymorphic_v<T> || std::has_virtual_destructor_v<T>,
                    "rcubatch: T is polymorphic and has no virtual destructor, so the default destroy (delete "
                    "through T*) is undefined for derived objects: give T a virtual destructor or the policy a "
                    "destroy(T*) noexcept that deletes the real type");
    }
    if constexpr (has_rebroadcast) {
      static_assert(rebroadcast_ok, "rcubatch: the policy's member `rebroadcast` cannot be called as "
                                    "`void rebroadcast(T&) noexcept` (const hooks on a const policy)");
      if constexpr (rebroadcast_ok)
        static_assert(noexcept(std::declval<P&>().rebroadcast(std::declval<T&>())),
                      "Policy::rebroadcast runs during the ref drain and must be noexcept.");
    }
    if constexpr (has_name)
      static_assert(name_ok, "rcubatch: the policy's member `name` cannot be called as "
                             "`std::string_view name(const T&)` (or anything convertible to std::string_view)");
    return true;
  }

  void validate(T& t) {
    if constexpr (has_validate) p.validate(t);
  }
  void close_many(object_range<T> r) noexcept {
    if constexpr (has_close_many) p.close_many(r);
  }
  void unlist(T& t) noexcept {
    if constexpr (has_unlist) p.unlist(t);
  }
  void notify(T& t, batch& b) noexcept {
    if constexpr (notify_b_ok) p.notify(t, b);
    else if constexpr (notify_ok) p.notify(t);
  }
  void batch_notify(batch& b) noexcept {
    if constexpr (has_batch_notify) p.batch_notify(b);
  }
  /// Returns whether the hook may have unlinked something readers can reach.
  bool uninit(T& t, batch& b) noexcept {
    if constexpr (uninit_b_ok) return call_uninit([&]() noexcept { return p.uninit(t, b); });
    else if constexpr (uninit_ok) return call_uninit([&]() noexcept { return p.uninit(t); });
    else return false;
  }
  void destroy(T* t) noexcept {
    if constexpr (has_destroy) p.destroy(t);
    else delete t;
  }
  void rebroadcast(T& t) noexcept {
    if constexpr (has_rebroadcast) p.rebroadcast(t);
  }
  /// The object's name for stall reports; allocates (callers catch bad_alloc).
  std::string name(const T& t) const {
    if constexpr (has_name) return std::string(std::string_view(p.name(t)));
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
