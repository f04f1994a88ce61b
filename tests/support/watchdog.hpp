// tests/support/watchdog.hpp — fails a test that stops making progress, instead of hanging CI.
//
//   watchdog dog(std::chrono::seconds(30), "two qsbr writers calling synchronize");
//   ... code that may deadlock ...
//   // dog's destructor disarms it
//
// If the scope is still open when the limit passes, it prints what hung and aborts the process:
// ctest sees a crash, names the test, and moves on. A watchdog is not synchronization: it only
// decides "hung", with a limit far above the scope's normal run time (milliseconds).
// kick() restarts the limit, for loops that must keep progressing rather than finish in time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace rcubatch::test {

class watchdog {
  using clock = std::chrono::steady_clock;

 public:
  watchdog(clock::duration limit, std::string what) : limit_(limit), what_(std::move(what)), deadline_(clock::now() + limit) {
    thread_ = std::thread([this] {
      std::unique_lock lock(m_);
      while (!done_) {
        if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && !done_ && clock::now() >= deadline_) {
          std::fprintf(stderr, "watchdog: no progress in %lld s: %s (a deadlock?)\n",
                       static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(limit_).count()),
                       what_.c_str());
          std::fflush(stderr);
          std::abort();
        }
      }
    });
  }
  ~watchdog() {
    {
      std::lock_guard lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// Progress was made: the limit starts again from now.
  void kick() {
    std::lock_guard lock(m_);
    deadline_ = clock::now() + limit_;
  }

 private:
  clock::duration limit_;
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  clock::time_point deadline_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace rcubatch::test
