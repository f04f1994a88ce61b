// rcubatch/combining.hpp — the leader/follower gate that lets a registry's synchronous
// unregister callers share batches (registry_options::combining, issue 35).
//
//   rcubatch::registry_options o;
//   o.combining.enabled = true;                 // unregister / try_unregister callers combine
//   rcubatch::registry<sessions_policy> sessions(o);
//   sessions.unregister(*s);                    // from many threads: ≤ 2 GPs per shared batch
//   (tests/combining_test.cpp runs registries set up so)
//
// What it is: a queue of calls, each on its caller's stack, and the rule deciding who runs them.
// A registry with combining on sends registry::unregister(obj), try_unregister(obj) and
// try_unregister<I>(key) through its gate; every other member runs its own batch as before.
//
// Who runs what (the registry's side is registry.hpp, "Combining"):
// - Alone. A caller that finds no leader waiting and takes the writer lock with try_lock runs
//   the batch of its own call at once, as if combining were off (flat combining's try-lock fast
//   path): no gate mutex, no condition variable made, no clock read (combining_stats counts
//   it: gate_locks stays 0), and a caller that would do better alone goes alone. With the
//   writers on one CPU and short spun grace periods this is nearly every call (bench/RESULTS.md,
//   "Combining that costs nothing where it cannot pay": 98–100 % of calls alone, 1.000–1.013
//   objects per batch, one busy reader or two), so it must cost what a plain unregister costs:
//   callgrind, +198 instructions a call over serialized's ~2,400 without the grace period (+357
//   before 2026-12-05: a condition variable and a clock read per call). Not while callers the
//   last shared batch released are still away (combining_options::gather_released): they are
//   runnable and, in a closed loop, about to call again, so this caller leads a batch they can join.
//   A caller on a call_rcu worker of the registry's flavors (unregister from a call_rcu
//   callback: a deferred teardown) always goes alone, waiting for the writer lock if it must,
//   and never leads nor follows: a leader's drain may run the flavor's rcu_barrier, which waits
//   for that worker — asleep in the gate as a follower, it would never return; and as a leader
//   it would drain others' objects without the barrier (ref_drain.hpp, guarantee 5). Test:
//   combining.a_caller_on_a_call_rcu_worker_never_waits_in_the_gate_for_a_leader_whose_drain_needs_that_worker.
// - Leader. Otherwise it queues its call; if no leader is waiting, it becomes the leader: it
//   blocks for the writer lock (offline under qsbr), then takes the calls queued by then — its
//   own first, at most combining_options::max_batch — and runs them as one batch of the registry
//   (the same code as the alone path, with more calls). Calls left over (more than max_batch)
//   get a new leader at once, so they wait for the lock and not for this batch. The leader gives
//   up the role as soon as it has taken its calls: the next leader waits for the lock while this
//   batch's drain and destroys run (the lock is released for them), so batches pipeline as
//   writers do on the plain lock. A batch takes what arrived while the lock was busy, like
//   liburcu's synchronize_rcu serving its queued waiters — and, with gather_released, the leader
//   first sleeps until the callers the last shared batch released have called again (on a shared
//   CPU they run only when it stops running), at most as long as that batch held the writer
//   lock (never over kMaxGatherWait), and only while its gather_meter measures that gathering
//   costs less per call than not gathering.
//   A leader that finds nobody queued behind it runs a batch of its own call, as a plain
//   unregister would, and finishes it without the gate's mutex and without a wake-up (unless a
//   listener is to be told): two acquisitions of the mutex in all (arrive, take), no sleep.
// - Follower. A queued caller that is not the leader blocks (a condition variable on its own
//   stack, offline under qsbr) until a leader has run its call (done), or makes it the next
//   leader, or hands its call back to run alone (a shared batch that threw: below).
// Every caller gets its own call's outcome: its status and refusal, and its exception; the
// grace periods and times of the batch it shared (registry.hpp says what each result holds).
//
// A reclaimer attached to the registry (async_unregister, async_options::
// combine_registry_unregister) listens: combining_listener::combined_batch_ran after each batch
// that ran gate calls. It turns the gate on while attached; it adds nothing to the batch.
//
// Thread safety: every member from any thread. Blocking: a follower until its call is done;
// under qsbr offline for every flavor of Flavors (detail/blocking.hpp). Lock order: the writer
// lock, then the gate's mutex, then a listener's own locks; the gate's mutex is never held
// while waiting for the writer lock or a grace period.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/intrusive/list.hpp>

