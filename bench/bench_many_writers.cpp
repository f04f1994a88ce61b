// bench/bench_many_writers.cpp — issue 11's bench: many writers removing objects one at a time
// from one shared registry, and a producer that outruns reclamation.
//
//   rcubatch_bench_many_writers [--mw_objects=10000] [--mw_objects_gp1ms=1000]
//       [--mw_producer_seconds=5] [--mw_budget_bytes=N] [--mw_no_pin] [--mw_no_ping_pong]
//       [--mw_gather_released] [--mw_control] [--mw_case_ping_pong] [any --benchmark_* flag]
//   --mw_gather_released: sync_combined with combining_options::gather_released on (the leader
//   sleeps for the callers the last shared batch released while its gather_meter finds it pays).
//   --mw_control: also serialized_twin, serialized's code under another name, in the real-GP
//   sweeps (readers 1 and 2): an A/A control — serialized_twin / serialized is what the protocol
//   reads between two identical cases, the noise floor of sync_combined / serialized (issue 35).
//   --mw_case_ping_pong: a ping-pong probe (<= 50 ms) before every sweep case (ping_pong_ns).
//
// The sweep, BM_ManyWriters/<flavor>/<mode>[/gp:1ms]/threads:<W> (W = 1, 2, 4, 8, Google
// Benchmark's own ->Threads(W)): one rcubatch::registry (an lfht_index by key) is filled with
// W x N objects before the timed loop; each of the W writer threads then removes its own N objects
// one call at a time while one busy memb reader looks up random keys of the registry. The
// two-reader sweep, BM_ManyWriters/memb/readers:2/<serialized|sync_combined|async|call_rcu>/threads:<W>
// (issue 35), is the same with two busy readers: as many as this machine's 2 cores, where
// combining must still pay. Modes:
//   serialized           registry::unregister, the writer lock held through the grace periods
//   unlock_during_waits  the same with registry_options::unlock_during_waits
//   call_rcu             unlist by hand under the writer lock, then call_rcu per object to free it
//                        (the objects are added by hand too: call_rcu knows no registry states)
//   async                (with the asynchronous registry) submit and go on; the case ends with drain()
//   sync_combined        registry::unregister with registry_options::combining on: the registry's
//                        gate (combining.hpp) shares batches among the writers (issue 35)
//   sync_reclaimer       (with the asynchronous registry) async_unregister::unregister: submit,
//                        then wait for the ticket (sync_combined until issue 35)
//   serialized_twin      (--mw_control) serialized's code, registered under another name
// The flavor is memb; /gp:1ms is memb whose every grace period lasts at least 1 ms
// (sim_gp_flavor.hpp: a stand-in for a many-core machine or a kernel-like GP, simulated — the
// real memb GP here is ~17 µs). With gp:1ms each writer removes --mw_objects_gp1ms objects
// (default 1,000; a 1 ms GP per object at W = 8 would take 80 s per case with 10,000).
//
// Counters of every sweep case (set by thread 0 only, so Google Benchmark's per-thread sum is
// thread 0's value):
//   case_start_s, load_1m  when the case started (s since the process started: the JSON lists a
//                         case's repetitions together, not in the order they ran) and the load then
//   ping_pong_ns, ping_pong_mean_ns  (--mw_case_ping_pong) the probe's best and mean round trip
//   writer_run_us_per_object, writer_runqueue_us_per_object, writer_slices_per_object   the
//                         writers' schedstat during their loops, summed: time on a CPU, time
//                         runnable waiting for one, time slices (who the scheduler ran, per case)
//   reader_cpu_share, reader_runqueue_share, reader_slices_per_object (reader2_*: readers:2's
//                         second, on the writers' CPU)   a reader's time on a CPU and runnable over
//                         the case's wall time (from before the writers' start to the end)
//   objects_per_s         W x N / (first writer's start .. every object destroyed: for async the
//                         drain, for call_rcu rcu_barrier are included)
//   submit_objects_per_s  W x N / (first writer's start .. last writer's last call returned)
//   gps_per_object        the flavor's synchronize() calls during the case / objects, exact
//                         (a counting wrapper, sim_gp_flavor.hpp). call_rcu: -1 — its GPs are
//                         liburcu's worker's, which calls liburcu directly and is not countable
//                         from outside (call_rcu_gps_uncounted = 1 says so in the JSON).
//   domain_gps_per_object the registry's grace_domain stats().grace_periods / objects (cross-check)
//   gps_per_batch         GPs per batch, exact: serialized modes run one batch per object (so it
//                         equals gps_per_object); sync_combined: the registry's counters()
//                         grace_periods / batches; async and sync_reclaimer: the reclaimer's
//                         async_stats grace_periods / batches (a pipelined batch skips its GP #1,
//                         async_gps_pipelined counts those skips); call_rcu: -1
//   submit_p50_us, submit_p99_us    latency of one unregister / submit call (per-thread fixed
//                         log-linear histograms, merged; 12.5 % bucket resolution)
//   destroy_p50_us, destroy_p99_us  request (just before the call) -> the destroy hook / free callback
//   peak_pending_bytes    high-water mark of bytes submitted but not yet freed (sizeof the object
//                         each; an atomic incremented before the call, decremented when freed)
//   mean_gp_us            mean length of the counted GPs (shows the simulated 1 ms)
//   reader_lookups_per_s  the reader's lookups during the case
//   writer_voluntary_switches_per_object, writer_involuntary_switches_per_object   the writers'
//                         context switches during their loops (getrusage RUSAGE_THREAD), summed
//   gate_*_per_object     sync_combined: the gate's combining_stats per object — calls gone alone
//                         at once, batches led (and of them led alone: nobody queued behind),
//                         followers' sleeps, wake-ups sent, gate-mutex acquisitions
//
// The producer, BM_Producer/memb/<mode>/rate:<objects per second | max>: one thread creates,
// registers and submits the removal of as many objects as it can (or at the given rate) for
// --mw_producer_seconds, with the busy reader running; peak_pending_bytes for call_rcu against the
// asynchronous mode with a budget of --mw_budget_bytes.
//
// Pinning: the reader is pinned to the highest CPU this process may use and the writers to the
// others (when at least two are allowed; --mw_no_pin turns it off); with readers:2 the second
// reader is pinned to the next lower CPU (on 2 CPUs: the writers' CPU, which it then shares). liburcu's call_rcu worker is
// started before any pinning and keeps the full mask, as does the registry's reclaimer (created
// before its case pins thread 0).
//
// Google Benchmark's iteration count: every case is one iteration (min_time defaults to 0 here,
// injected before the user's flags so a --benchmark_min_time given on the command line wins),
// because an iteration is the whole W x N removal; a second iteration refills the registry.
#include <sched.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <rcubatch.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include "bench_ping_pong.hpp"  // the VM's fast/slow cache-line state, as the teardown bench records it
#include "latency_histogram.hpp"
#include "sim_gp_flavor.hpp"

