// rcubatch/registrable.hpp — what an object embeds to be unregistered in batches.
//
//   struct session : rcubatch::registrable<session> { std::string name; };
//
//   auto* s = new session;
//   publish(s);                 // insert into the registry's RCU-visible indexes
//   s->mark_registered();       // uninitialized → registered
//   (compiled in tests/header_examples_test.cpp)
//
// State machine (the kernel's NETREG_*), each transition checked:
//   uninitialized → registered        mark_registered(), by the registry
//   registered    → unregistering     rollback_many, when the policy's unlist hook runs
//   unregistering → unregistered      rollback_many, after the batch's last grace period
//   unregistered  → released          rollback_many, right before the policy's destroy hook
//
// It also carries the reference count (ref_count.hpp: a ref_count exists only here) and the bookkeeping a batch needs (the queue
// it sits in, the object that queued it as a dependent, and one bit saying that sub-objects were
// retired with it: the batch keeps those, batch::retire_with). Its
// batch and its dismantle flag (dismantle.hpp) are not stored per object: they are derived through
// its queue, which a running batch works on in place (the flag turns on for the whole batch at once). All of that is private: the intrusive hook is a member, not
// a base, so a user type gains no unlink() or swap_nodes() that could corrupt a running batch.
//
// Size: 32 bytes on x86-64 (g++ 12, 2026-12-01; 88 with a per-object lane pointer and dismantle
// flag, 80 with a 24-byte ref_count, 64 with the drain's ready chain, 56 with its own list of
// tied retirees, 48 with a 64-bit count, 40 with a doubly linked hook): ref_count 4 (one word:
// count, draining and told marks) and state 1 (+3; a bit of it says whether retirees are tied to
// it) share 8, singly linked hook 8, queue 8, parent edge 8.
//
// One registrable base per object: a type that derives from registrable<A> and registrable<B>
// is refused wherever rcubatch looks for the base (registrable_type_t).
//
// Thread safety: state() and refs() may be read by readers (atomics); dismantling() by the thread
// running the batch (its hooks) and by holders of a reference (it reads the queue the object sits in). Transitions
// happen under the registry's writer lock.
// Misuse: destroying an object that readers may still reach (registered, queued, in a batch) is
// fatal; mark_registered twice is diagnosed.
#pragma once

#include <atomic>
#include <string_view>
#include <type_traits>

#include <boost/intrusive/slist.hpp>
#include <boost/intrusive/slist_hook.hpp>

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
class lane_base;
class queue_base;
struct registrable_access;

/// What the last put() of a draining count tells: the batch's ref drain (ref_drain.hpp).
class drain_listener {
 public:
  /// `obj`'s count, marked draining, just reached zero. Any thread; called once per drain.
  virtual void released(registrable_base& obj) noexcept = 0;

 protected:
  ~drain_listener() = default;
};

/// Told when a batch takes an object over from a queue no batch runs on (a cascade, batch::queue,
/// reaching an object that waits in an async_unregister's queue: reclaim_protocol.hpp). Returns a
/// node the taking batch disposes right after the object's destroy returns (batch::retire_with's
/// tie), or nullptr. Called under the writer lock, from the taking batch's notify phase.
class takeover_listener {
 public:
  virtual retire_node* taken_over(registrable_base& obj) noexcept = 0;

 protected:
  ~takeover_listener() = default;
};

/// Carries an object's ref_count. A base of registrable_base, not a member, so the count's last
/// put() finds its object with a static_cast (the count is this base's only member, hence
/// pointer-interconvertible with it) instead of offsetof on a type that is not standard-layout.
/// Its one name (refs_) is what a user type inherits from it: no hold/put/count in T's scope.
class counted_base {
 protected:
  counted_base() = default;
  ~counted_base() = default;
  ref_count refs_;

 private:
  friend struct registrable_access;
};

