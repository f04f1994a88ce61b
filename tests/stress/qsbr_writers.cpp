// tests/stress/qsbr_writers.cpp — rcubatch_qsbr_writers: many qsbr writers on one registry, with
// every blocking path of the library taken while other qsbr threads are online (issue 22).
//
//   rcubatch_qsbr_writers --seconds 5        # ctest (stress.qsbr_writers), every preset
//   rcubatch_qsbr_writers --seconds 60       # the long run (RELIABILITY.md)
//
// Threads, all registered with qsbr and online except while the library blocks them:
//   readers    find random recent ids in a read_guard; a found object must not be poisoned
//              (destroy poisons it just before the delete; under ASan a freed one is a report).
//   writers    (--writers, ≥ 2) add 1…64 objects, then unregister them: one at a time, as one
//              unregister_many, or through unregister_with — contending for the writer lock and
//              the domain's GP mutex with each other and with the reclaimer.
//   submitter  submits its objects to the registry's background async_unregister (a small
//              budget: it blocks on it), and waits on tickets or unregisters synchronously through
//              the combiner.
//   holder     holds found objects and lets go late (or when a batch's rebroadcast asks), so the
//              drains wait — without the writer lock, which they re-take to rebroadcast.
// A watchdog fails the run when no operation completes for --stall seconds (a deadlock), instead
// of hanging CI. Exits non-zero on any violation: a poisoned object seen, a misuse report, an
// object destroyed twice or never, a non-empty index at the end.
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/watchdog.hpp"

namespace {

using rcubatch::flavor::qsbr;
constexpr std::uint64_t kAlive = 0xA11FE, kPoison = 0xDEADDEAD;

struct obj : rcubatch::registrable<obj> {
  explicit obj(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  rcubatch::lfht_hook<obj> by_id;
  std::atomic<std::uint64_t> poison{kAlive};
};
using by_id = rcubatch::lfht_index<obj, &obj::by_id, rcubatch::key_member<&obj::id>, qsbr>;

std::atomic<long> g_destroyed{0}, g_violations{0}, g_progress{0};
std::atomic<bool> g_let_go{false};  // a drain's rebroadcast asks the holder to put everything

struct objs : rcubatch::indexed<obj, by_id> {
  void destroy(obj* o) noexcept {
    o->poison.store(kPoison, std::memory_order_relaxed);
    g_destroyed.fetch_add(1, std::memory_order_relaxed);
    delete o;
  }
  void rebroadcast(obj&) noexcept { g_let_go.store(true, std::memory_order_relaxed); }
  std::size_t pending_bytes(const obj&) const { return sizeof(obj); }
};
using registry = rcubatch::basic_registry<qsbr, std::mutex, objs>;

struct options {
  double seconds = 5;
  unsigned readers = 2, writers = 2;
  unsigned stall = 20;  // seconds without any completed operation: a deadlock
};

void violation(const char* what) {
  g_violations.fetch_add(1);
  std::fprintf(stderr, "VIOLATION: %s\n", what);
}

void count_misuse(rcubatch::misuse_kind k, std::string_view m) noexcept {
  std::fprintf(stderr, "VIOLATION: misuse %.*s: %.*s\n", static_cast<int>(rcubatch::to_string(k).size()),
               rcubatch::to_string(k).data(), static_cast<int>(m.size()), m.data());
  g_violations.fetch_add(1);
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seconds" && has_value) opt.seconds = std::atof(argv[++i]);
    else if (a == "--readers" && has_value) opt.readers = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (a == "--writers" && has_value) opt.writers = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (a == "--stall" && has_value) opt.stall = static_cast<unsigned>(std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--readers R] [--writers W (>= 2)] [--stall S]\n", argv[0]);
      return 2;
    }
  }
  if (opt.writers < 2 || opt.seconds <= 0 || opt.stall == 0) {
    std::fprintf(stderr, "%s: needs --writers >= 2, --seconds > 0, --stall > 0\n", argv[0]);
    return 2;
  }
  rcubatch::set_misuse_policy(rcubatch::misuse_policy::report);
  rcubatch::set_misuse_reporter(&count_misuse);