#if __has_include(<rcubatch/async_unregister.hpp>)
#include <rcubatch/async_unregister.hpp>
#define RCUBATCH_BENCH_HAVE_ASYNC 1
#else
#define RCUBATCH_BENCH_HAVE_ASYNC 0
#endif

namespace rcubatch_bench::many_writers {
namespace {

using memb = rcubatch::flavor::memb;
using memb_counted = timed_gp_flavor<memb, 0>;   // real memb GPs, counted
using memb_gp1ms = timed_gp_flavor<memb, 1000>;  // simulated: each GP lasts >= 1 ms

std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
// The process's start (main), from which each case's case_start_s counts: Google Benchmark
// reports a case's repetitions together once its last one ran, so with random interleaving the
// JSON's order is not the order they ran in; this is (bench/many_writers_ratios.py pairs by it).
std::uint64_t g_process_start_ns = 0;

// --- Options --------------------------------------------------------------------------------------
struct options {
  std::size_t objects_per_thread = 10'000;
  std::size_t objects_per_thread_gp1ms = 1'000;
  double producer_seconds = 5;
  std::size_t budget_bytes = std::size_t{256} << 10;  // below call_rcu's peak at 100k objects/s (~340 KB)
  bool pin = true;
  // --mw_no_ping_pong: callgrind (bench/callgrind_per_submit.sh) reads the ping-pong's spinning
  // partner thread as an ever-deeper recursion and grows its own memory until valgrind gives up.
  bool ping_pong = true;
  // --mw_gather_released: sync_combined with combining_options::gather_released on.
  bool gather_released = false;
  // --mw_control: an A/A control, serialized_twin (serialized's code under another name) in both
  // real-GP sweeps, so that serialized_twin / serialized shows what the protocol reads between two
  // identical cases (issue 35: the noise floor a sync_combined / serialized ratio is read against).
  bool control = false;
  // --mw_case_ping_pong: a short ping-pong probe (<= 50 ms) before every sweep case, recorded as
  // its ping_pong_ns / ping_pong_mean_ns counters: the VM's cache-line state per case, not per run.
  bool case_ping_pong = false;
};
options g_opt;

// --- Objects, index, policy -----------------------------------------------------------------------
struct mw_object;
/// call_rcu's head with a way back to its object: standard-layout, so the callback may cast the
/// head it gets to this struct (an offsetof on mw_object, which is not standard-layout, would not be portable).
struct rcu_link {
  rcu_head head{};
  mw_object* owner = nullptr;
};

struct mw_object : rcubatch::registrable<mw_object> {
  std::uint64_t key = 0;
  std::uint64_t payload = 0;        // what readers read on a hit
  std::uint64_t requested_ns = 0;   // when its removal was requested (request -> destroy)
  rcubatch::lfht_hook<mw_object> by_key;
  rcu_link rcu;
};
constexpr std::size_t kObjectBytes = sizeof(mw_object);

using key_index_base = rcubatch::lfht_index<mw_object, &mw_object::by_key, rcubatch::key_member<&mw_object::key>, memb>;
/// Pre-sized for the largest sweep (8 x 10,000 objects), so no case grows the table while timed.
struct key_index : key_index_base {
  key_index() : key_index_base(sized()) {}
  static rcubatch::lfht_options sized() {
    rcubatch::lfht_options o;
    o.initial_buckets = 1ul << 17;
    return o;
  }
};

/// What a case counts; the hooks reach the running case's through g_case, because the registry
/// default-constructs its policies (cases run one at a time).
struct case_counters {
  std::atomic<std::int64_t> pending_bytes{0};
  std::atomic<std::int64_t> peak_pending_bytes{0};
  std::atomic<std::uint64_t> destroyed{0};
  atomic_latency_histogram destroy_latency;

