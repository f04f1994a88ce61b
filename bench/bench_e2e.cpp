// bench/bench_e2e.cpp — issue 25's end-to-end bench: tearing down N objects that live in two RCU
// hash indexes (an integer id and a std::string name), while a reader looks keys up in the
// structure being torn down. The variants, on the same object type with the same keys:
//   registry_hlist  rcubatch::registry<indexed<object, hlist_index(id), hlist_index(name)>>,
//                   torn down with unregister_many (one batch: lock, queue, unlist from both
//                   indexes, ≤ 2 grace periods, destroy);
//   hand_hlist      the same two hlist_index's torn down by hand: lock, unlink every object from
//                   both, one synchronize_rcu, unlock, free all;
//   floor           the same by hand on hlist_floor.hpp (presized cds_hlist_head arrays,
//                   cds_hlist_del_rcu): the least any RCU hash teardown can cost;
//   registry_lfht   the registry on two lfht_index's (rculfhash), for comparison, at N <= 1e4 unless
//                   --lfht-max-n says otherwise (--no-lfht: never).
// Printed per N: ns/object of each variant (the whole teardown: unlinks, grace periods, frees),
// where it went (unlink: the registry's unlist phase; free: its ref_drain, which runs delete; the
// rest; the GP wait per batch), its grace periods per batch (counted: the registry's from batch_stats, the hand-written ones'
// synchronize calls), the reader's lookups/s while the writer is idle (a window between populate
// and the batch) and during the batch, and the medians of the per-round ratios registry/hand,
// registry/floor, hand/floor (and registry_lfht/registry_hlist), over all rounds, over the
// undisturbed ones (no writer preemption, no grace period over kGpWaitLimitS), and split by the
// machine's ping-pong state (fast / slow, as bench_teardown's goal case: both probes of a round,
// before and after it with the reader parked, below / at least kSlowPingPongNs; one probe runs
// between consecutive rounds and serves both).
//
//   rcubatch_bench_e2e [--quick] [--n=100,10000,1000000] [--rounds=R] [--idle-us=U] [--seed=S] [--no-lfht]
//                      [--lfht-max-n=10000] [--no-reader]
//
// Each round allocates N fresh objects per variant (the registry's may be added once), populates
// the variant's structure in one random order and tears it down in another, the same two orders
// for every variant of the round; the variants run in a fresh random order each round. The
// writer is pinned to CPU 0, the reader to CPU 1; the reader does half hits (keys drawn from
// [0, 2N), objects have the even ones), alternating id and name lookups, 8 per read section.
// The idle window (--idle-us, 5 ms) is the writer spinning after populate, before the batch.
// Exits 1 if a registry batch waited for more than 2 grace periods (or none), a hand-written one
// for other than 1, or if any object is left unfreed after its teardown. A plain main, not Google Benchmark, for the reason
// bench_index.cpp gives: the figure is a ratio per round with the variants interleaved inside it.
#include <rcubatch.hpp>
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/index/lfht_index.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_fixture.hpp"  // configure_allocator_for_bench, clock, seconds_since
#include "bench_machine.hpp"
#include "bench_ping_pong.hpp"
#include "hlist_floor.hpp"

namespace rcubatch_bench {
namespace {

using F = rcubatch::default_flavor;

/// One registry entry, with a hook for every structure a variant puts it in (so every variant
/// tears down the same type). Its keys are set at construction and never change.
/// Layout as bench_fixture.hpp's bench_object and for the same reason: registrable's fields,
/// which the registry's batch writes in every phase, fill cache line 0; what readers read (the
/// keys, the hooks) starts on line 1, so a batch writes no line a reader reads except the links
/// it has to change.
struct object : rcubatch::registrable<object> {
  object(std::uint64_t i, const std::string& n) : id(i), name(n) { ++live; }
  ~object() { --live; }
  object(const object&) = delete;
  object& operator=(const object&) = delete;

  alignas(64) std::uint64_t id;
  std::string name;
  rcubatch::hlist_hook<object> id_hl, name_hl;
  rcubatch::lfht_hook<object> id_lf, name_lf;
  floor_hook<object> id_fl, name_fl;

