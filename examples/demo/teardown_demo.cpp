// teardown_demo — why batch: 10,000 objects torn down one grace period at a time, then in one
// rollback_many, while a reader thread keeps looking them up on the other core.
//
//   teardown_demo [--objects N] [--rounds K] [--readers R] [--flavor memb|qsbr|mb|bp] [--seed S]
//                 [--per-object-every M] [--slow-threshold-ns T] [--gp-wait-limit-us L] [--no-pin]
//                 [--heap-probe] [--json]
//
// The registry is the smallest one that still has the kernel's shape: a primary index (by id)
// that lookups use, and a secondary index (by hash) that is unlinked later, in uninit — so a
// batch needs its two grace periods. Readers check a poison word inside their read section; a
// poisoned object seen by a reader would mean it was freed while reachable, and the demo fails.
//
// A third way is timed beside the two: the same teardown written by hand with no library at all
// (unlink every primary slot, one GP, unlink every secondary slot, one GP, free all), on objects
// of the same layout (they embed the same registrable base, left unregistered). No batching
// library can be faster than that, so it shows what rollback_many's bookkeeping (queue, states,
// dismantle flag, ref drain) costs on top of the grace periods it saves.
//
// A fourth way is the floor of any intrusive queue: the same teardown by hand through a singly
// linked chain in the objects themselves (link each at "push", then unlist, uninit and free each
// walking the chain: the four passes push_range and rollback_many make, with none of their checks
// or states). Its ratio to the floor is what walking the objects instead of an array costs. The
// batch itself is rollback_range over the primary index, which queues and unlists each session in
// one walk over the index's slots (issue 36): three walks over the objects, one fewer than the
// chain floor's.
//
// How the measurement is kept honest on a shared 2-vCPU VM whose cross-core cache-line cost flips
// between two states (~60 ns and ~450 ns per round trip) every few seconds:
//   - rounds: each round runs every way once, in a fresh random order (std::shuffle, seeded; the
//     seed is printed and --seed repeats it). A fixed rotation put each way behind the same
//     predecessor every time, and the predecessor's heap and cache leftovers changed its cost.
//   - pinning: the writer (main thread) and the reader(s) run on different allowed CPUs
//     (sched_getaffinity); with one allowed CPU nothing is pinned, and the output says so.
//   - state: a short ping-pong on one atomic between the writer and reader 0 (or a helper thread
//     on the reader's CPU with --readers 0) before and after each round gives the round's
//     cross-core cost; a round is fast if both probes are under the threshold, slow if both are
//     at or over it, and mixed (left out of both figures) if the state changed within it.
//   - ratio: rollback_many / floor is taken per round, and the figure is the median of those
//     per-round ratios, separately for fast and slow rounds.
//   - disturbance: other tenants preempt threads. A round whose writer was switched out
//     involuntarily during the batch or the floor (getrusage), or whose batch or floor waited
//     more than --gp-wait-limit-us for its two GPs (a reader preempted inside its read section),
//     is left out of both states' figures and counted as disturbed (the rule is shared with
//     netsim's seed table: examples/common/disturbance.hpp).
//   - one GP per object costs ~0.2 s a round at N = 10^4, so it runs only every M-th round
//     (default: about three times per run); the batch and both floors run every round.
#include <rcubatch.hpp>

#include "disturbance.hpp"
#include "median.hpp"
#include "teardown_session.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using teardown_demo::destroy_session;
using teardown_demo::kAlive;
using teardown_demo::registry;
using teardown_demo::session;
using teardown_demo::session_policy;

// --- where the threads run ------------------------------------------------------------------------

/// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

/// Pins the calling thread to `cpu`; false if the system refused.
bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/// Writer on the first allowed CPU, reader i on the (1 + i mod (C-1))-th: never the writer's.
struct placement {
  bool pin = false;
  std::string why_not;  // set when pin is false
  int writer_cpu = -1;
  std::vector<int> cpus;

  static placement choose(bool wanted) {
    placement p;
    p.cpus = allowed_cpus();
    if (!wanted) p.why_not = "--no-pin";
    else if (p.cpus.size() < 2) p.why_not = p.cpus.empty() ? "sched_getaffinity failed" : "only one CPU allowed";
    else p.pin = true;
    if (p.pin) p.writer_cpu = p.cpus[0];
    return p;
  }
  /// Reader i's CPU (or the ping-pong helper's, i = 0), -1 if not pinned.
  int reader_cpu(int i) const {
    return pin ? cpus[1 + static_cast<std::size_t>(i) % (cpus.size() - 1)] : -1;
  }
};