  void submitted(std::size_t bytes) noexcept {
    const auto b = static_cast<std::int64_t>(bytes);
    const std::int64_t now = pending_bytes.fetch_add(b, std::memory_order_relaxed) + b;
    std::int64_t peak = peak_pending_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_pending_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void freed(const mw_object& o) noexcept {
    destroy_latency.add(now_ns() - o.requested_ns);
    pending_bytes.fetch_sub(static_cast<std::int64_t>(kObjectBytes), std::memory_order_relaxed);
    // Last, and release: the case reads `destroyed` (acquire) before the other counters once the
    // drain / rcu_barrier returned, which ThreadSanitizer cannot see as an edge by itself.
    destroyed.fetch_add(1, std::memory_order_release);
  }
};
std::atomic<case_counters*> g_case{nullptr};

void record_and_delete(mw_object* o) noexcept {
  g_case.load(std::memory_order_relaxed)->freed(*o);
  delete o;
}

/// The registry policy: indexed by key; destroy records request -> destroy, then deletes.
struct mw_policy : rcubatch::indexed<mw_object, key_index> {
  void destroy(mw_object* o) noexcept { record_and_delete(o); }
};

/// The call_rcu callback (on liburcu's worker, after a memb GP; call_after_grace_period gives
/// ThreadSanitizer both the submitter's and the readers' edges).
void free_after_gp(rcu_head* h) {
  record_and_delete(reinterpret_cast<rcu_link*>(h)->owner);
}

// --- CPUs -----------------------------------------------------------------------------------------
struct cpu_plan {
  bool pinned = false;
  int reader_cpu = -1;         // the first reader's
  int second_reader_cpu = -1;  // readers:2's second reader's: the next allowed CPU below reader_cpu
  cpu_set_t all{};
  cpu_set_t writers{};
  std::string text;
};
cpu_plan g_cpus;

cpu_plan make_cpu_plan(bool pin) {
  cpu_plan p;
  CPU_ZERO(&p.all);
  if (sched_getaffinity(0, sizeof p.all, &p.all) != 0) {
    p.text = "not pinned (sched_getaffinity failed)";
    return p;
  }
  const int n = CPU_COUNT(&p.all);
  if (!pin || n < 2) {
    p.text = !pin ? "not pinned (--mw_no_pin)" : "not pinned (one CPU allowed)";
    return p;
  }
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &p.all)) {
      p.reader_cpu = c;
      break;
    }
  for (int c = p.reader_cpu - 1; c >= 0; --c)
    if (CPU_ISSET(c, &p.all)) {
      p.second_reader_cpu = c;
      break;
    }
  p.writers = p.all;
  CPU_CLR(p.reader_cpu, &p.writers);
  p.pinned = true;
  p.text = "reader on CPU " + std::to_string(p.reader_cpu) + ", writers on the other " + std::to_string(n - 1);
  return p;
}

// --- The scheduler's view of a thread ------------------------------------------------------------
/// /proc/.../schedstat of one thread: time on a CPU, time runnable but waiting for one (runqueue),
/// time slices. What decides this bench with a reader on the writers' CPU is who runs when; these
/// say it per thread, per case (issue 35: do the modes schedule the writers and that reader
/// differently?). Zeros if the file cannot be read.
struct sched_sample {
  std::uint64_t run_ns = 0, wait_ns = 0, slices = 0;
  sched_sample& operator-=(const sched_sample& o) noexcept {
    run_ns -= o.run_ns;
    wait_ns -= o.wait_ns;
    slices -= o.slices;
    return *this;
  }
};
sched_sample read_schedstat(const char* path) noexcept {
  sched_sample s;
  if (FILE* f = std::fopen(path, "r")) {
    unsigned long long r = 0, w = 0, n = 0;
    if (std::fscanf(f, "%llu %llu %llu", &r, &w, &n) == 3) s = {r, w, n};
    std::fclose(f);
  }
  return s;
}
sched_sample schedstat_of(pid_t tid) noexcept {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  return read_schedstat(path.c_str());
}

void pin_self(const cpu_set_t& set) noexcept { static_cast<void>(pthread_setaffinity_np(pthread_self(), sizeof set, &set)); }

/// Pins the calling writer thread for its scope and restores its mask after (thread 0 is the
/// main thread, which creates the next case's threads).
class writer_pinning {
 public:
  writer_pinning() noexcept {
    if (!g_cpus.pinned) return;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    restore_ = true;
    pin_self(g_cpus.writers);
  }
  ~writer_pinning() {
    if (restore_) pin_self(saved_);
  }
  writer_pinning(const writer_pinning&) = delete;
  writer_pinning& operator=(const writer_pinning&) = delete;

 private:
  cpu_set_t saved_{};
  bool restore_ = false;
};

// --- The busy reader ------------------------------------------------------------------------------
/// The key range readers draw from: [lo, hi).
struct key_window {
  std::atomic<std::uint64_t> lo{1};
  std::atomic<std::uint64_t> hi{1};
};

/// One memb reader looking up random keys of the window in a tight loop, pinned to `cpu` (the
/// plan's reader CPU by default; none when not pinned).
template <class Registry>
class busy_reader {
 public:
  busy_reader(Registry& reg, const key_window& window, int cpu = g_cpus.reader_cpu)
      : reg_(reg), window_(window), cpu_(cpu), seed_(0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(cpu + 1)) {
    thread_ = std::thread([this] { run(); });
    while (!started_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~busy_reader() { stop(); }
  busy_reader(const busy_reader&) = delete;
  busy_reader& operator=(const busy_reader&) = delete;

  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t lookups() const noexcept { return lookups_.load(std::memory_order_relaxed); }
  /// Its scheduler statistics so far (schedstat), read from another thread.
  sched_sample sched() const noexcept { return schedstat_of(tid_.load(std::memory_order_acquire)); }

 private:
  void run() {
    rcubatch::thread_registration<memb> registration;
    tid_.store(static_cast<pid_t>(gettid()), std::memory_order_release);
    if (g_cpus.pinned && cpu_ >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu_, &one);
      pin_self(one);
    }
    started_.store(true, std::memory_order_release);
    std::uint64_t x = seed_, done = 0, sink = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      for (int k = 0; k < 64; ++k) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const std::uint64_t lo = window_.lo.load(std::memory_order_relaxed);
        const std::uint64_t hi = window_.hi.load(std::memory_order_relaxed);
        const std::uint64_t key = hi > lo ? lo + x % (hi - lo) : lo;
        rcubatch::read_guard<memb> guard;
        if (const mw_object* o = reg_.template find<key_index>(guard, key)) sink += o->payload;
      }
      done += 64;
      if ((done & 4095) == 0) lookups_.store(done, std::memory_order_relaxed);
    }
    lookups_.store(done, std::memory_order_relaxed);
    benchmark::DoNotOptimize(sink);
  }

  Registry& reg_;
  const key_window& window_;
  const int cpu_;
  const std::uint64_t seed_;  // two readers draw different keys
  std::thread thread_;
  std::atomic<bool> started_{false};
  std::atomic<pid_t> tid_{0};
  alignas(64) std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> lookups_{0};
};

// --- Modes ----------------------------------------------------------------------------------------
enum class mode { serialized, unlock_during_waits, call_rcu, async, sync_combined, sync_reclaimer, serialized_twin };

