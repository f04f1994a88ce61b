// rollback_many: grace-period budget, phase order, state transitions, validation, lock hygiene,
// and real-liburcu safety under concurrent readers.
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <latch>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/counting.hpp"
#include "support/flavors.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

struct rollback_many_counting : counting_test<struct rollback_many_test_tag> {
  std::vector<std::string> log;
};
using fake = rollback_many_counting::fake;

// --- grace-period budget ------------------------------------------------------------------------

class rollback_many_sizes : public rollback_many_counting, public ::testing::WithParamInterface<int> {};

TEST_P(rollback_many_sizes, costs_exactly_two_grace_periods_whatever_the_batch_size) {
  const int n = GetParam();
  std::atomic<int> destroyed{0};
  unreg_queue<node> q;
  queue_registered(q, n);
  const batch_stats s = rollback_many(q, recording_policy{.destroyed = &destroyed}, domain);
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_EQ(fake::synchronizes(), 2u);
  EXPECT_EQ(s.objects, static_cast<std::size_t>(n));
  EXPECT_EQ(destroyed.load(), n);
  EXPECT_TRUE(q.empty());
}

INSTANTIATE_TEST_SUITE_P(n, rollback_many_sizes, ::testing::Values(1, 10, 10'000));

TEST_F(rollback_many_counting, costs_one_grace_period_when_nothing_is_unlinked_after_the_first) {
  unreg_queue<node> q;
  queue_registered(q, 100);
  const batch_stats s = rollback_many(q, recording_policy{.uninit_unlinks = false}, domain);
  EXPECT_EQ(s.grace_periods, 1u);
  EXPECT_EQ(fake::synchronizes(), 1u);
}

TEST_F(rollback_many_counting, a_policy_without_hooks_costs_one_grace_period_and_deletes) {
  struct empty_policy {
    static constexpr bool publishes_nothing() { return true; }
  };
  unreg_queue<node> q;
  queue_registered(q, 3);
  const batch_stats s = rollback_many(q, empty_policy{}, domain);
  EXPECT_EQ(s.grace_periods, 1u);
  EXPECT_EQ(s.objects, 3u);
}

TEST_F(rollback_many_counting, a_three_level_cascade_still_costs_at_most_two_grace_periods) {
  // lower → 10 middles → 10 leaves each: 111 objects, queued from notify, level by level.
  auto lower = make_registered(1, 0);
  auto middles = make_registered(10, 100);
  auto leaves = make_registered(100, 1000);
  for (int m = 0; m < 10; ++m) {
    lower[0]->dependents.push_back(middles[static_cast<std::size_t>(m)]);
    for (int l = 0; l < 10; ++l) middles[static_cast<std::size_t>(m)]->dependents.push_back(leaves[static_cast<std::size_t>(m * 10 + l)]);
  }
  std::atomic<int> destroyed{0};
  unreg_queue<node> q;
  q.push(*lower[0]);
  const batch_stats s = rollback_many(q, recording_policy{.uninit_unlinks = false, .destroyed = &destroyed}, domain);
  EXPECT_LE(s.grace_periods, 2u);
  EXPECT_EQ(s.grace_periods, 2u) << "dependents are unlisted after GP #1, so GP #2 is required";
  EXPECT_EQ(fake::synchronizes(), 2u) << "counted by the flavor, not only by the batch's stats";
  EXPECT_EQ(s.rounds, 3u);
  EXPECT_EQ(s.dependents_added, 110u);
  EXPECT_EQ(s.objects, 111u);
  EXPECT_EQ(destroyed.load(), 111);
}

TEST_F(rollback_many_counting, a_dependent_queued_twice_joins_once) {
  auto nodes = make_registered(3);
  nodes[0]->dependents = {nodes[2]};
  nodes[1]->dependents = {nodes[2]};  // the veth peer pattern: both ends queue the same object
  std::atomic<int> destroyed{0};
  unreg_queue<node> q;
  q.push(*nodes[0]);
  q.push(*nodes[1]);
  const batch_stats s = rollback_many(q, recording_policy{.destroyed = &destroyed}, domain);
  EXPECT_EQ(s.dependents_added, 1u);
  EXPECT_EQ(destroyed.load(), 3);
}

// --- phase order and states ---------------------------------------------------------------------

TEST_F(rollback_many_counting, runs_the_phases_in_the_documented_order) {
  fake::on_synchronize = [this] { log.push_back("GP"); };
  auto nodes = make_registered(2);
  auto dep = make_registered(1, 9);
  nodes[1]->dependents = {dep[0]};
  unreg_queue<node> q;
  q.push(*nodes[0]);
  q.push(*nodes[1]);
  rollback_many(q, recording_policy{.log = &log}, domain);
  const std::vector<std::string> expected{
      "close_many:0,1,", "unlist:0", "unlist:1", "GP",
      "notify:0", "notify:1",                        // round 1 queues 9
      "close_many:9,", "unlist:9", "notify:9",       // round 2, no GP in between
      "batch_notify",
      "uninit:0", "uninit:1", "uninit:9",            // join order
      "GP",
      "destroy:0", "destroy:9", "destroy:1"};        // join order; 1 waits for its dependent 9
  EXPECT_EQ(log, expected);
}

TEST_F(rollback_many_counting, moves_each_object_through_every_state_once) {
  struct state_policy {
    std::vector<std::string>* log;
    void record(const node& n, const char* hook) noexcept {
      log->push_back(std::string(hook) + "@" + std::string(to_string(n.state())) +
                     (n.dismantling() ? "+dismantle" : ""));
    }
    void unlist(node& n) noexcept { record(n, "unlist"); }
    void notify(node& n) noexcept { record(n, "notify"); }
    void uninit(node& n) noexcept { record(n, "uninit"); }
    void destroy(node* n) noexcept {
      record(*n, "destroy");
      delete n;
    }
  };
  auto nodes = make_registered(1);
  EXPECT_EQ(nodes[0]->state(), reg_state::registered);
  EXPECT_FALSE(nodes[0]->dismantling());
  unreg_queue<node> q;
  q.push(*nodes[0]);
  rollback_many(q, state_policy{&log}, domain);
  const std::vector<std::string> expected{"unlist@registered+dismantle", "notify@unregistering+dismantle",
                                          "uninit@unregistering+dismantle", "destroy@released+dismantle"};
  EXPECT_EQ(log, expected);
}

TEST_F(rollback_many_counting, can_leave_the_dismantle_flag_off_to_reproduce_older_registries) {
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    bool saw_dismantle = false;
    void notify(node& n) noexcept { saw_dismantle |= n.dismantling(); }
  } p;
  unreg_queue<node> q;
  queue_registered(q, 3);
  rollback_options opts;
  opts.mark_dismantle = false;
  rollback_many(q, p, domain, opts);
  EXPECT_FALSE(p.saw_dismantle);
}

TEST_F(rollback_many_counting, the_dismantle_flag_turns_on_for_the_whole_batch_before_close_many) {
  // No adopt pass: the flag is derived through the queue, set once when the batch starts.
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    int dismantling_at_close = 0;
    void close_many(object_range<node> r) noexcept {
      for (node& n : r) dismantling_at_close += n.dismantling() ? 1 : 0;
    }
  } p;
  unreg_queue<node> q;
  queue_registered(q, 5);
  rollback_many(q, p, domain);
  EXPECT_EQ(p.dismantling_at_close, 5);
}

