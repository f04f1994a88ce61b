// tests/support/misuse_capture.hpp — misuse reporters for tests: one that keeps the last report,
// one that keeps them all, one that says nothing. The first two are callables carrying their own
// state, passed by reference:
//   misuse_capture cap;
//   scoped_misuse_policy p(misuse_policy::report, cap);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <rcubatch/misuse.hpp>

namespace rcubatch::test {

/// Records the number of reports and the last one. Requires: one reporting thread at a time.
struct misuse_capture {
  int calls = 0;
  misuse_kind last_kind{};
  std::string last_message;

  void operator()(misuse_kind k, std::string_view msg) noexcept {
    ++calls;
    last_kind = k;
    try {
      last_message.assign(msg);
    } catch (...) {
      last_message = {};  // out of memory: the kind and the count still tell
    }
  }
};

/// Records every report, in order. Requires: reports from one thread at a time.
struct misuse_log {
  std::vector<misuse_kind> kinds;
  std::vector<std::string> messages;
  void operator()(misuse_kind k, std::string_view m) noexcept {
    try {
      kinds.push_back(k);
      messages.emplace_back(m);
    } catch (...) {  // out of memory: the counters (misuse_count) still tell
    }
  }
};

/// A reporter that ignores every report: for tests that provoke a diagnostic on purpose.
inline void quiet_reporter(misuse_kind, std::string_view) noexcept {}

}  // namespace rcubatch::test
