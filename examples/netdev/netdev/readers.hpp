// netdev/readers.hpp — background reader threads: the receive path and `ip` lookups under RCU.
//
// Each thread loops: inside one read_guard, look up a random ifindex in the initial namespace, then
// the same device by name, its vlan group / macvlan port if it has one, and a random address in
// the FIB; check that nothing it reached was destroyed (ASan reports a use-after-free; the magic
// check catches a destroy that ASan's quarantine would hide). Between sections it announces a
// quiescent state (needed under qsbr, free elsewhere).
//
// They exist to make grace periods cost what they cost with a busy reader (DESIGN.md: ~17 µs for
// memb instead of ~1 µs) and to catch use-after-free while devices go.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <string>
#include <string_view>
#include <random>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include <rcubatch.hpp>

#include "netdev/registry.hpp"

namespace netdev {

template <class Flavor>
class reader_pool {
 public:
  reader_pool(registry<Flavor>& reg, unsigned threads) : reg_(reg), started_tids_(threads) {
    std::latch started(threads);
    for (unsigned i = 0; i < threads; ++i)
      threads_.emplace_back([this, i, &started] { run(i, started); });
    started.wait();  // every reader is registered before the caller measures anything
    for (const auto& tid : started_tids_) tids_.push_back(tid.load(std::memory_order_relaxed));
  }
  ~reader_pool() { stop(); }
  reader_pool(const reader_pool&) = delete;
  reader_pool& operator=(const reader_pool&) = delete;

  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  std::uint64_t lookups() const noexcept { return lookups_.load(std::memory_order_relaxed); }
  std::uint64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }
  /// The reader threads' involuntary context switches so far, summed (nonvoluntary_ctxt_switches
  /// of /proc/self/task/TID/status, counted by the scheduler at each switch). A reader preempted
  /// inside its read section holds up every grace period until it runs again: netsim's `time`
  /// shows how often that could have happened during a command. Zero where the file is missing.
  /// Reads one small file per reader: call it between timed commands, not inside one.
  long involuntary_switches() const {
    long total = 0;
    for (const pid_t tid : tids_) {
      std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
      std::string line;
      constexpr std::string_view key = "nonvoluntary_ctxt_switches:";
      while (std::getline(in, line))
        if (line.starts_with(key)) total += std::stol(line.substr(key.size()));
    }
    return total;
  }

 private:
  static void check_alive(const net_device* d) {
    if (d != nullptr && d->magic.load(std::memory_order_relaxed) != net_device::kAlive) {
      std::fprintf(stderr, "netdev reader: reached a destroyed device (use after free)\n");
      std::abort();
    }
  }

  void run(unsigned seed, std::latch& started) {
    rcubatch::thread_registration<Flavor> registration;
    started_tids_[seed].store(gettid(), std::memory_order_relaxed);  // before the latch: it orders the read
    started.count_down();
    std::minstd_rand rng(seed + 1);
    std::uint64_t lookups = 0, hits = 0;
    netns& ns = reg_.init_net();
    while (!stop_.load(std::memory_order_relaxed)) {
      {
        rcubatch::read_guard<Flavor> guard;
        const int max = reg_.max_ifindex();
        const int index = max > 0 ? 1 + static_cast<int>(rng() % static_cast<unsigned>(max)) : 0;
        if (const net_device* d = ns.lookup_index(index)) {
          check_alive(d);
          ++hits;
          const net_device* same = ns.lookup_name(d->name);
          check_alive(same);
          if (const vlan_group* g = d->vlans.load(std::memory_order_acquire)) check_alive(g->find(false, 1));
          if (const macvlan_port* p = d->macvlans.load(std::memory_order_acquire)) check_alive(p->lookup(d->mac));
          // Receive side of a tunnel: the outer header's (remote, local, key) finds the device.
          if (const auto* t = std::get_if<tunnel_link>(&d->link)) check_alive(ns.tunnels(d->kind).lookup(t->params));
        }
        // Addresses the seed scripts use: 72.j.k.1/24 (seed 004), 10.x.y.z (macvlans).
        const ipv4 addr = (rng() & 1 ? 72u << 24 : 10u << 24) | (rng() & 0xffffff);
        if (const route* r = ns.routes().lookup(addr)) check_alive(r->dev);
        lookups += 3;
      }
      rcubatch::quiescent_state<Flavor>();
      if ((lookups & 0xfff) == 0) lookups_.store(lookups, std::memory_order_relaxed);
    }
    lookups_.store(lookups, std::memory_order_relaxed);
    hits_.fetch_add(hits, std::memory_order_relaxed);
  }

  registry<Flavor>& reg_;
  std::vector<std::thread> threads_;
  std::vector<std::atomic<pid_t>> started_tids_;  // each reader's thread id, written by itself
  std::vector<pid_t> tids_;                        // the same, read once they all started
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> lookups_{0};
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace netdev
