// examples/netdev/stress/netdev_stress.cpp — netdev_stress: the netdev example (examples/netdev) under the
// same kind of stress as rcubatch_stress (issue 5): reader threads and gre xmit threads run while a
// writer creates and deletes devices, lower devices with their cascades, and whole namespaces.
//
//   netdev_stress --flavor memb --seconds 4                    # ctest short mode (stress.netdev.<flavor>)
//   netdev_stress --flavor qsbr --seconds 60 --readers 2 --xmit 2   # long mode (RELIABILITY.md)
//
// Only the registry's public command API is used (link_add, link_set, link_del, addr_add,
// netns_add, netns_del, module_unload), from one writer thread (the main thread), in random order:
//   - dummies with 0…3 addresses (10.x or 72.x, /8…/32: the prefixes reader_pool probes), some UP;
//   - vlans on dummies (vid 1 first: the readers probe vid 1), deleting the dummy = a cascade;
//   - macvlans on vlans on dummies (a depth-3 cascade), some UP (hashed in the port);
//   - extra namespaces holding dummies, vlans, macvlans and ipip / gre tunnels; deleted one or
//     several in one `netns_del` command (one batch), sometimes naming one twice;
//   - eight xmit slots of gre tunnels in the initial namespace (gre<slot>_<n>, a new name per
//     tunnel; gre<slot>x with --reuse-gre-names), which the xmit threads transmit through
//     (netdev::run_xmit, one sender per call) and which the writer deletes under them — one by one
//     or with `module_unload gre`;
//   - the tunnel modules' fallback devices (tunl0, gre0 in every namespace once the first tunnel of
//     their kind is added; gone at module_unload, or with their namespace): counted by the model;
// Known example bugs this program does not run into by default (RELIABILITY.md):
//   - registry::link_add publishes a device before its link state (tunnel_link, vlan_link,
//     macvlan_link) is constructed; --reuse-gre-names makes senders look up names that are being
//     re-created, and TSan reports the race (run_xmit reading dev->link vs the variant emplace).
//   - netns_del frees the namespace right after its batch, so run_xmit on a tunnel in an extra
//     namespace can read the freed netns; the xmit threads here only use the initial namespace.
//   - module unloads of every link type (dummy unload = the biggest cascade);
//   - commands that must fail (duplicate name, a netns_del naming a missing namespace) and must
//     change nothing.
// Readers: netdev::reader_pool (lookups by ifindex and name, vlan group, macvlan port, FIB) — it
// aborts the process if it reaches a device whose magic is not kAlive (destroyed while reachable).
//
// After every command the writer checks its model against the registry: the command succeeded (or
// failed, for the negative ones), device_count() and route_count() in total and per namespace,
// objects unregistered = the cascade closure the model predicts, one batch per deleting command,
// the batch's GPs ≤ 2 (excluding retire-fallback GPs) and equal to the domain's GP delta, nothing
// refused or skipped. Every 64 commands every modelled device is looked up by name and kind.
// At the end (while readers and senders still run) every namespace goes in one netns_del and
// every remaining device through module unloads; then counts must be zero, created = unregistered,
// no misuse diagnosed. Exit status 1 on any violation (the first 20 are printed), 2 on bad usage.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/readers.hpp"
#include "netdev/registry.hpp"
#include "netdev/xmit.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using netdev::link_kind;

struct options {
  std::string flavor = "memb";
  double seconds = 4;              // 0: no time limit (then --commands must be set)
  std::uint64_t commands = 0;      // 0: no command limit
  unsigned readers = 2;
  unsigned xmit = 2;               // xmit driver threads (each runs run_xmit with 1 sender)
  std::uint64_t xmit_packets = 20'000;  // packets per run_xmit call
  std::size_t max_devices = 3'000; // above this the writer only deletes
  std::size_t max_create = 200;    // devices per create command (log-uniform 1 … max)
  std::uint64_t seed = 0;
  bool verbose = false;
  bool reuse_gre_names = false;    // reproduces the link_add publish-before-init race (see below)
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--flavor memb|qsbr|mb|bp] [--seconds S] [--commands N] [--readers R]\n"
               "          [--xmit T] [--xmit-packets P] [--max-devices D] [--max-create C] [--seed X]\n"
               "          [--verbose] [--reuse-gre-names]\n",
               argv0);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--flavor") o.flavor = value();
    else if (a == "--seconds") o.seconds = std::atof(value());
    else if (a == "--commands") o.commands = std::strtoull(value(), nullptr, 10);
    else if (a == "--readers") o.readers = static_cast<unsigned>(std::atoi(value()));
    else if (a == "--xmit") o.xmit = static_cast<unsigned>(std::atoi(value()));
    else if (a == "--xmit-packets") o.xmit_packets = std::strtoull(value(), nullptr, 10);
    else if (a == "--max-devices") o.max_devices = std::strtoull(value(), nullptr, 10);
    else if (a == "--max-create") o.max_create = std::max<std::size_t>(1, std::strtoull(value(), nullptr, 10));
    else if (a == "--seed") o.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--reuse-gre-names") o.reuse_gre_names = true;
    else usage(argv[0]);
  }
  if (o.seconds <= 0 && o.commands == 0) usage(argv[0]);
  return o;
}

