// rcubatch/async_stats.hpp — what an async_unregister's batches combined, and its running totals.
//
// async_batch_report describes one batch (given to async_options::on_batch and kept as
// async_stats::last_batch); async_stats is what async_unregister::stats() returns. Plain values:
// counts are exact, latencies come from the reclaimer's fixed histogram
// (detail/latency_histogram.hpp: bucket upper bounds, within 12.5 %). Compare times as ratios
// within one run (the test VM's speed swings 2-7x).
// Included by async_unregister.hpp; include it alone to pass statistics around without the
// reclaimer's template.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/counters.hpp"
#include "rcubatch/grace_domain.hpp"

namespace rcubatch {

/// What one batch of an async_unregister combined.
struct async_batch_report {
  std::size_t requests = 0;  ///< submit() calls it completes
  std::size_t threads = 0;   ///< distinct threads among their submitters
  batch_stats batch{};       ///< the rollback_many's own statistics (objects include dependents)
};

/// Totals of one async_unregister. Exact counts; each read is consistent on its own, the set is
/// not one atomic snapshot while batches run. Latencies: request → end of its batch.
struct async_stats {
  std::uint64_t submitted = 0;        ///< requests accepted
  std::uint64_t completed = 0;        ///< requests whose object was destroyed
  std::uint64_t refused = 0;          ///< submits refused by the budget (over_budget::refuse)
  std::uint64_t blocked_submits = 0;  ///< submits that blocked on the budget
  std::uint64_t batches = 0;          ///< batches run (with at least one request)
  std::uint64_t grace_periods = 0;    ///< GPs those batches waited for (batch_stats::grace_periods)
  std::uint64_t gps_pipelined = 0;    ///< GPs #1 those batches skipped (batch_stats::gps_pipelined)
  std::uint64_t objects = 0;          ///< objects destroyed by them, dependents included
  std::size_t max_requests_per_batch = 0;  ///< the most requests one batch took
  std::size_t max_threads_per_batch = 0;   ///< the most submitting threads one batch served
  std::size_t pending_count = 0;           ///< requests not yet destroyed, now
  std::size_t pending_bytes = 0;           ///< their charged bytes, now
  std::size_t pending_count_high_water = 0;  ///< the most requests pending at once
  std::size_t pending_bytes_high_water = 0;  ///< the most charged bytes pending at once
  std::size_t blocked_now = 0;             ///< submitters blocked on the budget right now
  std::chrono::nanoseconds latency_p50{};  ///< request → destroy, histogram bucket upper bound
  std::chrono::nanoseconds latency_p99{};  ///< the same, 99th percentile
  std::chrono::nanoseconds latency_max{};  ///< exact
  async_batch_report last_batch{};  ///< the most recent batch's report
  batch_totals all_batches{};  ///< every batch's batch_stats summed: phase times, stalls (counters.hpp)
  domain_stats domain{};       ///< the registry's grace domain's counters, now (grace_domain.hpp)
};

}  // namespace rcubatch
