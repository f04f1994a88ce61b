// teardown_demo — why batch: 10,000 objects torn down one grace period at a time, then in one
// rollback_many, while a reader thread keeps looking them up on the other core.
//
//   teardown_demo [--objects N] [--flavor memb|qsbr|mb|bp]
//
// The registry is the smallest one that still has the kernel's shape: a primary index (by id)
// that lookups use, and a secondary index (by hash) that is unlinked later, in uninit — so a
// batch needs its two grace periods. Readers check a poison word inside their read section; a
// poisoned object seen by a reader would mean it was freed while reachable, and the demo fails.
#include <rcubatch.hpp>

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

  void populate() {
    for (std::size_t i = 0; i < by_id.size(); ++i) {
      auto* s = new session(i);
      by_id[i].store(s, std::memory_order_release);
      by_hash[hash_slot(i)].store(s, std::memory_order_release);
      s->mark_registered();
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

template <class Flavor>
int run(std::size_t n) {
  registry reg(n);
  reader_stats readers;
  std::atomic<bool> stop{false};
  std::latch started(1);
  std::thread reader([&] { reader_loop<Flavor>(reg, readers, stop, started); });
  started.wait();

  rcubatch::thread_registration<Flavor> registration;
  rcubatch::offline_scope<Flavor> offline;  // qsbr: the writer is not a reader
  rcubatch::grace_domain<Flavor> domain;

  reg.populate();
  const result slow = one_grace_period_each(reg, domain);
  reg.populate();
  rcubatch::batch_stats stats;
  const result fast = one_batch(reg, domain, stats);

  stop = true;
  reader.join();

  std::printf("rcubatch teardown demo: %zu objects, flavor %.*s, 1 reader thread looking them up\n\n", n,
              static_cast<int>(Flavor::name.size()), Flavor::name.data());
  std::printf("| way                                  | total        | per object    | grace periods |\n");
  std::printf("|--------------------------------------|--------------|---------------|---------------|\n");
  std::printf("| one grace period per object          | %9.3f ms | %10.1f ns | %13llu |\n", slow.seconds * 1e3,
              slow.seconds * 1e9 / static_cast<double>(n), static_cast<unsigned long long>(slow.grace_periods));
  std::printf("| rollback_many, one batch             | %9.3f ms | %10.1f ns | %13llu |\n", fast.seconds * 1e3,
              fast.seconds * 1e9 / static_cast<double>(n), static_cast<unsigned long long>(fast.grace_periods));
  std::printf("\nbatched is %.0fx faster (%llu grace periods instead of %llu)\n", slow.seconds / fast.seconds,
              static_cast<unsigned long long>(fast.grace_periods), static_cast<unsigned long long>(slow.grace_periods));
  std::printf("batch phases (ms):");
  for (std::size_t p = 0; p < rcubatch::kPhases; ++p) {
    const auto ph = static_cast<rcubatch::phase>(p);
    std::printf(" %.*s %.3f", static_cast<int>(rcubatch::to_string(ph).size()), rcubatch::to_string(ph).data(),
                static_cast<double>(stats.time_of(ph).count()) / 1e6);
  }
  std::printf("\n");
  std::printf("rollback_many itself: %.3f ms\n", static_cast<double>(stats.elapsed.count()) / 1e6);
  std::printf("reader: %ld lookups, %ld saw a freed object\n", readers.lookups.load(), readers.poisoned.load());

  if (readers.poisoned.load() != 0) {
    std::fprintf(stderr, "FAIL: a reader saw a freed object\n");
    return 1;
  }
  if (fast.grace_periods != 2 || stats.objects != n) {
    std::fprintf(stderr, "FAIL: expected 2 grace periods and %zu objects, got %llu and %zu\n", n,
                 static_cast<unsigned long long>(fast.grace_periods), stats.objects);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 10'000;
  std::string_view flavor = "memb";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--objects" && i + 1 < argc) {
      n = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--flavor" && i + 1 < argc) {
      flavor = argv[++i];
    } else {
      std::fprintf(stderr, "usage: teardown_demo [--objects N] [--flavor memb|qsbr|mb|bp]\n");
      return 2;
    }
  }
  if (n == 0) {
    std::fprintf(stderr, "teardown_demo: --objects must be a positive number\n");
    return 2;
  }
  if (flavor == "memb") return run<rcubatch::flavor::memb>(n);
  if (flavor == "qsbr") return run<rcubatch::flavor::qsbr>(n);
  if (flavor == "mb") return run<rcubatch::flavor::mb>(n);
  if (flavor == "bp") return run<rcubatch::flavor::bp>(n);
  std::fprintf(stderr, "teardown_demo: unknown flavor '%.*s' (memb, qsbr, mb or bp)\n", static_cast<int>(flavor.size()),
               flavor.data());
  return 2;
}
