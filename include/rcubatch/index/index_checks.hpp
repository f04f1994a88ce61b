// rcubatch/index/index_checks.hpp — the checks both indexes share: RCUBATCH_INDEX_CHECKS (on in
// every build unless defined to 0), the options' power-of-two check, the register_twice report for
// a hook that is already linked, and the abort with a sentence for a call in the wrong thread state.
// Used by lfht_index.hpp and hlist_index.hpp; nothing here is for users but the macro.
#pragma once

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "rcubatch/misuse.hpp"

// On in every build, release (NDEBUG) included: a find outside a read_guard is a use-after-free
// waiting for a grace period, and release builds are where it would go unseen. Opt out with
// -DRCUBATCH_INDEX_CHECKS=0 (the cost is stated in lfht_index.hpp's file comment).
#ifndef RCUBATCH_INDEX_CHECKS
#define RCUBATCH_INDEX_CHECKS 1
#endif

namespace rcubatch {

namespace detail {
/// The options check of both indexes: `v` (option `index`::`name`) must be a power of two.
inline void index_require_power_of_two(const char* options, const char* name, unsigned long v) {
  if (!std::has_single_bit(v))
    throw std::invalid_argument(std::string("rcubatch: ") + options + "::" + name + " = " + std::to_string(v) +
                                " is not a power of two");
}

/// The register_twice report of both indexes' adds, for an object whose hook is already linked.
inline void diagnose_hook_linked(const char* index, const char* op, bool in_this_index) {
  detail::diagnose(misuse_kind::register_twice,
                   std::string(index) + "::" + op + ": the object's hook is already linked in " +
                       (in_this_index ? "this index" : "another index") +
                       " (unlink it and wait for a grace period before adding it again)");
}

/// RCUBATCH_INDEX_CHECKS: the caller's thread is in the wrong state for an index call. Like an
/// assert, with a sentence: a pointer found outside a read section can be freed under the caller.
[[noreturn]] inline void index_check_failed(const char* op, const char* what) noexcept {
  std::fprintf(stderr, "rcubatch: lfht_index::%s: %s\n", op, what);
  std::abort();
}
}  // namespace detail

}  // namespace rcubatch
