// teardown_demo — why batch: 10,000 objects torn down one grace period at a time, then in one
// rollback_many, while a reader thread keeps looking them up on the other core.
//
//   teardown_demo [--objects N] [--repeat K] [--readers R] [--flavor memb|qsbr|mb|bp]
//
// The registry is the smallest one that still has the kernel's shape: a primary index (by id)
// that lookups use, and a secondary index (by hash) that is unlinked later, in uninit — so a
// batch needs its two grace periods. Readers check a poison word inside their read section; a
// poisoned object seen by a reader would mean it was freed while reachable, and the demo fails.
//
// A third way is timed beside the two: the same teardown written by hand with no library at all
// (unlink every primary slot, one GP, unlink every secondary slot, one GP, free all). No batching
// library can be faster than that, so it shows what rollback_many's bookkeeping (queue, states,
// dismantle flag, ref drain) costs on top of the grace periods it saves.
//
// This VM's memory speed flips between states every few seconds, so each way runs K times
// (default 3), interleaved, and the table shows medians, with min..max beside them.
#include <rcubatch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::uint64_t kAlive = 0x600DF00D;
constexpr std::uint64_t kPoison = 0xDEADBEEF;

struct session : rcubatch::registrable<session> {
  explicit session(std::size_t i) : id(i) {}
  std::size_t id;
  std::atomic<std::uint64_t> poison{kAlive};
};

/// Two RCU-readable indexes over the same sessions. Slots are std::atomic pointers: a release
/// store publishes, an acquire load reads (what rcu_assign_pointer / rcu_dereference do).
struct registry {
  explicit registry(std::size_t n) : by_id(n), by_hash(n) {}
  std::vector<std::atomic<session*>> by_id;
  std::vector<std::atomic<session*>> by_hash;
  std::size_t hash_slot(std::size_t id) const { return (id * 7919) % by_hash.size(); }

  /// `for_library`: mark the sessions registered (what rollback_many requires); the hand-written
  /// floor leaves them uninitialized, the state in which an object may be deleted without the library.
  void populate(bool for_library = true) {
    for (std::size_t i = 0; i < by_id.size(); ++i) {
      auto* s = new session(i);
      by_id[i].store(s, std::memory_order_release);
      by_hash[hash_slot(i)].store(s, std::memory_order_release);
      if (for_library) s->mark_registered();
    }
  }
};

void destroy_session(session* s) {
  s->poison.store(kPoison, std::memory_order_relaxed);
  delete s;
}

/// The registry's teardown hooks for rollback_many.
struct session_policy {
  registry* reg;
  void unlist(session& s) noexcept { reg->by_id[s.id].store(nullptr, std::memory_order_release); }
  void uninit(session& s) noexcept { reg->by_hash[reg->hash_slot(s.id)].store(nullptr, std::memory_order_release); }
  void destroy(session* s) noexcept { destroy_session(s); }
};

struct reader_stats {
  std::atomic<long> lookups{0};
  std::atomic<long> poisoned{0};
};

template <class Flavor>
void reader_loop(const registry& reg, reader_stats& stats, const std::atomic<bool>& stop, std::latch& started) {
  rcubatch::thread_registration<Flavor> registration;
  std::minstd_rand rng(42);
  started.count_down();
  long local = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    {
      rcubatch::read_guard<Flavor> guard;
      const std::size_t i = rng() % reg.by_id.size();
      if (session* s = reg.by_id[i].load(std::memory_order_acquire)) {
        if (s->poison.load(std::memory_order_relaxed) != kAlive) stats.poisoned.fetch_add(1);
      }
      if (session* s = reg.by_hash[i].load(std::memory_order_acquire)) {
        if (s->poison.load(std::memory_order_relaxed) != kAlive) stats.poisoned.fetch_add(1);
      }
    }
    rcubatch::quiescent_state<Flavor>();
    ++local;
  }
  stats.lookups.fetch_add(local);
}

struct result {
  double seconds;
  std::uint64_t grace_periods;
};

