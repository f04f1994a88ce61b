// bench/peer_libcds.cpp — peer: libcds URCU general_buffered (Debian libcds-dev 2.3.3).
//
// What a libcds user writes: unlink the object, then gc::retire_ptr(p, free). general_buffered
// stamps each retired pointer with the current epoch into a bounded buffer (default capacity 256,
// kept here as users get it); when the buffer fills, the retiring thread runs a grace period
// (two flip_and_wait passes under a mutex) and frees what expired. "Time until all freed" ends
// with gc::synchronize(), which runs one more grace period and empties the buffer.
// Readers use libcds' own read side (scoped_lock) on the same registry.
#include <cds/init.h>
#include <cds/threading/model.h>
#include <cds/urcu/general_buffered.h>

#include "bench_peers.hpp"

namespace rcubatch_bench {
namespace {

using rcu_gpb = cds::urcu::gc<cds::urcu::general_buffered<>>;

rcu_gpb& rcu_singleton() {
  static const bool initialized = [] {
    cds::Initialize();
    return true;
  }();
  (void)initialized;
  static rcu_gpb* rcu = new rcu_gpb();  // lives for the process: readers of later cases use it
  return *rcu;
}

struct libcds_protocol {
  struct thread_scope {
    explicit thread_scope(int) { cds::threading::Manager::attachThread(); }
    ~thread_scope() { cds::threading::Manager::detachThread(); }
    thread_scope(const thread_scope&) = delete;
    thread_scope& operator=(const thread_scope&) = delete;
  };
  template <class F>
  static auto read(int, F&& f) {
    rcu_gpb::scoped_lock lock;
    return f();
  }
  static void quiescent(int) {}
};

void free_object(void* p) { delete static_cast<bench_object*>(p); }

double retire_all(registry& reg, std::vector<bench_object*>& objs) {
  for (auto* o : objs) {
    reg.hash_remove(*o);
    reg.list_remove(*o);
    rcu_gpb::retire_ptr(o, &free_object);
  }
  rcu_gpb::synchronize();  // time until everything is freed
  return -1.0;             // GPs run inside retire_ptr when the buffer fills: about N/256 + 1
}

void bm_libcds_retire(benchmark::State& st) {
  rcu_singleton();
  run_teardown_case<libcds_protocol>(st, n_of(st), readers_of(st), &retire_all);
  st.counters["buffer_capacity"] = static_cast<double>(rcu_gpb::capacity());
}

}  // namespace

void register_libcds_benchmarks(const run_config& cfg) {
  register_sweep(cfg, "BM_Teardown_LibcdsRetire/general_buffered", &bm_libcds_retire);
}

}  // namespace rcubatch_bench
