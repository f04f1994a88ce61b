// rcubatch/index/key_of.hpp — what both indexes (lfht_index, hlist_index) key and hash by:
// key_member<&T::m> and key_members<&T::a, &T::b> (KeyOf), lfht_hash (the default Hash).
//
//   using by_name = rcubatch::hlist_index<device, &device::by_name_hook, rcubatch::key_member<&device::name>>;
//   rcubatch::lfht_hash{}(std::string_view("eth0")) == rcubatch::lfht_hash{}(std::string("eth0"));
//
// Its own header so that hlist_index.hpp needs no rculfhash.h; lfht_index.hpp includes it, so
// code that took these names from lfht_index.hpp still compiles.
#pragma once

#include <functional>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace rcubatch {

/// KeyOf for a data member: `key_member<&session::name>` reads `s.name`.
template <auto Member>
struct key_member {
  /// obj's key: the member. Throws: nothing.
  template <class T>
  constexpr const auto& operator()(const T& obj) const noexcept { return obj.*Member; }
};

/// KeyOf for a composite key: `key_members<&route::owner, &route::type>` reads
/// `std::tie(r.owner, r.type)`. Look it up with any std::tuple of the same arity whose elements
/// compare equal to the members' (`index.find(std::tuple(owner, std::string_view("gre")))`):
/// lfht_hash hashes a tuple element by element, each as it would hash alone, so a string member
/// and a string_view in the lookup hash alike. No hand-written KeyOf or Hash.
template <auto... Members>
struct key_members {
  static_assert(sizeof...(Members) >= 2, "rcubatch::key_members: name two members or more (key_member for one)");
  /// obj's key: a tuple of references to the members (std::tie). Throws: nothing.
  template <class T>
  constexpr auto operator()(const T& obj) const noexcept {
    return std::tie(obj.*Members...);
  }
};

namespace detail {
template <class K>
inline constexpr bool is_std_tuple = false;
template <class... Es>
inline constexpr bool is_std_tuple<std::tuple<Es...>> = true;
}  // namespace detail

/// The default Hash: strings through std::hash<std::string_view>, integers and enums by value,
/// std::tuples (key_members) element by element, anything else through std::hash; every result is
/// mixed, because rculfhash picks buckets from the low bits and orders chains by the bit-reversed
/// hash, and std::hash of an int is the int.
struct lfht_hash {
  using is_transparent = void;  ///< lookups may pass any key type it can hash (a string_view for a string)
  /// murmur3's 64-bit finalizer: spreads std::hash's value over all bits.
  static constexpr unsigned long mix(unsigned long x) noexcept {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdUL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53UL;
    x ^= x >> 33;
    return x;
  }
  /// The hash of key (a tuple: of its elements in order). Throws: nothing.
  template <class K>
  unsigned long operator()(const K& key) const noexcept {
    if constexpr (std::is_convertible_v<const K&, std::string_view>) {
      return mix(std::hash<std::string_view>{}(std::string_view(key)));
    } else if constexpr (std::is_integral_v<K> || std::is_enum_v<K>) {
      return mix(static_cast<unsigned long>(key));
    } else if constexpr (detail::is_std_tuple<K>) {
      return std::apply(
          [this](const auto&... element) {
            unsigned long h = 0;
            ((h = mix(h ^ (*this)(element))), ...);  // order-sensitive: (a, b) and (b, a) differ
            return h;
          },
          key);
    } else {
      return mix(static_cast<unsigned long>(std::hash<K>{}(key)));
    }
  }
};

}  // namespace rcubatch
