// read_guard, thread_registration, quiescent_state, offline_scope.
#include <rcubatch/read_guard.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <gtest/gtest.h>

namespace rcubatch {
namespace {

struct tag;
using fake = counting_flavor<tag>;

TEST(read_guard, nests_and_tracks_its_depth_per_flavor) {
  EXPECT_EQ(detail::read_depth<fake>, 0u);
  {
    read_guard<fake> a;
    read_guard<fake> b;
    EXPECT_EQ(detail::read_depth<fake>, 2u);
    EXPECT_EQ(detail::read_depth<flavor::memb>, 0u) << "depth is per flavor";
  }
  EXPECT_EQ(detail::read_depth<fake>, 0u);
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

}  // namespace
}  // namespace rcubatch
