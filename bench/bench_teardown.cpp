// bench/bench_teardown.cpp — tearing down N registry objects: rollback_many against two floors
// (the same rollback_many with grace periods stubbed out, "Floor"; the same teardown written by
// hand with no library, "HandFloor": unlink all, GP, unlink all, GP, free all), the legacy
// one-object-at-a-time paths and call_rcu + rcu_barrier, for each liburcu flavor; plus reader
// throughput, writer-lock hold time, ref-drain wake-up latency and the machine's ping-pong figure.
// The peers (libcds, DPDK) live in peer_*.cpp and register through bench_peers.hpp.
//
// Each teardown method is defined once (a *_method struct below) and runs in two harnesses: the
// scaling sweep (BM_Teardown_<Method>/<flavor>/readers:R/N:n, run_teardown_case) and, for
// rollback_many and the hand-written floor, the goal case
// (BM_Goal_RollbackVsHandFloor/memb/readers:1/N:10000), which times one adjacent pair per
// repetition. Medians come from Google Benchmark's repetitions: run with
// --benchmark_repetitions=K --benchmark_enable_random_interleaving=true (bench/run.sh does), and
// bench/plot.py takes every ratio from the JSON. Cases are registered from main() because quick
// and full mode differ in what they register.
//
//   rcubatch_bench --rcubatch_mode=quick|full [any --benchmark_* flag]
#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <rcubatch/counting_flavor.hpp>  // the floor: GPs counted, never waited for

#include "bench_fixture.hpp"
#include "bench_harness.hpp"
#include "bench_machine.hpp"
#include "bench_peers.hpp"
#include "bench_ping_pong.hpp"

namespace rcubatch_bench {
namespace {

void mark_all_registered(std::vector<bench_object*>& objs) {
  for (auto* o : objs) o->mark_registered();
}

// --- the registry's teardown policy, as a real registry would write it --------------------------
struct registry_policy {
  registry* reg;
  void unlist(bench_object& o) noexcept { reg->hash_remove(o); }   // primary index: before GP #1
  void uninit(bench_object& o) noexcept { reg->list_remove(o); }   // secondary: before GP #2
  void destroy(bench_object* o) noexcept { delete o; }
};

/// Where rollback_many's time went, summed over a case's batches (from batch_stats).
struct phase_totals {
  std::array<double, rcubatch::kPhases> ns{};
  double batches = 0;
  double gps = 0;  // grace periods waited for, over all batches
  void add(const rcubatch::batch_stats& s) {
    gps += static_cast<double>(s.grace_periods);
    for (std::size_t i = 0; i < rcubatch::kPhases; ++i) ns[i] += static_cast<double>(s.phase_time[i].count());
    ++batches;
  }
  double of(rcubatch::phase p) const { return ns[static_cast<std::size_t>(p)]; }
  /// Per-batch phase times as counters, in µs: grace-period waits, the ref drain (which runs the
  /// destroy hook) with the retirees' disposals, and the hooks (close, unlist, notify, batch_notify, uninit).
  void report(benchmark::State& st) const {
    if (batches == 0) return;
    using rcubatch::phase;
    st.counters["gp_wait_us"] = (of(phase::grace_period_1) + of(phase::grace_period_2)) / batches / 1e3;
    st.counters["drain_destroy_us"] =
        (of(phase::ref_drain) + of(phase::dispose_retirees) + of(phase::dispose_late_retirees)) / batches / 1e3;
    st.counters["hooks_us"] = (of(phase::close) + of(phase::unlist) + of(phase::notify) + of(phase::batch_notify) +
                               of(phase::uninit) + of(phase::validate)) / batches / 1e3;
  }
};

// --- the teardown methods, one definition each ------------------------------------------------------
// A method is default-constructible (what it holds lives for one repetition), `registers` says
// whether its objects must be mark_registered first, and `operator()(reg, objs)` tears every
// object down (freed, or waited until freed) and returns the GPs it waited for (negative: unknown).

/// rollback_many over the objects (pushed to a queue inside the timed region: dellink is part of
/// it), with GPs from GpFlavor: the real flavor, or the floor's counting fake.
template <class GpFlavor>
struct rollback_many_method {
  static constexpr bool registers = true;
  rcubatch::grace_domain<GpFlavor> domain;
  phase_totals totals;
  double last_gp_wait_s = 0;  // the last batch's two GP waits
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    rcubatch::unreg_queue<bench_object> q;
    for (auto* o : objs) q.push(*o);
    const rcubatch::batch_stats s = rcubatch::rollback_many(q, registry_policy{&reg}, domain);
    totals.add(s);
    last_gp_wait_s = std::chrono::duration<double>(s.time_of(rcubatch::phase::grace_period_1) +
                                                   s.time_of(rcubatch::phase::grace_period_2)).count();
    return s.grace_periods;
  }
  void report(benchmark::State& st) const { totals.report(st); }
};

/// The registry façade (rcubatch::registry) over the same bench registry: a policy whose unlist
/// and uninit are registry_policy's, torn down with unregister_many over the case's vector (so
/// its passes prefetch through the vector: rollback_many.hpp, order_hint). The harness publishes
/// the objects into the bench registry and marks them registered (`registers`): the façade's add
/// would only publish them again. Its GP count is the batch's.
template <class Flavor>
struct registry_method {
  static constexpr bool registers = true;
  struct kit_policy {
    using object_type = bench_object;
    registry* reg = nullptr;  // the case's registry, set before each teardown
    bool publish(bench_object& o) {
      reg->insert(o);
      return true;
    }
    void unlist(bench_object& o) noexcept { reg->hash_remove(o); }
    void uninit(bench_object& o) noexcept { reg->list_remove(o); }
    void destroy(bench_object* o) noexcept { delete o; }
  };
  rcubatch::basic_registry<Flavor, std::mutex, kit_policy> facade;
  phase_totals totals;
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    facade.template policy<kit_policy>().reg = &reg;
    const rcubatch::batch_stats s = facade.unregister_many(objs);
    totals.add(s);
    return s.grace_periods;
  }
  void report(benchmark::State& st) const { totals.report(st); }
};

