// bench/bench_fixture.hpp — what every teardown benchmark tears down: the registry, its objects,
// and the reader threads that look objects up while the writer tears them down.
//
// The registry is the shape the library is for: N objects in an RCU-readable hash (readers look
// keys up) and an RCU-readable doubly linked list (walked forward by readers that want it; the
// benchmarks' readers only do hash lookups). Writers hold no lock of their own here: each benchmark
// has a single writer thread, which is what the registry's writer lock would guarantee.
//
// Reader threads run a "protocol" — the read-side API of whichever RCU is under test (a liburcu
// flavor through rcubatch::read_guard, libcds' scoped_lock, DPDK's rte_rcu_qsbr quiescent reports).
// They start before the benchmark's timed loop and stop after it, and look up random keys of the
// current generation of objects, so they touch exactly the cache lines the writer unlinks.
//
// The floor (grace periods stubbed out) lets readers see freed objects. Two things keep that from
// crashing a run, and only that — the floor is a cost baseline, not correct RCU:
//   - the fields readers touch (key, hash_next, payload) sit past the first 16 bytes of the object,
//     where glibc keeps its free-list links, and before its last 8 bytes (the next chunk's prev_size);
//   - glibc never returns heap memory to the kernel during a run (configure_allocator_for_bench),
//     and a lookup follows at most kMaxChainWalk links, so a recycled link can not trap a reader.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <malloc.h>

#include <rcubatch.hpp>

namespace rcubatch_bench {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

/// One registry entry. Derives from registrable so the library path can use it; the other paths
/// never call mark_registered, so the object stays "uninitialized" and may be deleted directly.
///
/// Layout (two cache lines): the writer's fields — registrable's 32 bytes (hook, state, owner,
/// ref count, parent edge), the rcu_head and the list links — fill line 0; what lookups read
/// (key, hash_next, payload) has line 1 to itself, so a teardown writes no line a reader is reading except the
/// hash links it has to change (shared/DESIGN.md: false sharing cost 25% of the floor). A
/// registry built on rcubatch should lay its objects out the same way.
struct bench_object : rcubatch::registrable<bench_object> {
  rcu_head rcu{};                                     // for call_rcu; writer only
  std::atomic<bench_object*> list_next{nullptr};      // read by list walkers (not these readers)
  bench_object* list_prev = nullptr;                  // writer only
  alignas(64) std::uint64_t key = 0;                  // read by readers
  std::atomic<bench_object*> hash_next{nullptr};      // read by readers, written on a neighbour's unlink
  std::uint64_t payload = 0;                          // read by readers on a hit
  std::uint64_t tail_pad[5] = {};                     // glibc may write prev_size here once freed
};
static_assert(sizeof(bench_object) == 128, "bench_object: two cache lines, readers' fields alone in the second");

/// Keeps glibc from giving heap pages back during a run (see the file comment: floor safety) and
/// from serving the 1e6-object vectors with fresh mmaps each iteration.
inline void configure_allocator_for_bench() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
}

/// Hash (chained, power-of-two buckets) + circular list with a sentinel.
class registry {
 public:
  static constexpr int kMaxChainWalk = 64;

