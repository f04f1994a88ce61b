// rcubatch/detail/type_name.hpp — a type's name as the compiler spells it, at compile time.
//
//   detail::type_name<netdev::net_device>()   // "netdev::net_device", NUL-terminated
//
// For reports that must name an object's type without a hook from the user (the drain's stall
// report of an object whose policy has no `name`). Taken from __PRETTY_FUNCTION__ (GCC, Clang)
// rather than typeid + abi::__cxa_demangle, which needs RTTI and allocates on the reporting path;
// the text is the compiler's (Clang and GCC differ in details such as spaces in templates).
// Another compiler gets "<unknown type>".
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace rcubatch::detail {

template <class T>
constexpr std::string_view pretty_signature_of() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  return __PRETTY_FUNCTION__;  // "... [T = Name]" (Clang) or "... [with T = Name]" (GCC)
#else
  return {};
#endif
}

/// The "Name" part of pretty_signature_of<T>(), or "<unknown type>".
template <class T>
constexpr std::string_view type_name_in_signature() noexcept {
  constexpr std::string_view sig = pretty_signature_of<T>();
  constexpr std::string_view key = "T = ";
  const std::size_t at = sig.find(key);
  if (at == std::string_view::npos) return "<unknown type>";
  const std::size_t from = at + key.size();
  std::size_t to = sig.find_first_of(";]", from);
  if (to == std::string_view::npos) to = sig.size();
  return sig.substr(from, to - from);
}

/// The name with a terminating NUL, in static storage (probes pass it as a `const char*`).
template <class T>
inline constexpr auto kTypeNameStorage = [] {
  constexpr std::string_view name = type_name_in_signature<T>();
  std::array<char, name.size() + 1> text{};
  for (std::size_t i = 0; i < name.size(); ++i) text[i] = name[i];
  return text;
}();

/// Returns: T's name as the compiler spells it ("ns::widget"); data() is NUL-terminated.
template <class T>
constexpr std::string_view type_name() noexcept {
  return {kTypeNameStorage<T>.data(), kTypeNameStorage<T>.size() - 1};
}

}  // namespace rcubatch::detail