/// safe_link: the hook knows whether it is linked, which is how queues stay idempotent. Singly
/// linked (one pointer, 8 bytes): every pass of a batch walks its queue forwards, and taking an
/// object out of the middle of a queue (unreg_queue::remove, a re-push, a cascade taking a
/// dependent from an idle queue) is rare enough to pay O(its position) for the previous node.
using unreg_hook = boost::intrusive::slist_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>>;

/// The type-independent part of registrable<T>: what queues, batches and the drain work on.
class registrable_base : private counted_base {
 public:
  registrable_base(const registrable_base&) = delete;
  registrable_base& operator=(const registrable_base&) = delete;

  /// Effects: the object's registration state. Thread safety: any thread (acquire load).
  reg_state state() const noexcept {
    return static_cast<reg_state>(state_.load(std::memory_order_acquire) & kStateBits);
  }

  /// Effects: true once the object is on its way out: submitted to an async_unregister (its
  /// state() still says registered until a batch takes it), or in a batch, or gone (state() past
  /// registered). A hook that walks objects (a parent's children, say) can skip such an object:
  /// a delete of it would be a lost race (already_unregistering).
  /// Thread safety: exact under the registry's writer lock; any thread otherwise (acquire load).
  bool going_away() const noexcept {
    const unsigned char s = state_.load(std::memory_order_acquire);
    return (s & kUnlistedEarly) != 0 || (s & kStateBits) > static_cast<unsigned char>(reg_state::registered);
  }

  /// Effects: true from the moment its batch starts (when the batch marks dismantling:
  /// rollback_options::mark_dismantle), and stays true once it is released. Derived through the
  /// object's queue while its batch runs: the whole batch turns it on at once (rollback_range's,
  /// for each object as its walk reaches it, before its unlist).
  /// Thread safety: the thread running the batch, or a holder of a reference to the object (the
  /// queue it reads outlives the batch's objects); not a bare reader.
  bool dismantling() const noexcept;

  /// The object's reference count: holders (in-flight work, caches) hold() and put() it.
  ref_count& refs() noexcept { return refs_; }
  const ref_count& refs() const noexcept { return refs_; }

  /// Effects: uninitialized → registered. Call after the object is published to readers.
  /// Returns: false (under misuse_policy::report) when the object was not freshly constructed.
  /// Throws: misuse_error under misuse_policy::throw_error in that case, changing nothing.
  /// Requires: the registry's writer lock.
  bool mark_registered() {
    if (state() != reg_state::uninitialized) {
      diag_text msg("mark_registered on an object in state ");
      msg += to_string(state());
      diagnose(misuse_kind::register_twice, msg.view());
      return false;
    }
    state_.store(static_cast<unsigned char>(reg_state::registered), std::memory_order_release);
    return true;
  }

 protected:
  registrable_base() = default;
  ~registrable_base() {
    const reg_state s = state();
    if (s == reg_state::registered || s == reg_state::unregistering || s == reg_state::unregistered ||
        hook_.is_linked()) [[unlikely]]
      destroyed_while_reachable(s);
  }

 private:
  friend struct registrable_access;
  friend class queue_base;

  // Out of line, so that the destructor's check inlines into every destroy (a batch's drain
  // called the destructor, diagnostic and all, as a function: issue 36).
  [[gnu::cold, gnu::noinline]] void destroyed_while_reachable(reg_state s) const noexcept {
    diag_text msg("object destroyed in state ");
    msg += to_string(s);
    if (hook_.is_linked()) msg += " while queued";
    msg += ": only uninitialized or released objects may be destroyed";
    diagnose_fatal(misuse_kind::destroyed_while_linked, msg.view());
  }

