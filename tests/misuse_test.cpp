// misuse policies: throw, abort, report — and the counters tests rely on.
#include <rcubatch/misuse.hpp>

#include <gtest/gtest.h>

#include <string>

namespace rcubatch {
namespace {

std::string g_last;
void capture(misuse_kind, std::string_view msg) noexcept { g_last = std::string(msg); }

TEST(misuse, the_default_policy_throws_before_anything_changes) {
  EXPECT_EQ(current_misuse_policy(), misuse_policy::throw_error);
  try {
    detail::diagnose(misuse_kind::not_registered, "push of a stranger");
    FAIL() << "expected misuse_error";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::not_registered);
    EXPECT_NE(std::string(e.what()).find("push of a stranger"), std::string::npos);
  }
}

TEST(misuse, report_calls_the_reporter_counts_and_returns) {
  scoped_misuse_policy p(misuse_policy::report, &capture);
  const unsigned long before = misuse_count(misuse_kind::ref_underflow);
  detail::diagnose(misuse_kind::ref_underflow, "put without hold");
  EXPECT_EQ(misuse_count(misuse_kind::ref_underflow), before + 1);
  EXPECT_EQ(g_last, "put without hold");
}

TEST(misuse, the_scoped_policy_restores_the_previous_one) {
  {
    scoped_misuse_policy p(misuse_policy::abort_process);
    EXPECT_EQ(current_misuse_policy(), misuse_policy::abort_process);
  }
  EXPECT_EQ(current_misuse_policy(), misuse_policy::throw_error);
}

TEST(misuse, noexcept_contexts_report_instead_of_throwing) {
  scoped_misuse_policy p(misuse_policy::throw_error, &capture);
  g_last.clear();
  detail::diagnose_noexcept(misuse_kind::hold_after_drain, "late hold");
  EXPECT_EQ(g_last, "late hold");
}

TEST(misuse_death, abort_process_prints_and_aborts) {
  EXPECT_DEATH(
      {
        set_misuse_policy(misuse_policy::abort_process);
        detail::diagnose(misuse_kind::register_twice, "registered twice");
      },
      "rcubatch: registered twice");
}

TEST(misuse_death, fatal_misuse_aborts_under_every_policy) {
  for (misuse_policy p : {misuse_policy::throw_error, misuse_policy::report, misuse_policy::abort_process}) {
    EXPECT_DEATH(
        {
          set_misuse_policy(p);
          detail::diagnose_fatal(misuse_kind::destroyed_while_linked, "gone while linked");
        },
        "gone while linked.*fatal under every misuse policy");
  }
}

TEST(misuse, every_kind_has_a_name) {
  for (std::size_t k = 0; k < kMisuseKinds; ++k) EXPECT_FALSE(to_string(static_cast<misuse_kind>(k)).empty());
}

}  // namespace
}  // namespace rcubatch