  rcubatch::thread_registration<qsbr> main_reg;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<long> created{0};
  std::atomic<bool> stop{false};
  {
    registry reg(rcubatch::registry_options{.rollback = {.drain = {.stall_report_interval = std::chrono::seconds(60),
                                                                   .rebroadcast_interval = std::chrono::milliseconds(5)}}});
    rcubatch::async_unregister reclaimer(
        reg, rcubatch::async_options{.batch_count = 64, .max_age = std::chrono::microseconds(200),
                                     .budget_bytes = 32 * sizeof(obj)});
    rcubatch::test::watchdog dog(std::chrono::seconds(opt.stall), "rcubatch_qsbr_writers: no operation completed");

    auto make = [&](std::mt19937_64& rng, std::vector<obj*>& out) {
      const int n = 1 + static_cast<int>(rng() % 64);
      for (int i = 0; i < n; ++i) {
        auto* o = new obj(next_id.fetch_add(1));
        if (!reg.add(*o)) {
          violation("add refused a fresh id");
          delete o;
          continue;
        }
        created.fetch_add(1);
        out.push_back(o);
      }
    };

    std::vector<std::thread> threads;
    for (unsigned r = 0; r < opt.readers; ++r) {
      threads.emplace_back([&, r] {
        rcubatch::thread_registration<qsbr> reg_thread;
        std::mt19937_64 rng(r + 1);
        while (!stop.load(std::memory_order_acquire)) {
          {
            rcubatch::read_guard<qsbr> guard;
            const std::uint64_t top = next_id.load(std::memory_order_relaxed);
            for (int k = 0; k < 32; ++k) {
              const std::uint64_t id = top - 1 - rng() % 4096;
              if (const obj* o = reg.find<by_id>(guard, id))
                if (o->poison.load(std::memory_order_relaxed) != kAlive) violation("reader: destroyed object found");
            }
          }
          rcubatch::quiescent_state<qsbr>();
          std::this_thread::yield();  // 2 vCPUs, more threads: let the GP waiters and writers run
        }
      });
    }
    for (unsigned w = 0; w < opt.writers; ++w) {
      threads.emplace_back([&, w] {
        rcubatch::thread_registration<qsbr> reg_thread;  // online throughout, as users write it
        std::mt19937_64 rng(100 + w);
        while (!stop.load(std::memory_order_acquire)) {
          std::vector<obj*> mine;
          make(rng, mine);
          switch (rng() % 3) {
            case 0:
              for (obj* o : mine) reg.unregister(*o);
              break;
            case 1:
              reg.unregister_many(mine);
              break;
            default:
              reg.unregister_with([&](auto& q) {
                for (obj* o : mine) q.push(*o);
              });
          }
          g_progress.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    threads.emplace_back([&] {  // submitter: async submits over a small budget, ticket waits
      rcubatch::thread_registration<qsbr> reg_thread;
      std::mt19937_64 rng(7);
      while (!stop.load(std::memory_order_acquire)) {
        std::vector<obj*> mine;
        make(rng, mine);
        if (rng() % 2 == 0) {
          for (obj* o : mine) reclaimer.unregister(*o);  // the synchronous combiner
        } else {
          rcubatch::unregister_ticket last;
          for (obj* o : mine) last = reclaimer.submit(*o);  // may block on the budget
          if (last) reclaimer.wait(last);
        }
        g_progress.fetch_add(1, std::memory_order_relaxed);
      }
    });
    threads.emplace_back([&] {  // holder: holds found objects and lets go late
      rcubatch::thread_registration<qsbr> reg_thread;
      std::mt19937_64 rng(9);
      std::deque<obj*> held;
      while (!stop.load(std::memory_order_acquire)) {
        {
          rcubatch::read_guard<qsbr> guard;
          const std::uint64_t id = next_id.load(std::memory_order_relaxed) - 1 - rng() % 256;
          if (obj* o = reg.find<by_id>(guard, id)) {
            o->refs().hold();
            held.push_back(o);
          }
        }
        if (held.size() > 16 || g_let_go.exchange(false)) {
          while (!held.empty()) {
            held.front()->refs().put();
            held.pop_front();
          }
        }
        rcubatch::quiescent_state<qsbr>();
        std::this_thread::yield();
      }
      for (obj* o : held) o->refs().put();
    });

    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(opt.seconds);
    long last = -1;
    {
      rcubatch::offline_scope<qsbr> offline;  // the main thread only watches
      while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a sampling period, not a sync
        const long now = g_progress.load();
        if (now != last) dog.kick();
        last = now;
      }
      stop = true;
      for (auto& t : threads) t.join();
    }
    reclaimer.drain();
    if (!reg.index<by_id>().empty()) violation("objects left in the index");
  }
  rcubatch::default_domain<qsbr>().barrier();
  const long c = created.load(), d = g_destroyed.load();
  std::printf("rcubatch_qsbr_writers: %.1f s, %u writers + submitter + holder, %u readers: %ld operations, "
              "%ld objects created, %ld destroyed, %ld violations\n",
              opt.seconds, opt.writers, opt.readers, g_progress.load(), c, d, g_violations.load());
  if (c != d) violation("created and destroyed counts differ");
  if (g_progress.load() == 0) violation("no operation completed");
  return g_violations.load() == 0 ? 0 : 1;
}
