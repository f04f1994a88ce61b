// rcubatch/indexed.hpp — indexed<T, Index...>: the registry policy for objects published in RCU
// indexes (one add per index on publish, all or nothing; an atomic swap per index on replace; an
// unlink from each on the batch's unlist). Derive from it to add a policy's hooks. Split out of
// registry.hpp (issue 35); registry.hpp includes it, so `#include <rcubatch/registry.hpp>` is enough.
#pragma once

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rcubatch/detail/registry_traits.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/registry_types.hpp"

namespace rcubatch {

/// A registry policy for objects published in RCU indexes: publish adds `obj` to each index in
/// order, unlist unlinks it from each. Derive from it to add hooks (notify, uninit, destroy...).
/// Requires: each Index has `bool add_unique(T&)` and `unlink(T&)` (lfht_index does), and is
/// default-constructible; the index types are distinct.
template <class T, class... Indexes>
class indexed {
  static_assert(sizeof...(Indexes) >= 1, "rcubatch::indexed<T, Index...>: name at least one index");
  static_assert((detail::unique_index_of<Indexes, T> && ...),
                "rcubatch::indexed<T, Index...>: every Index needs `bool add_unique(T&)` and `unlink(T&)` "
                "(rcubatch::lfht_index<T, &T::hook, KeyOf> has them)");
  static_assert(((detail::occurrences<Indexes, Indexes...> == 1) && ...),
                "rcubatch::indexed<T, Index...>: an index type is named twice");

 public:
  using object_type = T;                        ///< the type it publishes
  using index_types = std::tuple<Indexes...>;   ///< the indexes, in the order add publishes in

  indexed() = default;
  /// Effects: each index constructed from its argument, in order (lfht_index: its lfht_options;
  /// hlist_index: its hlist_options): one argument per index. A derived policy forwards with
  /// `using indexed<T, I...>::indexed;` or from its own constructor; the registry passes a policy
  /// its argument (basic_registry's constructor from policy arguments).
  /// Throws: what an index's constructor throws (std::invalid_argument for bad options).
  template <class... IndexArgs>
    requires(sizeof...(IndexArgs) == sizeof...(Indexes) && sizeof...(IndexArgs) > 0 &&
             (std::is_constructible_v<Indexes, IndexArgs> && ...))
  explicit indexed(IndexArgs&&... per_index) : indexes_(std::forward<IndexArgs>(per_index)...) {}
  indexed(const indexed&) = delete;
  indexed& operator=(const indexed&) = delete;

  /// Requires: the writer lock (registry::add holds it); obj's keys are set.
  /// Effects: adds obj to each index in order; at the first index that refuses it (a duplicate
  /// key) unlinks it from the ones before. Returns published, refused (the first index refused:
  /// never visible) or refused_after_exposure (a later one refused: readers may have found it).
  /// Throws: what an index's add_unique throws (misuse_error for an already linked hook), after
  /// undoing this call's adds. Complexity: one add per index. Blocking: never.
  publish_result publish(T& obj) {
    std::size_t linked = 0;
    bool ok = false;
    try {
      ok = (add_one(std::get<Indexes>(indexes_), obj, linked) && ...);
    } catch (...) {
      unlink_first(obj, linked);
      throw;
    }
    if (ok) return publish_result::published;
    unlink_first(obj, linked);
    return linked == 0 ? publish_result::refused : publish_result::refused_after_exposure;
  }

  /// Effects: true when obj is published here: linked in the first index (an index without
  /// `bool holds(const T&)` is taken on trust). The registry checks it before it queues an object
  /// (misuse wrong_registry). Requires: the writer lock. Complexity: O(1) (lfht_index::holds).
  bool owns(const T& obj) const noexcept {
    using first = std::tuple_element_t<0, std::tuple<Indexes...>>;
    if constexpr (requires(const first& i) { { i.holds(obj) } -> std::convertible_to<bool>; }) {
      return std::get<0>(indexes_).holds(obj);
    } else {
      return true;
    }
  }

  /// Requires: the writer lock; old_obj is linked in every index; new_obj is unlinked everywhere and
  /// has old_obj's key in every index. Effects: new_obj takes old_obj's place in each index in
  /// order, each swap atomic for readers (lfht_index::replace): a lookup finds one or the other,
  /// never neither. All or nothing: on a failure the swaps made are undone before it throws.
  /// Throws: std::invalid_argument (a key differs, or old_obj is missing from an index), what an
  /// index's replace throws. Complexity: one replace per index. Blocking: never.
  void replace(T& old_obj, T& new_obj) {
    std::size_t swapped = 0;
    try {
      ((replace_one(std::get<Indexes>(indexes_), old_obj, new_obj), ++swapped), ...);
    } catch (...) {
      std::size_t i = 0;
      ((i++ < swapped ? static_cast<void>(std::get<Indexes>(indexes_).replace(new_obj, old_obj)) : static_cast<void>(0)),
       ...);
      throw;
    }
  }

  /// Effects: unlinks obj from every index (the rollback_many hook). An index that did not hold
  /// it (an object of another registry reached by a batch of this one, e.g. through a cascade)
  /// is fatal: the batch is past its point of no return and would destroy an object that readers
  /// of that other registry can still find. Complexity: one unlink each.
  void unlist(T& obj) noexcept {
    const bool all = (unlink_one(std::get<Indexes>(indexes_), obj) & ...);
    if (!all) [[unlikely]]
      detail::diagnose_fatal(misuse_kind::wrong_registry,
                             "indexed::unlist: the object was not linked in this registry's indexes (it belongs "
                             "to another registry, or was unlinked by hand): destroying it would free an object "
                             "readers may still find");
  }

  /// The index of type I, for lookups (inside a read_guard) and for anything done by hand.
  template <class I>
  I& index() noexcept {
    static_assert(detail::occurrences<I, Indexes...> == 1, "rcubatch::indexed::index<I>: I is not one of its indexes");
    return std::get<I>(indexes_);
  }
  /// The same, const.
  template <class I>
  const I& index() const noexcept {
    static_assert(detail::occurrences<I, Indexes...> == 1, "rcubatch::indexed::index<I>: I is not one of its indexes");
    return std::get<I>(indexes_);
  }

 private:
  template <class I>
  static bool add_one(I& index, T& obj, std::size_t& linked) {
    if (!index.add_unique(obj)) return false;
    ++linked;
    return true;
  }
  template <class I>
  static void replace_one(I& index, T& old_obj, T& new_obj) {
    if (!index.replace(old_obj, new_obj))
      throw std::invalid_argument("rcubatch::indexed::replace: the old object is not linked in one of the indexes");
  }
  /// An index's unlink; one that returns void is taken on trust.
  template <class I>
  static bool unlink_one(I& index, T& obj) noexcept {
    if constexpr (std::is_convertible_v<decltype(index.unlink(obj)), bool>) {
      return static_cast<bool>(index.unlink(obj));
    } else {
      index.unlink(obj);
      return true;
    }
  }
  void unlink_first(T& obj, std::size_t n) noexcept {
    std::size_t i = 0;
    ((i++ < n ? static_cast<void>(std::get<Indexes>(indexes_).unlink(obj)) : static_cast<void>(0)), ...);
  }

  std::tuple<Indexes...> indexes_;
};

}  // namespace rcubatch
