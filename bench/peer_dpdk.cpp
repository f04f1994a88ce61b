// bench/peer_dpdk.cpp — peer: DPDK rte_rcu_qsbr with its defer queue (Debian libdpdk-dev 22.11).
//
// What a DPDK user writes (the rte_lpm/rte_hash RCU integration): one QS variable per data
// structure; readers register a thread id, stay online and report rte_rcu_qsbr_quiescent once per
// loop; the writer unlinks and rte_rcu_qsbr_dq_enqueue()s each object, which stamps it with a
// token and reclaims expired entries as it goes (trigger 0 = on every enqueue, at most 16 — the
// rte_lpm defaults). "Time until all freed" ends by calling rte_rcu_qsbr_dq_reclaim until nothing
// is pending. The defer queue is an rte_ring, which needs EAL memory: EAL starts in-memory, without
// hugepages, PCI or shared config (dpdk_init; --in-memory is refused with --no-huge, which already
// keeps everything in anonymous memory), before any other thread exists.
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_rcu_qsbr.h>

#include "bench_peers.hpp"

namespace rcubatch_bench {
namespace {

constexpr unsigned kMaxReaders = 4;
rte_rcu_qsbr* g_qsv = nullptr;
bool g_eal_ok = false;

struct dpdk_protocol {
  struct thread_scope {
    explicit thread_scope(int id) : id_(static_cast<unsigned>(id)) {
      rte_rcu_qsbr_thread_register(g_qsv, id_);
      rte_rcu_qsbr_thread_online(g_qsv, id_);
    }
    ~thread_scope() {
      rte_rcu_qsbr_thread_offline(g_qsv, id_);
      rte_rcu_qsbr_thread_unregister(g_qsv, id_);
    }
    thread_scope(const thread_scope&) = delete;
    thread_scope& operator=(const thread_scope&) = delete;
    unsigned id_;
  };
  template <class F>
  static auto read(int id, F&& f) {
    rte_rcu_qsbr_lock(g_qsv, static_cast<unsigned>(id));
    auto r = f();
    rte_rcu_qsbr_unlock(g_qsv, static_cast<unsigned>(id));
    return r;
  }
  static void quiescent(int id) { rte_rcu_qsbr_quiescent(g_qsv, static_cast<unsigned>(id)); }
};

void free_objects(void*, void* e, unsigned int n) {
  auto* elems = static_cast<bench_object**>(e);
  for (unsigned i = 0; i < n; ++i) delete elems[i];
}

rte_rcu_qsbr_dq* create_defer_queue(std::size_t n) {
  static int serial = 0;
  const std::string qname = "rcubatch_dq" + std::to_string(serial++);
  rte_rcu_qsbr_dq_parameters params{};
  params.name = qname.c_str();
  params.size = static_cast<uint32_t>(n);
  params.esize = sizeof(bench_object*);
  params.trigger_reclaim_limit = 0;
  params.max_reclaim_size = 16;
  params.free_fn = &free_objects;
  params.v = g_qsv;
  return rte_rcu_qsbr_dq_create(&params);
}

/// Unlink and enqueue every object, then reclaim until nothing is pending (time until all freed).
double defer_all(rte_rcu_qsbr_dq* dq, registry& reg, std::vector<bench_object*>& objs, std::size_t& retries) {
  for (auto* o : objs) {
    reg.hash_remove(*o);
    reg.list_remove(*o);
    bench_object* e = o;
    while (rte_rcu_qsbr_dq_enqueue(dq, &e) != 0) ++retries;  // full: retry after reclaim
  }
  unsigned freed = 0, pending = 0, available = 0;
  do {
    rte_rcu_qsbr_dq_reclaim(dq, ~0u, &freed, &pending, &available);
  } while (pending > 0);
  return -1.0;  // one token per object; a reader pass acks all earlier tokens
}

void bm_dpdk_defer_queue(benchmark::State& st) {
  const std::size_t n = n_of(st);
  if (!g_eal_ok) {
    st.SkipWithError("DPDK EAL did not start (see the dpdk_eal context field)");
    for (auto _ : st) {
    }
    return;
  }
  rte_rcu_qsbr_dq* dq = create_defer_queue(n);
  if (dq == nullptr) {
    st.SkipWithError((std::string("rte_rcu_qsbr_dq_create: ") + rte_strerror(rte_errno)).c_str());
    for (auto _ : st) {
    }
    return;
  }
  std::size_t enqueue_failures = 0;
  run_teardown_case<dpdk_protocol>(st, n, readers_of(st), [&](registry& reg, std::vector<bench_object*>& objs) {
    return defer_all(dq, reg, objs, enqueue_failures);
  });
  rte_rcu_qsbr_dq_delete(dq);
  st.counters["enqueue_retries"] = static_cast<double>(enqueue_failures);
}

}  // namespace

std::string dpdk_init() {
  // rte_eal_init pins the calling thread to lcore 0's CPU; every thread the benchmarks start later
  // would inherit that. Save the mask and put it back.
  cpu_set_t before;
  CPU_ZERO(&before);
  sched_getaffinity(0, sizeof before, &before);
  const char* args[] = {"rcubatch_bench", "--no-huge", "--no-pci", "--no-shconf",
                        "-l", "0-1", "-m", "256", "--no-telemetry", "--log-level=lib.eal:error"};
  int argc = static_cast<int>(sizeof args / sizeof args[0]);
  const int rc = rte_eal_init(argc, const_cast<char**>(args));
  sched_setaffinity(0, sizeof before, &before);
  std::string error;
  if (rc < 0) error = std::string("rte_eal_init: ") + rte_strerror(rte_errno);
  g_eal_ok = rc >= 0;
  // The QS variable itself needs no EAL: plain cache-line-aligned memory.
  const std::size_t sz = rte_rcu_qsbr_get_memsize(kMaxReaders);
  g_qsv = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, (sz + 63) / 64 * 64));
  std::memset(g_qsv, 0, sz);
  rte_rcu_qsbr_init(g_qsv, kMaxReaders);
  return error;
}

void register_dpdk_benchmarks(const run_config& cfg) {
  register_sweep(cfg, "BM_Teardown_DpdkDeferQueue/rte_rcu_qsbr", &bm_dpdk_defer_queue);
}

}  // namespace rcubatch_bench
