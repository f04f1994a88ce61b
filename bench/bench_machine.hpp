// bench/bench_machine.hpp — where a plain-main bench's threads run and how a timed region can tell
// it was disturbed: pinning to one CPU (and back to all), and the calling thread's involuntary
// context switches (a rise over a timed region: the thread was preempted, and the time includes
// another tenant's slice). bench_teardown.cpp classifies its goal pairs with the same two figures.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <thread>

namespace rcubatch_bench {

/// Pins the calling thread to `cpu` (modulo the CPUs there are). A thread it creates inherits the
/// pin: call unpin() first when the new thread must run elsewhere (ping_pong's peer).
inline void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/// Lets the calling thread run on every CPU again.
inline void unpin() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c = 0; c < std::thread::hardware_concurrency(); ++c) CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/// Involuntary context switches of the calling thread so far.
inline long involuntary_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nivcsw;
}

/// A grace period that waited longer than this waited for a preempted reader: two memb GPs with
/// one busy reader take ~20-40 µs on this VM; a reader preempted inside its read section stretches
/// one to milliseconds.
inline constexpr double kGpWaitLimitS = 1e-3;

}  // namespace rcubatch_bench
