// tests/stress/misuse_policy_test.cpp — every diagnostic of the core, under every misuse policy.
//
//   throw_error    misuse_error of the right kind, the operation changed nothing, counted once;
//   report         the reporter gets the kind and a message, the operation is refused, counted once;
//   abort_process  a death test: the message on stderr, then abort.
// Fatal misuse (a bare grace-period wait inside a read-side section, destroying a linked object)
// aborts under every policy. Diagnostics raised from noexcept contexts (ref_count, batch::queue)
// cannot throw: under throw_error they report, which is asserted too.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rcubatch.hpp"
#include "rcubatch/counting_flavor.hpp"

namespace {

using rcubatch::misuse_kind;
using rcubatch::misuse_policy;
using rcubatch::reg_state;

// --- reporter capture ------------------------------------------------------------------------
struct captured {
  int calls = 0;
  misuse_kind last_kind{};
  std::string last_message;
};
captured g_cap;  // only the test thread reports in these tests
void capture(misuse_kind k, std::string_view msg) noexcept {
  ++g_cap.calls;
  g_cap.last_kind = k;
  g_cap.last_message.assign(msg);
}

struct gadget : rcubatch::registrable<gadget> {
  int id = 0;
};

/// Keeps released gadgets alive so a test can misuse them after their batch.
struct keep_policy {
  static constexpr bool publishes_nothing() { return true; }
  int destroyed = 0;
  void destroy(gadget*) noexcept { ++destroyed; }
};

struct misuse_fixture : ::testing::Test {
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    g_cap = {};
  }
  static unsigned long count(misuse_kind k) { return rcubatch::misuse_count(k); }
};

using CF = rcubatch::counting_flavor<struct misuse_counting_tag>;

// ================================ double queue (queued_in_other_queue) ========================
TEST_F(misuse_fixture, double_queue_across_queues_throws_and_leaves_the_object_in_its_first_queue) {
  rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
  gadget g;
  g.mark_registered();
  rcubatch::unreg_queue<gadget> q1, q2;
  ASSERT_TRUE(q1.push(g));
  const auto before = count(misuse_kind::queued_in_other_queue);
  try {
    q2.push(g);
    FAIL() << "no misuse_error";
  } catch (const rcubatch::misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::queued_in_other_queue);
  }
  EXPECT_EQ(count(misuse_kind::queued_in_other_queue), before + 1);
  EXPECT_TRUE(q1.contains(g));
  EXPECT_FALSE(q2.contains(g));
  EXPECT_EQ(q1.size(), 1u);
  EXPECT_EQ(q2.size(), 0u);
  EXPECT_EQ(g_cap.calls, 0) << "throw_error does not call the reporter";
  q1.clear();
  // The object was never unregistered: put it back to a destroyable state through a real batch.
  rcubatch::grace_domain<CF> d;
  q1.push(g);
  keep_policy kp;
  rcubatch::rollback_many(q1, kp, d);
  EXPECT_EQ(g.state(), reg_state::released);
}

TEST_F(misuse_fixture, double_queue_across_queues_is_reported_and_moves_the_object) {
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  gadget g;
  g.mark_registered();
  rcubatch::unreg_queue<gadget> q1, q2;
  ASSERT_TRUE(q1.push(g));
  const auto before = count(misuse_kind::queued_in_other_queue);
  EXPECT_TRUE(q2.push(g));  // the kernel's list_move semantics, after the report
  EXPECT_EQ(count(misuse_kind::queued_in_other_queue), before + 1);
  EXPECT_EQ(g_cap.calls, 1);
  EXPECT_EQ(g_cap.last_kind, misuse_kind::queued_in_other_queue);
  EXPECT_NE(g_cap.last_message.find("another unregistration queue"), std::string::npos) << g_cap.last_message;
  EXPECT_FALSE(q1.contains(g));
  EXPECT_TRUE(q2.contains(g));
  EXPECT_EQ(q1.size(), 0u);
  EXPECT_EQ(q2.size(), 1u);
  rcubatch::grace_domain<CF> d;
  keep_policy kp;
  rcubatch::rollback_many(q2, kp, d);
  EXPECT_EQ(kp.destroyed, 1);
}

TEST_F(misuse_fixture, double_queue_across_queues_aborts_under_abort_process) {
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        auto* g = new gadget;
        g->mark_registered();
        auto* q1 = new rcubatch::unreg_queue<gadget>;
        auto* q2 = new rcubatch::unreg_queue<gadget>;
        q1->push(*g);
        q2->push(*g);
      },
      "another unregistration queue");
}

