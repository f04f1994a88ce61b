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

namespace netsim {

struct session_options {
  netdev::unreg_mode mode = netdev::unreg_mode::batched;
  unsigned readers = 1;
  bool force = false;
  bool print_times = true;
};

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
};

/// Runs `lines` on a fresh registry. Counts are taken before the registry's own teardown.
template <class Flavor>
session_result run_session(const std::vector<script_line>& lines, variables vars, const session_options& opt,
                           std::ostream& out, std::ostream& err) {
  rcubatch::thread_registration<Flavor> registration;
  session_result r;
  const auto start = std::chrono::steady_clock::now();
  {
    netdev::registry<Flavor> reg(opt.mode);
    netdev::reader_pool<Flavor> readers(reg, opt.readers);
    interpreter<Flavor> interp(reg, vars, out, err, opt.force);
    interp.set_print_times(opt.print_times);
    r.ok = interp.run(lines);
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
    r.max_lock_hold_ns = c.max_lock_hold_ns;
    r.elapsed_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  }
  return r;
}

}  // namespace netsim
