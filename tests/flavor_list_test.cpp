// flavor_list: the one list of flavors, and with_flavor, which picks one of them by name.
#include <rcubatch/flavor_list.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rcubatch {
namespace {

/// with_flavor's argument for the mapping tests: returns the name of the flavor it was called
/// with, and counts its calls.
struct name_of_flavor {
  int* calls;
  template <class F>
  std::string_view operator()(std::type_identity<F>) const {
    ++*calls;
    return F::name;
  }
};

TEST(flavor_list, every_name_selects_the_flavor_of_that_name_once) {
  ASSERT_EQ(flavor_names.size(), liburcu_flavors::size);
  for (std::string_view name : flavor_names) {
    int calls = 0;
    EXPECT_EQ(with_flavor(name, name_of_flavor{&calls}), name);
    EXPECT_EQ(calls, 1) << name;
  }
}

TEST(flavor_list, each_name_selects_its_own_type) {
  auto type_of = [](std::string_view name) {
    int which = -1;
    with_flavor(name, [&]<class F>(std::type_identity<F>) {
      if constexpr (std::is_same_v<F, flavor::memb>) which = 0;
      if constexpr (std::is_same_v<F, flavor::qsbr>) which = 1;
      if constexpr (std::is_same_v<F, flavor::mb>) which = 2;
      if constexpr (std::is_same_v<F, flavor::bp>) which = 3;
    });
    return which;
  };
  EXPECT_EQ(type_of("memb"), 0);
  EXPECT_EQ(type_of("qsbr"), 1);
  EXPECT_EQ(type_of("mb"), 2);
  EXPECT_EQ(type_of("bp"), 3);
}

TEST(flavor_list, an_unknown_name_is_reported_with_the_valid_names_and_runs_nothing) {
  for (std::string_view bad : {"nosuch", "", "MEMB", "mem", "memb ", "qsbr\n"}) {
    int calls = 0;
    try {
      with_flavor(bad, name_of_flavor{&calls});
      ADD_FAILURE() << "no exception for '" << bad << "'";
    } catch (const unknown_flavor& e) {
      EXPECT_EQ(std::string(e.what()),
                "unknown flavor '" + std::string(bad) + "'; expected one of: memb, qsbr, mb, bp");
    }
    EXPECT_EQ(calls, 0) << "f ran for '" << bad << "'";
  }
}

TEST(flavor_list, with_a_handler_an_unknown_name_goes_to_it_instead_of_throwing) {
  int calls = 0;
  std::string seen;
  const int rc = with_flavor(
      "nosuch", [&](auto) { return ++calls, 0; },
      [&](const unknown_flavor& e) {
        seen = e.what();
        return 2;
      });
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(seen, "unknown flavor 'nosuch'; expected one of: memb, qsbr, mb, bp");
  int handled = 0;
  EXPECT_EQ(with_flavor("mb", [](auto) { return 0; }, [&](const unknown_flavor&) { return ++handled, 2; }), 0);
  EXPECT_EQ(handled, 0) << "a known name went to the handler";
}

TEST(flavor_list, unknown_flavor_is_an_invalid_argument) {
  int calls = 0;
  EXPECT_THROW(with_flavor("nosuch", name_of_flavor{&calls}), std::invalid_argument);
}

TEST(flavor_list, a_narrower_list_knows_only_its_own_flavors) {
  using signal_free_and_qsbr = flavor_list<flavor::memb, flavor::qsbr>;
  static_assert(signal_free_and_qsbr::size == 2);
  int calls = 0;
  EXPECT_EQ(with_flavor<signal_free_and_qsbr>("qsbr", name_of_flavor{&calls}), "qsbr");
  try {
    with_flavor<signal_free_and_qsbr>("mb", name_of_flavor{&calls});
    ADD_FAILURE() << "mb is not in the list";
  } catch (const unknown_flavor& e) {
    EXPECT_STREQ(e.what(), "unknown flavor 'mb'; expected one of: memb, qsbr");
  }
  EXPECT_EQ(calls, 1);
}

TEST(flavor_list, returns_what_f_returns_and_passes_exceptions_through) {
  EXPECT_EQ(with_flavor("bp", []<class F>(std::type_identity<F>) { return F::quiescent_state_based ? 1 : 2; }), 2);
  EXPECT_EQ(with_flavor("qsbr", []<class F>(std::type_identity<F>) { return F::quiescent_state_based ? 1 : 2; }), 1);
  int value = 0;
  int& ref = with_flavor("mb", [&](auto) -> int& { return value; });
  EXPECT_EQ(&ref, &value) << "a reference result is not copied";
  EXPECT_THROW(with_flavor("memb", [](auto) -> int { throw std::runtime_error("from f"); }), std::runtime_error);
}

// The CMake list (RCUBATCH_FLAVORS, cmake/rcubatchFlavor.cmake) is the other spelling of the list;
// tests/CMakeLists.txt passes it here, comma-separated.
TEST(flavor_list, matches_the_cmake_list_name_for_name_in_order) {
  std::vector<std::string> cmake_names;
  std::string_view csv = RCUBATCH_TEST_CMAKE_FLAVORS;
  for (std::size_t start = 0;;) {
    const std::size_t comma = csv.find(',', start);
    cmake_names.emplace_back(csv.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  const std::vector<std::string> cpp_names(flavor_names.begin(), flavor_names.end());
  EXPECT_EQ(cmake_names, cpp_names) << "RCUBATCH_FLAVORS is \"" << csv << "\"";
}

}  // namespace
}  // namespace rcubatch
