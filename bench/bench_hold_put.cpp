// bench/bench_hold_put.cpp — hold/put throughput on one hot object, by kind of reference count
// (issue 26): BM_HoldPut/<kind>/threads:<W>, kind one of
//   atomic   registrable<T>'s one word (ref_count.hpp): every hold and put an RMW on one line;
//   sharded  sharded_registrable<T> (sharded_refs.hpp): an RMW on this CPU's shard;
//   tracked  tracked_registrable<T> (ref_tracker.hpp): hold(tag) → token, put(token).
// Each iteration is one hold and its put, by each of W threads on the same object; the counter
// holds_per_s is holds per second summed over the threads (wall time).
//
// Compare kinds as ratios within one run, interleaved (the VM's cross-core costs drift):
//   rcubatch_bench_hold_put --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true \
//     --benchmark_format=json > hold_put.json
//   python3 bench/hold_put_ratios.py hold_put.json
// A type that does not choose tracking compiles to the atomic kind exactly (same class, same
// code): "tracking off" is the atomic row; "tracking on" costs tracked/atomic at 1 thread.
#include <cstdint>

#include <benchmark/benchmark.h>

#include "rcubatch/ref_tracker.hpp"
#include "rcubatch/registrable.hpp"
#include "rcubatch/sharded_refs.hpp"

namespace {

struct atomic_object : rcubatch::registrable<atomic_object> {};
struct sharded_object : rcubatch::sharded_registrable<sharded_object> {};
struct tracked_object : rcubatch::tracked_registrable<tracked_object> {};

// One hot object per kind, shared by every thread of a case (never registered: hold and put do
// not need it). Each on its own lines, so the kinds do not disturb one another.
alignas(64) atomic_object g_atomic;
alignas(64) sharded_object g_sharded;
alignas(64) tracked_object g_tracked;

void set_rate(benchmark::State& state) {
  state.counters["holds_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_HoldPut_atomic(benchmark::State& state) {
  for (auto _ : state) {
    g_atomic.refs().hold();
    g_atomic.refs().put();
  }
  set_rate(state);
}

void BM_HoldPut_sharded(benchmark::State& state) {
  for (auto _ : state) {
    g_sharded.refs().hold();
    g_sharded.refs().put();
  }
  set_rate(state);
}

void BM_HoldPut_tracked(benchmark::State& state) {
  for (auto _ : state) {
    rcubatch::ref_token t = g_tracked.refs().hold("bench");
    g_tracked.refs().put(t);
  }
  set_rate(state);
}

void threads(benchmark::internal::Benchmark* b) {
  for (int w : {1, 2, 4, 8}) b->Threads(w);
  b->UseRealTime();
}

BENCHMARK(BM_HoldPut_atomic)->Name("BM_HoldPut/atomic")->Apply(threads);
BENCHMARK(BM_HoldPut_sharded)->Name("BM_HoldPut/sharded")->Apply(threads);
BENCHMARK(BM_HoldPut_tracked)->Name("BM_HoldPut/tracked")->Apply(threads);

}  // namespace

BENCHMARK_MAIN();