template <class Flavor>
struct floor_tag {};

/// The same rollback_many with a flavor that counts GPs and waits for none; readers still run the
/// real flavor's read side, so they load the same cache lines.
template <class Flavor>
using stubbed_floor_method = rollback_many_method<rcubatch::counting_flavor<floor_tag<Flavor>>>;

/// The same teardown written by hand with no library: unlink every object from the hash (the
/// primary index), one GP, unlink every object from the list, one GP, free all. Same objects
/// (bench_object, never registered), same registry, same readers as rollback_many's case; no
/// queue, no states, no drain. No batching can cost less, so rollback_many's bookkeeping is its
/// ratio to this.
template <class Flavor>
struct hand_floor_method {
  static constexpr bool registers = false;
  double last_gp_wait_s = 0;
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    for (auto* o : objs) reg.hash_remove(*o);
    const auto gp1 = clock::now();
    Flavor::synchronize();
    const double gp1_s = seconds_since(gp1);
    for (auto* o : objs) reg.list_remove(*o);
    const auto gp2 = clock::now();
    Flavor::synchronize();
    last_gp_wait_s = gp1_s + seconds_since(gp2);
    for (auto* o : objs) delete o;
    return 2.0;
  }
};

/// Each object its own batch: unlink, synchronize_rcu, free (raw liburcu, no library).
template <class Flavor>
struct legacy_1gp_method {
  static constexpr bool registers = false;
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    for (auto* o : objs) {
      reg.hash_remove(*o);
      reg.list_remove(*o);
      Flavor::synchronize();
      delete o;
    }
    return static_cast<double>(objs.size());
  }
};

/// Linux 2.6.32 unregister_netdevice, per object: unlist, GP; notify + uninit, GP; run_todo's GP; free.
template <class Flavor>
struct legacy_3gp_method {
  static constexpr bool registers = false;
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    for (auto* o : objs) {
      reg.hash_remove(*o);
      Flavor::synchronize();
      reg.list_remove(*o);
      Flavor::synchronize();
      Flavor::synchronize();
      delete o;
    }
    return 3.0 * static_cast<double>(objs.size());
  }
};

void free_after_call_rcu(rcu_head* h) noexcept {
  // rcu is bench_object's only rcu_head; recover the object from the member's address.
  auto* base = reinterpret_cast<char*>(h) - reinterpret_cast<std::ptrdiff_t>(&static_cast<bench_object*>(nullptr)->rcu);
  delete reinterpret_cast<bench_object*>(base);
}

