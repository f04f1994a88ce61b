// tests/support/destroy_order.hpp — the order in which a batch destroys nodes, for tests that wait
// for the n-th destroy from another thread (on a condition variable, no sleeps), and the policy
// that records it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "objects.hpp"

namespace rcubatch::test {

/// Records destroy order and lets the test wait for the n-th destroy without sleeping.
struct destroy_order {
  std::mutex m;
  std::condition_variable cv;
  std::vector<int> ids;
  void add(int id) {
    std::lock_guard l(m);
    ids.push_back(id);
    cv.notify_all();
  }
  /// Waits until `n` destroys were recorded; returns the ids so far, in order.
  std::vector<int> wait_for_count(std::size_t n) {
    std::unique_lock l(m);
    cv.wait(l, [&] { return ids.size() >= n; });
    return ids;
  }
};

/// Publishes nothing; destroy records the node's id, then deletes it.
struct ordering_policy {
  static constexpr bool publishes_nothing = true;
  destroy_order* order;
  void destroy(node* n) noexcept {
    order->add(n->id);
    delete n;
  }
  std::string name(const node& n) const { return "dev" + std::to_string(n.id); }
};

}  // namespace rcubatch::test
