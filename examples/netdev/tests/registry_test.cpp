// The registry's unregister flow, per link type and per cascade: device counts, grace periods,
// elisions, and that legacy and batched end in the same state.
#include <gtest/gtest.h>

#include "netdev/registry.hpp"

namespace {

using flavor = rcubatch::flavor::memb;
using registry = netdev::registry<flavor>;
using netdev::link_kind;
using netdev::link_request;

link_request dummy(std::string name) {
  link_request r;
  r.name = std::move(name);
  return r;
}
link_request stacked(std::string name, link_kind kind, std::string lower, long vid = -1) {
  link_request r;
  r.name = std::move(name);
  r.kind = kind;
  r.lower = std::move(lower);
  r.vid = vid;
  return r;
}
link_request tunnel(std::string name, link_kind kind, netdev::ipv4 remote, std::uint32_t key = 0) {
  link_request r;
  r.name = std::move(name);
  r.kind = kind;
  r.tunnel.remote = remote;
  r.tunnel.local = 1;
  r.has_remote = r.has_local = true;
  if (kind == link_kind::gre && key != 0) {
    r.tunnel.key = key;
    r.tunnel.has_key = true;
  }
  return r;
}

class registry_test : public ::testing::TestWithParam<netdev::unreg_mode> {
 protected:
  rcubatch::thread_registration<flavor> registration_;
  registry reg_{GetParam()};
  netdev::netns& net_ = reg_.init_net();
  std::uint64_t gps() { return reg_.domain().stats().grace_periods; }
  bool batched() const { return GetParam() == netdev::unreg_mode::batched; }
};

TEST_P(registry_test, every_link_type_is_created_and_deleted) {
  ASSERT_TRUE(reg_.link_add(net_, dummy("d0")).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("d0.5", link_kind::vlan, "d0", 5)).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("mv0", link_kind::macvlan, "d0")).ok());
  ASSERT_TRUE(reg_.link_add(net_, tunnel("tun0", link_kind::ipip, 2)).ok());
  ASSERT_TRUE(reg_.link_add(net_, tunnel("g0", link_kind::gre, 2, 9)).ok());
  EXPECT_EQ(reg_.device_count(), 8u);  // and lo, and the fallback tunl0 and gre0 their modules brought
  EXPECT_EQ(net_.tunnels(link_kind::gre).size(), 2u);
  for (const char* name : {"g0", "tun0", "mv0", "d0.5", "d0"}) EXPECT_TRUE(reg_.link_del(net_, name).ok()) << name;
  EXPECT_EQ(reg_.device_count(), 3u);  // lo, tunl0, gre0 (until the modules are unloaded)
  EXPECT_EQ(net_.tunnels(link_kind::gre).size(), 1u);
  EXPECT_EQ(net_.tunnels(link_kind::ipip).size(), 1u);
  EXPECT_EQ(reg_.counters().objects_unregistered, 5u);
}

TEST_P(registry_test, deleting_a_lower_device_takes_its_vlans_in_one_batch) {
  ASSERT_TRUE(reg_.link_add(net_, dummy("d0")).ok());
  reg_.link_set(net_, "d0", true);
  for (int vid = 1; vid <= 100; ++vid) {
    ASSERT_TRUE(reg_.link_add(net_, stacked("v" + std::to_string(vid), link_kind::vlan, "d0", vid)).ok());
    reg_.link_set(net_, "v" + std::to_string(vid), true);
  }
  const auto before = gps();
  ASSERT_TRUE(reg_.link_del(net_, "d0").ok());
  EXPECT_EQ(reg_.device_count(), 1u);  // lo
  EXPECT_EQ(reg_.counters().objects_unregistered, 101u);
  if (batched()) {
    EXPECT_EQ(gps() - before, 2u);
    EXPECT_EQ(reg_.counters().batches, 1u);
    EXPECT_EQ(reg_.last_batch().dependents_added, 100u);
  } else {
    EXPECT_EQ(gps() - before, 100u * 4 + 3);  // per vlan 2 + UP + per-VID sync; the lower 2 + UP
  }
}

