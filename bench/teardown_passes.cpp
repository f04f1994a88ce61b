// bench/teardown_passes.cpp — where rollback_many's instructions and time go per pass, against the
// teardown demo's hand-written floor (issue 36). The demo's sessions and policy; the batch,
// the floor and the chain floor (examples/demo/teardown_demo.cpp) each in a noinline function, so
// that callgrind attributes them apart. Not built by CMake (a measuring tool, run by hand):
//
//   c++ -DURCU_INLINE_SMALL_FUNCTIONS -Iinclude -Iexamples/demo -O2 -g -DNDEBUG -std=c++20 bench/teardown_passes.cpp
//       -o /tmp/teardown_passes -lurcu-memb -lurcu-common -lpthread     (one command)
//   valgrind --tool=callgrind --cache-sim=yes /tmp/teardown_passes 10000 5   # instructions per way
//   /tmp/teardown_passes 10000 101 time reader   # ns per object per pass, medians; a busy reader on CPU 1
//
// The batch is rollback_range (the queueing fused into the unlist pass: push reads 0, unlist
// includes it); built with -DTWO_CALLS, push_range then rollback_many as before issue 36's fusion.
//
// The per-pass instruction counts in bench/RESULTS.md ("Fewer passes") come from callgrind with the
// pass functions of typed_lane (close_and_unlist_new, uninit_all, drain_scan) marked noinline in a
// copy of the headers; they run once per batch, so that changes no per-object code.
#include <rcubatch.hpp>

#include "teardown_session.hpp"  // examples/demo: the demo's sessions, registry and policy

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <thread>
#include <random>
#include <pthread.h>
#include <sched.h>
#include <chrono>
#include <algorithm>
#include <cstring>

namespace {
using namespace teardown_demo;  // session, registry, session_policy, destroy_session, kAlive

using flavor = rcubatch::flavor::memb;

using clk = std::chrono::steady_clock;
double g_t[8];  // per-pass seconds of the last way run
double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }
[[gnu::noinline]] void way_batch(registry& reg, rcubatch::grace_domain<flavor>& domain) {
  auto t0 = clk::now();
#ifdef TWO_CALLS  // push_range, then rollback_many (before rollback_range: issue 36)
  rcubatch::unreg_queue<session> q;
  q.push_range(reg.by_id, [](const auto& slot) { return slot.load(std::memory_order_relaxed); });
  auto t1 = clk::now();
  auto st = rcubatch::rollback_many(q, session_policy{&reg}, domain);
#else  // one walk for the queueing and the unlist (push is 0 below; unlist includes it)
  auto t1 = clk::now();
  auto st = rcubatch::rollback_range(reg.by_id, [](const auto& slot) { return slot.load(std::memory_order_relaxed); },
                                     session_policy{&reg}, domain);
#endif
  auto t2 = clk::now();
  if (st.objects != reg.by_id.size()) std::abort();
  using rcubatch::phase;
  auto d = [&](phase p) { return std::chrono::duration<double>(st.time_of(p)).count(); };
  g_t[0] = secs(t0, t1); g_t[1] = d(phase::unlist); g_t[2] = d(phase::uninit); g_t[3] = d(phase::ref_drain);
  g_t[4] = secs(t0, t2); g_t[5] = d(phase::grace_period_1) + d(phase::grace_period_2);
}

[[gnu::noinline]] void way_floor(registry& reg, rcubatch::grace_domain<flavor>& domain, std::vector<session*>& doomed) {
  auto t0 = clk::now();
  doomed.clear();
  for (auto& slot : reg.by_id) {
    doomed.push_back(slot.load(std::memory_order_relaxed));
    slot.store(nullptr, std::memory_order_release);
  }
  auto t1 = clk::now();
  domain.synchronize();
  auto t2 = clk::now();
  for (session* s : doomed) reg.by_hash[reg.hash_slot(s->id)].store(nullptr, std::memory_order_release);
  auto t3 = clk::now();
  domain.synchronize();
  auto t4 = clk::now();
  for (session* s : doomed) destroy_session(s);
  auto t5 = clk::now();
  g_t[0] = 0; g_t[1] = secs(t0, t1); g_t[2] = secs(t2, t3); g_t[3] = secs(t4, t5); g_t[4] = secs(t0, t5);
  g_t[5] = secs(t1, t2) + secs(t3, t4);
}

