// rcubatch/detail/submitted_lane.hpp — the lane policy of an async_unregister batch.
//
// async_unregister::submit runs the registry policy's validate and unlist at once, under the
// writer lock; the batch that tears the object down later must not run them again. The unlist
// is skipped by the batch itself, for any object carrying the unlisted-early mark (registrable.hpp:
// set at submit, so it holds whichever batch takes the object, and a new object at a reused address
// does not inherit it). validate is what this lane drops: each lane of that batch gets, instead of
// the registry's policy P, a submitted_lane<P, T>: the same hooks (forwarded, and only those P
// has: the hook table is found by name, and an always-present forwarder would change what runs),
// no validate. Dependents that notify queues are never validated in any batch. P's owned_lists
// (owned.hpp) are forwarded too: the batch queues owned children as a synchronous one does.
#pragma once

#include <utility>

#include "rcubatch/batch.hpp"
#include "rcubatch/owned.hpp"
#include "rcubatch/policy.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch::detail {

// Forwarding mixins: the lane policy has exactly the hooks the registry's policy has (the hook
// table is found by name, so an always-present forwarder would change what runs: a void uninit
// forces grace period #2). D is the lane policy, which gives policy().
template <class D, class P, class T, bool>
struct fwd_close_many {};
template <class D, class P, class T>
struct fwd_close_many<D, P, T, true> {
  void close_many(object_range<T> r) noexcept { static_cast<D*>(this)->policy().close_many(r); }
};
template <class D, class P, class T, int>
struct fwd_notify {};
template <class D, class P, class T>
struct fwd_notify<D, P, T, 1> {
  void notify(T& t, batch& b) noexcept { static_cast<D*>(this)->policy().notify(t, b); }
};
template <class D, class P, class T>
struct fwd_notify<D, P, T, 2> {
  void notify(T& t) noexcept { static_cast<D*>(this)->policy().notify(t); }
};
template <class D, class P, class T, bool>
struct fwd_batch_notify {};
template <class D, class P, class T>
struct fwd_batch_notify<D, P, T, true> {
  void batch_notify(batch& b) noexcept { static_cast<D*>(this)->policy().batch_notify(b); }
};
template <class D, class P, class T, int>
struct fwd_uninit {};
template <class D, class P, class T>
struct fwd_uninit<D, P, T, 1> {
  auto uninit(T& t, batch& b) noexcept -> decltype(std::declval<P&>().uninit(t, b)) {
    return static_cast<D*>(this)->policy().uninit(t, b);
  }
};
template <class D, class P, class T>
struct fwd_uninit<D, P, T, 2> {
  auto uninit(T& t) noexcept -> decltype(std::declval<P&>().uninit(t)) {
    return static_cast<D*>(this)->policy().uninit(t);
  }
};
template <class D, class P, class T, bool>
struct fwd_destroy {};
template <class D, class P, class T>
struct fwd_destroy<D, P, T, true> {
  void destroy(T* t) noexcept { static_cast<D*>(this)->policy().destroy(t); }
};
template <class D, class P, class T, bool>
struct fwd_rebroadcast {};
template <class D, class P, class T>
struct fwd_rebroadcast<D, P, T, true> {
  void rebroadcast(T& t) noexcept { static_cast<D*>(this)->policy().rebroadcast(t); }
};
template <class D, class P, class T, bool>
struct fwd_name {};
template <class D, class P, class T>
struct fwd_name<D, P, T, true> {
  decltype(auto) name(const T& t) { return static_cast<D*>(this)->policy().name(t); }
};

/// The registry policy's owned_lists (owned.hpp), so the asynchronous batch queues owned
/// children like a synchronous one.
template <class P, bool = has_owned_lists<P>>
struct fwd_owned_lists {};
template <class P>
struct fwd_owned_lists<P, true> {
  using owned_lists = owned_lists_t<P>;
};

template <class P, class T>
using hooks_of = policy_hooks<P, T>;

/// The lane policy of an asynchronous batch: the registry's policy P without validate (it ran
/// at submit). unlist forwards: the batch skips it for objects unlisted at submit.
template <class P, class T>
class submitted_lane
    : public fwd_close_many<submitted_lane<P, T>, P, T, hooks_of<P, T>::has_close_many>,
      public fwd_notify<submitted_lane<P, T>, P, T,
                        hooks_of<P, T>::notify_b_ok ? 1 : (hooks_of<P, T>::notify_ok ? 2 : 0)>,
      public fwd_batch_notify<submitted_lane<P, T>, P, T, hooks_of<P, T>::has_batch_notify>,
      public fwd_uninit<submitted_lane<P, T>, P, T,
                        hooks_of<P, T>::uninit_b_ok ? 1 : (hooks_of<P, T>::uninit_ok ? 2 : 0)>,
      public fwd_destroy<submitted_lane<P, T>, P, T, hooks_of<P, T>::has_destroy>,
      public fwd_rebroadcast<submitted_lane<P, T>, P, T, hooks_of<P, T>::has_rebroadcast>,
      public fwd_name<submitted_lane<P, T>, P, T, hooks_of<P, T>::has_name>,
      public fwd_owned_lists<P> {
  static_assert(hooks_of<P, T>::check());  // a misshapen hook is a compile error, never skipped

 public:
  explicit submitted_lane(P& p) noexcept : p_(&p) {}
  P& policy() noexcept { return *p_; }

  void unlist(T& t) noexcept { hooks_of<P, T>{*p_}.unlist(t); }

 private:
  P* p_;
};

}  // namespace rcubatch::detail
