// tests/support/objects.hpp — the test object type every unit test shares, and the loops that
// make registered ones and queue them (written out 25 times before this header); queue_only_nodes
// for tests of the queue itself, whose nodes no batch ever unregisters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <rcubatch.hpp>

namespace rcubatch::test {

inline constexpr std::uint64_t kAlive = 0xA11FE;
inline constexpr std::uint64_t kPoison = 0xDEADDEAD;

/// A registrable object whose destruction leaves a poison mark a reader can check, and which
/// counts how many times it was destroyed (via the policy) so double destroys are caught.
struct node : registrable<node> {
  explicit node(int i = 0) : id(i) {}
  int id;
  std::atomic<std::uint64_t> poison{kAlive};
  std::vector<node*> dependents;  // queued from notify: the cascade
};

/// Effects: deletes every node in `graveyard` and empties it.
/// Requires: each node is released (a policy's destroy hook kept it instead of deleting it).
inline void bury(std::vector<node*>& graveyard) {
  for (node* n : graveyard) delete n;
  graveyard.clear();
}

/// Returns `n` new registered nodes with ids first_id, first_id + 1, ...; the caller owns them
/// until a batch destroys them. Throws: std::bad_alloc.
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

/// Effects: make_registered(n, first_id), each pushed onto `q` in id order. Returns the nodes
/// (the queue and then the batch that runs it own them). Throws: std::bad_alloc.
inline std::vector<node*> queue_registered(unreg_queue<node>& q, int n, int first_id = 0) {
  std::vector<node*> nodes = make_registered(n, first_id);
  for (node* p : nodes) q.push(*p);
  return nodes;
}

/// Registered nodes that a test only queues: no batch runs on them, so none is ever released by
/// one. On destruction it releases each (as a batch would before destroy: registrable's
/// destructor refuses a registered object) and deletes it. Declare it before the queues that hold
/// its nodes, so that they are unqueued first.
class queue_only_nodes {
 public:
  /// Effects: n registered nodes, ids first_id, first_id + 1, ... Throws: std::bad_alloc.
  explicit queue_only_nodes(int n, int first_id = 1) : nodes_(make_registered(n, first_id)) {}
  ~queue_only_nodes() {
    for (node* p : nodes_) {
      detail::registrable_access::set_state(*p, reg_state::released);  // test-only back door
      delete p;
    }
  }
  queue_only_nodes(const queue_only_nodes&) = delete;
  queue_only_nodes& operator=(const queue_only_nodes&) = delete;

  node& operator[](std::size_t i) const { return *nodes_.at(i); }
  /// Effects: pushes every node onto q, in id order (each push can be refused: see unreg_queue).
  void push_all(unreg_queue<node>& q) const {
    for (node* p : nodes_) q.push(*p);
  }

 private:
  std::vector<node*> nodes_;
};

}  // namespace rcubatch::test
