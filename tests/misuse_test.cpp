// misuse policies: throw, abort, report — and the counters tests rely on.
#include <rcubatch/misuse.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/misuse_capture.hpp"

namespace rcubatch {
namespace {

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
  test::misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::report, cap);
  const unsigned long before = misuse_count(misuse_kind::ref_underflow);
  detail::diagnose(misuse_kind::ref_underflow, "put without hold");
  EXPECT_EQ(misuse_count(misuse_kind::ref_underflow), before + 1);
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::ref_underflow);
  EXPECT_EQ(cap.last_message, "put without hold");
}

TEST(misuse, the_scoped_policy_restores_the_previous_one) {
  {
    scoped_misuse_policy p(misuse_policy::abort_process);
    EXPECT_EQ(current_misuse_policy(), misuse_policy::abort_process);
  }
  EXPECT_EQ(current_misuse_policy(), misuse_policy::throw_error);
}

TEST(misuse, noexcept_contexts_report_instead_of_throwing) {
  test::misuse_capture cap;
  scoped_misuse_policy p(misuse_policy::throw_error, cap);
  detail::diagnose_noexcept(misuse_kind::hold_after_drain, "late hold");
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_message, "late hold");
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

TEST(misuse, a_reporter_with_state_is_called_with_its_context) {
  std::vector<std::string> seen;
  auto into_seen = [&seen](misuse_kind k, std::string_view m) noexcept {
    seen.push_back(std::string(to_string(k)) + ":" + std::string(m));
  };
  {
    scoped_misuse_policy p(misuse_policy::report, into_seen);
    detail::diagnose(misuse_kind::queued_too_late, "late");
    detail::diagnose_noexcept(misuse_kind::foreign_cookie, "foreign");
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "queued_too_late:late");
  EXPECT_EQ(seen[1], "foreign_cookie:foreign");
  // The scope restored the previous (stderr) reporter: this report must not reach `seen`.
  scoped_misuse_policy p(misuse_policy::report);
  detail::diagnose(misuse_kind::ref_underflow, "after the scope");
  EXPECT_EQ(seen.size(), 2u);
}

// A plain function reporter on purpose (it can only share state through a global): the test is
// about restoring one.
std::string g_last;
void capture(misuse_kind, std::string_view msg) noexcept { g_last = std::string(msg); }

TEST(misuse, the_scoped_policy_restores_a_plain_reporter_after_a_callable_one) {
  scoped_misuse_policy outer(misuse_policy::report, &capture);
  {
    auto ignore = [](misuse_kind, std::string_view) noexcept {};
    scoped_misuse_policy inner(misuse_policy::report, ignore);
  }
  g_last.clear();
  detail::diagnose(misuse_kind::ref_underflow, "back to capture");
  EXPECT_EQ(g_last, "back to capture");
}

TEST(misuse, messages_are_cut_at_a_fixed_capacity_instead_of_allocating) {
  detail::diag_text t("object ");
  t += 42;
  t += std::string(2 * detail::diag_text::kCapacity, 'x');
  EXPECT_TRUE(t.cut());
  EXPECT_EQ(t.view().size(), detail::diag_text::kCapacity);
  EXPECT_EQ(t.view().substr(0, 9), "object 42");
}

TEST(misuse, every_kind_has_a_name) {
  for (std::size_t k = 0; k < kMisuseKinds; ++k) EXPECT_FALSE(to_string(static_cast<misuse_kind>(k)).empty());
}

}  // namespace
}  // namespace rcubatch
