// netsim/interpreter.hpp — runs iproute2-syntax commands against a netdev::registry.
//
//   [ip] [-n|-netns NS] [-4] OBJECT ...      (objects and actions abbreviate as ip's matches())
//   link add [link LOWER] [name|dev] NAME [mtu N] type dummy | vlan id N [protocol 802.1Q|802.1ad]
//            | macvlan [mode vepa|private|bridge|passthru|source]
//            | ipip [remote A] [local B] | gre [remote A] [local B] [key K] [oseq]
//            (no NAME: "<kind>%d", the lowest free number)
//   link set [dev] NAME [up|down] [mtu N] (any order)
//   link del [dev] NAME [link LOWER] [type T [options]] (as add's syntax; only NAME is used)
//   link show [[dev] NAME] [type T] [up]
//   addr add A/P dev NAME [brd B] [label L] [scope S] [nodad] [noprefixroute]
//            [valid_lft|preferred_lft forever] (any order)
//   addr del A[/P] dev NAME       addr flush [dev] NAME        addr show [[dev] NAME]
//   route add|replace|del PREFIX|default [via GW] [dev NAME] [table main]
//   route show [dev NAME]         route get A
//   netns add NAME  netns del NAME...  netns list  netns exec NS ip CMD...
//   ifconfig NAME up|down         (as link set NAME up|down)
//   module load dummy [numdummies=N] (default 1) | ipip | gre|ip_gre (the fallback tunl0 / gre0 in
//            every namespace)   module unload TYPE (every device of TYPE, one batch)
//   xmit DEV packets N threads T  time CMD (wall and CPU time, faults, switches, GPs)
// plus the script extensions of script.hpp (default, for, {EXPR}). Valid iproute2 syntax that
// netsim does not model is refused with "... is not modelled by netsim".
//
// A failing command changes nothing (the registry validates before it mutates) — a failing `for`
// stops at the failing iteration, keeping the ones before, like separate lines; the interpreter
// prints "file:line: error: ..." and stops, or goes on under -force.
//
// Bounds: `for` and `time` nest at most kMaxNesting deep (an error naming the line beyond);
// prefixes (ip, -n NS, netns exec NS ip) are consumed in a loop, not by recursion.
#pragma once

#include <cctype>
#include <charconv>
#include <climits>
#include <functional>
#include <initializer_list>
#include <optional>
#include <new>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <rcubatch.hpp>

#include "netdev/registry.hpp"
#include "netdev/upper_device.hpp"
#include "netdev/xmit.hpp"
#include "netsim/script.hpp"