TEST_F(rollback_many_counting, a_hook_pushing_into_the_running_queue_is_refused_and_changes_nothing) {
  // The batch runs on the queue's list in place, so a push from a hook would slip an object past
  // close/unlist: refused (queued_too_late); batch::queue is the way in.
  scoped_misuse_policy quiet(misuse_policy::report, quiet_reporter);
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    unreg_queue<node>* q;
    node* other;
    bool pushed = true;
    void notify(node&) noexcept { pushed = q->push(*other); }
  };
  auto nodes = make_registered(2);
  unreg_queue<node> q;
  q.push(*nodes[0]);
  policy p{&q, nodes[1]};
  const unsigned long before = misuse_count(misuse_kind::queued_too_late);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_FALSE(p.pushed);
  EXPECT_EQ(misuse_count(misuse_kind::queued_too_late), before + 1);
  EXPECT_EQ(s.objects, 1u);
  EXPECT_EQ(nodes[1]->state(), reg_state::registered);
  EXPECT_TRUE(q.empty());
  unregister_one(*nodes[1], recording_policy{}, domain);
}

// --- validation: nothing changes ----------------------------------------------------------------

TEST_F(rollback_many_counting, a_throwing_validate_aborts_the_batch_with_nothing_changed) {
  struct picky : recording_policy {
    void validate(node& n) {
      if (n.id == 2) throw std::runtime_error("device busy");
    }
  };
  unreg_queue<node> q;
  const std::vector<node*> nodes = queue_registered(q, 4);
  picky p;
  p.log = &log;
  EXPECT_THROW(rollback_many(q, p, domain), std::runtime_error);
  EXPECT_TRUE(log.empty()) << "no hook past validate ran";
  EXPECT_EQ(fake::synchronizes(), 0u);
  EXPECT_EQ(q.size(), 4u) << "the queue is as the caller left it";
  for (node* n : nodes) {
    EXPECT_EQ(n->state(), reg_state::registered);
    EXPECT_FALSE(n->dismantling());
  }
  q.clear();
  for (node* n : nodes) unregister_one(*n, recording_policy{}, domain);
}

