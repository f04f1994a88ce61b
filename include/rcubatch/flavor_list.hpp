// rcubatch/flavor_list.hpp — the liburcu flavors as one type list, and a run-time name → flavor
// dispatcher over it.
//
// Programs that take `--flavor NAME` and typed tests that run one body per flavor derive from
// this list instead of naming the four flavors again:
//
//   template <class Flavor> int run();               // the program, for one flavor
//
//   int main(int argc, char** argv) {
//     const std::string_view name = argc > 1 ? argv[1] : rcubatch::flavor_names[0];
//     return rcubatch::with_flavor(
//         name, []<class F>(std::type_identity<F>) { return run<F>(); },
//         [](const rcubatch::unknown_flavor& e) {  // "unknown flavor 'x'; expected one of: memb, ..."
//           std::fprintf(stderr, "prog: %s\n", e.what());
//           return 2;
//         });
//   }
//
// Without the third argument, with_flavor throws the unknown_flavor instead.
//
// The CMake side keeps the same names in RCUBATCH_FLAVORS (cmake/rcubatchFlavor.cmake);
// tests/flavor_list_test.cpp checks that the two agree, name for name and in order.
//
// Linking: with_flavor instantiates its function for every flavor of the list, so a program that
// calls it links every flavor's liburcu library (CMake: ${RCUBATCH_FLAVOR_TARGETS}). A program
// built for fewer flavors passes its own list: with_flavor<flavor_list<flavor::memb, flavor::qsbr>>.
//
// Why a header of its own, not flavor.hpp: flavor.hpp is what one flavor is (the concept and the
// four structs); this one is about choosing among them by name at run time, with an exception
// type and <string>, which a program built for one flavor does not need.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"

namespace rcubatch {

/// A compile-time list of flavor types, each satisfying rcu_flavor and each with its own name.
/// `names` holds their `F::name`s, in the list's order.
template <class... Flavors>
struct flavor_list {
  static_assert(sizeof...(Flavors) > 0, "rcubatch::flavor_list needs at least one flavor");
  static_assert((rcu_flavor<Flavors> && ...),
                "every type in rcubatch::flavor_list must satisfy rcubatch::rcu_flavor (see flavor.hpp)");

  static constexpr std::size_t size = sizeof...(Flavors);  ///< how many flavors
  static constexpr std::array<std::string_view, sizeof...(Flavors)> names{Flavors::name...};  ///< their names, in order

  static_assert(
      [] {
        for (std::size_t i = 0; i < names.size(); ++i)
          for (std::size_t j = i + 1; j < names.size(); ++j)
            if (names[i] == names[j]) return false;
        return true;
      }(),
      "two flavors in one rcubatch::flavor_list have the same name: with_flavor could not tell them apart");
};

/// The four liburcu flavors, the default flavor (memb) first. The one C++ spelling of the list.
using liburcu_flavors = flavor_list<flavor::memb, flavor::qsbr, flavor::mb, flavor::bp>;

/// The names of liburcu_flavors, in its order: {"memb", "qsbr", "mb", "bp"}.
inline constexpr auto flavor_names = liburcu_flavors::names;

/// Thrown by with_flavor for a name that is not in its list. what() names the bad input and the
/// valid names: "unknown flavor 'xyz'; expected one of: memb, qsbr, mb, bp". No other members, so
/// that copying it cannot throw (std::invalid_argument's copy does not).
class unknown_flavor : public std::invalid_argument {
 public:
  /// Effects: the message above, listing `valid` in order. Throws: std::bad_alloc.
  template <std::size_t N>
  unknown_flavor(std::string_view name, const std::array<std::string_view, N>& valid)
      : std::invalid_argument(message(name, valid.data(), N)) {}

 private:
  static std::string message(std::string_view name, const std::string_view* valid, std::size_t n) {
    std::string m = "unknown flavor '";
    m.append(name).append("'; expected one of: ");
    for (std::size_t i = 0; i < n; ++i) m.append(i == 0 ? "" : ", ").append(valid[i]);
    return m;
  }
};

namespace detail {
// The caller checked that `name` is one of First, Rest...: the last flavor needs no comparison.
template <class Fn, class First, class... Rest>
decltype(auto) call_with_named_flavor(std::string_view name, Fn&& fn) {
  if constexpr (sizeof...(Rest) == 0) {
    return std::forward<Fn>(fn)(std::type_identity<First>{});
  } else {
    if (name == First::name) return std::forward<Fn>(fn)(std::type_identity<First>{});
    return call_with_named_flavor<Fn, Rest...>(name, std::forward<Fn>(fn));
  }
}

template <class List, class Fn>
struct flavor_dispatch;

template <class... Flavors, class Fn>
struct flavor_dispatch<flavor_list<Flavors...>, Fn> {
  using first = std::tuple_element_t<0, std::tuple<Flavors...>>;
  using result = std::invoke_result_t<Fn, std::type_identity<first>>;
  static_assert((std::is_same_v<result, std::invoke_result_t<Fn, std::type_identity<Flavors>>> && ...),
                "rcubatch::with_flavor: f must return the same type for every flavor of the list");

  template <class OnUnknown>
  static result call(std::string_view name, Fn&& fn, OnUnknown&& on_unknown) {
    static_assert(std::is_convertible_v<std::invoke_result_t<OnUnknown, const unknown_flavor&>, result>,
                  "rcubatch::with_flavor: on_unknown(const unknown_flavor&) must return what f returns");
    constexpr const auto& names = flavor_list<Flavors...>::names;
    if (std::find(names.begin(), names.end(), name) == names.end())
      return static_cast<result>(std::forward<OnUnknown>(on_unknown)(unknown_flavor(name, names)));
    return call_with_named_flavor<Fn, Flavors...>(name, std::forward<Fn>(fn));
  }
};
}  // namespace detail

/// Runs f with the flavor of List whose name is `name`; the second form hands an unknown name to
/// on_unknown instead of throwing (what a main() that returns an exit status wants).
/// Requires: List is a flavor_list (default: liburcu_flavors); f is callable with
///   std::type_identity<F>{} for every F in List and returns the same type R for all of them;
///   on_unknown is callable with `const unknown_flavor&` and returns something convertible to R.
/// Effects: calls std::forward<Fn>(f)(std::type_identity<F>{}) once, for the F with F::name == name
///   (exact, case-sensitive match). For a name not in List, f is not called: the first form
///   throws, the second calls on_unknown once with the error (its what() names `name` and List's
///   names) and returns its result converted to R.
/// Returns: what f (or on_unknown) returns.
/// Throws: first form: unknown_flavor (a std::invalid_argument) for an unknown name, before f runs.
///   Both: whatever f or on_unknown throws; std::bad_alloc building the error's message.
/// Complexity: at most 2 × List::size name comparisons before f. Linking: instantiates f for every
///   flavor of List (see the preamble).
template <class List = liburcu_flavors, class Fn>
decltype(auto) with_flavor(std::string_view name, Fn&& f) {
  using dispatch = detail::flavor_dispatch<List, Fn>;
  return dispatch::call(name, std::forward<Fn>(f),
                        [](const unknown_flavor& e) -> typename dispatch::result { throw e; });
}

template <class List = liburcu_flavors, class Fn, class OnUnknown>
decltype(auto) with_flavor(std::string_view name, Fn&& f, OnUnknown&& on_unknown) {
  return detail::flavor_dispatch<List, Fn>::call(name, std::forward<Fn>(f), std::forward<OnUnknown>(on_unknown));
}

}  // namespace rcubatch