// --- the cross-core probe -------------------------------------------------------------------------

/// One cache line handed back and forth between the writer and reader 0. The reader polls it
/// between lookups (outside its read section) and serves a probe when the writer starts one; the
/// line is written only during a probe, so the ways' timings do not see it.
struct alignas(64) pong_channel {
  static constexpr int kIdle = 0, kPing = 1, kPong = 2, kEnd = 3;
  std::atomic<int> ball{kIdle};

  /// Peer side: answers every ping until the writer ends the probe.
  void serve() {
    for (;;) {
      const int v = ball.load(std::memory_order_acquire);
      if (v == kPing) {
        ball.store(kPong, std::memory_order_release);
      } else if (v == kEnd) {
        ball.store(kIdle, std::memory_order_release);
        return;
      }
    }
  }
  bool requested() const { return ball.load(std::memory_order_relaxed) != kIdle; }

  /// Writer side: the median over 32 batches of 64 round trips, in ns per round trip. The first
  /// trip (waiting for the peer to notice) is not timed.
  double probe() {
    trip();
    constexpr int kBatches = 32, kTrips = 64;
    std::vector<double> ns;
    for (int b = 0; b < kBatches; ++b) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kTrips; ++i) trip();
      ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kTrips);
    }
    ball.store(kEnd, std::memory_order_release);
    while (ball.load(std::memory_order_acquire) != kIdle) {
    }
    return rcubatch_examples::median_of(std::move(ns));
  }

 private:
  void trip() {
    ball.store(kPing, std::memory_order_release);
    while (ball.load(std::memory_order_acquire) != kPong) {
    }
  }
};

// --- readers ----------------------------------------------------------------------------------------

struct reader_stats {
  std::atomic<long> lookups{0};
  std::atomic<long> poisoned{0};
  std::atomic<int> pin_failures{0};
};

template <class Flavor>
void reader_loop(int index, const placement& where, const registry& reg, reader_stats& stats, pong_channel& pong,
                 const std::atomic<bool>& stop, std::latch& started) {
  if (where.pin && !pin_self(where.reader_cpu(index))) stats.pin_failures.fetch_add(1);
  rcubatch::thread_registration<Flavor> registration;
  std::minstd_rand rng(42 + static_cast<unsigned>(index));
  started.count_down();
  long local = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    {
      rcubatch::read_guard<Flavor> guard;
      const std::size_t i = rng() % reg.by_id.size();
      if (session* s = reg.by_id[i].load(std::memory_order_acquire)) {
        if (s->poison.load(std::memory_order_relaxed) != kAlive) stats.poisoned.fetch_add(1);
      }
      if (session* s = reg.by_hash[i].load(std::memory_order_acquire)) {
        if (s->poison.load(std::memory_order_relaxed) != kAlive) stats.poisoned.fetch_add(1);
      }
    }
    rcubatch::quiescent_state<Flavor>();
    if (index == 0 && pong.requested()) pong.serve();
    ++local;
  }
  stats.lookups.fetch_add(local);
}

// --- the three ways -------------------------------------------------------------------------------

struct result {
  double seconds;
  std::uint64_t grace_periods;
  double gp_wait_seconds = 0;  // time spent in the grace-period waits (batch and floor)
};

/// What registries do without batching: unlink one object from both indexes, wait for a grace
/// period, free it. (Through the library as a batch of one, so the demo needs no private access;
/// the policy unlinks both indexes before the grace period, so each costs exactly one.)
struct one_at_a_time_policy {
  registry* reg;
  void unlist(session& s) noexcept {
    reg->by_id[s.id].store(nullptr, std::memory_order_release);
    reg->by_hash[reg->hash_slot(s.id)].store(nullptr, std::memory_order_release);
  }
  void destroy(session* s) noexcept { destroy_session(s); }
};

template <class Flavor>
result one_grace_period_each(registry& reg, rcubatch::grace_domain<Flavor>& domain) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& slot : reg.by_id) {
    rcubatch::unregister_one(*slot.load(std::memory_order_relaxed), one_at_a_time_policy{&reg}, domain);
  }
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return {dt.count(), domain.stats().grace_periods - before};
}