std::atomic<std::uint64_t> g_violations{0};

#define VIOLATION(...)                                                                       \
  do {                                                                                       \
    if (g_violations.fetch_add(1, std::memory_order_relaxed) < 20) {                         \
      std::fprintf(stderr, "netdev_stress: violation: " __VA_ARGS__);                        \
      std::fputc('\n', stderr);                                                              \
    }                                                                                        \
  } while (0)

void misuse_is_a_violation(rcubatch::misuse_kind k, std::string_view msg) noexcept {
  std::fprintf(stderr, "netdev_stress: misuse diagnosed (%.*s): %.*s\n", static_cast<int>(to_string(k).size()),
               to_string(k).data(), static_cast<int>(msg.size()), msg.data());
}

/// A set of names with O(1) insert, erase and random pick.
class name_set {
 public:
  void insert(const std::string& n) {
    if (index_.contains(n)) return;
    index_.emplace(n, names_.size());
    names_.push_back(n);
  }
  void erase(const std::string& n) {
    auto it = index_.find(n);
    if (it == index_.end()) return;
    const std::size_t i = it->second;
    index_.erase(it);
    if (i + 1 != names_.size()) {
      names_[i] = std::move(names_.back());
      index_[names_[i]] = i;
    }
    names_.pop_back();
  }
  bool empty() const noexcept { return names_.empty(); }
  std::size_t size() const noexcept { return names_.size(); }
  template <class Rng>
  const std::string& pick(Rng& rng) const {
    return names_[std::uniform_int_distribution<std::size_t>(0, names_.size() - 1)(rng)];
  }
  const std::vector<std::string>& all() const noexcept { return names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// What the writer expects the registry to hold.
struct dev_model {
  link_kind kind = link_kind::dummy;
  std::string ns;                  // "" = init_net
  std::string lower;               // vlan, macvlan
  std::vector<std::string> uppers; // vlans and macvlans on it
  std::set<long> vids;             // vids used on it (as a lower)
  std::vector<netdev::ipv4_prefix> addrs;
  bool up = false;
};

struct ns_model {
  std::array<name_set, 5> by_kind;  // indexed by link_kind
  std::size_t devices = 0;
  std::size_t routes = 0;
};

constexpr unsigned kGrePool = 8;  // eight slots of gre tunnels in init_net: the xmit targets

template <class Flavor>
class run {
 public:
  explicit run(const options& o) : o_(o), rng_(o.seed) { nss_[""]; }

  int go() {
    rcubatch::thread_registration<Flavor> registration;  // the writer: the main thread
    const auto start = clock_type::now();
    {
      netdev::registry<Flavor> reg;
      reg_ = &reg;
      rcubatch::drain_options drain;
      drain.stall_report_interval = std::chrono::seconds(10);  // xmit bursts are short; a 10 s wait is a leak
      reg.set_drain_options(drain);
      netdev::reader_pool<Flavor> readers(reg, o_.readers);
      std::vector<std::thread> senders;
      for (unsigned t = 0; t < o_.xmit; ++t) senders.emplace_back([this, t] { xmit_loop(t); });

      const auto deadline = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o_.seconds));
      while ((o_.commands == 0 || commands_ < o_.commands) && (o_.seconds <= 0 || clock_type::now() < deadline) &&
             g_violations.load(std::memory_order_relaxed) == 0) {
        step();
        rcubatch::quiescent_state<Flavor>();
        if (commands_ % 64 == 0) check_names();
      }
      teardown();  // readers and senders still running
      stop_.store(true, std::memory_order_relaxed);
      for (auto& s : senders) s.join();
      readers.stop();
      lookups_ = readers.lookups();
      hits_ = readers.hits();
      // The readers' use-after-free checks prove something only if they found devices.
      if (o_.readers > 0 && hits_ == 0) VIOLATION("readers never found a device (%" PRIu64 " lookups)", lookups_);
      check_end();
      total_gps_ = reg.domain().stats().grace_periods;  // batches + dev_deactivate GPs of link_set down
      reg_ = nullptr;
    }  // ~registry: nothing left to unregister; domain barrier
    const double secs = std::chrono::duration<double>(clock_type::now() - start).count();
    for (std::size_t k = 0; k < rcubatch::kMisuseKinds; ++k)
      if (const auto n = rcubatch::misuse_count(static_cast<rcubatch::misuse_kind>(k)); n != 0)
        VIOLATION("%lu misuse diagnostics of kind %zu", n, k);
    const std::uint64_t v = g_violations.load();
    std::printf(
        "netdev_stress %s: %.1f s, seed %" PRIu64 ", %" PRIu64 " commands (%" PRIu64 " failing as expected), devices created %" PRIu64
        " destroyed %" PRIu64 " (dummy %" PRIu64 " vlan %" PRIu64 " macvlan %" PRIu64 " ipip %" PRIu64 " gre %" PRIu64
        "), addresses %" PRIu64 ", namespaces created %" PRIu64 " deleted %" PRIu64 " (max %" PRIu64
        " in one command), batches %" PRIu64 " (largest %" PRIu64 ", cascade dependents %" PRIu64 ", max rounds %" PRIu64
        "), GPs %" PRIu64 " (in batches %" PRIu64 ", max per batch %u), dismantle-elided %" PRIu64
        ", longest ref drain %.1f ms, readers %u lookups %" PRIu64 " hits %" PRIu64 ", xmit %u: %" PRIu64
        " calls, %" PRIu64 " packets sent, %" PRIu64 " dropped, %" PRIu64 " calls cut short by a delete, violations %" PRIu64 "\n",
        Flavor::name.data(), secs, o_.seed, commands_, expected_failures_, created_, unregistered_, per_kind_[0], per_kind_[1],
        per_kind_[2], per_kind_[3], per_kind_[4], addrs_added_, ns_created_, ns_deleted_, max_ns_per_cmd_, batches_,
        largest_batch_, dependents_, max_rounds_, total_gps_, batch_gps_, max_gps_, dismantle_elided_,
        static_cast<double>(longest_drain_ns_) / 1e6, o_.readers, lookups_, hits_, o_.xmit, xmit_calls_.load(),
        xmit_sent_.load(), xmit_dropped_.load(), xmit_cut_.load(), v);
    return v == 0 ? 0 : 1;
  }

