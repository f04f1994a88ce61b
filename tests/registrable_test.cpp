// registrable: the state machine and what may be destroyed when.
#include <rcubatch/registrable.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace rcubatch {
namespace {

struct thing : registrable<thing> {};

// Issue 13's goal: at most 32 bytes on x86-64; the layout is in registrable.hpp's header comment.
// The guard keeps it from growing back.
static_assert(sizeof(registrable<thing>) <= 32, "registrable<T> grew: see the layout in registrable.hpp");

TEST(registrable, starts_uninitialized_and_not_dismantling_with_no_holders) {
  thing t;
  EXPECT_EQ(t.state(), reg_state::uninitialized);
  EXPECT_FALSE(t.dismantling());
  EXPECT_EQ(t.refs().count(), 0u);
}

TEST(registrable, mark_registered_moves_it_to_registered_once) {
  auto t = std::make_unique<thing>();
  EXPECT_TRUE(t->mark_registered());
  EXPECT_EQ(t->state(), reg_state::registered);
  EXPECT_THROW(t->mark_registered(), misuse_error);
  {
    scoped_misuse_policy p(misuse_policy::report, [](misuse_kind, std::string_view) noexcept {});
    EXPECT_FALSE(t->mark_registered());
  }
  EXPECT_EQ(t->state(), reg_state::registered);
  detail::registrable_access::set_state(*t, reg_state::released);  // as a batch would
}

TEST(registrable, an_uninitialized_object_may_be_destroyed) {
  auto t = std::make_unique<thing>();
  t.reset();
  SUCCEED();
}

TEST(registrable_death, destroying_a_registered_object_is_fatal) {
  EXPECT_DEATH(
      {
        set_misuse_policy(misuse_policy::report);
        auto t = std::make_unique<thing>();
        t->mark_registered();
        t.reset();
      },
      "object destroyed in state registered");
}

TEST(registrable, state_names_read_as_the_kernel_states) {
  EXPECT_EQ(to_string(reg_state::unregistering), "unregistering");
  EXPECT_EQ(to_string(reg_state::released), "released");
}

}  // namespace
}  // namespace rcubatch
