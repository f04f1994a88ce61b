// tests/stress/stress_model.hpp — the registry the stress program tortures, and its invariants.
//
// A registry of `object`s that readers reach through two RCU-visible indexes:
//   - slots[i]      → object      (the primary index, unpublished by the policy's unlist hook);
//   - sub_slots[i]  → sub_object  (a secondary index, unpublished by uninit, the sub-object then
//                                   retired into the batch: only grace period #2 protects it).
// Objects form trees (object::children, writer-side only): notify queues a dying object's children
// into the running batch, so one batch cascades to any depth.
//
// Violations are recorded, never asserted on the spot, so one run reports all it found:
//   - a reader inside its read section sees a poisoned object or sub-object (freed while reachable),
//     or an object in state unregistered/released (the batch went past its grace periods);
//   - a holder about to put() its reference sees its object poisoned or released (freed while held);
//   - destroy() finds the object already poisoned (destroyed twice) or still referenced;
//   - a sub-object disposed twice;
//   - a batch waited for more than two grace periods (not counting retire's inline fallback GPs);
//   - at exit, created != destroyed (leaked).
// Poisoned memory is kept in a per-writer quarantine before it is really deleted, so a late reader
// finds the poison deterministically, not only when ASan happens to catch the access.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rcubatch.hpp"

