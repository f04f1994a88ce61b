// tests/support/policies.hpp — the unregistration policies the unit tests share. Each is an
// aggregate whose knobs are set with designated initializers, e.g.
//   recording_policy{.log = &log, .uninit_unlinks = false}
//   keeping_policy{}            // destroy keeps the memory: misuse the object after its batch
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <rcubatch.hpp>

#include "objects.hpp"

namespace rcubatch::test {

/// Records every hook call as "hook:id" (or "hook" for once-per-batch hooks) into `log`.
struct recording_policy {
  std::vector<std::string>* log = nullptr;  ///< where the calls go (none when null)
  bool uninit_unlinks = true;               ///< uninit's answer: false on every node skips GP #2
  std::atomic<int>* destroyed = nullptr;    ///< counts destroy calls when set
  std::vector<node*>* graveyard = nullptr;  ///< when set, destroyed nodes are poisoned and kept here

  void record(const std::string& s) noexcept {
    if (log) log->push_back(s);
  }
  void close_many(object_range<node> r) noexcept {
    std::string s = "close_many:";
    for (node& n : r) s += std::to_string(n.id) + ",";
    record(s);
  }
  void unlist(node& n) noexcept { record("unlist:" + std::to_string(n.id)); }
  template <class B>
  void notify(node& n, B& b) noexcept {
    record("notify:" + std::to_string(n.id));
    for (node* d : n.dependents) b.queue(*d);
  }
  template <class B>
  void batch_notify(B&) noexcept { record("batch_notify"); }
  template <class B>
  bool uninit(node& n, B&) noexcept {
    record("uninit:" + std::to_string(n.id));
    return uninit_unlinks;
  }
  void destroy(node* n) noexcept {
    record("destroy:" + std::to_string(n->id));
    n->poison.store(kPoison);
    if (destroyed) destroyed->fetch_add(1);
    if (graveyard) {
      graveyard->push_back(n);  // stays readable: a reader that still sees it will see the poison
    } else {
      delete n;
    }
  }
  std::string name(const node& n) const { return "node" + std::to_string(n.id); }
};

/// Publishes nothing and frees nothing: destroy only counts, so the (caller-owned) object can be
/// inspected, or misused, after its batch.
struct keeping_policy {
  static constexpr bool publishes_nothing = true;
  int destroyed = 0;  ///< destroy calls so far
  void destroy(node*) noexcept { ++destroyed; }
};

}  // namespace rcubatch::test
