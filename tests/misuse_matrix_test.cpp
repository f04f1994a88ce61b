// Every misuse diagnostic of the core, under every misuse policy, as one table (was
// tests/stress/misuse_policy_test.cpp, unrolled by hand).
//
//   throw_error    misuse_error of the right kind and message, the operation changed nothing,
//                  counted once, the reporter not called;
//   report         the reporter gets the kind and the message, the operation is refused, counted once;
//   abort_process  a death test: the message on stderr, then abort.
// Diagnostics raised from noexcept contexts (ref_count, batch::queue) cannot throw: under
// throw_error they report, which is asserted too. Fatal misuse (a bare grace-period wait inside a
// read-side section, destroying a linked object) aborts under every policy: the second table.
//
// A row names a scenario: a small world built fresh for the row, one misuse() call, and the
// world's own checks of what the refused operation left behind (expect_refused).
#include <array>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>  // ContainsRegex: the same regex dialect as EXPECT_DEATH
#include <gtest/gtest.h>

#include "rcubatch.hpp"
#include "rcubatch/counting_flavor.hpp"
#include "support/flavors.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

using CF = counting_flavor<struct misuse_matrix_tag>;

/// One misuse, set up and ready: misuse() commits it, expect_refused(policy) checks the aftermath
/// under throw_error / report. The destructor leaves every object destroyable.
/// Each world also describes its row: `kind`, `name()`, `message()` (a regex), and optionally
/// `from_noexcept` and `policies` (defaults below).
struct world {
  static constexpr bool from_noexcept = false;
  static constexpr std::array policies = {misuse_policy::throw_error, misuse_policy::report,
                                          misuse_policy::abort_process};
  virtual ~world() = default;
  virtual void misuse() = 0;
  virtual void expect_refused(misuse_policy) {}
};

/// A row of the tables.
struct misuse_case {
  std::string name;                      ///< the test name: what is misused
  misuse_kind kind;                      ///< the diagnostic expected (diagnosed table)
  std::string message;                   ///< a regex the message must contain, reported or on stderr
  bool from_noexcept = false;            ///< under throw_error it reports instead of throwing
  std::function<std::unique_ptr<world>()> make;
  std::vector<misuse_policy> policies;   ///< the policies it runs under
};

/// A case under one policy: the parameter of both tables.
struct misuse_row {
  const misuse_case* c;
  misuse_policy policy;
};

std::string policy_name(misuse_policy p) {
  switch (p) {
    case misuse_policy::throw_error: return "throw_error";
    case misuse_policy::report: return "report";
    case misuse_policy::abort_process: return "abort_process";
  }
  return "unknown_policy";
}

std::string row_name(const ::testing::TestParamInfo<misuse_row>& info) {
  return info.param.c->name + "_under_" + policy_name(info.param.policy);
}

// What a failing row prints for GetParam().
void PrintTo(const misuse_row& r, std::ostream* os) { *os << r.c->name << " under " << policy_name(r.policy); }

// --- the worlds --------------------------------------------------------------------------------

/// A node that went through a whole batch and is kept in memory (state released).
struct released_node {
  released_node() {
    n.mark_registered();
    unreg_queue<node> q;
    q.push(n);
    rollback_many(q, kp, d);
  }
  node n;
  keeping_policy kp;
  grace_domain<CF> d;
};

struct double_queue : world {
  static constexpr misuse_kind kind = misuse_kind::queued_in_other_queue;
  static std::string name() { return "double_queue_across_queues"; }
  static std::string message() { return "another unregistration queue"; }
  node n;
  unreg_queue<node> q1, q2;
  keeping_policy kp;
  grace_domain<CF> d;
  bool pushed = false;
  double_queue() {
    n.mark_registered();
    q1.push(n);
  }
  void misuse() override { pushed = q2.push(n); }
  void expect_refused(misuse_policy p) override {
    if (p == misuse_policy::throw_error) {  // left in its first queue
      EXPECT_TRUE(q1.contains(n));
      EXPECT_FALSE(q2.contains(n));
      EXPECT_EQ(q1.size(), 1u);
      EXPECT_EQ(q2.size(), 0u);
    } else {  // report: the kernel's list_move semantics, after the report
      EXPECT_TRUE(pushed);
      EXPECT_FALSE(q1.contains(n));
      EXPECT_TRUE(q2.contains(n));
      EXPECT_EQ(q1.size(), 0u);
      EXPECT_EQ(q2.size(), 1u);
    }
    // The object was never unregistered: a real batch brings it to a destroyable state.
    rollback_many(q1, kp, d);
    rollback_many(q2, kp, d);
    EXPECT_EQ(n.state(), reg_state::released);
    EXPECT_EQ(kp.destroyed, 1);
  }
};