  /// Objects alive. Only the writer thread creates and frees them (the registry's destroy runs
  /// on the thread that calls unregister_many), so no atomic.
  static inline std::size_t live = 0;
};

using hl_id = rcubatch::hlist_index<object, &object::id_hl, rcubatch::key_member<&object::id>, F>;
using hl_name = rcubatch::hlist_index<object, &object::name_hl, rcubatch::key_member<&object::name>, F>;
using lf_id = rcubatch::lfht_index<object, &object::id_lf, rcubatch::key_member<&object::id>, F>;
using lf_name = rcubatch::lfht_index<object, &object::name_lf, rcubatch::key_member<&object::name>, F>;
using fl_id = hlist_floor<object, &object::id_fl, rcubatch::key_member<&object::id>>;
using fl_name = hlist_floor<object, &object::name_fl, rcubatch::key_member<&object::name>>;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "rcubatch_bench_e2e: %s\n", what);
  std::exit(1);
}

/// One synchronize_rcu, as a hand-written teardown calls it; returns its wait in seconds.
/// (The TSan edge is what grace_domain adds to the same call: nothing outside TSan builds.)
double grace_period() {
  const auto t0 = clock::now();
  F::synchronize();
  rcubatch::detail::tsan_grace_period_ended<F>();
  return seconds_since(t0);
}

/// What one teardown did: the grace periods it waited for, and where its time went (seconds):
/// unlinking from both indexes, waiting for the grace periods, freeing; the rest of the teardown's
/// time (the registry's queue, states and hooks; a lock) is the total minus these.
struct teardown_result {
  unsigned gps = 0;
  double unlink_s = 0, gp_wait_s = 0, free_s = 0;
};

/// (1) and (4): the registry; add publishes into both indexes, unregister_many is the teardown.
template <class IdIndex, class NameIndex>
struct registry_variant {
  rcubatch::registry<rcubatch::indexed<object, IdIndex, NameIndex>> reg;

  explicit registry_variant(std::size_t) {}
  void populate(const std::vector<object*>& objs) {
    for (object* o : objs)
      if (!reg.add(*o)) fail("registry::add refused a fresh key");
  }
  teardown_result teardown(std::vector<object*>& doomed) {
    const rcubatch::batch_stats s = reg.unregister_many(doomed);
    using rcubatch::phase;
    const auto secs = [&](std::initializer_list<phase> ps) {
      std::chrono::nanoseconds t{0};
      for (phase p : ps) t += s.time_of(p);
      return std::chrono::duration<double>(t).count();
    };
    return {s.grace_periods, secs({phase::unlist}), secs({phase::grace_period_1, phase::grace_period_2}),
            secs({phase::dispose_retirees, phase::ref_drain, phase::dispose_late_retirees})};  // ref_drain: destroy
  }
  const object* find_id(std::uint64_t k) const { return reg.template index<IdIndex>().find(k); }
  const object* find_name(const std::string& k) const { return reg.template index<NameIndex>().find(k); }
};

/// (2) and (3): the same teardown written by hand on two indexes: under a lock, unlink every
/// object from both, one synchronize_rcu; then, the lock released (as the registry releases it
/// for its destroys), free all.
template <class IdIndex, class NameIndex>
struct by_hand {
  std::mutex lock;
  IdIndex by_id;
  NameIndex by_name;

  /// The floor is presized to n; an hlist_index starts at its default 16 buckets, as the registry's do.
  template <class Index>
  static Index make(std::size_t n) {
    if constexpr (std::is_constructible_v<Index, std::size_t>) return Index(n);
    else return Index();
  }
  explicit by_hand(std::size_t n) : by_id(make<IdIndex>(n)), by_name(make<NameIndex>(n)) {}

