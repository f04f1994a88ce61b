// fwd.hpp on its own: every template it declares can be named with its defaults, and the defaults
// are the documented ones. The checks are compile-time (static_assert): the test is that this
// file, which includes nothing of rcubatch but fwd.hpp, compiles. The one TEST below checks at run
// time what names alone can show: the default flavor's name as the build configured it.
#include "rcubatch/fwd.hpp"

#include <functional>
#include <mutex>
#include <string_view>
#include <type_traits>

#include <gtest/gtest.h>

namespace {

namespace rb = rcubatch;
using F = rb::default_flavor;
struct object;  // an incomplete object type: naming templates instantiates nothing
struct policy;
struct key_of;

// Templates with defaults.
static_assert(std::is_same_v<rb::counting_flavor<>, rb::counting_flavor<void>>);
static_assert(std::is_same_v<rb::read_guard<>, rb::read_guard<F>>);
static_assert(std::is_same_v<rb::thread_registration<>, rb::thread_registration<F>>);
static_assert(std::is_same_v<rb::offline_scope<>, rb::offline_scope<F>>);
static_assert(std::is_same_v<rb::grace_domain<>, rb::grace_domain<F>>);
static_assert(std::is_same_v<decltype(&rb::quiescent_state<>), void (*)()>);
static_assert(std::is_same_v<decltype(&rb::default_domain<>), rb::grace_domain<F>& (*)() noexcept>);
static_assert(std::is_same_v<rb::registry<policy>, rb::basic_registry<F, std::mutex, policy>>);
static_assert(std::is_same_v<rb::lfht_index<object, nullptr, key_of>,
                             rb::lfht_index<object, nullptr, key_of, F, rb::lfht_hash, std::equal_to<>>>);
static_assert(std::is_same_v<rb::lfht_index<object, nullptr, key_of, rb::flavor::qsbr>,
                             rb::lfht_index<object, nullptr, key_of, rb::flavor::qsbr, rb::lfht_hash, std::equal_to<>>>);
static_assert(std::is_same_v<rb::hlist_index<object, nullptr, key_of>,
                             rb::hlist_index<object, nullptr, key_of, F, rb::lfht_hash, std::equal_to<>>>);

// Templates without defaults, classes and enums: each name resolves from fwd.hpp alone.
template <class... T>
constexpr bool named = true;
static_assert(named<rb::flavor::memb, rb::flavor::qsbr, rb::flavor::mb, rb::flavor::bp>);
static_assert(named<rb::misuse_kind, rb::misuse_policy, rb::misuse_error, rb::misuse_reporter_binding,
                    rb::scoped_misuse_policy, rb::adopt_registration_t, rb::gp_cookie, rb::domain_stats>);
static_assert(named<rb::unknown_flavor, rb::phase, rb::phase_runs, rb::phase_entered, rb::phase_row, rb::hook_row>);
static_assert(named<rb::ref_count, rb::retire_node, rb::reg_state, rb::registrable<object>,
                    rb::registrable_type<object>, rb::unreg_queue<object>>);
static_assert(named<rb::batch_stats, rb::object_range<object>, rb::batch, rb::drain_options, rb::rollback_options,
                    rb::unlock_during_waits<std::mutex>, rb::lane_spec<object, policy>>);
static_assert(named<rb::publish_result, rb::registry_options, rb::indexed<object, key_of>,
                    rb::basic_registry<F, std::mutex, policy>>);
static_assert(named<rb::reclaim_mode, rb::over_budget, rb::async_batch_report, rb::async_options, rb::async_stats,
                    rb::async_unregister<rb::registry<policy>>, rb::unregister_ticket>);
static_assert(named<rb::lfht_hook<object>, rb::key_member<0>, rb::lfht_hash, rb::lfht_growth, rb::lfht_options,
                    rb::lfht_runtime_flavor, rb::hlist_hook<object>, rb::hlist_options>);

// Opaque enum declarations fix the underlying types the defining headers must repeat.
static_assert(std::is_same_v<std::underlying_type_t<rb::misuse_kind>, unsigned char>);
static_assert(std::is_same_v<std::underlying_type_t<rb::reg_state>, unsigned char>);
static_assert(std::is_same_v<std::underlying_type_t<rb::lfht_growth>, unsigned char>);

// A function that only passes rcubatch objects along compiles against fwd.hpp: the use it is for.
[[maybe_unused]] rb::grace_domain<>& pass_along(rb::grace_domain<>& d) { return d; }

}  // namespace

TEST(fwd, default_flavor_is_the_configured_one) {
#define RCUBATCH_FWD_TEST_STR2(x) #x
#define RCUBATCH_FWD_TEST_STR(x) RCUBATCH_FWD_TEST_STR2(x)
  const std::string_view configured = RCUBATCH_FWD_TEST_STR(RCUBATCH_DEFAULT_FLAVOR);
  EXPECT_TRUE(configured == "memb" || configured == "qsbr" || configured == "mb" || configured == "bp") << configured;
  EXPECT_TRUE((std::is_same_v<rb::default_flavor, rb::flavor::memb>) == (configured == "memb"));
}