struct push_unregistered : world {
  static constexpr misuse_kind kind = misuse_kind::not_registered;
  static std::string name() { return "push_of_a_never_registered_object"; }
  static std::string message() { return "only registered objects can be unregistered"; }
  node n;  // never registered
  unreg_queue<node> q;
  bool pushed = true;
  void misuse() override { pushed = q.push(n); }
  void expect_refused(misuse_policy p) override {
    if (p == misuse_policy::report) {
      EXPECT_FALSE(pushed);
    }
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(n.state(), reg_state::uninitialized);
  }
};

struct unregister_released : world {
  static constexpr misuse_kind kind = misuse_kind::already_unregistering;
  static std::string name() { return "unregister_of_a_released_object"; }
  static std::string message() { return "object is released"; }
  released_node r;
  batch_stats st;
  unsigned long gps_before = 0;
  void misuse() override {
    gps_before = CF::synchronizes();
    st = unregister_one(r.n, r.kp, r.d);
  }
  void expect_refused(misuse_policy p) override {
    if (p == misuse_policy::report) {
      EXPECT_EQ(st.skipped, 1u);
      EXPECT_EQ(st.objects, 0u);
    }
    EXPECT_EQ(r.kp.destroyed, 1) << "not destroyed a second time";
    EXPECT_EQ(CF::synchronizes(), gps_before) << "no grace period for a refused object";
  }
};

struct ref_underflow : world {
  static constexpr misuse_kind kind = misuse_kind::ref_underflow;
  static std::string name() { return "ref_underflow"; }
  static std::string message() { return "put\\(\\) without a matching hold\\(\\)"; }
  static constexpr bool from_noexcept = true;  // under throw_error it reports
  node n;  // a registrable's count (a ref_count exists only inside one); never registered
  void misuse() override { n.refs().put(); }
  void expect_refused(misuse_policy) override {
    EXPECT_EQ(n.refs().count(), 0u);
    n.refs().hold();
    n.refs().put();
    EXPECT_EQ(n.refs().count(), 0u);
  }
};

struct hold_after_drain : world {
  static constexpr misuse_kind kind = misuse_kind::hold_after_drain;
  static std::string name() { return "hold_after_drain"; }
  static std::string message() { return "already drained to zero"; }
  static constexpr bool from_noexcept = true;  // under throw_error it reports
  released_node r;  // refs drained to zero, destroy hook ran, memory kept
  void misuse() override { r.n.refs().hold(); }
  void expect_refused(misuse_policy) override {
    EXPECT_EQ(r.n.refs().count(), 0u) << "the refused hold must not be counted";
  }
};

/// A type with tracked references (ref_tracker.hpp), for the token misuses.
struct tracked_node : tracked_registrable<tracked_node> {};

struct ref_token_unknown : world {
  static constexpr misuse_kind kind = misuse_kind::ref_token_unknown;
  static std::string name() { return "ref_token_unknown"; }
  static std::string message() { return "a token that holds nothing"; }
  static constexpr bool from_noexcept = true;  // under throw_error it reports
  tracked_node n;
  ref_token held = n.refs().hold("held");
  ref_token never;  // a put without its hold
  void misuse() override { n.refs().put(never); }
  void expect_refused(misuse_policy) override {
    EXPECT_EQ(n.refs().count(), 1u) << "the other holder's reference is untouched";
    EXPECT_EQ(holders(n).size(), 1u);
    n.refs().put(held);
  }
};

struct ref_token_put_twice : world {
  static constexpr misuse_kind kind = misuse_kind::ref_token_put_twice;
  static std::string name() { return "ref_token_put_twice"; }
  static std::string message() { return "put\\(token\\) of a token already put"; }
  static constexpr bool from_noexcept = true;
  tracked_node n;
  ref_token other = n.refs().hold("other");
  ref_token once = n.refs().hold("once");
  ref_token_put_twice() { n.refs().put(once); }
  void misuse() override { n.refs().put(once); }
  void expect_refused(misuse_policy) override {
    EXPECT_EQ(n.refs().count(), 1u) << "the second put took nobody's reference";
    n.refs().put(other);
  }
};

