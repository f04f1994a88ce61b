// rcubatch/sharded_refs.hpp — a reference count for objects held on hot paths: one counter per
// shard while the object is registered, one atomic from the moment its unregistration begins.
//
//   struct route : rcubatch::sharded_registrable<route> {};   // chosen per type
//   route r;
//   r.refs().hold();          // touches this CPU's shard: no cache line shared with other CPUs
//   use(r);
//   r.refs().put();           // may land on another shard than its hold: only the sum matters
//   (compiled in tests/header_examples_test.cpp)
//
// Why: registrable<T>'s count is one atomic word per object; threads holding and putting the same
// object on several cores bounce its cache line between them (README: "do not hold per packet").
// The kernel's answer is percpu_ref: per-CPU counters while the object is live, and a run-down to
// one atomic when it is killed. This is that, chosen per type (a base class, as registrable<T>,
// so registrable<T> itself stays 32 bytes for every type that does not choose it):
//   - while registered, hold()/put() do one RMW on shard[cpu] (cache-line padded, one per CPU up
//     to kMaxShards; the CPU from sched_getcpu, which glibc reads from rseq without a system call,
//     else a per-thread index). A put may land on another shard than its hold: a shard may go
//     negative; only the sum is a count.
//   - when its batch unlists it (unregistration begins: rollback_many's unlist pass), the
//     run-down switches it to the object's single atomic (ref_count, the same word every other
//     type uses): it closes each shard with one exchange, adds the sum to the atomic, and from
//     then on hold()/put() go to the atomic, with its rules ("as now": a hold once the count
//     drained to zero is refused, hold_after_drain; the last put wakes the drain). So the drain
//     is exactly the atomic kind's.
// A library-internal hold (a dependent's edge to its parent, batch::queue) goes to the atomic in
// both modes: the count is the atomic plus the open shards.
//
// Thread safety: hold/put from any thread. The run-down on the batch's thread, once per object.
// Memory ordering: a put on a shard releases; the run-down's exchange of that shard acquires it,
// and the drain acquires the atomic as for any count (ref_count.hpp): everything a holder did
// happens-before destroy.
// Misuse: while sharded, a put without a hold cannot be told from a put on another shard than its
// hold; the run-down finds it (a negative sum) and diagnoses ref_underflow (the sum's excess puts
// are dropped). After the switch, the atomic's checks apply as for every count.
// Cost: per hold or put, one uncontended RMW on this CPU's line (bench/bench_hold_put.cpp:
// BM_HoldPut/sharded); memory: kShardBytes per CPU per object, allocated at construction; the
// run-down O(shards) per object, on the batch's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>

#if defined(__linux__)
#include <sched.h>
#endif

#include "rcubatch/misuse.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

namespace detail {
struct sharded_access;

/// The shards of one object, and its run-down into the object's ref_count.
class ref_shards {
 public:
  /// Shards per object at most: beyond it CPUs share shards (still far fewer per line than one word).
  static constexpr unsigned kMaxShards = 64;
  /// One cache line per shard: two shards on one line would bounce it as one word does.
  static constexpr std::size_t kShardBytes = 64;

  ref_shards() : shards_(new shard[shard_count()]) {}
  ref_shards(const ref_shards&) = delete;
  ref_shards& operator=(const ref_shards&) = delete;

  /// Effects: takes a reference on this CPU's shard, or on `central` once the shards are closed.
  /// Returns whether the hold was taken (a hold on a closed count may be refused, as ref_count's).
  bool hold(ref_count& central) noexcept {
    std::atomic<std::int64_t>& s = mine();
    if ((s.fetch_add(1, std::memory_order_relaxed) & kClosed) == 0) [[likely]] return true;
    s.fetch_sub(1, std::memory_order_relaxed);  // closed: its value no longer counts; undo anyway
    return central.acquire();
  }

  /// Effects: drops a reference on this CPU's shard, or on `central` once the shards are closed
  /// (then it may be the last put that wakes the drain).
  void put(ref_count& central) noexcept {
    std::atomic<std::int64_t>& s = mine();
    if ((s.fetch_sub(1, std::memory_order_release) & kClosed) == 0) [[likely]] return;
    s.fetch_add(1, std::memory_order_relaxed);
    central.put();
  }

  /// Returns: the holders, open shards plus the atomic (a snapshot; not exact during the run-down).
  std::uint64_t count(const ref_count& central) const noexcept {
    std::int64_t sum = static_cast<std::int64_t>(central.count());
    if (!closed())
      for (unsigned i = 0; i < shard_count(); ++i)
        sum += shards_[i].value.load(std::memory_order_acquire) - kOffset;
    return sum < 0 ? 0 : static_cast<std::uint64_t>(sum);
  }

  /// Whether the run-down has switched the count to the single atomic.
  bool closed() const noexcept { return (shards_[0].value.load(std::memory_order_acquire) & kClosed) != 0; }