  void populate(const std::vector<object*>& objs) {
    std::scoped_lock l(lock);
    for (object* o : objs)
      if (!by_id.add_unique(*o) || !by_name.add_unique(*o)) fail("add_unique refused a fresh key");
  }
  teardown_result teardown(std::vector<object*>& doomed) {
    teardown_result r;
    {
      std::scoped_lock l(lock);
      const auto t0 = clock::now();
      for (object* o : doomed) {
        by_id.unlink(*o);
        by_name.unlink(*o);
      }
      r.unlink_s = seconds_since(t0);
      r.gp_wait_s = grace_period();
      ++r.gps;
    }
    const auto t1 = clock::now();
    for (object* o : doomed) delete o;
    r.free_s = seconds_since(t1);
    return r;
  }
  const object* find_id(std::uint64_t k) const { return by_id.find(k); }
  const object* find_name(const std::string& k) const { return by_name.find(k); }
};

enum variant : int { v_registry_hlist, v_hand_hlist, v_floor, v_registry_lfht, kVariants };
const char* const kNames[kVariants] = {"registry_hlist", "hand_hlist", "floor", "registry_lfht"};
using registry_hlist = registry_variant<hl_id, hl_name>;
using hand_hlist = by_hand<hl_id, hl_name>;
using floor_hlist = by_hand<fl_id, fl_name>;
using registry_lfht = registry_variant<lf_id, lf_name>;

// --- the reader ------------------------------------------------------------------------------------

/// What the reader looks in: published by the writer before it populates a variant, withdrawn
/// (and a grace period waited for) before the variant's structure goes away.
struct target {
  int which = -1;
  const void* tables = nullptr;
  const std::vector<std::string>* names = nullptr;  // names[k]: the name an object of id k has
  std::uint64_t range = 0;                          // keys are drawn from [0, range): 2N
};

struct reader_control {
  alignas(64) std::atomic<const target*> current{nullptr};
  alignas(64) std::atomic<std::uint64_t> lookups{0};  // written by the reader only
  std::atomic<std::uint64_t> hits{0};
  alignas(64) std::atomic<bool> stop{false};
  std::atomic<int> pause{0};   // writer: 1 parks the reader (off its CPU, for the ping-pong probe)
  std::atomic<int> parked{0};  // reader: 1 while parked
  bool running = false;        // a reader thread was started (--no-reader: none)
};

constexpr int kLookupsPerSection = 8;

template <class Tables>
std::uint64_t probe(const Tables& t, const target& tg, std::uint64_t& x) {
  std::uint64_t hits = 0;
  for (int i = 0; i < kLookupsPerSection; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const std::uint64_t k = x % tg.range;
    const object* o = (i & 1) != 0 ? t.find_name((*tg.names)[k]) : t.find_id(k);
    hits += o != nullptr;
  }
  return hits;
}

void reader_loop(reader_control& rc) {
  pin_to_cpu(1);
  rcubatch::thread_registration<F> reg;
  std::uint64_t x = 0x9E3779B97F4A7C15ull, done = 0, hits = 0;
  while (!rc.stop.load(std::memory_order_relaxed)) {
    if (rc.pause.load(std::memory_order_acquire) != 0) {
      rc.parked.store(1, std::memory_order_release);
      while (rc.pause.load(std::memory_order_acquire) != 0) rc.pause.wait(1, std::memory_order_acquire);
      rc.parked.store(0, std::memory_order_release);
      continue;
    }
    {
      rcubatch::read_guard<F> guard;
      const target* tg = rc.current.load(std::memory_order_acquire);
      if (tg != nullptr) {
        switch (tg->which) {
          case v_registry_hlist: hits += probe(*static_cast<const registry_hlist*>(tg->tables), *tg, x); break;
          case v_hand_hlist: hits += probe(*static_cast<const hand_hlist*>(tg->tables), *tg, x); break;
          case v_floor: hits += probe(*static_cast<const floor_hlist*>(tg->tables), *tg, x); break;
          case v_registry_lfht: hits += probe(*static_cast<const registry_lfht*>(tg->tables), *tg, x); break;
          default: break;
        }
        done += kLookupsPerSection;
      }
    }
    rc.lookups.store(done, std::memory_order_relaxed);
    rc.hits.store(hits, std::memory_order_relaxed);
  }
}

/// A probe's time limit: a loaded machine otherwise spends 0.5 s per probe (ping_pong's default).
constexpr double kPingPongMaxS = 0.02;