TEST_F(rollback_many_counting, a_released_object_cannot_be_unregistered_again) {
  std::vector<node*> graveyard;
  recording_policy keep{.graveyard = &graveyard};
  auto nodes = make_registered(1);
  unregister_one(*nodes[0], keep, domain);
  ASSERT_EQ(nodes[0]->state(), reg_state::released);
  unreg_queue<node> q;
  const unsigned long before = misuse_count(misuse_kind::already_unregistering);
  EXPECT_THROW(q.push(*nodes[0]), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::already_unregistering), before + 1);
  EXPECT_TRUE(q.empty());
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    const batch_stats s = unregister_one(*nodes[0], keep, domain);
    EXPECT_EQ(s.skipped, 1u);
    EXPECT_EQ(s.objects, 0u);
  }
  EXPECT_EQ(fake::synchronizes(), 2u) << "only the first unregister paid grace periods";
  bury(graveyard);
}

TEST_F(rollback_many_counting, is_refused_inside_a_read_section_under_the_report_policy) {
  unreg_queue<node> q;
  const std::vector<node*> nodes = queue_registered(q, 3);
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    read_guard<fake> guard;
    const batch_stats s = rollback_many(q, recording_policy{.log = &log}, domain);
    EXPECT_TRUE(s.refused);
  }
  EXPECT_EQ(q.size(), 3u);
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(fake::synchronizes(), 0u);
  {
    read_guard<fake> guard;
    EXPECT_THROW(rollback_many(q, recording_policy{.log = &log}, domain), misuse_error);
  }
  EXPECT_EQ(q.size(), 3u);
  rollback_many(q, recording_policy{}, domain);
}

TEST_F(rollback_many_counting, unregister_one_is_a_batch_of_one_through_the_same_path) {
  auto nodes = make_registered(1);
  const batch_stats s = unregister_one(*nodes[0], recording_policy{.log = &log}, domain);
  EXPECT_EQ(s.objects, 1u);
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_EQ(log.front(), "close_many:0,");
  EXPECT_EQ(log.back(), "destroy:0");
}

// --- rollback_range: the queueing fused into the unlist pass (issue 36) --------------------------