// ================================ unregister of an unregistered object ========================
TEST_F(misuse_fixture, pushing_a_never_registered_object_throws_not_registered) {
  rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
  gadget g;  // uninitialized
  rcubatch::unreg_queue<gadget> q;
  const auto before = count(misuse_kind::not_registered);
  try {
    q.push(g);
    FAIL() << "no misuse_error";
  } catch (const rcubatch::misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::not_registered);
  }
  EXPECT_EQ(count(misuse_kind::not_registered), before + 1);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(g.state(), reg_state::uninitialized);
}

TEST_F(misuse_fixture, pushing_a_never_registered_object_is_reported_and_refused) {
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  gadget g;
  rcubatch::unreg_queue<gadget> q;
  const auto before = count(misuse_kind::not_registered);
  EXPECT_FALSE(q.push(g));
  EXPECT_EQ(count(misuse_kind::not_registered), before + 1);
  EXPECT_EQ(g_cap.calls, 1);
  EXPECT_EQ(g_cap.last_kind, misuse_kind::not_registered);
  EXPECT_TRUE(q.empty());
}

TEST_F(misuse_fixture, pushing_a_never_registered_object_aborts_under_abort_process) {
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        gadget g;
        rcubatch::unreg_queue<gadget> q;
        q.push(g);
      },
      "only registered objects can be unregistered");
}

/// A gadget that went through a whole batch and is kept in memory (state released).
struct released_gadget {
  released_gadget() {
    g.mark_registered();
    rcubatch::unreg_queue<gadget> q;
    q.push(g);
    rcubatch::rollback_many(q, kp, d);
  }
  gadget g;
  keep_policy kp;
  rcubatch::grace_domain<CF> d;
};

TEST_F(misuse_fixture, unregistering_an_already_unregistered_object_throws_under_throw_error) {
  released_gadget r;
  ASSERT_EQ(r.g.state(), reg_state::released);
  rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
  const auto before = count(misuse_kind::already_unregistering);
  const auto gps = CF::synchronizes();
  try {
    rcubatch::unregister_one(r.g, r.kp, r.d);
    FAIL() << "no misuse_error";
  } catch (const rcubatch::misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::already_unregistering);
  }
  EXPECT_EQ(count(misuse_kind::already_unregistering), before + 1);
  EXPECT_EQ(r.kp.destroyed, 1) << "not destroyed a second time";
  EXPECT_EQ(CF::synchronizes(), gps) << "no grace period for a refused object";
}

TEST_F(misuse_fixture, unregistering_an_already_unregistered_object_is_reported_and_skipped) {
  released_gadget r;
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  const auto before = count(misuse_kind::already_unregistering);
  const auto st = rcubatch::unregister_one(r.g, r.kp, r.d);
  EXPECT_EQ(st.skipped, 1u);
  EXPECT_EQ(st.objects, 0u);
  EXPECT_EQ(count(misuse_kind::already_unregistering), before + 1);
  EXPECT_EQ(g_cap.last_kind, misuse_kind::already_unregistering);
  EXPECT_NE(g_cap.last_message.find("released"), std::string::npos) << g_cap.last_message;
  EXPECT_EQ(r.kp.destroyed, 1);
}

TEST_F(misuse_fixture, unregistering_an_already_unregistered_object_aborts_under_abort_process) {
  EXPECT_DEATH(
      {
        auto* r = new released_gadget;
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        rcubatch::unregister_one(r->g, r->kp, r->d);
      },
      "object is released");
}

// ================================ destroy while linked (fatal) =================================
TEST_F(misuse_fixture, destroying_a_registered_object_is_fatal_under_every_policy) {
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report, misuse_policy::abort_process}) {
    EXPECT_DEATH(
        {
          rcubatch::set_misuse_policy(pol);
          auto* g = new gadget;
          g->mark_registered();
          delete g;
        },
        "destroyed in state registered")
        << "policy " << static_cast<int>(pol);
  }
}

TEST_F(misuse_fixture, destroying_a_queued_object_is_fatal_under_every_policy) {
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report, misuse_policy::abort_process}) {
    EXPECT_DEATH(
        {
          rcubatch::set_misuse_policy(pol);
          auto* g = new gadget;
          g->mark_registered();
          auto* q = new rcubatch::unreg_queue<gadget>;
          q->push(*g);
          delete g;
        },
        "while queued")
        << "policy " << static_cast<int>(pol);
  }
}

