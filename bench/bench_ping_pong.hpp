// bench/bench_ping_pong.hpp — the machine-state probe every bench run records: a cross-core
// cache-line round trip, which on this VM flips between ~60 ns (fast state) and ~350-450 ns (slow).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace rcubatch_bench {

/// Cross-core cache-line round trip: two threads hand one atomic back and forth in rounds of 64
/// trips, for at most `round_trips` trips, 50 ms once 16 rounds are done, or `max_s` (0.5 s; a
/// probe taken every round of a bench passes less, as on a loaded machine every probe runs to it),
/// whichever comes first; at least one round always completes.
/// `best_ns` is the fastest round's average — the
/// cache-line cost while both threads run, the figure that flips between ~60 ns and ~350 ns on
/// this VM; `mean_ns` also counts the trips that waited for a descheduled thread (on an
/// oversubscribed machine a trip can cost a whole scheduler slice). Every run records both.
struct ping_pong_result {
  double best_ns = 0;
  double mean_ns = 0;
};

inline ping_pong_result ping_pong(int round_trips = 200'000, double max_s = 0.5) {
  alignas(64) std::atomic<int> flag{0};  // 1: ping sent; 0: pong back; 2: stop
  std::thread peer([&] {
    for (;;) {
      int v;
      while ((v = flag.load(std::memory_order_acquire)) == 0) {
      }
      if (v == 2) return;
      flag.store(0, std::memory_order_release);
    }
  });
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  constexpr int kRound = 64;
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0, rounds = 0;
  double best = 1e300;
  while (done < round_trips) {
    const auto r0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRound; ++i) {
      flag.store(1, std::memory_order_release);
      while (flag.load(std::memory_order_acquire) != 0) {
      }
    }
    done += kRound;
    ++rounds;
    best = std::min(best, since(r0) * 1e9 / kRound);
    const double t = since(t0);
    if ((t > 0.05 && rounds >= 16) || t > max_s) break;
  }
  const double mean = since(t0) * 1e9 / done;
  flag.store(2, std::memory_order_release);
  peer.join();
  return {best, mean};
}

/// Best round (ns) from which the machine counts as in its slow cache-line state (teardown_demo
/// uses the same threshold).
inline constexpr double kSlowPingPongNs = 200;

}  // namespace rcubatch_bench
