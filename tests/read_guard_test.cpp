// read_guard, thread_registration, quiescent_state, offline_scope.
#include <rcubatch/read_guard.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/misuse_capture.hpp"

namespace rcubatch {
namespace {

struct tag;
using fake = counting_flavor<tag>;

TEST(read_guard, nests_and_tracks_its_depth_per_flavor) {
  EXPECT_EQ(detail::reader<fake>.read_depth, 0u);
  {
    read_guard<fake> a;
    read_guard<fake> b;
    EXPECT_EQ(detail::reader<fake>.read_depth, 2u);
    EXPECT_EQ(detail::reader<flavor::memb>.read_depth, 0u) << "depth is per flavor";
  }
  EXPECT_EQ(detail::reader<fake>.read_depth, 0u);
}

TEST(read_guard, a_quiescent_state_inside_a_guard_is_diagnosed) {
  thread_registration<flavor::qsbr> reg;
  read_guard<flavor::qsbr> guard;
  const unsigned long before = misuse_count(misuse_kind::blocking_in_read_section);
  EXPECT_THROW(quiescent_state<flavor::qsbr>(), misuse_error);
  EXPECT_EQ(misuse_count(misuse_kind::blocking_in_read_section), before + 1);
}

TEST(read_guard, a_qsbr_thread_is_not_in_a_section_between_guards_even_when_online) {
  thread_registration<flavor::qsbr> reg;
  EXPECT_TRUE(flavor::qsbr::read_ongoing()) << "liburcu's view: online means reader";
  EXPECT_FALSE(in_read_section<flavor::qsbr>()) << "rcubatch's view: no guard, no section";
  quiescent_state<flavor::qsbr>();
  {
    offline_scope<flavor::qsbr> off;
    EXPECT_FALSE(flavor::qsbr::read_ongoing());
  }
  EXPECT_TRUE(flavor::qsbr::read_ongoing());
}

TEST(read_guard, a_memb_guard_is_seen_by_liburcu_too) {
  thread_registration<flavor::memb> reg;
  read_guard<flavor::memb> guard;
  EXPECT_TRUE(flavor::memb::read_ongoing());
}


// --- misuse: readers that no grace period would wait for (issue 9 item 5) ---------------------

using captured_reports = test::misuse_log;

TEST(read_guard, a_guard_on_an_unregistered_thread_is_diagnosed_and_the_thread_registered) {
  captured_reports reports;
  scoped_misuse_policy report(misuse_policy::report, reports);
  const unsigned long before = misuse_count(misuse_kind::reader_not_registered);
  bool registered_inside = false, registered_after = false;
  std::thread([&] {
    {
      read_guard<flavor::memb> guard;
      registered_inside = detail::reader<flavor::memb>.registered();
    }
    read_guard<flavor::memb> again;  // repaired: no second report
    registered_after = detail::reader<flavor::memb>.auto_registered;
  }).join();  // the thread's exit unregisters it from liburcu
  EXPECT_EQ(misuse_count(misuse_kind::reader_not_registered), before + 1);
  ASSERT_EQ(reports.kinds.size(), 1u);
  EXPECT_EQ(reports.kinds[0], misuse_kind::reader_not_registered);
  EXPECT_NE(reports.messages[0].find("read_guard<memb> opened on a thread not registered"), std::string::npos)
      << reports.messages[0];
  EXPECT_TRUE(registered_inside) << "the reader is protected after the report";
  EXPECT_TRUE(registered_after);
  flavor::memb::synchronize();  // liburcu's registry holds no dead thread (ASan would see it)
}

TEST(read_guard, under_throw_error_an_unregistered_reader_is_reported_not_thrown) {
  const unsigned long before = misuse_count(misuse_kind::reader_not_registered);
  captured_reports reports;
  set_misuse_reporter(reports);  // keep the default throw_error policy
  std::thread([] { read_guard<flavor::mb> guard; }).join();
  set_misuse_reporter(nullptr);
  EXPECT_EQ(misuse_count(misuse_kind::reader_not_registered), before + 1);
  EXPECT_EQ(reports.kinds.size(), 1u);
}

TEST(read_guard, an_unregistered_reader_aborts_under_abort_process) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        set_misuse_policy(misuse_policy::abort_process);
        std::thread([] { read_guard<flavor::memb> guard; }).join();
      },
      "read_guard<memb> opened on a thread not registered with memb");
}

