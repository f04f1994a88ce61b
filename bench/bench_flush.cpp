// bench/bench_flush.cpp — issue 36's flush bench: 10^6 objects in an RCU hash index (hlist_index by
// id, memb), two busy readers looking keys up in it, flushed in one call, interleaved per round:
//   call_rcu      by hand: under a mutex, unlink each object and call_rcu its free; then
//                 rcu_barrier (every object freed when it returns);
//   deferred      registry::unregister_many_deferred (deferred_destroy.hpp): the call returns
//                 after the batch's grace period; the destroys run on the reclaimer's thread;
//                 ticket.wait() returns when every object is freed. The drain prefetches through
//                 a copy of the array (deferred_options::copy_order_hint, default). Unlist in chunks of
//                 --unlist-chunk (1024), destroys in chunks of --destroy-chunk (4096), no yield
//                 (the defaults: memb's quiescent state between chunks is a no-op);
//   deferred_yield  the same, yielding the core between destroy chunks: does interleaving help malloc?
//   deferred_nochunk  the same, unlist in one piece (unlist_chunk 0): the insert latency without it;
//   deferred_nocopy  deferred without deferred_options::copy_order_hint: the drain does not prefetch
//                 through a copy of the caller's array (the passes before the return still use it);
//   sync          registry::unregister_many: everything on the caller's thread (for reference).
// During each teardown an insert thread adds fresh objects to the same structure (registry::add,
// or the index under the mutex for call_rcu), one every --insert-every-us (50 µs) as a server's
// connections arrive (late: at once), and times each insert, from the start of the flush until the
// flush call returns.
// Printed per variant (medians over the rounds, ratios per round): the time until the flush call
// returns (per round for the deferred variants: its unlist pass, its GP #1 and the rest — the push
// pass, the copy, the hand-off — from the ticket's stats_at_handoff; and the reclaimer's drain, from
// its wait()), the time until every object is freed, GPs per flush, insert latency p50/p99/max and
// count, the RSS after populate and the peak RSS above it during the teardown (VmHWM, reset
// through /proc/self/clear_refs after populate); then the ratios to call_rcu's time until freed,
// per round. glibc malloc as shipped (no mallopt).
//
//   rcubatch_bench_flush [--n=1000000] [--rounds=3] [--unlist-chunk=1024] [--destroy-chunk=4096]
//                        [--insert-every-us=50] [--quick]
//
// Exits 1 if a flush waited for other than 1 grace period, or an object is left unfreed. Run it
// under LD_PRELOAD=libjemalloc.so.2 to compare allocators (docs/guide.md, "A flush that returns early").
#include <rcubatch.hpp>
#include <rcubatch/deferred_destroy.hpp>
#include <rcubatch/index/hlist_index.hpp>

#include <urcu/urcu-memb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_fixture.hpp"  // clock, seconds_since

namespace rcubatch_bench {
namespace {

using F = rcubatch::flavor::memb;
std::atomic<long> g_live{0};

struct object : rcubatch::registrable<object> {
  explicit object(std::uint64_t i) : id(i) { g_live.fetch_add(1, std::memory_order_relaxed); }
  ~object() { g_live.fetch_sub(1, std::memory_order_relaxed); }
  std::uint64_t id;
  std::uint64_t payload[4]{};
  rcubatch::hlist_hook<object> hook;
  rcu_head head{};  // call_rcu's
  /// The object whose head h is (container_of; offsetof on a non-standard-layout type is
  /// conditionally supported, and GCC supports it: the warning is silenced here only).
  static object* of_head(rcu_head* h) noexcept {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    return reinterpret_cast<object*>(reinterpret_cast<char*>(h) - offsetof(object, head));
#pragma GCC diagnostic pop
  }
};

/// The call_rcu variant's callback, on liburcu's worker after a grace period.
void delete_after_gp(rcu_head* h) { delete object::of_head(h); }

using ids = rcubatch::hlist_index<object, &object::hook, rcubatch::key_member<&object::id>, F>;
struct policy : rcubatch::indexed<object, ids> {
  void destroy(object* o) noexcept { delete o; }
};
using table = rcubatch::basic_registry<F, std::mutex, policy>;

/// What the readers search: the structure being torn down (nullptr between variants).
std::atomic<const ids*> g_current{nullptr};
std::atomic<bool> g_stop{false};
std::atomic<std::uint64_t> g_key_space{1};

void reader_loop(unsigned seed, std::atomic<std::uint64_t>& lookups) {
  rcubatch::thread_registration<F> reg;
  std::minstd_rand rng(seed);
  std::uint64_t n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    rcubatch::read_guard<F> guard;
    const ids* idx = g_current.load(std::memory_order_acquire);
    if (idx == nullptr) continue;
    const std::uint64_t space = g_key_space.load(std::memory_order_relaxed);
    for (int i = 0; i < 8; ++i) {
      if (const object* o = idx->find(rng() % space)) n += o->payload[0] + 1;
      else ++n;
    }
  }
  lookups += n;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}
/// Resets the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
long status_kib(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t len = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, len, field) == 0) return std::atol(line.c_str() + len);
  return -1;
}
long peak_rss_kib() { return status_kib("VmHWM:"); }
long rss_kib() { return status_kib("VmRSS:"); }
std::chrono::microseconds g_insert_every{50};