const char* to_string(mode m) {
  switch (m) {
    case mode::serialized: return "serialized";
    case mode::unlock_during_waits: return "unlock_during_waits";
    case mode::call_rcu: return "call_rcu";
    case mode::async: return "async";
    case mode::sync_combined: return "sync_combined";
    case mode::sync_reclaimer: return "sync_reclaimer";
    case mode::serialized_twin: return "serialized_twin";
  }
  return "?";
}

bool by_hand(mode m) { return m == mode::call_rcu; }
[[maybe_unused]] bool asynchronous(mode m) { return m == mode::async || m == mode::sync_reclaimer; }

template <class Flavor>
using sync_registry = rcubatch::basic_registry<Flavor, std::mutex, mw_policy>;

#if RCUBATCH_BENCH_HAVE_ASYNC
template <class Flavor>
using reclaimer_t = rcubatch::async_unregister<sync_registry<Flavor>>;

/// The asynchronous reclaimer of the async and sync_reclaimer modes: the library's defaults
/// (background thread, its batch thresholds and age), and the budget given for the producer.
template <class Flavor>
std::unique_ptr<reclaimer_t<Flavor>> make_reclaimer(mode m, sync_registry<Flavor>& reg, std::size_t budget_bytes) {
  if (!asynchronous(m)) return nullptr;
  rcubatch::async_options o;
  if (budget_bytes != 0) o.budget_bytes = budget_bytes;
  return std::make_unique<reclaimer_t<Flavor>>(reg, o);
}

/// The library's own view of a case, next to the bench's counters.
template <class Flavor>
void report_async_stats(benchmark::State& st, const reclaimer_t<Flavor>* r) {
  if (r == nullptr) return;
  const rcubatch::async_stats s = r->stats();
  auto& c = st.counters;
  c["async_batches"] = static_cast<double>(s.batches);
  c["async_requests_per_batch"] = s.batches ? static_cast<double>(s.submitted) / static_cast<double>(s.batches) : 0.0;
  c["async_max_requests_per_batch"] = static_cast<double>(s.max_requests_per_batch);
  c["async_max_threads_per_batch"] = static_cast<double>(s.max_threads_per_batch);
  c["async_lib_gps"] = static_cast<double>(s.grace_periods);
  c["async_gps_pipelined"] = static_cast<double>(s.gps_pipelined);
  c["gps_per_batch"] = s.batches ? static_cast<double>(s.grace_periods) / static_cast<double>(s.batches) : 0.0;
  c["async_pending_bytes_high_water"] = static_cast<double>(s.pending_bytes_high_water);
  c["async_blocked_submits"] = static_cast<double>(s.blocked_submits);
  c["async_latency_p99_us"] = static_cast<double>(s.latency_p99.count()) * 1e-3;
}
#else
template <class Flavor>
struct reclaimer_t {};
template <class Flavor>
std::unique_ptr<reclaimer_t<Flavor>> make_reclaimer(mode, sync_registry<Flavor>&, std::size_t) {
  return nullptr;
}
template <class Flavor>
void report_async_stats(benchmark::State&, const reclaimer_t<Flavor>*) {}
#endif

template <class Flavor>
std::unique_ptr<sync_registry<Flavor>> make_sync_registry(mode m, rcubatch::grace_domain<Flavor>& domain) {
  rcubatch::registry_options o;
  o.unlock_during_waits = m == mode::unlock_during_waits;
  o.combining.enabled = m == mode::sync_combined;  // the library's default max_batch
  o.combining.gather_released = g_opt.gather_released;
  return std::make_unique<sync_registry<Flavor>>(o, domain);
}

/// Publishes o: through the registry, or (call_rcu) by hand under its writer lock, leaving o
/// uninitialized so that the free callback may delete it.
template <class Registry>
bool publish(Registry& reg, mode m, mw_object& o) {
  if (!by_hand(m)) return reg.add(o);
  std::scoped_lock lock(reg.writer_lock());
  return reg.template index<key_index>().add_unique(o);
}

/// The call_rcu removal: unlist under the writer lock, free after a GP on liburcu's worker.
template <class Registry>
void remove_with_call_rcu(Registry& reg, mw_object& o) {
  {
    std::scoped_lock lock(reg.writer_lock());
    reg.template index<key_index>().unlink(o);
  }
  o.rcu.owner = &o;
  rcubatch::call_after_grace_period<memb, &free_after_gp>(&o.rcu.head);
}

// --- The sweep ------------------------------------------------------------------------------------
template <class Flavor>
struct sweep_fixture {
  using registry_t = sync_registry<Flavor>;
  explicit sweep_fixture(mode m) : reg(make_sync_registry<Flavor>(m, domain)), reclaimer(make_reclaimer<Flavor>(m, *reg, 0)) {}

  case_counters counters;
  rcubatch::grace_domain<Flavor> domain;
  std::unique_ptr<registry_t> reg;
  std::unique_ptr<reclaimer_t<Flavor>> reclaimer;  // async, sync_reclaimer; destroyed before reg
  key_window window;
  std::vector<mw_object*> objects;  // iteration k, thread t: [(k * W + t) * N, +N)
  std::vector<std::unique_ptr<busy_reader<registry_t>>> readers;  // 1, or 2 (readers:2)
  std::atomic<std::uint64_t> start_ns{0};
  std::mutex merge_mutex;
  latency_histogram submit_latency;
  std::uint64_t voluntary_switches = 0, involuntary_switches = 0;  // the writers', summed (merge_mutex)
  sched_sample writers_sched;  // the writers' schedstat during their loops, summed (merge_mutex)
  std::vector<sched_sample> readers_sched0;  // each reader's at readers_sched0_ns
  std::uint64_t readers_sched0_ns = 0;
  std::uint64_t gps0 = 0, gp_ns0 = 0, domain_gps0 = 0, lookups0 = 0;
};

template <class Flavor>
std::unique_ptr<sweep_fixture<Flavor>> g_sweep;

/// Every reader's lookups so far.
template <class Fixture>
std::uint64_t lookups_of(const Fixture& f) {
  std::uint64_t n = 0;
  for (const auto& r : f.readers) n += r->lookups();
  return n;
}

