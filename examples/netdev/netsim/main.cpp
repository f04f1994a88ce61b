// netsim — replays `ip`-style commands on the rcubatch netdev registry; see netsim/interpreter.hpp
// for the commands and ../README.md (how to run the seed experiments) and ../RESULTS.md (their measurements).
//
//   netsim [--mode batched|legacy] [--readers N] [--flavor memb|qsbr|mb|bp] [-force]
//          [--stats json] [-D NAME=VALUE]... (-batch FILE|- | COMMAND...)
//   netsim seed-table [--short] [--repeat K] [--flavor F] [--readers N] [--scripts DIR]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "netsim/script.hpp"
#include "netsim/seed_table.hpp"
#include "netsim/session.hpp"

namespace {

constexpr const char* kUsage =
    "usage: netsim [--mode batched|legacy] [--readers N] [--flavor memb|qsbr|mb|bp] [-force]\n"
    "              [--stats json] [-D NAME=VALUE]... (-batch FILE|- | COMMAND...)\n"
    "       netsim seed-table [--short] [--repeat K] [--flavor F] [--readers N] [--scripts DIR]\n";

constexpr const char* kHelp =
    "\n"
    "Commands (ip syntax; objects and actions abbreviate as in ip: l a, link sh, a a, r g):\n"
    "  [ip] [-n|-netns NS] [-4] CMD     run CMD (in namespace NS)\n"
    "  link add [link LOWER] [name] NAME [mtu N] type dummy | vlan id N [protocol 802.1Q|802.1ad]\n"
    "           | macvlan [mode vepa|private|bridge|passthru|source]\n"
    "           | ipip remote A local B | gre remote A local B [key K] [oseq]\n"
    "  link set [dev] NAME [up|down] [mtu N]      link del [dev] NAME\n"
    "  link show [[dev] NAME] [type T] [up]\n"
    "  addr add A/P dev NAME [brd B] [label L] [scope S] [noprefixroute] [valid_lft forever]\n"
    "  addr del A[/P] dev NAME   addr flush dev NAME   addr show [dev NAME]\n"
    "  route add|replace|del PREFIX|default [via GW] [dev NAME]   route show [dev NAME]   route get A\n"
    "  netns add NAME   netns del NAME...   netns list   netns exec NS ip CMD\n"
    "  module load dummy [numdummies=N]   module unload dummy|vlan|8021q|macvlan|ipip|gre|ip_gre\n"
    "  xmit DEV packets N threads T       time CMD\n"
    "  default NAME VALUE   for VAR FROM TO CMD   {NAME} {NAME+INT} (+ - * / %) in any word\n"
    "Every namespace has lo (ifindex 1, DOWN until `link set lo up`).\n"
    "ifconfig: only `ifconfig NAME up|down` (as link set); for `ifconfig NAME A netmask M up` write\n"
    "  `addr add A/P dev NAME` and `link set NAME up`.\n"
    "Valid ip syntax netsim does not model (IPv6, other link types, link set name/address/netns,\n"
    "  route metrics/tables/types, address lifetimes, ...) fails with \"... is not modelled by netsim\".\n";

struct cli {
  netsim::session_options session;
  std::string flavor = "memb";
  bool stats_json = false;
  std::string batch_file;
  std::vector<std::string> command;
  netsim::variables vars;
};

void print_json(const netsim::session_result& r, const cli& c) {
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

template <class Flavor>
int run(const cli& c) {
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
  return r.errors == 0 ? 0 : 1;
}

/// A non-negative count option: the whole word a decimal number in [min, max], else a usage error.
unsigned parse_count(const char* option, const char* text, unsigned min, unsigned max) {
  const auto n = netsim::parse_number(text);
  if (!n || *n < min || *n > max)
    throw std::invalid_argument(std::string(option) + " takes a number from " + std::to_string(min) + " to " +
                                std::to_string(max));
  return static_cast<unsigned>(*n);
}

int seed_table_main(int argc, char** argv, int first) {
  netsim::seed_table_options opt;
  opt.scripts_dir = NETSIM_SCRIPTS_DIR;
  if (std::ifstream probe(opt.scripts_dir + "/smoke.batch"); !probe) opt.scripts_dir = NETSIM_INSTALLED_SCRIPTS_DIR;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") opt.short_sizes = true;
    else if (a == "--flavor" && i + 1 < argc) opt.flavor = argv[++i];
    else if (a == "--readers" && i + 1 < argc) opt.readers = parse_count("--readers", argv[++i], 0, 64);
    else if (a == "--scripts" && i + 1 < argc) opt.scripts_dir = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) opt.repeat = parse_count("--repeat", argv[++i], 1, 1000);
    else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  return netsim::run_seed_table(opt);
}

}  // namespace

int main(int argc, char** argv) {
  cli c;
  int i = 1;
  try {
    if (argc > 1 && std::string(argv[1]) == "seed-table") return seed_table_main(argc, argv, 2);
    for (; i < argc; ++i) {
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      if (a == "--mode" && has_value) {
        const std::string m = argv[++i];
        if (m != "batched" && m != "legacy") throw std::invalid_argument("--mode must be batched or legacy");
        c.session.mode = m == "batched" ? netdev::unreg_mode::batched : netdev::unreg_mode::legacy;
      } else if (a == "--readers" && has_value) {
        c.session.readers = parse_count("--readers", argv[++i], 0, 64);
      } else if (a == "--flavor" && has_value) {
        c.flavor = argv[++i];
      } else if (a == "-force" || a == "--force") {
        c.session.force = true;
      } else if (a == "--stats" && has_value) {
        if (std::string(argv[++i]) != "json") throw std::invalid_argument("--stats takes json");
        c.stats_json = true;
      } else if ((a == "-batch" || a == "-b") && has_value) {
        c.batch_file = argv[++i];
      } else if (a == "-D" && has_value) {
        const std::string d = argv[++i];
        const auto eq = d.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("-D needs NAME=VALUE");
        c.vars.set(d.substr(0, eq), d.substr(eq + 1));
      } else if (a == "-h" || a == "--help") {
        std::fputs(kUsage, stdout);
        std::fputs(kHelp, stdout);
        return 0;
      } else {
        break;  // the command
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netsim: %s\n%s", e.what(), kUsage);
    return 2;
  }
  for (; i < argc; ++i) c.command.emplace_back(argv[i]);
  if (c.batch_file.empty() && c.command.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (c.flavor == "memb") return run<rcubatch::flavor::memb>(c);
  if (c.flavor == "qsbr") return run<rcubatch::flavor::qsbr>(c);
  if (c.flavor == "mb") return run<rcubatch::flavor::mb>(c);
  if (c.flavor == "bp") return run<rcubatch::flavor::bp>(c);
  std::fprintf(stderr, "netsim: unknown flavor %s\n%s", c.flavor.c_str(), kUsage);
  return 2;
}