  explicit registry(std::size_t capacity) {
    std::size_t b = 64;
    while (b < capacity) b <<= 1;
    mask_ = b - 1;
    buckets_ = std::make_unique<std::atomic<bench_object*>[]>(b);
    for (std::size_t i = 0; i < b; ++i) buckets_[i].store(nullptr, std::memory_order_relaxed);
    sentinel_.list_next.store(&sentinel_, std::memory_order_relaxed);
    sentinel_.list_prev = &sentinel_;
  }
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  /// Writer: publishes `o` in the hash and at the head of the list.
  void insert(bench_object& o) noexcept {
    auto& head = bucket(o.key);
    o.hash_next.store(head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    head.store(&o, std::memory_order_release);
    bench_object* first = sentinel_.list_next.load(std::memory_order_relaxed);
    o.list_next.store(first, std::memory_order_relaxed);
    o.list_prev = &sentinel_;
    first->list_prev = &o;
    sentinel_.list_next.store(&o, std::memory_order_release);
  }

  /// Writer: unpublishes `o` from the hash (the primary index). Readers may still hold it.
  void hash_remove(bench_object& o) noexcept {
    std::atomic<bench_object*>* link = &bucket(o.key);
    for (bench_object* cur = link->load(std::memory_order_relaxed); cur != nullptr;
         cur = link->load(std::memory_order_relaxed)) {
      if (cur == &o) {
        link->store(o.hash_next.load(std::memory_order_relaxed), std::memory_order_release);
        return;
      }
      link = &cur->hash_next;
    }
  }

  /// Writer: unlinks `o` from the list (the secondary structure).
  void list_remove(bench_object& o) noexcept {
    bench_object* next = o.list_next.load(std::memory_order_relaxed);
    o.list_prev->list_next.store(next, std::memory_order_release);
    next->list_prev = o.list_prev;
  }

  /// Reader (inside its read-side section): the payload of `key`, or 0.
  std::uint64_t lookup(std::uint64_t key) const noexcept {
    const bench_object* cur = bucket(key).load(std::memory_order_acquire);
    for (int i = 0; cur != nullptr && i < kMaxChainWalk; ++i) {
      if (cur->key == key) return cur->payload;
      cur = cur->hash_next.load(std::memory_order_acquire);
    }
    return 0;
  }

  /// Writer: allocates `n` objects with fresh keys, inserts them, and publishes the key range to
  /// the readers. Returns the objects in insertion order.
  std::vector<bench_object*> populate(std::size_t n, bool publish = true) {
    std::vector<bench_object*> objs;
    objs.reserve(n);
    const std::uint64_t base = next_key_;
    next_key_ += n;
    for (std::size_t i = 0; i < n; ++i) {
      auto* o = new bench_object;
      o->key = base + i;
      o->payload = base + i + 1;
      insert(*o);
      objs.push_back(o);
    }
    if (publish) {
      key_lo_.store(base, std::memory_order_relaxed);
      key_count_.store(n, std::memory_order_release);
    }
    return objs;
  }

  /// The key range readers draw from.
  std::uint64_t key_lo() const noexcept { return key_lo_.load(std::memory_order_relaxed); }
  std::uint64_t key_count() const noexcept { return key_count_.load(std::memory_order_acquire); }

 private:
  std::atomic<bench_object*>& bucket(std::uint64_t key) const noexcept {
    return buckets_[(key * 0x9E3779B97F4A7C15ull >> 20) & mask_];
  }

  std::unique_ptr<std::atomic<bench_object*>[]> buckets_;
  std::size_t mask_ = 0;
  alignas(64) bench_object sentinel_;
  // Writer-only and reader-read-mostly state, each on its own line (false sharing cost 25% of the
  // floor in one probe: shared/DESIGN.md).
  alignas(64) std::uint64_t next_key_ = 1;
  alignas(64) std::atomic<std::uint64_t> key_lo_{1};
  std::atomic<std::uint64_t> key_count_{0};
};

/// How often readers announce a quiescent state (qsbr flavors, DPDK): every kLookupsPerQs lookups.
inline constexpr int kLookupsPerQs = 8;

/// A liburcu flavor's read side, through rcubatch.
template <class Flavor>
struct urcu_protocol {
  struct thread_scope {
    explicit thread_scope(int) {}
    rcubatch::thread_registration<Flavor> reg;
  };
  template <class F>
  static auto read(int, F&& f) {
    rcubatch::read_guard<Flavor> g;
    return f();
  }
  static void quiescent(int) { rcubatch::quiescent_state<Flavor>(); }
};

/// Reader threads doing continuous lookups with Protocol until stopped.
template <class Protocol>
class reader_group {
  struct alignas(64) slot {
    std::atomic<std::uint64_t> lookups{0};
    std::atomic<bool> started{false};
  };

 public:
  reader_group(const registry& reg, int readers) : reg_(reg), slots_(static_cast<std::size_t>(readers)) {
    for (int i = 0; i < readers; ++i) threads_.emplace_back([this, i] { run(i); });
    for (auto& s : slots_)
      while (!s.started.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~reader_group() { stop(); }
  reader_group(const reader_group&) = delete;
  reader_group& operator=(const reader_group&) = delete;

  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  /// Lookups done so far by all readers (updated every 256 lookups).
  std::uint64_t lookups() const {
    std::uint64_t sum = 0;
    for (auto& s : slots_) sum += s.lookups.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  void run(int id) {
    typename Protocol::thread_scope scope(id);
    std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(id + 1);
    std::uint64_t done = 0, sink = 0;
    slots_[static_cast<std::size_t>(id)].started.store(true, std::memory_order_release);
    while (!stop_.load(std::memory_order_relaxed)) {
      for (int k = 0; k < kLookupsPerQs; ++k) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const std::uint64_t n = reg_.key_count();
        const std::uint64_t key = reg_.key_lo() + (n ? x % n : 0);
        sink += Protocol::read(id, [&] { return reg_.lookup(key); });
      }
      Protocol::quiescent(id);
      done += kLookupsPerQs;
      if ((done & 255) == 0) slots_[static_cast<std::size_t>(id)].lookups.store(done, std::memory_order_relaxed);
    }
    slots_[static_cast<std::size_t>(id)].lookups.store(done, std::memory_order_relaxed);
    sink_.fetch_add(sink, std::memory_order_relaxed);
  }

  const registry& reg_;
  std::vector<slot> slots_;
  std::vector<std::thread> threads_;
  alignas(64) std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> sink_{0};
};

}  // namespace rcubatch_bench
