// tests/stress/stress.cpp — rcubatch_stress: readers, writers and late ref holders against one
// registry, for one flavor chosen at run time. Exits non-zero on any violation (stress_model.hpp).
//
//   rcubatch_stress --flavor memb --seconds 3                 # ctest short mode (stress.<flavor>)
//   rcubatch_stress --flavor qsbr --objects 1000000 --readers 2 --writers 2 --holders 1   # long mode
//
// Threads:
//   readers  registered; in a read_guard, look up random slots, check the object and its
//            sub-object are not poisoned and not past their grace periods; qsbr: quiescent_state
//            between read sections.
//   writers  create objects (random trees, half with a sub-object), then unregister a random batch
//            of 1 … --max-batch objects (log-uniform) with rollback_many; notify cascades to
//            children, uninit retires sub-objects; half the batches pass unlock_during_waits.
//   holders  take refs on objects found under a read guard and put them back late (a FIFO of up
//            to 64, plus rare long holds that only the rebroadcast hook makes them drop).
// Stops after --seconds or once --objects objects were torn down (whichever comes first), then
// the writers tear down everything left while readers and holders still run.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "stress_model.hpp"

namespace stress {
namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string flavor = "memb";
  double seconds = 0;             // 0: no time limit (then --objects must be set)
  std::uint64_t objects = 0;      // 0: no object limit
  unsigned readers = 2, writers = 2, holders = 1;
  std::size_t max_batch = 10'000;
  std::size_t pool = 0;           // live objects per writer; 0: 2 × max_batch
  unsigned child_percent = 30;    // new object hangs under a random live object
  unsigned sub_percent = 50;      // new object gets a sub-object in the secondary index
  unsigned unlock_percent = 50;   // batches run with unlock_during_waits
  unsigned stall_ms = 50, rebroadcast_ms = 20;
  std::uint64_t seed = 0;         // 0: from the clock
  bool verbose = false;
  bool inject_early_free = false;  // negative control: uninit frees sub-objects without waiting for GP #2
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--flavor memb|qsbr|mb|bp] [--seconds S] [--objects N] [--readers R]\n"
               "          [--writers W] [--holders H] [--max-batch B] [--pool P] [--child-percent C]\n"
               "          [--sub-percent S] [--unlock-percent U] [--stall-ms MS] [--rebroadcast-ms MS]\n"
               "          [--seed X] [--verbose] [--inject-early-free]\n",
               argv0);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    auto num = [&] { return std::strtoull(next(), nullptr, 10); };
    if (a == "--flavor") o.flavor = next();
    else if (a == "--seconds") o.seconds = std::strtod(next(), nullptr);
    else if (a == "--objects") o.objects = num();
    else if (a == "--readers") o.readers = static_cast<unsigned>(num());
    else if (a == "--writers") o.writers = static_cast<unsigned>(num());
    else if (a == "--holders") o.holders = static_cast<unsigned>(num());
    else if (a == "--max-batch") o.max_batch = num();
    else if (a == "--pool") o.pool = num();
    else if (a == "--child-percent") o.child_percent = static_cast<unsigned>(num());
    else if (a == "--sub-percent") o.sub_percent = static_cast<unsigned>(num());
    else if (a == "--unlock-percent") o.unlock_percent = static_cast<unsigned>(num());
    else if (a == "--stall-ms") o.stall_ms = static_cast<unsigned>(num());
    else if (a == "--rebroadcast-ms") o.rebroadcast_ms = static_cast<unsigned>(num());
    else if (a == "--seed") o.seed = num();
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--inject-early-free") o.inject_early_free = true;
    else usage(argv[0]);
  }
  if (o.seconds <= 0 && o.objects == 0) o.seconds = 3;
  if (o.writers == 0 || o.max_batch == 0) usage(argv[0]);
  if (o.pool == 0) o.pool = 2 * o.max_batch;
  if (o.pool < o.max_batch) o.pool = o.max_batch;
  if (o.seed == 0) o.seed = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
  return o;
}