namespace stress {

inline constexpr std::uint64_t kAlive = 0xA11FE0A11FE0A11Full;
inline constexpr std::uint64_t kPoison = 0xDEADBEEFDEADBEEFull;

struct writer_ctx;

struct sub_object : rcubatch::retire_node {
  std::uint64_t magic = kAlive;  // plain on purpose: an early free is then also a TSan race
  writer_ctx* owner = nullptr;
};

struct object;
#if defined(RCUBATCH_STRESS_SHARDED_REFS)
// rcubatch_stress_sharded: every object has a sharded count (sharded_refs.hpp). The holders hold
// and put through the shards until the run-down, some through the single atomic (as the library's
// own parent edges do), so both paths and the switch between them race the batches.
using object_registrable = rcubatch::sharded_registrable<object>;
inline constexpr bool kShardedRefs = true;
#else
using object_registrable = rcubatch::registrable<object>;
inline constexpr bool kShardedRefs = false;
#endif

struct object : object_registrable {
  std::uint64_t magic = kAlive;  // plain on purpose (see sub_object)
  std::uint64_t id = 0;
  std::uint32_t slot = 0;
  // Writer-side only (the owning writer thread, under the registry lock):
  object* parent = nullptr;
  std::size_t index_in_parent = 0;
  std::vector<object*> children;
  std::size_t index_in_live = 0;
  sub_object* sub = nullptr;
  bool retire_by_node = false;
};

struct counters {
  std::atomic<std::uint64_t> created{0}, destroyed{0};
  std::atomic<std::uint64_t> subs_created{0}, subs_disposed{0};
  std::atomic<std::uint64_t> batches{0}, torn_down{0}, dependents{0}, retired{0};
  std::atomic<std::uint64_t> gps{0}, gps_elided{0}, fallback_gps{0}, max_gps_per_batch{0};
  std::atomic<std::uint64_t> one_gp_batches{0}, max_batch_objects{0}, max_rounds{0};
  std::atomic<std::uint64_t> longest_drain_ns{0}, stall_reports{0}, rebroadcasts{0};
  std::atomic<std::uint64_t> unlocked_batches{0};
  std::atomic<std::uint64_t> lookups{0}, hits{0}, hits_unregistering{0}, sub_hits{0};
  std::atomic<std::uint64_t> holds{0}, drop_all{0};
  std::atomic<std::uint64_t> violations{0};
};

inline void atomic_max(std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept {
  std::uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

struct shared_state {
  explicit shared_state(std::size_t nslots) : slots(nslots), sub_slots(nslots) {}
  std::vector<std::atomic<object*>> slots;
  std::vector<std::atomic<sub_object*>> sub_slots;
  std::mutex registry_lock;                     // the writers' lock
  std::atomic<std::uint64_t> drop_epoch{0};     // bumped by rebroadcast: holders let go of everything
  counters c;
  std::mutex msg_mutex;
  std::vector<std::string> messages;            // the first violations, for the report

  void violation(const std::string& what) noexcept {
    const auto n = c.violations.fetch_add(1);
    if (n < 20) {
      std::lock_guard lock(msg_mutex);
      try {
        messages.push_back(what);
      } catch (...) {
      }
    }
  }
};

/// One writer's objects, slots and quarantine. Only its own thread touches it.
struct writer_ctx {
  shared_state* s = nullptr;
  std::vector<object*> live;            // registered, not in a batch
  std::vector<std::uint32_t> free_slots;
  std::deque<object*> quarantine;       // destroyed (poisoned), not yet deleted
  std::deque<sub_object*> sub_quarantine;
  std::size_t quarantine_cap = 4096;
  std::uint64_t destroyed_in_batch = 0;

  void remove_live(object& o) noexcept {
    object* last = live.back();
    live[o.index_in_live] = last;
    last->index_in_live = o.index_in_live;
    live.pop_back();
  }

  void dispose_sub(sub_object* sb) noexcept {
    if (sb->magic != kAlive) {
      s->violation("sub-object disposed twice (or disposed after being freed)");
      return;
    }
    sb->magic = kPoison;
    s->c.subs_disposed.fetch_add(1, std::memory_order_relaxed);
    sub_quarantine.push_back(sb);
    while (sub_quarantine.size() > quarantine_cap) {
      delete sub_quarantine.front();
      sub_quarantine.pop_front();
    }
  }

  void bury(object* o) noexcept {
    quarantine.push_back(o);
    while (quarantine.size() > quarantine_cap) {
      delete quarantine.front();
      quarantine.pop_front();
    }
  }

  void flush_quarantine() noexcept {
    for (object* o : quarantine) delete o;
    quarantine.clear();
    for (sub_object* sb : sub_quarantine) delete sb;
    sub_quarantine.clear();
  }
};

struct sub_disposer {
  void operator()(sub_object* sb) const noexcept { sb->owner->dispose_sub(sb); }
};

/// The registry's teardown hooks; every one also checks the invariants it can see.
template <class Flavor>
struct stress_policy {
  shared_state& s;
  writer_ctx& w;
  bool inject_early_free = false;  // the negative control: a registry bug the stress must catch

  void validate(object& o) {
    if (o.magic != kAlive) s.violation("validate: queued object is poisoned");
  }

  void unlist(object& o) noexcept {
    s.slots[o.slot].store(nullptr, std::memory_order_release);
    if (object* p = o.parent) {
      object* last = p->children.back();
      p->children[o.index_in_parent] = last;
      last->index_in_parent = o.index_in_parent;
      p->children.pop_back();
      o.parent = nullptr;
    }
    w.remove_live(o);
  }

  void notify(object& o, rcubatch::batch& b) noexcept {
    // Children unlist themselves (and leave o.children) only in the next round, so this loop
    // does not see the vector change.
    for (object* child : o.children) {
      if (!b.queue(*child)) s.violation("batch::queue refused a registered child");
    }
  }

  bool uninit(object& o, rcubatch::batch& b) noexcept {
    sub_object* sb = o.sub;
    if (sb == nullptr) return false;  // nothing unlinked: lets a cascade-free batch skip GP #2
    s.sub_slots[o.slot].store(nullptr, std::memory_order_release);
    o.sub = nullptr;
    if (inject_early_free) {
      w.dispose_sub(sb);  // BUG on purpose: readers of sub_slots may still hold it until GP #2
      return true;
    }
    if (o.retire_by_node) {
      sb->dispose = [](rcubatch::retire_node* n) noexcept {
        auto* self = static_cast<sub_object*>(n);
        self->owner->dispose_sub(self);
      };
      b.retire(*sb);
    } else {
      b.retire(sb, sub_disposer{});
    }
    return true;
  }

  void rebroadcast(object&) noexcept { s.drop_epoch.fetch_add(1, std::memory_order_relaxed); }

  std::string name(const object& o) const { return "object#" + std::to_string(o.id); }

  void destroy(object* o) noexcept {
    if (o->magic != kAlive) {
      s.violation("destroy: object already poisoned (destroyed twice)");
      return;
    }
    if (o->refs().count() != 0) s.violation("destroy: object still referenced");
    if (o->state() != rcubatch::reg_state::released) s.violation("destroy: object not in state released");
    if (o->sub != nullptr) s.violation("destroy: sub-object still attached");
    if (!o->children.empty()) s.violation("destroy: children still attached");
    o->magic = kPoison;
    s.c.destroyed.fetch_add(1, std::memory_order_relaxed);
    ++w.destroyed_in_batch;
    w.bury(o);
  }
};

}  // namespace stress