/// What registries do without batching: unlink one object from both indexes, wait for a grace
/// period, free it. (Through the library as a batch of one, so the demo needs no private access;
/// the policy unlinks both indexes before the grace period, so each costs exactly one.)
struct one_at_a_time_policy {
  registry* reg;
  void unlist(session& s) noexcept {
    reg->by_id[s.id].store(nullptr, std::memory_order_release);
    reg->by_hash[reg->hash_slot(s.id)].store(nullptr, std::memory_order_release);
  }
  void destroy(session* s) noexcept { destroy_session(s); }
};

template <class Flavor>
result one_grace_period_each(registry& reg, rcubatch::grace_domain<Flavor>& domain) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& slot : reg.by_id) {
    rcubatch::unregister_one(*slot.load(std::memory_order_relaxed), one_at_a_time_policy{&reg}, domain);
  }
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return {dt.count(), domain.stats().grace_periods - before};
}

/// The same teardown as one batch.
template <class Flavor>
result one_batch(registry& reg, rcubatch::grace_domain<Flavor>& domain, rcubatch::batch_stats& stats) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  rcubatch::unreg_queue<session> q;
  for (auto& slot : reg.by_id) q.push(*slot.load(std::memory_order_relaxed));
  stats = rcubatch::rollback_many(q, session_policy{&reg}, domain);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return {dt.count(), domain.stats().grace_periods - before};
}

/// The same teardown without the library: what any batching costs at least.
template <class Flavor>
result hand_written_floor(registry& reg, rcubatch::grace_domain<Flavor>& domain) {
  const auto before = domain.stats().grace_periods;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<session*> doomed;
  doomed.reserve(reg.by_id.size());
  for (auto& slot : reg.by_id) {
    doomed.push_back(slot.load(std::memory_order_relaxed));
    slot.store(nullptr, std::memory_order_release);
  }
  domain.synchronize();
  for (session* s : doomed) reg.by_hash[reg.hash_slot(s->id)].store(nullptr, std::memory_order_release);
  domain.synchronize();
  for (session* s : doomed) destroy_session(s);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return {dt.count(), domain.stats().grace_periods - before};
}

/// Median, min and max of one way's runs.
struct summary {
  double median = 0, min = 0, max = 0;
  std::uint64_t grace_periods = 0;  // of one run: the batch check below holds every run to 2

  static summary of(std::vector<result> runs) {
    std::sort(runs.begin(), runs.end(), [](const result& a, const result& b) { return a.seconds < b.seconds; });
    const std::size_t k = runs.size();
    const double median = k % 2 ? runs[k / 2].seconds : (runs[k / 2 - 1].seconds + runs[k / 2].seconds) / 2;
    return {median, runs.front().seconds, runs.back().seconds, runs.back().grace_periods};
  }
};

void print_row(const char* way, const summary& s, std::size_t n) {
  char range[48];
  std::snprintf(range, sizeof range, "%.3f..%.3f ms", s.min * 1e3, s.max * 1e3);
  std::printf("| %-31s | %9.3f ms | %9.1f ns | %-20s | %13llu |\n", way, s.median * 1e3,
              s.median * 1e9 / static_cast<double>(n), range, static_cast<unsigned long long>(s.grace_periods));
}