/// recording_policy without close_many: rollback_range queues and unlists each object in one step.
/// It also records an object whose state or dismantle flag is not what its unlist and notify
/// must see (registered and dismantling; unregistering).
struct fused_policy {
  recording_policy r;
  void unlist(node& n) noexcept {
    r.unlist(n);
    if (n.state() != reg_state::registered || !n.dismantling()) r.record("unlist-in-wrong-state");
  }
  template <class B>
  void notify(node& n, B& b) noexcept {
    if (n.state() != reg_state::unregistering) r.record("notify-in-wrong-state");
    r.notify(n, b);
  }
  template <class B>
  void batch_notify(B& b) noexcept { r.batch_notify(b); }
  template <class B>
  bool uninit(node& n, B& b) noexcept { return r.uninit(n, b); }
  void destroy(node* n) noexcept { r.destroy(n); }
};

TEST_F(rollback_many_counting, rollback_range_unlists_each_object_as_it_queues_it_and_keeps_the_phase_order) {
  fake::on_synchronize = [this] { log.push_back("GP"); };
  auto nodes = make_registered(2);
  auto dep = make_registered(1, 9);
  nodes[1]->dependents = {dep[0]};
  const batch_stats s = rollback_range(nodes, fused_policy{{.log = &log}}, domain);
  const std::vector<std::string> expected{
      "unlist:0", "unlist:1", "GP",                  // queued and unlisted in one walk
      "notify:0", "notify:1",                        // round 1 queues 9
      "unlist:9", "notify:9",                        // round 2, no GP in between
      "batch_notify",
      "uninit:0", "uninit:1", "uninit:9",            // join order
      "GP",
      "destroy:0", "destroy:9", "destroy:1"};        // 1 waits for its dependent 9
  EXPECT_EQ(log, expected);
  EXPECT_EQ(s.objects, 3u);
  EXPECT_EQ(s.grace_periods, 2u);
  EXPECT_EQ(s.skipped, 0u);
}

TEST_F(rollback_many_counting, rollback_range_with_close_many_shows_it_every_object_before_any_unlist) {
  fake::on_synchronize = [this] { log.push_back("GP"); };
  auto nodes = make_registered(3);
  // Pointers through a projection, as from an index's slots.
  std::vector<std::atomic<node*>> slots(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) slots[i].store(nodes[i]);
  const batch_stats s = rollback_range(slots, [](const std::atomic<node*>& a) { return a.load(); },
                                       recording_policy{.log = &log}, domain);
  const std::vector<std::string> expected{
      "close_many:0,1,2,", "unlist:0", "unlist:1", "unlist:2", "GP",
      "notify:0", "notify:1", "notify:2", "batch_notify",
      "uninit:0", "uninit:1", "uninit:2", "GP", "destroy:0", "destroy:1", "destroy:2"};
  EXPECT_EQ(log, expected);
  EXPECT_EQ(s.objects, 3u);
}

TEST_F(rollback_many_counting, rollback_range_takes_objects_by_reference_through_a_projection) {
  auto nodes = make_registered(3);
  std::vector<std::reference_wrapper<node>> refs;
  for (node* n : nodes) refs.emplace_back(*n);
  std::atomic<int> destroyed{0};
  const batch_stats s = rollback_range(refs, [](std::reference_wrapper<node> r) -> node& { return r.get(); },
                                       fused_policy{{.log = &log, .destroyed = &destroyed}}, domain);
  EXPECT_EQ(s.objects, 3u);
  EXPECT_EQ(destroyed.load(), 3);
  const std::vector<std::string> unlists(log.begin(), log.begin() + 3);
  EXPECT_EQ(unlists, (std::vector<std::string>{"unlist:0", "unlist:1", "unlist:2"})) << "in the range's order";
}