[[gnu::noinline]] void way_chain(registry& reg, rcubatch::grace_domain<flavor>& domain) {
  session* head = nullptr;
  session** tail = &head;
  for (auto& slot : reg.by_id) {
    session* s = slot.load(std::memory_order_relaxed);
    *tail = s;
    tail = &s->chain_next;
  }
  *tail = nullptr;
  for (session* s = head; s != nullptr; s = s->chain_next) reg.by_id[s->id].store(nullptr, std::memory_order_release);
  domain.synchronize();
  for (session* s = head; s != nullptr; s = s->chain_next)
    reg.by_hash[reg.hash_slot(s->id)].store(nullptr, std::memory_order_release);
  domain.synchronize();
  for (session* s = head; s != nullptr;) {
    session* next = s->chain_next;
    destroy_session(s);
    s = next;
  }
}

void consolidate() {
  void* p = std::malloc(256 * 1024);
  asm volatile("" : : "r"(p) : "memory");
  std::free(p);
}
}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  rcubatch::thread_registration<flavor> registration;
  rcubatch::offline_scope<flavor> offline;
  rcubatch::grace_domain<flavor> domain;
  registry reg(n);
  std::vector<session*> doomed;
  doomed.reserve(n);
  const bool timing = argc > 3 && std::strcmp(argv[3], "time") == 0;
  const bool with_reader = argc > 4 && std::strcmp(argv[4], "reader") == 0;
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};
  std::thread reader;
  auto pin = [](int cpu) { cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpu, &set); pthread_setaffinity_np(pthread_self(), sizeof set, &set); };
  if (with_reader) {
    reader = std::thread([&] {
      pin(1);
      rcubatch::thread_registration<flavor> r;
      std::minstd_rand rng(42);
      while (!stop.load(std::memory_order_relaxed)) {
        rcubatch::read_guard<flavor> guard;
        const std::size_t i = rng() % reg.by_id.size();
        if (session* s = reg.by_id[i].load(std::memory_order_acquire))
          if (s->poison.load(std::memory_order_relaxed) != kAlive) bad.fetch_add(1);
        if (session* s = reg.by_hash[i].load(std::memory_order_acquire))
          if (s->poison.load(std::memory_order_relaxed) != kAlive) bad.fetch_add(1);
      }
    });
    pin(0);
  }
  std::vector<std::vector<double>> tb(6), tf(6);
  for (int r = 0; r < rounds; ++r) {
    consolidate();
    reg.populate(true);
    way_batch(reg, domain);
    for (int i = 0; i < 6; ++i) tb[i].push_back(g_t[i]);
    consolidate();
    reg.populate(false);
    way_floor(reg, domain, doomed);
    for (int i = 0; i < 6; ++i) tf[i].push_back(g_t[i]);
    if (!timing) {
      consolidate();
      reg.populate(false);
      way_chain(reg, domain);
    }
  }
  if (timing) {
    auto med = [&](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2] * 1e9 / n; };
    std::vector<double> ratio, ratio_all;
    for (int r = 0; r < rounds; ++r) ratio_all.push_back(tb[4][r] / tf[4][r]);
    std::sort(ratio_all.begin(), ratio_all.end());
    std::printf("with GPs: batch %.1f (GPs %.1f) floor %.1f (GPs %.1f) ns/object; ratio %.3f\n", med(tb[4]), med(tb[5]), med(tf[4]), med(tf[5]), ratio_all[ratio_all.size() / 2]);
    for (int r = 0; r < rounds; ++r) ratio.push_back((tb[4][r] - tb[5][r]) / (tf[4][r] - tf[5][r]));
    std::sort(ratio.begin(), ratio.end());
    std::printf("ns/object (median of %d): batch push %.1f unlist %.1f uninit %.1f drain %.1f | total-GPs %.1f\n", rounds,
                med(tb[0]), med(tb[1]), med(tb[2]), med(tb[3]), med(tb[4]) - med(tb[5]));
    std::printf("                           floor        gather+unlink %.1f uninit %.1f free %.1f | total-GPs %.1f   ratio(excl GPs) %.3f\n",
                med(tf[1]), med(tf[2]), med(tf[3]), med(tf[4]) - med(tf[5]), ratio[ratio.size() / 2]);
  }
  stop = true;
  if (reader.joinable()) reader.join();
  std::printf("done: %zu objects x %d rounds, %ld bad\n", n, rounds, bad.load());
  return 0;
}