/// Unlink, call_rcu each object, then rcu_barrier (time until everything is freed). call_rcu takes
/// the read lock internally, so the writer is registered; under qsbr it is online only while it
/// queues, so the worker's grace periods never wait for it.
template <class Flavor>
struct call_rcu_barrier_method {
  static constexpr bool registers = false;
  rcubatch::thread_registration<Flavor> writer;
  call_rcu_barrier_method() { Flavor::thread_offline(); }
  double operator()(registry& reg, std::vector<bench_object*>& objs) {
    Flavor::thread_online();
    for (auto* o : objs) {
      reg.hash_remove(*o);
      reg.list_remove(*o);
      Flavor::call(&o->rcu, &free_after_call_rcu);
    }
    Flavor::thread_offline();
    Flavor::barrier();
    return -1.0;  // the worker's GPs are not ours to count
  }
};

/// A scaling case: Method over a fresh registry with `readers` readers of Flavor's read side.
template <class Flavor, class Method>
void bm_teardown(benchmark::State& st) {
  Method m;
  run_teardown_case<urcu_protocol<Flavor>>(st, n_of(st), readers_of(st), m,
                                           Method::registers ? &mark_all_registered : nullptr);
  if constexpr (requires { m.report(st); }) m.report(st);
}

// --- the goal case: rollback_many against the hand-written floor, one adjacent pair per repetition -
// A pair is disturbed when the writer was preempted (involuntary_switches) or a GP waited more than
// kGpWaitLimitS for a preempted reader (both in bench_machine.hpp).

/// One iteration (registered with Iterations(1)): one rollback_many batch and one hand-written
/// floor of n fresh objects on one registry and one reader group, in an order drawn per pair (a
/// fixed order puts one side always behind the other, and a predecessor's heap and cache leftovers
/// change a teardown's cost). The ratio needs its two sides next to each other, so they share one
/// case; Google Benchmark's repetitions then give the median of the per-pair ratios (its median
/// aggregate), and bench/plot.py splits them by machine state from the per-repetition rows:
/// `fast`/`slow` (ping-pong below / at least kSlowPingPongNs both before and after the pair, no
/// reader running) and `disturbed` (the writer was preempted, or a side's two GPs waited more than
/// kGpWaitLimitS for a reader preempted inside its read section).
template <class Flavor>
void bm_goal_pair(benchmark::State& st) {
  const std::size_t n = n_of(st);
  const int readers = readers_of(st);
  static std::mt19937_64 rng(20261201);  // fixed: a rerun draws the same orders
  const double ping_before = ping_pong(2048).best_ns;
  rollback_many_method<Flavor> rollback;
  hand_floor_method<Flavor> hand_floor;
  double rollback_s = 0, floor_s = 0;
  bool disturbed = false;
  {
    registry reg(n);
    reader_group<urcu_protocol<Flavor>> rg(reg, readers);
    for (auto _ : st) {
      const bool rollback_first = (rng() & 1) != 0;
      for (int k = 0; k < 2; ++k) {
        const bool is_rollback = (k == 0) == rollback_first;
        std::vector<bench_object*> objs = reg.populate(n);
        if (is_rollback) mark_all_registered(objs);
        const long switches = involuntary_switches();
        const auto t0 = clock::now();
        if (is_rollback) rollback(reg, objs);
        else hand_floor(reg, objs);
        (is_rollback ? rollback_s : floor_s) = seconds_since(t0);
        const double gp_wait_s = is_rollback ? rollback.last_gp_wait_s : hand_floor.last_gp_wait_s;
        disturbed = disturbed || involuntary_switches() != switches || gp_wait_s > kGpWaitLimitS;
      }
      st.SetIterationTime(rollback_s);
    }
  }
  const double ping_after = ping_pong(2048).best_ns;
  const double per_obj = 1e9 / static_cast<double>(n);
  st.counters["ratio_rollback_over_hand_floor"] = rollback_s / floor_s;
  st.counters["rollback_many_ns_per_obj"] = rollback_s * per_obj;
  st.counters["hand_floor_ns_per_obj"] = floor_s * per_obj;
  st.counters["disturbed"] = disturbed;
  st.counters["fast"] = ping_before < kSlowPingPongNs && ping_after < kSlowPingPongNs;
  st.counters["slow"] = ping_before >= kSlowPingPongNs && ping_after >= kSlowPingPongNs;
  st.counters["ping_pong_ns_before"] = ping_before;
  st.counters["ping_pong_ns_after"] = ping_after;
  st.counters["gps_per_batch"] = rollback.totals.batches > 0 ? rollback.totals.gps / rollback.totals.batches : 0.0;
  st.counters["N"] = static_cast<double>(n);
  st.counters["readers"] = readers;
}