// The stall reporter is a plain function pointer: count through a global.
std::atomic<std::uint64_t> g_stall_lines{0};
void count_stall_line(std::string_view) noexcept { g_stall_lines.fetch_add(1, std::memory_order_relaxed); }

void misuse_is_a_violation(rcubatch::misuse_kind k, std::string_view msg) noexcept {
  std::fprintf(stderr, "rcubatch_stress: misuse diagnosed (%.*s): %.*s\n", static_cast<int>(to_string(k).size()),
               to_string(k).data(), static_cast<int>(msg.size()), msg.data());
}

template <class Flavor>
class run {
 public:
  explicit run(const options& o) : o_(o), s_(static_cast<std::size_t>(o.writers) * o.pool) {}

  int go() {
    const auto t0 = clock_type::now();
    std::vector<std::thread> readers, holders, writers;
    for (unsigned i = 0; i < o_.readers; ++i) readers.emplace_back([this, i] { reader(o_.seed * 31 + i); });
    for (unsigned i = 0; i < o_.holders; ++i) holders.emplace_back([this, i] { holder(o_.seed * 37 + i); });
    for (unsigned i = 0; i < o_.writers; ++i) writers.emplace_back([this, i] { writer(i); });
    for (auto& t : writers) t.join();
    stop_readers_.store(true);
    for (auto& t : readers) t.join();
    for (auto& t : holders) t.join();
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    return report(secs);
  }

 private:
  // --- readers ------------------------------------------------------------------------------
  void check_object(object* obj) {
    if (obj->magic != kAlive) s_.violation("reader: object poisoned inside a read section (freed while reachable)");
    const auto st = obj->state();
    if (st == rcubatch::reg_state::unregistered || st == rcubatch::reg_state::released)
      s_.violation("reader: reachable object already past its grace periods (state " +
                   std::string(rcubatch::to_string(st)) + ")");
  }
  void check_sub(sub_object* sb) {
    if (sb->magic != kAlive) s_.violation("reader: sub-object poisoned inside a read section (retired too early)");
  }

  void reader(std::uint64_t seed) {
    rcubatch::thread_registration<Flavor> reg;
    std::mt19937_64 rng(seed);
    const std::size_t n = s_.slots.size();
    std::uint64_t lookups = 0, hits = 0, unreg = 0, sub_hits = 0;
    std::vector<object*> seen;
    std::vector<sub_object*> seen_subs;
    while (!stop_readers_.load(std::memory_order_relaxed)) {
      {
        rcubatch::read_guard<Flavor> guard;
        seen.clear();
        seen_subs.clear();
        for (int j = 0; j < 32; ++j) {
          const std::size_t i = rng() % n;
          ++lookups;
          if (object* obj = s_.slots[i].load(std::memory_order_acquire)) {
            ++hits;
            check_object(obj);
            if (obj->state() == rcubatch::reg_state::unregistering) ++unreg;
            seen.push_back(obj);
          }
          if (sub_object* sb = s_.sub_slots[i].load(std::memory_order_acquire)) {
            ++sub_hits;
            check_sub(sb);
            seen_subs.push_back(sb);
          }
        }
        // Everything found in this section must still be intact at its end: this widens the
        // window in which an early free is seen from nanoseconds to the whole section.
        for (object* obj : seen) check_object(obj);
        for (sub_object* sb : seen_subs) check_sub(sb);
      }
      rcubatch::quiescent_state<Flavor>();
    }
    s_.c.lookups += lookups;
    s_.c.hits += hits;
    s_.c.hits_unregistering += unreg;
    s_.c.sub_hits += sub_hits;
  }

  // --- holders ------------------------------------------------------------------------------
  void put_checked(object* obj) {
    if (obj->magic != kAlive) s_.violation("holder: held object poisoned before put (freed while referenced)");
    if (obj->state() == rcubatch::reg_state::released) s_.violation("holder: held object released before put");
    put_any_way(obj);  // obj may be destroyed from here on
  }

