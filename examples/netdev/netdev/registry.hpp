// netdev/registry.hpp — the network-device registry: namespaces, commands, RTNL and notifiers;
// unregistration goes to a strategy — batched (2.6.33+, netdev/batched_unreg.hpp) or the 2.6.32
// emulation (netdev/legacy_unreg.hpp), chosen at construction (netsim --mode).
//
//   netdev::registry<rcubatch::flavor::memb> reg(netdev::unreg_mode::batched);
//   reg.link_add(reg.init_net(), {.name = "dummy0", .kind = netdev::link_kind::dummy});
//   reg.link_del(reg.init_net(), "dummy0");          // one batch: ≤ 2 grace periods
//   reg.module_unload(netdev::link_kind::dummy);     // every dummy, one batch (rmmod)
//
// Every command takes the writer lock (the RTNL analogue) for its whole run and either succeeds or
// changes nothing: it validates first, then mutates. Unregistration goes through one path,
// `unregister(queue)`, which hands the queue to the strategy with the policy (unreg_policy.hpp).
// Link-type specifics are in each type's link_ops table (link_ops.hpp).
//
// Thread safety: commands from any registered thread (they serialize on the writer lock); readers
// use init_net() lookups inside a read_guard. The registry must outlive its readers.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/fib_notifier.hpp"
#include "netdev/link_ops.hpp"
#include "netdev/link_request.hpp"
#include "netdev/macvlan.hpp"
#include "netdev/net_device.hpp"
#include "netdev/netns.hpp"
#include "netdev/notifier.hpp"
#include "netdev/registry_counters.hpp"
#include "netdev/unreg_mode.hpp"
#include "netdev/unreg_policy.hpp"
#include "netdev/unreg_strategies.hpp"
#include "netdev/unreg_strategy.hpp"
#include <rcubatch/batch.hpp>

#include "netdev/grace_periods.hpp"
#include "netdev/vlan.hpp"

namespace netdev {

/// What `ip link set` changes (all validated before any is applied).
struct link_change {
  std::optional<bool> up;
  std::optional<unsigned> mtu;
};

/// `ip route add|replace|del PREFIX [via GW] [dev D]` (main table, metric 0).
struct route_request {
  ipv4_prefix prefix;
  std::optional<ipv4> gateway;
  std::string dev;  // empty: not given
};

/// A command's outcome: empty error = success (C++20 has no std::expected).
struct status {
  std::string error;
  bool ok() const noexcept { return error.empty(); }
  static status fail(std::string e) { return status{std::move(e)}; }
};

template <class Flavor>
class registry final : private grace_periods {
 public:
  using domain_type = rcubatch::grace_domain<Flavor>;

  /// Requires: `strategy` not null. Throws: std::bad_alloc.
  explicit registry(std::unique_ptr<unreg_strategy<Flavor>> strategy)
      : strategy_(std::move(strategy)), flavor_(&rcubatch::lfht_runtime_flavor::of<Flavor>()), init_net_(std::make_unique<netns>("", flavor_)) {
    notifiers_.subscribe(vlan_cascade_);
    notifiers_.subscribe(macvlan_cascade_);
    notifiers_.subscribe(fib_);
    writer_section w(*this);
    create_loopback(*init_net_);
  }

  ~registry() {
    {
      writer_section w(*this);
      rcubatch::unreg_queue<net_device> q;
      for (netns* ns : all_namespaces())
        ns->for_each_device([&](net_device& d) { q.push(d); });
      unregister(q);
    }
    namespaces_.clear();
    init_net_.reset();
    domain_.barrier();  // rculfhash resizes free their buckets with call_rcu
  }

  /// The strategy of `mode` (make_unreg_strategy).
  explicit registry(unreg_mode mode = unreg_mode::batched) : registry(make_unreg_strategy<Flavor>(mode)) {}

  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  unreg_mode mode() const noexcept { return strategy_->mode(); }
  domain_type& domain() noexcept { return domain_; }
  netns& init_net() noexcept { return *init_net_; }
  void set_drain_options(const rcubatch::drain_options& o) { options_.drain = o; }
  /// Highest ifindex handed out so far (readers pick random indexes below it).
  int max_ifindex() const noexcept { return next_ifindex_.load(std::memory_order_relaxed) - 1; }

  /// The namespace called `name` ("" = the initial one), or null. Writer thread only.
  netns* find_netns(std::string_view name) noexcept {
    if (name.empty()) return init_net_.get();
    auto it = namespaces_.find(name);
    return it == namespaces_.end() ? nullptr : it->second.get();
  }

  // ---- commands --------------------------------------------------------------------------------

