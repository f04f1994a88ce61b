// netdev/net_device.hpp — the registered object: a network device, as the registry and readers see it.
//
// One struct for every link type; the type-specific part sits in `link` (a vlan's lower device and
// VID, a macvlan's port, a tunnel's parameters). What readers may touch — name, ifindex, kind, mac,
// up, link — is fixed before the device is published, or atomic. Everything else is the writer's,
// under the registry lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/intrusive/list.hpp>
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registrable.hpp>
#include <urcu/list.h>

#include "netdev/ipv4.hpp"
#include "netdev/route.hpp"

namespace netdev {

struct net_device;
class netns;
class vlan_group;
class macvlan_port;

/// `loopback` is the namespace's `lo` (loopback_net_init): never created by `link add`.
enum class link_kind : unsigned char { dummy, vlan, macvlan, ipip, gre, loopback };
std::string_view to_string(link_kind k) noexcept;
/// A type `ip link add ... type T` can create (not loopback).
std::optional<link_kind> parse_link_kind(std::string_view s) noexcept;

/// Linux's MAX_NEST_DEV: __netdev_upper_dev_link refuses a link that makes a stack of more than
/// this many levels (lower_level of the lower device + 1) with EMLINK, "Too many links".
inline constexpr int kMaxNestDev = 8;
/// IPV4_MIN_MTU: below it a device has no IPv4 (inetdev_valid_mtu, net/ipv4/devinet.c).
inline constexpr unsigned kIpv4MinMtu = 68;
/// ETH_MIN_MTU: the min_mtu ether_setup gives an Ethernet device that keeps it (macvlan);
/// dev_validate_mtu refuses less ("mtu less than device minimum").
inline constexpr unsigned kEthMinMtu = 68;

using mac_address = std::array<std::uint8_t, 6>;

/// The RCU hash indexes of the example (rcubatch::hlist_index, rcubatch::lfht_index for the FIB) run on the flavor netsim picks on its
/// command line, so that the link-type code stays in plain, flavor-agnostic .cpp files.
using index_flavor = rcubatch::lfht_runtime_flavor;

/// A node of the namespace's device list (liburcu rculist) that knows its device. net_device is
/// not standard-layout (it derives from registrable), so offsetof-based container_of on it is not
/// portable; this small struct is (lfht_hook carries its owner the same way).
struct device_list_node {
  cds_list_head link{};
  net_device* dev = nullptr;
  static net_device* owner(cds_list_head* l) noexcept { return caa_container_of(l, device_list_node, link)->dev; }
};
std::string to_string(const mac_address& m);

/// The link state vlan and macvlan share as stacked devices (netdev/upper_device.hpp).
struct upper_link {
  net_device* self = nullptr;
  net_device* lower = nullptr;  // held (refs) for the upper's lifetime, like dev_hold(real_dev)
};

struct vlan_link : upper_link {
  std::uint16_t vid = 0;
  bool protocol_8021ad = false;  // `protocol 802.1ad` (default 802.1Q)
  boost::intrusive::list_member_hook<> group_hook;  // vlan_group::members_; writer lock
};

/// `type macvlan mode M` (macvlan_common_newlink; default vepa).
enum class macvlan_mode : unsigned char { vepa, private_, bridge, passthru, source };
std::string_view to_string(macvlan_mode m) noexcept;
std::optional<macvlan_mode> parse_macvlan_mode(std::string_view s) noexcept;

struct macvlan_link : upper_link {
  macvlan_mode mode = macvlan_mode::vepa;
  macvlan_port* port = nullptr;
  bool hashed = false;          // in the port's MAC hash (net_device::mac_hook) while UP; writer lock
  boost::intrusive::list_member_hook<> port_hook;  // macvlan_port::members_; writer lock
};

struct tunnel_params {
  ipv4 remote = 0;
  ipv4 local = 0;
  std::uint32_t key = 0;
  bool has_key = false;
  bool oseq = false;  // gre: stamp an output sequence number, which needs the tx lock
  /// The namespace's fallback device of its type (gre0, tunl0: itn->fb_tunnel_dev), which
  /// rtnl's dellink leaves in place (ip_tunnel_dellink). Not part of the key.
  bool fallback = false;
};

/// Transmit statistics, one slot per sending thread: no shared counter bounces between cores
/// (the kernel's per-CPU tstats); a reader sums the slots.
struct alignas(64) tx_stats_slot {
  std::atomic<std::uint64_t> packets{0};  // bytes: packets × detail::kPacketBytes (one frame size)
};
inline constexpr std::size_t kTxStatSlots = 32;

/// A tunnel's transmit state: 2 KiB of per-thread stats slots and the tx lock. Allocated apart
/// from the device (tunnel_link::tx), so that dummies, vlans and macvlans stay small: inline, it
/// made every net_device 2,560 bytes, and 100,000 dummies 256 MB of page faults and cache misses.
struct tunnel_tx {
  alignas(64) std::mutex tx_lock;  // the per-device xmit lock (HARD_TX_LOCK) when !lltx
  std::uint32_t o_seqno = 0;       // guarded by tx_lock
  std::array<tx_stats_slot, kTxStatSlots> stats{};
};

struct tunnel_link {
  tunnel_params params;          // fixed at creation; read by xmit under RCU through the device
  bool lltx = true;              // lockless xmit allowed (false with oseq, or in legacy mode)
  std::unique_ptr<tunnel_tx> tx = std::make_unique<tunnel_tx>();  // lives as long as the device
};

struct net_device : rcubatch::registrable<net_device> {
  static constexpr std::uint32_t kAlive = 0x6e657464;
  static constexpr std::uint32_t kDead = 0xdeaddead;

