// tests/stress/exit_with_pending_work.cpp — a process that queued call_rcu work exits cleanly.
//
// liburcu 0.13.2 never tears down its call_rcu worker, and callbacks still queued at exit are
// leaked memory (shared/DESIGN.md). The documented way out is grace_domain::barrier() before exit.
// This program runs one real batch, queues --callbacks deferred frees through Flavor::call while a
// reader thread is still registered and reading, calls domain.barrier(), and returns from main.
// ctest runs it directly under ASan builds (LeakSanitizer checks the exit) and under valgrind
// --leak-check=full in other builds: exit code 0 means every callback ran and nothing leaked.
// Under TSan, rcubatch's Flavor::call adds no happens-before edge from the caller to the callback
// (unlike read_guard/grace_domain), so TSan reports the callback's delete as a race; --annotate adds
// the release/acquire pair by hand. ctest passes it in TSan builds; see RELIABILITY.md.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <string_view>
#include <thread>
#include <vector>

#include "rcubatch.hpp"
#include "rcubatch/detail/tsan.hpp"

namespace {

struct item : rcubatch::registrable<item> {
  int value = 42;
};

struct deferred {
  rcu_head head;
  std::vector<int> payload = std::vector<int>(16, 7);  // a heap block LSan would see leaked
};

std::atomic<long> g_ran{0};
bool g_annotate = false;  // --annotate: add the TSan edges Flavor::call lacks (RELIABILITY.md, bug 2)

void free_deferred(rcu_head* h) {
  if (g_annotate) rcubatch::detail::tsan_acquire(h);
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
    for (long i = 0; i < callbacks; ++i) {
      auto* d = new deferred;
      if (g_annotate) rcubatch::detail::tsan_release(&d->head);
      Flavor::call(&d->head, &free_deferred);
    }
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
  g_annotate = argc > 3 && std::string_view(argv[3]) == "--annotate";
  if (flavor == "memb") return run<rcubatch::flavor::memb>(callbacks);
  if (flavor == "qsbr") return run<rcubatch::flavor::qsbr>(callbacks);
  if (flavor == "mb") return run<rcubatch::flavor::mb>(callbacks);
  if (flavor == "bp") return run<rcubatch::flavor::bp>(callbacks);
  std::fprintf(stderr, "usage: %s memb|qsbr|mb|bp [callbacks [--annotate]]\n", argv[0]);
  return 2;
}