TEST(read_guard, registered_threads_bp_and_adopted_registrations_are_not_diagnosed) {
  captured_reports reports;
  scoped_misuse_policy report(misuse_policy::report, reports);
  std::thread([] {
    thread_registration<flavor::qsbr> reg;
    read_guard<flavor::qsbr> guard;
  }).join();
  std::thread([] { read_guard<flavor::bp> guard; }).join();  // bp registers on first use
  std::thread([] {
    urcu_memb_register_thread();  // registered by other code, then adopted
    {
      thread_registration<flavor::memb> mark{adopt_registration};
      read_guard<flavor::memb> guard;
    }
    urcu_memb_unregister_thread();
  }).join();
  EXPECT_TRUE(reports.kinds.empty()) << (reports.messages.empty() ? "" : reports.messages[0]);
}

TEST(read_guard, thread_registrations_nest_and_only_the_outermost_unregisters) {
  thread_registration<flavor::qsbr> outer;
  {
    thread_registration<flavor::qsbr> inner;  // a second liburcu register_thread would abort
  }
  EXPECT_TRUE(flavor::qsbr::read_ongoing()) << "the inner registration's end left the thread registered";
}

/// Runs `body` on a registered (online) qsbr thread under misuse_policy::report; expects exactly
/// one diagnostic from it, of kind reader_offline, and the thread online again after. Returns the
/// report's message ("" when there was none).
std::string the_one_reader_offline_report(const std::function<void()>& body) {
  captured_reports reports;
  scoped_misuse_policy report(misuse_policy::report, reports);
  const unsigned long before = misuse_count(misuse_kind::reader_offline);
  thread_registration<flavor::qsbr> reg;
  body();
  EXPECT_TRUE(flavor::qsbr::read_ongoing());
  EXPECT_EQ(misuse_count(misuse_kind::reader_offline), before + 1);
  EXPECT_EQ(reports.kinds.size(), 1u);
  if (reports.kinds.empty()) return {};
  EXPECT_EQ(reports.kinds[0], misuse_kind::reader_offline);
  return reports.messages[0];
}

TEST(read_guard, a_qsbr_guard_on_an_offline_thread_is_diagnosed_and_online_for_the_guard) {
  the_one_reader_offline_report([] {
    offline_scope<flavor::qsbr> off;
    {
      read_guard<flavor::qsbr> guard;
      EXPECT_TRUE(flavor::qsbr::read_ongoing()) << "online: grace periods wait for this reader";
      read_guard<flavor::qsbr> nested;
    }
    EXPECT_FALSE(flavor::qsbr::read_ongoing()) << "offline again once the outermost guard ended";
  });
}

TEST(read_guard, an_offline_scope_inside_a_qsbr_guard_is_diagnosed_and_refused) {
  const std::string message = the_one_reader_offline_report([] {
    read_guard<flavor::qsbr> guard;
    offline_scope<flavor::qsbr> off;
    EXPECT_TRUE(flavor::qsbr::read_ongoing()) << "refused: the guard still protects its pointers";
  });
  EXPECT_NE(message.find("offline_scope<qsbr> opened inside a read_guard"), std::string::npos) << message;
}

TEST(read_guard, an_offline_scope_inside_a_memb_guard_is_harmless_and_not_diagnosed) {
  captured_reports reports;
  scoped_misuse_policy report(misuse_policy::report, reports);
  thread_registration<flavor::memb> reg;
  read_guard<flavor::memb> guard;
  offline_scope<flavor::memb> off;  // a no-op under memb
  EXPECT_TRUE(reports.kinds.empty());
}

// issue 12 defect 7: before the per-thread depth, the inner scope's end brought the thread online
// while the outer scope still had it offline (failed on c925af9: read_ongoing() was true).
TEST(read_guard, nested_offline_scopes_stay_offline_until_the_outermost_ends) {
  thread_registration<flavor::qsbr> reg;
  {
    offline_scope<flavor::qsbr> outer;
    {
      offline_scope<flavor::qsbr> inner;
      EXPECT_FALSE(flavor::qsbr::read_ongoing());
    }
    EXPECT_FALSE(flavor::qsbr::read_ongoing()) << "the inner scope's end brought the thread online";
    quiescent_state<flavor::qsbr>();
    EXPECT_FALSE(flavor::qsbr::read_ongoing()) << "a quiescent state must not bring it online either";
  }
  EXPECT_TRUE(flavor::qsbr::read_ongoing());
}

}  // namespace
}  // namespace rcubatch