// --- reader throughput while batches run back to back -------------------------------------------
template <class Flavor>
void bm_reader_throughput(benchmark::State& st) {
  const bool writer = st.range(0) != 0;
  const int readers = static_cast<int>(st.range(1));
  const auto n = static_cast<std::size_t>(st.range(2)), batch = static_cast<std::size_t>(st.range(3));
  registry reg(n + batch);
  std::vector<bench_object*> stable = reg.populate(n);  // readers look these up
  rollback_many_method<Flavor> rollback;
  double lookups = 0, window_s = 0, batches = 0;
  {
    reader_group<urcu_protocol<Flavor>> rg(reg, readers);
    for (auto _ : st) {
      const auto l0 = rg.lookups();
      const auto t0 = clock::now();
      constexpr double kWindow = 0.2;
      if (writer) {
        while (seconds_since(t0) < kWindow) {
          std::vector<bench_object*> doomed = reg.populate(batch, /*publish=*/false);
          mark_all_registered(doomed);
          rollback(reg, doomed);
          ++batches;
        }
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(kWindow));
      }
      const double s = seconds_since(t0);
      st.SetIterationTime(s);
      window_s += s;
      lookups += static_cast<double>(rg.lookups() - l0);
    }
  }
  for (auto* o : stable) delete o;  // never registered: plain delete is allowed
  st.counters["lookups_per_s_per_reader"] = lookups / window_s / readers;
  st.counters["batches_per_s"] = batches / window_s;
  st.counters["N"] = static_cast<double>(n);
  st.counters["batch"] = static_cast<double>(batch);
  st.counters["readers"] = readers;
}

// --- writer-lock hold time: default vs unlock_during_waits --------------------------------------
template <class Flavor>
void bm_lock_hold(benchmark::State& st) {
  const bool unlock_during_waits = st.range(0) != 0;
  const int readers = static_cast<int>(st.range(1));
  const auto n = static_cast<std::size_t>(st.range(2));
  rcubatch::grace_domain<Flavor> domain;
  std::mutex writer_mutex;
  double hold_ns = 0, elapsed_ns = 0;
  run_teardown_case<urcu_protocol<Flavor>>(st, n, readers, [&](registry& reg, std::vector<bench_object*>& objs) {
    writer_mutex.lock();
    rcubatch::unreg_queue<bench_object> q;
    for (auto* o : objs) q.push(*o);
    const rcubatch::batch_stats s =
        unlock_during_waits
            ? rcubatch::rollback_many(q, registry_policy{&reg}, domain, rcubatch::unlock_during_waits(writer_mutex))
            : rcubatch::rollback_many(q, registry_policy{&reg}, domain);
    writer_mutex.unlock();
    hold_ns += static_cast<double>(s.lock_hold.count());
    elapsed_ns += static_cast<double>(s.elapsed.count());
    return static_cast<double>(s.grace_periods);  // run_teardown_case reports gps_per_batch
  }, &mark_all_registered);
  const double it = static_cast<double>(st.iterations());
  st.counters["lock_hold_us"] = hold_ns / it / 1e3;
  st.counters["batch_elapsed_us"] = elapsed_ns / it / 1e3;
  st.counters["lock_hold_fraction"] = elapsed_ns > 0 ? hold_ns / elapsed_ns : 0.0;
}

// --- ref drain: last put -> destroyed ------------------------------------------------------------
struct timed_destroy_policy {
  registry* reg;
  std::size_t* remaining;
  clock::time_point* last_destroyed;
  void unlist(bench_object& o) noexcept { reg->hash_remove(o); }
  void uninit(bench_object& o) noexcept { reg->list_remove(o); }
  void destroy(bench_object* o) noexcept {
    delete o;
    if (--*remaining == 0) *last_destroyed = clock::now();
  }
};

