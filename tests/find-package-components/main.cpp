// Packaging test: a consumer built from `find_package(rcubatch COMPONENTS qsbr cds)` (or the
// rcubatch-qsbr and liburcu-cds pkg-config modules): the target's default flavor, the rculfhash
// index and one reader thread, nothing else. tests/find-package-components checks that the
// program does not link liburcu-memb; its TSan build runs with the installed suppressions.
#include <rcubatch.hpp>
#include <rcubatch/index/lfht_index.hpp>

#include <atomic>
#include <cstdio>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

struct item {
  explicit item(int k) : key(k) {}
  int key;
  rcubatch::lfht_hook<item> hook;
};
using item_index = rcubatch::lfht_index<item, &item::hook, rcubatch::key_member<&item::key>>;

int main() {
  constexpr int kItems = 100;
  rcubatch::thread_registration<> registration;
  rcubatch::grace_domain<> domain;
  item_index index;
  std::vector<std::unique_ptr<item>> items;
  for (int k = 0; k < kItems; ++k) {
    items.push_back(std::make_unique<item>(k));
    if (!index.add_unique(*items.back())) return 2;
  }

  std::atomic<bool> stop{false};
  std::atomic<long> found{0};
  std::atomic<long> wrong{0};
  std::latch first_pass(2);
  std::thread reader([&] {
    rcubatch::thread_registration<> r;
    bool arrived = false;
    while (!stop.load()) {
      {
        rcubatch::read_guard<> guard;
        for (int k = 0; k < kItems; ++k) {
          if (item* it = index.find(k)) {
            found.fetch_add(1, std::memory_order_relaxed);
            if (it->key != k) wrong.fetch_add(1);
          }
        }
      }
      rcubatch::quiescent_state<>();
      if (!arrived) {
        arrived = true;
        first_pass.arrive_and_wait();
      }
    }
  });
  first_pass.arrive_and_wait();  // the reader has found every item once
  for (auto& p : items) index.unlink(*p);
  domain.synchronize();
  items.clear();  // freed after the grace period: the reader may still be running
  stop.store(true);
  reader.join();

  std::printf("rcubatch %.*s: reader found %ld items, %llu grace period\n",
              static_cast<int>(rcubatch::default_flavor::name.size()), rcubatch::default_flavor::name.data(),
              found.load(), static_cast<unsigned long long>(domain.stats().grace_periods));
  return found.load() >= kItems && wrong.load() == 0 && index.empty() && domain.stats().grace_periods == 1 ? 0 : 1;
}