// GCC 12 sees rollback_many store the state of the object this policy just deleted; the
// destructor's fatal diagnostic ends the process before that store, which is what the test checks.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
TEST_F(misuse_fixture, destroying_an_object_from_unlist_is_fatal) {
  // A policy that deletes in unlist (readers can still reach the object) frees it mid-batch.
  struct bad_policy {
    void unlist(gadget& g) noexcept { delete &g; }
  };
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::report);
        auto* g = new gadget;
        g->mark_registered();
        rcubatch::grace_domain<CF> d;
        rcubatch::unreg_queue<gadget> q;
        q.push(*g);
        rcubatch::rollback_many(q, bad_policy{}, d);
      },
      "object destroyed in state registered");
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

// ================================ ref underflow / hold after drain =============================
TEST_F(misuse_fixture, ref_underflow_is_reported_under_throw_error_and_report_and_the_count_stays_zero) {
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report}) {
    rcubatch::scoped_misuse_policy p(pol, &capture);
    g_cap = {};
    rcubatch::ref_count rc;
    const auto before = count(misuse_kind::ref_underflow);
    rc.put();  // noexcept context: never throws
    EXPECT_EQ(count(misuse_kind::ref_underflow), before + 1);
    EXPECT_EQ(g_cap.calls, 1);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::ref_underflow);
    EXPECT_EQ(rc.count(), 0u);
    rc.hold();
    rc.put();
    EXPECT_EQ(rc.count(), 0u);
  }
}

TEST_F(misuse_fixture, ref_underflow_aborts_under_abort_process) {
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        rcubatch::ref_count rc;
        rc.put();
      },
      "put\\(\\) without a matching hold\\(\\)");
}

TEST_F(misuse_fixture, hold_after_drain_is_reported_under_throw_error_and_report) {
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report}) {
    released_gadget r;  // refs drained to zero, destroy hook ran, memory kept
    rcubatch::scoped_misuse_policy p(pol, &capture);
    g_cap = {};
    const auto before = count(misuse_kind::hold_after_drain);
    r.g.refs().hold();
    EXPECT_EQ(count(misuse_kind::hold_after_drain), before + 1);
    EXPECT_EQ(g_cap.calls, 1);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::hold_after_drain);
    EXPECT_EQ(r.g.refs().count(), 0u) << "refused (the regression test below)";
  }
}

// Was LIBRARY BUG 1 (RELIABILITY.md), fixed in 89202d3; kept as the regression test. Under report (and under
// throw_error, which ref_count downgrades to report), hold() after the drain is diagnosed but not
// refused: the count goes from "draining, 0" to "draining, 1". The matching put() then sees
// old == kDraining|1 and calls listener_->released(owner_) — a second release, through a pointer
// to the ref_drain of a batch that has already returned (use-after-return, then a second destroy).
// Fix: in ref_count::hold(), after diagnose_noexcept returns, undo the increment
// (word_.fetch_sub(1, relaxed)), as put() already does for underflow; and make put() treat
// old == kDraining as underflow (it does).
TEST_F(misuse_fixture, hold_after_drain_is_refused_under_report_so_a_later_put_cannot_release_twice) {
  released_gadget r;
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  r.g.refs().hold();
  EXPECT_EQ(r.g.refs().count(), 0u) << "the refused hold must not be counted";
}

TEST_F(misuse_fixture, hold_after_drain_aborts_under_abort_process) {
  EXPECT_DEATH(
      {
        auto* r = new released_gadget;
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        r->g.refs().hold();
      },
      "already drained to zero");
}

// ================================ register twice ================================================
TEST_F(misuse_fixture, register_twice_per_policy) {
  {
    rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
    released_gadget r;
    EXPECT_THROW(r.g.mark_registered(), rcubatch::misuse_error);
    EXPECT_EQ(r.g.state(), reg_state::released);
  }
  {
    rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
    released_gadget r;
    const auto before = count(misuse_kind::register_twice);
    EXPECT_FALSE(r.g.mark_registered());
    EXPECT_EQ(count(misuse_kind::register_twice), before + 1);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::register_twice);
    EXPECT_EQ(r.g.state(), reg_state::released);
  }
  EXPECT_DEATH(
      {
        auto* r = new released_gadget;
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        r->g.mark_registered();
      },
      "mark_registered on an object in state released");
}

