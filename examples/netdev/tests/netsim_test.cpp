// The netsim interpreter: iproute2 syntax, script extensions, errors with file:line, -force, and
// legacy and batched modes ending in the same state for the same script.
#include <gtest/gtest.h>

#include <sstream>

#include "script_run.hpp"

namespace {

using netsim_test::outcome;

/// A script that must read without error (a syntax test would say what it expects instead).
outcome run(const std::string& script, netdev::unreg_mode mode = netdev::unreg_mode::batched, bool force = false) {
  outcome o = netsim_test::run_script(script, "test.batch", mode, force);
  EXPECT_TRUE(o.read_errors.empty());
  return o;
}

TEST(netsim, runs_the_iproute2_commands) {
  auto o = run(
      "link add name eth0 type dummy\n"
      "link add link eth0 name eth0.3 type vlan id 3\n"
      "link set dev eth0 up\n"
      "link set dev eth0.3 up\n"
      "addr add 10.1.2.3/16 dev eth0.3\n"
      "route get 10.1.9.9\n"
      "link show type vlan\n");
  EXPECT_TRUE(o.result.ok) << o.err;
  EXPECT_NE(o.out.find("10.1.9.9 dev eth0.3 (10.1.0.0/16)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("3: eth0.3@eth0: <UP> type vlan"), std::string::npos) << o.out;  // lo is 1
  EXPECT_EQ(o.out.find("type dummy"), std::string::npos);
  EXPECT_EQ(o.result.devices, 3u);
  EXPECT_EQ(o.result.routes, 1u);
}

TEST(netsim, for_default_and_expressions_expand) {
  auto o = run(
      "default N 30\n"
      "for i 1 {N} link add name d{i} type dummy\n"
      "for i 1 {N} addr add 72.{i/250}.{i%250}.1/24 dev d{i}\n"
      "for i 1 {N} link set d{i} up\n"
      "time link del d{N/2}\n");
  EXPECT_TRUE(o.result.ok) << o.err;
  EXPECT_EQ(o.result.devices, 30u);  // 29 and lo
  EXPECT_EQ(o.result.routes, 29u);
  EXPECT_NE(o.err.find("time: link del d15:"), std::string::npos) << o.err;
}

TEST(netsim, a_substituted_value_is_not_expanded_again) {
  // A -D value may itself contain "{X}"; expanding it again would never end.
  netsim::variables vars;
  vars.set("X", "{X}");
  std::string word = "d{X}";
  EXPECT_FALSE(vars.substitute(word).has_value());
  EXPECT_EQ(word, "d{X}");
  vars.set("N", "7");
  word = "{X}.{N}";
  EXPECT_FALSE(vars.substitute(word).has_value());
  EXPECT_EQ(word, "{X}.7");
}

TEST(netsim, every_bad_input_is_reported_with_file_and_line_and_changes_nothing) {
  const std::vector<std::string> bad{
      "link del nosuch",
      "link add name d0 type dummy",  // duplicate (d0 exists)
      "link add name v type vlan id 5",
      "link add link nosuch name v type vlan id 5",
      "link add link d0 name v type vlan id 4095",
      "link add link d0 name v type vlan id x",
      "link add link d0 name v type vlan",
      "link add name t type gre remote 10.0.0.300 local 10.0.0.1",
      "link add name t type gre",  // the fallback gre0's key (ip_tunnel_find: EEXIST); one endpoint is fine
      "link add name t type ipip remote 1.1.1.1 local 1.1.1.2 oseq",
      "link add name x type bogus",
      "link add name x",
      "link set d0 sideways",
      "addr add 10.0.0.1/33 dev d0",
      "addr add 10.0.0.1/8 dev nosuch",
      "route get 10.0.0.1",
      "route get ten",
      "netns del nosuch",
      "-n nosuch link show",
      "module load dummy numdummies=x",
      "xmit d0 packets 10 threads 2",
      "xmit nosuch packets 10 threads 2",
      "frobnicate",
      "for i 1 x link show",
      "link add name d{i/0} type dummy",
  };
  for (const std::string& cmd : bad) {
    auto o = run("default i 1\nlink add name d0 type dummy\n" + cmd + "\nlink add name after type dummy\n");
    EXPECT_FALSE(o.result.ok) << cmd;
    EXPECT_NE(o.err.find("test.batch:3: error: "), std::string::npos) << cmd << " → " << o.err;
    EXPECT_EQ(o.result.devices, 2u) << cmd;  // lo and d0: stopped at line 3, and line 3 had no effect
    EXPECT_EQ(o.result.routes, 0u) << cmd;
  }
}

TEST(netsim, force_goes_on_after_an_error_and_still_fails_at_the_end) {
  auto o = run("link del nosuch\nlink add name d0 type dummy\n", netdev::unreg_mode::batched, true);
  EXPECT_FALSE(o.result.ok);
  EXPECT_EQ(o.result.errors, 1);
  EXPECT_EQ(o.result.devices, 2u);  // d0 and lo
}

TEST(netsim, legacy_and_batched_end_in_the_same_state) {
  const std::string script =
      "link add name eth0 type dummy\n"
      "link set eth0 up\n"
      "for i 1 20 link add link eth0 name eth0.{i} type vlan id {i}\n"
      "for i 1 5 link add link eth0.{i} name mv{i} type macvlan\n"
      "for i 1 5 link set mv{i} up\n"
      "for i 1 5 addr add 10.0.{i}.1/24 dev mv{i}\n"
      "link add name keep type dummy\n"
      "addr add 192.168.0.1/24 dev keep\n"
      "netns add blue\n"
      "-n blue link add name g type gre remote 1.1.1.1 local 2.2.2.2\n"
      "link del eth0.3\n"
      "module load dummy numdummies=5\n"
      "link del dummy2\n"
      "link show\n"
      "time link del eth0\n"
      "link show\n";
  auto batched = run(script, netdev::unreg_mode::batched);
  auto legacy = run(script, netdev::unreg_mode::legacy);
  ASSERT_TRUE(batched.result.ok) << batched.err;
  ASSERT_TRUE(legacy.result.ok) << legacy.err;
  EXPECT_EQ(batched.out, legacy.out);
  EXPECT_EQ(batched.result.devices, legacy.result.devices);
  EXPECT_EQ(batched.result.routes, legacy.result.routes);
  EXPECT_EQ(batched.result.objects_unregistered, legacy.result.objects_unregistered);
  EXPECT_EQ(batched.result.devices, 10u);  // keep, dummy0,1,3,4, g, and lo and gre0 in both namespaces
  EXPECT_LT(batched.result.grace_periods, legacy.result.grace_periods);
  ASSERT_EQ(batched.result.timings.size(), 1u);
  EXPECT_EQ(batched.result.timings[0].grace_periods, 2u);  // eth0 + 19 vlans + 4 macvlans, one batch
  EXPECT_EQ(batched.result.timings[0].dismantle_elided, 4u);  // mv3 already went with eth0.3
}

TEST(netsim, gre_xmit_is_lockless_unless_oseq_or_legacy) {
  const std::string lltx = "link add name g type gre remote 1.1.1.1 local 2.2.2.2\nxmit g packets 1000 threads 2\n";
  const std::string oseq = "link add name g type gre remote 1.1.1.1 local 2.2.2.2 oseq\nxmit g packets 1000 threads 2\n";
  EXPECT_NE(run(lltx).out.find("sent 1000 packets (200000 bytes), dropped 0, lockless"), std::string::npos);
  EXPECT_NE(run(oseq).out.find("dropped 0, tx-locked"), std::string::npos);
  EXPECT_NE(run(lltx, netdev::unreg_mode::legacy).out.find("tx-locked"), std::string::npos);
}

}  // namespace
