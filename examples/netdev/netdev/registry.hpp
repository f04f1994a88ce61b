// netdev/registry.hpp — the network-device registry: namespaces, RTNL, notifiers, and unregistration
// through rcubatch, batched (2.6.33+) or legacy (2.6.32, one device at a time), in one binary.
//
//   netdev::registry<rcubatch::flavor::memb> reg(netdev::unreg_mode::batched);
//   reg.link_add(reg.init_net(), {.name = "dummy0", .kind = netdev::link_kind::dummy});
//   reg.link_del(reg.init_net(), "dummy0");          // one batch: ≤ 2 grace periods
//   reg.module_unload(netdev::link_kind::dummy);     // every dummy, one batch (rmmod)
//
// Every command takes the writer lock (the RTNL analogue) for its whole run and either succeeds or
// changes nothing: it validates first, then mutates. Unregistration goes through one path,
// `unregister(queue)`: in batched mode a single rcubatch::rollback_many; in legacy mode each device
// (its dependents first) alone, paying the grace periods 2.6.32 paid — 2 per device, +1 if it was
// UP (dev_deactivate), +1 per vlan (unregister_vlan_dev), +1 per UP macvlan (hash_del) — as real,
// counted domain.synchronize() calls.
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
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <rcubatch.hpp>

#include "netdev/fib_notifier.hpp"
#include "netdev/macvlan.hpp"
#include "netdev/net_device.hpp"
#include "netdev/netns.hpp"
#include "netdev/notifier.hpp"
#include "netdev/rcu_table.hpp"
#include "netdev/unreg_context.hpp"
#include "netdev/vlan.hpp"

namespace netdev {

enum class unreg_mode { batched, legacy };

/// What `ip link add` asks for.
struct link_request {
  std::string name;
  link_kind kind = link_kind::dummy;
  std::string lower;         // vlan, macvlan
  long vid = -1;             // vlan
  tunnel_params tunnel{};    // ipip, gre
  bool has_remote = false;
  bool has_local = false;
};

/// A command's outcome: empty error = success (C++20 has no std::expected).
struct status {
  std::string error;
  bool ok() const noexcept { return error.empty(); }
  static status fail(std::string e) { return status{std::move(e)}; }
};

/// Totals since the registry was created.
struct registry_counters {
  std::uint64_t batches = 0;              // rollback_many calls
  std::uint64_t objects_unregistered = 0;
  std::uint64_t gps_elided = 0;           // GPs a batch skipped (cookie already elapsed)
  std::uint64_t dismantle_elided = 0;     // sub-component GPs skipped thanks to the dismantle flag
  std::uint64_t legacy_extra_gps = 0;     // GPs the legacy path added to match 2.6.32
  std::uint64_t max_lock_hold_ns = 0;     // longest writer-lock hold of one command
  std::uint64_t stall_reports = 0;
};

template <class Flavor>
class registry final : private grace_periods {
 public:
  using domain_type = rcubatch::grace_domain<Flavor>;
  using batch_type = rcubatch::batch;

  explicit registry(unreg_mode mode = unreg_mode::batched)
      : mode_(mode), flavor_(&Flavor::table()), init_net_(std::make_unique<netns>("", flavor_)) {
    notifiers_.subscribe(vlan_cascade_);
    notifiers_.subscribe(macvlan_cascade_);
    notifiers_.subscribe(fib_);
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

  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  unreg_mode mode() const noexcept { return mode_; }
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

  status link_add(netns& ns, const link_request& req) {
    writer_section w(*this);
    return link_add_locked(ns, req);
  }

  status link_set(netns& ns, std::string_view name, bool up) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device \"" + std::string(name) + "\"");
    if (up && !dev->is_up()) open_device(*dev);
    if (!up && dev->is_up()) close_device(*dev);
    return {};
  }

