// Devices go while readers look them up and senders transmit through them: nothing is used after
// it is freed (run under ASan), and a leaked reference stalls the batch with the kernel's message.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "netdev/readers.hpp"
#include "netdev/registry.hpp"
#include "netdev/xmit.hpp"

namespace {

using flavor = rcubatch::flavor::memb;

netdev::link_request gre(std::string name, netdev::ipv4 remote) {
  netdev::link_request r;
  r.name = std::move(name);
  r.kind = netdev::link_kind::gre;
  r.tunnel.remote = remote;
  r.tunnel.local = 1;
  r.has_remote = r.has_local = true;
  return r;
}

/// Waits (on an observable, not a clock) until tunnel `name` of `ns` has sent at least `packets`.
void wait_until_sent(netdev::netns& ns, std::string_view name, std::uint64_t packets) {
  for (;;) {
    {
      rcubatch::read_guard<flavor> guard;
      const netdev::net_device* d = ns.lookup_name(name);
      if (d != nullptr && netdev::tunnel_packets(std::get<netdev::tunnel_link>(d->link)) >= packets) return;
    }
    std::this_thread::yield();
  }
}

TEST(concurrency, devices_go_while_readers_and_senders_use_them) {
  rcubatch::thread_registration<flavor> registration;
  netdev::registry<flavor> reg;
  netdev::netns& net = reg.init_net();
  netdev::reader_pool<flavor> readers(reg, 2);
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(reg.link_add(net, gre("g", 7)).ok());
    for (int i = 0; i < 50; ++i) {
      netdev::link_request d;
      d.name = "d" + std::to_string(i);
      ASSERT_TRUE(reg.link_add(net, d).ok());
      ASSERT_TRUE(reg.addr_add(net, d.name, *netdev::parse_prefix("72.0." + std::to_string(i) + ".1/24")).ok());
      ASSERT_TRUE(reg.link_add(net, [&] {
        netdev::link_request v;
        v.name = "v" + std::to_string(i);
        v.kind = netdev::link_kind::vlan;
        v.lower = d.name;
        v.vid = 1;
        return v;
      }()).ok());
    }
    // A sender transmits until the tunnel disappears under it; the batch waits for its reference.
    std::atomic<std::uint64_t> sent{0};
    std::thread sender([&] { sent = netdev::run_xmit<flavor>(net, "g", 1'000'000'000, 1).sent; });
    ASSERT_TRUE(reg.module_unload(netdev::link_kind::dummy).ok());  // dummies + their vlans, one batch
    wait_until_sent(net, "g", 1);  // the sender is transmitting when its tunnel goes
    ASSERT_TRUE(reg.link_del(net, "g").ok());
    sender.join();
    EXPECT_GT(sent.load(), 0u);
    EXPECT_LT(sent.load(), 1'000'000'000u);  // it stopped because the device went away
    EXPECT_EQ(reg.device_count(), 2u);  // lo and gre0 (ip_gre stays loaded)
    EXPECT_EQ(reg.route_count(), 0u);
  }
  readers.stop();
  EXPECT_GT(readers.lookups(), 0u);
}

// A namespace deleted while a sender transmits through one of its tunnels: netns_del frees it only
// after the sender has let go (run_xmit holds it). Before the fix, ASan: heap-use-after-free in
// the sender's next lookup_name, on the freed namespace's name table.
TEST(concurrency, namespace_deleted_under_a_sender) {
  rcubatch::thread_registration<flavor> registration;
  netdev::registry<flavor> reg;
  for (int round = 0; round < 30; ++round) {
    ASSERT_TRUE(reg.netns_add("x").ok());
    netdev::netns& x = *reg.find_netns("x");
    ASSERT_TRUE(reg.link_add(x, gre("g", 9)).ok());
    std::atomic<std::uint64_t> sent{0};
    x.hold();  // the caller's part of the contract: x is known alive when the sender starts
    std::thread sender([&] {
      sent = netdev::run_xmit<flavor>(x, "g", 1'000'000'000, 1).sent;
      x.put();
    });
    // Vary where the deletion lands: after 1 packet, then after 1–9 more bursts of 64.
    wait_until_sent(x, "g", 1 + 64 * static_cast<std::uint64_t>(round % 10));
    ASSERT_TRUE(reg.netns_del({"x"}).ok());
    sender.join();
    EXPECT_GT(sent.load(), 0u);
    EXPECT_LT(sent.load(), 1'000'000'000u);
    EXPECT_EQ(reg.find_netns("x"), nullptr);
  }
}

std::mutex g_mutex;
std::condition_variable g_cv;
std::string g_stall_line;

void capture_stall(std::string_view line) noexcept {
  std::lock_guard lock(g_mutex);
  g_stall_line = std::string(line);
  g_cv.notify_all();
}

TEST(concurrency, a_leaked_reference_prints_the_stall_message_until_it_is_dropped) {
  rcubatch::thread_registration<flavor> registration;
  netdev::registry<flavor> reg;
  rcubatch::drain_options drain;
  drain.stall_report_interval = std::chrono::milliseconds(1);
  drain.reporter = &capture_stall;
  reg.set_drain_options(drain);
  netdev::link_request d;
  d.name = "leaky0";
  ASSERT_TRUE(reg.link_add(reg.init_net(), d).ok());
  netdev::net_device* dev = reg.init_net().find_locked("leaky0");
  dev->refs().hold();  // someone forgot a put
  std::thread holder([&] {
    std::unique_lock lock(g_mutex);
    g_cv.wait(lock, [] { return !g_stall_line.empty(); });  // released only after the report
    dev->refs().put();
  });
  ASSERT_TRUE(reg.link_del(reg.init_net(), "leaky0").ok());
  holder.join();
  EXPECT_EQ(g_stall_line, "waiting for leaky0 to become free. Usage count = 1");
  EXPECT_GE(reg.counters().stall_reports, 1u);
  EXPECT_EQ(reg.device_count(), 1u);  // lo
}

}  // namespace
