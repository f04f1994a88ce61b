// grace_domain: counted GPs, cookies on liburcu 0.13 (no polling API), coalescing, misuse.
#include <rcubatch/grace_domain.hpp>
#include <rcubatch/counting_flavor.hpp>
#include <rcubatch/read_guard.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/flavors.hpp"
#include "support/thread_state.hpp"
#include "support/watchdog.hpp"

namespace rcubatch {
namespace {

struct grace_domain_counting : test::counting_test<struct tag> {};

TEST_F(grace_domain_counting, synchronize_runs_and_counts_one_grace_period) {
  domain.synchronize();
  EXPECT_EQ(domain.stats().grace_periods, 1u);
  EXPECT_EQ(fake::synchronizes(), 1u);
}

TEST_F(grace_domain_counting, a_cookie_is_satisfied_only_after_a_later_grace_period) {
  const gp_cookie c = domain.snapshot();
  EXPECT_FALSE(domain.elapsed(c));
  domain.synchronize();
  EXPECT_TRUE(domain.elapsed(c));
  EXPECT_FALSE(domain.elapsed(domain.snapshot())) << "a fresh cookie needs the next GP";
}

TEST_F(grace_domain_counting, a_cookie_taken_during_a_grace_period_needs_the_next_one) {
  // A GP that was already running when the unlink happened may have missed a reader that saw the
  // unlinked object, so it does not count.
  gp_cookie mid;
  fake::on_synchronize = [&] { mid = domain.snapshot(); };
  domain.synchronize();
  fake::on_synchronize = nullptr;
  EXPECT_FALSE(domain.elapsed(mid));
  domain.synchronize();
  EXPECT_TRUE(domain.elapsed(mid));
}

TEST_F(grace_domain_counting, wait_for_skips_a_grace_period_that_already_elapsed) {
  const gp_cookie c = domain.snapshot();
  domain.synchronize();
  EXPECT_FALSE(domain.wait_for(c));
  EXPECT_EQ(domain.stats().elided_by_cookie, 1u);
  EXPECT_EQ(fake::synchronizes(), 1u);
  EXPECT_TRUE(domain.wait_for(domain.snapshot()));
  EXPECT_EQ(fake::synchronizes(), 2u);
}

TEST_F(grace_domain_counting, the_zero_cookie_has_always_elapsed) {
  EXPECT_TRUE(domain.elapsed(gp_cookie{}));
  grace_domain<fake> other;
  EXPECT_TRUE(other.elapsed(gp_cookie{})) << "in every domain";
  EXPECT_FALSE(other.wait_for(gp_cookie{}));
  EXPECT_EQ(fake::synchronizes(), 0u);
}

TEST_F(grace_domain_counting, cookies_carry_their_domain_and_stay_two_plain_words) {
  static_assert(std::is_trivially_copyable_v<gp_cookie> && sizeof(gp_cookie) == 16);
  grace_domain<fake> other;
  EXPECT_NE(domain.id(), other.id());
  EXPECT_NE(domain.id(), 0u);
  EXPECT_EQ(domain.snapshot().domain, domain.id());
}

// issue 12 defect 2: before cookies named their domain, B.wait_for(A's cookie) compared A's
// sequence with B's and returned "elapsed" at once when B had run more GPs (failed on c925af9:
// wait_for returned false, no GP ran, nothing was diagnosed).
TEST_F(grace_domain_counting, another_domains_cookie_is_diagnosed_and_never_returns_early) {
  grace_domain<fake> a;
  domain.synchronize();
  domain.synchronize();  // this domain's sequence is now past any fresh cookie of `a`
  const gp_cookie from_a = a.snapshot();
  const unsigned long before = misuse_count(misuse_kind::foreign_cookie);
  {
    scoped_misuse_policy report(misuse_policy::report, [](misuse_kind, std::string_view) noexcept {});
    EXPECT_FALSE(domain.elapsed(from_a)) << "not elapsed: a caller that then waits is safe";
    const unsigned long gps = fake::synchronizes();
    EXPECT_TRUE(domain.wait_for(from_a)) << "report: waits a full grace period";
    EXPECT_EQ(fake::synchronizes(), gps + 1);
  }
  EXPECT_EQ(misuse_count(misuse_kind::foreign_cookie), before + 2);
  const unsigned long gps = fake::synchronizes();
  try {
    domain.wait_for(from_a);
    ADD_FAILURE() << "throw_error: wait_for must throw on a foreign cookie";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::foreign_cookie);
    EXPECT_NE(std::string(e.what()).find("not by this domain"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake::synchronizes(), gps) << "the throw changed nothing";
  EXPECT_EQ(misuse_count(misuse_kind::foreign_cookie), before + 3);
  scoped_misuse_policy quiet(misuse_policy::report, [](misuse_kind, std::string_view) noexcept {});
  EXPECT_FALSE(domain.elapsed(gp_cookie{5, 0})) << "a hand-made cookie is issued by no domain";
  EXPECT_EQ(misuse_count(misuse_kind::foreign_cookie), before + 4);
}

TEST_F(grace_domain_counting, another_domains_cookie_aborts_under_abort_process) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        set_misuse_policy(misuse_policy::abort_process);
        grace_domain<fake> a;
        domain.wait_for(a.snapshot());
      },
      "was issued by domain #[0-9]+, not by this domain");
}