#include "rcubatch/batch_stats.hpp"
#include "rcubatch/detail/blocking.hpp"
#include "rcubatch/misuse.hpp"

namespace rcubatch {

/// How a registry combines its synchronous unregister callers (registry_options::combining).
struct combining_options {
  /// Send registry::unregister(obj), try_unregister(obj) and try_unregister<I>(key) through the
  /// registry's gate (combining.hpp). Off: each call runs its own batch (unless a reclaimer with
  /// combine_registry_unregister is attached, which turns it on while attached).
  bool enabled = false;
  /// The most calls one batch takes (≥ 1; 0 is refused: std::invalid_argument from the registry's
  /// constructor): a leader leaves the rest to the next
  /// leader, so that one batch's hooks on the leader's thread stay short on a loaded machine.
  std::size_t max_batch = 64;
  /// Wait for callers the last shared batch released: while some of them have not called again,
  /// a caller does not go alone, and a leader holding the writer lock sleeps until they are back
  /// (at most as long as that batch held the writer lock, never over combining_gate::
  /// kMaxGatherWait; the ones still away are then forgotten) before it takes
  /// the queue — a closed-loop caller calls again at once, and on a shared CPU a woken thread runs
  /// only when its waker stops running. Only while the gate's gather_meter measures gathered
  /// batches cheaper per call than the others; it probes the other way now and then. Off (the
  /// default): a batch takes only what queued while the lock was busy.
  /// Measured (bench/run_many_writers.sh --issue35 -- --mw_gather_released, 2026-12-05, six
  /// runs at load 3.0–7.5, writers pinned to one of 2 CPUs; bench/RESULTS.md "Gathering by
  /// sleeping, measured"): on, batches held 4.0–6.9 objects at W = 8 (1.00–1.01 off) and
  /// sync_combined ÷ serialized read 1.13–1.31× there with one busy reader in 6 of 6 runs; but
  /// each gathered GP lasted 2–6× longer, and with a second busy reader on the writers' CPU W = 8
  /// read 0.69–0.99× and W = 4 0.36–1.15×; W = 2 never gathered. The version before (one yield
  /// per batch) read 0.19–0.20× at W = 4, 8 with the second reader. Turn it on only where writers
  /// have CPUs of their own.
  bool gather_released = false;
};

/// What a gate tells its listener after a batch that ran gate calls.
struct combined_batch_report {
  std::size_t calls = 0;     ///< calls the batch took (each one caller's thread)
  std::size_t requests = 0;  ///< of them, the calls that queued an object (the others lost a race or were refused)
  bool alone = false;        ///< its one call went alone (no leader waiting, the writer lock free at once)
  batch_stats batch{};       ///< the registry batch's statistics
  std::chrono::nanoseconds longest_wait{};  ///< the longest a taken call waited, arrival to its batch's end
};

/// What a registry's gate did, counted since the registry was made (combining_gate::stats,
/// registry::combining_stats): which way each call went and what it cost in the gate's mutex,
/// sleeps and wake-ups. Exact counts (not sampled): tests assert them, and the many-writers bench
/// reports them per object to show what combining spent where it could not pay (RESULTS.md).
struct combining_stats {
  std::uint64_t alone = 0;         ///< calls that found no leader waiting and the writer lock free: no gate mutex, no sleep
  std::uint64_t led = 0;           ///< batches led (each took the queue once, holding the writer lock)
  std::uint64_t led_alone = 0;     ///< of them, batches of the leader's own call only (nobody queued behind it)
  std::uint64_t followed = 0;      ///< calls whose caller slept in the gate for a leader (one condition-variable wait each)
  std::uint64_t wakes = 0;         ///< wake-ups sent to a sleeping caller (notify_one; none to a caller not asleep)
  std::uint64_t handed_back = 0;   ///< calls handed back to run alone (their shared batch threw)
  std::uint64_t gate_locks = 0;    ///< acquisitions of the gate's mutex on the calls' paths (arrive, take, finish, gathering)
};

/// The typed seam between a registry's gate and a reclaimer attached to it (async_unregister):
/// what the gate calls, nothing else. Thread safety: called on a batch's leader thread, under the
/// gate's mutex (so a detach that returned sees no later call); must not call the registry.
class combining_listener {
 public:
  /// After a batch that took `report.calls` gate calls ended (objects destroyed).
  virtual void combined_batch_ran(const combined_batch_report& report) noexcept = 0;

