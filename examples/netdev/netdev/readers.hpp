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
#include <latch>
#include <random>
#include <thread>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/registry.hpp"

namespace netdev {

template <class Flavor>
class reader_pool {
 public:
  reader_pool(registry<Flavor>& reg, unsigned threads) : reg_(reg) {
    std::latch started(threads);
    for (unsigned i = 0; i < threads; ++i)
      threads_.emplace_back([this, i, &started] { run(i, started); });
    started.wait();  // every reader is registered before the caller measures anything
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

 private:
  static void check_alive(const net_device* d) {
    if (d != nullptr && d->magic.load(std::memory_order_relaxed) != net_device::kAlive) {
      std::fprintf(stderr, "netdev reader: reached a destroyed device (use after free)\n");
      std::abort();
    }
  }

  void run(unsigned seed, std::latch& started) {
    rcubatch::thread_registration<Flavor> registration;
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
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> lookups_{0};
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace netdev