/// The same teardown as one batch.
template <class Flavor>
result one_batch(registry& reg, rcubatch::grace_domain<Flavor>& domain, rcubatch::batch_stats& stats) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  // Every session the primary index holds, queued and unlisted in one walk (rollback_range).
  stats = rcubatch::rollback_range(reg.by_id, [](const auto& slot) { return slot.load(std::memory_order_relaxed); },
                                   session_policy{&reg}, domain);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  const auto gp = stats.time_of(rcubatch::phase::grace_period_1) + stats.time_of(rcubatch::phase::grace_period_2);
  return {dt.count(), domain.stats().grace_periods - before, std::chrono::duration<double>(gp).count()};
}

/// A teardown written by hand, timed like the batch: `unlink` (before grace period #1), `unlink_late`
/// (between the two) and `free_all` (after #2) are the caller's passes; the result counts the GPs
/// and their wait. The two floors below share it, so they differ only in their passes.
template <class Flavor, class Unlink, class UnlinkLate, class FreeAll>
result by_hand(rcubatch::grace_domain<Flavor>& domain, Unlink&& unlink, UnlinkLate&& unlink_late, FreeAll&& free_all) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  unlink();
  const auto gp1 = std::chrono::steady_clock::now();
  domain.synchronize();
  const auto gp1_end = std::chrono::steady_clock::now();
  unlink_late();
  const auto gp2 = std::chrono::steady_clock::now();
  domain.synchronize();
  const auto gp2_end = std::chrono::steady_clock::now();
  free_all();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  const std::chrono::duration<double> gp = (gp1_end - gp1) + (gp2_end - gp2);
  return {dt.count(), domain.stats().grace_periods - before, gp.count()};
}

/// The same teardown without the library: what any batching costs at least. `doomed` is scratch
/// space reserved once by the caller: a vector of N pointers allocated and freed here would be a
/// large chunk whose free makes glibc consolidate every just-freed session (~10 ns each, a third
/// of the floor), outside the timing — while the batch leaves that cost to the next large malloc.
template <class Flavor>
result hand_written_floor(registry& reg, rcubatch::grace_domain<Flavor>& domain, std::vector<session*>& doomed) {
  return by_hand(
      domain,
      [&] {
        doomed.clear();
        for (auto& slot : reg.by_id) {
          doomed.push_back(slot.load(std::memory_order_relaxed));
          slot.store(nullptr, std::memory_order_release);
        }
      },
      [&] {
        for (session* s : doomed) reg.by_hash[reg.hash_slot(s->id)].store(nullptr, std::memory_order_release);
      },
      [&] {
        for (session* s : doomed) destroy_session(s);
      });
}

/// The floor of an intrusive queue: the hand-written teardown through a chain in the objects, in
/// the order rollback_many walks its queue (join order), four passes and no checks.
template <class Flavor>
result chain_floor(registry& reg, rcubatch::grace_domain<Flavor>& domain) {
  session* head = nullptr;
  return by_hand(
      domain,
      [&] {
        session** tail = &head;
        for (auto& slot : reg.by_id) {  // "push": link each
          session* s = slot.load(std::memory_order_relaxed);
          *tail = s;
          tail = &s->chain_next;
        }
        *tail = nullptr;
        for (session* s = head; s != nullptr; s = s->chain_next) reg.by_id[s->id].store(nullptr, std::memory_order_release);
      },
      [&] {
        for (session* s = head; s != nullptr; s = s->chain_next)
          reg.by_hash[reg.hash_slot(s->id)].store(nullptr, std::memory_order_release);
      },
      [&] {
        for (session* s = head; s != nullptr;) {
          session* next = s->chain_next;
          destroy_session(s);
          s = next;
        }
      });
}

/// The time of one large malloc (and its free). A teardown's frees leave the small session chunks
/// in glibc's fastbins; a request past the small-bin range makes malloc consolidate all of them
/// first, so right after a teardown this is the heap consolidation its frees left for whoever
/// allocates next (--heap-probe measures it), and before a populate it gives every way the same
/// heap to start from, whichever way ran before.
double time_large_malloc() {
  constexpr std::size_t kLarge = 256 * 1024;
  const auto t0 = std::chrono::steady_clock::now();
  void* p = std::malloc(kLarge);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  if (p == nullptr) return std::numeric_limits<double>::quiet_NaN();
  asm volatile("" : : "r"(p) : "memory");  // keep the compiler from pairing malloc and free away
  std::free(p);
  return dt.count();
}

enum way { per_object, batched, floor_way, chain_floor_way, kWays };
constexpr const char* kWayNames[kWays] = {"one grace period per object", "rollback_many, one batch",
                                          "by hand, no library (the floor)", "by hand, a chain in the objects"};