  // First, so it fills the 4 bytes after the 32-bit count (counted_base): count + state = 8.
  // A reg_state; on release, kReleasedDismantling records that its batch marked dismantling (the
  // queue that says so may be gone once the batch returns; the object may outlive it).
  static constexpr unsigned char kReleasedDismantling = 0x80;
  // Set while its batch keeps sub-objects tied to it (batch::retire_with); transitions keep it.
  static constexpr unsigned char kHasTied = 0x40;
  // Set while it waits in an async_unregister queue, unlisted at submit: whichever batch takes it
  // (that reclaimer's, or another writer's through a cascade) skips its unlist; the transition to
  // unregistering clears it. A mark on the object, not a set of addresses: an address reused by a
  // new object cannot inherit it.
  static constexpr unsigned char kUnlistedEarly = 0x20;
  static constexpr unsigned char kStateBits = 0x07;
  std::atomic<unsigned char> state_{static_cast<unsigned char>(reg_state::uninitialized)};
  // Set once an owner_hook names this object as its parent (owned.hpp), never cleared: a
  // registry whose policy for this type owns no children refuses to tear it down (its children
  // would stay indexed, naming it). Its own byte, in the padding after state_ (the size is
  // unchanged): set_parent runs outside the writer lock, while state_ is written with plain
  // stores by the batch's thread.
  std::atomic<bool> named_as_owner_{false};
  unreg_hook hook_;                          // links it into one queue (a running batch's or not)
  // The queue it sits in; through it, its running batch's lane (queue_base::lane). Kept until its
  // destroy returns. Atomic (relaxed): a writer in another batch may read it while this batch's
  // drain runs without the writer lock (a cascade reaching it, unlock_during_waits).
  std::atomic<queue_base*> owner_{nullptr};
  // The object that queued it as a dependent (it holds a reference on that parent until it is
  // destroyed), or kParentGone once a drain running without the writer lock released it. Atomic:
  // a writer in another batch may record itself as parent while this object's own drain
  // releases it (unlock_during_waits).
  std::atomic<registrable_base*> parent_{nullptr};
};

/// Finds T in `registrable<T>`, the one registrable base of U (overload resolution does the
/// derived-to-base search; two bases make it ambiguous, which registrable_type_t reports).
template <class T>
T* registrable_tag(const volatile registrable<T>*);
template <class U>
concept has_one_registrable_base = requires(U* u) { registrable_tag(u); };
}  // namespace detail

/// The base an object embeds to be registered and unregistered in batches: its state machine,
/// dismantle flag, reference count and queue hook (contract in the file comment above).
template <class T>
class registrable : public detail::registrable_base {
 public:
  registrable() = default;
};

/// The T of the one registrable<T> base of U: unreg_queue<T>, rollback_many and batch::queue
/// find an object's base through it, so a derived object may be passed where its base is queued.
template <class U>
struct registrable_type {
  static_assert(detail::has_one_registrable_base<U>,
                "rcubatch: this type must derive from exactly one rcubatch::registrable<T> (publicly); "
                "it derives from none, from several, or from one it cannot access");
  /// T of U's one registrable<T> base.
  using type = std::remove_cv_t<std::remove_pointer_t<decltype(detail::registrable_tag(static_cast<U*>(nullptr)))>>;
};
template <class U>
using registrable_type_t = typename registrable_type<std::remove_cv_t<U>>::type;

namespace detail {
/// What an unreg_queue<T> shares with every other: its list, and the lane of the batch running on
/// it (set for the whole batch at once by rollback_many, with the dismantle flag). A running batch
/// works on the queue's list in place: there is no adopt pass over the objects.
class queue_base {
 public:
  queue_base() = default;
  queue_base(const queue_base&) = delete;
  queue_base& operator=(const queue_base&) = delete;

  /// The running batch's lane on this queue, nullptr when no batch runs on it.
  lane_base* running_lane() const noexcept { return lane_.load(std::memory_order_relaxed); }
  bool dismantling() const noexcept { return dismantle_.load(std::memory_order_relaxed); }

 protected:
  ~queue_base() = default;