template <class Flavor>
int run(std::size_t n, int repeat, int reader_count) {
  registry reg(n);
  reader_stats readers;
  std::atomic<bool> stop{false};
  std::latch started(reader_count);
  std::vector<std::thread> reader_threads;
  for (int i = 0; i < reader_count; ++i)
    reader_threads.emplace_back([&] { reader_loop<Flavor>(reg, readers, stop, started); });
  started.wait();

  rcubatch::thread_registration<Flavor> registration;
  rcubatch::offline_scope<Flavor> offline;  // qsbr: the writer is not a reader
  rcubatch::grace_domain<Flavor> domain;

  // Interleaved, so that a change of the VM's speed state hits every way alike.
  std::vector<result> slow_runs, fast_runs, floor_runs;
  rcubatch::batch_stats stats;
  bool batches_ok = true;
  for (int r = 0; r < repeat; ++r) {
    reg.populate();
    slow_runs.push_back(one_grace_period_each(reg, domain));
    reg.populate();
    fast_runs.push_back(one_batch(reg, domain, stats));
    batches_ok = batches_ok && fast_runs.back().grace_periods == 2 && stats.objects == n;
    reg.populate(/*for_library=*/false);
    floor_runs.push_back(hand_written_floor(reg, domain));
  }

  stop = true;
  for (std::thread& t : reader_threads) t.join();

  const summary slow = summary::of(slow_runs), fast = summary::of(fast_runs), floor = summary::of(floor_runs);
  std::printf("rcubatch teardown demo: %zu objects, flavor %.*s, %d reader thread(s) looking them up; median of %d runs\n\n",
              n, static_cast<int>(Flavor::name.size()), Flavor::name.data(), reader_count, repeat);
  std::printf("| %-31s | %12s | %12s | %-20s | %13s |\n", "way", "median", "per object", "min..max", "grace periods");
  std::printf("|---------------------------------|--------------|--------------|----------------------|---------------|\n");
  print_row("one grace period per object", slow, n);
  print_row("rollback_many, one batch", fast, n);
  print_row("by hand, no library (the floor)", floor, n);
  std::printf("\nbatched is %.0fx faster (%llu grace periods instead of %llu)\n", slow.median / fast.median,
              static_cast<unsigned long long>(fast.grace_periods), static_cast<unsigned long long>(slow.grace_periods));
  std::printf("the hand-written floor is %.0fx faster; rollback_many's bookkeeping adds %.1f ns per object to it\n",
              slow.median / floor.median, (fast.median - floor.median) * 1e9 / static_cast<double>(n));
  std::printf("batch phases (ms):");
  for (std::size_t p = 0; p < rcubatch::kPhases; ++p) {
    const auto ph = static_cast<rcubatch::phase>(p);
    std::printf(" %.*s %.3f", static_cast<int>(rcubatch::to_string(ph).size()), rcubatch::to_string(ph).data(),
                static_cast<double>(stats.time_of(ph).count()) / 1e6);
  }
  std::printf("\n");
  std::printf("(phases of the last batch; rollback_many itself: %.3f ms, the rest is queueing)\n",
              static_cast<double>(stats.elapsed.count()) / 1e6);
  std::printf("readers: %ld lookups, %ld saw a freed object\n", readers.lookups.load(), readers.poisoned.load());

  if (readers.poisoned.load() != 0) {
    std::fprintf(stderr, "FAIL: a reader saw a freed object\n");
    return 1;
  }
  if (!batches_ok) {
    std::fprintf(stderr, "FAIL: a batch took other than 2 grace periods or %zu objects (last: %llu and %zu)\n", n,
                 static_cast<unsigned long long>(fast_runs.back().grace_periods), stats.objects);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 10'000;
  int repeat = 3;
  int reader_count = 1;
  std::string_view flavor = "memb";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--objects" && i + 1 < argc) {
      n = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (arg == "--readers" && i + 1 < argc) {
      reader_count = std::atoi(argv[++i]);
    } else if (arg == "--flavor" && i + 1 < argc) {
      flavor = argv[++i];
    } else {
      std::fprintf(stderr, "usage: teardown_demo [--objects N] [--repeat K] [--readers R] [--flavor memb|qsbr|mb|bp]\n");
      return 2;
    }
  }
  if (n == 0 || repeat <= 0 || reader_count < 0) {
    std::fprintf(stderr, "teardown_demo: --objects and --repeat must be positive, --readers not negative\n");
    return 2;
  }
  if (flavor == "memb") return run<rcubatch::flavor::memb>(n, repeat, reader_count);
  if (flavor == "qsbr") return run<rcubatch::flavor::qsbr>(n, repeat, reader_count);
  if (flavor == "mb") return run<rcubatch::flavor::mb>(n, repeat, reader_count);
  if (flavor == "bp") return run<rcubatch::flavor::bp>(n, repeat, reader_count);
  std::fprintf(stderr, "teardown_demo: unknown flavor '%.*s' (memb, qsbr, mb or bp)\n", static_cast<int>(flavor.size()),
               flavor.data());
  return 2;
}
