// phase: the phase table (phase.hpp) and the hook table (policy.hpp, kHooks) against what a batch
// does — every expectation below is derived from the tables, so a reordered row, a dropped name
// or an engine that runs a phase out of turn fails here.
#include <rcubatch/phase.hpp>
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "support/counting.hpp"
#include "support/objects.hpp"

namespace rcubatch::test {
namespace {

// --- the tables themselves ----------------------------------------------------------------------

TEST(phase_table, lists_every_phase_once_in_enum_order_each_with_its_own_name) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kPhases; ++i) {
    const phase p = static_cast<phase>(i);
    EXPECT_EQ(static_cast<std::size_t>(kPhaseTable[i].id), i) << "row " << i;
    EXPECT_FALSE(to_string(p).empty()) << "row " << i;
    EXPECT_EQ(to_string(p), kPhaseTable[i].name);
    names.emplace(to_string(p));
  }
  EXPECT_EQ(names.size(), kPhases) << "two phases share a name";
  EXPECT_EQ(to_string(phase::validate), "validate");
  EXPECT_EQ(to_string(phase::ref_drain), "ref_drain");
}

TEST(phase_table, only_validate_may_throw_and_grace_periods_are_passed_in_order) {
  unsigned gps = 0;
  for (const phase_row& r : kPhaseTable) {
    EXPECT_EQ(r.may_throw, r.id == phase::validate) << r.name;
    EXPECT_GE(r.gps_passed, gps) << r.name << " runs before a grace period an earlier phase followed";
    gps = r.gps_passed;
    if (r.runs == phase_runs::once) {
      EXPECT_TRUE(r.unlocked_during_waits) << r.name << ": a grace-period wait never holds the lock under udw";
    }
  }
  EXPECT_EQ(gps, 2u);
}

TEST(hook_table, every_hook_runs_in_a_phase_that_is_not_a_grace_period_and_phases_are_in_order) {
  std::size_t last = 0;
  for (const hook_row& h : kHooks) {
    const phase_row& r = row_of(h.runs_in);
    EXPECT_NE(r.runs, phase_runs::once) << h.name << " is in a grace-period phase";
    EXPECT_GE(static_cast<std::size_t>(h.runs_in), last) << h.name << " is listed out of phase order";
    last = static_cast<std::size_t>(h.runs_in);
  }
  // Each phase entered only "with its hook" has one.
  for (const phase_row& r : kPhaseTable) {
    if (r.entered != phase_entered::with_its_hook) continue;
    EXPECT_TRUE(std::any_of(kHooks.begin(), kHooks.end(), [&](const hook_row& h) { return h.runs_in == r.id; }))
        << r.name;
  }
}

// --- a batch against the tables -----------------------------------------------------------------

/// Stands in for the caller's writer lock and says whether it is held.
struct probe_lock {
  bool held = true;
  void lock() { held = true; }
  void unlock() { held = false; }
};

/// One observed step of a batch: which hook (or "GP", or "dispose" for a retiree), in which state
/// its object was, and whether the caller's lock was held.
struct step {
  std::string hook;
  std::string state;
  bool locked;
};

struct retiree {
  std::vector<step>* log;
  const probe_lock* lock;
};
struct retiree_disposer {
  void operator()(retiree* r) const noexcept {
    r->log->push_back({"dispose", "", r->lock->held});
    delete r;
  }
};

/// Records every call of its hooks: validate, close_many, unlist and destroy (no notify,
/// batch_notify or uninit: their phases are never entered).
struct probe_policy {
  std::vector<step>* log;
  const probe_lock* lock;
  bool uninit_unlinks = true;  ///< (probe_all_policy) uninit's answer
  bool retire_one = false;     ///< (probe_all_policy) the first uninit retires a sub-object

  void record(const char* hook, const node& n) noexcept {
    log->push_back({hook, std::string(to_string(n.state())), lock->held});
  }
  void validate(node& n) { record("validate", n); }
  void close_many(object_range<node> r) noexcept {
    for (node& n : r) record("close_many", n);
  }
  void unlist(node& n) noexcept { record("unlist", n); }
  void destroy(node* n) noexcept {
    record("destroy", *n);
    delete n;
  }
};

/// probe_policy with every hook but rebroadcast and name (those need a held object).
struct probe_all_policy : probe_policy {
  void notify(node& n, batch& b) noexcept {
    record("notify", n);
    for (node* d : n.dependents) b.queue(*d);
  }
  void batch_notify(batch&) noexcept { log->push_back({"batch_notify", "", lock->held}); }
  bool uninit(node& n, batch& b) noexcept {
    record("uninit", n);
    if (retire_one) {
      retire_one = false;
      b.retire(new retiree{log, lock}, retiree_disposer{});
    }
    return uninit_unlinks;
  }
};

/// The phase a step belongs to, from the tables: a hook by kHooks, a GP by its count, a disposal
/// by the retiree phase.
phase phase_of(const step& s, unsigned& gps_seen) {
  if (s.hook == "GP") return ++gps_seen == 1 ? phase::grace_period_1 : phase::grace_period_2;
  if (s.hook == "dispose") return phase::dispose_retirees;
  for (const hook_row& h : kHooks)
    if (h.name == s.hook) return h.runs_in;
  ADD_FAILURE() << "no row of kHooks for " << s.hook;
  return phase::validate;
}