template <class Flavor>
void bm_ref_drain(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  registry reg(n);
  rcubatch::grace_domain<Flavor> domain;
  double total_s = 0, longest_wait_s = 0;
  for (auto _ : st) {
    std::vector<bench_object*> objs = reg.populate(n);
    mark_all_registered(objs);
    for (auto* o : objs) o->refs().hold();
    std::size_t remaining = n;
    clock::time_point destroyed_at{}, last_put_at{};
    // The holder sees the drain start (the first-queued object is marked unregistered last), then
    // drops every reference; the timestamp is taken right before the last put.
    std::thread holder([&] {
      while (objs.front()->state() != rcubatch::reg_state::unregistered) {
      }
      for (std::size_t i = n; i-- > 1;) objs[i]->refs().put();
      last_put_at = clock::now();
      objs[0]->refs().put();
    });
    rcubatch::unreg_queue<bench_object> q;
    for (auto* o : objs) q.push(*o);
    const auto s = rcubatch::rollback_many(q, timed_destroy_policy{&reg, &remaining, &destroyed_at}, domain);
    holder.join();
    const double lat = std::chrono::duration<double>(destroyed_at - last_put_at).count();
    st.SetIterationTime(lat);
    total_s += lat;
    longest_wait_s += std::chrono::duration<double>(s.longest_drain_wait).count();
  }
  const double it = static_cast<double>(st.iterations());
  st.counters["wake_latency_us"] = total_s / it * 1e6;
  st.counters["longest_drain_wait_us"] = longest_wait_s / it * 1e6;
  st.counters["N"] = static_cast<double>(n);
}