 private:
  friend struct registrable_access;
  friend struct queue_access;
  // cache_last: push_back in O(1) (queues keep join order).
  using list_type = boost::intrusive::slist<registrable_base,
                                            boost::intrusive::member_hook<registrable_base, unreg_hook, &registrable_base::hook_>,
                                            boost::intrusive::constant_time_size<true>, boost::intrusive::cache_last<true>>;
  list_type list_;
  std::atomic<lane_base*> lane_{nullptr};
  std::atomic<bool> dismantle_{false};
  // The running batch's ref drain, which the last put() of a draining object reaches through the
  // object's queue. Written before the drain marks any count of this queue draining (published
  // to that put() by the count's RMWs); relaxed.
  std::atomic<drain_listener*> drain_{nullptr};
  // Told when a batch takes one of this queue's objects over (async_unregister's queues); nullptr
  // for every other queue. Set once, before the queue holds anything.
  takeover_listener* takeover_ = nullptr;
};

/// Sentinel for registrable_base::parent_: the object was destroyed, record no edge any more.
inline registrable_base* const kParentGone = reinterpret_cast<registrable_base*>(alignof(registrable_base));

/// The library's back door to registrable's bookkeeping; not for users.
struct registrable_access {
  using list = queue_base::list_type;

  /// A plain load and store (only the batch's thread writes a batch object's state), keeping
  /// the has-tied bit (and clearing the unlisted-early one).
  static void set_state(registrable_base& o, reg_state s) noexcept {
    const unsigned char keep = o.state_.load(std::memory_order_relaxed) & registrable_base::kHasTied;
    o.state_.store(static_cast<unsigned char>(keep | static_cast<unsigned char>(s)), std::memory_order_release);
  }
  /// set_state for an object known to carry neither flag (has-tied, unlisted-early): a store.
  static void set_flagless_state(registrable_base& o, reg_state s) noexcept {
    o.state_.store(static_cast<unsigned char>(s), std::memory_order_release);
  }
  /// Whether it was unlisted before its batch (async_unregister::submit); cleared by set_state.
  static bool unlisted_early(const registrable_base& o) noexcept {
    return (o.state_.load(std::memory_order_relaxed) & registrable_base::kUnlistedEarly) != 0;
  }
  /// Requires: registered, under the writer lock, right after its policy's unlist ran.
  static void set_unlisted_early(registrable_base& o, bool early) noexcept {
    const unsigned char s = o.state_.load(std::memory_order_relaxed);
    o.state_.store(static_cast<unsigned char>(early ? s | registrable_base::kUnlistedEarly
                                                    : s & ~registrable_base::kUnlistedEarly),
                   std::memory_order_release);
  }
  /// Whether the batch keeps sub-objects tied to it (cleared on release).
  static bool has_tied(const registrable_base& o) noexcept {
    return (o.state_.load(std::memory_order_relaxed) & registrable_base::kHasTied) != 0;
  }
  static void set_has_tied(registrable_base& o) noexcept {
    o.state_.store(static_cast<unsigned char>(o.state_.load(std::memory_order_relaxed) | registrable_base::kHasTied),
                   std::memory_order_release);
  }
  /// → released, remembering whether its batch marked dismantling (dismantling() stays true);
  /// clears the has-tied bit (read it before).
  static void set_released(registrable_base& o, bool dismantling) noexcept {
    o.state_.store(static_cast<unsigned char>(static_cast<unsigned char>(reg_state::released) |
                                              (dismantling ? registrable_base::kReleasedDismantling : 0)),
                   std::memory_order_release);
  }
  /// Whether an owner_hook ever named it as its parent (owned.hpp); set by owner_hook only.
  static bool named_as_owner(const registrable_base& o) noexcept {
    return o.named_as_owner_.load(std::memory_order_acquire);
  }
  static void mark_named_as_owner(registrable_base& o) noexcept {
    o.named_as_owner_.store(true, std::memory_order_release);
  }
  static queue_base* owner(const registrable_base& o) noexcept { return o.owner_.load(std::memory_order_relaxed); }
  static void set_owner(registrable_base& o, queue_base* q) noexcept { o.owner_.store(q, std::memory_order_relaxed); }
  /// The lane of the batch running on the object's queue; nullptr when it sits in no queue, in a
  /// queue no batch runs on, or was released (its queue may be gone).
  static lane_base* lane(const registrable_base& o) noexcept {
    const reg_state s = o.state();
    if (s == reg_state::released || s == reg_state::uninitialized) return nullptr;
    const queue_base* q = owner(o);
    return q == nullptr ? nullptr : q->running_lane();
  }
  static void set_running(queue_base& q, lane_base* l, bool dismantle) noexcept {
    q.lane_.store(l, std::memory_order_relaxed);
    q.dismantle_.store(dismantle, std::memory_order_relaxed);
  }
  static void set_drain(queue_base& q, drain_listener* d) noexcept { q.drain_.store(d, std::memory_order_relaxed); }
  static drain_listener* drain_of(const queue_base& q) noexcept { return q.drain_.load(std::memory_order_relaxed); }
  static list& list_of(queue_base& q) noexcept { return q.list_; }
  /// Takes `o` out of `l`, where it is linked: O(1) at the head, else O(its position) (singly
  /// linked: the walk finds the node before it).
  static void erase(list& l, registrable_base& o) noexcept {
    if (&l.front() == &o) {
      l.pop_front();
    } else {
      l.erase(l.iterator_to(o));
    }
  }
  /// The drain side of an object's count (ref_count's private half).
  static bool try_drain_unheld(registrable_base& o) noexcept { return o.refs().try_drain_unheld(); }
  static bool begin_drain(registrable_base& o) noexcept { return o.refs().begin_drain(); }
  static void mark_told(registrable_base& o) noexcept { o.refs().mark_told(); }
  static bool drained_and_told(const registrable_base& o) noexcept { return o.refs().drained_and_told(); }
  /// Sets the holder count outright: only for tests of the holder limit (2^29 holds take seconds).
  static void preset_holders(registrable_base& o, std::uint32_t n) noexcept {
    o.refs().word_.store(n, std::memory_order_relaxed);
  }
  /// The object a count lives in (a count exists only as counted_base::refs_).
  static registrable_base& of(ref_count& refs) noexcept {
    static_assert(std::is_standard_layout_v<counted_base>, "the count must be pointer-interconvertible with its base");
    return static_cast<registrable_base&>(*reinterpret_cast<counted_base*>(&refs));
  }
  static std::atomic<registrable_base*>& parent(registrable_base& o) noexcept { return o.parent_; }
  static bool is_linked(const registrable_base& o) noexcept { return o.hook_.is_linked(); }

  /// registrable_base → T, for a T known to derive from registrable<T>.
  template <class T>
  static T& downcast(registrable_base& o) noexcept {
    return static_cast<T&>(static_cast<registrable<T>&>(o));
  }
};
using registrable_list = registrable_access::list;
}  // namespace detail

/// The last put() of a draining count: object → its queue (kept until its destroy returns) → the
/// drain of the batch running on it. The object stays alive until released() marks it told (the
/// drain destroys only told objects), so reading its queue here is safe.
inline void detail::last_put_of_draining(ref_count& refs) noexcept {
  registrable_base& obj = registrable_access::of(refs);
  registrable_access::drain_of(*registrable_access::owner(obj))->released(obj);
}

inline bool detail::registrable_base::dismantling() const noexcept {
  const unsigned char raw = state_.load(std::memory_order_acquire);
  if (raw & kReleasedDismantling) return true;
  const auto s = static_cast<reg_state>(raw & kStateBits);
  if (s == reg_state::released || s == reg_state::uninitialized) return false;
  const queue_base* q = owner_.load(std::memory_order_relaxed);
  return q != nullptr && q->running_lane() != nullptr && q->dismantling();
}

}  // namespace rcubatch