bool per_round(phase p) {
  const phase_runs r = row_of(p).runs;
  return r == phase_runs::per_lane_per_round || r == phase_runs::per_object_per_round;
}

struct phase_batch : counting_test<struct phase_batch_tag> {
  std::vector<step> log;
  probe_lock lock;

  void SetUp() override {
    fake::on_synchronize = [this] { log.push_back({"GP", "", lock.held}); };
  }

  /// Runs one batch of `roots` (their dependents join from notify) under unlock_during_waits.
  template <class Policy>
  batch_stats run(Policy p, const std::vector<node*>& roots) {
    unreg_queue<node> q;
    for (node* n : roots) q.push(*n);
    return rollback_many(q, p, domain, unlock_during_waits(lock));
  }

  /// Every step's phase is at or after the previous step's, except that a new round goes back
  /// to the per-round phases (and only from one of them).
  void expect_steps_in_table_order() {
    unsigned gps = 0;
    std::size_t last = 0;
    for (const step& s : log) {
      const std::size_t at = static_cast<std::size_t>(phase_of(s, gps));
      if (at < last) {
        EXPECT_TRUE(per_round(static_cast<phase>(at)) && per_round(static_cast<phase>(last)))
            << s.hook << " (" << to_string(static_cast<phase>(at)) << ") ran after "
            << to_string(static_cast<phase>(last));
      }
      last = at;
    }
  }

  /// Each hook saw the state and the lock its phase's row says.
  void expect_states_and_locks_as_the_table_says() {
    unsigned gps = 0;
    for (const step& s : log) {
      const phase_row& r = row_of(phase_of(s, gps));
      if (!s.state.empty()) {
        EXPECT_EQ(s.state, r.state_seen) << s.hook;
      }
      EXPECT_EQ(s.locked, !r.unlocked_during_waits) << s.hook << " in " << r.name;
    }
  }

  /// Each phase was entered as often as its row says for this configuration: once, once per
  /// round for the per-round phases (one lane here), never when the row's condition is false.
  template <class Policy>
  void expect_entries_as_the_table_says(const batch_stats& s, bool gp2_expected) {
    using hooks = detail::policy_hooks<Policy, node>;
    for (const phase_row& r : kPhaseTable) {
      bool entered = true;
      if (r.entered == phase_entered::with_its_hook) entered = hooks::has_hook_in(r.id);
      if (r.entered == phase_entered::if_unlinked_after_gp1) entered = gp2_expected;
      const unsigned times = entered ? (per_round(r.id) ? static_cast<unsigned>(s.rounds) : 1u) : 0u;
      EXPECT_EQ(s.entries_of(r.id), times) << r.name << " (rounds: " << s.rounds << ")";
    }
  }
};

TEST_F(phase_batch, a_batch_with_every_hook_and_a_cascade_runs_every_phase_in_the_table_order) {
  using policy = probe_all_policy;
  auto roots = make_registered(2);
  auto deps = make_registered(2, 10);
  roots[1]->dependents = {deps[0]};
  deps[0]->dependents = {deps[1]};  // three rounds
  const batch_stats s = run(policy{{.log = &log, .lock = &lock, .retire_one = true}}, roots);
  EXPECT_EQ(s.rounds, 3u);
  EXPECT_EQ(s.grace_periods, 2u);
  ASSERT_FALSE(log.empty());
  expect_steps_in_table_order();
  expect_states_and_locks_as_the_table_says();
  expect_entries_as_the_table_says<policy>(s, true);
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](const step& x) { return x.hook == "dispose"; }), 1);
}

TEST_F(phase_batch, a_batch_that_unlinks_nothing_after_the_first_grace_period_skips_the_second) {
  using policy = probe_all_policy;
  const batch_stats s = run(policy{{.log = &log, .lock = &lock, .uninit_unlinks = false}}, make_registered(3));
  EXPECT_EQ(s.rounds, 1u);
  EXPECT_EQ(s.grace_periods, 1u);
  expect_steps_in_table_order();
  expect_states_and_locks_as_the_table_says();
  expect_entries_as_the_table_says<policy>(s, false);
}

TEST_F(phase_batch, a_policy_without_notify_or_uninit_never_enters_their_phases) {
  using policy = probe_policy;
  const batch_stats s = run(policy{.log = &log, .lock = &lock}, make_registered(3));
  EXPECT_EQ(s.grace_periods, 1u);
  expect_steps_in_table_order();
  expect_states_and_locks_as_the_table_says();
  expect_entries_as_the_table_says<policy>(s, false);
}

TEST_F(phase_batch, an_empty_queue_enters_validate_only) {
  const batch_stats s = run(probe_all_policy{{.log = &log, .lock = &lock}}, {});
  for (const phase_row& r : kPhaseTable) EXPECT_EQ(s.entries_of(r.id), r.id == phase::validate ? 1u : 0u) << r.name;
  EXPECT_TRUE(log.empty());
}

}  // namespace
}  // namespace rcubatch::test
