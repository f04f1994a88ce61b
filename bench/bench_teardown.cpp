// bench/bench_teardown.cpp — tearing down N registry objects: rollback_many against two floors
// (the same rollback_many with grace periods stubbed out, "Floor"; the same teardown written by
// hand with no library, "HandFloor": unlink all, GP, unlink all, GP, free all), the legacy
// one-object-at-a-time paths and call_rcu + rcu_barrier, for each
// liburcu flavor; plus reader throughput, writer-lock hold time, ref-drain wake-up latency and the
// machine's ping-pong figure. The peers (libcds, DPDK) live in peer_*.cpp and register through
// bench_registry.hpp. Every case is registered from main() so quick and full mode differ only in
// what they register; names are BM_<Subject>_<Scenario>/<flavor>/.../N:<n>.
//
//   bench_teardown --rcubatch_mode=quick|full [any --benchmark_* flag]
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "bench_registry.hpp"

namespace rcubatch_bench {
namespace {

/// The same teardown written by hand with no library: unlink every object from the hash (the
/// primary index), one GP, unlink every object from the list, one GP, free all. Same objects
/// (bench_object, never registered), same registry, same readers as rollback_many's case; no
/// queue, no states, no drain. No batching can cost less, so rollback_many's bookkeeping is its
/// ratio to this. Returns the GPs it waited for.
/// `gp_wait_s`, if given, receives the time spent in the two GP waits.
template <class Flavor>
double hand_written_floor(registry& reg, std::vector<bench_object*>& objs, double* gp_wait_s = nullptr) {
  for (auto* o : objs) reg.hash_remove(*o);
  const auto gp1 = clock::now();
  Flavor::synchronize();
  const double gp1_s = seconds_since(gp1);
  for (auto* o : objs) reg.list_remove(*o);
  const auto gp2 = clock::now();
  Flavor::synchronize();
  const double gp2_s = seconds_since(gp2);
  for (auto* o : objs) delete o;
  if (gp_wait_s) *gp_wait_s = gp1_s + gp2_s;
  return 2.0;
}

/// Involuntary context switches of the calling thread so far (a rise over a timed teardown: the
/// writer was preempted, and the time includes another tenant's slice).
inline long involuntary_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nivcsw;
}

// --- the registry's teardown policy, as a real registry would write it --------------------------
struct registry_policy {
  registry* reg;
  void unlist(bench_object& o) noexcept { reg->hash_remove(o); }   // primary index: before GP #1
  void uninit(bench_object& o) noexcept { reg->list_remove(o); }   // secondary: before GP #2
  void destroy(bench_object* o) noexcept { delete o; }
};

template <class Flavor>
struct floor_tag {};

void free_after_call_rcu(rcu_head* h) noexcept {
  // rcu is bench_object's only rcu_head; recover the object from the member's address.
  auto* base = reinterpret_cast<char*>(h) - reinterpret_cast<std::ptrdiff_t>(&static_cast<bench_object*>(nullptr)->rcu);
  delete reinterpret_cast<bench_object*>(base);
}

void mark_all_registered(std::vector<bench_object*>& objs) {
  for (auto* o : objs) o->mark_registered();
}

/// Where rollback_many's time went, summed over a case's batches (from batch_stats).
struct phase_totals {
  std::array<double, rcubatch::kPhases> ns{};
  double batches = 0;
  void add(const rcubatch::batch_stats& s) {
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

/// rollback_many over `objs` (pushed to a queue inside the timed region: dellink is part of it).
template <class Flavor>
double rollback_all(rcubatch::grace_domain<Flavor>& domain, registry& reg, std::vector<bench_object*>& objs,
                    phase_totals* totals = nullptr) {
  rcubatch::unreg_queue<bench_object> q;
  for (auto* o : objs) q.push(*o);
  const rcubatch::batch_stats s = rcubatch::rollback_many(q, registry_policy{&reg}, domain);
  if (totals) totals->add(s);
  return s.grace_periods;
}

enum class method { rollback_many, floor, hand_floor, legacy_1gp, legacy_3gp, call_rcu_barrier };

constexpr const char* method_name(method m) {
  switch (m) {
    case method::rollback_many: return "RollbackMany";
    case method::floor: return "Floor";
    case method::hand_floor: return "HandFloor";
    case method::legacy_1gp: return "Legacy1GP";
    case method::legacy_3gp: return "Legacy3GP";
    case method::call_rcu_barrier: return "CallRcuBarrier";
  }
  return "?";
}

/// rollback_many over the fixture, with GPs from DomainFlavor (the real flavor, or the floor's fake).
template <class Protocol, class DomainFlavor>
void bm_rollback_many(benchmark::State& st, std::size_t n, int readers) {
  rcubatch::grace_domain<DomainFlavor> domain;
  phase_totals totals;
  run_teardown_case<Protocol>(st, n, readers, [&](registry& reg, std::vector<bench_object*>& objs) {
    return rollback_all(domain, reg, objs, &totals);
  }, &mark_all_registered);
  totals.report(st);
}

template <class Flavor>
void bm_teardown(benchmark::State& st, method m, std::size_t n, int readers) {
  using protocol = urcu_protocol<Flavor>;
  switch (m) {
    case method::rollback_many:
      bm_rollback_many<protocol, Flavor>(st, n, readers);
      break;
    case method::floor:
      // The same rollback_many with a flavor that counts GPs and waits for none; readers still run
      // the real flavor's read side, so they load the same cache lines.
      bm_rollback_many<protocol, rcubatch::counting_flavor<floor_tag<Flavor>>>(st, n, readers);
      break;
    case method::hand_floor:
      run_teardown_case<protocol>(st, n, readers, [](registry& reg, std::vector<bench_object*>& objs) {
        return hand_written_floor<Flavor>(reg, objs);
      });
      break;
    case method::legacy_1gp:
      // Each object its own batch: unlink, synchronize_rcu, free (raw liburcu, no library).
      run_teardown_case<protocol>(st, n, readers, [](registry& reg, std::vector<bench_object*>& objs) {
        for (auto* o : objs) {
          reg.hash_remove(*o);
          reg.list_remove(*o);
          Flavor::synchronize();
          delete o;
        }
        return static_cast<double>(objs.size());
      });
      break;
    case method::legacy_3gp:
      // Linux 2.6.32 unregister_netdevice, per object: unlist, GP; notify + uninit, GP;
      // run_todo's GP; free.
      run_teardown_case<protocol>(st, n, readers, [](registry& reg, std::vector<bench_object*>& objs) {
        for (auto* o : objs) {
          reg.hash_remove(*o);
          Flavor::synchronize();
          reg.list_remove(*o);
          Flavor::synchronize();
          Flavor::synchronize();
          delete o;
        }
        return 3.0 * static_cast<double>(objs.size());
      });
      break;
    case method::call_rcu_barrier: {
      // call_rcu takes the read lock internally: the writer must be registered. Under qsbr it is
      // online only while it queues, so the worker's grace periods never wait for it.
      rcubatch::thread_registration<Flavor> writer;
      Flavor::thread_offline();
      run_teardown_case<protocol>(st, n, readers, [](registry& reg, std::vector<bench_object*>& objs) {
        Flavor::thread_online();
        for (auto* o : objs) {
          reg.hash_remove(*o);
          reg.list_remove(*o);
          Flavor::call(&o->rcu, &free_after_call_rcu);
        }
        Flavor::thread_offline();
        Flavor::barrier();  // time until everything is freed
        return -1.0;        // the worker's GPs are not ours to count
      });
      break;
    }
  }
}

// --- rollback_many and its floor, alternating iteration by iteration -----------------------------
// The separate cases above run tens of seconds apart; on this VM the cross-core cost (and the
// other tenants' load) can change in between. This case alternates one rollback_many batch and one
// floor batch on the same registry and readers, so the ratio compares like with like. Manual time
// is the rollback_many batch; the floor's figures and the ratio are counters.
template <class Flavor>
void bm_paired_floor(benchmark::State& st, std::size_t n, int readers) {
  using fake = rcubatch::counting_flavor<floor_tag<Flavor>>;
  registry reg(n);
  rcubatch::grace_domain<Flavor> real_domain;
  rcubatch::grace_domain<fake> fake_domain;
  std::vector<double> real_s, floor_s;
  {
    reader_group<urcu_protocol<Flavor>> rg(reg, readers);
    for (auto _ : st) {
      for (int which = 0; which < 2; ++which) {
        std::vector<bench_object*> objs = reg.populate(n);
        mark_all_registered(objs);
        const auto t0 = clock::now();
        if (which == 0) rollback_all(real_domain, reg, objs);
        else rollback_all(fake_domain, reg, objs);
        (which == 0 ? real_s : floor_s).push_back(seconds_since(t0));
      }
      st.SetIterationTime(real_s.back());
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  const double per_obj = 1e9 / static_cast<double>(n);
  st.counters["rollback_ns_per_obj_median"] = median_of(real_s) * per_obj;
  st.counters["floor_ns_per_obj_median"] = median_of(floor_s) * per_obj;
  st.counters["ratio_median"] = median_of(real_s) / median_of(floor_s);
  st.counters["ratio_mean"] = mean(real_s) / mean(floor_s);
  st.counters["N"] = static_cast<double>(n);
  st.counters["readers"] = readers;
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
}

// --- rollback_many against the hand-written floor, batch by batch -----------------------------------
/// Seconds of each side of every pair, each pair's ratio rollback_many / hand floor, and whether
/// the pair was disturbed: the writer preempted (an involuntary context switch), or either side's
/// two GPs waiting more than kGpWaitLimitS for a reader (one preempted inside its read section).
struct paired_samples {
  std::vector<double> rollback_s, hand_floor_s, ratio;
  std::vector<bool> disturbed;
};

/// Two memb GPs with one busy reader take ~20-40 µs here; a preempted reader stretches them to ms.
constexpr double kGpWaitLimitS = 1e-3;

/// `pairs` pairs of teardowns of n fresh objects on one registry and one reader group: one
/// rollback_many batch and one hand-written floor each, their order within the pair drawn from
/// `rng`. A fixed order puts one side always behind the other, and a predecessor's heap and cache
/// leftovers change a teardown's cost. (Written here rather than with Google Benchmark's
/// --benchmark_enable_random_interleaving: that shuffles whole repetitions of separate cases,
/// each with its own readers and tenths of a second apart, while this ratio needs its two sides
/// next to each other; the benchmark's repetitions then aggregate the ratio across runs.)
template <class Flavor>
paired_samples sample_rollback_vs_hand_floor(rcubatch::grace_domain<Flavor>& domain, std::size_t n, int readers,
                                             int pairs, std::mt19937_64& rng) {
  paired_samples out;
  registry reg(n);
  reader_group<urcu_protocol<Flavor>> rg(reg, readers);
  for (int p = 0; p < pairs; ++p) {
    const bool rollback_first = (rng() & 1) != 0;
    double rollback_s = 0, floor_s = 0;
    bool disturbed = false;
    for (int k = 0; k < 2; ++k) {
      const bool rollback = (k == 0) == rollback_first;
      std::vector<bench_object*> objs = reg.populate(n);
      if (rollback) mark_all_registered(objs);
      const long switches = involuntary_switches();
      double gp_wait_s = 0;
      const auto t0 = clock::now();
      if (rollback) {
        rcubatch::unreg_queue<bench_object> q;
        for (auto* o : objs) q.push(*o);
        const rcubatch::batch_stats bs = rcubatch::rollback_many(q, registry_policy{&reg}, domain);
        gp_wait_s = std::chrono::duration<double>(bs.time_of(rcubatch::phase::grace_period_1) +
                                                  bs.time_of(rcubatch::phase::grace_period_2)).count();
      } else {
        hand_written_floor<Flavor>(reg, objs, &gp_wait_s);
      }
      (rollback ? rollback_s : floor_s) = seconds_since(t0);
      disturbed = disturbed || involuntary_switches() != switches || gp_wait_s > kGpWaitLimitS;
    }
    out.rollback_s.push_back(rollback_s);
    out.hand_floor_s.push_back(floor_s);
    out.ratio.push_back(rollback_s / floor_s);
    out.disturbed.push_back(disturbed);
  }
  return out;
}

/// Cross-core ping-pong (best batch of 64 round trips, ns) from which a round counts as slow: this
/// VM flips between ~60 and ~450 ns (teardown_demo uses the same threshold).
constexpr double kSlowPingPongNs = 200;

// --- the goal set, interleaved ---------------------------------------------------------------------
// The machine this runs on is shared: other tenants' load comes and goes within seconds, and a
// grace period that finds a reader preempted inside its read-side section waits a scheduler
// slice. Separate cases measured a minute apart can then disagree by 4x. This case measures every
// method of the goal set in rounds — each round runs a few teardowns of each method, its
// own readers started before and stopped after — so every method sees the same mix of machine
// states, and the ratios are taken between medians over all rounds.
template <class Flavor>
void bm_goal_interleaved(benchmark::State& st, std::size_t n, int readers) {
  using protocol = urcu_protocol<Flavor>;
  using fake = rcubatch::counting_flavor<floor_tag<Flavor>>;
  rcubatch::grace_domain<Flavor> real_domain;
  rcubatch::grace_domain<fake> fake_domain;
  enum { rollback, floor_, hand_floor, legacy1, legacy3, callrcu, libcds, dpdk, kCount };
  constexpr const char* names[kCount] = {"rollback_many", "floor", "hand_floor", "legacy_1gp", "legacy_3gp",
                                         "call_rcu_barrier", "libcds", "dpdk"};
  std::vector<double> samples[kCount];
  auto add = [&](int m, const std::vector<double>& v) { samples[m].insert(samples[m].end(), v.begin(), v.end()); };
  // rollback_many / hand floor per pair, by the machine's state around the round's pairs.
  std::vector<double> pair_ratios, undisturbed_ratios, fast_ratios, slow_ratios, undisturbed_rollback_s,
      undisturbed_floor_s;
  int rounds_fast = 0, rounds_slow = 0, rounds_mixed = 0, pairs_disturbed = 0;
  std::mt19937_64 rng(20261201);  // fixed: a rerun draws the same orders
  for (auto _ : st) {
    const auto t0 = clock::now();
    // The probes run while no reader exists (the sampler starts and stops its own readers).
    const bool fast_before = ping_pong(2048).best_ns < kSlowPingPongNs;
    const paired_samples pairs = sample_rollback_vs_hand_floor(real_domain, n, readers, 6, rng);
    const bool fast_after = ping_pong(2048).best_ns < kSlowPingPongNs;
    add(rollback, pairs.rollback_s);
    add(hand_floor, pairs.hand_floor_s);
    pair_ratios.insert(pair_ratios.end(), pairs.ratio.begin(), pairs.ratio.end());
    const bool fast = fast_before && fast_after, slow = !fast_before && !fast_after;
    rounds_fast += fast;
    rounds_slow += slow;
    rounds_mixed += !fast && !slow;
    for (std::size_t i = 0; i < pairs.ratio.size(); ++i) {
      if (pairs.disturbed[i]) {
        ++pairs_disturbed;
        continue;
      }
      undisturbed_ratios.push_back(pairs.ratio[i]);
      undisturbed_rollback_s.push_back(pairs.rollback_s[i]);
      undisturbed_floor_s.push_back(pairs.hand_floor_s[i]);
      if (fast) fast_ratios.push_back(pairs.ratio[i]);
      if (slow) slow_ratios.push_back(pairs.ratio[i]);
    }
    add(floor_, sample_teardown<protocol>(n, readers, 6, [&](registry& reg, std::vector<bench_object*>& objs) {
      return rollback_all(fake_domain, reg, objs);
    }, &mark_all_registered));
    add(legacy1, sample_teardown<protocol>(n, readers, 1, [](registry& reg, std::vector<bench_object*>& objs) {
      for (auto* o : objs) {
        reg.hash_remove(*o);
        reg.list_remove(*o);
        Flavor::synchronize();
        delete o;
      }
      return 0.0;
    }));
    add(legacy3, sample_teardown<protocol>(n, readers, 1, [](registry& reg, std::vector<bench_object*>& objs) {
      for (auto* o : objs) {
        reg.hash_remove(*o);
        Flavor::synchronize();
        reg.list_remove(*o);
        Flavor::synchronize();
        Flavor::synchronize();
        delete o;
      }
      return 0.0;
    }));
    {
      rcubatch::thread_registration<Flavor> writer;
      Flavor::thread_offline();
      add(callrcu, sample_teardown<protocol>(n, readers, 3, [](registry& reg, std::vector<bench_object*>& objs) {
        Flavor::thread_online();
        for (auto* o : objs) {
          reg.hash_remove(*o);
          reg.list_remove(*o);
          Flavor::call(&o->rcu, &free_after_call_rcu);
        }
        Flavor::thread_offline();
        Flavor::barrier();
        return 0.0;
      }));
    }
#ifdef RCUBATCH_BENCH_HAVE_LIBCDS
    add(libcds, libcds_goal_samples(n, readers, 6));
#endif
#ifdef RCUBATCH_BENCH_HAVE_DPDK
    add(dpdk, dpdk_goal_samples(n, readers, 6));
#endif
    st.SetIterationTime(seconds_since(t0));
  }
  double med[kCount] = {};
  for (int m = 0; m < kCount; ++m) {
    if (samples[m].empty()) continue;
    med[m] = median_of(samples[m]) * 1e9 / static_cast<double>(n);
    st.counters[std::string(names[m]) + "_ns_per_obj"] = med[m];
    st.counters[std::string(names[m]) + "_samples"] = static_cast<double>(samples[m].size());
  }
  st.counters["ratio_rollback_over_floor"] = med[rollback] / med[floor_];
  // The figure: the median of per-pair ratios (each pair: one batch of each, adjacent, in
  // random order, same readers), over all pairs; then over undisturbed pairs only, all of them
  // and split by the state of the round the pair ran in. A figure with no pair gets no counter
  // (Google Benchmark's counters have no null).
  st.counters["ratio_rollback_over_hand_floor"] = median_of(pair_ratios);
  if (!undisturbed_ratios.empty()) {
    st.counters["ratio_rollback_over_hand_floor_undisturbed"] = median_of(undisturbed_ratios);
    st.counters["rollback_many_ns_per_obj_undisturbed"] = median_of(undisturbed_rollback_s) * 1e9 / static_cast<double>(n);
    st.counters["hand_floor_ns_per_obj_undisturbed"] = median_of(undisturbed_floor_s) * 1e9 / static_cast<double>(n);
  }
  st.counters["pairs_disturbed"] = pairs_disturbed;
  st.counters["pairs"] = static_cast<double>(pair_ratios.size());
  if (!fast_ratios.empty()) st.counters["ratio_rollback_over_hand_floor_fast"] = median_of(fast_ratios);
  if (!slow_ratios.empty()) st.counters["ratio_rollback_over_hand_floor_slow"] = median_of(slow_ratios);
  st.counters["rounds_fast"] = rounds_fast;
  st.counters["rounds_slow"] = rounds_slow;
  st.counters["rounds_mixed"] = rounds_mixed;
  st.counters["ratio_legacy1_over_rollback"] = med[legacy1] / med[rollback];
  st.counters["ratio_legacy3_over_rollback"] = med[legacy3] / med[rollback];
  st.counters["ratio_callrcu_over_rollback"] = med[callrcu] / med[rollback];
  if (med[libcds] > 0) st.counters["ratio_libcds_over_rollback"] = med[libcds] / med[rollback];
  if (med[dpdk] > 0) st.counters["ratio_dpdk_over_rollback"] = med[dpdk] / med[rollback];
  st.counters["N"] = static_cast<double>(n);
  st.counters["readers"] = readers;
}

// --- reader throughput while batches run back to back -------------------------------------------
template <class Flavor>
void bm_reader_throughput(benchmark::State& st, bool writer, std::size_t n, std::size_t batch, int readers) {
  registry reg(n + batch);
  std::vector<bench_object*> stable = reg.populate(n);  // readers look these up
  rcubatch::grace_domain<Flavor> domain;
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
          rollback_all(domain, reg, doomed);
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
void bm_lock_hold(benchmark::State& st, bool unlock_during_waits, std::size_t n, int readers) {
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
void bm_ref_drain(benchmark::State& st, std::size_t n) {
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
std::set<std::string> g_registered;  // the goal set registers first; later loops skip duplicates

std::string case_name(const char* subject, std::string_view flavor, int readers, std::size_t n) {
  return std::string("BM_Teardown_") + subject + "/" + std::string(flavor) + "/readers:" + std::to_string(readers) +
         "/N:" + std::to_string(n);
}

/// Legacy and call_rcu cases run for a minimum of timed seconds instead of a fixed count: their
/// per-iteration cost swings 100x with the flavor, the reader count and the machine's load.
bool time_bounded(method m) {
  return m == method::legacy_1gp || m == method::legacy_3gp || m == method::call_rcu_barrier;
}

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

template <class Flavor>
void add_teardown(method m, std::size_t n, int readers, bool full) {
  if ((m == method::legacy_1gp || m == method::legacy_3gp) && n > legacy_cap(Flavor::name, readers, full)) return;
  const std::string name = case_name(method_name(m), Flavor::name, readers, n);
  if (!g_registered.insert(name).second) return;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [m, n, readers](benchmark::State& st) {
    bm_teardown<Flavor>(st, m, n, readers);
  });
  if (time_bounded(m)) b->MinTime(full ? 0.5 : 0.15);
  else b->Iterations(iterations_for(n, full));
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void add_ping_pong(const char* when) {
  benchmark::RegisterBenchmark((std::string("BM_System_PingPong/") + when).c_str(), bm_ping_pong)
      ->Iterations(5)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
}

constexpr method kMethods[] = {method::rollback_many, method::floor, method::hand_floor, method::legacy_1gp,
                               method::legacy_3gp, method::call_rcu_barrier};

template <class Flavor>
void add_flavor(const run_config& cfg) {
  for (int r : cfg.reader_counts)
    for (std::size_t n : cfg.sizes)
      for (method m : kMethods) {
        // Quick mode sweeps N with one reader and sweeps readers at N = 1e4 only.
        if (!cfg.full && r != 1 && n != 10'000) continue;
        add_teardown<Flavor>(m, n, r, cfg.full);
      }
}

template <class Flavor>
void add_extras(const run_config& cfg) {
  const std::string f(Flavor::name);
  for (bool writer : {false, true}) {
    const std::string name = "BM_Readers_Throughput/" + f + (writer ? "/writer:rollback_many" : "/writer:none") +
                             "/readers:1/N:10000/batch:1000";
    benchmark::RegisterBenchmark(name.c_str(), [writer](benchmark::State& st) {
      bm_reader_throughput<Flavor>(st, writer, 10'000, 1'000, 1);
    })->Iterations(cfg.full ? 10 : 3)->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  for (std::size_t n : {std::size_t{100}, std::size_t{10'000}}) {
    for (bool unlock : {false, true}) {
      const std::string name = "BM_WriterLock_Hold/" + f + (unlock ? "/unlock_during_waits" : "/default") +
                               "/readers:1/N:" + std::to_string(n);
      benchmark::RegisterBenchmark(name.c_str(), [unlock, n](benchmark::State& st) {
        bm_lock_hold<Flavor>(st, unlock, n, 1);
      })->Iterations(iterations_for(n, cfg.full, 100))->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
  }
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}}) {
    const std::string name = "BM_RefDrain_WakeLatency/" + f + "/N:" + std::to_string(n);
    benchmark::RegisterBenchmark(name.c_str(), [n](benchmark::State& st) { bm_ref_drain<Flavor>(st, n); })
        ->Iterations(cfg.full ? 200 : 50)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

void register_all(const run_config& cfg) {
  // 1. The goal set (memb, one reader, N = 1e4), back to back between two ping-pong probes, so
  //    the ratios come from adjacent measurements in one machine state.
  add_ping_pong("before_goal_set");
  for (method m : kMethods) add_teardown<rcubatch::flavor::memb>(m, 10'000, 1, cfg.full);
#ifdef RCUBATCH_BENCH_HAVE_LIBCDS
  register_libcds_goal_case(cfg);
#endif
#ifdef RCUBATCH_BENCH_HAVE_DPDK
  register_dpdk_goal_case(cfg);
#endif
  benchmark::RegisterBenchmark("BM_Paired_RollbackManyVsFloor/memb/readers:1/N:10000", [](benchmark::State& st) {
    bm_paired_floor<rcubatch::flavor::memb>(st, 10'000, 1);
  })->Iterations(cfg.full ? 200 : 60)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_Goal_Interleaved/memb/readers:1/N:10000", [](benchmark::State& st) {
    bm_goal_interleaved<rcubatch::flavor::memb>(st, 10'000, 1);
  })->Iterations(cfg.full ? 16 : 8)->UseManualTime()->Unit(benchmark::kMillisecond);
  add_ping_pong("after_goal_set");

  // 2. Scaling: every flavor, every N; the peers (their own read sides).
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

  // 3. Reader throughput, lock hold, ref-drain latency.
  add_extras<rcubatch::flavor::memb>(cfg);
  if (cfg.full) add_extras<rcubatch::flavor::qsbr>(cfg);
  add_ping_pong("end");
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
