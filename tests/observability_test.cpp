// Observability (issue 39): the stall report names what is stuck without a name hook (type,
// address, batch, phase) and lists tracked holders; a registry's counters() and a reclaimer's
// stats().all_batches add up to the batches' own batch_stats. The probes themselves are checked
// in the built binaries by readelf (cmake/probe-notes-test.cmake).
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch.hpp>
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/counters.hpp>
#include <rcubatch/counting_flavor.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "support/counting.hpp"
#include "support/indexed_item.hpp"
#include "support/objects.hpp"

namespace rcubatch::test {

/// A tracked object (outside the anonymous namespace, whose spelling differs by compiler).
struct tracked_thing : tracked_registrable<tracked_thing> {};

namespace {

using fake = counting_flavor<struct observability_test_tag>;

/// No name hook: the stall report must say what the object is by itself.
struct unnamed_policy {
  static constexpr bool publishes_nothing() { return true; }
};

std::string address_of(const void* p) {
  char text[2 + 2 * sizeof(void*) + 1];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

/// Options whose drain reports at once into `lines`, and calls `let_go` once `n` lines are out:
/// the reporter plays the holder, letting go once named, so no sleep is needed.
rollback_options reporting_into(std::vector<std::string>& lines, std::size_t n, std::function<void()> let_go) {
  rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(0);
  opts.drain.reporter_fn = [&lines, n, let_go = std::move(let_go)](std::string_view line) {
    lines.emplace_back(line);
    if (lines.size() == n) let_go();
  };
  return opts;
}

TEST(stall_report, without_a_name_hook_names_the_type_the_address_the_batch_and_the_phase) {
  fake::reset();
  grace_domain<fake> domain;
  auto nodes = make_registered(2);
  node* held = nodes[1];
  held->refs().hold();
  const std::string where = address_of(held);
  std::vector<std::string> lines;
  const rollback_options opts = reporting_into(lines, 1, [&] { held->refs().put(); });
  unreg_queue<node> q;
  for (node* n : nodes) q.push(*n);
  const batch_stats s = rollback_many(q, unnamed_policy{}, domain, opts);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(s.batch_id, 0u);
  EXPECT_EQ(lines[0], "waiting for rcubatch::test::node at " + where + " (batch " + std::to_string(s.batch_id) +
                          ", phase ref_drain) to become free. Usage count = 1");
  EXPECT_EQ(s.stall_reports, 1u);
}

TEST(stall_report, without_a_name_hook_lists_the_tracked_holders_under_the_type_line) {
  fake::reset();
  grace_domain<fake> domain;
  auto* t = new tracked_thing;
  t->mark_registered();
  ref_token rx = t->refs().hold("rx_queue");
  const std::string where = address_of(t);
  std::vector<std::string> lines;
  const rollback_options opts = reporting_into(lines, 2, [&] { t->refs().put(rx); });
  unreg_queue<tracked_thing> q;
  q.push(*t);
  const batch_stats s = rollback_many(q, unnamed_policy{}, domain, opts);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "waiting for rcubatch::test::tracked_thing at " + where + " (batch " +
                          std::to_string(s.batch_id) + ", phase ref_drain) to become free. Usage count = 1");
  EXPECT_EQ(lines[1].rfind("  held by rx_queue at ", 0), 0u) << lines[1];
}

TEST(stall_report, batch_ids_grow_across_batches) {
  fake::reset();
  grace_domain<fake> domain;
  batch_stats first = unregister_one(*make_registered(1)[0], unnamed_policy{}, domain);
  batch_stats second = unregister_one(*make_registered(1)[0], unnamed_policy{}, domain);
  EXPECT_GT(second.batch_id, first.batch_id);
}

// --- counters ---------------------------------------------------------------------------------

using CF = counting_flavor<struct observability_counters_tag>;

/// A (void) uninit: two GPs per batch; a named object so the stall lines stay short.
struct items : indexed<item, by_id> {
  void uninit(item&) noexcept {}
};
using two_gp_registry = basic_registry<CF, std::mutex, items>;

/// Adds up what the counters should: the batches' own stats.
batch_totals sum_of(const std::vector<batch_stats>& all) {
  batch_totals t;
  for (const batch_stats& s : all) t.add(s);
  return t;
}

void expect_same_totals(const batch_totals& got, const batch_totals& want) {
  EXPECT_EQ(got.batches, want.batches);
  EXPECT_EQ(got.objects, want.objects);
  EXPECT_EQ(got.grace_periods, want.grace_periods);
  EXPECT_EQ(got.gps_elided, want.gps_elided);
  EXPECT_EQ(got.gps_pipelined, want.gps_pipelined);
  EXPECT_EQ(got.stall_reports, want.stall_reports);
  EXPECT_EQ(got.last_batch_id, want.last_batch_id);
  for (std::size_t p = 0; p < kPhases; ++p) {
    EXPECT_EQ(got.phase_time[p], want.phase_time[p]) << to_string(static_cast<phase>(p));
    EXPECT_EQ(got.phase_entries[p], want.phase_entries[p]) << to_string(static_cast<phase>(p));
  }
  EXPECT_EQ(got.elapsed, want.elapsed);
  EXPECT_EQ(got.lock_hold, want.lock_hold);
}

struct counters_test : counting_test<observability_counters_tag> {
  thread_registration<flavor::memb> reg_;  // the index is a memb rculfhash table
};

TEST_F(counters_test, a_registry_s_counters_add_up_to_its_batches_own_stats) {
  two_gp_registry reg;
  const std::uint64_t gps_before = reg.counters().domain.grace_periods;
  std::vector<batch_stats> all;
  all.push_back(reg.unregister(*add_item(reg, 1)));
  std::vector<item*> many;
  for (int i = 2; i < 12; ++i) many.push_back(add_item(reg, i));
  all.push_back(reg.unregister_many(many));
  all.push_back(reg.unregister(*add_item(reg, 12)));
  const registry_counters c = reg.counters();
  expect_same_totals(c.batches, sum_of(all));
  EXPECT_EQ(c.batches.batches, 3u);
  EXPECT_EQ(c.batches.objects, 12u);
  EXPECT_EQ(c.batches.grace_periods, 6u) << "two per batch (the uninit)";
  EXPECT_EQ(c.domain.grace_periods - gps_before, 6u) << "the domain's own count of the GPs it ran";
  EXPECT_EQ(CF::synchronizes(), 6u);
}

TEST_F(counters_test, a_reclaimer_s_all_batches_add_up_to_the_batches_it_reported) {
  two_gp_registry reg;
  const std::uint64_t gps_before = reg.counters().domain.grace_periods;  // the domain outlives the test
  std::vector<batch_stats> reported;
  async_options o;
  o.mode = reclaim_mode::manual;
  o.max_age = std::chrono::hours(1);
  o.on_batch = [&](const async_batch_report& r) { reported.push_back(r.batch); };
  async_unregister reclaimer(reg, o);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(reclaimer.submit(*add_item(reg, round * 10 + i)));
    EXPECT_EQ(reclaimer.run_now(), 5u);
  }
  const async_stats st = reclaimer.stats();
  ASSERT_EQ(reported.size(), 3u);
  expect_same_totals(st.all_batches, sum_of(reported));
  EXPECT_EQ(st.all_batches.batches, st.batches);
  EXPECT_EQ(st.all_batches.objects, 15u);
  EXPECT_EQ(st.all_batches.grace_periods, st.grace_periods);
  EXPECT_EQ(st.domain.grace_periods - gps_before, CF::synchronizes());
}

}  // namespace
}  // namespace rcubatch::test