  /// Sharded objects: one in four (by id) is held and put through the single atomic instead of the
  /// shards, as the library's own parent edges are — both ways of one hold alike: a put on the
  /// atomic of a hold taken on a shard would underflow the atomic before the run-down.
  static bool via_atomic(const object* obj) noexcept { return kShardedRefs && obj->id % 4 == 0; }
  void hold_any_way(object* obj) {
    if (via_atomic(obj)) return static_cast<rcubatch::detail::registrable_base&>(*obj).refs().hold();
    obj->refs().hold();
  }
  void put_any_way(object* obj) {
    if (via_atomic(obj)) return static_cast<rcubatch::detail::registrable_base&>(*obj).refs().put();
    obj->refs().put();
  }

  void holder(std::uint64_t seed) {
    rcubatch::thread_registration<Flavor> reg;
    std::mt19937_64 rng(seed);
    const std::size_t n = s_.slots.size();
    std::deque<object*> held, long_held;
    std::uint64_t epoch = s_.drop_epoch.load();
    std::uint64_t holds = 0, drops = 0;
    while (!stop_readers_.load(std::memory_order_relaxed)) {
      {
        rcubatch::read_guard<Flavor> guard;
        if (object* obj = s_.slots[rng() % n].load(std::memory_order_acquire)) {
          if (obj->magic != kAlive) s_.violation("holder: object poisoned inside a read section");
          hold_any_way(obj);  // legal: found under a guard, so its drain has not begun
          ++holds;
          if (rng() % 1024 == 0) long_held.push_back(obj);
          else held.push_back(obj);
        }
      }
      const std::uint64_t e = s_.drop_epoch.load(std::memory_order_relaxed);
      if (e != epoch) {  // the rebroadcast hook asked everyone to let go
        epoch = e;
        ++drops;
        for (object* obj : long_held) put_checked(obj);
        long_held.clear();
      }
      while (held.size() > 64 || (!held.empty() && rng() % 4 == 0)) {
        put_checked(held.front());
        held.pop_front();
      }
      rcubatch::quiescent_state<Flavor>();
    }
    for (object* obj : held) put_checked(obj);
    for (object* obj : long_held) put_checked(obj);
    s_.c.holds += holds;
    s_.c.drop_all += drops;
  }

  // --- writers ------------------------------------------------------------------------------
  bool should_stop(clock_type::time_point t0) const {
    if (o_.objects != 0 && s_.c.torn_down.load() >= o_.objects) return true;
    if (o_.seconds > 0 && std::chrono::duration<double>(clock_type::now() - t0).count() >= o_.seconds) return true;
    return false;
  }

  void create(writer_ctx& w, std::mt19937_64& rng, std::uint64_t& next_id) {
    const std::uint32_t slot = w.free_slots.back();
    w.free_slots.pop_back();
    auto* obj = new object;
    obj->id = next_id++;
    obj->slot = slot;
    if (!w.live.empty() && rng() % 100 < o_.child_percent) {
      object* p = w.live[rng() % w.live.size()];
      obj->parent = p;
      obj->index_in_parent = p->children.size();
      p->children.push_back(obj);
    }
    if (rng() % 100 < o_.sub_percent) {
      obj->sub = new sub_object;
      obj->sub->owner = &w;
      obj->retire_by_node = rng() % 2 == 0;
      s_.c.subs_created.fetch_add(1, std::memory_order_relaxed);
      s_.sub_slots[slot].store(obj->sub, std::memory_order_release);
    }
    s_.slots[slot].store(obj, std::memory_order_release);  // publish, then mark registered
    obj->mark_registered();
    obj->index_in_live = w.live.size();
    w.live.push_back(obj);
    s_.c.created.fetch_add(1, std::memory_order_relaxed);
  }

