// rcubatch/annotate.hpp — telling ThreadSanitizer about publication through liburcu's structures.
//
// liburcu (0.13.2) is not built for TSan and publishes with volatile stores after compiler and
// memory barriers, so TSan sees no happens-before between a writer that initialized an object
// and a reader that found it through rculfhash or an RCU list: every field read is a false race.
// For pointers you publish yourself, use std::atomic release stores and acquire loads; for nodes
// that go through liburcu's data structures, annotate the two ends:
//
//   dev->mtu = 1500;                             // writer: fill every field readers read
//   rcubatch::annotate_publish(&dev->node);     // right before cds_lfht_add / cds_list_add_rcu
//   cds_lfht_add(table, hash, &dev->node);
//
//   cds_lfht_node* n = lookup(table, hash);     // reader, inside a read_guard
//   rcubatch::annotate_subscribe(n);            // before reading the fields (also in match callbacks)
//   (compiled in tests/header_examples_test.cpp)
//
// Outside TSan builds both compile to nothing. They hide no real bug: a reader that reaches a
// freed object still races with the free (the grace-period edge is what orders frees, see
// read_guard / grace_domain), and fields written after publication still race.
#pragma once

#include "rcubatch/detail/tsan.hpp"

namespace rcubatch {

/// Writer: everything written before this call happens before an annotate_subscribe of `node`.
inline void annotate_publish(const void* node) noexcept { detail::tsan_release(const_cast<void*>(node)); }

/// Reader: call on a node found through a liburcu structure, before reading what was published.
inline void annotate_subscribe(const void* node) noexcept { detail::tsan_acquire(const_cast<void*>(node)); }

}  // namespace rcubatch
