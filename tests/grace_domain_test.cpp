// grace_domain: counted GPs, cookies on liburcu 0.13 (no polling API), coalescing, misuse.
#include <rcubatch/grace_domain.hpp>
#include <rcubatch/counting_flavor.hpp>
#include <rcubatch/read_guard.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace rcubatch {
namespace {

struct tag;
using fake = counting_flavor<tag>;

class grace_domain_counting : public ::testing::Test {
 protected:
  void SetUp() override { fake::reset(); }
  void TearDown() override { fake::reset(); }
  grace_domain<fake> domain;
};

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

grace_domain<fake>* g_domain = nullptr;
gp_cookie g_mid;

TEST_F(grace_domain_counting, a_cookie_taken_during_a_grace_period_needs_the_next_one) {
  // A GP that was already running when the unlink happened may have missed a reader that saw the
  // unlinked object, so it does not count.
  g_domain = &domain;
  fake::on_synchronize = []() noexcept { g_mid = g_domain->snapshot(); };
  domain.synchronize();
  fake::on_synchronize = nullptr;
  EXPECT_FALSE(domain.elapsed(g_mid));
  domain.synchronize();
  EXPECT_TRUE(domain.elapsed(g_mid));
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

template <class F>
class grace_domain_real : public ::testing::Test {};
using real_flavors = ::testing::Types<flavor::memb, flavor::qsbr, flavor::mb, flavor::bp>;
TYPED_TEST_SUITE(grace_domain_real, real_flavors);

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

}  // namespace
}  // namespace rcubatch
