// bench/bench_peers.hpp — how the optional peers (peer_libcds.cpp, peer_dpdk.cpp; each built only
// when its Debian package is found) register their teardown cases with the bench.
#pragma once

#include <string>

#include "bench_harness.hpp"

namespace rcubatch_bench {

/// Registers libcds general_buffered's cases over the run's sweep (register_sweep).
void register_libcds_benchmarks(const run_config& cfg);
/// Registers DPDK rte_rcu_qsbr's defer-queue cases over the run's sweep (register_sweep).
void register_dpdk_benchmarks(const run_config& cfg);
/// Starts DPDK's EAL. Requires: no other thread exists yet. Returns an empty string, or why it failed.
std::string dpdk_init();

}  // namespace rcubatch_bench
