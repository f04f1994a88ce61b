// netsim/interpreter.hpp — runs iproute2-syntax commands against a netdev::registry.
//
//   link add [link LOWER] [name] NAME type dummy | vlan id N | macvlan
//            | ipip remote A local B | gre remote A local B [key K] [oseq]
//   link set [dev] NAME up|down      link del [dev] NAME      link show [type T]
//   addr add A/P dev NAME            route get A
//   netns add NAME                   netns del NAME...
//   -n NS CMD                        run CMD in namespace NS
//   module load dummy numdummies=N   module unload TYPE   (every device of TYPE, one batch)
//   xmit DEV packets N threads T     time CMD             (wall and CPU time, faults, switches, GPs)
// plus the script extensions of script.hpp (default, for, {EXPR}).
//
// A failing command changes nothing (the registry validates before it mutates) — a failing `for`
// stops at the failing iteration, keeping the ones before, like separate lines; the interpreter
// prints "file:line: error: ..." and stops, or goes on under -force.
#pragma once

#include <charconv>
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
  /// the hash tables (rcu_table::total_grow_time), mostly in helper threads it waited for.
  long minor_faults = 0;
  long voluntary_switches = 0;
  long involuntary_switches = 0;
  std::chrono::nanoseconds table_growth{};
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
  interpreter(netdev::registry<Flavor>& reg, variables& vars, std::ostream& out, std::ostream& err, bool force)
      : reg_(reg), vars_(vars), out_(out), err_(err), force_(force) {}

  /// Runs the lines in order. Returns false if any failed.
  bool run(const std::vector<script_line>& lines) {
    for (const script_line& l : lines) {
      const status s = execute(l.words, reg_.init_net());
      if (!s.ok()) {
        err_ << l.where.file << ':' << l.where.line << ": error: " << s.error << '\n';
        ++errors_;
        if (!force_) return false;
      }
    }
    return errors_ == 0;
  }

  int errors() const noexcept { return errors_; }
  const std::vector<timing>& timings() const noexcept { return timings_; }
  /// Quiet mode for seed-table: `time` lines are recorded, not printed.
  void set_print_times(bool on) noexcept { print_times_ = on; }

 private:
  status execute(words_t w, netdev::netns& ns) {
    if (w.empty()) return {};
    const std::string& verb = w[0];
    if (verb == "-n" || verb == "-netns") {
      if (w.size() < 3) return status::fail("-n needs a namespace and a command");
      std::string name = w[1];
      if (auto e = vars_.substitute(name)) return status::fail(*e);
      netdev::netns* target = reg_.find_netns(name);
      if (target == nullptr) return status::fail("Cannot open network namespace \"" + name + "\"");
      return execute(w.subspan(2), *target);
    }
    if (verb == "time") return timed(w.subspan(1), ns);
    if (verb == "for") return loop(w.subspan(1), ns);
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
    return dispatch(leaf, ns);
  }

  status timed(words_t w, netdev::netns& ns) {
    if (w.empty()) return status::fail("time needs a command");
    const auto before = reg_.domain().stats();
    const auto elided_before = reg_.counters().dismantle_elided;
    const auto batches_before = reg_.counters().batches;
    const auto growth_start = netdev::rcu_table::total_grow_time();
    const rusage usage_start = thread_usage_now();
    const auto cpu_start = thread_cpu_now();
    // The label as the command reads before it runs ("link del dummy{i}" under a for stays so).
    std::vector<std::string> label(w.begin(), w.end());
    for (std::string& word : label) vars_.substitute(word);  // best effort: an unknown name stays as written
    const auto start = std::chrono::steady_clock::now();
    status s = execute(w, ns);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const auto cpu = thread_cpu_now() - cpu_start;
    const rusage usage = thread_usage_now();
    timing t{join(label), elapsed, reg_.domain().stats().grace_periods - before.grace_periods,
             reg_.counters().dismantle_elided - elided_before, cpu};
    t.minor_faults = usage.ru_minflt - usage_start.ru_minflt;
    t.voluntary_switches = usage.ru_nvcsw - usage_start.ru_nvcsw;
    t.involuntary_switches = usage.ru_nivcsw - usage_start.ru_nivcsw;
    t.table_growth = netdev::rcu_table::total_grow_time() - growth_start;
    if (print_times_)
      err_ << "time: " << t.command << ": " << static_cast<double>(t.elapsed.count()) / 1e6 << " ms ("
           << static_cast<double>(t.writer_cpu.count()) / 1e6 << " ms writer CPU, " << t.minor_faults
           << " minor faults, " << t.voluntary_switches << '/' << t.involuntary_switches
           << " voluntary/involuntary switches, " << static_cast<double>(t.table_growth.count()) / 1e6
           << " ms growing tables), " << t.grace_periods << " GPs, " << t.dismantle_elided << " dismantle-elided";
    if (print_times_ && reg_.counters().batches == batches_before + 1) print_phases(reg_.last_batch());
    if (print_times_) err_ << '\n';
    timings_.push_back(std::move(t));
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

  status loop(words_t w, netdev::netns& ns) {
    if (w.size() < 4) return status::fail("usage: for VAR FROM TO CMD...");
    std::string from = w[1], to = w[2];
    if (auto e = vars_.substitute(from)) return status::fail(*e);
    if (auto e = vars_.substitute(to)) return status::fail(*e);
    auto a = parse_number(from), b = parse_number(to);
    if (!a || !b) return status::fail("for: bounds must be integers");
    for (long long i = *a; i <= *b; ++i) {
      vars_.set(w[0], std::to_string(i));
      if (status s = execute(w.subspan(3), ns); !s.ok()) return s;
    }
    return {};
  }

  status dispatch(const std::vector<std::string>& w, netdev::netns& ns) {
    const std::string& object = w[0];
    const std::string action = w.size() > 1 ? w[1] : "show";
    words_t args = words_t(w).subspan(std::min<std::size_t>(2, w.size()));
    if (object == "link" || object == "l") {
      if (action == "add") return link_add(args, ns);
      if (action == "set") return link_set(args, ns);
      if (action == "del" || action == "delete") return link_del(args, ns);
      if (action == "show" || action == "list" || action == "ls") return link_show(args, ns);
      return status::fail("unknown link command \"" + action + "\"");
    }
    if (object == "addr" || object == "address" || object == "a") {
      if (action == "add") return addr_add(args, ns);
      return status::fail("unknown addr command \"" + action + "\"");
    }
    if (object == "route" || object == "r") {
      if (action == "get") return route_get(args, ns);
      return status::fail("unknown route command \"" + action + "\"");
    }
    if (object == "netns") {
      if (action == "add" && args.size() == 1) return reg_.netns_add(args[0]);
      if ((action == "del" || action == "delete") && !args.empty())
        return reg_.netns_del(std::vector<std::string>(args.begin(), args.end()));
      return status::fail("usage: netns add NAME | netns del NAME...");
    }
    if (object == "module") return module(action, args);
    if (object == "xmit") return xmit(words_t(w).subspan(1), ns);
    return status::fail("unknown command \"" + object + "\"");
  }

  status link_add(words_t a, netdev::netns& ns) {
    netdev::link_request req;
    std::size_t i = 0;
    bool have_type = false;
    for (; i < a.size() && !have_type; ++i) {
      if (a[i] == "type") {
        if (++i >= a.size()) return status::fail("type needs a value");
        auto kind = netdev::parse_link_kind(a[i]);
        if (!kind) return status::fail("unknown link type \"" + a[i] + "\"");
        req.kind = *kind;
        have_type = true;
      } else if (a[i] == "link" || a[i] == "name" || a[i] == "dev") {
        if (i + 1 >= a.size()) return status::fail(a[i] + " needs a value");
        (a[i] == "link" ? req.lower : req.name) = a[i + 1];
        ++i;
      } else if (req.name.empty()) {
        req.name = a[i];
      } else {
        return status::fail("unexpected \"" + a[i] + "\"");
      }
    }
    if (!have_type) return status::fail("link add needs \"type T\"");
    if (req.name.empty()) return status::fail("link add needs a name");
    for (; i < a.size(); ++i) {
      const std::string& k = a[i];
      if (k == "oseq") {
        req.tunnel.oseq = true;
        continue;
      }
      if (i + 1 >= a.size()) return status::fail("\"" + k + "\" needs a value");
      const std::string& v = a[++i];
      if (k == "id") {
        auto n = parse_number(v);
        if (!n) return status::fail("bad vlan id \"" + v + "\"");
        req.vid = static_cast<long>(*n);
      } else if (k == "remote" || k == "local") {
        auto addr = netdev::parse_ipv4(v);
        if (!addr) return status::fail("bad address \"" + v + "\"");
        (k == "remote" ? req.tunnel.remote : req.tunnel.local) = *addr;
        (k == "remote" ? req.has_remote : req.has_local) = true;
      } else if (k == "key") {
        auto n = parse_number(v);
        if (!n || *n < 0 || *n > 0xffffffffLL) return status::fail("bad key \"" + v + "\"");
        req.tunnel.key = static_cast<std::uint32_t>(*n);
        req.tunnel.has_key = true;
      } else {
        return status::fail("unknown option \"" + k + "\" for type " + std::string(netdev::to_string(req.kind)));
      }
    }
    if (req.vid >= 0 && req.kind != netdev::link_kind::vlan) return status::fail("\"id\" is only for vlan");
    return reg_.link_add(ns, req);
  }

  static std::optional<std::string> device_argument(words_t& a) {
    if (!a.empty() && a[0] == "dev") a = a.subspan(1);
    if (a.empty()) return std::nullopt;
    std::string name = a[0];
    a = a.subspan(1);
    return name;
  }

  status link_set(words_t a, netdev::netns& ns) {
    auto name = device_argument(a);
    if (!name || a.size() != 1 || (a[0] != "up" && a[0] != "down")) return status::fail("usage: link set [dev] NAME up|down");
    return reg_.link_set(ns, *name, a[0] == "up");
  }

  status link_del(words_t a, netdev::netns& ns) {
    auto name = device_argument(a);
    if (!name || !a.empty()) return status::fail("usage: link del [dev] NAME");
    return reg_.link_del(ns, *name);
  }

  status link_show(words_t a, netdev::netns& ns) {
    std::optional<netdev::link_kind> only;
    if (a.size() == 2 && a[0] == "type") {
      only = netdev::parse_link_kind(a[1]);
      if (!only) return status::fail("unknown link type \"" + a[1] + "\"");
    } else if (!a.empty()) {
      return status::fail("usage: link show [type T]");
    }
    rcubatch::read_guard<Flavor> guard;  // a reader like any other: no writer lock
    ns.for_each_device([&](netdev::net_device& d) {
      if (only && d.kind != *only) return;
      out_ << d.ifindex << ": " << d.name;
      if (auto* v = std::get_if<netdev::vlan_link>(&d.link)) out_ << '@' << v->lower->name;
      if (auto* m = std::get_if<netdev::macvlan_link>(&d.link)) out_ << '@' << m->lower->name;
      out_ << ": <" << (d.is_up() ? "UP" : "DOWN") << "> type " << netdev::to_string(d.kind) << " link/ether "
           << netdev::to_string(d.mac);
      if (auto* t = std::get_if<netdev::tunnel_link>(&d.link))
        out_ << " remote " << netdev::to_string(t->params.remote) << " local " << netdev::to_string(t->params.local)
             << (t->params.has_key ? " key " + std::to_string(t->params.key) : "") << (t->params.oseq ? " oseq" : "")
             << " tx_packets " << netdev::tunnel_packets(*t);
      out_ << '\n';
    });
    return {};
  }

  status addr_add(words_t a, netdev::netns& ns) {
    if (a.size() != 3 || a[1] != "dev") return status::fail("usage: addr add A/P dev NAME");
    auto p = netdev::parse_prefix(a[0]);
    if (!p) return status::fail("bad address \"" + a[0] + "\"");
    return reg_.addr_add(ns, a[2], *p);
  }

  status route_get(words_t a, netdev::netns& ns) {
    if (a.size() != 1) return status::fail("usage: route get A");
    auto addr = netdev::parse_ipv4(a[0]);
    if (!addr) return status::fail("bad address \"" + a[0] + "\"");
    rcubatch::read_guard<Flavor> guard;
    const netdev::route* r = ns.routes().lookup(*addr);
    if (r == nullptr) return status::fail("RTNETLINK answers: Network is unreachable");
    out_ << a[0] << " dev " << r->dev->name << " (" << netdev::to_string(r->prefix) << ")\n";
    return {};
  }

  status module(const std::string& action, words_t a) {
    if (a.empty()) return status::fail("usage: module load|unload TYPE");
    std::string type = a[0] == "8021q" ? "vlan" : a[0] == "ip_gre" ? "gre" : a[0];
    auto kind = netdev::parse_link_kind(type);
    if (!kind) return status::fail("unknown module \"" + a[0] + "\"");
    if (action == "unload") {
      if (a.size() != 1) return status::fail("usage: module unload TYPE");
      return reg_.module_unload(*kind);
    }
    if (action != "load") return status::fail("usage: module load|unload TYPE");
    long long count = 0;
    for (const std::string& opt : a.subspan(1)) {
      auto n = opt.starts_with("numdummies=") ? parse_number(std::string_view(opt).substr(11)) : std::nullopt;
      if (!n || *kind != netdev::link_kind::dummy) return status::fail("unknown module option \"" + opt + "\"");
      count = *n;
    }
    return *kind == netdev::link_kind::dummy ? reg_.module_load_dummy(static_cast<long>(count)) : status{};
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
  int errors_ = 0;
  std::vector<timing> timings_;
};

}  // namespace netsim
