// rcubatch/registrable.hpp — what an object embeds to be unregistered in batches.
//
//   struct device : rcubatch::registrable<device> { std::string name; ... };
//
//   auto* d = new device{...};
//   publish(d);                 // insert into the registry's RCU-visible indexes
//   d->mark_registered();       // uninitialized → registered
//
// State machine (the kernel's NETREG_*), each transition checked:
//   uninitialized → registered        mark_registered(), by the registry
//   registered    → unregistering     rollback_many, when the policy's unlist hook runs
//   unregistering → unregistered      rollback_many, after the batch's last grace period
//   unregistered  → released          rollback_many, right before the policy's destroy hook
//
// It also carries the dismantle flag (set for every object of a running batch, so sub-components
// can skip their own grace period: see dismantle.hpp), the reference count (ref_count.hpp) and the
// Boost.Intrusive hook that unreg_queue and the batch link it with (no allocation, O(1)).
//
// Thread safety: state(), dismantling() and refs() may be read by readers (atomics). Transitions
// happen under the registry's writer lock.
// Misuse: destroying an object that readers may still reach (registered, queued, in a batch) is
// fatal; mark_registered twice is diagnosed.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include <boost/intrusive/list_hook.hpp>

#include "rcubatch/fwd.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/ref_count.hpp"

namespace rcubatch {

enum class reg_state : unsigned char { uninitialized, registered, unregistering, unregistered, released };

constexpr std::string_view to_string(reg_state s) noexcept {
  switch (s) {
    case reg_state::uninitialized: return "uninitialized";
    case reg_state::registered: return "registered";
    case reg_state::unregistering: return "unregistering";
    case reg_state::unregistered: return "unregistered";
    case reg_state::released: return "released";
  }
  return "?";
}

namespace detail {
struct unreg_hook_tag;
/// safe_link: the hook knows whether it is linked, which is how queues stay idempotent.
using unreg_hook = boost::intrusive::list_base_hook<boost::intrusive::tag<unreg_hook_tag>,
                                                    boost::intrusive::link_mode<boost::intrusive::safe_link>>;
struct registrable_access;
class batch_base;
}  // namespace detail

template <class T>
class registrable : public detail::unreg_hook {
 public:
  registrable() = default;
  registrable(const registrable&) = delete;
  registrable& operator=(const registrable&) = delete;

  ~registrable() {
    const reg_state s = state();
    if (s == reg_state::registered || s == reg_state::unregistering || s == reg_state::unregistered ||
        this->is_linked()) {
      detail::diagnose_fatal(misuse_kind::destroyed_while_linked,
                             std::string("object destroyed in state ") + std::string(to_string(s)) +
                                 (this->is_linked() ? " while queued" : "") +
                                 ": only uninitialized or released objects may be destroyed");
    }
  }

  reg_state state() const noexcept { return state_.load(std::memory_order_acquire); }

  /// True from the moment its batch starts until it is destroyed.
  bool dismantling() const noexcept { return dismantle_.load(std::memory_order_acquire); }

  ref_count& refs() noexcept { return refs_; }
  const ref_count& refs() const noexcept { return refs_; }

  /// uninitialized → registered. Call after the object is published to readers.
  /// Returns false (under misuse_policy::report) when the object was not freshly constructed.
  bool mark_registered() {
    if (state() != reg_state::uninitialized) {
      detail::diagnose(misuse_kind::register_twice,
                       std::string("mark_registered on an object in state ") + std::string(to_string(state())));
      return false;
    }
    state_.store(reg_state::registered, std::memory_order_release);
    return true;
  }

 private:
  friend struct detail::registrable_access;

  std::atomic<reg_state> state_{reg_state::uninitialized};
  std::atomic<bool> dismantle_{false};
  const void* owner_ = nullptr;              // the unreg_queue or batch holding it; under the writer lock
  detail::batch_base* batch_ = nullptr;      // its running batch, for dismantle elision accounting
  registrable* drained_next_ = nullptr;      // the ref drain's ready chain (no allocation on put)
  ref_count refs_;
};

namespace detail {
/// The library's back door to registrable's bookkeeping; not for users.
struct registrable_access {
  template <class T> static void set_state(registrable<T>& o, reg_state s) noexcept {
    o.state_.store(s, std::memory_order_release);
  }
  template <class T> static void set_dismantle(registrable<T>& o, bool v) noexcept {
    o.dismantle_.store(v, std::memory_order_release);
  }
  template <class T> static const void*& owner(registrable<T>& o) noexcept { return o.owner_; }
  template <class T> static batch_base*& batch(registrable<T>& o) noexcept { return o.batch_; }
  template <class T> static batch_base* batch(const registrable<T>& o) noexcept { return o.batch_; }
  template <class T> static registrable<T>*& drained_next(registrable<T>& o) noexcept { return o.drained_next_; }
};
}  // namespace detail

}  // namespace rcubatch
