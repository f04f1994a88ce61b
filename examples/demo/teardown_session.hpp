// teardown_session.hpp — the teardown demo's objects, registry and policy (teardown_demo.cpp), in
// a header of their own so that bench/teardown_passes.cpp profiles exactly the demo's layout.
#pragma once

#include <rcubatch.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace teardown_demo {

constexpr std::uint64_t kAlive = 0x600DF00D;
constexpr std::uint64_t kPoison = 0xDEADBEEF;

struct session : rcubatch::registrable<session> {
  explicit session(std::size_t i) : id(i) {}
  std::size_t id;
  std::atomic<std::uint64_t> poison{kAlive};
  session* chain_next = nullptr;  // the chain floor's link only (the heap chunk stays 64 bytes)
};

/// Two RCU-readable indexes over the same sessions. Slots are std::atomic pointers: a release
/// store publishes, an acquire load reads (what rcu_assign_pointer / rcu_dereference do).
struct registry {
  explicit registry(std::size_t n) : by_id(n), by_hash(n) {}
  std::vector<std::atomic<session*>> by_id;
  std::vector<std::atomic<session*>> by_hash;
  std::size_t hash_slot(std::size_t id) const { return (id * 7919) % by_hash.size(); }

  /// `for_library`: mark the sessions registered (what rollback_many requires); the hand-written
  /// floor leaves them uninitialized, the state in which an object may be deleted without the library.
  void populate(bool for_library = true) {
    for (std::size_t i = 0; i < by_id.size(); ++i) {
      auto* s = new session(i);
      by_id[i].store(s, std::memory_order_release);
      by_hash[hash_slot(i)].store(s, std::memory_order_release);
      if (for_library) s->mark_registered();
    }
  }
};

inline void destroy_session(session* s) {
  s->poison.store(kPoison, std::memory_order_relaxed);
  delete s;
}

/// The registry's teardown hooks for rollback_many.
struct session_policy {
  registry* reg;
  void unlist(session& s) noexcept { reg->by_id[s.id].store(nullptr, std::memory_order_release); }
  void uninit(session& s) noexcept { reg->by_hash[reg->hash_slot(s.id)].store(nullptr, std::memory_order_release); }
  void destroy(session* s) noexcept { destroy_session(s); }
};

}  // namespace teardown_demo