  /// A name with one "%d" takes the lowest free number (dev_alloc_name: EINVAL for any other '%',
  /// ENFILE when the 32,768 numbers of __dev_alloc_name's bitmap are taken).
  /// No name: "<kind>%d", as rtnl_newlink fills in when IFLA_IFNAME is absent ("dummy0", "vlan0"...).
  ///
  /// A tunnel type whose module is not loaded is loaded first, as rtnl_newlink's request_module
  /// ("rtnl-link-gre"): its fallback device (gre0, tunl0) appears in every namespace, with a lower
  /// ifindex than the new tunnel — but only once the request is known to succeed, so a failing
  /// command changes nothing (Linux has loaded the module by then). Meanwhile the fallback's name
  /// counts as taken: an unnamed gre is gre1, `link add gre0 type gre ...` is File exists.
  status link_add(netns& ns, const link_request& req) {
    writer_section w(*this);
    const bool autoload = is_tunnel(req.kind) && !tunnel_module_loaded(req.kind);
    if (autoload && !tunnel_module_loadable(req.kind)) return status::fail("Error: Unknown device type.");
    const std::string name = req.name.empty() ? std::string(to_string(req.kind)) + "%d" : req.name;
    const auto pct = name.find('%');
    if (pct == std::string::npos) return link_add_loading(ns, req, autoload);
    if (name.size() > 15 || pct + 1 >= name.size() || name[pct + 1] != 'd' ||
        name.find('%', pct + 2) != std::string::npos)
      return status::fail("RTNETLINK answers: Invalid argument");
    link_request named = req;
    for (int i = 0; i < 32768; ++i) {
      named.name = name.substr(0, pct) + std::to_string(i) + name.substr(pct + 2);
      if (named.name.size() > 15) break;
      if (!ns.name_taken(named.name) && !(autoload && named.name == fallback_name(req.kind)))
        return link_add_loading(ns, named, autoload);
    }
    return status::fail("RTNETLINK answers: Too many open files in system");
  }

  status link_set(netns& ns, std::string_view name, bool up) { return link_set(ns, name, link_change{.up = up, .mtu = std::nullopt}); }