struct sample {
  double returned_s = 0, freed_s = 0;
  std::uint64_t gps = 0;
  std::vector<double> insert_us;
  long populated_kib = 0;  // RSS once populated
  long peak_kib = 0;       // peak RSS during the teardown
  double unlist_s = 0, gp1_s = 0;  // of the returned time (the registry's variants)
  double drain_s = 0;               // the deferred variants: the reclaimer's drain and destroys
};

/// Inserts fresh objects back to back until `until` is set, timing each; `add` inserts one.
template <class Add>
std::vector<double> insert_until(std::atomic<bool>& until, std::uint64_t first_id, Add&& add) {
  std::vector<double> lat;
  lat.reserve(1 << 16);
  rcubatch::thread_registration<F> reg;
  std::uint64_t id = first_id;
  auto next = clock::now();
  while (!until.load(std::memory_order_acquire)) {
    next += g_insert_every;
    std::this_thread::sleep_until(next);  // paced: a late insert goes at once
    auto* o = new object(id++);
    const auto t0 = clock::now();
    add(*o);
    lat.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
  }
  return lat;
}

std::vector<object*> make_objects(std::size_t n, std::mt19937_64& rng) {
  std::vector<object*> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(new object(2 * i));  // even keys: readers hit half
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

sample run_call_rcu(std::size_t n, std::mt19937_64& rng) {
  sample s;
  ids index;
  std::mutex m;
  auto objs = make_objects(n, rng);
  for (object* o : objs) index.add_unique(*o);
  std::shuffle(objs.begin(), objs.end(), rng);
  reset_peak_rss();
  s.populated_kib = rss_kib();
  g_current.store(&index, std::memory_order_release);
  std::atomic<bool> done{false};
  std::vector<object*> inserted;
  std::vector<double> lat;
  std::thread inserter([&] {
    lat = insert_until(done, 2 * n + 1, [&](object& o) {
      std::lock_guard lock(m);
      index.add_unique(o);
      inserted.push_back(&o);
    });
  });
  const auto t0 = clock::now();
  {
    std::lock_guard lock(m);
    for (object* o : objs) {
      index.unlink(*o);
      // call_after_grace_period: liburcu's call_rcu with the ThreadSanitizer edges the raw call
      // lacks (readers' sections before the GP happen-before the delete; bench_flush.smoke runs
      // under the tsan preset).
      rcubatch::call_after_grace_period<F, &delete_after_gp>(&o->head);
    }
  }
  s.returned_s = seconds_since(t0);
  done.store(true, std::memory_order_release);
  urcu_memb_barrier();
  s.freed_s = seconds_since(t0);
  inserter.join();
  s.gps = 0;
  s.insert_us = std::move(lat);
  s.peak_kib = peak_rss_kib();
  g_current.store(nullptr, std::memory_order_release);
  rcubatch::grace_domain<F> domain;  // synchronize with the edges ThreadSanitizer needs (the raw call has none)
  domain.synchronize();
  for (object* o : inserted) index.unlink(*o);
  domain.synchronize();
  for (object* o : inserted) delete o;
  return s;
}

enum class mode { deferred, deferred_yield, deferred_nochunk, deferred_nocopy, sync };

sample run_registry(mode md, std::size_t n, std::size_t unlist_chunk, std::size_t destroy_chunk, std::mt19937_64& rng) {
  sample s;
  rcubatch::registry_options opts;
  opts.rollback.unlist_chunk = md == mode::deferred_nochunk ? 0 : unlist_chunk;
  table t(opts);
  rcubatch::deferred_destroy reclaimer(rcubatch::deferred_options{
      .max_pending_objects = std::size_t{1} << 22,
      .destroy_chunk = destroy_chunk,
      .yield_between_chunks = md == mode::deferred_yield,
      .copy_order_hint = md != mode::deferred_nocopy});
  auto objs = make_objects(n, rng);
  for (object* o : objs) t.add(*o);
  std::shuffle(objs.begin(), objs.end(), rng);
  reset_peak_rss();
  s.populated_kib = rss_kib();
  g_current.store(&t.index<ids>(), std::memory_order_release);
  std::atomic<bool> done{false};
  std::vector<object*> inserted;
  std::vector<double> lat;
  std::thread inserter([&] {
    lat = insert_until(done, 2 * n + 1, [&](object& o) {
      t.add(o);
      inserted.push_back(&o);
    });
  });
  const auto t0 = clock::now();
  if (md == mode::sync) {
    const rcubatch::batch_stats st = t.unregister_many(objs);
    s.returned_s = s.freed_s = seconds_since(t0);
    s.gps = st.grace_periods;
    done.store(true, std::memory_order_release);
  } else {
    rcubatch::flush_ticket ticket = t.unregister_many_deferred(objs, reclaimer);
    s.returned_s = seconds_since(t0);
    done.store(true, std::memory_order_release);
    s.gps = ticket.stats_at_handoff().grace_periods;
    s.unlist_s = std::chrono::duration<double>(ticket.stats_at_handoff().time_of(rcubatch::phase::unlist)).count();
    s.gp1_s = std::chrono::duration<double>(ticket.stats_at_handoff().time_of(rcubatch::phase::grace_period_1)).count();
    s.drain_s = std::chrono::duration<double>(ticket.wait().time_of(rcubatch::phase::ref_drain)).count();
    s.freed_s = seconds_since(t0);
  }
  inserter.join();
  s.insert_us = std::move(lat);
  s.peak_kib = peak_rss_kib();
  g_current.store(nullptr, std::memory_order_release);
  urcu_memb_synchronize_rcu();
  t.unregister_many(inserted);
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace
}  // namespace rcubatch_bench

int main(int argc, char** argv) {
  using namespace rcubatch_bench;
  std::size_t n = 1000000, rounds = 3, unlist_chunk = 1024, destroy_chunk = 4096;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* prefix) { return std::strtoull(a.c_str() + std::strlen(prefix), nullptr, 10); };
    if (a.rfind("--n=", 0) == 0) n = value("--n=");
    else if (a.rfind("--rounds=", 0) == 0) rounds = value("--rounds=");
    else if (a.rfind("--unlist-chunk=", 0) == 0) unlist_chunk = value("--unlist-chunk=");
    else if (a.rfind("--destroy-chunk=", 0) == 0) destroy_chunk = value("--destroy-chunk=");
    else if (a.rfind("--insert-every-us=", 0) == 0) g_insert_every = std::chrono::microseconds(value("--insert-every-us="));
    else if (a == "--quick") n = 20000, rounds = 2;
    else {
      std::fprintf(stderr, "rcubatch_bench_flush: unknown argument '%s' (see the file comment)\n", a.c_str());
      return 2;
    }
  }
  rcubatch::thread_registration<F> registered;
  const char* preload = std::getenv("LD_PRELOAD");
  std::printf("rcubatch_bench_flush: N=%zu, %zu rounds, 2 busy readers, 1 insert thread, unlist chunk %zu, "
              "destroy chunk %zu, an insert every %lld us, allocator %s; load average %s\n",
              n, rounds, unlist_chunk, destroy_chunk, static_cast<long long>(g_insert_every.count()),
              preload != nullptr ? preload : "glibc", load_average().c_str());
  g_key_space = 4 * n;
  std::atomic<std::uint64_t> lookups{0};
  std::thread r1(reader_loop, 1u, std::ref(lookups)), r2(reader_loop, 2u, std::ref(lookups));
  const std::vector<std::string> names{"call_rcu",         "deferred", "deferred_yield", "deferred_nochunk",
                                       "deferred_nocopy", "sync"};
  std::map<std::string, std::vector<sample>> all;
  std::mt19937_64 rng(36);
  int bad = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    std::vector<std::string> order = names;
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::string& v : order) {
      const long live_before = g_live.load();
      sample s = v == "call_rcu"           ? run_call_rcu(n, rng)
                 : v == "deferred"         ? run_registry(mode::deferred, n, unlist_chunk, destroy_chunk, rng)
                 : v == "deferred_yield" ? run_registry(mode::deferred_yield, n, unlist_chunk, destroy_chunk, rng)
                 : v == "deferred_nochunk" ? run_registry(mode::deferred_nochunk, n, unlist_chunk, destroy_chunk, rng)
                 : v == "deferred_nocopy"
                     ? run_registry(mode::deferred_nocopy, n, unlist_chunk, destroy_chunk, rng)
                                           : run_registry(mode::sync, n, unlist_chunk, destroy_chunk, rng);
      if (v != "call_rcu" && s.gps != 1) {
        std::fprintf(stderr, "round %zu %s: %llu grace periods, expected 1\n", r, v.c_str(),
                     static_cast<unsigned long long>(s.gps));
        bad = 1;
      }
      if (g_live.load() != live_before) {
        std::fprintf(stderr, "round %zu %s: %ld objects left\n", r, v.c_str(), g_live.load() - live_before);
        bad = 1;
      }
      std::printf("round %zu %-17s returned %8.1f ms  freed %8.1f ms  GPs %llu  inserts %6zu  p99 %8.1f us  max %8.1f us  "
                  "RSS %ld MiB, peak +%ld MiB\n",
                  r, v.c_str(), s.returned_s * 1e3, s.freed_s * 1e3, static_cast<unsigned long long>(s.gps),
                  s.insert_us.size(), percentile(s.insert_us, 0.99), percentile(s.insert_us, 1.0),
                  s.populated_kib / 1024, (s.peak_kib - s.populated_kib) / 1024);
      if (s.unlist_s > 0)
        std::printf("        %-17s of returned: unlist %8.1f ms, GP #1 %6.1f ms, the rest %8.1f ms; then the drain %8.1f ms\n",
                    "", s.unlist_s * 1e3, s.gp1_s * 1e3, (s.returned_s - s.unlist_s - s.gp1_s) * 1e3, s.drain_s * 1e3);
      std::fflush(stdout);
      all[v].push_back(std::move(s));
    }
  }
  g_stop = true;
  r1.join();
  r2.join();
  std::printf("\nmedians over %zu rounds (ratios: per round, to call_rcu's time until freed, then the median)\n", rounds);
  std::printf("%-17s %12s %12s %10s %10s %12s %12s %12s %10s %10s\n", "variant", "returned ms", "freed ms", "ret/cr",
              "freed/cr", "insert p50", "insert p99", "insert max", "RSS MiB", "peak +MiB");
  for (const std::string& v : names) {
    std::vector<double> ret, freed, rr, fr, p50, p99, mx, rss, peak;
    for (std::size_t r = 0; r < rounds; ++r) {
      const sample& x = all[v][r];
      const double cr = all["call_rcu"][r].freed_s;
      ret.push_back(x.returned_s * 1e3);
      freed.push_back(x.freed_s * 1e3);
      rr.push_back(x.returned_s / cr);
      fr.push_back(x.freed_s / cr);
      p50.push_back(percentile(x.insert_us, 0.5));
      p99.push_back(percentile(x.insert_us, 0.99));
      mx.push_back(percentile(x.insert_us, 1.0));
      rss.push_back(static_cast<double>(x.populated_kib) / 1024);
      peak.push_back(static_cast<double>(x.peak_kib - x.populated_kib) / 1024);
    }
    std::printf("%-17s %12.1f %12.1f %10.3f %10.3f %10.1fus %10.1fus %10.1fus %10.0f %10.0f\n", v.c_str(), median(ret),
                median(freed), median(rr), median(fr), median(p50), median(p99), median(mx), median(rss), median(peak));
  }
  std::printf("load average at the end %s\n", load_average().c_str());
  return bad;
}
