#include "netdev/rcu_table.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <new>

namespace netdev {

rcu_table::rcu_table(const rcu_flavor_struct* flavor, unsigned long initial_buckets)
    : flavor_(flavor),
      // No CDS_LFHT_AUTO_RESIZE, no CDS_LFHT_ACCOUNTING: the writer grows the table itself
      // (grow_if_needed) and it never shrinks. Measured with callgrind and perf on this VM:
      //  - ACCOUNTING costs every add and del a sched_getcpu() and an atomic on a per-CPU split
      //    counter, and its resizes go by powers of two of the node count: it grows only at
      //    8 nodes per bucket (10,000 devices sat in 4,096 buckets, 100,000 in 32,768: chains
      //    of 3-8 other devices to walk, each a cache miss, on every lookup, add and del);
      //  - and it resizes in the middle of a mass deletion: by the 0.13 source (ht_count_del),
      //    each power-of-two node count passed on the way down (8,192, 4,096, 2,048) sets the
      //    resize target to that count — up first for a 4,096-bucket table, then down — and
      //    rculfhash's worker thread runs it, each shrink step with a synchronize_rcu of its own
      //    competing with the batch's grace period and CPU; min_nr_alloc_buckets does not stop a
      //    shrink in 0.13, it only keeps the first bucket arrays allocated;
      //  - AUTO_RESIZE without ACCOUNTING grows from chain lengths alone and overshoots: 100,000
      //    adds took 5.1 s and the table's destroy 4.9 s (it walks every bucket).
      // A table keeps its peak bucket count (16 bytes per bucket), as a slab cache keeps pages.
      buckets_(initial_buckets),
      table_(cds_lfht_new_flavor(initial_buckets, initial_buckets, 0, 0, flavor, nullptr)) {
  if (table_ == nullptr) throw std::bad_alloc();
}

rcu_table::~rcu_table() {
  if (cds_lfht_destroy(table_, nullptr) != 0) {
    std::fprintf(stderr, "netdev: rcu_table destroyed while not empty (%zu nodes): leaked\n", size_);
  }
}

namespace {
std::atomic<std::int64_t> grow_ns{0};  // relaxed: a statistic; tables of several registries may grow at once
}

void rcu_table::resize() {
  const auto start = std::chrono::steady_clock::now();
  cds_lfht_resize(table_, buckets_);
  grow_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
                    std::memory_order_relaxed);
}

std::chrono::nanoseconds rcu_table::total_grow_time() noexcept {
  return std::chrono::nanoseconds(grow_ns.load(std::memory_order_relaxed));
}

}  // namespace netdev
