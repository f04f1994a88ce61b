// rcubatch/index/runtime_flavor.hpp — lfht_runtime_flavor: a liburcu flavor chosen at run time,
// for lfht_index and hlist_index in code that is not a template over the flavor (netsim's .cpp
// files), and the lfht_flavor concept (a flavor with the rcu_flavor_struct rculfhash needs).
//
//   rcubatch::hlist_index<T, &T::hook, KeyOf, rcubatch::lfht_runtime_flavor>
//       index(rcubatch::lfht_runtime_flavor::of<rcubatch::flavor::qsbr>());
//
// Its own header so that hlist_index.hpp needs no rculfhash.h; lfht_index.hpp includes it.
#pragma once

#include <concepts>
#include <string_view>

#include "rcubatch/annotate.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"
#include "rcubatch/read_guard.hpp"

namespace rcubatch {

/// A liburcu flavor with its rcu_flavor_struct: what rculfhash is created with (test doubles such as
/// counting_flavor have none).
template <class F>
concept lfht_flavor = rcu_flavor<F> && requires {
  { F::table() } -> std::same_as<const rcu_flavor_struct&>;
};

/// A liburcu flavor chosen at run time, for code that is not a template over the flavor (a .cpp file
/// of link-type code whose program picks the flavor from its command line):
///   lfht_index<T, &T::hook, KeyOf, lfht_runtime_flavor> index(lfht_runtime_flavor::of<flavor::qsbr>());
/// Each member stands for the compile-time flavor F's own call (read_guard<F>, offline_scope<F>,
/// in_read_section<F>), so the index behaves as lfht_index<..., F> does, checks included, at the
/// cost of an indirect call per read lock and per check.
struct lfht_runtime_flavor {
  std::string_view name;                     ///< F::name
  bool quiescent_state_based = false;        ///< F::quiescent_state_based
  const rcu_flavor_struct* table = nullptr;  ///< F::table(): what rculfhash is created with
  /// fn(arg) inside a read_guard<F>.
  void (*run_in_read_section)(void (*fn)(void*), void* arg) = nullptr;
  /// fn(arg) inside an offline_scope<F> (qsbr only; others call fn(arg)).
  void (*run_offline)(void (*fn)(void*), void* arg) = nullptr;
  bool (*in_read_section)() noexcept = nullptr;  ///< in_read_section<F>()
  bool (*read_ongoing)() noexcept = nullptr;     ///< F::read_ongoing()
  /// F::synchronize() (offline for it under qsbr), then the TSan grace-period edge of F
  /// (hlist_index::reclaim on a run-time flavor). Requires: outside read sections of F.
  void (*synchronize)() noexcept = nullptr;

  /// The description of the compile-time flavor F (one static object per F). Complexity: O(1).
  template <lfht_flavor F>
  static const lfht_runtime_flavor& of() noexcept {
    static const lfht_runtime_flavor f{
        F::name,
        F::quiescent_state_based,
        &F::table(),
        [](void (*fn)(void*), void* arg) {
          read_guard<F> guard;
          fn(arg);
        },
        [](void (*fn)(void*), void* arg) {
          if constexpr (F::quiescent_state_based) {
            offline_scope<F> offline;
            fn(arg);
          } else {
            fn(arg);
          }
        },
        []() noexcept { return rcubatch::in_read_section<F>(); },
        []() noexcept { return static_cast<bool>(F::read_ongoing()); },
        []() noexcept {
          if constexpr (F::quiescent_state_based) {
            if (F::read_ongoing()) {
              offline_scope<F> offline;  // an online qsbr thread would wait for itself
              F::synchronize();
            } else {
              F::synchronize();
            }
          } else {
            F::synchronize();
          }
          detail::tsan_grace_period_ended<F>();
        },
    };
    return f;
  }
};

}  // namespace rcubatch