/// Both ways of rollback_range (fused, and queue-then-batch for a policy with close_many): an
/// object that is not registered anywhere in the range refuses the whole range — nothing is
/// unlisted, no grace period, every object left as it was — diagnosed as push_range diagnoses it.
template <class Policy>
void refused_in_the_middle(std::vector<std::string>& log, grace_domain<fake>& domain) {
  auto nodes = make_registered(4);
  node* const stranger = new node(7);  // never registered
  std::vector<node*> range{nodes[0], nodes[1], stranger, nodes[2], nodes[3]};
  Policy p;
  if constexpr (std::is_same_v<Policy, fused_policy>) {
    p.r.log = &log;
  } else {
    p.log = &log;
  }
  const auto unchanged = [&] {
    EXPECT_TRUE(log.empty()) << log.front() << ": a hook ran";
    EXPECT_EQ(fake::synchronizes(), 0u);
    for (node* n : nodes) {
      EXPECT_EQ(n->state(), reg_state::registered);
      EXPECT_FALSE(n->dismantling());
    }
    EXPECT_EQ(stranger->state(), reg_state::uninitialized);
  };
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    const unsigned long before = misuse_count(misuse_kind::not_registered);
    const batch_stats s = rollback_range(range, p, domain);
    EXPECT_EQ(misuse_count(misuse_kind::not_registered), before + 1) << "diagnosed";
    EXPECT_TRUE(s.refused);
    EXPECT_EQ(s.objects, 0u);
    EXPECT_EQ(s.skipped, 5u) << "every element";
  }
  unchanged();
  EXPECT_THROW(rollback_range(range, p, domain), misuse_error);
  unchanged();
  // The same objects, the stranger left out: one batch takes them all (nothing was left marked).
  range.erase(range.begin() + 2);
  const batch_stats s = rollback_range(range, p, domain);
  EXPECT_EQ(s.objects, 4u);
  delete stranger;
}

TEST_F(rollback_many_counting, rollback_range_with_a_refused_object_in_the_middle_changes_nothing) {
  refused_in_the_middle<fused_policy>(log, domain);
}

TEST_F(rollback_many_counting, rollback_range_with_close_many_and_a_refused_object_changes_nothing) {
  refused_in_the_middle<recording_policy>(log, domain);
}

TEST_F(rollback_many_counting, rollback_range_whose_first_object_is_refused_changes_nothing) {
  auto nodes = make_registered(2);
  node* const stranger = new node(7);
  std::vector<node*> range{stranger, nodes[0], nodes[1]};
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    const batch_stats s = rollback_range(range, fused_policy{{.log = &log}}, domain);
    EXPECT_EQ(s.objects, 0u);
    EXPECT_EQ(s.skipped, 3u);
  }
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(fake::synchronizes(), 0u);
  for (node* n : nodes) {
    EXPECT_EQ(n->state(), reg_state::registered);
    EXPECT_FALSE(n->dismantling());
    unregister_one(*n, recording_policy{}, domain);
  }
  delete stranger;
}

TEST_F(rollback_many_counting, rollback_range_refuses_a_null_pointer_and_an_object_named_twice_changing_nothing) {
  auto nodes = make_registered(3);
  std::vector<node*> with_null{nodes[0], nullptr, nodes[1]};
  EXPECT_THROW(rollback_range(with_null, fused_policy{{.log = &log}}, domain), std::invalid_argument);
  std::vector<node*> twice{nodes[1], nodes[2], nodes[1]};
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    const unsigned long before = misuse_count(misuse_kind::queued_in_other_queue);
    const batch_stats s = rollback_range(twice, fused_policy{{.log = &log}}, domain);
    EXPECT_EQ(misuse_count(misuse_kind::queued_in_other_queue), before + 1) << "named twice: diagnosed";
    EXPECT_EQ(s.objects, 0u);
    EXPECT_EQ(s.skipped, 3u);
  }
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(fake::synchronizes(), 0u);
  for (node* n : nodes) EXPECT_EQ(n->state(), reg_state::registered);
  const batch_stats s = rollback_range(nodes, fused_policy{{.log = &log}}, domain);
  EXPECT_EQ(s.objects, 3u) << "no object was left marked as queued";
}