TEST_P(registry_test, macvlan_on_vlan_on_dummy_cascades_three_deep) {
  ASSERT_TRUE(reg_.link_add(net_, dummy("d0")).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("d0.10", link_kind::vlan, "d0", 10)).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("mv0", link_kind::macvlan, "d0.10")).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("mv1", link_kind::macvlan, "d0.10")).ok());
  reg_.link_set(net_, "mv0", true);
  const auto before = gps();
  ASSERT_TRUE(reg_.link_del(net_, "d0").ok());
  EXPECT_EQ(reg_.device_count(), 1u);  // lo
  if (batched()) {
    EXPECT_EQ(gps() - before, 2u);
    EXPECT_EQ(reg_.last_batch().rounds, 3u);
    EXPECT_EQ(reg_.counters().dismantle_elided, 1u);  // mv0 was UP: its hash_del GP elided
  } else {
    EXPECT_EQ(gps() - before, (2u + 2) + 2 + (2 + 1) + 2);  // mv0 UP+hash_del, mv1, vlan +1, d0
    EXPECT_EQ(reg_.counters().dismantle_elided, 0u);
  }
}

TEST_P(registry_test, up_macvlans_elide_one_grace_period_each_when_batched) {
  ASSERT_TRUE(reg_.link_add(net_, dummy("eth0")).ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(reg_.link_add(net_, stacked("mv" + std::to_string(i), link_kind::macvlan, "eth0")).ok());
    reg_.link_set(net_, "mv" + std::to_string(i), true);
  }
  EXPECT_EQ(reg_.init_net().find_locked("eth0")->macvlans.load()->hashed(), 50u);
  ASSERT_TRUE(reg_.module_unload(link_kind::macvlan).ok());
  EXPECT_EQ(reg_.counters().dismantle_elided, batched() ? 50u : 0u);
  EXPECT_EQ(reg_.init_net().find_locked("eth0")->macvlans.load(), nullptr);  // port retired
}

TEST_P(registry_test, removing_a_device_removes_its_routes_only) {
  for (int i = 0; i < 20; ++i) {
    const std::string name = "d" + std::to_string(i);
    ASSERT_TRUE(reg_.link_add(net_, dummy(name)).ok());
    ASSERT_TRUE(reg_.link_set(net_, name, true).ok());
    ASSERT_TRUE(reg_.addr_add(net_, name, *netdev::parse_prefix("72.0." + std::to_string(i) + ".1/24")).ok());
  }
  ASSERT_TRUE(reg_.addr_add(net_, "d3", *netdev::parse_prefix("72.0.3.9/32")).ok());
  EXPECT_EQ(reg_.route_count(), 20u);  // main: one prefix route each; the /32 has only its local route
  {
    rcubatch::read_guard<flavor> g;
    EXPECT_EQ(net_.routes().lookup(*netdev::parse_ipv4("72.0.3.9"))->prefix.length, 32u);  // longest wins
    EXPECT_EQ(net_.routes().lookup(*netdev::parse_ipv4("72.0.3.7"))->dev->name, "d3");
  }
  ASSERT_TRUE(reg_.link_del(net_, "d3").ok());
  EXPECT_EQ(reg_.route_count(), 19u);
  EXPECT_EQ(reg_.last_batch().retired, 3u);  // its prefix route and two local routes, retired into the batch
  rcubatch::read_guard<flavor> g;
  EXPECT_EQ(net_.routes().lookup(*netdev::parse_ipv4("72.0.3.7")), nullptr);
  EXPECT_EQ(net_.routes().lookup(*netdev::parse_ipv4("72.0.4.7"))->dev->name, "d4");
}

TEST_P(registry_test, deleting_two_namespaces_with_tunnels_is_one_batch) {
  ASSERT_TRUE(reg_.netns_add("blue").ok());
  ASSERT_TRUE(reg_.netns_add("red").ok());
  for (const char* ns : {"blue", "red"}) {
    netdev::netns& n = *reg_.find_netns(ns);
    for (std::uint32_t i = 1; i <= 10; ++i) {
      ASSERT_TRUE(reg_.link_add(n, tunnel("ipip" + std::to_string(i), link_kind::ipip, i)).ok());
      ASSERT_TRUE(reg_.link_add(n, tunnel("gre" + std::to_string(i), link_kind::gre, i, i)).ok());
    }
  }
  ASSERT_TRUE(reg_.link_add(net_, dummy("stays")).ok());
  const auto before = gps();
  ASSERT_TRUE(reg_.netns_del({"blue", "red"}).ok());
  EXPECT_EQ(reg_.device_count(), 4u);  // lo, stays, tunl0 and gre0
  EXPECT_EQ(reg_.find_netns("blue"), nullptr);
  if (batched()) {
    EXPECT_EQ(reg_.counters().batches, 1u);
    EXPECT_EQ(reg_.counters().objects_unregistered, 46u);  // 40 tunnels, the two lo, two tunl0 and two gre0
    EXPECT_EQ(gps() - before, 2u);
  } else {
    EXPECT_EQ(gps() - before, 92u);
  }
}