  /// One rollback_many over `k` random live objects of this writer (all of them if k ≥ live).
  void unregister_batch(writer_ctx& w, std::mt19937_64& rng, std::size_t k, std::unique_lock<std::mutex>& lock) {
    k = std::min(k, w.live.size());
    if (k == 0) return;
    rcubatch::unreg_queue<object> q;
    std::vector<object*> picked;
    picked.reserve(k);
    // Partial Fisher–Yates over the live vector (kept consistent with index_in_live).
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t j = i + rng() % (w.live.size() - i);
      std::swap(w.live[i], w.live[j]);
      w.live[i]->index_in_live = i;
      w.live[j]->index_in_live = j;
      picked.push_back(w.live[i]);
    }
    for (object* obj : picked) q.push(*obj);
    if (rng() % 100 == 0) q.push(*picked[rng() % k]);  // idempotent: moved to the tail, not linked twice
    if (q.size() != k) s_.violation("unreg_queue size is not the number of distinct objects pushed");

    // Slots of the batch's objects are freed only after it (readers may still see them before).
    std::vector<std::uint32_t> freed_slots;

    rcubatch::rollback_options ro;
    ro.drain.stall_report_interval = std::chrono::milliseconds(o_.stall_ms);
    ro.drain.rebroadcast_interval = std::chrono::milliseconds(o_.rebroadcast_ms);
    ro.drain.reporter = &count_stall_line;
    stress_policy<Flavor> policy{s_, w, o_.inject_early_free};
    // Remember the slots now: the objects are destroyed (quarantined) by the batch.
    collect_tree_slots(picked, freed_slots);

    w.destroyed_in_batch = 0;
    rcubatch::batch_stats st;
    const bool unlocked = rng() % 100 < o_.unlock_percent;
    if (unlocked) {
      st = rcubatch::rollback_many(q, policy, domain_, rcubatch::unlock_during_waits(*lock.mutex()), ro);
      s_.c.unlocked_batches.fetch_add(1, std::memory_order_relaxed);
    } else {
      st = rcubatch::rollback_many(q, policy, domain_, ro);
    }
    if (!q.empty()) s_.violation("queue not empty after rollback_many");
    if (st.objects != freed_slots.size())
      s_.violation("batch tore down " + std::to_string(st.objects) + " objects, expected " +
                   std::to_string(freed_slots.size()) + " (queued + their subtrees)");
    if (w.destroyed_in_batch != st.objects)
      s_.violation("batch destroyed " + std::to_string(w.destroyed_in_batch) + " of " + std::to_string(st.objects));
    const unsigned gps = st.grace_periods - st.retire_fallback_gps;
    if (gps > 2) s_.violation("batch waited for " + std::to_string(gps) + " grace periods (bound: 2)");
    if (st.grace_periods + st.gps_elided - st.retire_fallback_gps == 0)
      s_.violation("batch ran without any grace period");
    for (std::uint32_t slot : freed_slots) {
      if (s_.slots[slot].load() != nullptr || s_.sub_slots[slot].load() != nullptr)
        s_.violation("slot still published after its object was torn down");
      w.free_slots.push_back(slot);
    }