void bm_ping_pong(benchmark::State& st) {
  double best = 1e300, mean_sum = 0;
  for (auto _ : st) {
    const ping_pong_result r = ping_pong(100'000);
    st.SetIterationTime(r.best_ns * 1e-9);
    best = std::min(best, r.best_ns);
    mean_sum += r.mean_ns;
  }
  st.counters["roundtrip_ns"] = best;
  st.counters["roundtrip_ns_mean"] = mean_sum / static_cast<double>(st.iterations());
}

// --- registration --------------------------------------------------------------------------------
/// Largest N a legacy case runs at: one memb/bp GP with a busy reader costs ~17 µs here, so
/// legacy-3GP at 1e6 would take ~57 s per iteration (shared/DESIGN.md). qsbr/mb GPs cost <1 µs
/// on an idle machine, but with two readers on two vCPUs (or other tenants' load) any flavor's GP
/// waits for a reader to be scheduled: 14-130 µs measured here, so two-reader cases stop at 1e4.
std::size_t legacy_cap(std::string_view flavor, int readers, bool full) {
  if (!full) return (flavor == "memb" || flavor == "bp") ? 10'000 : 100'000;
  if (readers >= 2) return 10'000;
  if (readers == 0 && (flavor == "qsbr" || flavor == "mb")) return 1'000'000;
  return 100'000;
}

/// Every method's scaling sweep for one flavor.
template <class Flavor>
void add_flavor(const run_config& cfg) {
  const std::string f(Flavor::name);
  auto capped = [&](int readers) { return legacy_cap(Flavor::name, readers, cfg.full); };
  auto uncapped = [](int) { return SIZE_MAX; };
  register_sweep(cfg, "BM_Teardown_RollbackMany/" + f, &bm_teardown<Flavor, rollback_many_method<Flavor>>);
  register_sweep(cfg, "BM_Teardown_Registry/" + f, &bm_teardown<Flavor, registry_method<Flavor>>);
  register_sweep(cfg, "BM_Teardown_Floor/" + f, &bm_teardown<Flavor, stubbed_floor_method<Flavor>>);
  register_sweep(cfg, "BM_Teardown_HandFloor/" + f, &bm_teardown<Flavor, hand_floor_method<Flavor>>);
  register_sweep(cfg, "BM_Teardown_Legacy1GP/" + f, &bm_teardown<Flavor, legacy_1gp_method<Flavor>>, capped, true);
  register_sweep(cfg, "BM_Teardown_Legacy3GP/" + f, &bm_teardown<Flavor, legacy_3gp_method<Flavor>>, capped, true);
  register_sweep(cfg, "BM_Teardown_CallRcuBarrier/" + f, &bm_teardown<Flavor, call_rcu_barrier_method<Flavor>>,
                 uncapped, true);
}

template <class Flavor>
void add_extras(const run_config& cfg) {
  const std::string f(Flavor::name);
  benchmark::RegisterBenchmark(("BM_Readers_Throughput/" + f).c_str(), &bm_reader_throughput<Flavor>)
      ->ArgsProduct({{0, 1}, {1}, {10'000}, {1'000}})
      ->ArgNames({"writer", "readers", "N", "batch"})
      ->Iterations(cfg.full ? 10 : 3)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  for (std::int64_t n : {100, 10'000}) {
    benchmark::RegisterBenchmark(("BM_WriterLock_Hold/" + f).c_str(), &bm_lock_hold<Flavor>)
        ->ArgsProduct({{0, 1}, {1}, {n}})
        ->ArgNames({"unlock_during_waits", "readers", "N"})
        ->Iterations(iterations_for(static_cast<std::size_t>(n), cfg.full, 100))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark(("BM_RefDrain_WakeLatency/" + f).c_str(), &bm_ref_drain<Flavor>)
      ->ArgsProduct({{1, 1'000}})
      ->ArgNames({"N"})
      ->Iterations(cfg.full ? 200 : 50)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

void add_ping_pong(const char* when) {
  benchmark::RegisterBenchmark((std::string("BM_System_PingPong/") + when).c_str(), bm_ping_pong)
      ->Iterations(5)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
}

void register_all(const run_config& cfg) {
  add_ping_pong("first");
  // The goal case: its repetitions are its pairs, whatever --benchmark_repetitions says; the
  // console shows its aggregates (the median is the figure), the JSON every pair.
  benchmark::RegisterBenchmark("BM_Goal_RollbackVsHandFloor/memb", &bm_goal_pair<rcubatch::flavor::memb>)
      ->Args({1, 10'000})
      ->ArgNames({"readers", "N"})
      ->Iterations(1)
      ->Repetitions(cfg.full ? 96 : 48)
      ->DisplayAggregatesOnly(true)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  // Scaling: every flavor, every N; the peers (their own read sides). The goal set's other
  // ratios are these cases at memb, 1 reader, N = 1e4 (bench/plot.py).
  add_flavor<rcubatch::flavor::memb>(cfg);
#ifdef RCUBATCH_BENCH_HAVE_LIBCDS
  register_libcds_benchmarks(cfg);
#endif
#ifdef RCUBATCH_BENCH_HAVE_DPDK
  register_dpdk_benchmarks(cfg);
#endif
  add_ping_pong("after_memb");
  add_flavor<rcubatch::flavor::qsbr>(cfg);
  add_flavor<rcubatch::flavor::mb>(cfg);
  add_flavor<rcubatch::flavor::bp>(cfg);
  // Reader throughput, lock hold, ref-drain latency.
  add_extras<rcubatch::flavor::memb>(cfg);
  if (cfg.full) add_extras<rcubatch::flavor::qsbr>(cfg);
  add_ping_pong("last");
}

}  // namespace
}  // namespace rcubatch_bench

int main(int argc, char** argv) {
  using namespace rcubatch_bench;
  run_config cfg;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rcubatch_mode=full") == 0) cfg.full = true;
    else if (std::strcmp(argv[i], "--rcubatch_mode=quick") == 0) cfg.full = false;
    else args.push_back(argv[i]);
  }
  cfg.sizes = {100, 1'000, 10'000, 100'000, 1'000'000};
  cfg.reader_counts = {1, 0, 2};

  configure_allocator_for_bench();
#ifdef RCUBATCH_BENCH_HAVE_DPDK
  // EAL pins the calling thread and must run before other threads exist.
  const std::string dpdk_error = dpdk_init();
  benchmark::AddCustomContext("dpdk_eal", dpdk_error.empty() ? "ok" : dpdk_error);
#else
  benchmark::AddCustomContext("dpdk_eal", "not built (libdpdk-dev not found)");
#endif
#ifndef RCUBATCH_BENCH_HAVE_LIBCDS
  benchmark::AddCustomContext("libcds", "not built (libcds-dev not found)");
#endif
  benchmark::AddCustomContext("rcubatch_mode", cfg.full ? "full" : "quick");
  const ping_pong_result pp = ping_pong();
  benchmark::AddCustomContext("ping_pong_ns_at_start", std::to_string(pp.best_ns));
  benchmark::AddCustomContext("ping_pong_ns_mean_at_start", std::to_string(pp.mean_ns));

  register_all(cfg);
  int gb_argc = static_cast<int>(args.size());
  benchmark::Initialize(&gb_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const ping_pong_result end = ping_pong();
  std::printf("ping-pong at end: %.0f ns best round, %.0f ns mean\n", end.best_ns, end.mean_ns);
  return 0;
}