  /// do_setlink: the MTU, then the flags. A vlan whose lower device is down cannot go up
  /// (vlan_dev_open: ENETDOWN). Going down or up carries the device's vlans with it
  /// (vlan_device_event, NETDEV_DOWN / NETDEV_UP), and its routes: down flushes every route
  /// through it (fib_disable_ip → fib_sync_down_dev), up restores the routes of its addresses
  /// (fib_netdev_event → fib_add_ifaddr); the first up of lo gives it 127.0.0.1/8 (inetdev_event).
  status link_set(netns& ns, std::string_view name, const link_change& ch) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(name));
    if (ch.mtu)
      if (std::string e = check_mtu(*dev, *ch.mtu); !e.empty()) return status::fail(e);
    const bool opening = ch.up && *ch.up && !dev->is_up();
    if (opening)
      if (auto can_open = ops_of(*dev).can_open)
        if (std::string e = can_open(*dev); !e.empty()) return status::fail(e);
    if (ch.mtu) inet_mtu_changed(set_mtu(*dev, *ch.mtu));
    if (opening) open_tree(*dev);
    if (ch.up && !*ch.up && dev->is_up()) close_tree(*dev);
    return {};
  }

  status link_del(netns& ns, std::string_view name) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(name));
    // lo has no rtnl_link_ops: rtnl_dellink answers EOPNOTSUPP.
    if (!ops_of(*dev).has_dellink) return status::fail("RTNETLINK answers: Operation not supported");
    // ip_tunnel_dellink (net/ipv4/ip_tunnel.c) queues nothing for the namespace's fallback device:
    // rtnl_dellink succeeds and gre0 / tunl0 stay (only module unload or netns exit removes them).
    if (is_fallback_tunnel(*dev)) return {};
    rcubatch::unreg_queue<net_device> q;
    dellink(*dev, q);
    unregister(q);
    return {};
  }

  /// __inet_insert_ifa + fib_add_ifaddr: an address of the same subnet and mask as a primary is
  /// a secondary; every address gets its local /32 route at once, and a primary gets its prefix
  /// route in main (local for lo) when the device is UP, unless it is a /32, its network is
  /// 0.0.0.0, or noprefixroute. Routes of a DOWN device's addresses are added when it goes up.
  /// A device without IPv4 (MTU below 68) has no in_device: rtm_to_ifaddr answers ENOBUFS.
  status addr_add(netns& ns, std::string_view name, ipv4_prefix p, bool noprefixroute = false) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(name));
    if (!dev->has_in_device) return status::fail("RTNETLINK answers: No buffer space available");
    net_device::address a{p, false, noprefixroute};
    for (const net_device::address& b : dev->addresses) {
      if (b.prefix.address == p.address && b.prefix.length == p.length) return status::fail("RTNETLINK answers: File exists");
      if (!b.secondary && b.prefix.length == p.length && b.prefix.network() == p.network()) a.secondary = true;
    }
    // The allocations first: then nothing below fails half-way.
    dev->addresses.reserve(dev->addresses.size() + 1);
    std::vector<std::unique_ptr<route>> made = address_routes(*dev, a, /*local_only=*/!dev->is_up());
    for (auto& r : made) ns.routes().add(*r.release());
    dev->addresses.push_back(a);
    return {};
  }

  /// `ip addr del A[/P] dev D` (no /P: the first A of any length, ip's "wildcard deletion").
  /// Deleting a primary deletes its secondaries (promote_secondaries is 0 by default,
  /// __inet_del_ifa); fib_del_ifaddr drops their routes, and when the last address goes every
  /// route through the device goes with it (fib_inetaddr_event → fib_disable_ip).
  status addr_del(netns& ns, std::string_view name, ipv4_prefix p, bool any_length) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(name));
    auto it = std::find_if(dev->addresses.begin(), dev->addresses.end(), [&](const net_device::address& a) {
      return a.prefix.address == p.address && (any_length || a.prefix.length == p.length);
    });
    if (it == dev->addresses.end()) return status::fail("RTNETLINK answers: Cannot assign requested address");
    const net_device::address gone = *it;
    std::vector<net_device::address> keep;
    keep.reserve(dev->addresses.size());
    for (const net_device::address& a : dev->addresses) {
      const bool its_secondary = !gone.secondary && a.secondary && a.prefix.length == gone.prefix.length &&
                                 a.prefix.network() == gone.prefix.network();
      if (&a != &*it && !its_secondary) keep.push_back(a);
    }
    remove_routes_and_wait(*dev, [&](const route& r) {
      if (keep.empty()) return true;
      if (r.origin != route_origin::kernel || r.gateway != 0) return false;
      // Its own routes only if no remaining address gives the same one.
      for (const net_device::address& a : keep)
        if (gives_route(*dev, a, r)) return false;
      return true;
    });
    dev->addresses = std::move(keep);
    return {};
  }

  /// `ip addr flush dev D`: every address, and so (the last one gone) every route through D.
  status addr_flush(netns& ns, std::string_view name) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(name));
    if (dev->addresses.empty()) return {};
    remove_routes_and_wait(*dev, [](const route&) { return true; });
    dev->addresses.clear();
    return {};
  }

  /// `ip route add|replace PREFIX [via GW] [dev D]` in main (fib_table_insert, fib_check_nh): the
  /// device must be UP; a gateway must resolve to a link route or to a local address (through D
  /// if given); an existing route for the prefix is File exists, or is replaced.
  status route_add(netns& ns, const route_request& req, bool replace) {
    writer_section w(*this);
    net_device* dev = nullptr;
    if (!req.dev.empty()) {
      dev = ns.find_locked(req.dev);
      if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(req.dev));
    }
    if (req.gateway) {
      const route* via = nullptr;
      {
        rcubatch::read_guard<Flavor> guard;
        via = ns.routes().lookup(*req.gateway);
      }
      // fib_check_nh_v4_gw (net/ipv4/fib_semantics.c): the lookup runs at scope link (a route via
      // another gateway does not resolve one) and through D if given; a result that is neither
      // RTN_UNICAST nor RTN_LOCAL, or none, is extack "Nexthop has invalid gateway". A local
      // result (the host's own address) passes, and the nexthop device is the address's device.
      if (via == nullptr || via->gateway != 0 || (dev != nullptr && via->dev != dev))
        return status::fail("Error: Nexthop has invalid gateway.");
      dev = via->dev;
    }
    if (dev == nullptr) return status::fail("RTNETLINK answers: No such device");
    if (!dev->is_up()) return status::fail("Error: Nexthop device is not up.");
    route* old = ns.routes().find_exact(route_table::main, req.prefix);
    if (old != nullptr && !replace) return status::fail("RTNETLINK answers: File exists");
    auto fresh = std::make_unique<route>(req.prefix, dev, route_table::main, route_origin::boot, req.gateway.value_or(0));
    if (old != nullptr) {
      ns.routes().unlink(*old);
      ns.routes().add(*fresh.release());
      timed_synchronize(domain_, counters_);  // readers may still hold the replaced route
      delete old;
    } else {
      ns.routes().add(*fresh.release());
    }
    return {};
  }

  /// `ip route del PREFIX [via GW] [dev D]` (fib_table_delete): ESRCH when nothing matches.
  status route_del(netns& ns, const route_request& req) {
    writer_section w(*this);
    net_device* dev = nullptr;
    if (!req.dev.empty()) {
      dev = ns.find_locked(req.dev);
      if (dev == nullptr) return status::fail("Cannot find device " + quoted_name(req.dev));
    }
    route* r = ns.routes().find_exact(route_table::main, req.prefix);
    if (r == nullptr || (dev != nullptr && r->dev != dev) || (req.gateway && r->gateway != *req.gateway))
      return status::fail("RTNETLINK answers: No such process");
    ns.routes().unlink(*r);
    timed_synchronize(domain_, counters_);
    delete r;
    return {};
  }

  /// Calls f(device) for each device of `ns` under the writer lock (addresses and routes are
  /// writer-side state), in list order.
  template <class F>
  void for_each_device_locked(netns& ns, F&& f) {
    writer_section w(*this);
    rcubatch::read_guard<Flavor> guard;
    ns.for_each_device(f);
  }

  /// ip netns add: the name is a file under /var/run/netns (is_basename: not "", ".", "..", no '/').
  /// loopback_net_init gives the new namespace its lo.
  status netns_add(const std::string& name) {
    writer_section w(*this);
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      return status::fail("Invalid netns name " + quoted_name(name));
    if (name.size() > 255)
      return status::fail("Cannot create namespace file " + quoted_name("/var/run/netns/" + name) + ": File name too long");
    if (namespaces_.contains(name)) return status::fail("Cannot create namespace file " + quoted_name("/var/run/netns/" + name) + ": File exists");
    auto it = namespaces_.emplace(name, std::make_unique<netns>(name, flavor_)).first;
    try {
      // ipip_init_net / ipgre_init_net (register_pernet_device) for each tunnel module loaded:
      // its fallback device, allocated before anything in the namespace is published.
      std::vector<std::unique_ptr<net_device>> fallbacks;
      const int base = next_ifindex_.load(std::memory_order_relaxed);
      for (link_kind k : {link_kind::ipip, link_kind::gre})
        if (tunnel_module_loaded(k))
          fallbacks.push_back(make_fallback(*it->second, k, base + static_cast<int>(fallbacks.size())));
      create_loopback(*it->second);
      next_ifindex_.store(base + static_cast<int>(fallbacks.size()), std::memory_order_relaxed);
      for (auto& d : fallbacks) publish_device(*it->second, *d.release());
    } catch (...) {
      namespaces_.erase(it);  // nothing was published in it
      throw;
    }
    return {};
  }

  /// Deletes every named namespace; all their devices go in one batch (cleanup_net's kill list).
  status netns_del(const std::vector<std::string>& names) {
    writer_section w(*this);
    std::vector<netns*> doomed;
    for (const std::string& n : names) {
      netns* ns = n.empty() ? nullptr : find_netns(n);
      if (ns == nullptr) return status::fail("Cannot remove namespace file " + quoted_name("/var/run/netns/" + n) + ": No such file or directory");
      if (std::find(doomed.begin(), doomed.end(), ns) == doomed.end()) doomed.push_back(ns);
    }
    rcubatch::unreg_queue<net_device> q;
    for (netns* ns : doomed) ns->for_each_device([&](net_device& d) { dellink(d, q); });
    unregister(q);
    // Reader threads never reach a namespace other than init_net, and its devices are gone. An
    // xmit sender may still hold it (netns::hold): with its tunnel gone it stops after its current
    // burst, and the namespace is freed once it has let go.
    for (netns* ns : doomed) {
      if (ns->users() != 0) {
        rcubatch::offline_scope<Flavor> offline;  // qsbr: do not hold up grace periods meanwhile
        // A poll, not a wake-up from put(): a put() that notified would touch the namespace after
        // its decrement, when this loop may already have freed it (rcubatch::ref_count avoids that
        // with the drain's mutex; here the wait is rare — a sender mid-burst in a dying namespace —
        // and ends within one 64-packet burst).
        while (ns->users() != 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      namespaces_.erase(ns->name());
    }
    return {};
  }

  /// `modprobe dummy numdummies=N`: dummy0..dummyN-1 in the initial namespace (names must be free).
  /// One writer section for the whole command, as dummy_init_module holds RTNL around its loop: the
  /// name check and the creations are one step for every other writer.
  ///
  /// Every device is allocated before the first is published: out of memory (std::bad_alloc at
  /// any allocation) fails the command with nothing created, no ifindex used and no GP paid.
  status module_load_dummy(long count) {
    if (count < 0 || count > 10'000'000) return status::fail("numdummies out of range");
    writer_section w(*this);
    auto name_of = [](long i) { return "dummy" + std::to_string(i); };  // IFNAMSIZ-bounded: inline buffer
    // Bad input changes nothing: refuse before creating any device if a name is taken (O(1) per
    // name), rather than create and roll back (ifindexes, batches and GPs would show it).
    for (long i = 0; i < count; ++i)
      if (init_net_->name_taken(name_of(i))) return status::fail(name_of(i) + " already exists");
    const int base = next_ifindex_.load(std::memory_order_relaxed);
    std::vector<std::unique_ptr<net_device>> made;
    bool out_of_memory = false;
    try {
      made.reserve(static_cast<std::size_t>(count));
      for (long i = 0; i < count; ++i)
        made.push_back(std::make_unique<net_device>(name_of(i), link_kind::dummy, *init_net_, base + static_cast<int>(i)));
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
    if (out_of_memory) {
      std::vector<std::unique_ptr<net_device>>().swap(made);  // freed before the message is allocated
      return status::fail("modprobe: ERROR: could not insert 'dummy': Cannot allocate memory");
    }
    next_ifindex_.store(base + static_cast<int>(count), std::memory_order_relaxed);
    init_net_->reserve_devices(made.size());  // the count is known: no index growth on the way
    // Cannot fail now: allocated, named and indexed; publishing links intrusive nodes only.
    // Published in order, each publication's cold lines asked for a few devices ahead. 100,000
    // dummies are 40 MB, far past the 2 MiB L2: every device's own lines (written by the loop
    // above, evicted since) and its name's bucket head are misses, and taken one after another
    // they made publishing a device cost 3x what it costs at 1,000 devices, where all of it is
    // in cache (examples/netdev/RESULTS.md, 2026-12-03). Two stages: the device's lines
    // 2 x kAhead devices ahead; then, its name in cache to hash, its bucket heads kAhead ahead.
    constexpr std::size_t kAhead = 8;
    for (std::size_t i = 0; i < made.size(); ++i) {
      if (i + 2 * kAhead < made.size()) netns::prefetch_device(*made[i + 2 * kAhead]);
      if (i + kAhead < made.size()) init_net_->prefetch_publish(*made[i + kAhead]);
      publish_device(*init_net_, *made[i].release());
    }
    return {};
  }

  /// `rmmod TYPE`: every device of that link type in every namespace, one batch (__rtnl_kill_links).
  /// A tunnel module's fallback devices go in the same batch. (Linux unregisters them in a second
  /// one: ip_tunnel_dellink skips them in rtnl_link_unregister, and unregister_pernet_device's
  /// ip_tunnel_delete_nets then takes them; netsim keeps one batch per command.)
  status module_unload(link_kind kind) {
    writer_section w(*this);
    rcubatch::unreg_queue<net_device> q;
    for (netns* ns : all_namespaces())
      ns->for_each_device([&](net_device& d) {
        if (d.kind == kind) dellink(d, q);
      });
    unregister(q);
    if (is_tunnel(kind)) loaded_flag(kind) = false;
    return {};
  }

  /// `modprobe ipip` / `modprobe ip_gre`: the fallback device (tunl0, gre0) in every namespace
  /// (ip_tunnel_init_net per netns); nothing if loaded already. If a namespace has another device
  /// of that name, __ip_tunnel_create fails, and so does the module (nothing changes).
  /// Requires: `kind` is ipip or gre.
  status module_load_tunnel(link_kind kind) {
    writer_section w(*this);
    if (tunnel_module_loaded(kind)) return {};
    if (!tunnel_module_loadable(kind))
      return status::fail(std::string("modprobe: ERROR: could not insert '") + (kind == link_kind::gre ? "ip_gre" : "ipip") +
                          "': File exists");
    load_tunnel_module(kind);
    return {};
  }
  /// Whether `modprobe` of the tunnel type `kind` (ipip or gre) is in effect: its fallback devices exist.
  bool tunnel_module_loaded(link_kind kind) const noexcept { return kind == link_kind::gre ? gre_loaded_ : ipip_loaded_; }

  // ---- observation ------------------------------------------------------------------------------

  registry_counters counters() const noexcept { return counters_; }
  /// Starts a new window for counters().longest_gp_wait_ns (netsim's `time`: per command).
  /// Requires: the writer thread, between commands.
  void reset_longest_gp_wait() noexcept { counters_.longest_gp_wait_ns = 0; }
  std::size_t device_count() noexcept {
    std::size_t n = 0;
    for (netns* ns : all_namespaces()) n += ns->device_count();
    return n;
  }
  std::size_t route_count() noexcept {
    std::size_t n = 0;
    for (netns* ns : all_namespaces()) n += ns->routes().size();
    return n;
  }
  std::vector<netns*> all_namespaces() {
    std::vector<netns*> out{init_net_.get()};
    for (auto& [name, ns] : namespaces_) out.push_back(ns.get());
    return out;
  }
  /// The stats of the last batch (for tests and `time`).
  const rcubatch::batch_stats& last_batch() const noexcept { return last_batch_; }

 private:
  /// link_add's body, for a caller that holds the writer section (module_load_dummy).
  status link_add_locked(netns& ns, const link_request& req) {
    std::unique_ptr<net_device> dev;
    if (status s = prepare_device(ns, req, next_ifindex_.load(std::memory_order_relaxed), dev); !s.ok()) return s;
    next_ifindex_.fetch_add(1, std::memory_order_relaxed);
    publish_device(ns, *dev.release());
    return {};
  }

  /// The checks and ndo_init of `req` as device `ifindex`, into `out`; nothing published and the
  /// ifindex not taken. Throws: std::bad_alloc, with nothing changed.
  status prepare_device(netns& ns, const link_request& req, int ifindex, std::unique_ptr<net_device>& out) {
    net_device* lower = nullptr;
    if (status s = check_newlink(ns, req, lower); !s.ok()) return s;
    // Owned until published: an allocation failing in ndo_init leaves nothing.
    auto owned = std::make_unique<net_device>(req.name, req.kind, ns, ifindex);
    // ndo_init first: the link state is complete before any reader can find the device by name
    // or index (an xmit sender looks tunnels up by name and reads dev->link at once).
    if (auto setup = ops_of(req.kind).setup)
      setup(*owned, lower, req, link_context{.flavor = flavor_, .lltx_allowed = strategy_->lltx_allowed()});
    if (req.mtu) owned->mtu = *req.mtu;
    out = std::move(owned);
    return {};
  }

  static bool is_tunnel(link_kind k) noexcept { return k == link_kind::ipip || k == link_kind::gre; }
  bool& loaded_flag(link_kind tunnel_kind) noexcept { return tunnel_kind == link_kind::gre ? gre_loaded_ : ipip_loaded_; }
  /// The name ip_tunnel_init_net gives the fallback device: ipip's "tunl0", ip_gre's "gre0".
  static std::string fallback_name(link_kind kind) { return kind == link_kind::gre ? "gre0" : "tunl0"; }
  static bool is_fallback_tunnel(const net_device& d) noexcept {
    const auto* t = std::get_if<tunnel_link>(&d.link);
    return t != nullptr && t->params.fallback;
  }
  /// Whether no namespace has a device with the fallback's name (else __ip_tunnel_create fails).
  bool tunnel_module_loadable(link_kind kind) {
    for (netns* ns : all_namespaces())
      if (ns->name_taken(fallback_name(kind))) return false;
    return true;
  }
  /// The fallback device of `kind` for `ns` (no endpoints, no key: ip_tunnel_init_net's parms),
  /// set up and not published. Throws: std::bad_alloc, with nothing changed.
  std::unique_ptr<net_device> make_fallback(netns& ns, link_kind kind, int ifindex) {
    link_request req;
    req.name = fallback_name(kind);
    req.kind = kind;
    req.tunnel.fallback = true;
    auto d = std::make_unique<net_device>(req.name, kind, ns, ifindex);
    ops_of(kind).setup(*d, nullptr, req, link_context{.flavor = flavor_, .lltx_allowed = strategy_->lltx_allowed()});
    return d;
  }
  /// Every namespace's fallback device of `kind`, as ifindexes `base`, `base` + 1, ...; allocated
  /// and set up, nothing published. Throws: std::bad_alloc, with nothing changed.
  std::vector<std::unique_ptr<net_device>> make_fallbacks(link_kind kind, int base) {
    std::vector<netns*> all = all_namespaces();
    std::vector<std::unique_ptr<net_device>> made;
    made.reserve(all.size());
    for (netns* ns : all) made.push_back(make_fallback(*ns, kind, base + static_cast<int>(made.size())));
    return made;
  }
  /// Publishes make_fallbacks' devices (their ifindexes already taken): the module is loaded.
  void publish_fallbacks(link_kind kind, std::vector<std::unique_ptr<net_device>>& made) noexcept {
    for (auto& d : made) {
      netns& ns = *d->ns;
      publish_device(ns, *d.release());
    }
    loaded_flag(kind) = true;
  }
  /// Loads a tunnel module that tunnel_module_loadable allows: every namespace's fallback
  /// device, all allocated before the first is published.
  void load_tunnel_module(link_kind kind) {
    const int base = next_ifindex_.load(std::memory_order_relaxed);
    auto made = make_fallbacks(kind, base);
    next_ifindex_.store(base + static_cast<int>(made.size()), std::memory_order_relaxed);
    publish_fallbacks(kind, made);
  }
  /// link_add of a named request, loading the tunnel module first if `autoload` (see link_add):
  /// the fallbacks and the new tunnel are all allocated before any is published, so running out
  /// of memory leaves the module unloaded and no ifindex taken.
  status link_add_loading(netns& ns, const link_request& req, bool autoload) {
    if (!autoload) return link_add_locked(ns, req);
    if (req.name == fallback_name(req.kind)) return status::fail("RTNETLINK answers: File exists (" + req.name + ")");
    const int base = next_ifindex_.load(std::memory_order_relaxed);
    auto fallbacks = make_fallbacks(req.kind, base);
    const int tunnel_index = base + static_cast<int>(fallbacks.size());
    std::unique_ptr<net_device> dev;
    if (status s = prepare_device(ns, req, tunnel_index, dev); !s.ok()) return s;
    next_ifindex_.store(tunnel_index + 1, std::memory_order_relaxed);
    publish_fallbacks(req.kind, fallbacks);
    publish_device(ns, *dev.release());
    return {};
  }

  /// loopback_net_init: `lo`, ifindex 1, DOWN, in every namespace.
  void create_loopback(netns& ns) {
    publish_device(ns, *new net_device("lo", link_kind::loopback, ns, 1));
  }

  /// register_netdevice's publication, for a device whose ndo_init is done. Cannot fail.
  void publish_device(netns& ns, net_device& dev) noexcept {
    {
      rcubatch::read_guard<Flavor> section;  // rculfhash updates run inside a read-side section
      ns.publish(dev);
    }
    ns.grow_indexes();
    dev.mark_registered();
    // Then the secondary structures that lead readers to it (list_netdevice, then the link type's).
    if (auto attach = ops_of(dev).attach) attach(dev);
    notifiers_.notify({netdev_event_kind::registered, &dev, nullptr});
  }

  // ---- the rcubatch policy (netdev/unreg_policy.hpp) uses stop_device and notifiers_ -------

  friend struct device_policy<Flavor>;

  // ---- grace_periods, for link-type code --------------------------------------------------------

  bool synchronize_unless_dismantling(const net_device& d) noexcept override {
    const auto start = std::chrono::steady_clock::now();
    const bool waited = rcubatch::synchronize_unless_dismantling(d, domain_);
    if (waited) counters_.note_gp_wait(std::chrono::steady_clock::now() - start);
    return waited;
  }

  // ---- helpers -----------------------------------------------------------------------------------

  /// The writer lock for one command, recording how long it was held.
  class writer_section {
   public:
    explicit writer_section(registry& r) : r_(r), lock_(r.rtnl_), start_(std::chrono::steady_clock::now()) {}
    ~writer_section() {
      const auto held = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
      r_.counters_.max_lock_hold_ns = std::max<std::uint64_t>(r_.counters_.max_lock_hold_ns, held.count());
    }

   private:
    registry& r_;
    std::scoped_lock<std::mutex> lock_;
    std::chrono::steady_clock::time_point start_;
  };

  static std::string quoted_name(std::string_view s) {
    constexpr std::size_t kShown = 64;  // a 10 MB name is not echoed whole
    if (s.size() <= kShown) return "\"" + std::string(s) + "\"";
    return "\"" + std::string(s.substr(0, kShown)) + "...\" (" + std::to_string(s.size()) + " bytes)";
  }

  status check_newlink(netns& ns, const link_request& req, net_device*& lower) {
    // dev_valid_name: 1..15 bytes (IFNAMSIZ), not "." or "..", no '/', ':' or blank.
    if (req.name.empty() || req.name.size() > 15 ||
        req.name.find_first_of("/ \t\n\r\v\f:") != std::string::npos || req.name == "." || req.name == "..")
      return status::fail(quoted_name(req.name) + " is not a valid device name");
    if (ns.name_taken(req.name)) return status::fail("RTNETLINK answers: File exists (" + req.name + ")");
    const link_ops& ops = ops_of(req.kind);
    if (!ops.stacked && !req.lower.empty()) return status::fail(std::string(to_string(req.kind)) + " takes no lower device");
    if (ops.stacked) {
      if (req.lower.empty()) return status::fail(std::string(to_string(req.kind)) + " needs \"link LOWER\"");
      lower = ns.find_locked(req.lower);
      if (lower == nullptr) return status::fail("Cannot find device " + quoted_name(req.lower));
      if (ops.real_lower != nullptr) lower = ops.real_lower(*lower);
      // __netdev_upper_dev_link: lower_level + the new device's upper_level (1) > MAX_NEST_DEV.
      if (lower->lower_level + 1 > kMaxNestDev) return status::fail("RTNETLINK answers: Too many links");
    }
    if (ops.validate != nullptr)
      if (std::string e = ops.validate(ns, req, lower); !e.empty()) return status::fail(e);
    return {};
  }

  /// rtnl_link_ops->dellink: queue, never unregister directly. Idempotent.
  void dellink(net_device& d, rcubatch::unreg_queue<net_device>& q) { q.push(d); }

  void open_device(net_device& d) {
    // Allocated before the device goes up (or a macvlan is hashed): then nothing below fails half-way.
    // inetdev_event NETDEV_UP: lo gets 127.0.0.1/8 (once; it stays across down/up).
    const bool add_lo_address = d.kind == link_kind::loopback && d.addresses.empty() && d.has_in_device;
    const net_device::address lo_address{{0x7f000001, 8}, false, false};
    std::vector<std::unique_ptr<route>> made;
    if (add_lo_address) {
      d.addresses.reserve(1);
      made = address_routes(d, lo_address, false);
    }
    for (const net_device::address& a : d.addresses)
      for (auto& r : address_routes(d, a, false))
        if (!route_present(d, *r)) made.push_back(std::move(r));
    if (auto open = ops_of(d).open) open(d);  // ndo_open
    d.up.store(true, std::memory_order_release);
    if (add_lo_address) d.addresses.push_back(lo_address);
    for (auto& r : made) d.ns->routes().add(*r.release());
    notifiers_.notify({netdev_event_kind::up, &d, nullptr});
  }

  /// Opens `d`, then every vlan above it, level by level (vlan_device_event NETDEV_UP).
  void open_tree(net_device& d) {
    std::vector<net_device*> work{&d};
    while (!work.empty()) {
      net_device* x = work.back();
      work.pop_back();
      if (x->is_up()) continue;
      open_device(*x);
      for (net_device* v : vlan::uppers(*x)) work.push_back(v);
    }
  }

  /// Closes `d`, then the UP vlans above it (vlan_device_event, NETDEV_DOWN), then theirs.
  /// Macvlans stay UP: macvlan_device_event only passes the lower's operstate on to them.
  ///
  /// Batched mode, as Linux since dev_close_many (2.6.38, 443457242beb): the NETDEV_DOWN of each
  /// closed device closes all its UP vlans with one dev_close_many — one dev_deactivate_many grace
  /// period for the lot. `link set LOWER down` under N UP vlans costs 2 grace periods; in general
  /// 1 + the number of closed devices that have UP vlans.
  /// Legacy mode, as 2.6.32: vlan_device_event took each vlan down alone (dev_change_flags →
  /// dev_close → dev_deactivate → synchronize_rcu), so the same command costs 1 + N.
  void close_tree(net_device& d) {
    const bool together = strategy_->mode() == unreg_mode::batched;
    std::vector<std::vector<net_device*>> rounds{{&d}};  // each: the devices one dev_close_many takes
    while (!rounds.empty()) {
      std::vector<net_device*> round = std::move(rounds.back());
      rounds.pop_back();
      std::erase_if(round, [](const net_device* x) { return !x->is_up(); });
      if (together) {
        close_many(round);
      } else {
        for (net_device* x : round) close_many({x});
      }
      for (net_device* x : round) {
        std::vector<net_device*> ups = vlan::uppers(*x);
        std::erase_if(ups, [](const net_device* v) { return !v->is_up(); });
        if (!ups.empty()) rounds.push_back(std::move(ups));
      }
    }
  }

  /// The routes address `a` gives `d` (fib_add_ifaddr), allocated, not linked: the local /32,
  /// and — unless local_only, or a secondary, /32, network 0.0.0.0 or noprefixroute — its prefix
  /// route (in main; for lo in local). fib_add_ifaddr skips ipv4_is_zeronet(prefix), which is
  /// `addr == 0` since Linux 5.10 (include/linux/in.h, "Allow 0.0.0.0/8 as a valid address
  /// range"): 0.1.2.3/16 gets 0.1.0.0/16, 0.1.2.3/8 gets none.
  static std::vector<std::unique_ptr<route>> address_routes(net_device& d, const net_device::address& a, bool local_only) {
    std::vector<std::unique_ptr<route>> out;
    out.reserve(2);
    out.push_back(std::make_unique<route>(ipv4_prefix{a.prefix.address, 32}, &d, route_table::local));
    const ipv4 network = a.prefix.network();
    if (!local_only && !a.secondary && !a.noprefixroute && a.prefix.length < 32 && network != 0)
      out.push_back(std::make_unique<route>(a.prefix, &d,
                                            d.kind == link_kind::loopback ? route_table::local : route_table::main));
    return out;
  }

  /// Whether address `a` of `d` gives exactly route `r`.
  static bool gives_route(net_device& d, const net_device::address& a, const route& r) {
    for (auto& x : address_routes(d, a, false))
      if (x->table == r.table && x->prefix.address == r.prefix.address && x->prefix.length == r.prefix.length) return true;
    return false;
  }

  /// Whether `d` already has a kernel route equal to `r` (the local /32 of an address added while DOWN).
  static bool route_present(net_device& d, const route& r) {
    for (const route& x : d.routes)
      if (x.origin == route_origin::kernel && x.table == r.table && x.prefix.address == r.prefix.address &&
          x.prefix.length == r.prefix.length)
        return true;
    return false;
  }

  /// Unlinks the routes of `d` that `doomed` picks, waits one grace period, frees them.
  template <class Pick>
  void remove_routes_and_wait(net_device& d, Pick doomed) {
    std::vector<route*> gone;
    for (route& r : d.routes)
      if (doomed(r)) gone.push_back(&r);
    if (gone.empty()) return;
    for (route* r : gone) d.ns->routes().unlink(*r);
    d.ns->routes().sweep();
    timed_synchronize(domain_, counters_);
    for (route* r : gone) delete r;
  }

  std::string check_mtu(const net_device& d, unsigned mtu) const {
    if (mtu > 0x7fffffffU) return "Error: mtu greater than device maximum.";
    if (auto change_mtu = ops_of(d).change_mtu) return change_mtu(d, mtu);
    return {};
  }

  /// dev_set_mtu, then NETDEV_CHANGEMTU: vlans and macvlans above with a larger MTU are lowered to
  /// it (vlan_device_event, macvlan_device_event), level by level — each by dev_set_mtu, so an
  /// upper that refuses the MTU keeps its own (a macvlan below its minimum of 68). Returns every
  /// device whose NETDEV_CHANGEMTU ran (`d` first).
  std::vector<net_device*> set_mtu(net_device& d, unsigned mtu) {
    d.mtu = mtu;
    std::vector<net_device*> changed{&d};
    std::vector<net_device*> work{&d};
    while (!work.empty()) {
      net_device* x = work.back();
      work.pop_back();
      std::vector<net_device*> ups = vlan::uppers(*x);
      for (net_device* m : macvlan::dependents(*x)) ups.push_back(m);
      for (net_device* u : ups)
        if (u->mtu > x->mtu && check_mtu(*u, x->mtu).empty()) {
          u->mtu = x->mtu;
          work.push_back(u);
          changed.push_back(u);
        }
    }
    return changed;
  }

  /// inetdev_event's NETDEV_CHANGEMTU (net/ipv4/devinet.c) for each device of `changed`: below
  /// IPV4_MIN_MTU its in_device goes (inetdev_destroy: every address deleted, and with the last
  /// one every route through the device, fib_inetaddr_event → fib_disable_ip); at 68 or more a
  /// device without one gets an empty one (inetdev_init: the addresses do not come back).
  /// The routes of all of them share one grace period.
  void inet_mtu_changed(const std::vector<net_device*>& changed) {
    std::vector<net_device*> losing;
    for (net_device* x : changed) {
      if (x->mtu >= kIpv4MinMtu) x->has_in_device = true;
      else if (x->has_in_device) losing.push_back(x);
    }
    std::vector<route*> gone;
    for (net_device* x : losing)
      if (!x->addresses.empty())
        for (route& r : x->routes) gone.push_back(&r);
    for (route* r : gone) r->dev->ns->routes().unlink(*r);
    for (net_device* x : losing) {
      x->ns->routes().sweep();
      x->addresses.clear();
      x->has_in_device = false;
    }
    if (gone.empty()) return;
    timed_synchronize(domain_, counters_);
    for (route* r : gone) delete r;
  }

  /// ndo_stop plus the state change; the macvlan unhash waits unless the device is dismantling.
  void stop_device(net_device& d) noexcept {
    notifiers_.notify({netdev_event_kind::going_down, &d, nullptr});
    if (auto stop = ops_of(d).stop) stop(d, *this);  // ndo_stop
    d.up.store(false, std::memory_order_release);
    notifiers_.notify({netdev_event_kind::down, &d, nullptr});
  }

  /// dev_close_many of devices that stay registered: the queue deactivation costs one grace
  /// period for all of them (dev_deactivate_many), in every kernel era. Requires: all UP.
  void close_many(const std::vector<net_device*>& devices) {
    if (devices.empty()) return;
    // NETDEV_DOWN flushes the routes through each device (fib_disable_ip(dev, event, false) →
    // fib_sync_down_dev without force): every route but the local ones, whose nexthop scope is
    // RT_SCOPE_NOWHERE, so the device's addresses stay local (`route get` of one still answers
    // "local"); the others come back on up. The unlinked routes share dev_deactivate's grace period.
    boost::intrusive::list<route, boost::intrusive::member_hook<route, boost::intrusive::list_member_hook<>,
                                                                &route::dev_hook>>
        dead;
    netns* swept = nullptr;
    for (net_device* d : devices) {
      for (auto it = d->routes.begin(); it != d->routes.end();) {
        route& r = *it++;  // advanced first: unlink takes r off d->routes
        if (r.table == route_table::local) continue;
        d->ns->routes().unlink(r);
        dead.push_back(r);
      }
      // Once per namespace, not per device: a vlan is in its lower's namespace.
      if (d->ns != swept) d->ns->routes().sweep();
      swept = d->ns;
    }
    timed_synchronize(domain_, counters_);  // dev_deactivate_many: no transmitter is still inside an old qdisc
    for (net_device* d : devices) stop_device(*d);
    dead.clear_and_dispose([](route* r) { delete r; });
  }

  /// Every device of `q` and its dependents, by the strategy. Requires: the writer section.
  void unregister(rcubatch::unreg_queue<net_device>& q) {
    if (q.empty()) return;
    strategy_->unregister(q, unreg_means<Flavor>{device_policy<Flavor>{*this}, domain_, options_, counters_, last_batch_});
  }

  const std::unique_ptr<unreg_strategy<Flavor>> strategy_;
  const index_flavor* const flavor_;  // the indexes' flavor: Flavor, for the flavor-agnostic .cpp files
  domain_type domain_;
  std::mutex rtnl_;
  std::atomic<int> next_ifindex_{2};  // 1 is every namespace's lo (loopback_net_init)
  std::unique_ptr<netns> init_net_;
  std::map<std::string, std::unique_ptr<netns>, std::less<>> namespaces_;  // writer lock
  notifier_chain notifiers_;
  vlan::cascade vlan_cascade_;
  macvlan::cascade macvlan_cascade_;
  fib_notifier fib_;
  bool ipip_loaded_ = false;  // `modprobe ipip` / ip_gre: the fallback devices exist (writer lock)
  bool gre_loaded_ = false;
  rcubatch::rollback_options options_{};
  registry_counters counters_{};          // writer lock
  rcubatch::batch_stats last_batch_{};    // writer lock
};

}  // namespace netdev