namespace netsim {

/// One `time CMD`: what it cost.
struct timing {
  std::string command;
  std::chrono::nanoseconds elapsed{};
  std::uint64_t grace_periods = 0;
  std::uint64_t dismantle_elided = 0;
  /// CPU time of the thread that ran CMD (CLOCK_THREAD_CPUTIME_ID, page faults included). Unlike
  /// `elapsed` it leaves out the time this thread was preempted by the rest of the machine, and
  /// the time it slept waiting for grace periods or references.
  std::chrono::nanoseconds writer_cpu{};
  /// Where the rest of `elapsed` went (getrusage(RUSAGE_THREAD) of the same thread): page faults
  /// (in writer_cpu: fresh heap memory), voluntary switches (it slept: grace periods, the join of
  /// rculfhash's resize helpers) and involuntary ones (preempted); and the wall time spent growing
  /// the hash tables (rcubatch::lfht_total_resize_time), mostly in helper threads it waited for.
  long minor_faults = 0;
  long voluntary_switches = 0;
  long involuntary_switches = 0;
  std::chrono::nanoseconds table_growth{};
  /// The longest wait for one grace period in CMD (zero if CMD waited for none): over a
  /// millisecond, the scheduler held it up (examples/common/disturbance.hpp).
  std::chrono::nanoseconds longest_gp_wait{};
  /// How often the reader threads were preempted during CMD (their involuntary context switches,
  /// summed): a reader preempted inside its read section holds a grace period until it runs
  /// again. Zero with no reader, or where /proc/self/task is unavailable.
  long reader_preemptions = 0;
  /// What the batch did, phase by phase, if CMD ran exactly one batch.
  std::optional<rcubatch::batch_stats> batch{};
};

inline rusage thread_usage_now() noexcept {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u;
}

inline std::chrono::nanoseconds thread_cpu_now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

inline std::string join(std::span<const std::string> words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

template <class Flavor>
class interpreter {
  using words_t = std::span<const std::string>;
  using status = netdev::status;

 public:
  /// How deep `for` and `time` may nest in one line.
  static constexpr int kMaxNesting = 16;

  interpreter(netdev::registry<Flavor>& reg, variables& vars, std::ostream& out, std::ostream& err, bool force)
      : reg_(reg), vars_(vars), out_(out), err_(err), force_(force) {}

  /// Runs the lines in order. Returns false if any failed.
  bool run(const std::vector<script_line>& lines) {
    for (const script_line& l : lines)
      if (!run_line(l) && !force_) return false;
    return errors_ == 0;
  }

  /// Runs one line; on failure prints "file:line: error: ..." and counts it. Returns success.
  bool run_line(const script_line& l) {
    status s;
    try {
      s = execute(l.words, reg_.init_net(), 0);
    } catch (const std::bad_alloc&) {
      s = status::fail("Cannot allocate memory");
    }
    if (s.ok()) return true;
    report(l.where, s.error);
    return false;
  }

  /// Prints and counts an error found outside the interpreter (a line the reader could not read).
  void report(const source_location& where, const std::string& message) {
    err_ << where.file << ':' << where.line << ": error: " << message << '\n';
    if (errors_ < INT_MAX) ++errors_;
  }
  /// Counts an error the caller printed itself (already "file:line: error: ...").
  void count_error() noexcept {
    if (errors_ < INT_MAX) ++errors_;
  }

  int errors() const noexcept { return errors_; }
  bool force() const noexcept { return force_; }
  const std::vector<timing>& timings() const noexcept { return timings_; }
  /// Quiet mode for seed-table: `time` lines are recorded, not printed.
  void set_print_times(bool on) noexcept { print_times_ = on; }
  /// Whether `time` lines are kept for timings() (off for a stream of any length).
  void set_record_times(bool on) noexcept { record_times_ = on; }
  /// The readers' involuntary switches so far (timing::reader_preemptions), read around each `time`.
  void set_reader_preemptions(std::function<long()> count) { reader_preemptions_ = std::move(count); }

 private:
  static status not_modelled(std::string_view what) { return status::fail(std::string(what) + " is not modelled by netsim"); }

  /// ip's matches(): `word` is a non-empty prefix of `full`.
  static bool matches(std::string_view word, std::string_view full) noexcept {
    return !word.empty() && word.size() <= full.size() && full.compare(0, word.size(), word) == 0;
  }
  /// The first entry of `table` that `word` abbreviates (ip tries its commands in this order).
  static std::string_view pick(std::string_view word, std::initializer_list<std::string_view> table) noexcept {
    for (std::string_view t : table)
      if (matches(word, t)) return t;
    return {};
  }

  status execute(words_t w, netdev::netns& ns_in, int depth) {
    if (depth > kMaxNesting) return status::fail("for/time nested deeper than " + std::to_string(kMaxNesting) + " levels");
    netdev::netns* ns = &ns_in;
    // Prefixes, in a loop (100,000 of them on one line cost no stack): `ip`, its global options
    // -n/-netns NS (the last one wins, as ip's netns_switch) and -4, and `netns exec NS ip`.
    for (;;) {
      if (w.empty()) return {};
      const std::string& v = w[0];
      if (v == "ip") {
        w = w.subspan(1);
      } else if (v == "-n" || v == "-netns" || v == "--netns") {
        if (w.size() < 2) return status::fail("Option \"" + v + "\" requires an argument");
        std::string name = w[1];
        if (auto e = vars_.substitute(name)) return status::fail(*e);
        if (status s = switch_netns(name, ns); !s.ok()) return s;
        w = w.subspan(2);
      } else if (v == "-4" || v == "-family=inet") {
        w = w.subspan(1);  // netsim is IPv4 only
      } else if (v.size() > 1 && v[0] == '-') {
        return not_modelled("global option " + netsim::quoted(v));
      } else if (w.size() >= 2 && pick(v, {"netns"}) == "netns" && netns_action(w[1]) == "exec") {
        if (w.size() < 4) return status::fail("No netns name specified");
        if (w[3] != "ip") return not_modelled("netns exec of " + netsim::quoted(w[3]) + " (only ip)");
        std::string name = w[2];
        if (auto e = vars_.substitute(name)) return status::fail(*e);
        if (status s = switch_netns(name, ns); !s.ok()) return s;
        w = w.subspan(4);
      } else {
        break;
      }
    }
    const std::string& verb = w[0];
    if (verb == "time") return timed(w.subspan(1), *ns, depth + 1);
    if (verb == "for") return loop(w.subspan(1), *ns, depth + 1);
    if (verb == "default") {
      if (w.size() != 3) return status::fail("usage: default NAME VALUE");
      std::string value = w[2];
      if (auto e = vars_.substitute(value)) return status::fail(*e);
      vars_.set_default(w[1], value);
      return {};
    }
    std::vector<std::string> leaf(w.begin(), w.end());
    for (std::string& word : leaf)
      if (auto e = vars_.substitute(word)) return status::fail(*e);
    return dispatch(leaf, *ns);
  }

  status switch_netns(const std::string& name, netdev::netns*& ns) {
    // ip's netns_switch("") opens /var/run/netns/ itself, and setns refuses a directory.
    if (name.empty()) return status::fail("setting the network namespace \"\" failed: Invalid argument");
    netdev::netns* target = reg_.find_netns(name);
    if (target == nullptr) return status::fail("Cannot open network namespace " + netsim::quoted(name) + ": No such file or directory");
    ns = target;
    return {};
  }

  status timed(words_t w, netdev::netns& ns, int depth) {
    if (w.empty()) return status::fail("time needs a command");
    const auto before = reg_.domain().stats();
    const auto elided_before = reg_.counters().dismantle_elided;
    const auto batches_before = reg_.counters().batches;
    const auto growth_start = rcubatch::lfht_total_resize_time();
    reg_.reset_longest_gp_wait();
    const long reader_preemptions_start = reader_preemptions_ ? reader_preemptions_() : 0;
    const rusage usage_start = thread_usage_now();
    const auto cpu_start = thread_cpu_now();
    // The label as the command reads before it runs ("link del dummy{i}" under a for stays so).
    std::vector<std::string> label(w.begin(), w.end());
    for (std::string& word : label) vars_.substitute(word);  // best effort: an unknown name stays as written
    const auto start = std::chrono::steady_clock::now();
    status s = execute(w, ns, depth);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const auto cpu = thread_cpu_now() - cpu_start;
    const rusage usage = thread_usage_now();
    timing t{join(label), elapsed, reg_.domain().stats().grace_periods - before.grace_periods,
             reg_.counters().dismantle_elided - elided_before, cpu};
    t.minor_faults = usage.ru_minflt - usage_start.ru_minflt;
    t.voluntary_switches = usage.ru_nvcsw - usage_start.ru_nvcsw;
    t.involuntary_switches = usage.ru_nivcsw - usage_start.ru_nivcsw;
    t.table_growth = rcubatch::lfht_total_resize_time() - growth_start;
    t.longest_gp_wait = std::chrono::nanoseconds(reg_.counters().longest_gp_wait_ns);
    if (reader_preemptions_) t.reader_preemptions = reader_preemptions_() - reader_preemptions_start;
    if (reg_.counters().batches == batches_before + 1) t.batch = reg_.last_batch();
    if (print_times_)
      err_ << "time: " << t.command << ": " << static_cast<double>(t.elapsed.count()) / 1e6 << " ms ("
           << static_cast<double>(t.writer_cpu.count()) / 1e6 << " ms writer CPU, " << t.minor_faults
           << " minor faults, " << t.voluntary_switches << '/' << t.involuntary_switches
           << " voluntary/involuntary switches, " << static_cast<double>(t.table_growth.count()) / 1e6
           << " ms growing tables, " << t.reader_preemptions << " reader preemptions), " << t.grace_periods << " GPs, " << t.dismantle_elided << " dismantle-elided";
    if (print_times_ && t.batch) print_phases(*t.batch);
    if (print_times_) err_ << '\n';
    if (record_times_) timings_.push_back(std::move(t));
    return s;
  }

  /// Where one batch spent its time (rcubatch::batch_stats), for `time` on a single batch.
  void print_phases(const rcubatch::batch_stats& s) {
    err_ << "; batch of " << s.objects << ":";
    for (std::size_t p = 0; p < rcubatch::kPhases; ++p) {
      const auto ns = s.phase_time[p].count();
      if (ns > 0) err_ << ' ' << rcubatch::to_string(static_cast<rcubatch::phase>(p)) << ' ' << ns / 1000 << "us";
    }
  }

  status loop(words_t w, netdev::netns& ns, int depth) {
    if (w.size() < 4) return status::fail("usage: for VAR FROM TO CMD...");
    std::string from = w[1], to = w[2];
    if (auto e = vars_.substitute(from)) return status::fail(*e);
    if (auto e = vars_.substitute(to)) return status::fail(*e);
    auto a = parse_number(from), b = parse_number(to);
    if (!a || !b) return status::fail("for: bounds must be integers");
    if (*a > *b) return {};
    // The test before the increment: TO = LLONG_MAX ends instead of overflowing the counter.
    for (long long i = *a;; ++i) {
      vars_.set(w[0], std::to_string(i));
      if (status s = execute(w.subspan(3), ns, depth); !s.ok()) return s;
      if (i == *b) break;
    }
    return {};
  }

  static std::string_view netns_action(std::string_view w) noexcept {
    return pick(w, {"list", "show", "lst", "list-id", "help", "add", "set", "delete", "identify", "pids", "exec",
                    "monitor", "attach"});
  }

  status dispatch(const std::vector<std::string>& w, netdev::netns& ns) {
    const std::string& word = w[0];
    if (word == "module") return module(w.size() > 1 ? w[1] : "", words_t(w).subspan(std::min<std::size_t>(2, w.size())));
    if (word == "xmit") return xmit(words_t(w).subspan(1), ns);
    if (word == "ifconfig") return ifconfig(words_t(w).subspan(1), ns);
    // ip.c's command table, in its order (so "a" is address, "r" route, "l" link, "n" neighbour).
    const std::string_view object =
        pick(word, {"address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable", "ntbl",
                    "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tuntap", "tap", "token", "tcpmetrics",
                    "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf", "vrf", "sr", "nexthop",
                    "mptcp", "ioam", "stats", "help"});
    if (object.empty()) return status::fail("Object " + netsim::quoted(word) + " is unknown, try \"ip help\".");
    const bool has_action = w.size() > 1;
    const std::string action_word = has_action ? w[1] : "show";
    words_t args = words_t(w).subspan(std::min<std::size_t>(2, w.size()));
    if (object == "link") {
      const std::string_view a = pick(action_word, {"add", "set", "change", "replace", "delete", "show", "lst", "list",
                                                    "xstats", "afstats", "property", "help"});
      if (a == "add") return link_add(args, ns);
      if (a == "set" || a == "change") return link_set(args, ns);
      if (a == "delete") return link_del(args, ns);
      if (a == "show" || a == "lst" || a == "list") return link_show(args, ns);
      if (a.empty()) return status::fail("Command " + netsim::quoted(action_word) + " is unknown, try \"ip link help\".");
      return not_modelled("ip link " + std::string(a));
    }
    if (object == "address") {
      const std::string_view a = pick(action_word, {"add", "change", "chg", "replace", "delete", "list", "show", "lst",
                                                    "flush", "save", "showdump", "restore", "help"});
      if (a == "add") return addr_add(args, ns);
      if (a == "delete") return addr_del(args, ns);
      if (a == "flush") return addr_flush(args, ns);
      if (a == "list" || a == "show" || a == "lst") return addr_show(args, ns);
      if (a.empty()) return status::fail("Command " + netsim::quoted(action_word) + " is unknown, try \"ip addr help\".");
      return not_modelled("ip address " + std::string(a));
    }
    if (object == "route") {
      const std::string_view a = pick(action_word, {"add", "change", "chg", "replace", "prepend", "append", "test",
                                                    "delete", "list", "show", "lst", "get", "flush", "save", "restore",
                                                    "showdump", "help"});
      if (a == "add" || a == "replace") return route_change(args, ns, a == "replace" ? 1 : 0);
      if (a == "delete") return route_change(args, ns, 2);
      if (a == "list" || a == "show" || a == "lst") return route_show(args, ns);
      if (a == "get") return route_get(args, ns);
      if (a.empty()) return status::fail("Command " + netsim::quoted(action_word) + " is unknown, try \"ip route help\".");
      return not_modelled("ip route " + std::string(a));
    }
    if (object == "netns") {
      const std::string_view a = netns_action(action_word);
      if (a == "add") {
        if (args.size() != 1) return status::fail("usage: netns add NAME");
        return reg_.netns_add(args[0]);
      }
      if (a == "delete") {
        if (args.empty()) return status::fail("No netns name specified");
        for (const std::string& n : args)
          if (n == "-all" || n == "-a") return not_modelled("netns delete -all");
        return reg_.netns_del(std::vector<std::string>(args.begin(), args.end()));
      }
      if (a == "list" || a == "show" || a == "lst") {
        if (!args.empty()) return status::fail("usage: netns list");
        // ip netns list: newest first (readdir order of /var/run/netns is not sorted); netsim by name.
        for (netdev::netns* n : reg_.all_namespaces())
          if (!n->name().empty()) out_ << n->name() << '\n';
        return {};
      }
      if (a.empty()) return status::fail("Command " + netsim::quoted(action_word) + " is unknown, try \"ip netns help\".");
      return not_modelled("ip netns " + std::string(a));
    }
    return not_modelled("ip " + std::string(object));
  }

  /// A count or id as iproute2 reads one (base 0: 0x10 = 16, 010 = 8).
  static std::optional<unsigned long long> ip_integer(const std::string& v, unsigned long long max) {
    auto n = parse_ip_integer(v);
    if (!n || *n > max) return std::nullopt;
    return n;
  }

  status link_add(words_t a, netdev::netns& ns) {
    netdev::link_request req;
    bool have_type = false, name_given = false;
    if (status s = parse_link_request(a, req, have_type, name_given); !s.ok()) return s;
    if (!have_type) return status::fail("link add needs \"type T\"");
    // No name: the registry names it "<kind>%d", as rtnl_newlink does. An empty one given is
    // refused by ip itself (check_ifname), before the kernel would fill one in.
    if (req.name.empty() && name_given) return status::fail("Error: argument \"\" is wrong: \"name\" not a valid ifname");
    return reg_.link_add(ns, req);
  }

  /// iplink_parse, then the kind's parse_opt on the words after `type T`: what `link add` and
  /// `link del` both read — iplink_modify parses a delete exactly as it parses an add.
  /// `name_given`: a NAME word was there, even an empty one.
  status parse_link_request(words_t a, netdev::link_request& req, bool& have_type, bool& name_given) {
    std::size_t i = 0;
    std::optional<unsigned> mtu;
    for (; i < a.size() && !have_type; ++i) {
      if (a[i] == "type") {
        if (++i >= a.size()) return status::fail("type needs a value");
        auto kind = netdev::parse_link_kind(a[i]);
        if (!kind) {
          for (std::string_view known : {"bridge", "bond", "veth", "vxlan", "geneve", "vrf", "team", "ipvlan",
                                         "macvtap", "ipvtap", "gretap", "ip6gre", "ip6tnl", "sit", "vti", "wireguard",
                                         "ifb", "netdevsim", "nlmon", "xfrm", "bareudp", "tun", "tap", "batadv", "hsr",
                                         "macsec", "erspan", "ip6erspan", "ip6gretap", "vcan", "vxcan", "dsa"})
            if (a[i] == known) return not_modelled("link type " + netsim::quoted(a[i]));
          return status::fail("unknown link type " + netsim::quoted(a[i]));
        }
        req.kind = *kind;
        have_type = true;
      } else if (a[i] == "link" || a[i] == "name" || a[i] == "dev") {
        if (i + 1 >= a.size()) return status::fail(a[i] + " needs a value");
        (a[i] == "link" ? req.lower : req.name) = a[i + 1];
        if (a[i] != "link") name_given = true;
        ++i;
      } else if (a[i] == "mtu") {
        if (i + 1 >= a.size()) return status::fail("mtu needs a value");
        auto n = ip_integer(a[i + 1], INT_MAX);
        if (!n) return status::fail("Error: argument " + netsim::quoted(a[i + 1]) + " is wrong: Invalid \"mtu\" value");
        mtu = static_cast<unsigned>(*n);
        ++i;
      } else if (is_link_attribute(a[i])) {
        return not_modelled("ip link add " + netsim::quoted(a[i]));
      } else if (req.name.empty() && !name_given) {
        req.name = a[i];
        name_given = true;
      } else {
        return status::fail("Error: either \"dev\" is duplicate, or " + netsim::quoted(a[i]) + " is a garbage.");
      }
    }
    for (; i < a.size(); ++i) {
      const std::string& k = a[i];
      if (k == "oseq" && (req.kind == netdev::link_kind::gre || req.kind == netdev::link_kind::ipip)) {
        req.tunnel.oseq = true;
        continue;
      }
      if (req.kind == netdev::link_kind::vlan && is_vlan_flag(k)) return not_modelled("vlan option " + netsim::quoted(k));
      if (req.kind == netdev::link_kind::macvlan && (k == "nopromisc" || k == "macaddr" || k == "bcqueuelen" || k == "bclim"))
        return not_modelled("macvlan option " + netsim::quoted(k));
      if ((req.kind == netdev::link_kind::gre || req.kind == netdev::link_kind::ipip) && is_tunnel_flag(k))
        return not_modelled("tunnel option " + netsim::quoted(k));
      if (i + 1 >= a.size()) return status::fail(netsim::quoted(k) + " needs a value");
      const std::string& v = a[++i];
      if (k == "id" && req.kind == netdev::link_kind::vlan) {
        auto n = ip_integer(v, 0xffff);  // get_u16; vlan_validate then refuses 4095 and above
        if (!n) return status::fail("Error: argument " + netsim::quoted(v) + " is wrong: id is invalid");
        req.vid = static_cast<long>(*n);
      } else if (k == "protocol" && req.kind == netdev::link_kind::vlan) {
        if (v == "802.1Q" || v == "802.1q") req.vlan_8021ad = false;
        else if (v == "802.1ad" || v == "802.1AD") req.vlan_8021ad = true;
        else return status::fail("Error: argument " + netsim::quoted(v) + " is wrong: protocol is invalid");
      } else if (k == "mode" && req.kind == netdev::link_kind::macvlan) {
        auto m = netdev::parse_macvlan_mode(v);
        if (!m) return status::fail("Error: argument of \"mode\" must be \"private\", \"vepa\", \"bridge\", \"passthru\" or \"source\", not " + netsim::quoted(v));
        req.mode = *m;
      } else if ((k == "remote" || k == "local") &&
                 (req.kind == netdev::link_kind::gre || req.kind == netdev::link_kind::ipip)) {
        auto addr = netdev::parse_ipv4(v);
        if (!addr) return status::fail("bad address " + netsim::quoted(v));
        (k == "remote" ? req.tunnel.remote : req.tunnel.local) = *addr;
        (k == "remote" ? req.has_remote : req.has_local) = true;
      } else if (k == "key" && (req.kind == netdev::link_kind::gre || req.kind == netdev::link_kind::ipip)) {
        // gre_parse_opt: a dotted quad, or an unsigned integer (base 0).
        std::optional<unsigned long long> n;
        if (v.find('.') != std::string::npos) {
          if (auto k4 = netdev::parse_ipv4(v)) n = *k4;
        } else {
          n = ip_integer(v, 0xffffffffULL);
        }
        if (!n) return status::fail("bad key " + netsim::quoted(v));
        req.tunnel.key = static_cast<std::uint32_t>(*n);
        req.tunnel.has_key = true;
      } else if (k == "ttl" || k == "tos" || k == "dev" || k == "ikey" || k == "okey" || k == "encap" || k == "hoplimit") {
        return not_modelled("tunnel option " + netsim::quoted(k));
      } else {
        return status::fail("unknown option " + netsim::quoted(k) + " for type " + std::string(netdev::to_string(req.kind)));
      }
    }
    if (req.vid >= 0 && req.kind != netdev::link_kind::vlan) return status::fail("\"id\" is only for vlan");
    req.mtu = mtu;
    return {};
  }

  static bool is_link_attribute(std::string_view w) noexcept {
    for (std::string_view k : {"address", "broadcast", "brd", "txqueuelen", "txqlen", "qlen", "numtxqueues",
                               "numrxqueues", "group", "master", "nomaster", "netns", "alias", "arp", "multicast",
                               "allmulticast", "promisc", "dynamic", "trailers", "up", "down", "index", "gso_max_size",
                               "gso_max_segs", "addrgenmode", "protodown", "xdp", "vf", "mode", "state", "link-netns",
                               "link-netnsid", "carrier"})
      if (w == k) return true;
    return false;
  }
  static bool is_vlan_flag(std::string_view w) noexcept {
    for (std::string_view k : {"reorder_hdr", "gvrp", "mvrp", "loose_binding", "bridge_binding", "ingress-qos-map",
                               "egress-qos-map"})
      if (w == k) return true;
    return false;
  }
  static bool is_tunnel_flag(std::string_view w) noexcept {
    for (std::string_view k : {"pmtudisc", "nopmtudisc", "iseq", "seq", "icsum", "ocsum", "csum", "ignore-df",
                               "noignore-df", "external", "nocsum", "noseq", "encap-csum", "encap-udp6-csum"})
      if (w == k) return true;
    return false;
  }

  static std::optional<std::string> device_argument(words_t& a) {
    if (!a.empty() && a[0] == "dev") a = a.subspan(1);
    if (a.empty()) return std::nullopt;
    std::string name = a[0];
    a = a.subspan(1);
    return name;
  }

  /// iplink_parse for `set`: keywords in any order, "dev" optional before the name.
  status link_set(words_t a, netdev::netns& ns) {
    netdev::link_change ch;
    std::string dev;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string& k = a[i];
      if (k == "up" || k == "down") {
        ch.up = k == "up";
      } else if (k == "mtu") {
        if (++i >= a.size()) return status::fail("Command line is not complete. Try option \"help\"");
        auto n = ip_integer(a[i], INT_MAX);
        if (!n) return status::fail("Error: argument " + netsim::quoted(a[i]) + " is wrong: Invalid \"mtu\" value");
        ch.mtu = static_cast<unsigned>(*n);
      } else if (k == "name" || k == "address" || k == "netns" || k == "master" || k == "nomaster" || k == "alias" ||
                 k == "txqueuelen" || k == "txqlen" || k == "qlen" || k == "arp" || k == "multicast" ||
                 k == "allmulticast" || k == "promisc" || k == "group" || k == "vf" || k == "type" || k == "xdp" ||
                 k == "broadcast" || k == "brd" || k == "protodown" || k == "addrgenmode" || k == "carrier" ||
                 k == "dynamic" || k == "trailers") {
        return not_modelled("ip link set ... " + netsim::quoted(k));
      } else {
        const std::string& name = k == "dev" ? (++i < a.size() ? a[i] : k) : k;
        if (k == "dev" && i >= a.size()) return status::fail("Command line is not complete. Try option \"help\"");
        if (!dev.empty()) return status::fail("Error: either \"dev\" is duplicate, or " + netsim::quoted(name) + " is a garbage.");
        dev = name;
      }
    }
    if (dev.empty()) return status::fail("Not enough information: \"dev\" argument is required.");
    return reg_.link_set(ns, dev, ch);
  }

  status ifconfig(words_t a, netdev::netns& ns) {
    // The old net-tools form of seed 004's script: only `ifconfig NAME up|down` maps onto netsim.
    if (a.size() == 2 && (a[1] == "up" || a[1] == "down")) return reg_.link_set(ns, a[0], a[1] == "up");
    return not_modelled("ifconfig other than \"ifconfig NAME up|down\" (write ip addr add / ip link set)");
  }

  /// iplink_modify(RTM_DELLINK): the words parse as for add (`link L`, `type T` and its options,
  /// `mtu`...); `link L` must name a device (else "Cannot find device"), and rtnl_dellink then
  /// looks up the name alone and ignores the rest.
  status link_del(words_t a, netdev::netns& ns) {
    netdev::link_request req;
    bool have_type = false, name_given = false;
    if (status s = parse_link_request(a, req, have_type, name_given); !s.ok()) return s;
    if (req.name.empty()) return status::fail("Not enough information: \"dev\" argument is required.");
    if (!req.lower.empty()) {
      rcubatch::read_guard<Flavor> guard;
      if (ns.lookup_name(req.lower) == nullptr) return status::fail("Cannot find device " + netsim::quoted(req.lower));
    }
    return reg_.link_del(ns, req.name);
  }

  status link_show(words_t a, netdev::netns& ns) {
    std::optional<netdev::link_kind> only;
    std::string dev;
    bool only_up = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == "type" && i + 1 < a.size()) {
        only = netdev::parse_link_kind(a[++i]);
        if (!only) return status::fail("unknown link type " + netsim::quoted(a[i]));
      } else if (a[i] == "up") {
        only_up = true;
      } else if (a[i] == "dev" && i + 1 < a.size() && dev.empty()) {
        dev = a[++i];
      } else if (dev.empty() && a[i] != "dev") {
        dev = a[i];
      } else {
        return status::fail("usage: link show [[dev] NAME] [type T] [up]");
      }
    }
    bool found = false;
    {
      rcubatch::read_guard<Flavor> guard;  // a reader like any other: no writer lock
      ns.for_each_device([&](netdev::net_device& d) {
        // The name is looked up first (ip's ll_name_to_index: "does not exist" only if absent);
        // type and up only filter what is printed, so `link show X type vlan` of a dummy X
        // prints nothing and succeeds (iplink_filter_req / print_linkinfo's kind filter).
        if (!dev.empty() && d.name != dev) return;
        found = true;
        if (only && d.kind != *only) return;
        if (only_up && !d.is_up()) return;
        out_ << d.ifindex << ": " << d.name;
        if (const netdev::upper_link* u = netdev::upper_device::of(d)) out_ << '@' << u->lower->name;
        out_ << ": <" << (d.is_up() ? "UP" : "DOWN") << "> type " << netdev::to_string(d.kind) << " link/ether "
             << netdev::to_string(d.mac);
        if (auto* v = std::get_if<netdev::vlan_link>(&d.link))
          out_ << " vlan protocol " << (v->protocol_8021ad ? "802.1ad" : "802.1Q") << " id " << v->vid;
        if (auto* m = std::get_if<netdev::macvlan_link>(&d.link)) out_ << " macvlan mode " << netdev::to_string(m->mode);
        if (auto* t = std::get_if<netdev::tunnel_link>(&d.link))
          // tnl_print_endpoint (iproute2 ip/tunnel.c): a wildcard endpoint (0.0.0.0) is "any".
          out_ << " remote " << endpoint(t->params.remote) << " local " << endpoint(t->params.local)
               << (t->params.has_key ? " key " + std::to_string(t->params.key) : "") << (t->params.oseq ? " oseq" : "")
               << " tx_packets " << netdev::tunnel_packets(*t);
        out_ << '\n';
      });
    }
    if (!dev.empty() && !found) return status::fail("Device " + netsim::quoted(dev) + " does not exist.");
    return {};
  }

  static std::string endpoint(netdev::ipv4 a) { return a == 0 ? std::string("any") : netdev::to_string(a); }

  static bool is_ipv6(const std::string& w) noexcept { return w.find(':') != std::string::npos; }

  /// ipaddr_modify: keywords in any order; the first other word is the address.
  status addr_add(words_t a, netdev::netns& ns) {
    std::string dev, address;
    bool noprefixroute = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string& k = a[i];
      const bool has_value = i + 1 < a.size();
      if (k == "dev" && has_value) {
        dev = a[++i];
      } else if ((k == "brd" || k == "broadcast" || k == "label" || k == "scope") && has_value) {
        ++i;  // accepted; netsim keeps no broadcast routes, labels or scopes (nothing it models reads them)
      } else if (k == "nodad" || k == "optimistic" || k == "home" || k == "mngtmpaddr") {
        // IPv6 address flags; the kernel ignores them on IPv4 addresses
      } else if (k == "noprefixroute") {
        noprefixroute = true;
      } else if ((k == "valid_lft" || k == "preferred_lft") && has_value) {
        if (a[++i] != "forever") return not_modelled("an address lifetime other than forever (" + k + " " + a[i] + ")");
      } else if (k == "peer" || k == "remote" || k == "metric" || k == "priority" || k == "autojoin" || k == "anycast" ||
                 k == "proto" || k == "noprefixroute") {
        return not_modelled("ip addr add ... " + netsim::quoted(k));
      } else if (k == "local" && has_value && address.empty()) {
        address = a[++i];
      } else if (address.empty()) {
        address = k;
      } else {
        return status::fail("Error: either \"local\" is duplicate, or " + netsim::quoted(k) + " is a garbage.");
      }
    }
    if (address.empty() || dev.empty()) return status::fail("usage: addr add A/P dev NAME");
    if (is_ipv6(address)) return not_modelled("IPv6");
    auto p = netdev::parse_prefix(address);
    if (!p) return status::fail("Error: inet prefix is expected rather than " + netsim::quoted(address) + ".");
    return reg_.addr_add(ns, dev, *p, noprefixroute);
  }

  status addr_del(words_t a, netdev::netns& ns) {
    std::string dev, address;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == "dev" && i + 1 < a.size()) dev = a[++i];
      else if (a[i] == "local" && i + 1 < a.size() && address.empty()) address = a[++i];
      else if (address.empty()) address = a[i];
      else return status::fail("Error: either \"local\" is duplicate, or " + netsim::quoted(a[i]) + " is a garbage.");
    }
    if (address.empty() || dev.empty()) return status::fail("usage: addr del A[/P] dev NAME");
    if (is_ipv6(address)) return not_modelled("IPv6");
    auto p = netdev::parse_prefix(address);
    if (!p) return status::fail("Error: inet prefix is expected rather than " + netsim::quoted(address) + ".");
    return reg_.addr_del(ns, dev, *p, address.find('/') == std::string::npos);
  }

  status addr_flush(words_t a, netdev::netns& ns) {
    if (a.empty()) return status::fail("Flush requires arguments.");
    auto name = device_argument(a);
    if (!name || !a.empty()) return not_modelled("ip addr flush with selectors other than dev");
    return reg_.addr_flush(ns, *name);
  }

  status addr_show(words_t a, netdev::netns& ns) {
    std::string dev;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == "dev" && i + 1 < a.size() && dev.empty()) dev = a[++i];
      else if (dev.empty()) dev = a[i];
      else return not_modelled("ip addr show with selectors other than dev");
    }
    bool found = false;
    reg_.for_each_device_locked(ns, [&](netdev::net_device& d) {
      if (!dev.empty() && d.name != dev) return;
      found = true;
      out_ << d.ifindex << ": " << d.name << ": <" << (d.is_up() ? "UP" : "DOWN") << "> mtu " << d.mtu << '\n';
      for (const auto& x : d.addresses)
        out_ << "    inet " << netdev::to_string(x.prefix) << (x.secondary ? " secondary" : "")
             << (x.noprefixroute ? " noprefixroute" : "") << ' ' << d.name << '\n';
    });
    if (!dev.empty() && !found) return status::fail("Device " + netsim::quoted(dev) + " does not exist.");
    return {};
  }

  /// mode 0 add, 1 replace, 2 del.
  status route_change(words_t a, netdev::netns& ns, int mode) {
    netdev::route_request req;
    bool have_prefix = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string& k = a[i];
      const bool has_value = i + 1 < a.size();
      if (k == "via" && has_value) {
        std::string g = a[++i];
        if (g == "inet" && i + 1 < a.size()) g = a[++i];
        if (is_ipv6(g)) return not_modelled("IPv6");
        auto gw = netdev::parse_ipv4(g);
        if (!gw) return status::fail("Error: inet address is expected rather than " + netsim::quoted(g) + ".");
        req.gateway = *gw;
      } else if ((k == "dev" || k == "oif") && has_value) {
        req.dev = a[++i];
      } else if (k == "table" && has_value) {
        ++i;
        if (a[i] != "main" && a[i] != "254") return not_modelled("route table " + netsim::quoted(a[i]) + " (only main)");
      } else if ((k == "metric" || k == "priority" || k == "preference") && has_value) {
        ++i;
        if (a[i] != "0") return not_modelled("route metrics (metric " + a[i] + ")");
      } else if ((k == "proto" || k == "protocol" || k == "scope") && has_value) {
        ++i;  // accepted: netsim shows its own proto and scope
      } else if (k == "to" && has_value && !have_prefix) {
        continue;  // the next word is the prefix
      } else if (k == "unicast" && !have_prefix) {
        continue;
      } else if (!have_prefix && (k == "local" || k == "broadcast" || k == "blackhole" || k == "unreachable" ||
                                  k == "prohibit" || k == "throw" || k == "nat" || k == "anycast" || k == "multicast")) {
        return not_modelled("route type " + netsim::quoted(k));
      } else if (!have_prefix && !is_route_keyword(k)) {
        if (is_ipv6(k)) return not_modelled("IPv6");
        if (k == "default" || k == "all" || k == "any") {
          req.prefix = {0, 0};
        } else {
          auto p = netdev::parse_prefix(k);
          if (!p) return status::fail("Error: inet prefix is expected rather than " + netsim::quoted(k) + ".");
          // ip refuses a prefix with host bits set (get_prefix_1 / fib_table_insert: "Invalid prefix for given prefix length")
          if (p->address != p->network()) return status::fail("Error: Invalid prefix for given prefix length.");
          req.prefix = *p;
        }
        have_prefix = true;
      } else {
        return not_modelled("ip route ... " + netsim::quoted(k));
      }
    }
    if (!have_prefix) return status::fail("usage: route add|replace|del PREFIX [via GW] [dev NAME]");
    if (mode == 2) return reg_.route_del(ns, req);
    return reg_.route_add(ns, req, mode == 1);
  }

  static bool is_route_keyword(std::string_view k) noexcept {
    for (std::string_view w : {"src", "mtu", "advmss", "rtt", "rttvar", "reordering", "window", "cwnd", "initcwnd",
                               "initrwnd", "features", "quickack", "congctl", "fastopen_no_cookie", "expires", "onlink",
                               "nexthop", "nhid", "realm", "realms", "tos", "dsfield", "encap", "ttl-propagate", "pref",
                               "hoplimit", "ssthresh", "rto_min", "lock", "mark", "from", "iif", "vrf", "uid", "ipproto",
                               "sport", "dport", "connected", "fibmatch"})
      if (k == w) return true;
    return false;
  }

  status route_show(words_t a, netdev::netns& ns) {
    std::string dev;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == "dev" && i + 1 < a.size()) dev = a[++i];
      else if (a[i] == "table" && i + 1 < a.size() && (a[i + 1] == "main" || a[i + 1] == "254")) ++i;
      else return not_modelled("ip route show with selectors other than dev and table main");
    }
    if (!dev.empty()) {
      rcubatch::read_guard<Flavor> guard;
      if (ns.lookup_name(dev) == nullptr) return status::fail("Cannot find device " + netsim::quoted(dev));
    }
    reg_.for_each_device_locked(ns, [&](netdev::net_device& d) {
      if (!dev.empty() && d.name != dev) return;
      for (const netdev::route& r : d.routes) {
        if (r.table != netdev::route_table::main) continue;
        out_ << (r.prefix.length == 0 && r.prefix.address == 0 ? std::string("default") : netdev::to_string(r.prefix));
        if (r.gateway != 0) out_ << " via " << netdev::to_string(r.gateway);
        out_ << " dev " << d.name;
        if (r.origin == netdev::route_origin::kernel) out_ << " proto kernel";
        if (r.gateway == 0) out_ << " scope link";
        out_ << '\n';
      }
    });
    return {};
  }

  status route_get(words_t a, netdev::netns& ns) {
    if (a.size() != 1) return a.empty() ? status::fail("usage: route get A") : not_modelled("ip route get with options");
    if (is_ipv6(a[0])) return not_modelled("IPv6");
    auto addr = netdev::parse_ipv4(a[0]);
    if (!addr) return status::fail("Error: inet prefix is expected rather than " + netsim::quoted(a[0]) + ".");
    rcubatch::read_guard<Flavor> guard;
    const netdev::route* r = ns.routes().lookup(*addr);
    if (r == nullptr) return status::fail("RTNETLINK answers: Network is unreachable");
    if (r->table == netdev::route_table::local) {
      // Local delivery goes through the loopback device, as `ip route get` of a local address shows.
      out_ << "local " << netdev::to_string(*addr) << " dev lo (" << netdev::to_string(r->prefix) << " table local)\n";
      return {};
    }
    out_ << netdev::to_string(*addr);
    if (r->gateway != 0) out_ << " via " << netdev::to_string(r->gateway);
    out_ << " dev " << r->dev->name << " (" << netdev::to_string(r->prefix) << ")\n";
    return {};
  }

  status module(const std::string& action, words_t a) {
    if (a.empty()) return status::fail("usage: module load|unload TYPE");
    std::string type = a[0] == "8021q" ? "vlan" : a[0] == "ip_gre" ? "gre" : a[0];
    auto kind = netdev::parse_link_kind(type);
    if (!kind) return status::fail("unknown module " + netsim::quoted(a[0]));
    if (action == "unload") {
      if (a.size() != 1) return status::fail("usage: module unload TYPE");
      return reg_.module_unload(*kind);
    }
    if (action != "load") return status::fail("usage: module load|unload TYPE");
    long long count = 1;  // dummy's numdummies module parameter defaults to 1
    for (const std::string& opt : a.subspan(1)) {
      if (*kind != netdev::link_kind::dummy || !opt.starts_with("numdummies="))
        return status::fail("unknown module option " + netsim::quoted(opt));
      auto n = parse_ip_integer(std::string_view(opt).substr(11));  // kstrtoint, base 0
      if (!n || *n > 10'000'000ULL) return status::fail("modprobe: ERROR: could not insert 'dummy': Invalid argument");
      count = static_cast<long long>(*n);
    }
    if (*kind == netdev::link_kind::dummy) return reg_.module_load_dummy(static_cast<long>(count));
    if (*kind == netdev::link_kind::ipip || *kind == netdev::link_kind::gre) return reg_.module_load_tunnel(*kind);
    return {};
  }

  status xmit(words_t a, netdev::netns& ns) {
    if (a.size() != 5 || a[1] != "packets" || a[3] != "threads") return status::fail("usage: xmit DEV packets N threads T");
    auto packets = parse_number(a[2]);
    auto threads = parse_number(a[4]);
    if (!packets || *packets < 0) return status::fail("bad packet count \"" + a[2] + "\"");
    if (!threads || *threads < 1 || *threads > 64) return status::fail("threads must be 1..64");
    {
      rcubatch::read_guard<Flavor> guard;
      const netdev::net_device* d = ns.lookup_name(a[0]);
      if (d == nullptr) return status::fail("Cannot find device \"" + a[0] + "\"");
      if (!std::holds_alternative<netdev::tunnel_link>(d->link)) return status::fail(a[0] + " is not a tunnel");
    }
    netdev::xmit_result r;
    {
      rcubatch::offline_scope<Flavor> offline;  // qsbr: the waiting thread must not stall GPs
      r = netdev::run_xmit<Flavor>(ns, a[0], static_cast<std::uint64_t>(*packets), static_cast<unsigned>(*threads));
    }
    out_ << a[0] << ": sent " << r.sent << " packets (" << r.bytes << " bytes), dropped " << r.dropped << ", "
         << (r.locked ? "tx-locked" : "lockless") << ", " << static_cast<double>(r.elapsed.count()) / 1e6 << " ms, "
         << static_cast<double>(r.sender_cpu.count()) / 1e6 << " ms sender CPU ("
         << (r.elapsed.count() > 0 ? static_cast<double>(r.sender_cpu.count()) / static_cast<double>(r.elapsed.count()) : 0.0)
         << " senders on CPU on average)\n";
    return {};
  }

  netdev::registry<Flavor>& reg_;
  variables& vars_;
  std::ostream& out_;
  std::ostream& err_;
  bool force_;
  bool print_times_ = true;
  bool record_times_ = true;
  int errors_ = 0;
  std::vector<timing> timings_;
  std::function<long()> reader_preemptions_;
};

}  // namespace netsim
