// tests/support/counted_items.hpp — the combining tests' objects (tests/combining_test.cpp,
// tests/async_unregister_attached_test.cpp): indexed_item.hpp's items whose destroy counts per
// id and may run an extra step, and the registered thread their callers run on.
//
//   using registry_t = basic_registry<CF, std::mutex, counted_items>;
//   g_on_destroy = [&](item& i) { ... };   // from a destroy hook; reset it at the test's end
//   std::thread t = registered_thread([&] { reg.unregister(*it); });
//   EXPECT_EQ(g_destroyed[id].load(), 1);
//
// The counts are globals (a policy's hooks are static in effect: one test at a time); a fixture
// zeroes them (reset_counted_items) and clears g_on_destroy.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <utility>

#include <rcubatch/flavor.hpp>
#include <rcubatch/registry.hpp>

#include "indexed_item.hpp"

namespace rcubatch::test {

/// Ids a test may use (g_destroyed's size).
inline constexpr int kMaxIds = 1024;
/// Destroys per id.
inline std::atomic<int> g_destroyed[kMaxIds];
/// The destroy hook's extra work (a test that calls the registry from a hook), if set.
inline std::function<void(item&)> g_on_destroy;

/// Effects: zeroes g_destroyed and clears g_on_destroy (a fixture's constructor and destructor).
inline void reset_counted_items() {
  for (auto& d : g_destroyed) d = 0;
  g_on_destroy = nullptr;
}

/// No uninit: a batch unlinks nothing after GP #1, so it costs one GP.
struct counted_items : indexed<item, by_id> {
  void destroy(item* i) noexcept {
    ++g_destroyed[i->id];
    if (g_on_destroy) g_on_destroy(*i);
    delete i;
  }
};

/// A thread registered with memb (the index's flavor) that runs f.
template <class F>
std::thread registered_thread(F f) {
  return std::thread([f = std::move(f)]() mutable {
    thread_registration<flavor::memb> r;
    f();
  });
}

}  // namespace rcubatch::test
