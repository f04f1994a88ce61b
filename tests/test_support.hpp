// Shared by the unit tests: a registrable test object and a policy that records what happens.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

namespace rcubatch::test {

inline constexpr std::uint64_t kAlive = 0xA11FE;
inline constexpr std::uint64_t kPoison = 0xDEADDEAD;

/// A registrable object whose destruction leaves a poison mark a reader can check, and which
/// counts how many times it was destroyed (via the policy) so double destroys are caught.
struct node : registrable<node> {
  explicit node(int i) : id(i) {}
  int id;
  std::atomic<std::uint64_t> poison{kAlive};
  std::vector<node*> dependents;  // queued from notify: the cascade
};

/// Frees nodes kept by recording_policy::graveyard. Their state is released, so this is legal.
inline void bury(std::vector<node*>& graveyard) {
  for (node* n : graveyard) delete n;
  graveyard.clear();
}

/// Makes `n` registered nodes; the caller owns them until a batch destroys them.
inline std::vector<node*> make_registered(int n, int first_id = 0) {
  std::vector<node*> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto* p = new node(first_id + i);
    p->mark_registered();
    out.push_back(p);
  }
  return out;
}

/// Records every hook call as "hook:id" (or "hook" for once-per-batch hooks) into `log`.
struct recording_policy {
  std::vector<std::string>* log = nullptr;
  bool uninit_unlinks = true;
  std::atomic<int>* destroyed = nullptr;
  std::vector<node*>* graveyard = nullptr;  // when set, destroyed nodes are poisoned and kept here

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

}  // namespace rcubatch::test
