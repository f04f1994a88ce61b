// tests/fuzz/netsim_fuzz.cpp — libFuzzer target over netsim's script reader and interpreter.
//
// Input: a netsim script (ip -batch syntax plus default/for/{EXPR}). Each line runs on its own,
// with its own interpreter (variables persist, as in a script), against one registry on urcu-memb.
// Oracles, beyond "no crash, no leak, no UB" from the sanitizers:
//   - a failing line reports an error ("...: error: ...");
//   - a failing line that is not a `for` loop (whose earlier iterations legitimately stay done)
//     leaves no partial state: device count, route count, batches run, objects unregistered and
//     `link show` in every namespace named in the input are identical before and after it.
// Resource guards (not oracles): numbers are cut to 3 digits and '*' becomes '+' before parsing;
// lines with nested `for` or `xmit` beyond 2 threads / 200 packets skip the input, so one input
// cannot ask for a million devices or threads.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/registry.hpp"
#include "netsim/interpreter.hpp"
#include "netsim/script.hpp"

namespace {

using F = rcubatch::flavor::memb;

/// Clamps what would make one input arbitrarily expensive, keeping its structure: a run of 4+
/// digits keeps its first three ("default N 10000" → "default N 100"), '*' becomes '+'.
std::string clamp_costs(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  int digits = 0;
  for (char c : text) {
    digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
    if (digits >= 4) continue;  // drop the 4th digit onwards
    out.push_back(c == '*' ? '+' : c);
  }
  return out;
}

bool line_too_expensive(const std::vector<std::string>& w) {
  int fors = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "for") ++fors;
    if (w[i] == "threads" && i + 1 < w.size()) {
      auto n = netsim::parse_number(w[i + 1]);
      if (!n || *n > 2) return true;
    }
    if (w[i] == "packets" && i + 1 < w.size()) {
      auto n = netsim::parse_number(w[i + 1]);
      if (!n || *n > 200) return true;
    }
  }
  return fors > 1;  // nested loops multiply
}

struct snapshot {
  std::size_t devices = 0, routes = 0;
  std::uint64_t batches = 0, unregistered = 0;
  std::string shown;
  bool operator==(const snapshot&) const = default;
};

snapshot take(netdev::registry<F>& reg, netsim::variables& vars, const std::set<std::string>& namespaces) {
  snapshot s;
  s.devices = reg.device_count();
  s.routes = reg.route_count();
  s.batches = reg.counters().batches;
  s.unregistered = reg.counters().objects_unregistered;
  std::ostringstream out, err;
  std::vector<netsim::script_line> show{{{"snapshot", 0}, {"link", "show"}}};
  for (const std::string& ns : namespaces)
    if (reg.find_netns(ns)) show.push_back({{"snapshot", 0}, {"-n", ns, "link", "show"}});
  netsim::interpreter<F> interp(reg, vars, out, err, /*force=*/true);
  interp.set_print_times(false);
  interp.run(show);
  s.shown = out.str();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = clamp_costs(std::string_view(reinterpret_cast<const char*>(data), size));
  std::istringstream in(text);
  std::vector<std::string> read_errors;
  const std::vector<netsim::script_line> lines = netsim::read_script(in, "fuzz", read_errors);
  for (const std::string& e : read_errors) {
    if (e.find("error") == std::string::npos && e.find("fuzz:") == std::string::npos) {
      std::fprintf(stderr, "read_script error without location: %s\n", e.c_str());
      std::abort();
    }
  }
  std::set<std::string> namespaces;
  for (const auto& l : lines) {
    if (line_too_expensive(l.words)) return 0;
    for (std::size_t i = 0; i + 1 < l.words.size(); ++i)
      if (l.words[i] == "-n" || l.words[i] == "netns" || l.words[i] == "add" || l.words[i] == "del")
        namespaces.insert(l.words[i + 1]);
  }

  static rcubatch::thread_registration<F> registration;  // the fuzzing thread, once
  netsim::variables vars;
  {
    netdev::registry<F> reg(netdev::unreg_mode::batched);
    for (const auto& l : lines) {
      const bool is_loop = std::find(l.words.begin(), l.words.end(), "for") != l.words.end();
      const snapshot before = take(reg, vars, namespaces);
      std::ostringstream out, err;
      netsim::interpreter<F> interp(reg, vars, out, err, /*force=*/false);
      interp.set_print_times(false);
      const bool ok = interp.run({l});
      if (ok) continue;
      if (err.str().find(": error: ") == std::string::npos) {
        std::fprintf(stderr, "a failing line gave no error message: %s\n", netsim::join(l.words).c_str());
        std::abort();
      }
      if (is_loop) continue;
      const snapshot after = take(reg, vars, namespaces);
      if (!(after == before)) {
        std::fprintf(stderr,
                     "partial state after a failing line: %s\n  error: %s  devices %zu -> %zu, routes %zu -> %zu, "
                     "batches %llu -> %llu\n--- before\n%s--- after\n%s",
                     netsim::join(l.words).c_str(), err.str().c_str(), before.devices, after.devices, before.routes,
                     after.routes, static_cast<unsigned long long>(before.batches),
                     static_cast<unsigned long long>(after.batches), before.shown.c_str(), after.shown.c_str());
        std::abort();
      }
    }
  }
  return 0;
}