 protected:
  combining_listener() = default;   ///< a base only: a listener is a derived object
  ~combining_listener() = default;  ///< not virtual: never destroyed through this base
  combining_listener(const combining_listener&) = default;             ///< copyable, like any interface
  combining_listener& operator=(const combining_listener&) = default;  ///< copyable, like any interface
};

/// Which way of running a registry's batches costs its callers less, measured as they run
/// (combining_options::gather_released): gathering (a leader sleeps until the callers the last
/// shared batch released are back, so its batch takes them) or not (a leader takes what is
/// queued; a lone caller goes alone). A batch's cost is the time from the previous batch's end
/// to its own end, over the calls it served: with callers saturating the writer lock, the time
/// per call the registry delivers, every wait and wake-up included. Each way's estimate is a
/// ratio of sums (time over calls) of its last ~kWindow batches, not an average of ratios: on
/// a loaded machine one batch in many is preempted for milliseconds, and an average of recent
/// samples swings with each such batch (measured: it preferred the dearer way most of a run).
/// The cheaper way is chosen; one choice in kProbeEvery × (dearer ÷ cheaper, rounded up, at
/// most kMaxProbeScale) takes the other way once, so that its estimate follows the load while
/// the probes cost about 1/kProbeEvery of the time. Why not a rule: with a busy reader on the
/// writers' CPU a gathering leader's sleep hands that reader the CPU and every grace period
/// then waits for it (2026-12-05: 5.5 calls per batch yet 0.61× not gathering); with the reader
/// on a CPU of its own gathering paid 1.5× — which of the two a machine is, the clock tells.
/// Thread safety: none of its own; the gate calls it under the registry's writer lock.
class gather_meter {
 public:
  using clock = std::chrono::steady_clock;       ///< the batches' clock
  static constexpr unsigned kProbeEvery = 16;     ///< the probes' spacing, in choices, when both ways cost the same
  static constexpr unsigned kMaxProbeScale = 64;  ///< the most a dearer way's probes are spaced out by
  static constexpr double kWindow = 32;           ///< batches per way the estimates reach back over (decay 1/kWindow)

  /// Whether the next leader that may gather should. Effects: counts the choice (probes).
  bool gather_next() noexcept {
    const bool prefer = prefers_gathering();
    if (++since_probe_ < probe_spacing()) return prefer;
    since_probe_ = 0;
    return !prefer;
  }
  /// Whether gathering is the cheaper way (or not yet measured both ways).
  bool prefers_gathering() const noexcept {
    return !gathered_.measured() || !alone_.measured() || gathered_.per_call() <= alone_.per_call();
  }
  /// Choices between two probes: kProbeEvery × the dearer way's cost over the cheaper's.
  unsigned probe_spacing() const noexcept {
    if (!gathered_.measured() || !alone_.measured()) return kProbeEvery;
    const double g = gathered_.per_call(), a = alone_.per_call();
    const double ratio = std::min(std::ceil(std::max(g, a) / std::max(std::min(g, a), 1.0)), double{kMaxProbeScale});
    return kProbeEvery * static_cast<unsigned>(ratio);
  }
  /// Effects: a batch that served `calls` calls (≥ 1) ended at `now`, its leader gathering or
  /// not; the first batch only starts the clock.
  void ended(std::size_t calls, bool gathered, clock::time_point now) noexcept {
    if (last_end_ != clock::time_point{} && calls != 0)
      (gathered ? gathered_ : alone_)
          .add(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_end_).count()),
               static_cast<double>(calls));
    last_end_ = now;
  }
  /// The estimates, ns per call (0: none yet). For tests and observability.
  double gathered_ns_per_call() const noexcept { return gathered_.per_call(); }
  double alone_ns_per_call() const noexcept { return alone_.per_call(); }  ///< not gathering

 private:
  struct way {  // decayed sums of one way's batches
    double ns = 0, calls = 0;
    void add(double interval_ns, double served) noexcept {
      ns = ns * (1 - 1 / kWindow) + interval_ns;
      calls = calls * (1 - 1 / kWindow) + served;
    }
    bool measured() const noexcept { return calls != 0; }
    double per_call() const noexcept { return calls != 0 ? ns / calls : 0; }
  };
  clock::time_point last_end_{};  // the last batch's end (any way)
  way gathered_;                  // batches whose leader gathered
  way alone_;                     // the others (alone ones included)
  unsigned since_probe_ = 0;      // choices since the last probe
};