/// A seam: an object already in another queue (a caller's unreg_queue; an async_unregister's
/// submitted objects sit in its queues the same way) refuses the whole range and stays where it is.
TEST_F(rollback_many_counting, rollback_range_refuses_an_object_queued_elsewhere_and_leaves_it_in_its_queue) {
  auto nodes = make_registered(3);
  unreg_queue<node> other;
  ASSERT_TRUE(other.push(*nodes[1]));
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    const unsigned long before = misuse_count(misuse_kind::queued_in_other_queue);
    const batch_stats s = rollback_range(nodes, fused_policy{{.log = &log}}, domain);
    EXPECT_EQ(misuse_count(misuse_kind::queued_in_other_queue), before + 1);
    EXPECT_TRUE(s.refused);
    EXPECT_EQ(s.skipped, 3u);
  }
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(fake::synchronizes(), 0u);
  EXPECT_EQ(other.size(), 1u) << "still in its own queue";
  for (node* n : nodes) EXPECT_EQ(n->state(), reg_state::registered);
  // Its own queue's batch takes it; the other two go through rollback_range.
  EXPECT_EQ(rollback_many(other, recording_policy{}, domain).objects, 1u);
  std::vector<node*> rest{nodes[0], nodes[2]};
  EXPECT_EQ(rollback_range(rest, fused_policy{{.log = &log}}, domain).objects, 2u);
}

TEST_F(rollback_many_counting, rollback_range_is_refused_inside_a_read_section_with_nothing_queued) {
  auto nodes = make_registered(3);
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    read_guard<fake> guard;
    const batch_stats s = rollback_range(nodes, fused_policy{{.log = &log}}, domain);
    EXPECT_TRUE(s.refused);
  }
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(fake::synchronizes(), 0u);
  for (node* n : nodes) {
    EXPECT_EQ(n->state(), reg_state::registered);
    EXPECT_FALSE(n->dismantling());
  }
  unreg_queue<node> q;
  EXPECT_TRUE(q.push_range(nodes)) << "no object was left in a queue";
  rollback_many(q, recording_policy{}, domain);
}

// --- lock hygiene -------------------------------------------------------------------------------

struct tracked_lock {
  bool held = false;
  int unlocks = 0;
  void lock() noexcept { held = true; }
  void unlock() noexcept {
    held = false;
    ++unlocks;
  }
};
/// Runs a batch of five with the caller's lock held; returns whether the lock was held during each
/// grace period.
template <class... LockOption>
std::vector<bool> lock_state_during_grace_periods(grace_domain<fake>& domain, tracked_lock& lock,
                                                  LockOption... option) {
  std::vector<bool> held;
  fake::on_synchronize = [&] { held.push_back(lock.held); };
  lock.lock();
  unreg_queue<node> q;
  queue_registered(q, 5);
  rollback_many(q, recording_policy{}, domain, option...);
  fake::on_synchronize = nullptr;  // it captures this call's locals
  return held;
}

TEST_F(rollback_many_counting, keeps_the_callers_lock_held_through_the_grace_periods_by_default) {
  tracked_lock lock;
  EXPECT_EQ(lock_state_during_grace_periods(domain, lock), (std::vector<bool>{true, true}));
  EXPECT_EQ(lock.unlocks, 0);
}

TEST_F(rollback_many_counting, releases_the_lock_during_grace_periods_only_when_asked) {
  tracked_lock lock;
  EXPECT_EQ(lock_state_during_grace_periods(domain, lock, unlock_during_waits(lock)),
            (std::vector<bool>{false, false}));
  EXPECT_TRUE(lock.held) << "re-locked before returning";
  EXPECT_GE(lock.unlocks, 2);
}

