// netdev/xmit.hpp — transmitting through a tunnel from many threads (seed 001, NETIF_F_LLTX).
//
// Each sending thread, per burst of packets: finds the device under RCU and holds a reference on
// it (so it stays valid while the burst is in flight, even if it is unregistered meanwhile — the
// batch's ref drain waits for the put). Per packet it reads the tunnel parameters (fixed at
// creation, reached through the RCU-protected device), builds the encapsulated packet and counts
// it in its own stats slot. A lockless (LLTX) tunnel takes no lock; a tunnel with `oseq`, or any
// tunnel in legacy mode (pre-2.6.36), serializes every packet on the device's tx lock, because the
// output sequence number is shared state.
//
// Why a reference per burst and not per packet: rcubatch::ref_count is one shared atomic word, so
// a per-packet hold/put would bounce its cache line between the senders on every packet (the
// kernel moved to per-CPU device refcounts for exactly this, 29b4433d991c).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/netns.hpp"

namespace netdev {

struct xmit_result {
  std::uint64_t sent = 0;
  std::uint64_t dropped = 0;  // the device disappeared before these could be sent
  std::uint64_t bytes = 0;
  bool locked = false;        // the tunnel serialized on its tx lock
  std::chrono::nanoseconds elapsed{};
  std::chrono::nanoseconds sender_cpu{};  // CPU time of all senders: sender_cpu / elapsed = how
                                          // many senders actually ran at once (the tx lock can
                                          // only serialize senders that are on CPU together)
};

/// Sums a tunnel's per-thread stats slots. Requires: a read-side section or a reference.
inline std::uint64_t tunnel_packets(const tunnel_link& t) noexcept {
  std::uint64_t n = 0;
  for (const tx_stats_slot& s : t.tx->stats) n += s.packets.load(std::memory_order_relaxed);
  return n;
}

namespace detail {
inline constexpr std::size_t kPacketBytes = 200;  // seed 001's frame size
inline constexpr std::uint64_t kBurst = 64;

/// Builds one GRE-encapsulated packet and returns a checksum of it: the per-packet work the tx
/// lock protects (or not).
inline std::uint32_t encapsulate(const tunnel_params& p, std::uint32_t seq, std::uint64_t n) noexcept {
  std::array<std::uint32_t, kPacketBytes / 4> pkt;
  pkt[0] = 0x45000000u | kPacketBytes;
  pkt[1] = p.local;
  pkt[2] = p.remote;
  pkt[3] = p.has_key ? p.key : 0;
  pkt[4] = seq;
  for (std::size_t i = 5; i < pkt.size(); ++i) pkt[i] = static_cast<std::uint32_t>(n * 2654435761u + i);
  std::uint32_t sum = 0;
  for (std::uint32_t w : pkt) sum = (sum ^ w) * 16777619u;
  return sum;
}
}  // namespace detail

/// Sends `packets` packets through tunnel `name` of `ns`, split over `threads` threads.
/// Requires: the caller does not hold the registry's writer lock (senders never take it), and `ns`
/// is alive when called (it is held for the call: netns_del waits for it, see netns::hold).
template <class Flavor>
xmit_result run_xmit(netns& ns, const std::string& name, std::uint64_t packets, unsigned threads) {
  // Hold the namespace across the senders' read sections (each burst looks the tunnel up again):
  // a concurrent netns_del frees it only after this returns.
  struct ns_hold {
    netns& n;
    explicit ns_hold(netns& x) noexcept : n(x) { n.hold(); }
    ~ns_hold() { n.put(); }
  } hold(ns);
  std::atomic<std::uint64_t> sent{0}, dropped{0}, sink{0}, cpu_ns{0};
  // One stats slot per sender, written by that sender only (the kernel's per-CPU tstats, updated
  // with plain adds): a relaxed load + store, no locked RMW. Threads share a slot only beyond
  // kTxStatSlots senders, and then use fetch_add.
  const bool shared_slots = threads > kTxStatSlots;
  std::atomic<bool> locked{false};
  std::latch ready(threads + 1), go(1);
  std::vector<std::thread> senders;
  for (unsigned t = 0; t < threads; ++t) {
    const std::uint64_t share = packets / threads + (t < packets % threads ? 1 : 0);
    senders.emplace_back([&, t, share] {
      rcubatch::thread_registration<Flavor> registration;
      ready.count_down();
      go.wait();
      timespec cpu0{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
      std::uint64_t done = 0;
      std::uint32_t checksum = 0;
      while (done < share) {
        net_device* dev = nullptr;
        {
          rcubatch::read_guard<Flavor> guard;
          dev = ns.lookup_name(name);
          if (dev != nullptr) dev->refs().hold();  // the burst keeps it alive past the guard
        }
        rcubatch::quiescent_state<Flavor>();
        if (dev == nullptr) break;
        // The name may now belong to a device that is no tunnel (deleted and re-created meanwhile):
        // then there is nothing to send through, as if it had disappeared.
        const tunnel_link* tun_ptr = std::get_if<tunnel_link>(&dev->link);
        if (tun_ptr == nullptr) {
          dev->refs().put();
          break;
        }
        const tunnel_link& tun = *tun_ptr;
        tunnel_tx& txs = *tun.tx;
        tx_stats_slot& slot = txs.stats[t % kTxStatSlots];
        const std::uint64_t burst = std::min(detail::kBurst, share - done);
        for (std::uint64_t i = 0; i < burst; ++i) {
          if (tun.lltx) {
            checksum += detail::encapsulate(tun.params, 0, done + i);
          } else {
            std::lock_guard tx(txs.tx_lock);  // HARD_TX_LOCK
            const std::uint32_t seq = tun.params.oseq ? ++txs.o_seqno : 0;
            checksum += detail::encapsulate(tun.params, seq, done + i);
          }
          // Packets only: every packet is kPacketBytes long, so bytes = packets × that, on read.
          if (shared_slots) {
            slot.packets.fetch_add(1, std::memory_order_relaxed);
          } else {
            slot.packets.store(slot.packets.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          }
        }
        if (!tun.lltx) locked.store(true, std::memory_order_relaxed);
        dev->refs().put();
        done += burst;
      }
      timespec cpu1{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
      cpu_ns.fetch_add(static_cast<std::uint64_t>((cpu1.tv_sec - cpu0.tv_sec) * 1'000'000'000L + (cpu1.tv_nsec - cpu0.tv_nsec)),
                       std::memory_order_relaxed);
      sent.fetch_add(done, std::memory_order_relaxed);
      dropped.fetch_add(share - done, std::memory_order_relaxed);
      sink.fetch_add(checksum, std::memory_order_relaxed);  // keeps the work from being optimized out
    });
  }
  ready.count_down();
  ready.wait();
  const auto start = std::chrono::steady_clock::now();
  go.count_down();
  for (auto& s : senders) s.join();
  xmit_result r;
  r.elapsed = std::chrono::steady_clock::now() - start;
  r.sent = sent.load();
  r.dropped = dropped.load();
  r.bytes = r.sent * detail::kPacketBytes;
  r.locked = locked.load();
  r.sender_cpu = std::chrono::nanoseconds(cpu_ns.load());
  return r;
}

}  // namespace netdev