/// One removal in mode m. Returns false if the library refused it (it never should here).
/// Never inlined: bench/callgrind_per_submit.sh counts the instructions inside it per request.
template <class Registry, class Reclaimer>
[[gnu::noinline]] bool remove_one(Registry& reg, [[maybe_unused]] Reclaimer* reclaimer, mode m, mw_object& o) {
  switch (m) {
    case mode::serialized:
    case mode::serialized_twin:  // --mw_control: serialized's code under another name (the A/A control)
    case mode::unlock_during_waits:
    case mode::sync_combined:  // the registry's gate when its options say so (make_sync_registry)
      return !reg.unregister(o).refused;
    case mode::call_rcu:
      remove_with_call_rcu(reg, o);
      return true;
    case mode::async:
#if RCUBATCH_BENCH_HAVE_ASYNC
      return static_cast<bool>(reclaimer->submit(o));
#else
      break;
#endif
    case mode::sync_reclaimer:
#if RCUBATCH_BENCH_HAVE_ASYNC
      return reclaimer->unregister(o);
#else
      break;
#endif
  }
  std::abort();  // async modes are not registered without the asynchronous library
}

template <class Flavor>
void bm_many_writers(benchmark::State& st, mode m, std::size_t per_thread, int readers) {
  const auto writers = static_cast<std::size_t>(st.threads());
  const auto me = static_cast<std::size_t>(st.thread_index());
  // The registry's flavor wraps memb and takes memb's registration (sim_gp_flavor.hpp).
  rcubatch::thread_registration<memb> memb_registration;

  if (me == 0) {
    // Per case, before anything of the case runs (the other writers wait in Google Benchmark's
    // start barrier, asleep): when it started, the load, and (--mw_case_ping_pong) the VM's state.
    auto& c = st.counters;
    c["case_start_s"] = static_cast<double>(now_ns() - g_process_start_ns) * 1e-9;
    double load[1] = {-1};
    static_cast<void>(getloadavg(load, 1));
    c["load_1m"] = load[0];
    if (g_opt.case_ping_pong) {
      const rcubatch_bench::ping_pong_result pp = rcubatch_bench::ping_pong(200'000, 0.05);
      c["ping_pong_ns"] = pp.best_ns;
      c["ping_pong_mean_ns"] = pp.mean_ns;
    }
    // Before thread 0 pins itself: the registry (and any thread it owns) and the reader get the
    // full CPU mask at creation.
    auto f = std::make_unique<sweep_fixture<Flavor>>(m);
    g_case.store(&f->counters, std::memory_order_relaxed);
    const std::size_t total = writers * per_thread * static_cast<std::size_t>(st.max_iterations);
    f->objects.reserve(total);
    for (std::size_t i = 0; i < total; ++i) {
      auto* o = new mw_object;
      o->key = i + 1;
      o->payload = i + 2;
      if (!publish(*f->reg, m, *o)) std::abort();  // keys are unique: cannot happen
      f->objects.push_back(o);
    }
    f->window.lo.store(1, std::memory_order_relaxed);
    f->window.hi.store(total + 1, std::memory_order_relaxed);
    using reader_t = busy_reader<typename sweep_fixture<Flavor>::registry_t>;
    f->readers.push_back(std::make_unique<reader_t>(*f->reg, f->window));
    if (readers == 2) f->readers.push_back(std::make_unique<reader_t>(*f->reg, f->window, g_cpus.second_reader_cpu));
    f->gps0 = Flavor::synchronizes();
    f->gp_ns0 = Flavor::synchronize_ns();
    f->domain_gps0 = f->domain.stats().grace_periods;
    f->lookups0 = lookups_of(*f);
    for (const auto& r : f->readers) f->readers_sched0.push_back(r->sched());
    f->readers_sched0_ns = now_ns();
    g_sweep<Flavor> = std::move(f);
  }
  writer_pinning pinning;

  std::size_t iteration = 0;
  for (auto _ : st) {  // the start barrier publishes thread 0's fixture to every writer
    sweep_fixture<Flavor>& f = *g_sweep<Flavor>;
    std::uint64_t expected = 0;
    f.start_ns.compare_exchange_strong(expected, now_ns(), std::memory_order_relaxed);
    latency_histogram submit;
    rusage ru0{};
    getrusage(RUSAGE_THREAD, &ru0);
    const sched_sample sched0 = read_schedstat("/proc/thread-self/schedstat");
    mw_object* const* mine = f.objects.data() + (iteration * writers + me) * per_thread;
    for (std::size_t i = 0; i < per_thread; ++i) {
      mw_object& o = *mine[i];
      const std::uint64_t t0 = now_ns();
      o.requested_ns = t0;
      f.counters.submitted(kObjectBytes);
      if (!remove_one(*f.reg, f.reclaimer.get(), m, o)) std::abort();
      submit.add(now_ns() - t0);
    }
    rusage ru1{};
    getrusage(RUSAGE_THREAD, &ru1);
    sched_sample sched1 = read_schedstat("/proc/thread-self/schedstat");
    sched1 -= sched0;
    std::scoped_lock lock(f.merge_mutex);  // before the end barrier: thread 0 reads it after
    f.writers_sched.run_ns += sched1.run_ns;
    f.writers_sched.wait_ns += sched1.wait_ns;
    f.writers_sched.slices += sched1.slices;
    f.submit_latency.merge(submit);
    f.voluntary_switches += static_cast<std::uint64_t>(ru1.ru_nvcsw - ru0.ru_nvcsw);
    f.involuntary_switches += static_cast<std::uint64_t>(ru1.ru_nivcsw - ru0.ru_nivcsw);
    ++iteration;
  }

  if (me != 0) return;
  sweep_fixture<Flavor>& f = *g_sweep<Flavor>;
  const std::uint64_t loop_end = now_ns();
  if (m == mode::call_rcu) memb::barrier();  // every callback queued so far has run
#if RCUBATCH_BENCH_HAVE_ASYNC
  if (m == mode::async) f.reclaimer->drain();  // everything submitted is destroyed
#endif
  const std::uint64_t end = now_ns();
  const std::uint64_t lookups = lookups_of(f) - f.lookups0;
  std::vector<sched_sample> readers_sched;
  for (const auto& r : f.readers) readers_sched.push_back(r->sched());
  const std::uint64_t readers_sched_ns = now_ns();
  for (auto& r : f.readers) r->stop();

  const auto objects = static_cast<double>(writers * per_thread * iteration);
  const double start = static_cast<double>(f.start_ns.load());
  const std::uint64_t destroyed = f.counters.destroyed.load();
  if (destroyed != writers * per_thread * iteration) {
    st.SkipWithError(("destroyed " + std::to_string(destroyed) + " of " +
                      std::to_string(writers * per_thread * iteration) + " objects").c_str());
  }
  const double gps = static_cast<double>(Flavor::synchronizes() - f.gps0);
  const double gp_ns = static_cast<double>(Flavor::synchronize_ns() - f.gp_ns0);
  const latency_histogram destroy = f.counters.destroy_latency.snapshot();
  auto& c = st.counters;
  c["objects"] = objects;
  c["objects_per_thread"] = static_cast<double>(per_thread);
  c["writers"] = static_cast<double>(writers);
  c["readers"] = static_cast<double>(readers);
  c["objects_per_s"] = objects / ((static_cast<double>(end) - start) * 1e-9);
  c["submit_objects_per_s"] = objects / ((static_cast<double>(loop_end) - start) * 1e-9);
  c["gps_per_object"] = m == mode::call_rcu ? -1.0 : gps / objects;
  c["call_rcu_gps_uncounted"] = m == mode::call_rcu ? 1.0 : 0.0;
  c["domain_gps_per_object"] =
      m == mode::call_rcu ? -1.0 : static_cast<double>(f.domain.stats().grace_periods - f.domain_gps0) / objects;
  // Serialized modes run one batch per object; the async modes overwrite this with the
  // reclaimer's own batches (report_async_stats below).
  c["gps_per_batch"] = m == mode::call_rcu ? -1.0 : gps / objects;
  if (m == mode::sync_combined) {  // the gate's shared batches, counted by the registry
    const auto totals = f.reg->counters().batches;
    c["gps_per_batch"] = totals.batches ? static_cast<double>(totals.grace_periods) / static_cast<double>(totals.batches) : 0.0;
    c["objects_per_batch"] = totals.batches ? static_cast<double>(totals.objects) / static_cast<double>(totals.batches) : 0.0;
    // Which way the gate sent each call, and what it spent (combining_stats), per object.
    const rcubatch::combining_stats g = f.reg->combining_stats();
    c["gate_alone_per_object"] = static_cast<double>(g.alone) / objects;
    c["gate_led_per_object"] = static_cast<double>(g.led) / objects;
    c["gate_led_alone_per_object"] = static_cast<double>(g.led_alone) / objects;
    c["gate_sleeps_per_object"] = static_cast<double>(g.followed) / objects;
    c["gate_wakes_per_object"] = static_cast<double>(g.wakes) / objects;
    c["gate_locks_per_object"] = static_cast<double>(g.gate_locks) / objects;
  }
  // Every writer's context switches during its loop (getrusage RUSAGE_THREAD): voluntary ones
  // are its sleeps (the writer lock's futex, the gate's condition variable, a GP's futex wait).
  c["writer_voluntary_switches_per_object"] = static_cast<double>(f.voluntary_switches) / objects;
  c["writer_involuntary_switches_per_object"] = static_cast<double>(f.involuntary_switches) / objects;
  // Who ran (schedstat): the writers' time on a CPU and runnable-but-waiting per object, and each
  // reader's share of the case's wall time on a CPU and waiting (reader 2 shares the writers' CPU).
  c["writer_run_us_per_object"] = static_cast<double>(f.writers_sched.run_ns) * 1e-3 / objects;
  c["writer_runqueue_us_per_object"] = static_cast<double>(f.writers_sched.wait_ns) * 1e-3 / objects;
  c["writer_slices_per_object"] = static_cast<double>(f.writers_sched.slices) / objects;
  for (std::size_t i = 0; i < readers_sched.size() && i < f.readers_sched0.size(); ++i) {
    sched_sample d = readers_sched[i];
    d -= f.readers_sched0[i];
    const double wall = static_cast<double>(readers_sched_ns - f.readers_sched0_ns);
    const std::string name = i == 0 ? "reader" : "reader" + std::to_string(i + 1);
    c[name + "_cpu_share"] = wall > 0 ? static_cast<double>(d.run_ns) / wall : 0.0;
    c[name + "_runqueue_share"] = wall > 0 ? static_cast<double>(d.wait_ns) / wall : 0.0;
    c[name + "_slices_per_object"] = static_cast<double>(d.slices) / objects;
  }
  c["mean_gp_us"] = gps > 0 ? gp_ns / gps * 1e-3 : 0.0;
  c["gp_min_us"] = static_cast<double>(Flavor::min_gp_us);
  c["submit_p50_us"] = f.submit_latency.quantile(0.50) * 1e-3;
  c["submit_p99_us"] = f.submit_latency.quantile(0.99) * 1e-3;
  c["destroy_p50_us"] = destroy.quantile(0.50) * 1e-3;
  c["destroy_p99_us"] = destroy.quantile(0.99) * 1e-3;
  c["peak_pending_bytes"] = static_cast<double>(f.counters.peak_pending_bytes.load());
  c["reader_lookups_per_s"] = static_cast<double>(lookups) / ((static_cast<double>(end) - start) * 1e-9);  // all readers
  report_async_stats<Flavor>(st, f.reclaimer.get());
  g_sweep<Flavor>.reset();  // every object is destroyed: the registry is empty
  g_case.store(nullptr, std::memory_order_relaxed);
}

/// call_rcu is registered for the real flavor only: its GPs are liburcu's worker's own memb GPs,
/// which the simulated flavor cannot stretch, so a gp:1ms call_rcu case would repeat the real one.
template <class Flavor>
void register_sweep(const char* suffix, std::size_t per_thread) {
  std::vector<mode> modes{mode::serialized, mode::unlock_during_waits, mode::sync_combined};
  if (Flavor::min_gp_us == 0) modes.push_back(mode::call_rcu);
  if (Flavor::min_gp_us == 0 && g_opt.control) modes.push_back(mode::serialized_twin);
  if (RCUBATCH_BENCH_HAVE_ASYNC) {
    modes.push_back(mode::async);
    modes.push_back(mode::sync_reclaimer);
  }
  for (mode m : modes) {
    const std::string name = std::string("BM_ManyWriters/memb/") + to_string(m) + suffix;
    benchmark::RegisterBenchmark(name.c_str(), [m, per_thread](benchmark::State& st) {
      bm_many_writers<Flavor>(st, m, per_thread, 1);
    })->Threads(1)->Threads(2)->Threads(4)->Threads(8)->Unit(benchmark::kMillisecond);
  }
}

/// Issue 35's sweep with two busy readers (real memb GPs): BM_ManyWriters/memb/readers:2/<mode>.
void register_two_reader_sweep(std::size_t per_thread) {
  std::vector<mode> modes{mode::serialized, mode::sync_combined};
  if (RCUBATCH_BENCH_HAVE_ASYNC) modes.push_back(mode::async);
  modes.push_back(mode::call_rcu);
  if (g_opt.control) modes.push_back(mode::serialized_twin);
  for (mode m : modes) {
    const std::string name = std::string("BM_ManyWriters/memb/readers:2/") + to_string(m);
    benchmark::RegisterBenchmark(name.c_str(), [m, per_thread](benchmark::State& st) {
      bm_many_writers<memb_counted>(st, m, per_thread, 2);
    })->Threads(1)->Threads(2)->Threads(4)->Threads(8)->Unit(benchmark::kMillisecond);
  }
}

// --- The producer that outruns reclamation ----------------------------------------------------------
/// One thread: create, register, submit the removal, for `seconds`, at `rate` objects/s (0: as
/// fast as it can). call_rcu publishes and unlists by hand; the asynchronous mode goes through the
/// registry with a memory budget.
void bm_producer(benchmark::State& st, mode m, double rate) {
  using Flavor = memb_counted;
  // The registry's flavor wraps memb and takes memb's registration (sim_gp_flavor.hpp).
  rcubatch::thread_registration<memb> memb_registration;
  case_counters counters;
  g_case.store(&counters, std::memory_order_relaxed);
  rcubatch::grace_domain<Flavor> domain;
  auto reg = make_sync_registry<Flavor>(m, domain);
  auto reclaimer = make_reclaimer<Flavor>(m, *reg, g_opt.budget_bytes);
  key_window window;
  busy_reader<sync_registry<Flavor>> reader(*reg, window);
  writer_pinning pinning;
  latency_histogram submit;
  std::uint64_t produced = 0, next_key = 1;
  const std::uint64_t lookups0 = reader.lookups();
  const std::uint64_t gps0 = Flavor::synchronizes();
  const std::uint64_t start = now_ns();
  const auto limit_ns = static_cast<std::uint64_t>(g_opt.producer_seconds * 1e9);
  for (auto _ : st) {
    for (;;) {
      const std::uint64_t t = now_ns();
      if (t - start >= limit_ns) break;
      if (rate > 0) {
        const auto due = start + static_cast<std::uint64_t>(static_cast<double>(produced) * 1e9 / rate);
        if (t < due) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(due - t));
          continue;
        }
      }
      auto* o = new mw_object;
      o->key = next_key++;
      o->payload = o->key + 1;
      if (!publish(*reg, m, *o)) std::abort();
      window.hi.store(next_key, std::memory_order_relaxed);
      window.lo.store(next_key > 4096 ? next_key - 4096 : 1, std::memory_order_relaxed);
      const std::uint64_t t0 = now_ns();
      o->requested_ns = t0;
      counters.submitted(kObjectBytes);
      if (!remove_one(*reg, reclaimer.get(), m, *o)) std::abort();
      submit.add(now_ns() - t0);
      ++produced;
    }
  }
  const std::uint64_t loop_end = now_ns();
  if (m == mode::call_rcu) memb::barrier();
