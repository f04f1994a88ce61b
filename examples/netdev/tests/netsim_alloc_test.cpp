// Out of memory inside commands: `module load dummy numdummies=N` (and link add) fail cleanly and
// leave nothing when any one of their allocations throws std::bad_alloc.
//
// This binary replaces the global operator new (its own executable: the other tests keep the
// sanitizers' allocator checks) so that a test can make exactly the K-th allocation from now throw.
#include <gtest/gtest.h>

#include "netsim/session.hpp"
#include "../../../tests/support/replaced_operator_new.hpp"  // g_allocations_until_failure

namespace {

using flavor = rcubatch::flavor::memb;

TEST(netsim_alloc, module_load_that_runs_out_of_memory_creates_nothing) {
  rcubatch::thread_registration<flavor> registration;
  int failed = 0;
  for (long k : {0L, 1L, 2L, 10L, 100L, 1000L, 1999L, 2001L}) {
    netdev::registry<flavor> reg(netdev::unreg_mode::batched);
    const auto gps = reg.domain().stats().grace_periods;
    g_allocations_until_failure = k;
    const netdev::status s = reg.module_load_dummy(1000);  // 1 reserve + 1000 devices
    const bool injected = g_allocations_until_failure.exchange(-1) < 0;
    if (!injected) {  // the command made fewer than k + 1 allocations: it succeeded
      EXPECT_TRUE(s.ok()) << k;
      continue;
    }
    ++failed;
    EXPECT_EQ(s.error, "modprobe: ERROR: could not insert 'dummy': Cannot allocate memory") << k;
    EXPECT_EQ(reg.device_count(), 1u) << k;  // lo only
    EXPECT_EQ(reg.counters().batches, 0u) << k;
    EXPECT_EQ(reg.domain().stats().grace_periods, gps) << k;
    EXPECT_EQ(reg.max_ifindex(), 1) << k;  // no ifindex used
    ASSERT_TRUE(reg.module_load_dummy(3).ok());  // and the registry still works
    EXPECT_EQ(reg.device_count(), 4u);
  }
  EXPECT_GE(failed, 6);
}

TEST(netsim_alloc, link_add_that_runs_out_of_memory_creates_nothing) {
  rcubatch::thread_registration<flavor> registration;
  for (auto kind : {netdev::link_kind::vlan, netdev::link_kind::macvlan, netdev::link_kind::gre}) {
    for (long k = 0; k < 40; ++k) {
      netdev::registry<flavor> reg(netdev::unreg_mode::batched);
      netdev::link_request lower;
      lower.name = "e";
      ASSERT_TRUE(reg.link_add(reg.init_net(), lower).ok());
      netdev::link_request req;
      req.name = "x";
      req.kind = kind;
      if (kind != netdev::link_kind::gre) req.lower = "e";
      req.vid = kind == netdev::link_kind::vlan ? 7 : -1;
      if (kind == netdev::link_kind::gre) {
        req.tunnel.remote = (10u << 24) | 1;  // not the fallback gre0's key (no endpoints, no key)
        req.has_remote = true;
      }
      g_allocations_until_failure = k;
      bool threw = false;
      try {
        (void)reg.link_add(reg.init_net(), req);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      const bool injected = g_allocations_until_failure.exchange(-1) < 0;
      if (!injected) break;  // k beyond the command's allocations
      ASSERT_TRUE(threw) << k;
      EXPECT_EQ(reg.device_count(), 2u) << netdev::to_string(kind) << " k=" << k;  // lo and e
      EXPECT_EQ(reg.max_ifindex(), 2) << k;
      ASSERT_TRUE(reg.link_add(reg.init_net(), req).ok()) << k;  // nothing half-made is in the way
    }
  }
}

}  // namespace
