// rcubatch/deferred_destroy.hpp — a flush that returns after its grace periods: the ref drain and
// destroy of a batch handed to a background thread, with a ticket to wait on.
//
//   rcubatch::deferred_destroy reclaimer;                        // one thread, started here
//   rcubatch::flush_ticket t = routes.unregister_many_deferred(doomed, reclaimer);
//   // here: every object of the batch is unpublished and its grace periods have elapsed;
//   // the destroys run on the reclaimer's thread (another core), as call_rcu's callbacks do
//   t.wait();                                                    // every object destroyed
//   (compiled in tests/deferred_destroy_test.cpp)
//
// Why: a batch of N objects costs its caller the unlist, ≤ 2 grace periods, then N destroys (and
// N frees) on the caller's thread. For a big flush the destroys are most of it (a 10^6-route
// flush: 1.1–1.4 s of 2.4–2.7 s, issue 36), while per-object call_rcu hands its frees to its own
// thread. registry::unregister_many_deferred runs the batch as unregister_many does up to the
// end of its last grace period, on the caller's thread under the writer lock, then gives the lock
// up and hands the rest of the batch — the retirees' disposal, the ref drain and every destroy,
// in the order rollback_many.hpp states — to this reclaimer's thread, and returns a flush_ticket.
//
// The guarantees of the batch do not change; only the thread that runs its last phases does:
// children are destroyed before their parents, a held object is destroyed once its last
// reference drops (the drain waits on the reclaimer's thread, not the caller's), hooks run in the
// phases of policy.hpp's table (validate … uninit on the caller's thread under the writer lock,
// dispose_retirees, destroy and dispose_late_retirees on the reclaimer's, without it; the drain's
// rebroadcast takes the lock there). Batches handed to one reclaimer are finished in the order
// they were handed over.
//
// Memory stays bounded: options().max_pending_objects caps the objects handed over and not yet
// destroyed. A flush that would go beyond it waits (offline under qsbr, detail/blocking.hpp), at
// the hand-off — its objects already unpublished, the writer lock already released — until the
// reclaimer has finished enough of the earlier batches; a batch alone larger than the cap is
// handed over once nothing else is pending. Counted in objects (the batch's, dependents
// included), not bytes.
//
// The caller's array: over a std::vector<T*>, the passes before the return prefetch through it
// (rollback_many.hpp, order_hint); the drain runs after the return and never reads it, but a copy
// (deferred_options::copy_order_hint, on by default; bench/RESULTS.md, "The order hint in the
// deferred flush").
//
// Frees in chunks: the reclaimer destroys options().destroy_chunk objects, then announces a
// quiescent state under qsbr (a pass of 10^6 destroys would hold up every qsbr grace period
// otherwise) and, with yield_between_chunks, yields its core so that a long destroy pass
// interleaves with the other threads (the case "Batch Free Can Be Harmful", PPoPP '24, measures a
// tight loop of frees). bench/bench_flush.cpp measures yielding against one pass: yielding was
// slower here and did not help the inserter (docs/guide.md, "A flush that returns early"), so it
// is off by default.
//
// Thread safety: submit (through the registry) and a ticket's wait/ready from any thread. The
// reclaimer's thread registers with the registry's flavors for each batch.
// Requires: the registry (and its policies) outlives every batch handed over; the reclaimer is
// destroyed before the registry, or every ticket waited for first. ~deferred_destroy finishes
// every batch handed over, then joins its thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include <sys/mman.h>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/detail/blocking.hpp"

namespace rcubatch {

/// How a deferred_destroy runs the batches handed to it.
struct deferred_options {
  /// The most objects handed over and not yet destroyed (all batches); a hand-off beyond it
  /// waits (see the file comment). At least 1.
  std::size_t max_pending_objects = std::size_t{1} << 22;
  /// Objects destroyed between two pauses of the reclaimer (0: one pass, no pause). A pause
  /// announces a quiescent state under qsbr (a long pass would hold up every grace period
  /// otherwise) and, with yield_between_chunks, yields the core.
  std::size_t destroy_chunk = 4096;
  /// Yield the core at each pause (off: measured slower on a loaded 2-core machine, glibc and
  /// jemalloc alike, with no gain in an inserter's latency: docs/guide.md).
  bool yield_between_chunks = false;
  /// Copy a flush's pointer array (registry::unregister_many_deferred over a std::vector<T*>) so
  /// that the drain, too, prefetches through it (rollback_many.hpp, order_hint): 8 bytes per
  /// object in pages of their own (detail::mapped_array) until the batch is done, and a copy on the
  /// caller's thread before the call returns. Off: the hint serves the passes before the return
  /// only (the caller's array may be gone after it). On by default: at 10^6 objects the drain took
  /// 0.3-1.2 s with the copy against 1.3-4.2 s without, for no measurable cost in the return
  /// (bench_flush, deferred against deferred_nocopy, 2026-12-05, loaded machine).
  bool copy_order_hint = true;
};

namespace detail {

/// What a flush_ticket shares with the reclaimer: done and the batch's final statistics, under a
/// mutex; wait_fn blocks offline in the submitter's flavors (set by the registry).
struct flush_state {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  batch_stats at_handoff{};  // written before the hand-off, read-only after
  batch_stats final_stats{};
  void (*wait_fn)(flush_state&) = nullptr;

