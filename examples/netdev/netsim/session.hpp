// netsim/session.hpp — one netsim run: a registry, its reader threads, a script, and what it cost.
#pragma once

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/readers.hpp"
#include "netdev/registry.hpp"
#include "netsim/interpreter.hpp"
#include "netsim/script.hpp"
#include "netsim/session_options.hpp"

namespace netsim {

struct session_result {
  bool ok = true;
  int errors = 0;
  std::vector<timing> timings;
  std::uint64_t grace_periods = 0;
  std::uint64_t gps_elided = 0;
  std::uint64_t dismantle_elided = 0;
  std::uint64_t devices = 0;
  std::uint64_t routes = 0;
  std::uint64_t objects_unregistered = 0;
  std::uint64_t batches = 0;
  std::uint64_t max_lock_hold_ns = 0;
  std::uint64_t elapsed_ns = 0;
  std::uint64_t reader_lookups = 0;
  rcubatch::batch_totals batch_totals{};  // every batch's batch_stats summed (--stats text)
};

/// Runs what `feed(interp)` gives the interpreter on a fresh registry; feed returns false if a line
/// failed. Counts are taken before the registry's own teardown.
template <class Flavor, class Feed>
session_result run_session_with(Feed&& feed, variables vars, const session_options& opt, std::ostream& out,
                                std::ostream& err) {
  rcubatch::thread_registration<Flavor> registration;
  session_result r;
  const auto start = std::chrono::steady_clock::now();
  {
    netdev::registry<Flavor> reg(netdev::make_unreg_strategy<Flavor>(opt.mode));  // --mode: batched or the 2.6.32 emulation
    netdev::reader_pool<Flavor> readers(reg, opt.readers);
    interpreter<Flavor> interp(reg, vars, out, err, opt.force);
    interp.set_print_times(opt.print_times);
    interp.set_record_times(opt.record_times);
    interp.set_reader_preemptions([&readers] { return readers.involuntary_switches(); });
    r.ok = feed(interp) && interp.errors() == 0;
    r.errors = interp.errors();
    r.timings = interp.timings();
    readers.stop();
    r.reader_lookups = readers.lookups();
    const auto c = reg.counters();
    r.grace_periods = reg.domain().stats().grace_periods;
    r.gps_elided = c.gps_elided;
    r.dismantle_elided = c.dismantle_elided;
    r.devices = reg.device_count();
    r.routes = reg.route_count();
    r.objects_unregistered = c.objects_unregistered;
    r.batches = c.batches;
    r.batch_totals = c.batch_totals;
    r.max_lock_hold_ns = c.max_lock_hold_ns;
    r.elapsed_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  }
  return r;
}

/// Runs `lines` on a fresh registry.
template <class Flavor>
session_result run_session(const std::vector<script_line>& lines, variables vars, const session_options& opt,
                           std::ostream& out, std::ostream& err) {
  return run_session_with<Flavor>([&](interpreter<Flavor>& interp) { return interp.run(lines); }, std::move(vars), opt,
                                  out, err);
}

/// Runs a script as it is read, one line at a time (`ip -batch -`): each line runs before the
/// next is read, and the memory used does not grow with the script's length. A line the reader
/// refuses (too long, bad quoting) is an error of that line like any other.
template <class Flavor>
session_result run_stream(std::istream& in, const std::string& file, variables vars, const session_options& opt,
                          std::ostream& out, std::ostream& err) {
  return run_session_with<Flavor>(
      [&](interpreter<Flavor>& interp) {
        line_reader reader(in, file);
        script_line line;
        std::string read_error;
        bool ok = true;
        while (reader.next(line, read_error)) {
          bool line_ok = true;
          if (!read_error.empty()) {
            err << read_error << '\n';
            interp.count_error();
            line_ok = false;
          } else {
            line_ok = interp.run_line(line);
          }
          if (opt.flush_each_line) out.flush();
          ok = ok && line_ok;
          if (!line_ok && !interp.force()) return false;
        }
        return ok;
      },
      std::move(vars), opt, out, err);
}

}  // namespace netsim