#if RCUBATCH_BENCH_HAVE_ASYNC
  if (reclaimer) reclaimer->drain();
#endif
  const std::uint64_t end = now_ns();
  const std::uint64_t lookups = reader.lookups() - lookups0;
  reader.stop();
  if (counters.destroyed.load() != produced)
    st.SkipWithError(("destroyed " + std::to_string(counters.destroyed.load()) + " of " + std::to_string(produced)).c_str());
  const latency_histogram destroy = counters.destroy_latency.snapshot();
  auto& c = st.counters;
  const auto n = static_cast<double>(produced);
  c["objects"] = n;
  c["objects_per_s"] = n / (static_cast<double>(loop_end - start) * 1e-9);
  c["target_rate"] = rate;
  c["drain_ms"] = static_cast<double>(end - loop_end) * 1e-6;
  c["peak_pending_bytes"] = static_cast<double>(counters.peak_pending_bytes.load());
  c["budget_bytes"] = m == mode::call_rcu ? 0.0 : static_cast<double>(g_opt.budget_bytes);
  c["gps_per_object"] = m == mode::call_rcu ? -1.0 : static_cast<double>(Flavor::synchronizes() - gps0) / n;
  c["submit_p50_us"] = submit.quantile(0.50) * 1e-3;
  c["submit_p99_us"] = submit.quantile(0.99) * 1e-3;
  c["destroy_p50_us"] = destroy.quantile(0.50) * 1e-3;
  c["destroy_p99_us"] = destroy.quantile(0.99) * 1e-3;
  c["reader_lookups_per_s"] = static_cast<double>(lookups) / (static_cast<double>(end - start) * 1e-9);
  report_async_stats<Flavor>(st, reclaimer.get());
  reclaimer.reset();
  reg.reset();
  g_case.store(nullptr, std::memory_order_relaxed);
}

