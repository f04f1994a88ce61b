#include "netdev/rcu_table.hpp"

#include <cstdio>
#include <new>

namespace netdev {

rcu_table::rcu_table(const rcu_flavor_struct* flavor, unsigned long initial_buckets)
    : flavor_(flavor),
      // Auto-resize with accounting: grows with the node count, so chains stay O(1) at 100,000 devices.
      table_(cds_lfht_new_flavor(initial_buckets, initial_buckets, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                 flavor, nullptr)) {
  if (table_ == nullptr) throw std::bad_alloc();
}

rcu_table::~rcu_table() {
  if (cds_lfht_destroy(table_, nullptr) != 0) {
    std::fprintf(stderr, "netdev: rcu_table destroyed while not empty (%zu nodes): leaked\n", size_);
  }
}

void rcu_table::add(unsigned long hash, cds_lfht_node* node) {
  section s(flavor_);
  cds_lfht_add(table_, hash, node);
  ++size_;
}

bool rcu_table::remove(cds_lfht_node* node) {
  section s(flavor_);
  if (cds_lfht_del(table_, node) != 0) return false;
  --size_;
  return true;
}

}  // namespace netdev
