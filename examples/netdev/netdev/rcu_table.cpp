#include "netdev/rcu_table.hpp"

#include <cstdio>
#include <new>

namespace netdev {

rcu_table::rcu_table(const rcu_flavor_struct* flavor, unsigned long initial_buckets)
    : flavor_(flavor),
      // CDS_LFHT_AUTO_RESIZE without CDS_LFHT_ACCOUNTING, and never below `initial_buckets`:
      //  - growth: without accounting, an add that walks a bucket chain of >= 3 nodes schedules a
      //    grow (x4) in the call_rcu worker, so chains stay O(1) at 100,000 devices all the same;
      //  - ACCOUNTING costs every add and every del a sched_getcpu() and an atomic on a per-CPU
      //    split counter (~100 instructions, measured with callgrind on `module unload dummy`),
      //    and its only other use is *shrinking*: a batch deleting 10,000 devices triggers shrink
      //    resizes (each with its own synchronize_rcu in the call_rcu worker) in the middle of
      //    the mass deletion, and the next mass creation grows the table back. Without it a table
      //    keeps its peak bucket count (8 bytes per bucket), like a slab cache keeps its pages;
      //  - min_nr_alloc_buckets = initial_buckets: the first resizes (from a tiny table) are the
      //    ones that happen while the table is being filled, so the callers size the start.
      table_(cds_lfht_new_flavor(initial_buckets, initial_buckets, 0, CDS_LFHT_AUTO_RESIZE, flavor, nullptr)) {
  if (table_ == nullptr) throw std::bad_alloc();
}

rcu_table::~rcu_table() {
  if (cds_lfht_destroy(table_, nullptr) != 0) {
    std::fprintf(stderr, "netdev: rcu_table destroyed while not empty (%zu nodes): leaked\n", size_);
  }
}


}  // namespace netdev