  /// Effects: the switch to `central`: closes every shard and adds their sum to it. Holds and puts
  /// racing it land either in a shard before it closes (summed) or in `central` after. A bias
  /// keeps `central` above zero meanwhile, so a put whose hold is still in an unsummed shard does
  /// not underflow it. Requires: called once, by the batch, before its drain marks the count.
  void run_down(ref_count& central) noexcept {
    if (closed()) return;
    central.add_while_unmarked(kBias);
    std::int64_t sum = 0;
    for (unsigned i = 0; i < shard_count(); ++i)
      sum += shards_[i].value.exchange(kOffset | kClosed, std::memory_order_acq_rel) - kOffset;
    if (!central.add_while_unmarked(sum - kBias)) {
      // More puts than holds (put without hold while sharded): drop the excess.
      central.add_while_unmarked(-static_cast<std::int64_t>(central.count()));
      diagnose_noexcept(misuse_kind::ref_underflow,
                        "put() without a matching hold() on a sharded count (found when its run-down summed the "
                        "shards: more puts than holds); the excess puts are dropped");
    }
  }

  /// Shards per object on this machine: the CPUs, rounded up to a power of two, at most kMaxShards.
  static unsigned shard_count() noexcept {
    static const unsigned n = [] {
      const unsigned cpus = std::thread::hardware_concurrency();
      unsigned p = 1;
      while (p < cpus && p < kMaxShards) p <<= 1;
      return p;
    }();
    return n;
  }

 private:
  // A shard holds kOffset + (holds - puts) while open: a shard that went negative (puts landing
  // on another CPU than their holds) must not look closed.
  static constexpr std::int64_t kOffset = std::int64_t{1} << 40;
  static constexpr std::int64_t kClosed = std::int64_t{1} << 62;
  // Keeps the atomic positive during the run-down (ref_count::kMaxHolders is 2^29).
  static constexpr std::int64_t kBias = std::int64_t{1} << 28;

  struct alignas(kShardBytes) shard {
    std::atomic<std::int64_t> value{kOffset};
  };
  static_assert(sizeof(shard) == kShardBytes, "one shard per cache line");

  std::atomic<std::int64_t>& mine() noexcept { return shards_[shard_index() & (shard_count() - 1)].value; }

  static unsigned shard_index() noexcept {
#if defined(__linux__)
    const int cpu = sched_getcpu();
    if (cpu >= 0) return static_cast<unsigned>(cpu);
#endif
    static std::atomic<unsigned> next{0};
    thread_local const unsigned index = next.fetch_add(1, std::memory_order_relaxed);
    return index;
  }

  std::unique_ptr<shard[]> shards_;
};

}  // namespace detail

/// What sharded_registrable<T>::refs() returns: the same hold()/put()/count() as ref_count.
class sharded_ref_count {
 public:
  /// Effects: takes a reference (this CPU's shard; the atomic after the run-down, where a hold
  /// once the count drained to zero is refused and diagnosed: hold_after_drain).
  /// Complexity: one RMW on this CPU's line while registered. Thread safety: any thread.
  void hold() noexcept { (void)shards_->hold(*central_); }
  /// Effects: drops a reference taken by hold(); after the run-down, the last put wakes the drain
  /// (do not touch the object after it). Memory ordering: release.
  void put() noexcept { shards_->put(*central_); }
  /// Returns: the holders (a snapshot: the atomic plus the open shards). Complexity: O(shards).
  std::uint64_t count() const noexcept { return shards_->count(*central_); }
  /// Returns: true once the run-down switched the count to its single atomic.
  bool switched() const noexcept { return shards_->closed(); }

 private:
  template <class T>
  friend class sharded_registrable;
  sharded_ref_count(ref_count& central, detail::ref_shards& shards) noexcept : central_(&central), shards_(&shards) {}
  ref_count* central_;
  detail::ref_shards* shards_;
};

/// Derive from this instead of registrable<T> to give T a sharded count (the rest is
/// registrable<T>'s). Construction allocates the shards (Throws: std::bad_alloc).
template <class T>
class sharded_registrable : public registrable<T> {
 public:
  sharded_registrable() = default;

  /// The object's count, sharded until its unregistration begins: hold(), put(), count().
  sharded_ref_count refs() noexcept { return {detail::registrable_base::refs(), shards_}; }
  /// As above, for count() and switched() on a const object (a const object's holds are the
  /// caller's misuse, as they would be through a const ref_count).
  sharded_ref_count refs() const noexcept { return const_cast<sharded_registrable&>(*this).refs(); }

 private:
  friend struct detail::sharded_access;
  detail::ref_shards shards_;
};

namespace detail {
/// The batch's side: rollback_many's unlist pass runs the run-down of a sharded object.
struct sharded_access {
  template <class T>
  static void run_down(sharded_registrable<T>& o) noexcept {
    o.shards_.run_down(static_cast<registrable_base&>(o).refs());
  }
};
/// Whether T chose the sharded count.
template <class T>
inline constexpr bool is_sharded_v = std::is_base_of_v<sharded_registrable<T>, T>;
}  // namespace detail

}  // namespace rcubatch
