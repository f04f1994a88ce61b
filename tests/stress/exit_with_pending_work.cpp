// tests/stress/exit_with_pending_work.cpp — a process that queued call_rcu work exits cleanly.
//
// liburcu 0.13.2 never tears down its call_rcu worker, and callbacks still queued at exit are
// leaked memory (shared/DESIGN.md). The documented way out is grace_domain::barrier() before exit.
// This program runs one real batch, queues N deferred frees through the call_rcu worker while a
// reader thread is still registered and reading, calls domain.barrier(), and returns from main.
// ctest runs it directly under ASan builds (LeakSanitizer checks the exit) and under valgrind
// --leak-check=full in other builds: exit code 0 means every callback ran and nothing leaked.
// The frees go through rcubatch::call_after_grace_period, which carries the TSan edge from the
// caller to the callback (the raw Flavor::call has none: RELIABILITY.md, bug 2, fixed in 89202d3).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <string_view>
#include <thread>
#include <vector>

#include "rcubatch.hpp"

namespace {

struct item : rcubatch::registrable<item> {
  int value = 42;
};

struct deferred {
  rcu_head head;
  std::vector<int> payload = std::vector<int>(16, 7);  // a heap block LSan would see leaked
};

std::atomic<long> g_ran{0};
void free_deferred(rcu_head* h) noexcept {
  // rcu_head is the first member: the usual container_of.
  delete reinterpret_cast<deferred*>(h);
  g_ran.fetch_add(1);
}

template <class Flavor>
int run(long callbacks) {
  rcubatch::grace_domain<Flavor> domain;
  std::atomic<item*> slot{nullptr};
  std::atomic<bool> stop{false};
  std::latch reader_ready(1);
  std::thread reader([&] {
    rcubatch::thread_registration<Flavor> reg;
    reader_ready.count_down();
    while (!stop.load()) {
      {
        rcubatch::read_guard<Flavor> g;
        if (item* it = slot.load(std::memory_order_acquire); it && it->value != 42) std::abort();
      }
      rcubatch::quiescent_state<Flavor>();
    }
  });
  reader_ready.wait();

  // One real batch first, so the process has done what a registry does.
  auto* it = new item;
  slot.store(it, std::memory_order_release);
  it->mark_registered();
  struct policy {
    std::atomic<item*>& s;
    void unlist(item&) noexcept { s.store(nullptr, std::memory_order_release); }
  };
  rcubatch::unreg_queue<item> q;
  q.push(*it);
  const auto st = rcubatch::rollback_many(q, policy{slot}, domain);

  // Work pending: deferred frees queued to liburcu's call_rcu worker.
  {
    rcubatch::thread_registration<Flavor> reg;  // call_rcu wants a registered caller
    for (long i = 0; i < callbacks; ++i)
      rcubatch::call_after_grace_period<Flavor, &free_deferred>(&(new deferred)->head);
  }
  domain.barrier();  // the clean exit: every queued callback has run when this returns

  stop.store(true);
  reader.join();
  std::printf("exit_with_pending_work flavor=%s batch_objects=%zu callbacks=%ld ran=%ld barriers=%lu\n",
              std::string(Flavor::name).c_str(), st.objects, callbacks, g_ran.load(),
              static_cast<unsigned long>(domain.stats().barriers));
  return st.objects == 1 && g_ran.load() == callbacks ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view flavor = argc > 1 ? argv[1] : "memb";
  const long callbacks = argc > 2 ? std::atol(argv[2]) : 10000;
  return rcubatch::with_flavor(flavor, [&]<class F>(std::type_identity<F>) { return run<F>(callbacks); },
                               [&](const rcubatch::unknown_flavor& e) {
                                 return std::fprintf(stderr, "%s\nusage: %s FLAVOR [callbacks]\n", e.what(), argv[0]), 2;
                               });
}