struct round_record {
  double seconds[kWays];        // NaN: the way did not run this round
  double heap_probe_s[kWays];   // --heap-probe; NaN otherwise
  double ping_before_ns, ping_after_ns;
  bool disturbed;  // the writer was preempted, or a GP waited past --gp-wait-limit-us, in the batch or the floor
  enum state_t { fast, slow, mixed } state;
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using rcubatch_examples::median_of;  // the project's one median (examples/common/median.hpp)
// The one rule for a disturbed run (examples/common/disturbance.hpp), shared with netsim's seed table.
using rcubatch_examples::involuntary_switches;

struct options {
  std::size_t n = 10'000;
  int rounds = 3;
  int reader_count = 1;
  std::string_view flavor = "memb";
  std::uint64_t seed = 0;
  bool seed_given = false;
  int per_object_every = -1;  // -1: about three times per run
  double slow_threshold_ns = 200;
  double gp_wait_limit_us = rcubatch_examples::kDefaultGpWaitLimitUs;
  bool pin = true;
  bool heap_probe = false;
  bool json = false;
};

/// JSON number or null (NaN).
std::string json_number(double x, int decimals = 3) {
  if (!std::isfinite(x)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

/// The 1-minute load average (other tenants' work shows here), NaN if unknown.
double load_average() {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : kNaN;
}

template <class Flavor>
int run(const options& opt) {
  const std::size_t n = opt.n;
  const double load_before = load_average();
  const placement where = placement::choose(opt.pin);
  registry reg(n);
  reader_stats readers;
  pong_channel pong;
  std::atomic<bool> stop{false};
  std::latch started(opt.reader_count);
  std::vector<std::thread> reader_threads;
  for (int i = 0; i < opt.reader_count; ++i)
    reader_threads.emplace_back([&, i] { reader_loop<Flavor>(i, where, reg, readers, pong, stop, started); });
  started.wait();
  const bool writer_pinned = where.pin && pin_self(where.writer_cpu);

  rcubatch::thread_registration<Flavor> registration;
  rcubatch::offline_scope<Flavor> offline;  // qsbr: the writer is not a reader
  rcubatch::grace_domain<Flavor> domain;

  // With no reader, a helper thread on the reader's CPU answers the probe, started per probe so
  // that no spinning thread runs beside the ways.
  auto probe = [&] {
    if (opt.reader_count > 0) return pong.probe();
    std::thread helper([&] {
      if (where.pin) pin_self(where.reader_cpu(0));
      pong.serve();
    });
    const double ns = pong.probe();
    helper.join();
    return ns;
  };

  const int every = opt.per_object_every >= 0 ? opt.per_object_every : std::max(1, (opt.rounds + 2) / 3);
  std::mt19937_64 rng(opt.seed);
  std::vector<round_record> rounds;
  std::vector<session*> doomed;  // the floor's scratch (see hand_written_floor)
  doomed.reserve(n);
  rcubatch::batch_stats stats;
  bool batches_ok = true;
  std::uint64_t per_object_gps = 0, batch_gps = 0, floor_gps = 0, chain_floor_gps = 0;
  for (int r = 0; r < opt.rounds; ++r) {
    std::vector<way> order{batched, floor_way, chain_floor_way};
    if (every > 0 && r % every == 0) order.push_back(per_object);
    std::shuffle(order.begin(), order.end(), rng);
    round_record rec{};
    std::fill(std::begin(rec.seconds), std::end(rec.seconds), kNaN);
    std::fill(std::begin(rec.heap_probe_s), std::end(rec.heap_probe_s), kNaN);
    rec.ping_before_ns = probe();
    for (way w : order) {
      time_large_malloc();  // untimed: the same heap state before every way (a no-op after --heap-probe)
      reg.populate(/*for_library=*/w != floor_way && w != chain_floor_way);
      const long switches_before = involuntary_switches();
      result res{};
      switch (w) {
        case per_object:
          res = one_grace_period_each(reg, domain);
          per_object_gps = res.grace_periods;
          break;
        case batched:
          res = one_batch(reg, domain, stats);
          if (batches_ok) batch_gps = res.grace_periods;  // reported: the first failing batch's, if any
          batches_ok = batches_ok && res.grace_periods == 2 && stats.objects == n;
          break;
        case floor_way:
          res = hand_written_floor(reg, domain, doomed);
          floor_gps = res.grace_periods;
          break;
        case chain_floor_way:
          res = chain_floor(reg, domain);
          chain_floor_gps = res.grace_periods;
          break;
        case kWays:
          break;
      }
      rec.seconds[w] = res.seconds;
      if (w != per_object)
        rec.disturbed = rec.disturbed || rcubatch_examples::is_disturbed({involuntary_switches() - switches_before,
                                                                          res.gp_wait_seconds},
                                                                         opt.gp_wait_limit_us);
      if (opt.heap_probe) rec.heap_probe_s[w] = time_large_malloc();
    }
    rec.ping_after_ns = probe();
    const bool fast0 = rec.ping_before_ns < opt.slow_threshold_ns, fast1 = rec.ping_after_ns < opt.slow_threshold_ns;
    rec.state = fast0 && fast1 ? round_record::fast : !fast0 && !fast1 ? round_record::slow : round_record::mixed;
    rounds.push_back(rec);
  }

  stop = true;
  for (std::thread& t : reader_threads) t.join();
  const double load_after = load_average();

  // --- figures ---
  auto column = [&](way w, std::optional<round_record::state_t> state = std::nullopt) {
    std::vector<double> v;
    for (const auto& rec : rounds)
      if (!std::isnan(rec.seconds[w]) && (!state || (rec.state == *state && !rec.disturbed))) v.push_back(rec.seconds[w]);
    return v;
  };
  // Per-round ratios of way a to way b in one state (undisturbed rounds), or over every round.
  auto ratios = [&](way a, way b, std::optional<round_record::state_t> state = std::nullopt) {
    std::vector<double> v;
    for (const auto& rec : rounds)
      if (!state || (rec.state == *state && !rec.disturbed)) v.push_back(rec.seconds[a] / rec.seconds[b]);
    return v;
  };
  auto pings = [&](std::optional<round_record::state_t> state) {
    std::vector<double> v;
    for (const auto& rec : rounds)
      if (!state || (rec.state == *state && !rec.disturbed)) {
        v.push_back(rec.ping_before_ns);
        v.push_back(rec.ping_after_ns);
      }
    return v;
  };
  auto heap = [&](way w) {
    std::vector<double> v;
    for (const auto& rec : rounds)
      if (!std::isnan(rec.heap_probe_s[w])) v.push_back(rec.heap_probe_s[w]);
    return v;
  };
  // Undisturbed rounds by state; disturbed ones (any state) counted apart.
  int counts[3] = {0, 0, 0}, disturbed = 0;
  for (const auto& rec : rounds) {
    if (rec.disturbed) ++disturbed;
    else ++counts[rec.state];
  }
  const double ratio_fast = median_of(ratios(batched, floor_way, round_record::fast));
  const double ratio_slow = median_of(ratios(batched, floor_way, round_record::slow));
  const double ratio_all = median_of(ratios(batched, floor_way));
  const double per_obj = 1e9 / static_cast<double>(n);
  // The table: the batch and the floor over the undisturbed rounds (all rounds if none was); one
  // GP per object over every round it ran in (10,000 GPs in 0.1-0.7 s always meet some preemption).
  auto table_column = [&](way w) {
    std::vector<rcubatch_examples::classified_run> v;
    for (const auto& rec : rounds)
      if (!std::isnan(rec.seconds[w])) v.push_back({rec.seconds[w], w != per_object && rec.disturbed});
    return rcubatch_examples::undisturbed_values(v);
  };
  const double med[kWays] = {median_of(table_column(per_object)), median_of(table_column(batched)),
                             median_of(table_column(floor_way)), median_of(table_column(chain_floor_way))};
  const long poisoned = readers.poisoned.load();
  const std::string flavor(Flavor::name);
  std::string reader_cpus;
  for (int i = 0; i < opt.reader_count; ++i)
    reader_cpus += (i ? "," : "") + std::to_string(where.reader_cpu(i));

  if (opt.json) {
    auto state_median = [&](way w, round_record::state_t s) { return json_number(median_of(column(w, s)) * per_obj, 1); };
    std::printf("{\"n\": %zu, \"flavor\": \"%s\", \"readers\": %d, \"seed\": %llu, \"rounds\": %d, ", n, flavor.c_str(),
                opt.reader_count, static_cast<unsigned long long>(opt.seed), opt.rounds);
    std::printf("\"pinned\": %s, \"writer_cpu\": %d, \"reader_cpus\": [%s], \"slow_threshold_ns\": %s, ",
                writer_pinned ? "true" : "false", writer_pinned ? where.writer_cpu : -1, reader_cpus.c_str(),
                json_number(opt.slow_threshold_ns, 1).c_str());
    std::printf("\"rounds_fast\": %d, \"rounds_slow\": %d, \"rounds_mixed\": %d, \"rounds_disturbed\": %d, ",
                counts[round_record::fast], counts[round_record::slow], counts[round_record::mixed], disturbed);
    std::printf("\"gp_wait_limit_us\": %s, ", json_number(opt.gp_wait_limit_us, 0).c_str());
    std::printf("\"ratio_to_floor_fast\": %s, \"ratio_to_floor_slow\": %s, \"ratio_to_floor_all\": %s, ",
                json_number(ratio_fast).c_str(), json_number(ratio_slow).c_str(), json_number(ratio_all).c_str());
    std::printf("\"ratio_chain_floor_to_floor_fast\": %s, \"ratio_chain_floor_to_floor_slow\": %s, "
                "\"ratio_chain_floor_to_floor_all\": %s, ",
                json_number(median_of(ratios(chain_floor_way, floor_way, round_record::fast))).c_str(),
                json_number(median_of(ratios(chain_floor_way, floor_way, round_record::slow))).c_str(),
                json_number(median_of(ratios(chain_floor_way, floor_way))).c_str());
    std::printf("\"ratio_to_chain_floor_fast\": %s, \"ratio_to_chain_floor_slow\": %s, \"ratio_to_chain_floor_all\": %s, ",
                json_number(median_of(ratios(batched, chain_floor_way, round_record::fast))).c_str(),
                json_number(median_of(ratios(batched, chain_floor_way, round_record::slow))).c_str(),
                json_number(median_of(ratios(batched, chain_floor_way))).c_str());
    std::printf("\"pingpong_ns_median_fast\": %s, \"pingpong_ns_median_slow\": %s, \"pingpong_ns_median\": %s, ",
                json_number(median_of(pings(round_record::fast)), 1).c_str(),
                json_number(median_of(pings(round_record::slow)), 1).c_str(),
                json_number(median_of(pings(std::nullopt)), 1).c_str());
    std::printf("\"rollback_ns_per_object_fast\": %s, \"rollback_ns_per_object_slow\": %s, ",
                state_median(batched, round_record::fast).c_str(), state_median(batched, round_record::slow).c_str());
    std::printf("\"floor_ns_per_object_fast\": %s, \"floor_ns_per_object_slow\": %s, ",
                state_median(floor_way, round_record::fast).c_str(), state_median(floor_way, round_record::slow).c_str());
    std::printf("\"chain_floor_ns_per_object_fast\": %s, \"chain_floor_ns_per_object_slow\": %s, ",
                state_median(chain_floor_way, round_record::fast).c_str(),
                state_median(chain_floor_way, round_record::slow).c_str());
    std::printf("\"per_object_gp_ns_per_object\": %s, \"per_object_gp_rounds\": %zu, \"speedup_batched\": %s, ",
                json_number(med[per_object] * per_obj, 1).c_str(), column(per_object).size(),
                json_number(med[per_object] / med[batched], 1).c_str());
    std::printf("\"grace_periods_per_batch\": %llu, \"grace_periods_floor\": %llu, \"grace_periods_per_object_way\": %s, ",
                static_cast<unsigned long long>(batch_gps), static_cast<unsigned long long>(floor_gps),
                column(per_object).empty() ? "null" : std::to_string(per_object_gps).c_str());
    std::printf("\"heap_probe_ms_after_batch\": %s, \"heap_probe_ms_after_floor\": %s, ",
                json_number(median_of(heap(batched)) * 1e3).c_str(), json_number(median_of(heap(floor_way)) * 1e3).c_str());
    std::printf("\"load_average_before\": %s, \"load_average_after\": %s, ", json_number(load_before, 2).c_str(),
                json_number(load_after, 2).c_str());
    std::printf("\"reader_lookups\": %ld, \"reader_saw_destroyed\": %ld}\n", readers.lookups.load(), poisoned);
  } else {
    std::printf("rcubatch teardown demo: %zu objects, flavor %s, %d reader thread(s) looking them up; %d rounds, seed %llu\n",
                n, flavor.c_str(), opt.reader_count, opt.rounds, static_cast<unsigned long long>(opt.seed));
    if (writer_pinned)
      std::printf("writer on CPU %d, %s on CPU %s\n", where.writer_cpu,
                  opt.reader_count ? "reader(s)" : "ping-pong helper",
                  opt.reader_count ? reader_cpus.c_str() : std::to_string(where.reader_cpu(0)).c_str());
    else
      std::printf("threads not pinned (%s)\n", where.pin ? "pthread_setaffinity_np refused" : where.why_not.c_str());
    if (readers.pin_failures.load() != 0) std::printf("%d reader(s) could not be pinned\n", readers.pin_failures.load());
    std::printf("each round: the ways in a fresh random order; one GP per object every %d round(s)\n", every);
    std::printf("table: medians over the rounds shown (the batch and the floor: undisturbed rounds only, if any)\n\n");
    std::printf("| %-31s | %12s | %12s | %-22s | %6s | %13s |\n", "way", "median", "per object", "min..max", "rounds",
                "grace periods");
    std::printf("|---------------------------------|--------------|--------------|------------------------|--------|---------------|\n");
    const std::uint64_t gps[kWays] = {per_object_gps, batch_gps, floor_gps, chain_floor_gps};
    for (int w = 0; w < kWays; ++w) {
      const std::vector<double> v = table_column(static_cast<way>(w));
      if (v.empty()) {
        std::printf("| %-31s | %12s | %12s | %-22s | %6d | %13s |\n", kWayNames[w], "not run", "", "", 0, "");
        continue;
      }
      char range[48];
      std::snprintf(range, sizeof range, "%.3f..%.3f ms", *std::min_element(v.begin(), v.end()) * 1e3,
                    *std::max_element(v.begin(), v.end()) * 1e3);
      std::printf("| %-31s | %9.3f ms | %9.1f ns | %-22s | %6zu | %13llu |\n", kWayNames[w], med[w] * 1e3, med[w] * per_obj,
                  range, v.size(), static_cast<unsigned long long>(gps[w]));
    }
    std::printf("\nrollback_many / floor, median of per-round ratios (state: cross-core ping-pong, slow >= %.0f ns):\n",
                opt.slow_threshold_ns);
    const round_record::state_t states[2] = {round_record::fast, round_record::slow};
    for (auto s : states) {
      const char* name = s == round_record::fast ? "fast" : "slow";
      if (counts[s] == 0) {
        std::printf("  %s state: no rounds\n", name);
        continue;
      }
      std::printf("  %s state: %.2f over %d round(s) (medians: rollback_many %.1f, floor %.1f ns/object), ping-pong %.0f ns\n",
                  name, s == round_record::fast ? ratio_fast : ratio_slow, counts[s],
                  median_of(column(batched, s)) * per_obj, median_of(column(floor_way, s)) * per_obj, median_of(pings(s)));
      std::printf("    the chain floor: %.2f of the floor (%.1f ns/object); rollback_many %.2f of the chain floor\n",
                  median_of(ratios(chain_floor_way, floor_way, s)), median_of(column(chain_floor_way, s)) * per_obj,
                  median_of(ratios(batched, chain_floor_way, s)));
    }
    std::printf("  all %d rounds: %.2f; left out of both states: %d mixed (the state changed within the round), %d disturbed\n"
                "  (the writer was preempted, or a GP waited over %.0f us for a reader, in the batch or the floor)\n",
                opt.rounds, ratio_all, counts[round_record::mixed], disturbed, opt.gp_wait_limit_us);
    if (!column(per_object).empty())
      std::printf("batched is %.0fx faster than one GP per object (%llu grace periods instead of %llu); the floor %.0fx\n",
                  med[per_object] / med[batched], static_cast<unsigned long long>(batch_gps),
                  static_cast<unsigned long long>(per_object_gps), med[per_object] / med[floor_way]);
    if (opt.heap_probe)
      std::printf("first 256 KiB malloc after a teardown (heap consolidation), median: %.3f ms after the batch, %.3f ms after the floor (%.1f / %.1f ns per freed object)\n",
                  median_of(heap(batched)) * 1e3, median_of(heap(floor_way)) * 1e3, median_of(heap(batched)) * per_obj,
                  median_of(heap(floor_way)) * per_obj);
    std::printf("batch phases (ms, last batch):");
    for (std::size_t p = 0; p < rcubatch::kPhases; ++p) {
      const auto ph = static_cast<rcubatch::phase>(p);
      std::printf(" %.*s %.3f", static_cast<int>(rcubatch::to_string(ph).size()), rcubatch::to_string(ph).data(),
                  static_cast<double>(stats.time_of(ph).count()) / 1e6);
    }
    std::printf("\nreaders: %ld lookups, %ld saw a freed object; load average %.2f before, %.2f after\n",
                readers.lookups.load(), poisoned, load_before, load_after);
  }

  if (poisoned != 0) {
    std::fprintf(stderr, "FAIL: a reader saw a freed object\n");
    return 1;
  }
  if (!batches_ok) {
    std::fprintf(stderr, "FAIL: a batch took other than 2 grace periods or %zu objects (last: %llu and %zu)\n", n,
                 static_cast<unsigned long long>(batch_gps), stats.objects);
    return 1;
  }
  return 0;
}

constexpr const char* kUsage =
    "usage: teardown_demo [--objects N] [--rounds K] [--readers R] [--flavor memb|qsbr|mb|bp] [--seed S]\n"
    "                     [--per-object-every M] [--slow-threshold-ns T] [--gp-wait-limit-us L] [--no-pin]\n"
    "                     [--heap-probe] [--json]\n"
    "  --objects N            objects per teardown (default 10000)\n"
    "  --rounds K             rounds; each runs the batch and both floors once, in random order (default 3;\n"
    "                         --repeat is the same option)\n"
    "  --readers R            reader threads (default 1)\n"
    "  --seed S               seed of the per-round order (default: random, printed)\n"
    "  --per-object-every M   run one GP per object in every M-th round (default: ~3 times; 0: never)\n"
    "  --slow-threshold-ns T  ping-pong round trip from which a round counts as slow (default 200)\n"
    "  --gp-wait-limit-us L   a round whose batch or floor waited longer for its two GPs, or whose writer was\n"
    "                         preempted, is disturbed: in neither state's figure (default 1000)\n"
    "  --no-pin               leave the threads where the scheduler puts them\n"
    "  --heap-probe           time the first large malloc after each teardown\n"
    "  --json                 print one JSON object instead of the table\n";

/// Parses a whole unsigned decimal argument; false (and nothing stored) on anything else.
bool parse_u64(const char* s, std::uint64_t max, std::uint64_t& out) {
  if (*s < '0' || *s > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max) return false;
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::uint64_t max, auto& out) {
      std::uint64_t v = 0;
      if (i + 1 >= argc || !parse_u64(argv[i + 1], max, v)) {
        std::fprintf(stderr, "teardown_demo: %.*s needs a whole number from 0 to %llu, got '%s'\n",
                     static_cast<int>(arg.size()), arg.data(), static_cast<unsigned long long>(max),
                     i + 1 < argc ? argv[i + 1] : "(nothing)");
        return false;
      }
      out = static_cast<std::remove_reference_t<decltype(out)>>(v);
      ++i;
      return true;
    };
    bool ok = true;
    if (arg == "--objects") ok = value(10'000'000, opt.n);
    else if (arg == "--rounds" || arg == "--repeat") ok = value(100'000, opt.rounds);
    else if (arg == "--readers") ok = value(256, opt.reader_count);
    else if (arg == "--seed") ok = (opt.seed_given = value(std::numeric_limits<std::uint64_t>::max(), opt.seed));
    else if (arg == "--per-object-every") ok = value(100'000, opt.per_object_every);
    else if (arg == "--slow-threshold-ns") ok = value(1'000'000, opt.slow_threshold_ns);
    else if (arg == "--gp-wait-limit-us") ok = value(10'000'000, opt.gp_wait_limit_us);
    else if (arg == "--no-pin") opt.pin = false;
    else if (arg == "--heap-probe") opt.heap_probe = true;
    else if (arg == "--json") opt.json = true;
    else if (arg == "--flavor") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "teardown_demo: --flavor needs a value (memb, qsbr, mb or bp)\n");
        return 2;
      }
      opt.flavor = argv[++i];
    }
    else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "teardown_demo: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    if (!ok) return 2;
  }
  if (opt.n == 0 || opt.rounds <= 0) {
    std::fprintf(stderr, "teardown_demo: --objects and --rounds must be positive\n");
    return 2;
  }
  if (!opt.seed_given) opt.seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  try {
    return rcubatch::with_flavor(
        opt.flavor, [&]<class F>(std::type_identity<F>) { return run<F>(opt); },
        [](const rcubatch::unknown_flavor& e) { return std::fprintf(stderr, "teardown_demo: %s\n", e.what()), 2; });
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "teardown_demo: out of memory for %zu objects (try a smaller --objects)\n", opt.n);
    return 2;
  }
}
