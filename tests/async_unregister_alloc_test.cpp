// async_unregister's submit allocates nothing in the steady state (issue 35, the cost of a
// submit): a batch reserves the per-request vectors of the generation after it for as many
// requests as its own had, so submits of a generation no larger than the last never grow them.
//
// This binary replaces the global operator new (tests/support/replaced_operator_new.hpp; its own
// executable, so the other tests keep the sanitizers' allocator checks): while no_memory is alive
// every allocation throws std::bad_alloc, so a submit that allocated would throw.
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <vector>

#include "support/indexed_item.hpp"
#include "support/replaced_operator_new.hpp"  // g_fail_every_allocation

namespace rcubatch::test {
namespace {

std::atomic<int> g_destroyed{0};

struct items : indexed<item, by_id> {
  void destroy(item* i) noexcept {
    g_destroyed.fetch_add(1);
    delete i;
  }
};
using registry_type = basic_registry<flavor::memb, std::mutex, items>;

struct no_memory {
  no_memory() { g_fail_every_allocation = true; }
  ~no_memory() { g_fail_every_allocation = false; }
  no_memory(const no_memory&) = delete;
  no_memory& operator=(const no_memory&) = delete;
};

/// Submits every object of `all` from index `from` on; returns how many submits threw bad_alloc
/// (each of them changed nothing: the object stays registered).
int submit_counting_bad_alloc(async_unregister<registry_type>& reclaimer, const std::vector<item*>& all,
                              std::size_t from) {
  int threw = 0;
  for (std::size_t i = from; i < all.size(); ++i) {
    try {
      EXPECT_TRUE(reclaimer.submit(*all[i])) << i;
    } catch (const std::bad_alloc&) {
      ++threw;
    }
  }
  return threw;
}

TEST(async_unregister_alloc, a_generation_as_large_as_the_last_is_submitted_without_allocating) {
  // More than the 64 requests a generation's vectors start with, so that growing them would
  // allocate several times.
  constexpr int kN = 300;
  thread_registration<flavor::memb> reg_thread;
  g_destroyed = 0;
  registry_type reg;
  async_options o;
  o.mode = reclaim_mode::manual;  // batches run only in run_now
  o.max_age = std::chrono::hours(1);
  async_unregister reclaimer(reg, o);

  const std::vector<item*> first = add_items(reg, kN);
  for (item* it : first) ASSERT_TRUE(reclaimer.submit(*it));
  ASSERT_EQ(reclaimer.run_now(), static_cast<std::size_t>(kN));  // reserves the next generation's room

  std::vector<item*> second;
  for (int i = 0; i < kN; ++i) second.push_back(add_item(reg, kN + i));
  // A generation's first submit records its thread (a set node): allowed to allocate.
  ASSERT_TRUE(reclaimer.submit(*second[0]));
  int threw = 0;
  {
    no_memory oom;
    threw = submit_counting_bad_alloc(reclaimer, second, 1);
  }
  EXPECT_EQ(threw, 0) << "a submit allocated: the batch did not reserve the next generation's vectors";
  // Whatever was refused is submitted now, so that every object is destroyed either way.
  if (threw > 0) {
    for (std::size_t i = 1; i < second.size(); ++i)
      if (second[i]->state() == reg_state::registered && !second[i]->going_away()) (void)reclaimer.submit(*second[i]);
  }
  reclaimer.drain();
  EXPECT_EQ(g_destroyed.load(), 2 * kN);
}

}  // namespace
}  // namespace rcubatch::test
