// bench/bench_harness.hpp — how a teardown case is timed and registered: the run's configuration
// (--rcubatch_mode=quick|full), the (readers, N) sweep every method and peer registers over, and
// the timed loop they share. Medians are not computed here: each case reports per-repetition
// figures, and Google Benchmark's repetitions (--benchmark_repetitions, random interleaving) and
// its median aggregate, or bench/plot.py from the JSON, take them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_fixture.hpp"

namespace rcubatch_bench {

/// What a run covers: --rcubatch_mode=quick or full.
struct run_config {
  bool full = false;
  std::vector<std::size_t> sizes;  // N swept by the scaling cases
  std::vector<int> reader_counts;  // 0, 1, 2 (quick: 1 except at N = 1e4)
};

/// Iterations for a teardown case of n objects in one repetition: enough to average, bounded in
/// wall time (run.sh runs each case several repetitions).
inline int iterations_for(std::size_t n, bool full, int cap = 200) {
  const std::size_t budget = full ? 1'000'000 : 150'000;  // objects torn down per repetition
  const std::size_t it = std::clamp<std::size_t>(budget / n, 2, static_cast<std::size_t>(cap));
  return static_cast<int>(it);
}

/// Minimum timed seconds per repetition for the cases whose iteration cost swings 100x with the
/// flavor, the reader count and the machine's load (legacy, call_rcu).
inline double min_time_for(bool full) { return full ? 0.5 : 0.05; }

/// Registers `bm` (a `void(benchmark::State&)` reading range(0) = readers, range(1) = N) as
/// `<family>/readers:R/N:n` over the run's points: every reader count at every N in full mode;
/// quick mode sweeps N with one reader and the reader counts at N = 1e4 only. `max_n(readers)`
/// caps N (the legacy methods). One family per N, as the iteration count depends on N.
template <class Case, class MaxN>
void register_sweep(const run_config& cfg, const std::string& family, Case bm, MaxN max_n, bool time_bounded) {
  for (std::size_t n : cfg.sizes) {
    std::vector<std::int64_t> readers;
    for (int r : cfg.reader_counts)
      if ((cfg.full || r == 1 || n == 10'000) && n <= max_n(r)) readers.push_back(r);
    if (readers.empty()) continue;
    auto* b = benchmark::RegisterBenchmark(family.c_str(), bm)
                  ->ArgsProduct({readers, {static_cast<std::int64_t>(n)}})
                  ->ArgNames({"readers", "N"})
                  ->UseManualTime()
                  ->Unit(benchmark::kMicrosecond);
    if (time_bounded) b->MinTime(min_time_for(cfg.full));
    else b->Iterations(iterations_for(n, cfg.full));
  }
}

template <class Case>
void register_sweep(const run_config& cfg, const std::string& family, Case bm) {
  register_sweep(cfg, family, bm, [](int) { return SIZE_MAX; }, false);
}

/// The timed loop shared by every teardown case. Readers start before it and stop after it; each
/// iteration populates n fresh objects (untimed), then times `teardown(reg, objs)`, which must
/// leave every object freed (or, for asynchronous methods, wait until it is). `teardown` returns
/// the grace periods it waited for, or a negative number when the method cannot tell.
/// `prepare`, if given, runs on the fresh objects before the timer starts (mark_registered).
/// Reports: items/s, ns_per_obj (this repetition's mean), gps_per_batch, reader lookups/s.
template <class Protocol, class Teardown>
void run_teardown_case(benchmark::State& st, std::size_t n, int readers, Teardown&& teardown,
                       void (*prepare)(std::vector<bench_object*>&) = nullptr) {
  registry reg(n);
  double gps = 0, timed_s = 0;
  bool gps_known = true;
  {
    reader_group<Protocol> rg(reg, readers);
    const std::uint64_t lookups0 = rg.lookups();
    const clock::time_point wall0 = clock::now();
    for (auto _ : st) {
      std::vector<bench_object*> objs = reg.populate(n);
      if (prepare) prepare(objs);
      const auto t0 = clock::now();
      const double g = teardown(reg, objs);
      const double s = seconds_since(t0);
      st.SetIterationTime(s);
      timed_s += s;
      if (g < 0) gps_known = false; else gps += g;
    }
    const double wall = seconds_since(wall0);
    st.counters["reader_lookups_per_s"] = readers ? double(rg.lookups() - lookups0) / wall : 0.0;
  }
  const double iters = static_cast<double>(st.iterations());
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
  st.counters["ns_per_obj"] = timed_s * 1e9 / (iters * static_cast<double>(n));
  st.counters["gps_per_batch"] = gps_known ? gps / iters : -1.0;
  st.counters["N"] = static_cast<double>(n);
  st.counters["readers"] = readers;
}

/// range(0) = readers, range(1) = N, as register_sweep names them.
inline int readers_of(const benchmark::State& st) { return static_cast<int>(st.range(0)); }
inline std::size_t n_of(const benchmark::State& st) { return static_cast<std::size_t>(st.range(1)); }

}  // namespace rcubatch_bench
