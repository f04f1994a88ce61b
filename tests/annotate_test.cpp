// annotate: publication through liburcu structures, made visible to ThreadSanitizer.
#include <rcubatch/annotate.hpp>
#include <rcubatch/read_guard.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <urcu/rculfhash.h>

namespace rcubatch {
namespace {

struct item {
  cds_lfht_node node;
  int key = 0;
  int payload = 0;  // written before publication, read by the reader: no TSan report expected
};

int match(cds_lfht_node* n, const void* key) {
  annotate_subscribe(n);
  return reinterpret_cast<item*>(n)->key == *static_cast<const int*>(key);
}

// Under the tsan preset this test fails (TSan report, halt_on_error) if the annotations are
// missing; in other builds it checks that a reader finds the published payload.
TEST(annotate, a_reader_sees_fields_published_through_rculfhash) {
  thread_registration<flavor::memb> reg;
  cds_lfht* table = cds_lfht_new_flavor(16, 16, 0, 0, &flavor::memb::table(), nullptr);
  ASSERT_NE(table, nullptr);
  std::atomic<int> seen{0};
  // The reader starts first, so thread creation orders nothing the writer does afterwards: the
  // only edge from the writer's initialization to the reader's read is the annotation pair.
  std::thread reader([&] {
    thread_registration<flavor::memb> r;
    const int key = 7;
    while (seen.load(std::memory_order_relaxed) == 0) {
      read_guard<flavor::memb> guard;
      cds_lfht_iter iter;
      cds_lfht_lookup(table, 7, &match, &key, &iter);
      if (cds_lfht_node* n = cds_lfht_iter_get_node(&iter)) {
        annotate_subscribe(n);
        seen.store(reinterpret_cast<item*>(n)->payload, std::memory_order_relaxed);
      }
    }
  });
  auto* it = new item;
  cds_lfht_node_init(&it->node);
  it->key = 7;
  it->payload = 42;
  annotate_publish(&it->node);
  {
    read_guard<flavor::memb> guard;
    cds_lfht_add(table, 7, &it->node);
  }
  reader.join();
  EXPECT_EQ(seen.load(), 42);
  {
    read_guard<flavor::memb> guard;
    cds_lfht_del(table, &it->node);
  }
  flavor::memb::synchronize();
  delete it;
  EXPECT_EQ(cds_lfht_destroy(table, nullptr), 0);
}

}  // namespace
}  // namespace rcubatch