struct ref_token_leaked : world {
  static constexpr misuse_kind kind = misuse_kind::ref_token_leaked;
  static std::string name() { return "ref_token_leaked"; }
  static std::string message() { return "token was destroyed without put: lost at "; }
  static constexpr bool from_noexcept = true;
  tracked_node n;
  void misuse() override { ref_token lost = n.refs().hold("lost"); }
  void expect_refused(misuse_policy) override {
    EXPECT_EQ(n.refs().count(), 1u) << "the leaked hold stays";
    ASSERT_EQ(holders(n).size(), 1u);
    EXPECT_EQ(holders(n)[0].tag, "lost") << "and stays listed, for the stall report";
    // Let the object go (its destructor reports the hold still listed, to the default reporter).
    static_cast<detail::registrable_base&>(n).refs().put();
  }
};

struct register_twice : world {
  static constexpr misuse_kind kind = misuse_kind::register_twice;
  static std::string name() { return "register_twice"; }
  static std::string message() { return "mark_registered on an object in state released"; }
  released_node r;
  bool registered = true;
  void misuse() override { registered = r.n.mark_registered(); }
  void expect_refused(misuse_policy p) override {
    if (p == misuse_policy::report) {
      EXPECT_FALSE(registered);
    }
    EXPECT_EQ(r.n.state(), reg_state::released);
  }
};

struct late_queue_policy {
  static constexpr bool publishes_nothing = true;
  node* late;
  bool accepted = true;
  void uninit(node&, batch& b) noexcept { accepted = b.queue(*late); }
  void destroy(node*) noexcept {}
};

struct queue_from_uninit : world {
  static constexpr misuse_kind kind = misuse_kind::queued_too_late;
  static std::string name() { return "batch_queue_from_uninit"; }
  static std::string message() { return "batch::queue called after the notify phase"; }
  static constexpr bool from_noexcept = true;  // under throw_error it reports
  static constexpr std::array policies = {misuse_policy::throw_error, misuse_policy::report};
  node a, late;
  grace_domain<CF> d;
  unreg_queue<node> q;
  late_queue_policy lp{&late};
  batch_stats st;
  queue_from_uninit() {
    a.mark_registered();
    late.mark_registered();
    q.push(a);
  }
  void misuse() override { st = rollback_many(q, lp, d); }
  void expect_refused(misuse_policy) override {
    EXPECT_FALSE(lp.accepted);
    EXPECT_EQ(st.objects, 1u);
    EXPECT_EQ(late.state(), reg_state::registered) << "left out of the batch, untouched";
    EXPECT_FALSE(late.dismantling());
    unregister_one(late, keeping_policy{}, d);
  }
};

template <class F>
struct rollback_in_read_section : world {
  static constexpr misuse_kind kind = misuse_kind::blocking_in_read_section;
  static std::string name() { return "rollback_many_in_read_section_" + std::string(F::name); }
  static std::string message() { return "rollback_many<" + std::string(F::name) + "> called inside a read-side section"; }
  thread_registration<F> reg;
  grace_domain<F> d;
  node n;
  unreg_queue<node> q;
  keeping_policy kp;
  batch_stats st;
  rollback_in_read_section() {
    n.mark_registered();
    q.push(n);
  }
  void misuse() override {
    read_guard<F> guard;
    st = rollback_many(q, kp, d);
  }
  void expect_refused(misuse_policy p) override {
    if (p == misuse_policy::report) {
      EXPECT_TRUE(st.refused);
      EXPECT_EQ(st.objects, 0u);
    }
    EXPECT_TRUE(q.contains(n));
    EXPECT_EQ(n.state(), reg_state::registered);
    EXPECT_FALSE(n.dismantling());
    EXPECT_EQ(d.stats().grace_periods, 0u);
    rollback_many(q, kp, d);  // outside the guard it goes through
    EXPECT_EQ(kp.destroyed, 1);
  }
};

struct quiescent_state_in_read_guard : world {
  static constexpr misuse_kind kind = misuse_kind::blocking_in_read_section;
  static std::string name() { return "quiescent_state_in_a_read_guard"; }
  static std::string message() { return "quiescent_state<qsbr> called inside a read_guard"; }
  using F = flavor::qsbr;
  thread_registration<F> reg;
  void misuse() override {
    read_guard<F> guard;
    quiescent_state<F>();  // refused under report: the guard's pointers keep their protection
  }
};

// Fatal misuse: no expect_refused, the process ends under every policy.
/// Deletes a registered object, queued for unregistration or not.
template <bool Queued>
struct destroy_linked : world {
  static constexpr misuse_kind kind = misuse_kind::destroyed_while_linked;
  static std::string name() { return Queued ? "destroying_a_queued_object" : "destroying_a_registered_object"; }
  static std::string message() { return Queued ? "while queued" : "destroyed in state registered"; }
  void misuse() override {
    auto* n = new node;
    n->mark_registered();
    if constexpr (Queued) (new unreg_queue<node>)->push(*n);  // leaked: the process ends here
    delete n;
  }
};