    auto& c = s_.c;
    c.batches.fetch_add(1, std::memory_order_relaxed);
    c.torn_down.fetch_add(st.objects, std::memory_order_relaxed);
    c.dependents.fetch_add(st.dependents_added, std::memory_order_relaxed);
    c.retired.fetch_add(st.retired, std::memory_order_relaxed);
    c.gps.fetch_add(st.grace_periods, std::memory_order_relaxed);
    c.gps_elided.fetch_add(st.gps_elided, std::memory_order_relaxed);
    c.fallback_gps.fetch_add(st.retire_fallback_gps, std::memory_order_relaxed);
    if (gps == 1) c.one_gp_batches.fetch_add(1, std::memory_order_relaxed);
    atomic_max(c.max_gps_per_batch, gps);
    atomic_max(c.max_batch_objects, st.objects);
    atomic_max(c.max_rounds, st.rounds);
    atomic_max(c.longest_drain_ns, static_cast<std::uint64_t>(st.longest_drain_wait.count()));
    c.stall_reports.fetch_add(st.stall_reports, std::memory_order_relaxed);
    if (o_.verbose && st.longest_drain_wait > std::chrono::milliseconds(o_.stall_ms))
      std::printf("  slow drain: objects=%zu drain_wait_ms=%.1f ref_drain_phase_ms=%.1f stall_reports=%zu rebroadcasts=%zu\n",
                  st.objects, static_cast<double>(st.longest_drain_wait.count()) / 1e6,
                  static_cast<double>(st.time_of(rcubatch::phase::ref_drain).count()) / 1e6, st.stall_reports,
                  st.rebroadcasts);
    c.rebroadcasts.fetch_add(st.rebroadcasts, std::memory_order_relaxed);
  }

  /// The slots of `roots` and of every object below them: what the batch must tear down.
  static void collect_tree_slots(const std::vector<object*>& roots, std::vector<std::uint32_t>& out) {
    std::unordered_set<object*> seen;
    std::vector<object*> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      object* obj = stack.back();
      stack.pop_back();
      if (!seen.insert(obj).second) continue;
      out.push_back(obj->slot);
      for (object* ch : obj->children) stack.push_back(ch);
    }
  }

  std::size_t random_batch_size(std::mt19937_64& rng) const {
    // Log-uniform in [1, max_batch]: as many 1–10 batches as 1,000–10,000 ones.
    std::uniform_real_distribution<double> d(0.0, std::log(static_cast<double>(o_.max_batch) + 1.0));
    const auto k = static_cast<std::size_t>(std::exp(d(rng)));
    return std::clamp<std::size_t>(k, 1, o_.max_batch);
  }

  void writer(unsigned id) {
    writer_ctx w;
    w.s = &s_;
    std::mt19937_64 rng(o_.seed * 41 + id);
    const std::size_t base = static_cast<std::size_t>(id) * o_.pool;
    for (std::size_t i = 0; i < o_.pool; ++i) w.free_slots.push_back(static_cast<std::uint32_t>(base + o_.pool - 1 - i));
    w.live.reserve(o_.pool);
    std::uint64_t next_id = static_cast<std::uint64_t>(id) << 40;
    const auto t0 = clock_type::now();
    while (!should_stop(t0)) {
      std::unique_lock lock(s_.registry_lock);
      const std::size_t k = random_batch_size(rng);
      // Refill to at least k live objects, plus a random amount more.
      const std::size_t target = std::min(o_.pool, k + rng() % (o_.pool - k + 1));
      while (w.live.size() < target && !w.free_slots.empty()) create(w, rng, next_id);
      unregister_batch(w, rng, k, lock);
    }
    // Tear everything down while readers and holders are still running.
    while (!w.live.empty()) {
      std::unique_lock lock(s_.registry_lock);
      unregister_batch(w, rng, o_.max_batch, lock);
    }
    if (w.free_slots.size() != o_.pool) s_.violation("writer lost track of slots");
    std::lock_guard lock(s_.registry_lock);
    quarantines_.push_back(std::move(w.quarantine));
    sub_quarantines_.push_back(std::move(w.sub_quarantine));
  }

  int report(double secs) {
    // Readers and holders are gone: free what the writers kept poisoned.
    for (auto& q : quarantines_)
      for (object* obj : q) delete obj;
    for (auto& q : sub_quarantines_)
      for (sub_object* sb : q) delete sb;
    auto& c = s_.c;
    if (c.created.load() != c.destroyed.load())
      s_.violation("leaked: created " + std::to_string(c.created.load()) + ", destroyed " +
                   std::to_string(c.destroyed.load()));
    if (c.subs_created.load() != c.subs_disposed.load())
      s_.violation("leaked sub-objects: created " + std::to_string(c.subs_created.load()) + ", disposed " +
                   std::to_string(c.subs_disposed.load()));
    for (std::size_t k = 0; k < rcubatch::kMisuseKinds; ++k) {
      const auto kind = static_cast<rcubatch::misuse_kind>(k);
      if (rcubatch::misuse_count(kind) != 0)
        s_.violation("misuse diagnosed: " + std::string(rcubatch::to_string(kind)));
    }
    const auto ds = domain_.stats();
    std::printf(
        "rcubatch_stress flavor=%s readers=%u writers=%u holders=%u max_batch=%zu seed=%" PRIu64 "\n"
        "  seconds=%.1f objects_torn_down=%" PRIu64 " created=%" PRIu64 " destroyed=%" PRIu64 "\n"
        "  batches=%" PRIu64 " (unlocked %" PRIu64 ", one-GP %" PRIu64 ") largest_batch=%" PRIu64
        " dependents=%" PRIu64 " max_rounds=%" PRIu64 "\n"
        "  retired_subs=%" PRIu64 " gps=%" PRIu64 " gps_elided=%" PRIu64 " fallback_gps=%" PRIu64
        " max_gps_per_batch=%" PRIu64 " domain_gps=%" PRIu64 " domain_coalesced=%" PRIu64 "\n"
        "  longest_ref_drain_wait_ms=%.3f stall_reports=%" PRIu64 " rebroadcasts=%" PRIu64 " holds=%" PRIu64 "\n"
        "  lookups=%" PRIu64 " hits=%" PRIu64 " hits_while_unregistering=%" PRIu64 " sub_hits=%" PRIu64 "\n"
        "  violations=%" PRIu64 "\n",
        std::string(Flavor::name).c_str(), o_.readers, o_.writers, o_.holders, o_.max_batch, o_.seed, secs,
        c.torn_down.load(), c.created.load(), c.destroyed.load(), c.batches.load(), c.unlocked_batches.load(),
        c.one_gp_batches.load(), c.max_batch_objects.load(), c.dependents.load(), c.max_rounds.load(),
        c.retired.load(), c.gps.load(), c.gps_elided.load(), c.fallback_gps.load(), c.max_gps_per_batch.load(),
        ds.grace_periods, ds.coalesced, static_cast<double>(c.longest_drain_ns.load()) / 1e6,
        g_stall_lines.load(), c.rebroadcasts.load(), c.holds.load(), c.lookups.load(), c.hits.load(),
        c.hits_unregistering.load(), c.sub_hits.load(), c.violations.load());
    for (const auto& m : s_.messages) std::printf("  VIOLATION: %s\n", m.c_str());
    if (c.violations.load() != 0) {
      std::printf("FAILED\n");
      return 1;
    }
    if (c.torn_down.load() == 0 || c.batches.load() == 0) {
      std::printf("FAILED: nothing was torn down\n");
      return 1;
    }
    // The poison checks prove something only if readers found objects, and the drain only if
    // holders held some.
    if ((o_.readers > 0 && c.hits.load() == 0) || (o_.holders > 0 && c.holds.load() == 0)) {
      std::printf("FAILED: readers or holders never reached an object (the checks were vacuous)\n");
      return 1;
    }
    std::printf("OK\n");
    return 0;
  }

  const options& o_;
  shared_state s_;
  rcubatch::grace_domain<Flavor> domain_;
  std::atomic<bool> stop_readers_{false};
  std::vector<std::deque<object*>> quarantines_;
  std::vector<std::deque<sub_object*>> sub_quarantines_;
};

}  // namespace
}  // namespace stress

int main(int argc, char** argv) {
  const stress::options o = stress::parse(argc, argv);
  // Any misuse diagnosed in a correct program is a bug: make it loud and fatal.
  rcubatch::set_misuse_reporter(&stress::misuse_is_a_violation);
  rcubatch::set_misuse_policy(rcubatch::misuse_policy::abort_process);
  return rcubatch::with_flavor(
      o.flavor, [&]<class F>(std::type_identity<F>) { return stress::run<F>(o).go(); },
      [](const rcubatch::unknown_flavor& e) { return std::fprintf(stderr, "rcubatch_stress: %s\n", e.what()), 2; });
}