/// Where a gate call stands; written under the gate's mutex.
enum class combining_turn : unsigned char {
  queued,  ///< waiting in the queue for a leader
  lead,    ///< its caller leads: it takes the queue once it holds the writer lock
  taken,   ///< in a batch that has not ended
  done,    ///< its batch ended: its outcome is set
  alone,   ///< handed back: its caller runs it in a batch of its own (the shared batch threw)
};

template <class Call, class Flavors>
class combining_gate;

/// The gate's part of a call: a node of its queue, on the caller's stack (the registry's call
/// type derives from it). Boost.Intrusive: no allocation per call, O(1) unlink.
class combining_call : public boost::intrusive::list_base_hook<> {
 public:
  /// Effects: a call, not yet arrived (arrive stamps its arrival; the alone path reads no clock).
  combining_call() noexcept = default;
  combining_call(const combining_call&) = delete;
  combining_call& operator=(const combining_call&) = delete;
  /// Where the call stands (its own caller reads it after arrive returned, or after its own
  /// finish as a leader).
  combining_turn turn() const noexcept { return turn_; }

 protected:
  ~combining_call() = default;

 private:
  template <class, class>
  friend class combining_gate;
  combining_turn turn_ = combining_turn::queued;
  // Under the gate's mutex: its caller waits on cv_ in arrive. A waker notifies only then; a
  // caller not asleep reads its turn itself (the leader, whose own call finish marks).
  bool asleep_ = false;
  // Made under the gate's mutex just before its caller first sleeps: a call that never sleeps
  // (alone, or leading) never makes nor destroys one (~55 instructions a call, callgrind).
  std::optional<std::condition_variable> cv_;
  std::chrono::steady_clock::time_point arrived_{};  // stamped by arrive (report's longest_wait)
};

/// The gate (see the file comment). Call: the registry's call type, derived from
/// combining_call; Flavors: the flavor(s) a blocked follower goes offline for (one flavor or a
/// std::tuple of them).
template <class Call, class Flavors>
class combining_gate {
 public:
  using turn = combining_turn;  ///< where a call stands
  /// The longest a gathering leader sleeps holding the writer lock (gather_released()): callers
  /// released runnable reach the gate within microseconds; one that takes longer is not coming soon.
  static constexpr std::chrono::microseconds kMaxGatherWait{1000};
  using call = combining_call;  ///< the gate's part of a call

  /// The calls of one batch, in arrival order (the leader's first).
  using batch_list = boost::intrusive::list<Call>;

  /// Effects: a gate with these options, on if options.enabled. Throws: std::invalid_argument
  /// when options.max_batch is 0 (a batch that could take no call), nothing else.
  explicit combining_gate(combining_options options) : options_(checked(options)) {
    if (options_.enabled) enabled_.store(1, std::memory_order_relaxed);
  }
  combining_gate(const combining_gate&) = delete;
  combining_gate& operator=(const combining_gate&) = delete;
  /// Requires: no call inside (the registry's destructor: no member may run concurrently).
  ~combining_gate() = default;

