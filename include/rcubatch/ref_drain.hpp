// rcubatch/ref_drain.hpp — waiting for a batch's objects to lose their last reference.
//
// After the batch's last grace period no reader can find its objects, but holders that took a
// reference earlier (an in-flight packet, a cache entry) may still use them. The drain waits for
// all objects at once and destroys each as soon as its count reaches zero, in any order (the
// kernel's netdev_wait_allrefs_any): one stuck object never delays the others.
//
// It sleeps on a condition variable that the last put() signals — no polling, no fixed sleeps.
// While objects remain it wakes on two timers (drain_options):
//   - every rebroadcast_interval (1 s): calls the policy's rebroadcast(obj) for each, so holders
//     that cache references (the dst cache analogue) can let go;
//   - every stall_report_interval (10 s): prints, per object,
//       "waiting for <name> to become free. Usage count = <n>"
//     through drain_options::stall_reporter (stderr by default).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "rcubatch/batch.hpp"
#include "rcubatch/detail/tsan.hpp"
#include "rcubatch/detail/writer_lock.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/policy.hpp"

namespace rcubatch {

using stall_reporter = void (*)(std::string_view line) noexcept;

/// Tuning for the ref drain; the defaults are the kernel's.
struct drain_options {
  /// How often to name the objects still held. Lower it in tests; raise it for objects that are
  /// legitimately held for long (connections draining).
  std::chrono::milliseconds stall_report_interval{10'000};
  /// How often to ask holders to let go (policy.rebroadcast). Only runs if the hook exists.
  std::chrono::milliseconds rebroadcast_interval{1'000};
  /// Where stall lines go; nullptr means stderr.
  stall_reporter reporter = nullptr;
};

namespace detail {

template <class T, class Flavor, class Hooks>
class ref_drain final : public ref_release_listener {
  using clock = std::chrono::steady_clock;
  using access = registrable_access;
  using list_type = unreg_list<T>;

 public:
  ref_drain(list_type& objects, Hooks& hooks, const drain_options& opts, batch_stats& stats,
            writer_lock_ref& writer_lock) noexcept
      : objects_(objects), hooks_(hooks), opts_(opts), stats_(stats), writer_lock_(writer_lock) {}

  /// Marks every object unregistered and destroys them all, each as its references drop.
  /// Objects are taken newest first, so dependents go before the objects they hang from.
  void run() noexcept {
    const auto start = clock::now();
    for (auto it = objects_.end(); it != objects_.begin();) {
      T& obj = *--it;
      registrable<T>& r = obj;
      access::set_state(r, reg_state::unregistered);
      if (r.refs().begin_drain(this, &r)) {
        it = objects_.erase(it);
        release(obj);
      }
    }
    auto next_rebroadcast = start + opts_.rebroadcast_interval;
    auto next_report = start + opts_.stall_report_interval;
    while (!objects_.empty()) {
      registrable<T>* ready = nullptr;
      {
        // A registered QSBR thread that is online counts as a reader: waiting online would stall
        // every other thread's grace period, and deadlock with a holder that needs one before its
        // put(). Only the wait is offline: hooks (rebroadcast, destroy) run online as usual.
        offline_while_waiting offline;
        std::unique_lock lock(mutex_);
        const auto deadline = Hooks::has_rebroadcast_hook ? std::min(next_rebroadcast, next_report) : next_report;
        cv_.wait_until(lock, deadline, [&] { return ready_ != nullptr; });
        ready = std::exchange(ready_, nullptr);
      }
      const auto now = clock::now();
      while (ready != nullptr) {
        registrable<T>* next = access::drained_next(*ready);
        T& obj = static_cast<T&>(*ready);
        objects_.erase(objects_.iterator_to(obj));
        if (now - start > stats_.longest_drain_wait)
          stats_.longest_drain_wait = std::chrono::duration_cast<batch_stats::duration>(now - start);
        release(obj);
        ready = next;
      }
      if (objects_.empty()) break;
      if (Hooks::has_rebroadcast_hook && now >= next_rebroadcast) {
        writer_lock_.relock();  // the kernel re-sends NETDEV_UNREGISTER under RTNL
        for (T& obj : objects_) {
          hooks_.rebroadcast(obj);
          ++stats_.rebroadcasts;
        }
        writer_lock_.unlock();
        next_rebroadcast = clock::now() + opts_.rebroadcast_interval;
      }
      if (clock::now() >= next_report) {  // re-read: the rebroadcast may have waited for the lock
        for (T& obj : objects_) report_stall(obj);
        next_report = clock::now() + opts_.stall_report_interval;
      }
    }
  }

  void released(void* owner) noexcept override {
    auto* r = static_cast<registrable<T>*>(owner);
    std::lock_guard lock(mutex_);
    access::drained_next(*r) = ready_;
    ready_ = r;
    cv_.notify_one();  // under the lock: once we unlock, the drain may finish and this object die
  }

 private:
  struct offline_while_waiting {
    bool was_online = false;
    offline_while_waiting() noexcept {
      if constexpr (Flavor::quiescent_state_based) {
        was_online = Flavor::read_ongoing();
        if (was_online) {
          tsan_reader_leaves<Flavor>();
          Flavor::thread_offline();
        }
      }
    }
    ~offline_while_waiting() {
      if (was_online) Flavor::thread_online();
    }
    offline_while_waiting(const offline_while_waiting&) = delete;
    offline_while_waiting& operator=(const offline_while_waiting&) = delete;
  };

  void release(T& obj) noexcept {
    registrable<T>& r = obj;
    access::owner(r) = nullptr;
    access::batch(r) = nullptr;
    access::set_state(r, reg_state::released);
    hooks_.destroy(&obj);
  }

  void report_stall(const T& obj) noexcept {
    std::string line;
    try {
      line = "waiting for " + hooks_.name(obj) + " to become free. Usage count = " +
             std::to_string(static_cast<const registrable<T>&>(obj).refs().count());
    } catch (...) {
      line = "waiting for an object to become free (name unavailable: out of memory)";
    }
    if (opts_.reporter) {
      opts_.reporter(line);
    } else {
      std::fprintf(stderr, "rcubatch: %s\n", line.c_str());
    }
    ++stats_.stall_reports;
  }

  list_type& objects_;
  Hooks& hooks_;
  const drain_options& opts_;
  batch_stats& stats_;
  writer_lock_ref& writer_lock_;
  std::mutex mutex_;
  std::condition_variable cv_;
  registrable<T>* ready_ = nullptr;  // chain through drained_next; guarded by mutex_
};

}  // namespace detail
}  // namespace rcubatch