TEST_F(grace_domain_counting, barrier_runs_pending_callbacks_and_counts) {
  domain.barrier();
  EXPECT_EQ(domain.stats().barriers, 1u);
  EXPECT_EQ(fake::barriers(), 1u);
}

TEST(grace_domain, concurrent_callers_are_each_served_by_their_own_or_a_coalesced_grace_period) {
  grace_domain<flavor::memb> domain;
  constexpr int kThreads = 4, kCalls = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      thread_registration<flavor::memb> reg;
      for (int i = 0; i < kCalls; ++i) domain.synchronize();
    });
  for (auto& t : threads) t.join();
  const domain_stats s = domain.stats();
  EXPECT_EQ(s.grace_periods + s.coalesced, static_cast<std::uint64_t>(kThreads * kCalls));
  EXPECT_GE(s.grace_periods, static_cast<std::uint64_t>(kCalls)) << "one thread alone needs one each";
}

// --- a waiter racing another thread's in-progress grace period on one domain (issue 12) --------
// The racer flavor's on_synchronize hook holds the first GP "in progress" (the domain's sequence
// odd) until the test releases it, so a second thread can snapshot / poll / wait while it runs.

struct grace_domain_race : test::counting_test<struct race_tag> {
  using racer = fake;
  void SetUp() override {
    racer::on_synchronize = [this] {
      if (!hold_next_gp.exchange(false)) return;
      started.count_down();
      release.wait();
      held_gp_ended.store(true);  // the GP's body is over; the domain marks it ended right after
    };
  }
  /// Runs a GP on another thread and returns once it is in progress (held by the hook).
  std::thread start_held_gp() {
    std::thread t([this] { domain.synchronize(); });
    started.wait();
    return t;
  }
  std::latch started{1};
  std::latch release{1};
  std::atomic<bool> hold_next_gp{true};
  std::atomic<bool> held_gp_ended{false};
};

TEST_F(grace_domain_race, a_cookie_taken_during_another_threads_gp_is_not_covered_by_it) {
  std::thread writer = start_held_gp();
  const gp_cookie c = domain.snapshot();  // the running GP may already have passed a reader
  EXPECT_FALSE(domain.elapsed(c));
  release.count_down();
  writer.join();
  EXPECT_FALSE(domain.elapsed(c)) << "the GP already running at the snapshot counted as covering it";
  EXPECT_TRUE(domain.wait_for(c)) << "it needs a GP of its own";
  EXPECT_EQ(racer::synchronizes(), 2u);
  EXPECT_TRUE(domain.elapsed(c));
}


