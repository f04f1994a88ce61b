// rcubatch/detail/unregister_combiner.hpp — what a registry calls instead of running its own batch
// when an async_unregister is attached to it (async_options::combine_registry_unregister), and
// the slot in the registry that holds it.
//
// The combiner is a struct of function pointers and an opaque object pointer, so that
// registry.hpp compiles without async_unregister.hpp (which includes it). An object is passed as
// `void*` with its registry slot (the index of its policy): the function pointed to casts it back
// to that slot's object type, which the registry has already resolved at compile time.
//
// Detaching while other threads call the registry: a call enters the slot (counted in flight),
// then reads the attached combiner; detach clears it, then waits until nothing is in flight. Both
// sides write, then read the other side's variable, all sequentially consistent (a Dekker pair):
// either the call sees the combiner cleared, or detach sees the call counted and waits for it, so
// no call uses a combiner after its detach returned. Why not std::shared_mutex: a hook of a
// combined batch (destroy) may call registry::unregister again on the same thread, i.e. take the
// shared side twice, which std::shared_mutex leaves undefined and a writer-preferring rwlock
// deadlocks on while a detach waits.
//
// Thread safety: enter/leave from any thread; attach/detach from the reclaimer's constructor and
// destructor. Cost when nothing is attached: one relaxed load per registry call.
#pragma once

#include <atomic>
#include <cstddef>

#include "rcubatch/batch_stats.hpp"

namespace rcubatch {
struct unregister_result;
}  // namespace rcubatch

namespace rcubatch::detail {

/// The operations an attached reclaimer runs for its registry (see the file comment). Each
/// returns false when it declines the call (the registry then runs its own batch, as when nothing
/// is attached); true when it handled it, `out` filled in.
struct unregister_combiner {
  /// Looks up a key under the writer lock (the registry's index<I>().find_locked): the object, of
  /// the slot's type, or nullptr.
  using find_fn = void* (*)(void* registry, const void* key);

  void* self = nullptr;  ///< the reclaimer
  /// registry::unregister(obj): obj is an object of the registry's slot-th policy.
  bool (*unregister)(void* self, std::size_t slot, void* obj, batch_stats& out) = nullptr;
  /// registry::try_unregister(obj).
  bool (*try_unregister)(void* self, std::size_t slot, void* obj, unregister_result& out) = nullptr;
  /// registry::try_unregister<I>(key): `find(registry, key)` under the writer lock.
  bool (*try_unregister_key)(void* self, std::size_t slot, find_fn find, const void* key,
                             unregister_result& out) = nullptr;
};

/// The registry's slot for one attached combiner (see the file comment).
class combiner_slot {
 public:
  combiner_slot() noexcept = default;
  combiner_slot(const combiner_slot&) = delete;
  combiner_slot& operator=(const combiner_slot&) = delete;

  /// Effects: attaches c unless a combiner is attached already. Returns false then (nothing changed).
  bool attach(const unregister_combiner& c) noexcept {
    const unregister_combiner* none = nullptr;
    return attached_.compare_exchange_strong(none, &c);
  }

  /// Requires: the attached combiner's owner. Effects: calls entering from now on see nothing
  /// attached; returns once the calls that saw it have left. Blocking: until then (the caller
  /// takes it offline under qsbr).
  void detach() noexcept {
    attached_.store(nullptr);  // seq_cst, before the loads of in_flight_ (pairs with entry's)
    for (std::size_t n = in_flight_.load(); n != 0; n = in_flight_.load()) in_flight_.wait(n);
  }

  /// Whether a combiner may be attached: the registry's fast check, without entering.
  bool maybe_attached() const noexcept { return attached_.load(std::memory_order_relaxed) != nullptr; }

  /// One call through the slot, for its scope: attached() stays usable until the scope ends.
  class entry {
   public:
    /// Enters (counted in flight), then reads the combiner attached now.
    explicit entry(combiner_slot& s) noexcept : slot_(s) {
      slot_.in_flight_.fetch_add(1);      // seq_cst, before the load below (pairs with detach's store)
      combiner_ = slot_.attached_.load();
    }
    ~entry() {
      if (slot_.in_flight_.fetch_sub(1) == 1) slot_.in_flight_.notify_all();  // a detach may wait for 0
    }
    entry(const entry&) = delete;
    entry& operator=(const entry&) = delete;
    /// The combiner attached when the call entered, or nullptr.
    const unregister_combiner* attached() const noexcept { return combiner_; }

   private:
    combiner_slot& slot_;
    const unregister_combiner* combiner_ = nullptr;
  };

 private:
  std::atomic<const unregister_combiner*> attached_{nullptr};
  std::atomic<std::size_t> in_flight_{0};
};

}  // namespace rcubatch::detail