// GCC 12 sees rollback_many store the state of the object this policy just deleted; the
// destructor's fatal diagnostic ends the process before that store, which is what the test checks.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
struct destroy_from_unlist : world {
  static constexpr misuse_kind kind = misuse_kind::destroyed_while_linked;
  static std::string name() { return "destroying_an_object_from_unlist"; }
  static std::string message() { return "object destroyed in state registered"; }
  // A policy that deletes in unlist (readers can still reach the object) frees it mid-batch.
  struct bad_policy {
    void unlist(node& n) noexcept { delete &n; }
  };
  void misuse() override {
    auto* n = new node;
    n->mark_registered();
    grace_domain<CF> d;
    unreg_queue<node> q;
    q.push(*n);
    rollback_many(q, bad_policy{}, d);
  }
};
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

enum class gp_wait { synchronize, wait_for, barrier };

template <class F, gp_wait W>
struct grace_wait_in_read_section : world {
  static constexpr misuse_kind kind = misuse_kind::blocking_in_read_section;
  static constexpr std::string_view wait_name = W == gp_wait::synchronize ? "synchronize"
                                                : W == gp_wait::wait_for  ? "wait_for"
                                                                          : "barrier";
  static std::string name() { return std::string(wait_name) + "_in_read_section_" + std::string(F::name); }
  static std::string message() {
    return std::string(wait_name) + " called inside a read-side section" +
           (W == gp_wait::synchronize ? ".*fatal under every misuse policy" : "");
  }
  thread_registration<F> reg;
  grace_domain<F> d;
  void misuse() override {
    const auto c = d.snapshot();
    read_guard<F> guard;
    if constexpr (W == gp_wait::synchronize) d.synchronize();
    if constexpr (W == gp_wait::wait_for) d.wait_for(c);
    if constexpr (W == gp_wait::barrier) d.barrier();
  }
};

// --- the tables ----------------------------------------------------------------------------------

template <class W>
misuse_case case_of() {
  return {.name = W::name(),
          .kind = W::kind,
          .message = W::message(),
          .from_noexcept = W::from_noexcept,
          .make = [] { return std::unique_ptr<world>(new W); },
          .policies = {W::policies.begin(), W::policies.end()}};
}

template <class... W>
std::vector<misuse_case> cases_of() {
  return {case_of<W>()...};
}

template <class... W>
std::vector<misuse_case> cases_of_types(::testing::Types<W...>) {
  return cases_of<W...>();
}

template <class F>
using synchronize_in_read_section = grace_wait_in_read_section<F, gp_wait::synchronize>;
template <class F>
using wait_for_in_read_section = grace_wait_in_read_section<F, gp_wait::wait_for>;
template <class F>
using barrier_in_read_section = grace_wait_in_read_section<F, gp_wait::barrier>;

/// Diagnosed as the policy says.
std::vector<misuse_case> diagnosed_cases() {
  std::vector<misuse_case> c = cases_of<double_queue, push_unregistered, unregister_released, ref_underflow,
                                        hold_after_drain, register_twice, queue_from_uninit,
                                        quiescent_state_in_read_guard, ref_token_unknown, ref_token_put_twice,
                                        ref_token_leaked>();
  for (auto& x : cases_of_types(each_real_flavor<rollback_in_read_section>{})) c.push_back(std::move(x));
  return c;
}

/// Fatal under every policy.
std::vector<misuse_case> fatal_cases() {
  std::vector<misuse_case> c = cases_of<destroy_linked<false>, destroy_linked<true>, destroy_from_unlist>();
  for (auto* more : {+[] { return cases_of_types(each_real_flavor<synchronize_in_read_section>{}); },
                     +[] { return cases_of_types(each_real_flavor<wait_for_in_read_section>{}); },
                     +[] { return cases_of_types(each_real_flavor<barrier_in_read_section>{}); }})
    for (auto& x : more()) c.push_back(std::move(x));
  return c;
}

struct tables {
  std::vector<misuse_case> diagnosed = diagnosed_cases(), fatal = fatal_cases();
};

const tables& the_tables() {
  static const tables t;
  return t;
}

std::vector<misuse_row> rows(const std::vector<misuse_case>& cases) {
  std::vector<misuse_row> out;
  for (const misuse_case& c : cases)
    for (misuse_policy p : c.policies) out.push_back({&c, p});
  return out;
}

struct misuse_fixture : ::testing::Test {
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  static unsigned long count(misuse_kind k) { return misuse_count(k); }
  misuse_capture cap;
};

// --- diagnosed: throw / report / abort as the policy says ----------------------------------------
struct misuse_diagnosed : misuse_fixture, ::testing::WithParamInterface<misuse_row> {};

