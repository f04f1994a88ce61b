// tests/support/replaced_operator_new.hpp — replaces the global operator new of a test binary so
// a test can make allocations throw std::bad_alloc:
//   g_allocations_until_failure = k;   // the k-th allocation from now throws (once); -1: never
//   g_fail_every_allocation = true;    // every allocation throws until it is set back to false
//
// Include it in exactly ONE translation unit of a binary of its own (it defines the replaceable
// operator new/delete, which may not be inline): the other binaries keep the sanitizers' checks
// on new/delete pairing, which a malloc-based replacement gives up.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

inline std::atomic<long> g_allocations_until_failure{-1};
inline std::atomic<bool> g_fail_every_allocation{false};

void* operator new(std::size_t n) {
  if (g_fail_every_allocation.load(std::memory_order_relaxed)) throw std::bad_alloc();
  if (g_allocations_until_failure.load(std::memory_order_relaxed) >= 0 &&
      g_allocations_until_failure.fetch_sub(1, std::memory_order_relaxed) == 0)
    throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC cannot see that this file's operator new is malloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