TEST_F(rollback_many_counting, runs_notify_and_uninit_with_the_lock_and_destroy_without_it_when_asked) {
  // policy.hpp's hook table: under unlock_during_waits every hook but destroy runs re-locked;
  // destroy (and the retirees' disposal) runs with the lock released. Without the option, all hold it.
  struct lock_checking_policy {
    tracked_lock* lock;
    std::vector<std::string>* log;
    void unlist(node&) noexcept { log->push_back(lock->held ? "unlist:held" : "unlist:free"); }
    void notify(node&) noexcept { log->push_back(lock->held ? "notify:held" : "notify:free"); }
    void uninit(node&) noexcept { log->push_back(lock->held ? "uninit:held" : "uninit:free"); }
    void destroy(node* n) noexcept {
      log->push_back(lock->held ? "destroy:held" : "destroy:free");
      delete n;
    }
  };
  for (bool release : {false, true}) {
    tracked_lock lock;
    std::vector<std::string> calls;
    lock.lock();
    unreg_queue<node> q;
    queue_registered(q, 1);
    if (release) {
      rollback_many(q, lock_checking_policy{&lock, &calls}, domain, unlock_during_waits(lock));
    } else {
      rollback_many(q, lock_checking_policy{&lock, &calls}, domain);
    }
    const std::vector<std::string> expected =
        release ? std::vector<std::string>{"unlist:held", "notify:held", "uninit:held", "destroy:free"}
                : std::vector<std::string>{"unlist:held", "notify:held", "uninit:held", "destroy:held"};
    EXPECT_EQ(calls, expected) << (release ? "unlock_during_waits" : "default");
    EXPECT_TRUE(lock.held) << "the caller gets its lock back";
  }
}

TEST_F(rollback_many_counting, reports_the_whole_call_as_lock_hold_unless_it_released_the_lock) {
  {
    unreg_queue<node> q;
    queue_registered(q, 5);
    const batch_stats s = rollback_many(q, recording_policy{}, domain);
    EXPECT_GT(s.elapsed.count(), 0);
    EXPECT_EQ(s.lock_hold, s.elapsed) << "the caller's lock is never released by default";
  }
  tracked_lock lock;
  lock.lock();
  unreg_queue<node> q;
  queue_registered(q, 5);
  const batch_stats s = rollback_many(q, recording_policy{}, domain, unlock_during_waits(lock));
  EXPECT_LT(s.lock_hold, s.elapsed) << "the time it was released is not counted";
}

// --- real liburcu: readers race the batch -------------------------------------------------------

template <class Flavor>
class rollback_many_real : public ::testing::Test {};
TYPED_TEST_SUITE(rollback_many_real, real_flavors);

/// An RCU-readable table: readers load slots with acquire, the policy clears them in unlist.
struct slot_table {
  explicit slot_table(std::size_t n) : slots(n) {}
  std::vector<std::atomic<node*>> slots;
};

struct slot_policy : recording_policy {
  slot_table* table;
  void unlist(node& n) noexcept { table->slots[static_cast<std::size_t>(n.id)].store(nullptr, std::memory_order_release); }
};