void register_producer() {
  std::vector<mode> modes{mode::call_rcu};
  if (RCUBATCH_BENCH_HAVE_ASYNC) modes.push_back(mode::async);
  for (mode m : modes)
    for (double rate : {100'000.0, 300'000.0, 0.0}) {
      const std::string name = std::string("BM_Producer/memb/") + to_string(m) + "/rate:" +
                               (rate > 0 ? std::to_string(static_cast<long>(rate)) : std::string("max"));
      benchmark::RegisterBenchmark(name.c_str(), [m, rate](benchmark::State& st) { bm_producer(st, m, rate); })
          ->Unit(benchmark::kMillisecond);
    }
}

/// liburcu creates its call_rcu worker on the first call_rcu, with the caller's CPU mask: start it
/// here, before any thread is pinned.
void do_nothing(rcu_head*) {}
void start_call_rcu_worker() {
  static rcu_head head;
  rcubatch::call_after_grace_period<memb, &do_nothing>(&head);
  memb::barrier();
}

bool parse_size(const char* arg, const char* flag, std::size_t& out) {
  const std::size_t n = std::strlen(flag);
  if (std::strncmp(arg, flag, n) != 0) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(arg + n, &end, 10);
  if (end == arg + n || *end != '\0' || v == 0) {
    std::fprintf(stderr, "%s: expected a positive integer after %s, got '%s'\n", "rcubatch_bench_many_writers", flag, arg + n);
    std::exit(2);
  }
  out = static_cast<std::size_t>(v);
  return true;
}

}  // namespace
}  // namespace rcubatch_bench::many_writers

