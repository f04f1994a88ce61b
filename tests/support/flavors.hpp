// tests/support/flavors.hpp — the liburcu flavors as GoogleTest type lists, for TYPED_TEST_SUITE.
// A test binary using one links the flavors' libraries (rcubatch_add_test(<name> memb qsbr ...)).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include <rcubatch/flavor.hpp>

namespace rcubatch::test {

/// Every real flavor, each wrapped in Wrap (e.g. a flavor with a test hook around synchronize).
template <template <class> class Wrap>
using each_real_flavor = ::testing::Types<Wrap<flavor::memb>, Wrap<flavor::qsbr>, Wrap<flavor::mb>, Wrap<flavor::bp>>;

template <class F>
using as_is = F;

/// The four liburcu flavors.
using real_flavors = each_real_flavor<as_is>;

/// One signal-free flavor and the quiescent-state-based one: the two reader disciplines, for
/// suites whose threads make four flavors too slow (mb and bp read like memb).
template <template <class> class Wrap = as_is>
using two_reader_disciplines = ::testing::Types<Wrap<flavor::memb>, Wrap<flavor::qsbr>>;

/// Names typed tests by flavor (`suite/memb.test` instead of `suite/0.test`):
///   TYPED_TEST_SUITE(my_suite, real_flavors, flavor_names);
/// Without it, gtest_discover_tests (CMake 3.25) names the ctest `suite.test<rcubatch::flavor::memb>`;
/// with it, `suite.test<suite/memb.  # TypeParam = ...>` — so most suites here go without.
struct flavor_names {
  template <class F>
  static std::string GetName(int) {
    return std::string(F::name);
  }
};

}  // namespace rcubatch::test