  status link_del(netns& ns, std::string_view name) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device \"" + std::string(name) + "\"");
    rcubatch::unreg_queue<net_device> q;
    dellink(*dev, q);
    unregister(q);
    return {};
  }

  status addr_add(netns& ns, std::string_view name, ipv4_prefix p) {
    writer_section w(*this);
    net_device* dev = ns.find_locked(name);
    if (dev == nullptr) return status::fail("Cannot find device \"" + std::string(name) + "\"");
    for (const ipv4_prefix& a : dev->addresses)
      if (a.address == p.address && a.length == p.length) return status::fail("RTNETLINK answers: File exists");
    dev->addresses.reserve(dev->addresses.size() + 1);  // the allocations first: then nothing below fails half-way
    ns.routes().add_connected(*dev, p);
    dev->addresses.push_back(p);
    return {};
  }

  status netns_add(const std::string& name) {
    writer_section w(*this);
    if (name.empty() || name.find('/') != std::string::npos) return status::fail("invalid netns name \"" + name + "\"");
    if (namespaces_.contains(name)) return status::fail("Cannot create namespace \"" + name + "\": File exists");
    namespaces_.emplace(name, std::make_unique<netns>(name, flavor_));
    return {};
  }

  /// Deletes every named namespace; all their devices go in one batch (cleanup_net's kill list).
  status netns_del(const std::vector<std::string>& names) {
    writer_section w(*this);
    std::vector<netns*> doomed;
    for (const std::string& n : names) {
      netns* ns = n.empty() ? nullptr : find_netns(n);
      if (ns == nullptr) return status::fail("Cannot remove namespace \"" + n + "\": No such file or directory");
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
  status module_load_dummy(long count) {
    if (count < 0 || count > 10'000'000) return status::fail("numdummies out of range");
    writer_section w(*this);
    link_request req;
    auto name_of = [&req](long i) {
      req.name = "dummy";
      req.name += std::to_string(i);  // IFNAMSIZ-bounded: stays in the string's inline buffer
    };
    // Bad input changes nothing: refuse before creating any device if a name is taken (O(1) per
    // name), rather than create and roll back (ifindexes, batches and GPs would show it).
    for (long i = 0; i < count; ++i) {
      name_of(i);
      if (init_net_->name_taken(req.name)) return status::fail(req.name + " already exists");
    }
    for (long i = 0; i < count; ++i) {
      name_of(i);
      // Cannot fail now: the names are free and valid, and nothing else runs under the section.
      if (status s = link_add_locked(*init_net_, req); !s.ok()) return s;
    }
    return {};
  }

  /// `rmmod TYPE`: every device of that link type in every namespace, one batch (__rtnl_kill_links).
  status module_unload(link_kind kind) {
    writer_section w(*this);
    rcubatch::unreg_queue<net_device> q;
    for (netns* ns : all_namespaces())
      ns->for_each_device([&](net_device& d) {
        if (d.kind == kind) dellink(d, q);
      });
    unregister(q);
    return {};
  }

  // ---- observation ------------------------------------------------------------------------------

  registry_counters counters() const noexcept { return counters_; }
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
    net_device* lower = nullptr;
    if (status s = check_newlink(ns, req, lower); !s.ok()) return s;
    net_device& dev = *new net_device(req.name, req.kind, ns, next_ifindex_.fetch_add(1));
    // ndo_init first: the link state is complete before any reader can find the device by name
    // or index (an xmit sender looks tunnels up by name and reads dev->link at once).
    switch (req.kind) {
      case link_kind::dummy: break;
      case link_kind::vlan: vlan::init(dev, *lower, static_cast<std::uint16_t>(req.vid)); break;
      case link_kind::macvlan: macvlan::init(dev, *lower, flavor_); break;
      case link_kind::ipip:
      case link_kind::gre: {
        auto& t = dev.link.emplace<tunnel_link>();
        t.params = req.tunnel;
        // Lockless xmit unless the tunnel stamps output sequences (seed 001); 2.6.32 had no LLTX.
        t.lltx = mode_ == unreg_mode::batched && !req.tunnel.oseq;
        break;
      }
    }
    {
      rcubatch::read_guard<Flavor> section;  // rculfhash updates run inside a read-side section
      ns.publish(dev);
    }
    ns.grow_indexes();
    dev.mark_registered();
    // Then the secondary structures that lead readers to it (list_netdevice, then the link type's).
    switch (req.kind) {
      case link_kind::dummy: break;
      case link_kind::vlan: vlan::attach(dev); break;
      case link_kind::macvlan: macvlan::attach(dev); break;
      case link_kind::ipip:
      case link_kind::gre: ns.tunnels(req.kind).add(dev); break;  // cannot fail: the key was checked free
    }
    notifiers_.notify({netdev_event_kind::registered, &dev, nullptr});
    return {};
  }

  // ---- the rcubatch policy: the phases of unregister_netdevice_many ---------------------------

  /// A running batch seen through the flavor-agnostic interface.
  class batch_context final : public unreg_context {
   public:
    explicit batch_context(batch_type& b) noexcept : b_(b) {}
    bool queue(net_device& d) noexcept override { return b_.queue(d); }
    void retire(rcubatch::retire_node& n) noexcept override { b_.retire(n); }

   private:
    batch_type& b_;
  };

  struct device_policy {
    registry& r;

    /// Phase 1, once per round. Every device here is dismantling, so closing skips both the
    /// dev_deactivate grace period (v3.0's dev_deactivate_many) and the macvlan hash_del one.
    void close_many(rcubatch::object_range<net_device> devices) noexcept {
      for (net_device& d : devices)
        if (d.is_up()) r.stop_device(d);
    }
    void unlist(net_device& d) noexcept {
      rcubatch::read_guard<Flavor> section;  // one inline read lock for the list and both hashes
      d.ns->unpublish(d);
    }
    void notify(net_device& d, batch_type& b) noexcept {
      batch_context ctx(b);
      r.notifiers_.notify({netdev_event_kind::unregister, &d, &ctx});
    }
    void batch_notify(batch_type& b) noexcept {
      batch_context ctx(b);
      r.notifiers_.notify({netdev_event_kind::unregister_batch, nullptr, &ctx});
    }
    /// ndo_uninit: unlink from the link type's secondary structures. Returns whether anything
    /// readers can reach was unlinked, so a batch of plain dummies skips grace period #2.
    bool uninit(net_device& d, batch_type& b) noexcept {
      batch_context ctx(b);
      switch (d.kind) {
        case link_kind::dummy: return false;
        case link_kind::vlan: return vlan::uninit(d, ctx);
        case link_kind::macvlan: return macvlan::uninit(d, ctx);
        case link_kind::ipip:
        case link_kind::gre: d.ns->tunnels(d.kind).remove(d); return true;
      }
      return false;
    }
    void destroy(net_device* d) noexcept {
      if (d->kind == link_kind::vlan) vlan::release_lower(*d);
      if (d->kind == link_kind::macvlan) macvlan::release_lower(*d);
      delete d;
    }
    std::string_view name(const net_device& d) const noexcept { return d.name; }
  };

  // ---- grace_periods, for link-type code --------------------------------------------------------

  bool synchronize_unless_dismantling(const net_device& d) noexcept override {
    return rcubatch::synchronize_unless_dismantling(d, domain_);
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

  status check_newlink(netns& ns, const link_request& req, net_device*& lower) {
    if (req.name.empty() || req.name.size() > 15 ||
        req.name.find_first_of("/ \t:") != std::string::npos || (req.name.size() <= 2 && req.name.find_first_not_of('.') == std::string::npos))  // ".", ".."
      return status::fail("\"" + req.name + "\" is not a valid device name");
    if (ns.name_taken(req.name)) return status::fail("RTNETLINK answers: File exists (" + req.name + ")");
    const bool stacked = req.kind == link_kind::vlan || req.kind == link_kind::macvlan;
    if (!stacked && !req.lower.empty()) return status::fail(std::string(to_string(req.kind)) + " takes no lower device");
    if (stacked) {
      if (req.lower.empty()) return status::fail(std::string(to_string(req.kind)) + " needs \"link LOWER\"");
      lower = ns.find_locked(req.lower);
      if (lower == nullptr) return status::fail("Cannot find device \"" + req.lower + "\"");
    }
    if (req.kind == link_kind::vlan) {
      if (req.vid < 0) return status::fail("vlan needs \"id N\"");
      if (std::string e = vlan::check_newlink(*lower, req.vid); !e.empty()) return status::fail(e);
    }
    if (req.kind == link_kind::macvlan)
      if (std::string e = macvlan::check_newlink(*lower); !e.empty()) return status::fail(e);
    if (req.kind == link_kind::ipip || req.kind == link_kind::gre) {
      if (!req.has_remote || !req.has_local) return status::fail("tunnel needs \"remote A local B\"");
      if (req.kind == link_kind::ipip && (req.tunnel.has_key || req.tunnel.oseq))
        return status::fail("ipip takes no key or oseq");
      if (ns.tunnels(req.kind).contains(req.tunnel))
        return status::fail("RTNETLINK answers: File exists (a tunnel with these endpoints and key)");
    } else if (req.has_remote || req.has_local || req.tunnel.has_key || req.tunnel.oseq) {
      return status::fail(std::string(to_string(req.kind)) + " takes no tunnel parameters");
    }
    return {};
  }

  /// rtnl_link_ops->dellink: queue, never unregister directly. Idempotent.
  void dellink(net_device& d, rcubatch::unreg_queue<net_device>& q) { q.push(d); }

  void open_device(net_device& d) {
    if (d.kind == link_kind::macvlan) macvlan::open(d);
    d.up.store(true, std::memory_order_release);
    notifiers_.notify({netdev_event_kind::up, &d, nullptr});
  }

  /// ndo_stop plus the state change; the macvlan unhash waits unless the device is dismantling.
  void stop_device(net_device& d) noexcept {
    notifiers_.notify({netdev_event_kind::going_down, &d, nullptr});
    if (d.kind == link_kind::macvlan) macvlan::stop(d, *this);
    d.up.store(false, std::memory_order_release);
    notifiers_.notify({netdev_event_kind::down, &d, nullptr});
  }

  /// dev_close of a device that stays registered (or of one device in legacy mode): the queue
  /// deactivation costs a grace period, in every kernel era.
  void close_device(net_device& d) {
    domain_.synchronize();  // dev_deactivate: no transmitter is still inside the old qdisc
    stop_device(d);
  }

  void unregister(rcubatch::unreg_queue<net_device>& q) {
    if (q.empty()) return;
    if (mode_ == unreg_mode::batched) {
      account(rcubatch::rollback_many(q, device_policy{*this}, domain_, options_));
      return;
    }
    // Pop one at a time: unregistering a device frees its dependents, which may sit later in q.
    while (!q.empty()) {
      net_device& d = *q.begin();
      q.remove(d);
      unregister_legacy(d, q);
    }
  }

  /// 2.6.32's rollback_registered(dev), dependents first (its vlan/macvlan notifiers unregistered
  /// each upper device alone, with all of that device's grace periods).
  void unregister_legacy(net_device& d, rcubatch::unreg_queue<net_device>& pending) {
    std::vector<net_device*> deps = vlan::dependents(d);
    for (net_device* m : macvlan::dependents(d)) deps.push_back(m);
    for (net_device* dep : deps) {
      pending.remove(*dep);  // O(1); it goes now, with its lower device
      unregister_legacy(*dep, pending);
    }

    // dev_close: dev_deactivate's grace period (+1 if UP). ndo_stop runs in the batch's close_many
    // below, where a macvlan's hash_del pays its own grace period (+1): 2.6.32 had no dismantle
    // flag, so the batch runs with mark_dismantle = false.
    if (d.is_up()) domain_.synchronize();
    if (d.kind == link_kind::vlan) {
      domain_.synchronize();  // unregister_vlan_dev's per-VID synchronize_net
      ++counters_.legacy_extra_gps;
    }
    rcubatch::rollback_options legacy = options_;
    legacy.mark_dismantle = false;
    const rcubatch::batch_stats s = rcubatch::unregister_one(d, device_policy{*this}, domain_, legacy);
    account(s);
    for (unsigned paid = s.grace_periods + s.gps_elided; paid < 2; ++paid) {
      domain_.synchronize();  // 2.6.32 always ran both synchronize_net calls
      ++counters_.legacy_extra_gps;
    }
  }

  void account(const rcubatch::batch_stats& s) noexcept {
    ++counters_.batches;
    counters_.objects_unregistered += s.objects;
    counters_.gps_elided += s.gps_elided;
    counters_.dismantle_elided += s.dismantle_elided;
    counters_.stall_reports += s.stall_reports;
    last_batch_ = s;
  }

  const unreg_mode mode_;
  const rcu_flavor_struct* const flavor_;
  domain_type domain_;
  std::mutex rtnl_;
  std::atomic<int> next_ifindex_{1};
  std::unique_ptr<netns> init_net_;
  std::map<std::string, std::unique_ptr<netns>, std::less<>> namespaces_;  // writer lock
  notifier_chain notifiers_;
  vlan::cascade vlan_cascade_;
  macvlan::cascade macvlan_cascade_;
  fib_notifier fib_;
  rcubatch::rollback_options options_{};
  registry_counters counters_{};          // writer lock
  rcubatch::batch_stats last_batch_{};    // writer lock
};

}  // namespace netdev