int main(int argc, char** argv) {
  using namespace rcubatch_bench::many_writers;
  g_process_start_ns = now_ns();
  std::vector<char*> args{argv[0]};
  static char default_min_time[] = "--benchmark_min_time=0";
  args.push_back(default_min_time);  // first, so a user's --benchmark_min_time wins
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    std::size_t v = 0;
    if (parse_size(a, "--mw_objects=", v)) g_opt.objects_per_thread = v;
    else if (parse_size(a, "--mw_objects_gp1ms=", v)) g_opt.objects_per_thread_gp1ms = v;
    else if (parse_size(a, "--mw_budget_bytes=", v)) g_opt.budget_bytes = v;
    else if (std::strncmp(a, "--mw_producer_seconds=", 22) == 0) {
      char* end = nullptr;
      g_opt.producer_seconds = std::strtod(a + 22, &end);
      if (end == a + 22 || *end != '\0' || !(g_opt.producer_seconds > 0) || g_opt.producer_seconds > 3600) {
        std::fprintf(stderr, "rcubatch_bench_many_writers: --mw_producer_seconds wants seconds in (0, 3600], got '%s'\n", a + 22);
        return 2;
      }
    } else if (std::strcmp(a, "--mw_no_pin") == 0) g_opt.pin = false;
    else if (std::strcmp(a, "--mw_no_ping_pong") == 0) g_opt.ping_pong = false;
    else if (std::strcmp(a, "--mw_gather_released") == 0) g_opt.gather_released = true;
    else if (std::strcmp(a, "--mw_control") == 0) g_opt.control = true;
    else if (std::strcmp(a, "--mw_case_ping_pong") == 0) g_opt.case_ping_pong = true;
    else args.push_back(argv[i]);
  }

  rcubatch::thread_registration<memb> main_registration;  // thread 0 of every case is this thread
  g_cpus = make_cpu_plan(g_opt.pin);
  start_call_rcu_worker();
  const rcubatch_bench::ping_pong_result pp = g_opt.ping_pong ? rcubatch_bench::ping_pong() : rcubatch_bench::ping_pong_result{};
  benchmark::AddCustomContext("ping_pong_ns_at_start", std::to_string(pp.best_ns));
  benchmark::AddCustomContext("ping_pong_ns_mean_at_start", std::to_string(pp.mean_ns));
  benchmark::AddCustomContext("mw_cpus", g_cpus.text);
  benchmark::AddCustomContext("mw_objects_per_thread", std::to_string(g_opt.objects_per_thread));
  benchmark::AddCustomContext("mw_objects_per_thread_gp1ms", std::to_string(g_opt.objects_per_thread_gp1ms));
  benchmark::AddCustomContext("mw_producer_seconds", std::to_string(g_opt.producer_seconds));
  benchmark::AddCustomContext("mw_budget_bytes", std::to_string(g_opt.budget_bytes));
  benchmark::AddCustomContext("mw_control", g_opt.control ? "serialized_twin registered (A/A control)" : "off");
  benchmark::AddCustomContext("mw_case_ping_pong", g_opt.case_ping_pong ? "on" : "off");
  benchmark::AddCustomContext("mw_object_bytes", std::to_string(kObjectBytes));
  benchmark::AddCustomContext("mw_async", RCUBATCH_BENCH_HAVE_ASYNC ? "built" : "not built (no rcubatch/async_unregister.hpp)");
  benchmark::AddCustomContext("mw_gp_1ms", "simulated: real memb GP, then sleep until 1 ms since its start "
                                           "(stands for a many-core machine or a kernel-like GP)");

  register_sweep<memb_counted>("", g_opt.objects_per_thread);
  register_sweep<memb_gp1ms>("/gp:1ms", g_opt.objects_per_thread_gp1ms);
  register_two_reader_sweep(g_opt.objects_per_thread);
  register_producer();

  int gb_argc = static_cast<int>(args.size());
  benchmark::Initialize(&gb_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const rcubatch_bench::ping_pong_result end = g_opt.ping_pong ? rcubatch_bench::ping_pong() : rcubatch_bench::ping_pong_result{};
  if (g_opt.ping_pong) std::printf("ping-pong at end: %.0f ns best round, %.0f ns mean\n", end.best_ns, end.mean_ns);
  memb::barrier();  // liburcu 0.13.2 never stops its worker: nothing of ours may be left queued
  return 0;
}
