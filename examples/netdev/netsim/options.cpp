// netsim/options.cpp — netsim's command-line parser (see options.hpp).
#include "netsim/options.hpp"

#include <algorithm>

#include <rcubatch/flavor_list.hpp>

namespace netsim {

const char* const kUsage =
    "usage: netsim [--mode batched|legacy] [--readers N] [--flavor memb|qsbr|mb|bp] [-force]\n"
    "              [--stats json|text] [-D NAME=VALUE]... (-batch FILE|- | COMMAND...)\n"
    "       netsim seed-table [--short] [--repeat K] [--flavor F] [--readers N] [--scripts DIR]\n";

const char* const kHelp =
    "\n"
    "Commands (ip syntax; objects and actions abbreviate as in ip: l a, link sh, a a, r g):\n"
    "  [ip] [-n|-netns NS] [-4] CMD     run CMD (in namespace NS)\n"
    "  link add [link LOWER] [[name] NAME] [mtu N] type dummy | vlan id N [protocol 802.1Q|802.1ad]\n"
    "           | macvlan [mode vepa|private|bridge|passthru|source]\n"
    "           | ipip [remote A] [local B] | gre [remote A] [local B] [key K] [oseq]\n"
    "  link set [dev] NAME [up|down] [mtu N]      link del [dev] NAME [link L] [type T ...]\n"
    "  link show [[dev] NAME] [type T] [up]\n"
    "  addr add A/P dev NAME [brd B] [label L] [scope S] [noprefixroute] [valid_lft forever]\n"
    "  addr del A[/P] dev NAME   addr flush dev NAME   addr show [dev NAME]\n"
    "  route add|replace|del PREFIX|default [via GW] [dev NAME]   route show [dev NAME]   route get A\n"
    "  (addresses as ip reads them: 10.0.0/24, 172.16/12, 10.0.0.0/255.0.0.0)\n"
    "  netns add NAME   netns del NAME...   netns list   netns exec NS ip CMD\n"
    "  module load dummy [numdummies=N] | ipip | gre|ip_gre (tunl0/gre0 in every netns)\n"
    "  module unload dummy|vlan|8021q|macvlan|ipip|gre|ip_gre\n"
    "  xmit DEV packets N threads T       time CMD\n"
    "  default NAME VALUE   for VAR FROM TO CMD   {NAME} {NAME+INT} (+ - * / %) in any word\n"
    "Every namespace has lo (ifindex 1, DOWN until `link set lo up`).\n"
    "ifconfig: only `ifconfig NAME up|down` (as link set); for `ifconfig NAME A netmask M up` write\n"
    "  `addr add A/P dev NAME` and `link set NAME up`.\n"
    "Valid ip syntax netsim does not model (IPv6, other link types, link set name/address/netns,\n"
    "  route metrics/tables/types, address lifetimes, ...) fails with \"... is not modelled by netsim\".\n";

bool is_flavor_name(const std::string& name) noexcept {
  return std::find(rcubatch::flavor_names.begin(), rcubatch::flavor_names.end(), name) != rcubatch::flavor_names.end();
}

namespace {

/// A count option: the whole word a decimal number in [min, max], else a usage error.
unsigned parse_count(const std::string& option, const std::string& text, unsigned min, unsigned max) {
  const auto n = parse_number(text);
  if (!n || *n < min || *n > max)
    throw usage_error(option + " takes a number from " + std::to_string(min) + " to " + std::to_string(max));
  return static_cast<unsigned>(*n);
}

void check_flavor(const std::string& name) {
  if (!is_flavor_name(name)) throw usage_error(rcubatch::unknown_flavor(name, rcubatch::flavor_names).what());
}

seed_table_options parse_seed_table(const std::vector<std::string>& args, const std::string& default_scripts_dir) {
  seed_table_options opt;
  opt.scripts_dir = default_scripts_dir;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--short") opt.short_sizes = true;
    else if (a == "--flavor" && has_value) check_flavor(opt.flavor = args[++i]);
    else if (a == "--readers" && has_value) opt.readers = parse_count(a, args[++i], 0, 64);
    else if (a == "--scripts" && has_value) opt.scripts_dir = args[++i];
    else if (a == "--repeat" && has_value) opt.repeat = parse_count(a, args[++i], 1, 1000);
    else if (!has_value && (a == "--flavor" || a == "--readers" || a == "--scripts" || a == "--repeat"))
      throw usage_error("seed-table: " + a + " needs a value");
    else throw usage_error("seed-table: unknown argument " + a);
  }
  return opt;
}

}  // namespace

command_line parse_command_line(const std::vector<std::string>& args, const std::string& default_scripts_dir) {
  command_line c;
  if (!args.empty() && args[0] == "seed-table") {
    c.what = command_line::action::seed_table;
    c.seed_table = parse_seed_table(args, default_scripts_dir);
    return c;
  }
  run_options& r = c.run;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--mode" && has_value) {
      const std::string& m = args[++i];
      if (m != "batched" && m != "legacy") throw usage_error("--mode must be batched or legacy");
      r.session.mode = m == "batched" ? netdev::unreg_mode::batched : netdev::unreg_mode::legacy;
    } else if (a == "--readers" && has_value) {
      r.session.readers = parse_count(a, args[++i], 0, 64);
    } else if (a == "--flavor" && has_value) {
      r.flavor = args[++i];
    } else if (a == "-force" || a == "--force") {
      r.session.force = true;
    } else if (a == "--stats" && has_value) {
      const std::string& format = args[++i];
      if (format != "json" && format != "text") throw usage_error("--stats takes json or text");
      (format == "json" ? r.stats_json : r.stats_text) = true;
    } else if ((a == "-batch" || a == "-b") && has_value) {
      r.batch_file = args[++i];
    } else if (a == "-D" && has_value) {
      const std::string& d = args[++i];
      const auto eq = d.find('=');
      if (eq == std::string::npos) throw usage_error("-D needs NAME=VALUE");
      r.vars.set(d.substr(0, eq), d.substr(eq + 1));
    } else if (a == "-h" || a == "--help") {
      c.what = command_line::action::help;
      return c;
    } else {
      break;  // the command
    }
  }
  r.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (r.batch_file.empty() && r.command.empty()) throw usage_error("no command: give -batch FILE|- or a COMMAND");
  check_flavor(r.flavor);
  return c;
}

}  // namespace netsim
