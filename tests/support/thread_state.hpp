// tests/support/thread_state.hpp — what the kernel says a thread is doing, so a test can wait for
// "the other thread is asleep on the lock" as a state instead of sleeping for a while.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace rcubatch::test {

/// The state letter of thread `tid` of this process from /proc: 'R' running, 'S' asleep (e.g.
/// blocked on a mutex or condition variable), ...; '?' if it cannot be read (the thread is gone).
/// Blocking: never. Linux only.
inline char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');  // the command name may contain spaces and parentheses
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

}  // namespace rcubatch::test