TYPED_TEST(rollback_many_real, readers_never_see_a_destroyed_object_and_each_is_destroyed_once) {
  using F = TypeParam;
  constexpr int kObjects = 20'000;
  constexpr int kBatches = 20;
  slot_table table(kObjects);
  std::vector<node*> graveyard;
  std::atomic<int> destroyed{0};
  std::atomic<bool> stop{false};
  std::atomic<long> poison_seen{0}, lookups{0};
  std::latch readers_running(2);
  auto reader = [&](unsigned seed) {
    thread_registration<F> reg;
    std::minstd_rand rng(seed);
    bool counted = false;
    while (!stop.load(std::memory_order_relaxed)) {
      {
        // Several lookups per section, and every object met is checked again just before the
        // section ends: an object destroyed too early is caught however late in the section the
        // destroy lands, not only in the few ns between a load and its check. (Destroyed objects
        // go to the graveyard, so the memory stays readable.)
        read_guard<F> guard;
        std::array<node*, 16> seen{};
        for (node*& s : seen) {
          node* n = table.slots[rng() % kObjects].load(std::memory_order_acquire);
          if (n == nullptr) continue;
          if (n->poison.load(std::memory_order_relaxed) != kAlive) poison_seen.fetch_add(1);
          s = n;
        }
        for (node* n : seen)
          if (n != nullptr && n->poison.load(std::memory_order_relaxed) != kAlive) poison_seen.fetch_add(1);
      }
      lookups.fetch_add(1, std::memory_order_relaxed);
      quiescent_state<F>();
      if (!counted) {
        readers_running.count_down();
        counted = true;
      }
    }
  };
  for (node* n : make_registered(kObjects)) table.slots[static_cast<std::size_t>(n->id)].store(n);
  std::thread r1(reader, 1), r2(reader, 2);
  readers_running.wait();
  grace_domain<F> domain;
  slot_policy policy;
  policy.table = &table;
  policy.destroyed = &destroyed;
  policy.graveyard = &graveyard;
  unsigned gps = 0;
  {
    thread_registration<F> reg;
    offline_scope<F> offline;  // the writer is no reader (qsbr)
    for (int b = 0; b < kBatches; ++b) {
      unreg_queue<node> q;
      for (int i = b; i < kObjects; i += kBatches) q.push(*table.slots[static_cast<std::size_t>(i)].load());
      const batch_stats s = rollback_many(q, policy, domain);
      gps += s.grace_periods;
      EXPECT_LE(s.grace_periods, 2u);
    }
  }
  stop = true;
  r1.join();
  r2.join();
  EXPECT_EQ(poison_seen.load(), 0) << "a reader saw an object destroyed while reachable";
  EXPECT_EQ(destroyed.load(), kObjects);
  std::sort(graveyard.begin(), graveyard.end());
  EXPECT_EQ(std::adjacent_find(graveyard.begin(), graveyard.end()), graveyard.end()) << "destroyed twice";
  EXPECT_GT(lookups.load(), 0);
  EXPECT_EQ(domain.stats().grace_periods, gps);
  bury(graveyard);
}

TYPED_TEST(rollback_many_real, nothing_is_reclaimed_while_a_reader_holds_it) {
  using F = TypeParam;
  auto nodes = make_registered(1);
  std::atomic<node*> slot{nodes[0]};
  std::atomic<int> destroyed{0};
  std::vector<node*> graveyard;
  std::latch reader_holds(1), writer_unlisted(1);
  std::atomic<bool> writer_done{false};
  bool poisoned_while_held = false, destroyed_while_held = false, finished_while_held = false;

  std::thread reader([&] {
    thread_registration<F> reg;
    read_guard<F> guard;
    node* n = slot.load(std::memory_order_acquire);
    reader_holds.count_down();
    writer_unlisted.wait();
    // The writer has unpublished n and is now inside its grace period, which cannot end while
    // this guard lives. Check for a while that n is intact and not destroyed.
    // (The iteration count is only the window's length; every check is on state, not on time.)
    for (int i = 0; i < 2'000'000; ++i) {
      if (n->poison.load(std::memory_order_relaxed) != kAlive) poisoned_while_held = true;
      if (destroyed.load() != 0) destroyed_while_held = true;
      if (writer_done.load()) {  // rollback_many returned while we hold n: its GP did not wait
        finished_while_held = true;
        break;
      }
    }
  });

  struct signalling_policy : recording_policy {
    std::atomic<node*>* slot;
    std::latch* unlisted;
    void unlist(node&) noexcept {
      slot->store(nullptr, std::memory_order_release);
      unlisted->count_down();
    }
  } policy;
  policy.slot = &slot;
  policy.unlisted = &writer_unlisted;
  policy.destroyed = &destroyed;
  policy.graveyard = &graveyard;

  reader_holds.wait();
  {
    thread_registration<F> reg;
    offline_scope<F> offline;
    grace_domain<F> domain;
    unreg_queue<node> q;
    q.push(*nodes[0]);
    rollback_many(q, policy, domain);
    writer_done = true;
  }
  reader.join();
  EXPECT_FALSE(poisoned_while_held);
  EXPECT_FALSE(destroyed_while_held);
  EXPECT_FALSE(finished_while_held);
  EXPECT_EQ(destroyed.load(), 1);
  bury(graveyard);
}

}  // namespace
}  // namespace rcubatch::test
