// examples/netdev/fuzz/netsim_fuzz.cpp — libFuzzer target over netsim's script reader and interpreter.
//
// Input: a netsim script (ip -batch syntax plus default/for/{EXPR}). Each line runs on its own,
// with its own interpreter (variables persist, as in a script), against one registry on urcu-memb.
// Oracles, beyond "no crash, no leak, no UB" from the sanitizers:
//   - a failing line reports an error ("...: error: ...");
//   - a failing line that is not a `for` loop (whose earlier iterations legitimately stay done)
//     leaves no partial state: device count, route count, batches run, objects unregistered and
//     `link show` in every namespace named in the input are identical before and after it.
// Input: an optional first byte 0x01 selects legacy mode (one device at a time, its recursion-free
// teardown and its extra grace periods); anything else is batched mode and part of the script.
// Resource guards (not oracles): numbers reach the reader whole (long digit runs, LLONG_MIN, base 0
// ids); a *line* is skipped — not the input — when, with the variables as they are when it runs,
// its `for` loops would multiply to more than 300 iterations or it loads more than 300 dummies
// (kLineBudget), when the input's lines together would pass 1,500 (kInputBudget: a long fuzz run
// timed out on five loops of 1,000 deletes, 2 GPs each, under a loaded VM), or when it asks xmit
// for more than 2 threads / 200 packets. Nesting, long lines and deep prefixes are left to the
// interpreter's own limits, which are what is under test.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <optional>
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

/// What running `w` now could cost, in loop iterations and dummies loaded (see the guards above);
/// kLineBudget + 1 when it asks xmit for too much.
constexpr long double kLineBudget = 300;   // per line
constexpr long double kInputBudget = 1500;  // all lines of one input together: each iteration may be
                                            // a batch of 2 GPs, and every line is snapshot (O(devices))
long double line_cost(const std::vector<std::string>& w, const netsim::variables& vars) {
  auto value = [&](const std::string& word) -> std::optional<long long> {
    std::string v = word;
    if (vars.substitute(v)) return std::nullopt;
    return netsim::parse_number(v);
  };
  long double iterations = 1;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "for" && i + 3 < w.size()) {
      auto a = value(w[i + 2]), b = value(w[i + 3]);
      if (a && b && *b >= *a) iterations *= static_cast<long double>(*b) - static_cast<long double>(*a) + 1;
      if (!a || !b) iterations *= 50;  // a bound from an outer loop's variable: assume a modest range
    }
    if (w[i] == "threads" && i + 1 < w.size()) {
      auto n = value(w[i + 1]);
      if (!n || *n > 2) return kLineBudget + 1;
    }
    if (w[i] == "packets" && i + 1 < w.size()) {
      auto n = value(w[i + 1]);
      if (!n || *n > 200) return kLineBudget + 1;
    }
    if (w[i].find("numdummies=") != std::string::npos) {
      std::string v = w[i].substr(w[i].find('=') + 1);
      if (vars.substitute(v)) continue;
      auto n = netsim::parse_ip_integer(v);
      if (n) iterations *= std::max<long double>(1, static_cast<long double>(*n));
    }
  }
  return iterations;
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
  std::vector<netsim::script_line> show{{{"snapshot", 0}, {"link", "show"}}, {{"snapshot", 0}, {"addr", "show"}},
                                       {{"snapshot", 0}, {"route", "show"}}};
  for (const std::string& ns : namespaces)
    if (!ns.empty() && reg.find_netns(ns))
      for (const char* what : {"link", "addr", "route"}) show.push_back({{"snapshot", 0}, {"-n", ns, what, "show"}});
  netsim::interpreter<F> interp(reg, vars, out, err, /*force=*/true);
  interp.set_print_times(false);
  interp.run(show);
  s.shown = out.str();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool legacy = size > 0 && data[0] == 0x01;
  const std::string text(reinterpret_cast<const char*>(data) + (legacy ? 1 : 0), size - (legacy ? 1 : 0));
  std::istringstream in(text);
  std::vector<std::string> read_errors;
  const std::vector<netsim::script_line> lines = netsim::read_script(in, "fuzz", read_errors);
  for (const std::string& e : read_errors) {
    if (!e.starts_with("fuzz:") || e.find(": error: ") == std::string::npos) {
      std::fprintf(stderr, "read_script error without location: %s\n", e.c_str());
      std::abort();
    }
  }
  std::set<std::string> namespaces;
  for (const auto& l : lines)
    for (std::size_t i = 0; i + 1 < l.words.size(); ++i)
      if (l.words[i] == "-n" || l.words[i] == "-netns" || l.words[i] == "netns" || l.words[i] == "add" ||
          l.words[i] == "del" || l.words[i] == "exec")
        if (namespaces.size() < 64) namespaces.insert(l.words[i + 1]);

  static rcubatch::thread_registration<F> registration;  // the fuzzing thread, once
  netsim::variables vars;
  {
    netdev::registry<F> reg(legacy ? netdev::unreg_mode::legacy : netdev::unreg_mode::batched);
    long double spent = 0;
    for (const auto& l : lines) {
      const long double cost = line_cost(l.words, vars);
      if (cost > kLineBudget || spent + cost > kInputBudget) continue;
      spent += cost;
      const bool is_loop = std::find(l.words.begin(), l.words.end(), "for") != l.words.end();
      const snapshot before = take(reg, vars, namespaces);
      std::ostringstream out, err;
      netsim::interpreter<F> interp(reg, vars, out, err, /*force=*/false);
      interp.set_print_times(false);
      const bool ok = interp.run({l});
      if (ok) continue;
      if (err.str().find(": error: ") == std::string::npos) {
        std::fprintf(stderr, "a failing line gave no error message: %s\n", netsim::join(l.words).substr(0, 200).c_str());
        std::abort();
      }
      if (is_loop) continue;
      const snapshot after = take(reg, vars, namespaces);
      if (!(after == before)) {
        std::fprintf(stderr,
                     "partial state after a failing line: %s\n  error: %s  devices %zu -> %zu, routes %zu -> %zu, "
                     "batches %llu -> %llu\n--- before\n%s--- after\n%s",
                     netsim::join(l.words).substr(0, 200).c_str(), err.str().c_str(), before.devices, after.devices,
                     before.routes, after.routes, static_cast<unsigned long long>(before.batches),
                     static_cast<unsigned long long>(after.batches), before.shown.c_str(), after.shown.c_str());
        std::abort();
      }
    }
  }
  return 0;
}
