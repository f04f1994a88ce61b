// tests/support/flavors.hpp — the liburcu flavors as GoogleTest type lists, for TYPED_TEST_SUITE.
// A test binary using one links the flavors' libraries (rcubatch_add_test(<name> memb qsbr ...)).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include <rcubatch/flavor.hpp>
#include <rcubatch/flavor_list.hpp>

namespace rcubatch::test {

/// The flavors of a flavor_list as gtest's type list, each wrapped in Wrap.
template <class List, template <class> class Wrap>
struct gtest_types_of;
template <class... Flavors, template <class> class Wrap>
struct gtest_types_of<flavor_list<Flavors...>, Wrap> {
  using type = ::testing::Types<Wrap<Flavors>...>;
};

/// Every real flavor (rcubatch::liburcu_flavors, the library's one list), each wrapped in Wrap
/// (e.g. a flavor with a test hook around synchronize).
template <template <class> class Wrap>
using each_real_flavor = typename gtest_types_of<liburcu_flavors, Wrap>::type;

template <class F>
using as_is = F;

/// The four liburcu flavors.
using real_flavors = each_real_flavor<as_is>;

/// One signal-free flavor and the quiescent-state-based one: the two reader disciplines, for
/// suites whose threads make four flavors too slow (mb and bp read like memb).
template <template <class> class Wrap = as_is>
using two_reader_disciplines = typename gtest_types_of<flavor_list<flavor::memb, flavor::qsbr>, Wrap>::type;

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