  net_device(std::string n, link_kind k, netns& owner, int index);
  ~net_device() { magic.store(kDead, std::memory_order_relaxed); }

  bool is_up() const noexcept { return up.load(std::memory_order_acquire); }

  // Readers check it: a reader that sees kDead found a destroyed device (ASan reports it too).
  std::atomic<std::uint32_t> magic{kAlive};
  const std::string name;
  const int ifindex;
  const link_kind kind;
  netns* const ns;
  const mac_address mac;
  std::atomic<bool> up{false};  // IFF_UP; changed under the writer lock

  // The namespace's indexes (netns.hpp), and the per-type ones: index hooks are members of the
  // indexed type, so those of a macvlan and a tunnel sit here rather than in `link`. All hlist_index:
  // every update happens under the writer lock (RTNL), as the kernel's hashes do.
  rcubatch::hlist_hook<net_device> name_hook;   // hlist_index: the kernel's dev_name_head
  rcubatch::hlist_hook<net_device> index_hook;  // and dev_index_head, both under the writer lock
  rcubatch::hlist_hook<net_device> mac_hook;     // macvlan: its port's MAC hash (macvlan.hpp)
  rcubatch::hlist_hook<net_device> tunnel_hook;  // ipip, gre: the namespace's tunnel table
  device_list_node list_node{};  // the namespace's device list (liburcu rculist)

  // As a lower device: published with release stores, read by receive-side lookups.
  std::atomic<vlan_group*> vlans{nullptr};
  std::atomic<macvlan_port*> macvlans{nullptr};

  // As an upper device or tunnel.
  std::variant<std::monostate, vlan_link, macvlan_link, tunnel_link> link;

  // Writer lock only.
  /// Levels of devices at and below this one (1: no lower), as dev->lower_level.
  int lower_level = 1;
  unsigned mtu = 1500;
  struct address {
    ipv4_prefix prefix;
    bool secondary = false;      // IFA_F_SECONDARY: a primary of the same subnet exists
    bool noprefixroute = false;  // IFA_F_NOPREFIXROUTE
  };
  std::vector<address> addresses;
  /// Whether the device has its IPv4 part (dev->ip_ptr, the in_device): inetdev_event drops it
  /// when the MTU falls below 68 (NETDEV_CHANGEMTU, inetdev_valid_mtu) with every address, and
  /// makes an empty one when the MTU is raised again.
  bool has_in_device = true;
  boost::intrusive::list<route, boost::intrusive::member_hook<route, boost::intrusive::list_member_hook<>,
                                                              &route::dev_hook>>
      routes;
};

}  // namespace netdev