  void complete(const batch_stats& st) {
    {
      std::lock_guard lock(mutex);
      final_stats = st;
      done = true;
    }
    cv.notify_all();
  }
  /// Blocks until done, offline in Flavors (a registered qsbr caller would stall the reclaimer's
  /// grace-period waits, e.g. the drain's barrier, otherwise).
  template <class Flavors>
  static void wait_offline(flush_state& s) {
    std::unique_lock lock(s.mutex);
    if (s.done) return;
    offline_while_blocked<Flavors> offline;
    s.cv.wait(lock, [&] { return s.done; });
  }
};

/// Registered with each flavor of a std::tuple of them for its scope (the reclaimer's thread, per
/// batch: it runs the hooks and the drain's waits of that batch's registry).
template <class Tuple>
struct registrations_in;
template <class... Fs>
struct registrations_in<std::tuple<Fs...>> {
  std::tuple<thread_registration<Fs>...> scopes;
};
/// A quiescent state in each flavor of the tuple (a no-op in all but qsbr). Requires: registered.
template <class... Fs>
void quiescent_in(std::type_identity<std::tuple<Fs...>>) noexcept {
  (Fs::quiescent_state(), ...);
}

/// Anonymous pages of their own for a flush's copy of its pointer array (deferred_options::
/// copy_order_hint), not the heap: glibc's free() of a large heap chunk consolidates every
/// fastbin chunk first — right after a drain of 10^6 destroys, 10^6 scattered cache misses
/// (bench_flush: 1.2-1.6 s after a 0.3 s drain, 2026-12-05); munmap touches none of them.
/// Empty (false) when the pages could not be had.
class mapped_array {
 public:
  mapped_array() = default;
  explicit mapped_array(std::size_t bytes) noexcept : bytes_(bytes == 0 ? 1 : bytes) {
    void* const p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : p;
  }
  mapped_array(mapped_array&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(o.bytes_) {}
  mapped_array& operator=(mapped_array&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  ~mapped_array() { release(); }
  explicit operator bool() const noexcept { return data_ != nullptr; }
  void* data() const noexcept { return data_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, bytes_);
    data_ = nullptr;
  }
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// One batch handed over: run() finishes it on the reclaimer's thread and returns its stats.
class deferred_job {
 public:
  deferred_job() = default;
  deferred_job(const deferred_job&) = delete;
  deferred_job& operator=(const deferred_job&) = delete;
  virtual ~deferred_job() = default;
  /// Effects: the batch's phases after its grace periods. `chunk`, `yield`: deferred_options'.
  virtual batch_stats run(std::size_t chunk, bool yield) noexcept = 0;
  std::size_t objects = 0;  ///< charged to max_pending_objects until run returns
  std::shared_ptr<flush_state> state;
};

}  // namespace detail

/// The handle of a batch handed to a deferred_destroy (or finished at once: a refused or empty
/// flush). Movable; a default-constructed or moved-from ticket is ready, with zero statistics.
class flush_ticket {
 public:
  flush_ticket() = default;
  /// A ticket that is ready at once, with `st` as both statistics (nothing was handed over).
  explicit flush_ticket(const batch_stats& st) : at_handoff_(st), final_(st) {}
  /// Of a batch handed over (the registry makes these).
  explicit flush_ticket(std::shared_ptr<detail::flush_state> s) : state_(std::move(s)) {
    if (state_) at_handoff_ = state_->at_handoff;
  }

