// rcubatch/detail/writer_lock.hpp — the caller's writer lock, as rollback_many may release it.
//
// rollback_many never touches the registry's writer lock unless the caller opts in with
// unlock_during_waits(lock) (rollback_many.hpp). Then it unlocks around grace-period waits and the
// ref drain, and re-locks before it touches the registry again and before it returns. Without the
// opt-in this is an inert object and every call is a no-op.
#pragma once

#include <chrono>
#include <concepts>

namespace rcubatch::detail {

class writer_lock_ref {
  using clock = std::chrono::steady_clock;

 public:
  writer_lock_ref() = default;
  template <class Lockable>
    requires(!std::same_as<Lockable, writer_lock_ref>)
  explicit writer_lock_ref(Lockable& lock) noexcept
      : lock_(&lock),
        unlock_([](void* l) noexcept { static_cast<Lockable*>(l)->unlock(); }),
        relock_([](void* l) noexcept { static_cast<Lockable*>(l)->lock(); }) {}

  void unlock() noexcept {
    if (lock_ == nullptr || !held_) return;
    unlock_(lock_);
    held_ = false;
    unlocked_at_ = clock::now();
  }
  void relock() noexcept {
    if (lock_ == nullptr || held_) return;
    relock_(lock_);
    held_ = true;
    released_for_ += clock::now() - unlocked_at_;
  }
  /// True when the caller opted in to unlock_during_waits: other writers may run meanwhile.
  bool released_during_waits() const noexcept { return lock_ != nullptr; }
  /// Total time the lock was given back to other writers.
  clock::duration released_for() const noexcept { return released_for_; }

 private:
  void* lock_ = nullptr;
  void (*unlock_)(void*) noexcept = nullptr;
  void (*relock_)(void*) noexcept = nullptr;
  bool held_ = true;
  clock::time_point unlocked_at_{};
  clock::duration released_for_{};
};

}  // namespace rcubatch::detail