TEST_F(grace_domain_race, a_gp_still_running_on_another_thread_has_not_elapsed_yet) {
  const gp_cookie c = domain.snapshot();  // idle: the next GP to start covers it...
  std::thread writer = start_held_gp();   // ...and has started, but not ended
  EXPECT_FALSE(domain.elapsed(c)) << "an in-progress GP counted as ended";
  std::atomic<pid_t> waiter_tid{0};
  std::atomic<bool> waiter_returned{false};
  bool ended_when_waiter_returned = false;
  std::thread waiter([&] {
    waiter_tid = gettid();
    domain.wait_for(c);
    ended_when_waiter_returned = held_gp_ended.load();
    waiter_returned = true;
  });
  // Release the GP only once the waiter is asleep on the GP mutex (correct code) or has returned
  // (a mutant that counts the running GP) — no timing: both are observable states.
  while (waiter_tid.load() == 0) std::this_thread::yield();
  while (!waiter_returned.load() && test::thread_state(waiter_tid.load()) != 'S') std::this_thread::yield();
  release.count_down();
  writer.join();
  waiter.join();
  EXPECT_TRUE(ended_when_waiter_returned) << "wait_for returned while the covering GP was still running";
  EXPECT_EQ(racer::synchronizes(), 1u) << "the writer's GP started after the snapshot: it serves the waiter";
  EXPECT_EQ(domain.stats().coalesced, 1u);
  EXPECT_TRUE(domain.elapsed(c));
}

template <class F>
class grace_domain_real : public ::testing::Test {};
TYPED_TEST_SUITE(grace_domain_real, test::real_flavors);

TYPED_TEST(grace_domain_real, counts_real_grace_periods) {
  grace_domain<TypeParam> domain;
  domain.synchronize();
  domain.wait_for(domain.snapshot());
  domain.barrier();
  EXPECT_EQ(domain.stats().grace_periods, 2u);
  EXPECT_EQ(domain.stats().barriers, 1u);
}

TYPED_TEST(grace_domain_real, blocking_inside_a_read_section_is_fatal_under_every_policy) {
  using F = TypeParam;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (misuse_policy p : {misuse_policy::throw_error, misuse_policy::report}) {
    EXPECT_DEATH(
        {
          set_misuse_policy(p);
          thread_registration<F> reg;
          read_guard<F> guard;
          grace_domain<F> d;
          d.synchronize();
        },
        "synchronize called inside a read-side section");
    EXPECT_DEATH(
        {
          set_misuse_policy(p);
          thread_registration<F> reg;
          read_guard<F> guard;
          grace_domain<F> d;
          d.barrier();
        },
        "barrier called inside a read-side section");
  }
}

// Issue 22: the GP mutex was taken online, so two online qsbr threads calling synchronize()
// deadlocked at the first contention (each stalls the GP the other runs). Both must finish; a
// reader announcing quiescent states runs beside them.
TEST(grace_domain_qsbr, two_online_writers_calling_synchronize_both_return) {
  grace_domain<flavor::qsbr> domain;
  test::watchdog dog(std::chrono::seconds(30), "two online qsbr writers calling synchronize");
  constexpr int kEach = 5'000;
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::thread reader([&] {
    thread_registration<flavor::qsbr> r;
    while (!stop.load(std::memory_order_acquire)) {
      { read_guard<flavor::qsbr> guard; }
      quiescent_state<flavor::qsbr>();
    }
  });
  auto writer = [&] {
    thread_registration<flavor::qsbr> r;  // online from here to the end: a qsbr writer as users write it
    for (int i = 0; i < kEach; ++i) domain.synchronize();
    finished.fetch_add(1);
  };
  std::thread a(writer), b(writer);
  a.join();
  b.join();
  stop = true;
  reader.join();
  EXPECT_EQ(finished.load(), 2);
  const domain_stats st = domain.stats();
  EXPECT_EQ(st.grace_periods + st.coalesced, 2u * kEach);
}

}  // namespace
}  // namespace rcubatch