  /// Whether calls go through the gate: the option, or a listener attached. One relaxed load.
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed) != 0; }

  /// Whether a caller may go alone now: no leader waiting and nothing queued, and (gather_released)
  /// no caller the last shared batch released still away (a hint: the caller's try_lock of the
  /// writer lock decides). Two relaxed loads.
  bool idle() const noexcept {
    return !leader_waiting_.load(std::memory_order_relaxed) && away_.load(std::memory_order_relaxed) == 0;
  }

  /// Whether a leader holding the writer lock should let the callers the last shared batch
  /// released call again before it takes the queue (gather_released; see there). A hint.
  bool released_still_away() const noexcept { return away_.load(std::memory_order_relaxed) != 0; }

  /// Requires: the caller leads and holds the writer lock (gather_released). Effects: if the
  /// meter (gather_meter) prefers gathering, sleeps (offline under qsbr) until every caller the
  /// last shared batch released has called again, or for as long as that batch held the writer
  /// lock (its drain and destroys excluded: a held object must not stretch it), at most
  /// kMaxGatherWait, whichever
  /// comes first, and returns true; the callers still away then are forgotten (not calling in a
  /// loop: the next callers go alone). Sleeping, not yielding: a yield hands a busy thread on the
  /// CPU a whole time slice (measured: 0.2×, RESULTS.md), a sleep lets the woken callers run.
  /// If the meter prefers not to, returns false at once: on its probe the callers away stay
  /// counted (the next leader may gather them), otherwise they are forgotten too.
  /// Blocking: at most kMaxGatherWait, holding the writer lock.
  bool gather_released() {
    if (!meter_.gather_next()) {
      if (!meter_.prefers_gathering()) forget_released();  // not a probe: the callers away go alone
      return false;
    }
    std::unique_lock lock(m_);
    ++stats_.gate_locks;
    if (away_.load(std::memory_order_relaxed) == 0) return false;
    const auto until = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(last_shared_batch_, kMaxGatherWait);
    {
      detail::offline_while_blocked<Flavors> asleep;  // holding the writer lock: no reader waits on it
      gathered_.wait_until(lock, until, [&] { return away_.load(std::memory_order_relaxed) == 0; });
    }
    away_.store(0, std::memory_order_relaxed);  // came back, or never will: either way none is awaited now
    return true;
  }

  /// Requires: the writer lock. Effects: the batch a leader (gathered: it gathered) or a lone
  /// caller ran, serving `calls` calls, ended now (gather_meter). Cost: one clock read.
  void batch_ended(std::size_t calls, bool gathered) noexcept {
    if (options_.gather_released) meter_.ended(calls, gathered, gather_meter::clock::now());
  }

  /// The meter (tests, observability). Requires: the writer lock, or no call in flight.
  const gather_meter& meter() const noexcept { return meter_; }

  /// Calls queued or led and not yet taken by a batch (the leader's included). For tests and
  /// observability: a snapshot.
  std::size_t waiting() const {
    std::scoped_lock lock(m_);
    return queue_.size();
  }

  /// What the gate did so far (combining_stats). A snapshot; takes the gate's mutex (not counted).
  combining_stats stats() const {
    std::scoped_lock lock(m_);
    combining_stats s = stats_;
    s.alone = alone_.load(std::memory_order_relaxed);
    return s;
  }

  /// Requires: the caller holds the writer lock, having taken it at once on the alone path.
  /// Effects: counts that call (combining_stats::alone). Cost: a load and a store (the writer
  /// lock orders the writers), no read-modify-write.
  void count_alone() noexcept { alone_.store(alone_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  /// Effects: on a call_rcu worker of Flavors, returns turn::alone at once (nothing queued).
  /// Otherwise queues c; if no leader is waiting, c's caller leads (returns turn::lead at once);
  /// otherwise blocks (offline under qsbr) until a leader ran c (done), made it the next leader
  /// (lead), or handed it back (alone). Returns c's turn then.
  /// Blocking: as said; never while holding the gate's mutex past the wait.
  turn arrive(Call& c) {
    call& me = c;
    // A call_rcu worker never queues (file comment, "Alone"): its caller takes the writer lock itself.
    if (detail::on_call_rcu_worker_of<Flavors>::now()) return me.turn_ = turn::alone;
    me.arrived_ = std::chrono::steady_clock::now();
    std::unique_lock lock(m_);
    ++stats_.gate_locks;
    queue_.push_back(c);
    if (const std::size_t a = away_.load(std::memory_order_relaxed); a != 0) {
      away_.store(a - 1, std::memory_order_relaxed);
      if (a == 1) gathered_.notify_one();  // the last one back: a gathering leader takes the queue
    }
    if (!leader_waiting_.load(std::memory_order_relaxed)) {
      leader_waiting_.store(true, std::memory_order_relaxed);
      me.turn_ = turn::lead;
      return turn::lead;
    }
    if (me.turn_ == turn::queued) {
      ++stats_.followed;
      me.cv_.emplace();
      me.asleep_ = true;
      detail::offline_while_blocked<Flavors> offline;
      me.cv_->wait(lock, [&] { return me.turn_ != turn::queued && me.turn_ != turn::taken; });
      me.asleep_ = false;
    }
    return me.turn_;
  }

  /// Requires: the caller leads (arrive returned lead) and holds the writer lock.
  /// Effects: takes the queued calls, at most max_batch, into `out` (the leader's own first: it
  /// is at the queue's head or was promoted from it); marks them taken. The leader role passes
  /// on: to the next queued call if some are left (woken as leader), else to the next arrival.
  void take(batch_list& out) {
    std::scoped_lock lock(m_);
    ++stats_.gate_locks;
    std::size_t n = 0;
    while (!queue_.empty() && n < options_.max_batch) {
      Call& c = queue_.front();
      queue_.pop_front();
      static_cast<call&>(c).turn_ = turn::taken;
      out.push_back(c);
      ++n;
    }
    ++stats_.led;
    if (n == 1) ++stats_.led_alone;
    if (queue_.empty()) {
      leader_waiting_.store(false, std::memory_order_relaxed);
    } else {  // more than one batch's worth: the next leader waits for the lock now, not for this batch
      call& next = queue_.front();
      next.turn_ = turn::lead;
      wake_next_leader(next);
    }
  }

  /// Requires: the leader, after the batch of `b` ended or threw. Effects: tells the listener,
  /// if `ran` (the batch ran: its stats; `requests` of b's calls queued an object),
  /// then marks each call of b with `outcome_of(call)` (done, or alone: its caller runs it by
  /// itself) and wakes its caller if asleep; the leader's own call is marked too (its caller is
  /// this thread). A batch of the leader's own call only, with no listener attached, is marked
  /// without the gate's mutex: nobody else sleeps on it nor reads it, and nobody is to be told
  /// (combining_stats::gate_locks: a lone leader takes the mutex twice, arrive and take). b is
  /// empty after. Throws: nothing (outcome_of must not throw).
  template <class OutcomeOf>
  void finish(batch_list& b, const batch_stats* ran, std::size_t requests, OutcomeOf&& outcome_of) noexcept {
    if (b.size() == 1 && !listening()) {  // the leader's own call (take put it first), alone
      Call& mine = b.front();
      b.pop_front();
      static_cast<call&>(mine).turn_ = outcome_of(mine);
      return;
    }
    std::scoped_lock lock(m_);
    ++stats_.gate_locks;
    if (ran != nullptr && listener_ != nullptr) report(b, *ran, requests, false);
    // Released callers, the leader included: in a closed loop each calls again soon.
    if (options_.gather_released && ran != nullptr && b.size() > 1) {
      away_.store(b.size(), std::memory_order_relaxed);
      last_shared_batch_ = ran->lock_hold;  // the longest a leader waits for them (gather_released())
    }
    while (!b.empty()) {
      Call& c = b.front();
      b.pop_front();
      call& g = c;
      g.turn_ = outcome_of(c);
      if (g.turn_ == turn::alone) ++stats_.handed_back;
      wake(g);  // under m_: the follower cannot leave (and destroy c) before we unlock
    }
  }

  /// The alone path's end: tells the listener, if one is attached, about the batch of `c` alone.
  /// Cost without a listener: one relaxed load.
  void ran_alone(Call& c, const batch_stats& st, std::size_t requests) noexcept {
    if (!listening()) return;
    std::scoped_lock lock(m_);
    ++stats_.gate_locks;
    if (listener_ == nullptr) return;
    batch_list one;
    one.push_back(c);
    report(one, st, requests, true);
    one.clear();
  }

  /// Effects: attaches `l` (turns the gate on while attached) unless one is attached already:
  /// false then, nothing changed.
  bool attach(combining_listener& l) noexcept {
    std::scoped_lock lock(m_);
    if (listener_ != nullptr) return false;
    listener_ = &l;
    enabled_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  /// Requires: `l` is attached. Effects: detaches it; once this returns the gate calls it no
  /// more. Calls in flight go on without it (they never needed it). Blocking: the gate's mutex.
  void detach(combining_listener& l) noexcept {
    std::scoped_lock lock(m_);
    if (listener_ != &l) return;
    listener_ = nullptr;
    enabled_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  static combining_options checked(const combining_options& o) {
    if (o.max_batch == 0)
      throw std::invalid_argument("rcubatch: combining_options::max_batch is 0; a combined batch takes at least 1 call");
    return o;
  }

  /// Whether a listener is attached (a hint, one relaxed load: attach and detach hold m_).
  bool listening() const noexcept { return enabled_.load(std::memory_order_relaxed) > (options_.enabled ? 1u : 0u); }

  /// Requires: m_. Wakes c's caller if it sleeps in arrive (counted); one not asleep reads its
  /// turn when it next looks, so a notify would be a wasted call.
  static void wake_if_asleep(call& c, combining_stats& s) noexcept {
    if (!c.asleep_) return;
    ++s.wakes;
    c.cv_->notify_one();
  }
  void wake(call& c) noexcept { wake_if_asleep(c, stats_); }
  void wake_next_leader(call& c) noexcept { wake_if_asleep(c, stats_); }

  void forget_released() {
    std::scoped_lock lock(m_);
    ++stats_.gate_locks;
    away_.store(0, std::memory_order_relaxed);
  }

  /// Requires: m_, a listener. One combined_batch_report for the calls of b.
  void report(const batch_list& b, const batch_stats& st, std::size_t requests, bool alone) noexcept {
    combined_batch_report r;
    r.calls = b.size();
    r.requests = requests;
    r.alone = alone;
    r.batch = st;
    if (alone) {  // arrival was its batch's start: the alone path stamps no arrival (no clock read)
      r.longest_wait = st.elapsed;
      listener_->combined_batch_ran(r);
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    for (const Call& c : b)
      r.longest_wait = std::max(
          r.longest_wait, std::chrono::duration_cast<std::chrono::nanoseconds>(now - static_cast<const call&>(c).arrived_));
    listener_->combined_batch_ran(r);
  }

  combining_options options_;
  mutable std::mutex m_;
  boost::intrusive::list<Call> queue_;            // under m_: calls not taken yet, in arrival order
  std::atomic<bool> leader_waiting_{false};       // written under m_: a caller leads or will (queue_ non-empty)
  std::atomic<std::size_t> away_{0};              // written under m_: callers the last shared batch released, not back yet
  std::condition_variable gathered_;              // with m_: away_ reached 0 (a gathering leader sleeps on it)
  std::chrono::nanoseconds last_shared_batch_{};  // under m_: how long the last shared batch held the writer lock
  gather_meter meter_;                            // under the registry's writer lock
  std::atomic<unsigned> enabled_{0};              // the option (1) + an attached listener (1)
  combining_listener* listener_ = nullptr;        // under m_
  combining_stats stats_;                          // under m_ (its alone field unused: alone_)
  std::atomic<std::uint64_t> alone_{0};            // written under the writer lock: calls gone alone at once
};

}  // namespace rcubatch
