// rcubatch/detail/registry_traits.hpp — compile-time helpers of the registry and of indexed<>:
// a type's position among the policies' object types, what a policy or an index provides
// (publish, an index of a given type, a first index with size or find_locked), the flavors a
// registry's writers may be online in. Internal; split out of registry.hpp (issue 35).
#pragma once

#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rcubatch/registry_types.hpp"

namespace rcubatch::detail {

/// The position of X among Ts, or sizeof...(Ts) if absent; how many times it occurs.
template <class X, class... Ts>
constexpr std::size_t position_of() noexcept {
  std::size_t i = 0, found = sizeof...(Ts);
  ((std::is_same_v<X, Ts> && found == sizeof...(Ts) ? (found = i, ++i) : ++i), ...);
  return found;
}
template <class X, class... Ts>
inline constexpr std::size_t occurrences = (std::size_t{std::is_same_v<X, Ts>} + ... + 0);

/// An index indexed<T, ...> can keep: unique adds and unlinks of T.
template <class I, class T>
concept unique_index_of = requires(I& i, T& t) {
  { i.add_unique(t) } -> std::convertible_to<bool>;
  i.unlink(t);
};

template <class P, class I>
constexpr bool policy_has_index() noexcept {
  if constexpr (requires { typename P::index_types; }) {
    return []<class... Is>(std::type_identity<std::tuple<Is...>>) {
      return occurrences<I, Is...> != 0;
    }(std::type_identity<typename P::index_types>{});
  } else {
    return false;
  }
}

/// The flavors a registry's writers may be online in, and that a reclaimer thread registers with:
/// the registry's, then each index's (Index::flavor_type of every policy's index_types),
/// duplicates allowed (registrations and offline scopes nest).
template <class I>
struct flavor_of_index {
  using type = std::tuple<>;
};
template <class I>
  requires requires { typename I::flavor_type; }
struct flavor_of_index<I> {
  using type = std::tuple<typename I::flavor_type>;
};
template <class P>
struct index_flavors_of {
  using type = std::tuple<>;
};
template <class... Tuples>
using tuple_cat_t = decltype(std::tuple_cat(std::declval<Tuples>()...));
template <class Tuple>
struct flavors_of_indexes;
template <class... Is>
struct flavors_of_indexes<std::tuple<Is...>> {
  using type = tuple_cat_t<typename flavor_of_index<Is>::type...>;
};
template <class P>
  requires requires { typename P::index_types; }
struct index_flavors_of<P> {
  using type = typename flavors_of_indexes<typename P::index_types>::type;
};
template <class Flavor, class... Policies>
using thread_flavors_t = tuple_cat_t<std::tuple<Flavor>, typename index_flavors_of<Policies>::type...>;

inline publish_result to_publish_result(bool published) noexcept {
  return published ? publish_result::published : publish_result::refused_after_exposure;
}
inline publish_result to_publish_result(publish_result r) noexcept { return r; }

template <class P>
concept names_object_type = requires { typename P::object_type; };

/// A policy whose first index finds, under the writer lock, the object linked under another
/// object's key: index.find_locked(index.key_of(obj)) (lfht_index, hlist_index).
/// replace_with_children pairs each new child with the old one it replaces this way.
template <class P>
concept looks_up_by_object =
    names_object_type<P> && requires { typename std::tuple_element_t<0, typename P::index_types>; } &&
    requires(std::tuple_element_t<0, typename P::index_types>& index, const typename P::object_type& obj) {
      { index.find_locked(index.key_of(obj)) } -> std::convertible_to<const typename P::object_type*>;
    };
/// A relation's parent type, or void for no relation (a static_assert's condition on owner_of<T>).
template <class Rel>
struct relation_or_void {
  using parent = typename Rel::parent_type;
};
template <>
struct relation_or_void<void> {
  using parent = void;
};
/// A policy whose first index counts its objects (size<T>(), a capacity).
template <class P>
concept first_index_has_size = requires { typename std::tuple_element_t<0, typename P::index_types>; } &&
                               requires(const std::tuple_element_t<0, typename P::index_types>& index) {
                                 { index.size() } -> std::convertible_to<std::size_t>;
                               };
template <class P>
concept has_publish = requires(P& p, typename P::object_type& t) {
  { to_publish_result(p.publish(t)) } -> std::same_as<publish_result>;
};

}  // namespace rcubatch::detail
