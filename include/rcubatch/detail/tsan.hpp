// rcubatch/detail/tsan.hpp — ThreadSanitizer annotations for RCU ordering.
//
// TSan cannot see the ordering liburcu builds from volatile accesses, membarrier and futexes, so
// correct RCU code reports false races. Measured recipe (shared DESIGN.md): a reader releases a
// per-flavor token right before it leaves its read-side section, and a writer acquires the same
// token right after a grace period returns. That edge is exactly the RCU guarantee — everything a
// reader did inside its section happens before the writer's post-GP frees — so it hides no real
// bug: a free before the grace period still races. Outside TSan builds these compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define RCUBATCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RCUBATCH_TSAN 1
#endif
#endif

#ifdef RCUBATCH_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace rcubatch::detail {

/// One token per flavor: the synchronization object TSan is told about.
template <class Flavor>
inline char tsan_gp_token = 0;

template <class Flavor>
inline void tsan_reader_leaves() noexcept {
#ifdef RCUBATCH_TSAN
  __tsan_release(&tsan_gp_token<Flavor>);
#endif
}

template <class Flavor>
inline void tsan_grace_period_ended() noexcept {
#ifdef RCUBATCH_TSAN
  __tsan_acquire(&tsan_gp_token<Flavor>);
#endif
}

inline void tsan_release(void* p) noexcept {
#ifdef RCUBATCH_TSAN
  __tsan_release(p);
#else
  (void)p;
#endif
}

inline void tsan_acquire(void* p) noexcept {
#ifdef RCUBATCH_TSAN
  __tsan_acquire(p);
#else
  (void)p;
#endif
}

}  // namespace rcubatch::detail