// ================================ batch::queue after the notify phase ===========================
struct late_queue_policy {
  static constexpr bool publishes_nothing() { return true; }
  gadget* late;
  bool accepted = true;
  void uninit(gadget&, rcubatch::batch& b) noexcept { accepted = b.queue(*late); }
  void destroy(gadget*) noexcept {}
};

TEST_F(misuse_fixture, queueing_a_dependent_from_uninit_is_reported_not_thrown_and_refused) {
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report}) {
    rcubatch::scoped_misuse_policy p(pol, &capture);
    g_cap = {};
    gadget a, late;
    a.mark_registered();
    late.mark_registered();
    rcubatch::grace_domain<CF> d;
    rcubatch::unreg_queue<gadget> q;
    q.push(a);
    late_queue_policy lp{&late};
    const auto before = count(misuse_kind::queued_too_late);
    const auto st = rcubatch::rollback_many(q, lp, d);
    EXPECT_FALSE(lp.accepted);
    EXPECT_EQ(st.objects, 1u);
    EXPECT_EQ(count(misuse_kind::queued_too_late), before + 1);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::queued_too_late);
    EXPECT_EQ(late.state(), reg_state::registered) << "left out of the batch, untouched";
    EXPECT_FALSE(late.dismantling());
    rcubatch::unregister_one(late, keep_policy{}, d);
  }
}

// ================================ blocking call in a read-side section, per flavor =============
template <class Flavor>
struct blocking_in_read_section : misuse_fixture {};
using real_flavors =
    ::testing::Types<rcubatch::flavor::memb, rcubatch::flavor::qsbr, rcubatch::flavor::mb, rcubatch::flavor::bp>;
TYPED_TEST_SUITE(blocking_in_read_section, real_flavors);

TYPED_TEST(blocking_in_read_section, rollback_many_throws_under_throw_error_and_changes_nothing) {
  using F = TypeParam;
  rcubatch::thread_registration<F> reg;
  rcubatch::grace_domain<F> d;
  gadget g;
  g.mark_registered();
  rcubatch::unreg_queue<gadget> q;
  q.push(g);
  keep_policy kp;
  rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
  const auto before = this->count(misuse_kind::blocking_in_read_section);
  {
    rcubatch::read_guard<F> guard;
    try {
      rcubatch::rollback_many(q, kp, d);
      ADD_FAILURE() << "no misuse_error";
    } catch (const rcubatch::misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::blocking_in_read_section);
    }
  }
  EXPECT_EQ(this->count(misuse_kind::blocking_in_read_section), before + 1);
  EXPECT_TRUE(q.contains(g));
  EXPECT_EQ(g.state(), reg_state::registered);
  EXPECT_FALSE(g.dismantling());
  EXPECT_EQ(d.stats().grace_periods, 0u);
  rcubatch::rollback_many(q, kp, d);  // outside the guard it goes through
  EXPECT_EQ(kp.destroyed, 1);
}

TYPED_TEST(blocking_in_read_section, rollback_many_is_refused_under_report) {
  using F = TypeParam;
  rcubatch::thread_registration<F> reg;
  rcubatch::grace_domain<F> d;
  gadget g;
  g.mark_registered();
  rcubatch::unreg_queue<gadget> q;
  q.push(g);
  keep_policy kp;
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  const auto before = this->count(misuse_kind::blocking_in_read_section);
  rcubatch::batch_stats st;
  {
    rcubatch::read_guard<F> guard;
    st = rcubatch::rollback_many(q, kp, d);
  }
  EXPECT_TRUE(st.refused);
  EXPECT_EQ(st.objects, 0u);
  EXPECT_EQ(this->count(misuse_kind::blocking_in_read_section), before + 1);
  EXPECT_EQ(g_cap.calls, 1);
  EXPECT_EQ(g_cap.last_kind, misuse_kind::blocking_in_read_section);
  EXPECT_NE(g_cap.last_message.find(std::string(F::name)), std::string::npos) << g_cap.last_message;
  EXPECT_TRUE(q.contains(g));
  EXPECT_EQ(g.state(), reg_state::registered);
  EXPECT_EQ(d.stats().grace_periods, 0u);
  rcubatch::rollback_many(q, kp, d);
  EXPECT_EQ(kp.destroyed, 1);
}

