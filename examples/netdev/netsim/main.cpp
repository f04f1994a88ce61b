// netsim — replays `ip`-style commands on the rcubatch netdev registry; see netsim/interpreter.hpp
// for the commands and ../README.md (how to run the seed experiments) and ../RESULTS.md (their measurements).
//
//   netsim [--mode batched|legacy] [--readers N] [--flavor memb|qsbr|mb|bp] [-force]
//          [--stats json|text] [-D NAME=VALUE]... (-batch FILE|- | COMMAND...)
//   netsim seed-table [--short] [--repeat K] [--flavor F] [--readers N] [--scripts DIR]
//   (parsed by netsim/options.hpp; this file picks the flavor and runs the interpreter)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "netsim/options.hpp"
#include "netsim/script.hpp"
#include "netsim/seed_table.hpp"
#include "netsim/session.hpp"

namespace {

/// Keeps the memory netsim has used mapped, as the kernel's allocators do for a real registry.
///
/// The kernel allocates net_devices and hash tables in its direct map: memory it has used once
/// stays mapped (a slab cache keeps its pages; the page allocator hands out pages that are
/// mapped already), so registering a device never takes a page fault. glibc by default gives the
/// top of the heap back to the kernel whenever more than M_TRIM_THRESHOLD (128 KiB, raised by
/// its frees of mmapped chunks up to 64 MiB) is free, and serves chunks over M_MMAP_THRESHOLD
/// (128 KiB up to 32 MiB, the same dynamic rule) from fresh mappings it unmaps on free. A netsim
/// process that builds and tears down registries — `seed-table` runs every experiment on a fresh
/// registry ten times — then faulted the ~45 MB of 100,000 new dummies and their index tables in
/// again at every run: 0.117 faults per device, about half the per-device time of the creation
/// (examples/netdev/RESULTS.md, 2026-12-03 "create 100,000 vs 1,000"). Fixed thresholds (which
/// also turn the dynamic rule off) keep freed memory in the heap for the next registry: a
/// creation faults only where the process has never been as large before.
void keep_freed_memory() noexcept {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum: chunks up to 32 MiB (a 4M-bucket table) from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   // give back only past 1 GiB free
#endif
}

void print_json(const netsim::session_result& r, const netsim::run_options& c) {
  std::printf(
      "{\"mode\":\"%s\",\"flavor\":\"%s\",\"readers\":%u,\"grace_periods\":%llu,\"gps_elided\":%llu,"
      "\"dismantle_elided\":%llu,\"devices\":%llu,\"routes\":%llu,\"objects_unregistered\":%llu,\"batches\":%llu,"
      "\"max_lock_hold_ns\":%llu,\"elapsed_ns\":%llu,\"errors\":%d,\"reader_lookups\":%llu}\n",
      c.session.mode == netdev::unreg_mode::batched ? "batched" : "legacy", c.flavor.c_str(), c.session.readers,
      static_cast<unsigned long long>(r.grace_periods), static_cast<unsigned long long>(r.gps_elided + r.dismantle_elided),
      static_cast<unsigned long long>(r.dismantle_elided), static_cast<unsigned long long>(r.devices),
      static_cast<unsigned long long>(r.routes), static_cast<unsigned long long>(r.objects_unregistered),
      static_cast<unsigned long long>(r.batches), static_cast<unsigned long long>(r.max_lock_hold_ns),
      static_cast<unsigned long long>(r.elapsed_ns), r.errors, static_cast<unsigned long long>(r.reader_lookups));
}

/// --stats text: the registry's live figures (rcubatch/counters.hpp) as an operator reads them,
/// on stderr at exit (docs/observability.md).
void print_figures(const netsim::session_result& r) {
  const rcubatch::batch_totals& t = r.batch_totals;
  std::fprintf(stderr,
               "rcubatch figures: %llu batches, %llu objects, %llu grace periods waited (%llu elided, domain ran %llu), "
               "%llu stall reports, %.3f ms in batches, %.3f ms with the writer lock held\n",
               static_cast<unsigned long long>(t.batches), static_cast<unsigned long long>(t.objects),
               static_cast<unsigned long long>(t.grace_periods), static_cast<unsigned long long>(t.gps_elided),
               static_cast<unsigned long long>(r.grace_periods), static_cast<unsigned long long>(t.stall_reports),
               static_cast<double>(t.elapsed.count()) / 1e6, static_cast<double>(t.lock_hold.count()) / 1e6);
  std::fprintf(stderr, "  %-22s %9s %12s %12s\n", "phase", "entries", "total ms", "mean us");
  for (const rcubatch::phase_row& row : rcubatch::kPhaseTable) {
    const auto entries = t.phase_entries[static_cast<std::size_t>(row.id)];
    if (entries == 0) continue;
    const double ns = static_cast<double>(t.time_of(row.id).count());
    std::fprintf(stderr, "  %-22.*s %9llu %12.3f %12.3f\n", static_cast<int>(row.name.size()), row.name.data(),
                 static_cast<unsigned long long>(entries), ns / 1e6, ns / 1e3 / static_cast<double>(entries));
  }
}

template <class Flavor>
int run(const netsim::run_options& c) {
  std::ostream& out = c.stats_json ? std::cerr : std::cout;  // keep stdout one JSON object
  netsim::session_options opt = c.session;
  opt.record_times = false;  // printed as they run; a stream of any length keeps nothing per line
  netsim::session_result r;
  if (!c.batch_file.empty()) {
    // Read and run one line at a time, as ip -batch does: `yes 'link show' | netsim -batch -`
    // answers each line as it arrives, in constant memory.
    if (c.batch_file == "-") {
      opt.flush_each_line = true;
      r = netsim::run_stream<Flavor>(std::cin, "<stdin>", c.vars, opt, out, std::cerr);
    } else {
      std::ifstream in(c.batch_file);
      if (!in) {
        std::fprintf(stderr, "netsim: cannot open %s\n", c.batch_file.c_str());
        return 1;
      }
      r = netsim::run_stream<Flavor>(in, c.batch_file, c.vars, opt, out, std::cerr);
    }
  } else {
    const std::vector<netsim::script_line> lines{{{"<command line>", 1}, c.command}};
    r = netsim::run_session<Flavor>(lines, c.vars, opt, out, std::cerr);
  }
  if (c.stats_json) print_json(r, c);
  if (c.stats_text) print_figures(r);
  return r.errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  std::string scripts_dir = NETSIM_SCRIPTS_DIR;
  if (std::ifstream probe(scripts_dir + "/smoke.batch"); !probe) scripts_dir = NETSIM_INSTALLED_SCRIPTS_DIR;
  netsim::command_line c;
  try {
    c = netsim::parse_command_line(std::vector<std::string>(argv + 1, argv + argc), scripts_dir);
  } catch (const netsim::usage_error& e) {
    std::fprintf(stderr, "netsim: %s\n%s", e.what(), netsim::kUsage);
    return 2;
  }
  switch (c.what) {
    case netsim::command_line::action::help:
      std::fputs(netsim::kUsage, stdout);
      std::fputs(netsim::kHelp, stdout);
      return 0;
    case netsim::command_line::action::seed_table: return netsim::run_seed_table(c.seed_table);
    case netsim::command_line::action::run: break;
  }
  // parse_command_line checked the name already; with_flavor would throw for an unknown one.
  return rcubatch::with_flavor(c.run.flavor, [&]<class F>(std::type_identity<F>) { return run<F>(c.run); });
}