  /// Effects: true once every object of the batch is destroyed (and its retirees disposed).
  /// Thread safety: any thread. Blocking: a short lock.
  bool ready() const {
    if (!state_) return true;
    std::lock_guard lock(state_->mutex);
    return state_->done;
  }
  /// Effects: waits until ready(), then returns the batch's final statistics (stats.elapsed runs
  /// from its start to its last destroy). Requires: not on the reclaimer's thread (a hook of a
  /// batch it runs would wait for itself). Blocking: until the reclaimer has run the batch
  /// (offline under qsbr in the registry's flavors). Thread safety: any thread, several at once.
  batch_stats wait() const {
    if (!state_) return final_;
    state_->wait_fn(*state_);
    std::lock_guard lock(state_->mutex);
    return state_->final_stats;
  }
  /// The batch's statistics when the flush call returned: its grace periods, its unlist and
  /// notify/uninit times; the drain's are in wait()'s. objects counts the whole batch.
  const batch_stats& stats_at_handoff() const noexcept { return at_handoff_; }

 private:
  std::shared_ptr<detail::flush_state> state_;
  batch_stats at_handoff_{};
  batch_stats final_{};
};

/// A background reclaimer for registry::unregister_many_deferred (see the file comment): one
/// thread that finishes the batches handed to it, in order.
class deferred_destroy {
 public:
  /// Effects: starts the reclaimer's thread. Requires: options.max_pending_objects >= 1.
  /// Throws: std::invalid_argument (max_pending_objects 0, nothing started); std::system_error
  /// (the thread could not start).
  explicit deferred_destroy(deferred_options options = {}) : options_(options) {
    if (options_.max_pending_objects == 0)
      throw std::invalid_argument("rcubatch::deferred_destroy: max_pending_objects must be at least 1");
    thread_ = std::thread([this] { loop(); });
  }
  deferred_destroy(const deferred_destroy&) = delete;
  deferred_destroy& operator=(const deferred_destroy&) = delete;
  /// Effects: finishes every batch handed over, then joins the thread. Blocking: as long as they take.
  ~deferred_destroy() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  /// The options given at construction.
  const deferred_options& options() const noexcept { return options_; }
  /// Objects handed over and not yet destroyed (a snapshot). Thread safety: any thread.
  std::size_t pending_objects() const {
    std::lock_guard lock(mutex_);
    return pending_;
  }

  /// Hand-offs that had to wait for room under max_pending_objects so far (a waiting one counts
  /// from the start of its wait). Thread safety: any thread.
  std::size_t waited_submits() const {
    std::lock_guard lock(mutex_);
    return waited_;
  }

  /// Requires: job's batch ran through its grace periods and gave the writer lock up.
  /// Effects: waits (offline in Flavors) until the job fits under max_pending_objects (or nothing
  /// else is pending), then queues it for the thread. The registry calls it. If the queue cannot
  /// grow (std::bad_alloc), the caller's thread finishes the batch itself (its ticket is then
  /// ready on return): a batch past its grace periods cannot be undone, and must not leak.
  /// Blocking: the budget wait; the batch's drain and destroys in that fallback.
  template <class Flavors>
  void submit(std::unique_ptr<detail::deferred_job> job) {
    std::unique_lock lock(mutex_);
    if (!fits(job->objects)) {
      ++waited_;
      detail::offline_while_blocked<Flavors> offline;
      cv_.wait(lock, [&] { return fits(job->objects); });
    }
    try {
      jobs_.push_back(std::move(job));  // strong guarantee: on bad_alloc, job is still ours
    } catch (...) {
      // The batch is past its grace periods and cannot be undone: finish it here rather than leak it.
      lock.unlock();
      std::shared_ptr<detail::flush_state> state = std::move(job->state);
      const batch_stats st = job->run(options_.destroy_chunk, options_.yield_between_chunks);
      job.reset();
      state->complete(st);
      return;
    }
    pending_ += jobs_.back()->objects;
    cv_.notify_all();
  }

 private:
  bool fits(std::size_t n) const noexcept { return pending_ == 0 || pending_ + n <= options_.max_pending_objects; }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and every batch finished
      std::unique_ptr<detail::deferred_job> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      const batch_stats st = job->run(options_.destroy_chunk, options_.yield_between_chunks);
      const std::size_t n = job->objects;
      std::shared_ptr<detail::flush_state> state = std::move(job->state);
      job.reset();  // the batch's queues and lanes go before the ticket says done
      state->complete(st);
      lock.lock();
      pending_ -= n;
      cv_.notify_all();  // submitters waiting for room
    }
  }

  deferred_options options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<detail::deferred_job>> jobs_;
  std::size_t pending_ = 0;
  std::size_t waited_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rcubatch