TEST_P(misuse_diagnosed, as_the_policy_says) {
  const misuse_case& c = *GetParam().c;
  const misuse_policy policy = GetParam().policy;
  const auto message = ::testing::ContainsRegex(c.message);
  if (policy == misuse_policy::abort_process) {
    EXPECT_DEATH(
        {
          world* w = c.make().release();  // the child aborts: nothing to clean up
          set_misuse_policy(misuse_policy::abort_process);
          w->misuse();
        },
        c.message);
    return;
  }
  std::unique_ptr<world> w = c.make();
  scoped_misuse_policy p(policy, cap);
  const auto before = count(c.kind);
  if (policy == misuse_policy::throw_error && !c.from_noexcept) {
    try {
      w->misuse();
      ADD_FAILURE() << "no misuse_error";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), c.kind);
      EXPECT_THAT(std::string(e.what()), message);
    }
    EXPECT_EQ(cap.calls, 0) << "throw_error does not call the reporter";
  } else {  // report, or throw_error downgraded to report in a noexcept context
    w->misuse();
    EXPECT_EQ(cap.calls, 1);
    EXPECT_EQ(cap.last_kind, c.kind);
    EXPECT_THAT(cap.last_message, message);
  }
  EXPECT_EQ(count(c.kind), before + 1) << "counted once";
  w->expect_refused(policy);
}

INSTANTIATE_TEST_SUITE_P(table, misuse_diagnosed, ::testing::ValuesIn(rows(the_tables().diagnosed)), row_name);

// --- fatal under every policy ---------------------------------------------------------------------
struct misuse_fatal : misuse_fixture, ::testing::WithParamInterface<misuse_row> {};

TEST_P(misuse_fatal, aborts_whatever_the_policy) {
  const misuse_case& c = *GetParam().c;
  const misuse_policy policy = GetParam().policy;
  EXPECT_DEATH(
      {
        world* w = c.make().release();
        set_misuse_policy(policy);
        w->misuse();
      },
      c.message);
}

INSTANTIATE_TEST_SUITE_P(table, misuse_fatal, ::testing::ValuesIn(rows(the_tables().fatal)), row_name);

// --- the cases that fit no table -------------------------------------------------------------------

// Was LIBRARY BUG 1 (RELIABILITY.md), fixed in 89202d3; kept as the regression test. Under report (and under
// throw_error, which ref_count downgrades to report), hold() after the drain is diagnosed but not
// refused: the count goes from "draining, 0" to "draining, 1". The matching put() then sees
// old == kDraining|1 and calls listener_->released(owner_) — a second release, through a pointer
// to the ref_drain of a batch that has already returned (use-after-return, then a second destroy).
// Fix: in ref_count::hold(), after diagnose_noexcept returns, undo the increment
// (word_.fetch_sub(1, relaxed)), as put() already does for underflow; and make put() treat
// old == kDraining as underflow (it does).
TEST_F(misuse_fixture, hold_after_drain_is_refused_under_report_so_a_later_put_cannot_release_twice) {
  released_node r;
  scoped_misuse_policy p(misuse_policy::report, cap);
  r.n.refs().hold();
  EXPECT_EQ(r.n.refs().count(), 0u) << "the refused hold must not be counted";
}

template <class F>
struct raw_read_lock : misuse_fixture {};
TYPED_TEST_SUITE(raw_read_lock, real_flavors);

TYPED_TEST(raw_read_lock, is_detected_too_except_under_qsbr) {
  using F = TypeParam;
  thread_registration<F> reg;
  grace_domain<F> d;
  node n;
  n.mark_registered();
  unreg_queue<node> q;
  q.push(n);
  keeping_policy kp;
  scoped_misuse_policy p(misuse_policy::report, this->cap);
  if constexpr (F::quiescent_state_based) {
    // Under QSBR read_lock is a no-op and "online" is not "in a read section": only read_guard's
    // depth tells, so a raw read_lock is invisible (documented in flavor.hpp). Not a misuse here.
    EXPECT_FALSE(in_read_section<F>());
  } else {
    F::read_lock();  // no read_guard: liburcu's own read_ongoing() is what catches it
    const auto st = rollback_many(q, kp, d);
    F::read_unlock();
    EXPECT_TRUE(st.refused);
    EXPECT_EQ(this->cap.last_kind, misuse_kind::blocking_in_read_section);
    EXPECT_TRUE(q.contains(n));
  }
  rollback_many(q, kp, d);
  EXPECT_EQ(kp.destroyed, 1);
}

}  // namespace
}  // namespace rcubatch::test
