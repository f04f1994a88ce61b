// bench/bench_index.cpp — issue 25's index microbench: insert, lookup and remove ns/object for
// hlist_index, lfht_index and a hand-written liburcu cds_hlist bucket array (the floor, presized,
// kernel style; and the same floor whose unlink poisons the node as the kernel's does), at N objects with a busy reader looking keys up in the index being measured.
//
//   rcubatch_bench_index [--n=10000] [--rounds=15] [--seed=1] [--no-reader]
//
// Each round builds, queries and empties each variant once, in a fresh random order; the writer
// and the reader are pinned to CPUs 0 and 1. Printed: per variant the median ns/object of each
// phase, then the medians of the per-round ratios (hlist_index / floor, hlist_index / lfht_index),
// the only figures meant to be compared (this VM's absolute speed drifts by 2x between runs).
// The floor and lfht_index start presized / at 16 buckets as stated in the output; every
// insert checks for a duplicate key first (a registry must), the floor included.
// A plain main rather than Google Benchmark: the figure wanted is a ratio per round, with the
// variants interleaved inside the round, which Benchmark's per-case repetitions do not give.
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/read_guard.hpp>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <urcu/rcuhlist.h>

namespace {

using F = rcubatch::flavor::memb;

struct object {
  std::uint64_t key = 0;
  rcubatch::hlist_hook<object> h;
  rcubatch::lfht_hook<object> l;
  cds_hlist_node floor_node{};
};

using hlist_idx = rcubatch::hlist_index<object, &object::h, rcubatch::key_member<&object::key>, F>;
using lfht_idx = rcubatch::lfht_index<object, &object::l, rcubatch::key_member<&object::key>, F>;

/// The floor: what a kernel-style table costs with nothing around it — presized, no resize, no
/// checks, the same hash. With PoisonOnUnlink, unlink also stores to the object as the kernel's
/// hlist_del_rcu does (pprev = LIST_POISON2, what hlist_unhashed and a second delete see; liburcu's
/// cds_hlist_del_rcu writes only the neighbours): hlist_index's unlink makes one such store
/// (linked_in_ = nullptr), which a busy reader's copy of the object's line makes costly.
template <bool PoisonOnUnlink>
class floor_table {
 public:
  explicit floor_table(std::size_t n) : mask_(std::bit_ceil(n) - 1), heads_(mask_ + 1) {}
  bool add_unique(object& o) {
    const unsigned long hv = hash_(o.key);
    if (find_in(o.key, hv) != nullptr) return false;
    cds_hlist_add_head_rcu(&o.floor_node, &heads_[hv & mask_]);
    return true;
  }
  void unlink(object& o) noexcept {
    cds_hlist_del_rcu(&o.floor_node);
    if constexpr (PoisonOnUnlink) CMM_STORE_SHARED(o.floor_node.prev, kPoison);
  }
  object* find(std::uint64_t key) const noexcept { return find_in(key, hash_(key)); }