TYPED_TEST(blocking_in_read_section, rollback_many_aborts_under_abort_process) {
  using F = TypeParam;
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        rcubatch::thread_registration<F> reg;
        rcubatch::grace_domain<F> d;
        auto* g = new gadget;
        g->mark_registered();
        rcubatch::unreg_queue<gadget> q;
        q.push(*g);
        rcubatch::read_guard<F> guard;
        rcubatch::rollback_many(q, keep_policy{}, d);
      },
      "rollback_many<.*> called inside a read-side section");  // its own check, not a later GP's
}

TYPED_TEST(blocking_in_read_section, grace_domain_waits_are_fatal_under_every_policy) {
  using F = TypeParam;
  for (auto pol : {misuse_policy::throw_error, misuse_policy::report, misuse_policy::abort_process}) {
    EXPECT_DEATH(
        {
          rcubatch::set_misuse_policy(pol);
          rcubatch::thread_registration<F> reg;
          rcubatch::grace_domain<F> d;
          rcubatch::read_guard<F> guard;
          d.synchronize();
        },
        "synchronize called inside a read-side section.*fatal under every misuse policy")
        << "policy " << static_cast<int>(pol);
    EXPECT_DEATH(
        {
          rcubatch::set_misuse_policy(pol);
          rcubatch::thread_registration<F> reg;
          rcubatch::grace_domain<F> d;
          const auto c = d.snapshot();
          rcubatch::read_guard<F> guard;
          d.wait_for(c);
        },
        "wait_for called inside a read-side section")
        << "policy " << static_cast<int>(pol);
    EXPECT_DEATH(
        {
          rcubatch::set_misuse_policy(pol);
          rcubatch::thread_registration<F> reg;
          rcubatch::grace_domain<F> d;
          rcubatch::read_guard<F> guard;
          d.barrier();
        },
        "barrier called inside a read-side section")
        << "policy " << static_cast<int>(pol);
  }
}

TYPED_TEST(blocking_in_read_section, a_raw_flavor_read_lock_is_detected_too_except_under_qsbr) {
  using F = TypeParam;
  rcubatch::thread_registration<F> reg;
  rcubatch::grace_domain<F> d;
  gadget g;
  g.mark_registered();
  rcubatch::unreg_queue<gadget> q;
  q.push(g);
  keep_policy kp;
  rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
  if constexpr (F::quiescent_state_based) {
    // Under QSBR read_lock is a no-op and "online" is not "in a read section": only read_guard's
    // depth tells, so a raw read_lock is invisible (documented in flavor.hpp). Not a misuse here.
    EXPECT_FALSE(rcubatch::in_read_section<F>());
  } else {
    F::read_lock();  // no read_guard: liburcu's own read_ongoing() is what catches it
    const auto st = rcubatch::rollback_many(q, kp, d);
    F::read_unlock();
    EXPECT_TRUE(st.refused);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::blocking_in_read_section);
    EXPECT_TRUE(q.contains(g));
  }
  rcubatch::rollback_many(q, kp, d);
  EXPECT_EQ(kp.destroyed, 1);
}

TEST_F(misuse_fixture, quiescent_state_inside_a_read_guard_per_policy) {
  using F = rcubatch::flavor::qsbr;
  rcubatch::thread_registration<F> reg;
  {
    rcubatch::scoped_misuse_policy p(misuse_policy::throw_error, &capture);
    rcubatch::read_guard<F> guard;
    EXPECT_THROW(rcubatch::quiescent_state<F>(), rcubatch::misuse_error);
  }
  {
    rcubatch::scoped_misuse_policy p(misuse_policy::report, &capture);
    const auto before = count(misuse_kind::blocking_in_read_section);
    rcubatch::read_guard<F> guard;
    rcubatch::quiescent_state<F>();  // refused: the guard's pointers keep their protection
    EXPECT_EQ(count(misuse_kind::blocking_in_read_section), before + 1);
    EXPECT_EQ(g_cap.last_kind, misuse_kind::blocking_in_read_section);
  }
  EXPECT_DEATH(
      {
        rcubatch::set_misuse_policy(misuse_policy::abort_process);
        rcubatch::read_guard<F> guard;  // this thread is registered above
        rcubatch::quiescent_state<F>();
      },
      "quiescent_state<qsbr> called inside a read_guard");
}

}  // namespace