 private:
  // ---- xmit ------------------------------------------------------------------------------------

  void xmit_loop(unsigned t) {
    std::minstd_rand rng(static_cast<unsigned>(o_.seed) * 31 + t + 7);
    netdev::netns& init = reg_->init_net();
    while (!stop_.load(std::memory_order_relaxed)) {
      std::string name;
      {
        std::lock_guard lock(pool_mutex_);
        const std::uint32_t live = live_gre_.load(std::memory_order_relaxed);
        if (live != 0) {
          unsigned i = rng() % kGrePool;
          while ((live >> i & 1u) == 0) i = (i + 1) % kGrePool;
          name = pool_names_[i];
        }
      }
      if (name.empty()) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      const netdev::xmit_result r = netdev::run_xmit<Flavor>(init, name, o_.xmit_packets, 1);
      xmit_calls_.fetch_add(1, std::memory_order_relaxed);
      xmit_sent_.fetch_add(r.sent, std::memory_order_relaxed);
      xmit_dropped_.fetch_add(r.dropped, std::memory_order_relaxed);
      if (r.sent != 0 && r.dropped != 0) xmit_cut_.fetch_add(1, std::memory_order_relaxed);
      if (r.sent == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // ---- random helpers --------------------------------------------------------------------------

  std::size_t uniform(std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_); }
  bool chance(unsigned percent) { return uniform(0, 99) < percent; }
  /// log-uniform in 1 … max: small and large commands equally frequent.
  std::size_t log_uniform(std::size_t max) {
    const double x = std::uniform_real_distribution<double>(0.0, std::log(static_cast<double>(max) + 1.0))(rng_);
    return std::clamp<std::size_t>(static_cast<std::size_t>(std::exp(x)), 1, max);
  }
  std::string new_name(char prefix) { return std::string(1, prefix) + std::to_string(next_name_++); }
  std::string pick_ns() {
    if (nss_.size() == 1 || chance(50)) return "";
    auto it = nss_.begin();
    std::advance(it, static_cast<long>(uniform(1, nss_.size() - 1)));
    return it->first;
  }
  netdev::netns& ns_of(const std::string& name) { return *reg_->find_netns(name); }
  std::size_t total_devices() const noexcept { return devs_.size(); }
  static std::size_t tunnel_slot(link_kind k) noexcept { return k == link_kind::gre ? 1 : 0; }
  static bool is_tunnel(link_kind k) noexcept { return k == link_kind::ipip || k == link_kind::gre; }
  /// Devices each namespace has beyond the model's: its lo, and one fallback per loaded tunnel module.
  std::size_t per_namespace_devices() const noexcept {
    return 1 + static_cast<std::size_t>(tunnel_loaded_[0]) + static_cast<std::size_t>(tunnel_loaded_[1]);
  }

  // ---- model updates ---------------------------------------------------------------------------

  void model_add(const std::string& name, dev_model d) {
    ns_model& n = nss_[d.ns];
    n.by_kind[static_cast<std::size_t>(d.kind)].insert(name);
    ++n.devices;
    if (!d.lower.empty()) devs_.at(d.lower).uppers.push_back(name);
    ++created_;
    ++per_kind_[static_cast<std::size_t>(d.kind)];
    devs_.emplace(name, std::move(d));
  }

  /// The cascade closure of `roots`: each device plus every device stacked on it, recursively.
  void closure(const std::string& root, std::set<std::string>& out) {
    if (!out.insert(root).second) return;
    for (const std::string& u : devs_.at(root).uppers) closure(u, out);
  }

  void model_remove(const std::set<std::string>& doomed) {
    for (const std::string& name : doomed) {
      dev_model& d = devs_.at(name);
      if (!d.lower.empty() && !doomed.contains(d.lower)) {
        dev_model& lower = devs_.at(d.lower);
        std::erase(lower.uppers, name);
        if (d.kind == link_kind::vlan) lower.vids.erase(vid_of_.at(name));
      }
    }
    for (const std::string& name : doomed) {
      dev_model& d = devs_.at(name);
      ns_model& n = nss_.at(d.ns);
      n.by_kind[static_cast<std::size_t>(d.kind)].erase(name);
      --n.devices;
      if (d.ns.empty() && d.kind == link_kind::gre && name.starts_with("gre")) {
        std::lock_guard lock(pool_mutex_);
        live_gre_.fetch_and(~(1u << (name[3] - '0')), std::memory_order_relaxed);
      }
      vid_of_.erase(name);
      devs_.erase(name);
    }
  }

  // ---- commands --------------------------------------------------------------------------------

  void expect_ok(const netdev::status& s, const char* what, const std::string& arg) {
    if (!s.ok()) VIOLATION("%s %s failed: %s", what, arg.c_str(), s.error.c_str());
  }

  bool add_device(const std::string& ns, netdev::link_request req, const std::string& lower_name = {}) {
    dev_model d;
    d.kind = req.kind;
    d.ns = ns;
    d.lower = lower_name;
    req.lower = lower_name;
    const netdev::status s = reg_->link_add(ns_of(ns), req);
    ++commands_;
    expect_ok(s, "link_add", req.name);
    if (!s.ok()) return false;
    const std::string name = req.name;
    if (is_tunnel(req.kind) && !tunnel_loaded_[tunnel_slot(req.kind)]) {  // the module loads: a fallback per namespace
      tunnel_loaded_[tunnel_slot(req.kind)] = true;
      created_ += nss_.size();
    }
    if (req.kind == link_kind::vlan) {
      devs_.at(lower_name).vids.insert(req.vid);
      vid_of_[name] = req.vid;
    }
    model_add(name, std::move(d));
    check_counts("link_add");
    return true;
  }

  void maybe_addresses_and_up(const std::string& ns, const std::string& name) {
    const std::size_t n = uniform(0, 3) == 0 ? 0 : uniform(1, 3);
    for (std::size_t i = 0; i < n; ++i) {
      netdev::ipv4_prefix p;
      p.address = (chance(50) ? 10u << 24 : 72u << 24) | static_cast<std::uint32_t>(rng_() & 0xffffff);
      static constexpr unsigned kLengths[] = {8, 16, 16, 24, 24, 24, 32};
      p.length = kLengths[uniform(0, std::size(kLengths) - 1)];
      dev_model& d = devs_.at(name);
      if (std::any_of(d.addrs.begin(), d.addrs.end(),
                      [&](const netdev::ipv4_prefix& a) { return a.address == p.address && a.length == p.length; }))
        continue;
      const netdev::status s = reg_->addr_add(ns_of(ns), name, p);
      ++commands_;
      expect_ok(s, "addr_add", name);
      if (s.ok()) {
        d.addrs.push_back(p);
        ++addrs_added_;
      }
      check_counts("addr_add");
    }
    if (chance(40)) set_up(ns, name, true);
  }

  void set_up(const std::string& ns, const std::string& name, bool up) {
    const netdev::status s = reg_->link_set(ns_of(ns), name, up);
    ++commands_;
    const dev_model& d = devs_.at(name);
    // vlan_dev_open: a vlan cannot go up while its lower device is down.
    if (up && !d.up && d.kind == link_kind::vlan && !devs_.at(d.lower).up) {
      if (s.ok()) VIOLATION("link_set %s up succeeded on a DOWN lower", name.c_str());
      ++expected_failures_;
      check_counts("link_set");
      return;
    }
    expect_ok(s, "link_set", name);
    if (s.ok()) {
      // vlan_device_event: the vlans above follow their lower down and up, level by level.
      std::vector<std::string> work{name};
      while (!work.empty()) {
        dev_model& x = devs_.at(work.back());
        const bool changed = x.up != up || work.back() == name;
        x.up = up;
        work.pop_back();
        if (!changed) continue;
        for (const std::string& u : x.uppers)
          if (devs_.at(u).kind == link_kind::vlan && devs_.at(u).up != up) work.push_back(u);
      }
    }
    check_counts("link_set");
  }

  /// Main-table routes the model expects in `ns`: fib_add_ifaddr gives an UP device one prefix route
  /// per distinct subnet of its addresses (the first is primary, the others secondaries), none for /32.
  std::size_t expected_routes(const std::string& ns) const {
    std::size_t n = 0;
    for (const auto& [name, d] : devs_) {
      if (d.ns != ns || !d.up) continue;
      std::set<std::pair<netdev::ipv4, unsigned>> subnets;
      for (const netdev::ipv4_prefix& a : d.addrs)
        if (a.length < 32) subnets.insert({a.network(), a.length});
      n += subnets.size();
    }
    return n;
  }

  void create_dummies() {
    const std::string ns = pick_ns();
    const std::size_t n = log_uniform(o_.max_create);
    for (std::size_t i = 0; i < n; ++i) {
      netdev::link_request r;
      r.name = new_name('d');
      if (add_device(ns, r)) maybe_addresses_and_up(ns, r.name);
    }
  }

  /// vlans on one random dummy (or on a random vlan: QinQ, rarely).
  void create_vlans() {
    const std::string ns = pick_ns();
    ns_model& m = nss_.at(ns);
    const auto& pool = !m.by_kind[1].empty() && chance(10) ? m.by_kind[1] : m.by_kind[0];
    if (pool.empty()) return create_dummies();
    const std::string lower = pool.pick(rng_);
    const std::size_t n = log_uniform(o_.max_create);
    for (std::size_t i = 0; i < n; ++i) {
      const std::set<long>& used = devs_.at(lower).vids;
      long vid = 1;
      if (used.contains(vid)) {
        if (used.size() >= 4094) return;
        do vid = static_cast<long>(uniform(2, 4094)); while (used.contains(vid));
      }
      netdev::link_request r;
      r.name = new_name('v');
      r.kind = link_kind::vlan;
      r.vid = vid;
      if (add_device(ns, r, lower)) maybe_addresses_and_up(ns, r.name);
    }
  }

  /// macvlans on random vlans (vlan on dummy: a depth-3 stack) or on dummies.
  void create_macvlans() {
    const std::string ns = pick_ns();
    ns_model& m = nss_.at(ns);
    const std::size_t n = log_uniform(std::max<std::size_t>(1, o_.max_create / 4));
    for (std::size_t i = 0; i < n; ++i) {
      const auto& pool = !m.by_kind[1].empty() && chance(75) ? m.by_kind[1] : m.by_kind[0];
      if (pool.empty()) return;
      netdev::link_request r;
      r.name = new_name('m');
      r.kind = link_kind::macvlan;
      if (add_device(ns, r, pool.pick(rng_))) maybe_addresses_and_up(ns, r.name);
    }
  }

  netdev::link_request tunnel(std::string name, link_kind k) {
    netdev::link_request r;
    r.name = std::move(name);
    r.kind = k;
    r.tunnel.remote = (192u << 24) | (next_remote_++ & 0xffffff);  // never reused: keys stay unique
    r.tunnel.local = (10u << 24) | 1;
    if (k == link_kind::gre && chance(30)) {
      r.tunnel.has_key = true;
      r.tunnel.key = static_cast<std::uint32_t>(rng_());
    }
    if (k == link_kind::gre && chance(25)) r.tunnel.oseq = true;  // tx-locked xmit path
    r.has_remote = r.has_local = true;
    return r;
  }

  /// A namespace with dummies, vlans, macvlans on vlans, ipip and gre tunnels.
  void create_namespace() {
    const std::string name = "ns" + std::to_string(next_ns_++);
    const netdev::status s = reg_->netns_add(name);
    ++commands_;
    expect_ok(s, "netns_add", name);
    if (!s.ok()) return;
    nss_[name];
    ++ns_created_;
    created_ += per_namespace_devices();  // its lo (loopback_net_init) and a fallback per loaded tunnel module
    check_counts("netns_add");
    const std::size_t n = log_uniform(std::max<std::size_t>(1, o_.max_create / 4));
    for (std::size_t i = 0; i < n; ++i) {
      netdev::link_request d;
      d.name = new_name('d');
      if (!add_device(name, d)) return;
      maybe_addresses_and_up(name, d.name);
      if (chance(50)) {
        netdev::link_request v;
        v.name = new_name('v');
        v.kind = link_kind::vlan;
        v.vid = 1;
        if (add_device(name, v, d.name) && chance(60)) {
          netdev::link_request mv;
          mv.name = new_name('m');
          mv.kind = link_kind::macvlan;
          if (add_device(name, mv, v.name)) maybe_addresses_and_up(name, mv.name);
        }
      }
      if (chance(30)) add_device(name, tunnel(new_name('i'), link_kind::ipip));
      if (chance(30)) {
        const std::string g = new_name('g');
        if (add_device(name, tunnel(g, link_kind::gre))) maybe_addresses_and_up(name, g);
      }
    }
  }

  /// Fills a free slot of the xmit pool (gre<slot>_<n>, or gre<slot>x, in init_net).
  void create_pool_gre() {
    const std::uint32_t live = live_gre_.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < kGrePool; ++i) {
      const unsigned slot = (static_cast<unsigned>(rng_()) + i) % kGrePool;
      if (live >> slot & 1u) continue;
      // Unique names by default: a sender only ever looks up a tunnel whose link_add returned
      // before it learnt the name (pool_mutex_), so it never meets one that link_add is still
      // initializing. --reuse-gre-names reuses gre0x…gre7x: a sender holding a stale name can
      // then find a re-created tunnel between its publication and its tunnel_link (the race).
      // ("gre<slot>x" when reused: plain "gre0" is ip_gre's fallback device, which exists once a gre is added)
      const std::string name =
          "gre" + std::to_string(slot) + (o_.reuse_gre_names ? "x" : "_" + std::to_string(next_name_++));
      if (add_device("", tunnel(name, link_kind::gre))) {
        std::lock_guard lock(pool_mutex_);
        pool_names_[slot] = name;
        live_gre_.fetch_or(1u << slot, std::memory_order_relaxed);
        if (chance(50)) set_up("", name, true);
      }
      return;
    }
  }

  /// Runs one deleting command and checks it against the model's prediction.
  /// `gone_ns`: namespaces the command deletes (dropped from the model before the count checks).
  /// `fallbacks`: tunnel fallback devices the command removes beyond the namespaces' (module_unload).
  template <class Command>
  void deleting(const char* what, const std::string& arg, const std::set<std::string>& doomed, Command&& cmd,
                const std::vector<std::string>& gone_ns = {}, std::size_t fallbacks = 0) {
    const auto before = reg_->counters();
    const auto gps_before = reg_->domain().stats().grace_periods;
    // Each deleted namespace's lo and tunnel fallbacks go in the same batch.
    const std::size_t los =
        std::set<std::string>(gone_ns.begin(), gone_ns.end()).size() * per_namespace_devices() + fallbacks;
    const netdev::status s = cmd();
    ++commands_;
    expect_ok(s, what, arg);
    if (!s.ok()) return;
    const auto after = reg_->counters();
    const std::uint64_t gps = reg_->domain().stats().grace_periods - gps_before;
    const std::uint64_t objects = after.objects_unregistered - before.objects_unregistered;
    if (objects != doomed.size() + los)
      VIOLATION("%s %s: %" PRIu64 " devices unregistered, the model expected %zu", what, arg.c_str(), objects, doomed.size() + los);
    const std::uint64_t batches = after.batches - before.batches;
    if (batches != (doomed.empty() && los == 0 ? 0u : 1u))
      VIOLATION("%s %s: %" PRIu64 " batches for %zu devices", what, arg.c_str(), batches, doomed.size());
    if (batches == 1) {
      const rcubatch::batch_stats& b = reg_->last_batch();
      ++batches_;
      const unsigned bounded = b.grace_periods - b.retire_fallback_gps;
      if (bounded > 2) VIOLATION("%s %s: a batch of %zu waited for %u GPs (> 2)", what, arg.c_str(), b.objects, b.grace_periods);
      if (gps != b.grace_periods)
        VIOLATION("%s %s: the domain ran %" PRIu64 " GPs, the batch reports %u", what, arg.c_str(), gps, b.grace_periods);
      if (b.objects != doomed.size() + los || b.refused || b.skipped != 0)
        VIOLATION("%s %s: batch of %zu (refused %d, skipped %zu), model %zu", what, arg.c_str(), b.objects, b.refused,
                  b.skipped, doomed.size() + los);
      batch_gps_ += b.grace_periods;
      max_gps_ = std::max(max_gps_, b.grace_periods);
      largest_batch_ = std::max<std::uint64_t>(largest_batch_, b.objects);
      dependents_ += b.dependents_added;
      max_rounds_ = std::max<std::uint64_t>(max_rounds_, b.rounds);
      longest_drain_ns_ = std::max<std::uint64_t>(longest_drain_ns_, static_cast<std::uint64_t>(b.longest_drain_wait.count()));
      dismantle_elided_ += b.dismantle_elided;
    } else if (gps != 0) {
      VIOLATION("%s %s: %" PRIu64 " GPs without a batch", what, arg.c_str(), gps);
    }
    unregistered_ += objects;
    model_remove(doomed);
    const std::set<std::string> distinct(gone_ns.begin(), gone_ns.end());
    for (const std::string& n : distinct) {
      if (reg_->find_netns(n) != nullptr) VIOLATION("netns %s still exists after %s", n.c_str(), what);
      if (nss_.at(n).devices != 0 || expected_routes(n) != 0) VIOLATION("model: netns %s not empty", n.c_str());
      nss_.erase(n);
    }
    ns_deleted_ += distinct.size();
    max_ns_per_cmd_ = std::max<std::uint64_t>(max_ns_per_cmd_, distinct.size());
    check_counts(what);
  }

  void delete_device() {
    const std::string ns = pick_ns();
    ns_model& m = nss_.at(ns);
    // Prefer lower devices (cascades); tunnels and uppers too.
    static constexpr unsigned kWeights[] = {45, 20, 15, 10, 10};
    std::size_t k = 0;
    for (unsigned r = static_cast<unsigned>(uniform(0, 99)), acc = 0; k < 5; ++k)
      if (r < (acc += kWeights[k])) break;
    if (k >= 5 || m.by_kind[k].empty()) return;
    const std::string name = m.by_kind[k].pick(rng_);
    std::set<std::string> doomed;
    closure(name, doomed);
    deleting("link_del", name, doomed, [&] { return reg_->link_del(ns_of(ns), name); });
  }

  void delete_pool_gre() {
    const std::uint32_t live = live_gre_.load(std::memory_order_relaxed);
    if (live == 0) return create_pool_gre();
    unsigned i = static_cast<unsigned>(rng_()) % kGrePool;
    while ((live >> i & 1u) == 0) i = (i + 1) % kGrePool;
    std::string name;
    {
      std::lock_guard lock(pool_mutex_);
      name = pool_names_[i];
    }
    deleting("link_del", name, {name}, [&] { return reg_->link_del(reg_->init_net(), name); });
  }

  void delete_namespaces() {
    if (nss_.size() == 1) return create_namespace();
    std::vector<std::string> names;
    const std::size_t n = uniform(1, std::min<std::size_t>(4, nss_.size() - 1));
    for (auto it = std::next(nss_.begin()); it != nss_.end() && names.size() < n; ++it)
      if (chance(60)) names.push_back(it->first);
    if (names.empty()) names.push_back(std::next(nss_.begin())->first);
    if (chance(10)) names.push_back(names.front());  // named twice: deleted once
    std::set<std::string> doomed;
    for (const auto& [name, d] : devs_)
      if (std::find(names.begin(), names.end(), d.ns) != names.end()) doomed.insert(name);
    std::string arg;
    for (const auto& n2 : names) arg += n2 + " ";
    deleting("netns_del", arg, doomed, [&] { return reg_->netns_del(names); }, names);
  }

  void unload(link_kind kind) {
    std::set<std::string> doomed;
    for (const auto& [name, d] : devs_)
      if (d.kind == kind) closure(name, doomed);
    const bool fallbacks = is_tunnel(kind) && tunnel_loaded_[tunnel_slot(kind)];
    if (is_tunnel(kind)) tunnel_loaded_[tunnel_slot(kind)] = false;  // before deleting's count checks
    deleting("module_unload", std::string(netdev::to_string(kind)), doomed, [&] { return reg_->module_unload(kind); },
             {}, fallbacks ? nss_.size() : 0);
  }

  /// Commands that must fail and change nothing.
  void failing_command() {
    const auto before = reg_->counters();
    netdev::status s;
    if (chance(50) && !devs_.empty()) {
      const auto& [name, d] = *devs_.begin();
      netdev::link_request r;
      r.name = name;  // taken
      s = reg_->link_add(ns_of(d.ns), r);
    } else {
      std::vector<std::string> names;
      if (nss_.size() > 1) names.push_back(std::next(nss_.begin())->first);
      names.push_back("missing" + std::to_string(next_ns_));
      s = reg_->netns_del(names);
    }
    ++commands_;
    ++expected_failures_;
    if (s.ok()) VIOLATION("a command that must fail succeeded");
    if (reg_->counters().batches != before.batches || reg_->counters().objects_unregistered != before.objects_unregistered)
      VIOLATION("a failing command ran a batch");
    check_counts("failing command");
  }

  void step() {
    const bool full = total_devices() >= o_.max_devices;
    const unsigned r = static_cast<unsigned>(uniform(0, 999));
    if (full) {
      if (r < 350) delete_device();
      else if (r < 650) delete_namespaces();
      else if (r < 750) delete_pool_gre();
      else if (r < 800) unload(link_kind::dummy);
      else if (r < 850) unload(link_kind::vlan);
      else delete_device();
      return;
    }
    if (r < 150) create_dummies();
    else if (r < 260) create_vlans();
    else if (r < 340) create_macvlans();
    else if (r < 420) create_namespace();
    else if (r < 500) create_pool_gre();
    else if (r < 700) delete_device();
    else if (r < 780) delete_pool_gre();
    else if (r < 850) delete_namespaces();
    else if (r < 880) {
      if (!devs_.empty()) {
        // set a random device of a random namespace up or down (down costs dev_deactivate's GP)
        const std::string ns = pick_ns();
        ns_model& m = nss_.at(ns);
        const std::size_t k = uniform(0, 4);
        if (!m.by_kind[k].empty()) {
          const std::string name = m.by_kind[k].pick(rng_);
          set_up(ns, name, !devs_.at(name).up);
        }
      }
    } else if (r < 890) unload(link_kind::dummy);
    else if (r < 905) unload(link_kind::vlan);
    else if (r < 920) unload(link_kind::macvlan);
    else if (r < 935) unload(link_kind::ipip);
    else if (r < 950) unload(link_kind::gre);
    else failing_command();
  }

  // ---- checks ----------------------------------------------------------------------------------

  void check_counts(const char* after) {
    std::size_t routes = 0;
    for (const auto& [name, m] : nss_) routes += expected_routes(name);
    const std::size_t expected = devs_.size() + nss_.size() * per_namespace_devices();  // lo, fallbacks
    if (reg_->device_count() != expected)
      VIOLATION("after %s: device_count %zu, model %zu", after, reg_->device_count(), expected);
    if (reg_->route_count() != routes) VIOLATION("after %s: route_count %zu, model %zu", after, reg_->route_count(), routes);
    if (reg_->all_namespaces().size() != nss_.size())
      VIOLATION("after %s: %zu namespaces, model %zu", after, reg_->all_namespaces().size(), nss_.size());
  }

  void check_names() {
    for (const auto& [name, m] : nss_) {
      netdev::netns* ns = reg_->find_netns(name);
      if (ns == nullptr) {
        VIOLATION("namespace '%s' missing", name.c_str());
        continue;
      }
      if (ns->device_count() != m.devices + per_namespace_devices())
        VIOLATION("netns '%s': %zu devices, model %zu, lo and fallbacks", name.c_str(), ns->device_count(), m.devices);
      if (ns->routes().size() != expected_routes(name))
        VIOLATION("netns '%s': %zu routes, model %zu", name.c_str(), ns->routes().size(), expected_routes(name));
    }
    for (const auto& [name, d] : devs_) {
      const netdev::net_device* dev = ns_of(d.ns).find_locked(name);
      if (dev == nullptr || dev->kind != d.kind || dev->is_up() != d.up || dev->addresses.size() != d.addrs.size())
        VIOLATION("device %s in '%s' missing or different from the model", name.c_str(), d.ns.c_str());
    }
  }

  void teardown() {
    std::vector<std::string> extra;
    for (auto it = std::next(nss_.begin()); it != nss_.end(); ++it) extra.push_back(it->first);
    if (!extra.empty()) {
      std::set<std::string> doomed;
      for (const auto& [name, d] : devs_)
        if (!d.ns.empty()) doomed.insert(name);
      deleting("netns_del", "(all)", doomed, [&] { return reg_->netns_del(extra); }, extra);
    }
    for (link_kind k : {link_kind::dummy, link_kind::vlan, link_kind::macvlan, link_kind::ipip, link_kind::gre}) unload(k);
  }

  void check_end() {
    if (reg_->device_count() != 1 || reg_->route_count() != 0 || !devs_.empty())  // init_net's lo stays
      VIOLATION("at exit: %zu devices, %zu routes left (model %zu)", reg_->device_count(), reg_->route_count(), devs_.size());
    if (reg_->all_namespaces().size() != 1) VIOLATION("at exit: %zu namespaces left", reg_->all_namespaces().size());
    if (created_ != unregistered_ || reg_->counters().objects_unregistered != created_)
      VIOLATION("created %" PRIu64 ", unregistered %" PRIu64 " (registry: %" PRIu64 ")", created_, unregistered_,
                reg_->counters().objects_unregistered);
    if (reg_->counters().batches != batches_)
      VIOLATION("registry ran %" PRIu64 " batches, the checks saw %" PRIu64, reg_->counters().batches, batches_);
    if (reg_->counters().stall_reports != 0)
      VIOLATION("%" PRIu64 " stall reports (a reference held for 10 s)", reg_->counters().stall_reports);
    if (live_gre_.load() != 0) VIOLATION("xmit pool not empty at exit");
    {
      rcubatch::read_guard<Flavor> guard;  // lookup_index is a reader's call (lfht_index checks it)
      if (reg_->init_net().lookup_index(2) != nullptr) VIOLATION("ifindex 2 still published");  // 1 is lo
    }
  }

  const options o_;
  std::mt19937_64 rng_;
  netdev::registry<Flavor>* reg_ = nullptr;
  std::unordered_map<std::string, dev_model> devs_;
  std::unordered_map<std::string, long> vid_of_;
  std::map<std::string, ns_model> nss_;  // "" first
  // Tunnel modules loaded (ipip, gre): each gives every namespace a fallback device (tunl0, gre0:
  // ip_tunnel_init_net), loaded by the first tunnel of its kind, gone at its module_unload.
  std::array<bool, 2> tunnel_loaded_{};
  std::uint64_t next_name_ = 0, next_ns_ = 0, next_remote_ = 1;

  std::mutex pool_mutex_;                       // live_gre_ changes and pool_names_
  std::array<std::string, kGrePool> pool_names_;  // the current tunnel of each xmit slot
  std::atomic<std::uint32_t> live_gre_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> xmit_calls_{0}, xmit_sent_{0}, xmit_dropped_{0}, xmit_cut_{0};

  std::uint64_t commands_ = 0, expected_failures_ = 0, created_ = 0, unregistered_ = 0, addrs_added_ = 0;
  std::array<std::uint64_t, 5> per_kind_{};
  std::uint64_t ns_created_ = 0, ns_deleted_ = 0, max_ns_per_cmd_ = 0;
  std::uint64_t batches_ = 0, largest_batch_ = 0, dependents_ = 0, max_rounds_ = 0;
  std::uint64_t total_gps_ = 0, batch_gps_ = 0, dismantle_elided_ = 0, longest_drain_ns_ = 0;
  unsigned max_gps_ = 0;
  std::uint64_t lookups_ = 0, hits_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  if (o.seed == 0) o.seed = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count()) | 1;
  rcubatch::set_misuse_reporter(&misuse_is_a_violation);
  rcubatch::set_misuse_policy(rcubatch::misuse_policy::abort_process);
  return rcubatch::with_flavor(
      o.flavor, [&]<class F>(std::type_identity<F>) { return run<F>(o).go(); },
      [](const rcubatch::unknown_flavor& e) { return std::fprintf(stderr, "netdev_stress: %s\n", e.what()), 2; });
}