TEST_P(registry_test, a_failing_link_add_changes_nothing) {
  ASSERT_TRUE(reg_.link_add(net_, dummy("d0")).ok());
  ASSERT_TRUE(reg_.link_add(net_, stacked("d0.7", link_kind::vlan, "d0", 7)).ok());
  ASSERT_TRUE(reg_.link_add(net_, tunnel("g1", link_kind::gre, 5, 3)).ok());
  const std::vector<link_request> bad{
      dummy("d0"),                                      // duplicate name
      // (no name is not here: rtnl_newlink names it "dummy%d", as a_link_without_a_name_... tests)
      dummy("a-name-much-too-long"),                    // > 15 characters
      stacked("v", link_kind::vlan, "d0", -1),          // vid out of range (0 is valid: vlan_validate)
      stacked("v", link_kind::vlan, "d0", 4095),
      stacked("v", link_kind::vlan, "lo", 8),           // lo is NETIF_F_VLAN_CHALLENGED
      stacked("m", link_kind::macvlan, "lo"),           // macvlan_port_create: not on a loopback
      stacked("v", link_kind::vlan, "d0", 7),           // vid taken
      stacked("v", link_kind::vlan, "nope", 8),         // missing lower
      stacked("v", link_kind::vlan, "", 8),             // no lower
      stacked("m", link_kind::macvlan, "g1"),           // macvlan on a tunnel
      tunnel("g2", link_kind::gre, 5, 3),               // tunnel key taken
      [] {  // no endpoints, no key: the fallback gre0's key (ip_tunnel_newlink → ip_tunnel_find: EEXIST)
        link_request r = tunnel("g3", link_kind::gre, 0);
        r.tunnel.local = 0;
        return r;
      }(),
  };
  for (const link_request& r : bad) {
    const auto devices = reg_.device_count();
    EXPECT_FALSE(reg_.link_add(net_, r).ok()) << r.name;
    EXPECT_EQ(reg_.device_count(), devices) << r.name;
  }
  EXPECT_FALSE(reg_.link_del(net_, "nope").ok());
  EXPECT_FALSE(reg_.link_set(net_, "nope", true).ok());
  EXPECT_FALSE(reg_.addr_add(net_, "nope", *netdev::parse_prefix("1.2.3.4/8")).ok());
  EXPECT_FALSE(reg_.netns_del({"nope"}).ok());
  EXPECT_EQ(reg_.route_count(), 0u);
  EXPECT_EQ(reg_.counters().batches, 0u);
}

INSTANTIATE_TEST_SUITE_P(modes, registry_test,
                         ::testing::Values(netdev::unreg_mode::batched, netdev::unreg_mode::legacy),
                         [](const ::testing::TestParamInfo<netdev::unreg_mode>& p) {
                           return p.param == netdev::unreg_mode::batched ? "batched" : "legacy";
                         });

TEST(registry, ten_thousand_down_dummies_unload_with_one_grace_period_batched_and_two_each_legacy) {
  rcubatch::thread_registration<flavor> registration;
  for (auto mode : {netdev::unreg_mode::batched, netdev::unreg_mode::legacy}) {
    registry reg(mode);
    ASSERT_TRUE(reg.module_load_dummy(10'000).ok());
    const auto before = reg.domain().stats().grace_periods;
    ASSERT_TRUE(reg.module_unload(link_kind::dummy).ok());
    // Batched: nothing was unlinked after GP #1 (dummies have no secondary structure), so #2 is skipped.
    EXPECT_EQ(reg.domain().stats().grace_periods - before, mode == netdev::unreg_mode::batched ? 1u : 20'000u);
    EXPECT_EQ(reg.device_count(), 1u);  // lo is no dummy
  }
}

TEST(registry, module_load_dummy_presizes_the_device_indexes_instead_of_growing_them) {
  rcubatch::thread_registration<flavor> registration;
  registry reg(netdev::unreg_mode::batched);
  // 20,000 devices from 4,096 buckets: growing by 4 would resize each index twice (16,384 and
  // 65,536 buckets); the count is known, so each is resized once, before the first add.
  ASSERT_TRUE(reg.module_load_dummy(20'000).ok());
  EXPECT_EQ(reg.init_net().index_resizes(), 2u) << "one resize per index (names, ifindexes)";
  rcubatch::read_guard<flavor> guard;
  for (int i = 0; i < 20'000; i += 997) {
    const netdev::net_device* d = reg.init_net().lookup_name("dummy" + std::to_string(i));
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(reg.init_net().lookup_index(d->ifindex), d);
  }
}

}  // namespace