/// The machine's ping-pong figure (best round, ns), with the reader parked off its CPU and the
/// writer unpinned for the probe (its peer thread inherits the writer's pin otherwise).
double ping_pong_reader_parked(reader_control& rc) {
  if (rc.running) {
    rc.pause.store(1, std::memory_order_release);
    while (rc.parked.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  unpin();
  const double ns = ping_pong(1024, kPingPongMaxS).best_ns;
  pin_to_cpu(0);
  if (rc.running) {
    rc.pause.store(0, std::memory_order_release);
    rc.pause.notify_all();
    while (rc.parked.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
  return ns;
}

// --- one variant, one round ------------------------------------------------------------------------

struct sample {
  double ns_per_obj = 0;
  double unlink_ns = 0, free_ns = 0, other_ns = 0, gp_us = 0;  // per object; the GPs per batch
  double idle_lookups_per_s = 0, batch_lookups_per_s = 0;
  double idle_hit_fraction = 0;
  unsigned gps = 0;
  bool disturbed = false;
};

struct round_plan {
  std::size_t n = 0;
  const std::vector<std::string>* names = nullptr;
  std::vector<std::size_t> add_order, remove_order;
  double idle_s = 0;
};

template <class Tables>
sample run_variant(int which, const round_plan& p, reader_control& rc) {
  const std::size_t n = p.n;
  std::vector<object*> objs(n);
  for (std::size_t i = 0; i < n; ++i) objs[i] = new object(2 * i, (*p.names)[2 * i]);
  sample s;
  {
    Tables tables(n);
    const target tg{which, &tables, p.names, 2 * static_cast<std::uint64_t>(n)};
    rc.current.store(&tg, std::memory_order_release);
    std::vector<object*> in_order(n), doomed(n);
    for (std::size_t k = 0; k < n; ++k) in_order[k] = objs[p.add_order[k]];
    tables.populate(in_order);
    for (std::size_t k = 0; k < n; ++k) doomed[k] = objs[p.remove_order[k]];

    // The writer idle between batches: the reader alone in the populated structure.
    std::uint64_t l0 = rc.lookups.load(std::memory_order_relaxed), h0 = rc.hits.load(std::memory_order_relaxed);
    auto t0 = clock::now();
    while (seconds_since(t0) < p.idle_s) {
    }
    double secs = seconds_since(t0);
    std::uint64_t l1 = rc.lookups.load(std::memory_order_relaxed), h1 = rc.hits.load(std::memory_order_relaxed);
    s.idle_lookups_per_s = static_cast<double>(l1 - l0) / secs;
    s.idle_hit_fraction = l1 > l0 ? static_cast<double>(h1 - h0) / static_cast<double>(l1 - l0) : 0;

    // The batch.
    const long switches = involuntary_switches();
    l0 = rc.lookups.load(std::memory_order_relaxed);
    t0 = clock::now();
    const teardown_result r = tables.teardown(doomed);
    secs = seconds_since(t0);
    l1 = rc.lookups.load(std::memory_order_relaxed);
    s.ns_per_obj = secs * 1e9 / static_cast<double>(n);
    s.unlink_ns = r.unlink_s * 1e9 / static_cast<double>(n);
    s.free_ns = r.free_s * 1e9 / static_cast<double>(n);
    s.other_ns = (secs - r.unlink_s - r.gp_wait_s - r.free_s) * 1e9 / static_cast<double>(n);
    s.gp_us = r.gp_wait_s * 1e6;
    s.batch_lookups_per_s = static_cast<double>(l1 - l0) / secs;
    s.gps = r.gps;
    s.disturbed = involuntary_switches() != switches || r.gp_wait_s > kGpWaitLimitS;

    rc.current.store(nullptr, std::memory_order_release);
    grace_period();  // the reader has left `tables` and `tg`
  }
  if (object::live != 0) fail("objects left unfreed after a teardown");
  return s;
}

sample run_one(int which, const round_plan& p, reader_control& rc) {
  switch (which) {
    case v_registry_hlist: return run_variant<registry_hlist>(which, p, rc);
    case v_hand_hlist: return run_variant<hand_hlist>(which, p, rc);
    case v_floor: return run_variant<floor_hlist>(which, p, rc);
    default: return run_variant<registry_lfht>(which, p, rc);
  }
}

// --- the report --------------------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

enum machine_state : int { s_fast, s_slow, s_mixed };

struct round_result {
  sample s[kVariants];
  double ping_before = 0, ping_after = 0;
  machine_state state = s_mixed;
  bool disturbed = false;
};

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// A row of medians over the rounds that pass `keep`: value(round) for each.
template <class Keep, class Value>
std::pair<double, std::size_t> median_over(const std::vector<round_result>& rounds, Keep keep, Value value) {
  std::vector<double> v;
  for (const round_result& r : rounds)
    if (keep(r)) v.push_back(value(r));
  return {median(v), v.size()};
}

/// A median formatted with `fmt`, or "-" when no round was in the set.
std::string value_or_dash(std::pair<double, std::size_t> m, const char* fmt) {
  if (m.second == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, m.first);
  return buf;
}
/// A ratio column: "median (rounds)", width 14.
std::string cell(std::pair<double, std::size_t> m, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%7s (%4zu)", value_or_dash(m, fmt).c_str(), m.second);
  return buf;
}

bool report(std::size_t n, const std::vector<round_result>& rounds, const std::vector<int>& variants) {
  bool ok = true;
  std::size_t fast = 0, slow = 0, disturbed = 0;
  std::vector<double> pp_fast, pp_slow;
  for (const round_result& r : rounds) {
    fast += r.state == s_fast;
    slow += r.state == s_slow;
    disturbed += r.disturbed;
    if (r.state == s_fast) pp_fast.push_back(std::max(r.ping_before, r.ping_after));
    if (r.state == s_slow) pp_slow.push_back(std::min(r.ping_before, r.ping_after));
  }
  std::printf("\nN = %zu: %zu rounds: %zu fast, %zu slow, %zu mixed (ping-pong medians %s / %s ns); "
              "%zu disturbed (writer preempted, or a GP > %.0f ms)\n",
              n, rounds.size(), fast, slow, rounds.size() - fast - slow,
              value_or_dash({median(pp_fast), pp_fast.size()}, "%.0f").c_str(),
              value_or_dash({median(pp_slow), pp_slow.size()}, "%.0f").c_str(), disturbed, kGpWaitLimitS * 1e3);
  std::printf("%-15s %10s %10s %10s  %-14s %14s %14s %6s\n", "variant", "ns/obj", "fast", "slow", "GPs/batch",
              "idle look/s", "batch look/s", "hit%");
  auto all = [](const round_result&) { return true; };
  auto is_fast = [](const round_result& r) { return r.state == s_fast; };
  auto is_slow = [](const round_result& r) { return r.state == s_slow; };
  for (int v : variants) {
    unsigned gmin = ~0u, gmax = 0;
    double gsum = 0;
    for (const round_result& r : rounds) {
      gmin = std::min(gmin, r.s[v].gps);
      gmax = std::max(gmax, r.s[v].gps);
      gsum += r.s[v].gps;
    }
    const auto ns = [v](const round_result& r) { return r.s[v].ns_per_obj; };
    char gps[32];
    std::snprintf(gps, sizeof gps, "%.2f [%u-%u]", gsum / static_cast<double>(rounds.size()), gmin, gmax);
    std::printf("%-15s %10.1f %10s %10s  %-14s %14.3g %14.3g %6.1f\n", kNames[v], median_over(rounds, all, ns).first,
                value_or_dash(median_over(rounds, is_fast, ns), "%.1f").c_str(),
                value_or_dash(median_over(rounds, is_slow, ns), "%.1f").c_str(), gps,
                median_over(rounds, all, [v](const round_result& r) { return r.s[v].idle_lookups_per_s; }).first,
                median_over(rounds, all, [v](const round_result& r) { return r.s[v].batch_lookups_per_s; }).first,
                100 * median_over(rounds, all, [v](const round_result& r) { return r.s[v].idle_hit_fraction; }).first);
    if (v == v_registry_hlist || v == v_registry_lfht) {
      if (gmax > 2 || gmin < 1) ok = false;
    } else if (gmin != 1 || gmax != 1) {
      ok = false;
    }
  }
  std::printf("%-15s %10s %10s %10s %10s   (medians: ns/object; the GPs' wait per batch)\n", "split", "unlink",
              "free", "other", "GP us");
  for (int v : variants) {
    const auto m = [&](double sample::*f) {
      return median_over(rounds, all, [v, f](const round_result& r) { return r.s[v].*f; }).first;
    };
    std::printf("%-15s %10.1f %10.1f %10.1f %10.1f\n", kNames[v], m(&sample::unlink_ns), m(&sample::free_ns),
                m(&sample::other_ns), m(&sample::gp_us));
  }
  struct ratio_row {
    const char* name;
    int num, den;
  };
  std::vector<ratio_row> rows = {{"registry_hlist / hand_hlist", v_registry_hlist, v_hand_hlist},
                                 {"registry_hlist / floor", v_registry_hlist, v_floor},
                                 {"hand_hlist / floor", v_hand_hlist, v_floor}};
  if (std::find(variants.begin(), variants.end(), v_registry_lfht) != variants.end())
    rows.push_back({"registry_lfht / registry_hlist", v_registry_lfht, v_registry_hlist});
  std::printf("median of per-round ratios (rounds)  %14s %14s %14s %14s\n", "all", "undisturbed", "fast", "slow");
  for (const ratio_row& row : rows) {
    const auto ratio = [&](const round_result& r) { return r.s[row.num].ns_per_obj / r.s[row.den].ns_per_obj; };
    const auto a = median_over(rounds, all, ratio);
    const auto u = median_over(rounds, [](const round_result& r) { return !r.disturbed; }, ratio);
    const auto f = median_over(rounds, is_fast, ratio);
    const auto s = median_over(rounds, is_slow, ratio);
    std::printf("%-36s %s %s %s %s\n", row.name, cell(a, "%7.2f").c_str(), cell(u, "%7.2f").c_str(),
                cell(f, "%7.2f").c_str(), cell(s, "%7.2f").c_str());
  }
  {
    const auto during = [](const round_result& r) {
      return r.s[v_registry_hlist].batch_lookups_per_s / r.s[v_registry_hlist].idle_lookups_per_s;
    };
    const auto reader_ran = [](const round_result& r) { return r.s[v_registry_hlist].idle_lookups_per_s > 0; };
    const auto m = median_over(rounds, reader_ran, during);
    std::printf("reader lookups/s during registry_hlist batches / idle (median of per-round ratios, over the %zu "
                "rounds whose idle window saw lookups): %s\n",
                m.second, value_or_dash(m, "%.2f").c_str());
  }
  return ok;
}

int default_rounds(std::size_t n, bool quick) {
  if (quick) return n <= 100 ? 31 : n <= 10'000 ? 7 : 3;
  return n <= 100 ? 101 : n <= 10'000 ? 31 : n <= 100'000 ? 11 : 3;  // 1e6: ~20 s a round at load 5
}

}  // namespace
}  // namespace rcubatch_bench

int main(int argc, char** argv) {
  using namespace rcubatch_bench;
  std::vector<std::size_t> sizes = {100, 10'000, 1'000'000};
  bool quick = false, lfht = true, with_reader = true;
  int rounds_override = 0;
  double idle_s = 5e-3;
  std::size_t lfht_max_n = 10'000;  // registry_lfht at N <= this: at 1e6 it alone takes ~10 s per round
  unsigned seed = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--quick") == 0) {
      quick = true;
      sizes = {100, 10'000, 100'000};
    } else if (std::strncmp(a, "--n=", 4) == 0) {
      sizes.clear();
      for (const char* p = a + 4; *p != '\0';) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(p, &end, 10);
        if (end == p || v == 0) fail("--n= takes a comma-separated list of sizes > 0");
        sizes.push_back(static_cast<std::size_t>(v));
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') fail("--n= takes a comma-separated list of sizes > 0");
      }
    } else if (std::strncmp(a, "--rounds=", 9) == 0) {
      rounds_override = std::atoi(a + 9);
      if (rounds_override < 1) fail("--rounds= takes a count >= 1");
    } else if (std::strncmp(a, "--idle-us=", 10) == 0) {
      idle_s = std::atof(a + 10) * 1e-6;
      if (!(idle_s > 0)) fail("--idle-us= takes a time > 0");
    } else if (std::strncmp(a, "--seed=", 7) == 0) {
      seed = static_cast<unsigned>(std::strtoul(a + 7, nullptr, 10));
    } else if (std::strcmp(a, "--no-lfht") == 0) {
      lfht = false;
    } else if (std::strncmp(a, "--lfht-max-n=", 13) == 0) {
      lfht_max_n = static_cast<std::size_t>(std::strtoull(a + 13, nullptr, 10));
    } else if (std::strcmp(a, "--no-reader") == 0) {
      with_reader = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--n=N[,N...]] [--rounds=R] [--idle-us=U] [--seed=S] [--no-lfht] [--lfht-max-n=N]\n"
                   "          [--no-reader]\n"
                   "unknown argument: %s\n",
                   argv[0], a);
      return 2;
    }
  }
  configure_allocator_for_bench();
  pin_to_cpu(0);
  rcubatch::thread_registration<F> registered;
  std::printf("rcubatch_bench_e2e: flavor %s, writer CPU 0, %s, idle window %.0f us, seed %u; load average %s\n",
              std::string(F::name).c_str(),
              with_reader ? "reader CPU 1 (busy, half hits, id and name lookups alternating)" : "no reader",
              idle_s * 1e6, seed, load_average().c_str());
  std::printf("ns/obj: one teardown of N objects (unlinks, grace periods, frees) / N, median over rounds "
              "(all, fast, slow); look/s: the reader's lookups per second, median\n");

  reader_control rc;
  std::thread reader;
  if (with_reader) {
    rc.running = true;
    reader = std::thread(reader_loop, std::ref(rc));
  }
  std::mt19937_64 rng(seed);
  bool ok = true;
  for (std::size_t n : sizes) {
    std::vector<std::string> names(2 * n);  // the reader reads them only through a published target
    for (std::size_t k = 0; k < names.size(); ++k) names[k] = "obj-" + std::to_string(k);
    round_plan plan;
    plan.n = n;
    plan.names = &names;
    plan.idle_s = idle_s;
    plan.add_order.resize(n);
    plan.remove_order.resize(n);
    for (std::size_t i = 0; i < n; ++i) plan.add_order[i] = plan.remove_order[i] = i;
    const int rounds = rounds_override > 0 ? rounds_override : default_rounds(n, quick);
    std::vector<int> variants = {v_registry_hlist, v_hand_hlist, v_floor};
    if (lfht && n <= lfht_max_n) variants.push_back(v_registry_lfht);
    std::vector<round_result> results(static_cast<std::size_t>(rounds));
    const auto t0 = clock::now();
    // One ping-pong probe between rounds: a round's "before" is the previous round's "after".
    double ping = ping_pong_reader_parked(rc);
    for (round_result& r : results) {
      std::shuffle(plan.add_order.begin(), plan.add_order.end(), rng);
      std::shuffle(plan.remove_order.begin(), plan.remove_order.end(), rng);
      std::vector<int> order = variants;
      std::shuffle(order.begin(), order.end(), rng);
      r.ping_before = ping;
      for (int v : order) {
        r.s[v] = run_one(v, plan, rc);
        r.disturbed = r.disturbed || r.s[v].disturbed;
      }
      r.ping_after = ping = ping_pong_reader_parked(rc);
      const bool slow_before = r.ping_before >= kSlowPingPongNs, slow_after = r.ping_after >= kSlowPingPongNs;
      r.state = slow_before == slow_after ? (slow_before ? s_slow : s_fast) : s_mixed;
    }
    ok = report(n, results, variants) && ok;
    std::printf("(%.1f s)\n", seconds_since(t0));
    std::fflush(stdout);
  }
  rc.stop.store(true, std::memory_order_relaxed);
  if (reader.joinable()) reader.join();
  std::printf("\nload average at end: %s\n", load_average().c_str());
  if (!ok) {
    std::fprintf(stderr, "rcubatch_bench_e2e: FAILED: a registry batch waited for 0 or more than 2 grace periods, "
                         "or a hand-written teardown for other than 1\n");
    return 1;
  }
  return 0;
}