 private:
  object* find_in(std::uint64_t key, unsigned long hv) const noexcept {
    // rcu_dereference declares a variable of its argument's type: in this template a const member's would be const.
    cds_hlist_head* heads = const_cast<cds_hlist_head*>(heads_.data());
    for (cds_hlist_node* n = rcu_dereference(heads[hv & mask_].next); n != nullptr; n = rcu_dereference(n->next)) {
      object* o = caa_container_of(n, object, floor_node);
      if (o->key == key) return o;
    }
    return nullptr;
  }
  static inline cds_hlist_node* const kPoison = reinterpret_cast<cds_hlist_node*>(std::uintptr_t{0x122});
  std::size_t mask_;
  std::vector<cds_hlist_head> heads_;
  rcubatch::lfht_hash hash_;
};

using bare_floor = floor_table<false>;
using poison_floor = floor_table<true>;

enum variant : int { v_hlist, v_lfht, v_floor, v_poison_floor, kVariants };
const char* const kNames[kVariants] = {"hlist_index", "lfht_index", "floor", "floor+poison"};

/// What the reader is looking in; swapped by the writer between phases, with a grace period
/// before the old structure goes away.
struct active_set {
  std::atomic<int> which{-1};
  std::atomic<const void*> table{nullptr};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> lookups{0};
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void reader_loop(active_set& a, std::uint64_t key_range) {
  pin(1);
  rcubatch::thread_registration<F> reg;
  std::mt19937_64 rng(7);
  std::uint64_t done = 0, hits = 0;
  while (!a.stop.load(std::memory_order_relaxed)) {
    rcubatch::read_guard<F> guard;
    const int w = a.which.load(std::memory_order_acquire);
    const void* t = a.table.load(std::memory_order_acquire);
    for (int i = 0; i < 64; ++i) {
      const std::uint64_t k = rng() % key_range;
      const object* o = nullptr;
      if (t == nullptr) break;
      if (w == v_hlist) o = static_cast<const hlist_idx*>(t)->find(k);
      else if (w == v_lfht) o = static_cast<const lfht_idx*>(t)->find(k);
      else if (w == v_floor) o = static_cast<const bare_floor*>(t)->find(k);
      else if (w == v_poison_floor) o = static_cast<const poison_floor*>(t)->find(k);
      hits += o != nullptr;
      ++done;
    }
    if ((done & 1023) == 0) a.lookups.store(done, std::memory_order_relaxed);
  }
  a.lookups.store(done + (hits & 0), std::memory_order_relaxed);
}

using clock_type = std::chrono::steady_clock;
double ns_per(clock_type::time_point t0, std::size_t n) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / static_cast<double>(n);
}

struct phases {
  double insert = 0, lookup = 0, remove = 0;
};

template <class Table>
phases run_one(Table& t, int which, std::vector<object>& objs, const std::vector<std::size_t>& order,
               const std::vector<std::size_t>& remove_order, active_set& a) {
  phases p;
  const std::size_t n = objs.size();
  a.table.store(&t, std::memory_order_release);
  a.which.store(which, std::memory_order_release);
  auto t0 = clock_type::now();
  for (std::size_t i : order)
    if (!t.add_unique(objs[i])) std::abort();
  p.insert = ns_per(t0, n);
  std::uint64_t sink = 0;
  t0 = clock_type::now();
  for (std::size_t j = 0; j < n; j += 64) {
    rcubatch::read_guard<F> guard;
    for (std::size_t i = j; i < std::min(n, j + 64); ++i) sink += t.find(objs[order[n - 1 - i]].key) != nullptr;
  }
  p.lookup = ns_per(t0, n);
  if (sink != n) std::abort();
  t0 = clock_type::now();
  for (std::size_t i : remove_order) t.unlink(objs[i]);
  p.remove = ns_per(t0, n);
  a.which.store(-1, std::memory_order_release);
  a.table.store(nullptr, std::memory_order_release);
  F::synchronize();  // the reader has left t; the objects may be added again
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 10'000;
  int rounds = 15;
  unsigned seed = 1;
  bool reader = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0) n = std::strtoull(argv[i] + 4, nullptr, 10);
    else if (std::strncmp(argv[i], "--rounds=", 9) == 0) rounds = std::atoi(argv[i] + 9);
    else if (std::strncmp(argv[i], "--seed=", 7) == 0) seed = static_cast<unsigned>(std::atoi(argv[i] + 7));
    else if (std::strcmp(argv[i], "--no-reader") == 0) reader = false;
    else {
      std::fprintf(stderr, "usage: %s [--n=N] [--rounds=R] [--seed=S] [--no-reader]\n", argv[0]);
      return 2;
    }
  }
  pin(0);
  rcubatch::thread_registration<F> reg;
  std::mt19937_64 rng(seed);
  std::vector<object> objs(n);
  for (std::size_t i = 0; i < n; ++i) objs[i].key = i * 2;  // the reader draws from [0, 2n): half hit
  std::vector<std::size_t> order(n), remove_order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = remove_order[i] = i;

  active_set a;
  std::thread r;
  if (reader) r = std::thread(reader_loop, std::ref(a), 2 * static_cast<std::uint64_t>(n));

  std::vector<phases> res[kVariants];
  std::vector<double> ratio_floor[3], ratio_lfht[3], ratio_poison_remove;
  for (int round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    std::shuffle(remove_order.begin(), remove_order.end(), rng);
    int vs[kVariants] = {v_hlist, v_lfht, v_floor, v_poison_floor};
    std::shuffle(std::begin(vs), std::end(vs), rng);
    phases got[kVariants];
    for (int v : vs) {
      if (v == v_hlist) {
        hlist_idx t;  // 16 buckets: grows as it fills, shrinks as it drains
        got[v] = run_one(t, v, objs, order, remove_order, a);
        t.reclaim();
      } else if (v == v_lfht) {
        lfht_idx t;  // 16 buckets, lfht_growth::on_add
        got[v] = run_one(t, v, objs, order, remove_order, a);
      } else if (v == v_floor) {
        bare_floor t(n);  // presized
        got[v] = run_one(t, v, objs, order, remove_order, a);
      } else {
        poison_floor t(n);
        got[v] = run_one(t, v, objs, order, remove_order, a);
      }
      res[v].push_back(got[v]);
    }
    const auto& h = got[v_hlist];
    ratio_floor[0].push_back(h.insert / got[v_floor].insert);
    ratio_floor[1].push_back(h.lookup / got[v_floor].lookup);
    ratio_floor[2].push_back(h.remove / got[v_floor].remove);
    ratio_poison_remove.push_back(h.remove / got[v_poison_floor].remove);
    ratio_lfht[0].push_back(h.insert / got[v_lfht].insert);
    ratio_lfht[1].push_back(h.lookup / got[v_lfht].lookup);
    ratio_lfht[2].push_back(h.remove / got[v_lfht].remove);
  }
  a.stop.store(true);
  if (r.joinable()) r.join();

  std::printf("N=%zu rounds=%d reader=%s (reader lookups: %llu)\n", n, rounds, reader ? "busy" : "none",
              static_cast<unsigned long long>(a.lookups.load()));
  std::printf("%-12s %12s %12s %12s   (median ns/object)\n", "variant", "insert", "lookup", "remove");
  for (int v = 0; v < kVariants; ++v) {
    std::vector<double> ins, look, rem;
    for (const phases& p : res[v]) {
      ins.push_back(p.insert);
      look.push_back(p.lookup);
      rem.push_back(p.remove);
    }
    std::printf("%-12s %12.1f %12.1f %12.1f\n", kNames[v], median(ins), median(look), median(rem));
  }
  std::printf("hlist_index/floor (median of per-round ratios): insert %.2f  lookup %.2f  remove %.2f\n",
              median(ratio_floor[0]), median(ratio_floor[1]), median(ratio_floor[2]));
  std::printf("hlist_index/lfht_index:                         insert %.2f  lookup %.2f  remove %.2f\n",
              median(ratio_lfht[0]), median(ratio_lfht[1]), median(ratio_lfht[2]));
  std::printf("hlist_index/floor+poison (the kernel's hlist_del_rcu store):              remove %.2f\n",
              median(ratio_poison_remove));
  return 0;
}
