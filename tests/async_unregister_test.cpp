// async_unregister: submit unlists at once and never runs a grace period; a batch combines every
// pending request (exact GP counts with the counting flavor); every object destroyed exactly once
// across threads; drain; the budget blocks (observed through stats) and refuses; cascades and the
// dismantle flag inside combined batches; destruction with work pending; a qsbr reclaimer that is
// offline while idle; misuse. No sleeps: latches, joins, and GPs held open by on_synchronize.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/dismantle.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <new>
#include <atomic>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/cascade.hpp"
#include "support/counting.hpp"
#include "support/gp_gate.hpp"
#include "support/indexed_item.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/thread_state.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;
using CF = counting_flavor<struct async_unregister_test_tag>;


/// Counts destroys per id (exactly once), and unlists per id (exactly once: the batch must not
/// unlist what submit unlisted). Sized by the test before use.
struct ledger {
  std::vector<std::atomic<int>> destroyed;
  std::vector<std::atomic<int>> unlisted;
  explicit ledger(std::size_t n) : destroyed(n), unlisted(n) {}
  int total_destroyed() const {
    int n = 0;
    for (const auto& d : destroyed) n += d.load();
    return n;
  }
};
ledger* g_ledger = nullptr;
/// Called by destroy with the object's id, when set (a test holding a batch inside its destroy).
std::function<void(int)> g_destroy_hook;

/// No uninit: a batch unlinks nothing after GP #1, so it costs one GP.
struct items : indexed<item, by_id> {
  void unlist(item& i) noexcept {
    if (g_ledger) ++g_ledger->unlisted[static_cast<std::size_t>(i.id)];
    indexed::unlist(i);
  }
  void destroy(item* i) noexcept {
    if (g_ledger) ++g_ledger->destroyed[static_cast<std::size_t>(i->id)];
    if (g_destroy_hook) g_destroy_hook(i->id);
    delete i;
  }
};
/// A (void) uninit: the batch assumes it unlinked something: two GPs.
struct items_with_uninit : items {
  void uninit(item&) noexcept {}
};
/// Charges 100 bytes per request (the optional hook).
struct hundred_byte_items : items {
  std::size_t pending_bytes(const item&) const { return 100; }
};

using one_gp_registry = basic_registry<CF, std::mutex, items>;
using two_gp_registry = basic_registry<CF, std::mutex, items_with_uninit>;

/// `o` (its other knobs set with designated initializers: manual({.budget_bytes = 200})) for a
/// reclaimer whose batches run only when the test calls for one: manual mode, never due by age.
async_options manual(async_options o = {}) {
  o.mode = reclaim_mode::manual;
  o.max_age = std::chrono::hours(1);
  return o;
}

struct async_counting : counting_test<async_unregister_test_tag> {
  ~async_counting() override { g_ledger = nullptr; }
  thread_registration<flavor::memb> reg_;  // the indexes are memb rculfhash tables
};

// --- combined batches: exact grace-period counts -------------------------------------------------

/// kThreads threads submit kEach objects each; nothing runs until run_now: one batch, whose cost
/// is the policy's (2 GPs with an uninit, 1 without), whatever the number of requests.
template <class Registry>
void combined_batch(unsigned expected_gps) {
  constexpr int kThreads = 4, kEach = 25, kN = kThreads * kEach;
  ledger book(kN);
  g_ledger = &book;
  Registry reg;
  async_unregister reclaimer(reg, manual());
  std::vector<item*> all;
  for (int i = 0; i < kN; ++i) all.push_back(add_item(reg, i));

  std::latch start(kThreads);
  std::vector<std::thread> submitters;
  std::atomic<int> missed_after_submit{0};
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      thread_registration<flavor::memb> r;
      start.arrive_and_wait();
      for (int i = t * kEach; i < (t + 1) * kEach; ++i) {
        ASSERT_TRUE(reclaimer.submit(*all[static_cast<std::size_t>(i)]));
        if (!findable(reg, i)) ++missed_after_submit;  // unlisted by the call itself
      }
    });
  }
  for (auto& th : submitters) th.join();
  EXPECT_EQ(missed_after_submit.load(), kN);
  EXPECT_EQ(CF::synchronizes(), 0u) << "submit never waits for a grace period";
  EXPECT_EQ(book.total_destroyed(), 0) << "nothing is destroyed before its batch";
  EXPECT_EQ(reclaimer.stats().pending_count, static_cast<std::size_t>(kN));

  EXPECT_EQ(reclaimer.run_now(), static_cast<std::size_t>(kN));
  EXPECT_EQ(CF::synchronizes(), expected_gps);
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(st.grace_periods, expected_gps);
  EXPECT_EQ(st.last_batch.requests, static_cast<std::size_t>(kN));
  EXPECT_EQ(st.last_batch.threads, static_cast<std::size_t>(kThreads));
  EXPECT_EQ(st.last_batch.batch.objects, static_cast<std::size_t>(kN));
  EXPECT_EQ(st.completed, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(st.pending_count, 0u);
  EXPECT_EQ(st.pending_count_high_water, static_cast<std::size_t>(kN));
  EXPECT_EQ(st.pending_bytes_high_water, kN * sizeof(item));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(book.destroyed[static_cast<std::size_t>(i)].load(), 1) << i;
    EXPECT_EQ(book.unlisted[static_cast<std::size_t>(i)].load(), 1) << "unlisted once, at submit: " << i;
  }
  EXPECT_TRUE(reg.template index<by_id>().empty());
  EXPECT_EQ(reclaimer.run_now(), 0u) << "nothing pending: no batch, no GP";
  EXPECT_EQ(CF::synchronizes(), expected_gps);
}

TEST_F(async_counting, a_combined_batch_of_many_threads_costs_two_grace_periods) {
  combined_batch<two_gp_registry>(2);
}
TEST_F(async_counting, a_combined_batch_that_unlinks_nothing_after_the_first_costs_one) {
  combined_batch<one_gp_registry>(1);
}

TEST_F(async_counting, a_thread_is_counted_in_every_batch_it_submits_to) {
  // The distinct-threads count skips its set for a thread's repeat submits into one batch
  // (t_last_submit_generation): the next batch must count that thread again.
  ledger book(4);
  g_ledger = &book;
  one_gp_registry reg;
  async_unregister reclaimer(reg, manual());
  std::vector<item*> all;
  for (int i = 0; i < 4; ++i) all.push_back(add_item(reg, i));
  for (int batch = 0; batch < 2; ++batch) {
    ASSERT_TRUE(reclaimer.submit(*all[static_cast<std::size_t>(2 * batch)]));
    ASSERT_TRUE(reclaimer.submit(*all[static_cast<std::size_t>(2 * batch + 1)]));
    EXPECT_EQ(reclaimer.run_now(), 2u);
    EXPECT_EQ(reclaimer.stats().last_batch.threads, 1u) << "batch " << batch;
  }
  EXPECT_EQ(book.total_destroyed(), 4);
}

TEST_F(async_counting, a_caller_the_last_batch_released_diverts_the_next_lone_unregister_but_never_stalls_it) {
  // Issue 24 (W = 2 on one CPU): a batch's caller that has not called again yet is runnable and
  // about to resubmit, so the next lone unregister takes a ticket — a batch that caller can join,
  // led after one yield — instead of the fast path. It never waits for that caller: here F stays
  // away for good, and main's unregister returns (the watchdog). main, the caller of the batch
  // that then ended, comes back on the fast path: tickets say which path each call took (the
  // fast path takes none).
  watchdog dog(30s, "a lone unregister while a caller of the last batch stays away");
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  item* c = add_item(reg, 3);
  item* d = add_item(reg, 4);
  std::latch f_returned(1), f_may_leave(1);
  std::thread f([&] {
    thread_registration<flavor::memb> r;
    EXPECT_TRUE(reclaimer.unregister(*a));  // the fast path: nothing pending, no batch running
    f_returned.count_down();
    f_may_leave.wait();  // never calls again while main unregisters
  });
  f_returned.wait();
  ASSERT_TRUE(reclaimer.unregister(*b));  // F is away: b takes ticket 1 and main leads its batch
  ASSERT_TRUE(reclaimer.unregister(*c));  // main came back from the last batch: the fast path
  const unregister_ticket t = reclaimer.submit(*d);
  EXPECT_EQ(t.sequence(), 2u) << "b took a ticket (1), c none";
  reclaimer.wait(t);
  f_may_leave.count_down();
  f.join();
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 4u);
  EXPECT_EQ(st.completed, 4u);
  for (int i = 1; i <= 4; ++i) EXPECT_FALSE(findable(reg, i));
}

TEST_F(async_counting, synchronous_callers_combine_through_wait) {
  // Background thread, no threshold or timer ever due (batch_count and max_age out of reach):
  // every batch is led by a waiting caller (issue 24). kThreads callers unregister kEach objects
  // each; every unregister returns after its object's destroy, and no batch costs more than one
  // GP (one_gp_registry), so GPs ≤ objects — and each batch combines whoever waited meanwhile.
  constexpr int kThreads = 4, kEach = 20, kN = kThreads * kEach;
  ledger book(kN);
  g_ledger = &book;
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  std::vector<item*> all;
  for (int i = 0; i < kN; ++i) all.push_back(add_item(reg, i));
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      thread_registration<flavor::memb> r;
      for (int k = 0; k < kEach; ++k) {
        const int i = t * kEach + k;
        ASSERT_TRUE(reclaimer.unregister(*all[static_cast<std::size_t>(i)]));
        EXPECT_EQ(book.destroyed[static_cast<std::size_t>(i)].load(), 1) << "unregister returns after destroy";
      }
    });
  }
  for (auto& th : callers) th.join();
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.completed, static_cast<std::uint64_t>(kN));
  EXPECT_LE(st.batches, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(st.grace_periods + st.gps_pipelined, st.batches) << "one GP (or a pipelined one) per batch";
  EXPECT_LE(st.max_requests_per_batch, static_cast<std::size_t>(kThreads));
  EXPECT_GT(st.latency_max.count(), 0);
  EXPECT_LE(st.latency_p50, st.latency_p99);
  EXPECT_LE(st.latency_p99, st.latency_max);
}

TEST_F(async_counting, a_lone_caller_leads_at_once_and_callers_arriving_meanwhile_share_the_next_batch) {
  // No timer ever due. A lone unregister runs its batch at once (it would wait an hour for
  // max_age otherwise: the watchdog). Then caller L's batch is held inside its grace period until
  // kFollowers more callers are waiting; the first of them to see L's batch end leads one batch
  // for all of them.
  constexpr int kFollowers = 4;
  watchdog dog(30s, "synchronous callers with no timer due");
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  std::vector<item*> all;
  for (int i = 0; i <= kFollowers + 1; ++i) all.push_back(add_item(reg, i));
  ASSERT_TRUE(reclaimer.unregister(*all[0]));
  EXPECT_EQ(reclaimer.stats().batches, 1u);

  std::latch in_gp(1);
  std::atomic<bool> first_gp{true};
  CF::on_synchronize = [&] {
    if (!first_gp.exchange(false)) return;
    in_gp.count_down();
    while (reclaimer.stats().pending_count < kFollowers + 1) std::this_thread::yield();  // L's + theirs
  };
  std::thread leader([&] {
    thread_registration<flavor::memb> r;
    EXPECT_TRUE(reclaimer.unregister(*all[1]));
  });
  in_gp.wait();
  std::vector<std::thread> followers;
  for (int f = 0; f < kFollowers; ++f) {
    followers.emplace_back([&, f] {
      thread_registration<flavor::memb> r;
      EXPECT_TRUE(reclaimer.unregister(*all[static_cast<std::size_t>(2 + f)]));
    });
  }
  leader.join();
  for (auto& th : followers) th.join();
  CF::on_synchronize = nullptr;
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 3u);
  EXPECT_EQ(st.last_batch.requests, static_cast<std::size_t>(kFollowers));
  EXPECT_EQ(st.grace_periods, 3u);
  for (int i = 0; i <= kFollowers + 1; ++i) EXPECT_FALSE(findable(reg, i));
}

TEST_F(async_counting, a_batch_skips_grace_period_1_when_one_began_after_its_last_submit_and_ended) {
  one_gp_registry reg;
  async_unregister reclaimer(reg, manual());
  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 1)));
  reg.domain().synchronize();  // began after the submit's unlist, and ended
  reclaimer.run_now();
  EXPECT_EQ(reclaimer.stats().last_batch.batch.gps_pipelined, 1u);
  EXPECT_EQ(reclaimer.stats().last_batch.batch.grace_periods, 0u);
  EXPECT_EQ(CF::synchronizes(), 1u);

  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 2)));  // no GP since: #1 runs
  reclaimer.run_now();
  EXPECT_EQ(reclaimer.stats().last_batch.batch.gps_pipelined, 0u);
  EXPECT_EQ(reclaimer.stats().last_batch.batch.grace_periods, 1u);
  EXPECT_EQ(reclaimer.stats().gps_pipelined, 1u);
  EXPECT_EQ(CF::synchronizes(), 2u);
}

// --- exactly once across threads (also run under TSan and ASan) ----------------------------------

TEST_F(async_counting, every_object_is_destroyed_exactly_once_across_threads) {
  constexpr int kThreads = 8, kEach = 400, kN = kThreads * kEach;
  ledger book(kN);
  g_ledger = &book;
  two_gp_registry reg;
  std::vector<item*> all;
  for (int i = 0; i < kN; ++i) all.push_back(add_item(reg, i));
  async_options o;
  o.batch_count = 64;
  o.max_age = 50us;
  {
    async_unregister reclaimer(reg, o);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        thread_registration<flavor::memb> r;
        start.arrive_and_wait();
        std::vector<unregister_ticket> tickets;
        for (int i = t * kEach; i < (t + 1) * kEach; ++i) {
          item& obj = *all[static_cast<std::size_t>(i)];
          if (t % 2 == 0) {
            tickets.push_back(reclaimer.submit(obj));  // asynchronous
          } else if (i % 50 == 0) {
            ASSERT_TRUE(reclaimer.unregister(obj));  // synchronous, mixed in
          } else {
            tickets.push_back(reclaimer.submit(obj));
          }
        }
        for (auto tk : tickets) reclaimer.wait(tk);
        for (auto tk : tickets) EXPECT_TRUE(reclaimer.poll(tk));
      });
    }
    for (auto& th : threads) th.join();
    const async_stats st = reclaimer.stats();
    EXPECT_EQ(st.completed, static_cast<std::uint64_t>(kN));
    EXPECT_EQ(st.objects, static_cast<std::uint64_t>(kN));
    EXPECT_EQ(st.pending_count, 0u);
    EXPECT_EQ(st.pending_bytes, 0u);
    EXPECT_LE(st.grace_periods, 2 * st.batches);
  }
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(book.destroyed[static_cast<std::size_t>(i)].load(), 1) << i;
    ASSERT_EQ(book.unlisted[static_cast<std::size_t>(i)].load(), 1) << i;
  }
  EXPECT_TRUE(reg.index<by_id>().empty());
}

// --- drain, chained work, destruction with work pending ------------------------------------------

std::vector<item*>* g_chain_next = nullptr;  // destroying item i submits (*g_chain_next)[i], if any

struct chaining_items : items {
  void destroy(item* i) noexcept {
    const auto k = static_cast<std::size_t>(i->id);
    items::destroy(i);
    if (g_chain_next != nullptr && k < g_chain_next->size() && (*g_chain_next)[k] != nullptr) {
      item* next = std::exchange((*g_chain_next)[k], nullptr);
      chain_submit(*next);
    }
  }
  static inline void (*chain_submit)(item&) noexcept = nullptr;
};

TEST_F(async_counting, drain_leaves_nothing_pending_and_includes_chained_work) {
  constexpr int kN = 40;
  ledger book(2 * kN);
  g_ledger = &book;
  using chain_registry = basic_registry<CF, std::mutex, chaining_items>;
  chain_registry reg;
  async_unregister reclaimer(reg, manual());  // nothing is ever due by age
  static async_unregister<chain_registry>* self = nullptr;
  self = &reclaimer;
  chaining_items::chain_submit = [](item& next) noexcept {
    try {
      EXPECT_TRUE(self->submit(next));  // from destroy: the writer lock is free, never budget-blocked
    } catch (...) {
      ADD_FAILURE() << "chained submit threw";
    }
  };
  std::vector<item*> first, second(static_cast<std::size_t>(2 * kN), nullptr);
  for (int i = 0; i < kN; ++i) first.push_back(add_item(reg, i));
  for (int i = 0; i < kN; ++i) second[static_cast<std::size_t>(i)] = add_item(reg, kN + i);
  g_chain_next = &second;

  std::vector<unregister_ticket> tickets;
  for (item* it : first) tickets.push_back(reclaimer.submit(*it));
  EXPECT_FALSE(reclaimer.poll(tickets.front()));
  EXPECT_EQ(reclaimer.run_if_due(), 0u) << "nothing due: max_age is an hour, batch_count 4096";
  reclaimer.drain();
  for (auto t : tickets) EXPECT_TRUE(reclaimer.poll(t));
  EXPECT_EQ(book.total_destroyed(), 2 * kN) << "the objects submitted by destroy hooks are drained too";
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.pending_count, 0u);
  EXPECT_EQ(st.pending_bytes, 0u);
  EXPECT_EQ(st.completed, static_cast<std::uint64_t>(2 * kN));
  EXPECT_EQ(st.batches, 2u) << "the chained objects form the second batch";
  EXPECT_TRUE(reg.index<by_id>().empty());
  g_chain_next = nullptr;
  chaining_items::chain_submit = nullptr;
}

TEST_F(async_counting, destroying_the_reclaimer_with_work_pending_destroys_it_all) {
  constexpr int kN = 30;
  ledger book(kN);
  g_ledger = &book;
  two_gp_registry reg;
  for (auto mode : {reclaim_mode::manual, reclaim_mode::background_thread}) {
    for (auto& d : book.destroyed) d = 0;
    {
      async_options o = manual();
      o.mode = mode;  // background: never due by age or count either; only the destructor drains
      async_unregister reclaimer(reg, o);
      for (int i = 0; i < kN; ++i) ASSERT_TRUE(reclaimer.submit(*add_item(reg, i)));
      EXPECT_EQ(book.total_destroyed(), 0);
    }
    EXPECT_EQ(book.total_destroyed(), kN) << "mode " << static_cast<int>(mode);
    EXPECT_TRUE(reg.index<by_id>().empty());
  }
}

// --- the memory budget ---------------------------------------------------------------------------

/// Holds CF's grace periods closed until open() (support/gp_gate.hpp).
using gp_gate = gp_gate_of<CF>;

TEST_F(async_counting, the_budget_blocks_a_submitter_until_the_batch_holding_the_bytes_ends) {
  ledger book(8);
  g_ledger = &book;
  basic_registry<CF, std::mutex, hundred_byte_items> reg;
  async_unregister reclaimer(reg, manual({.budget_bytes = 300}));  // three requests of 100 bytes
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reclaimer.submit(*add_item(reg, i)));
  item* fourth = add_item(reg, 3);
  EXPECT_EQ(reclaimer.stats().pending_bytes, 300u);

  gp_gate gate;
  std::thread runner([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(reclaimer.run_now(), 3u);  // blocks in its GP until the gate opens
  });
  gate.wait_entered();  // the batch holding the 300 bytes is inside grace period #1

  std::atomic<bool> returned{false};
  unregister_ticket fourth_ticket;
  std::thread submitter([&] {
    thread_registration<flavor::memb> r;
    fourth_ticket = reclaimer.submit(*fourth);
    returned = true;
  });
  while (reclaimer.stats().blocked_now != 1) std::this_thread::yield();  // observed, not timed
  EXPECT_FALSE(returned.load()) << "a submit over the budget must wait for the batch";
  EXPECT_TRUE(findable(reg, 3)) << "a blocked submit has not unlisted its object yet";
  EXPECT_EQ(reclaimer.stats().blocked_submits, 1u);

  gate.open();  // the batch ends, its bytes are released, the submitter gets in
  runner.join();
  submitter.join();
  EXPECT_TRUE(returned.load());
  ASSERT_TRUE(fourth_ticket);
  EXPECT_FALSE(findable(reg, 3));
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.blocked_now, 0u);
  EXPECT_EQ(st.pending_bytes_high_water, 300u) << "never above the budget";
  EXPECT_EQ(st.pending_bytes, 100u);
  reclaimer.drain();
  EXPECT_EQ(book.total_destroyed(), 4);
}

TEST_F(async_counting, a_submit_returns_while_a_batch_is_inside_its_grace_period) {
  // The batch releases the writer lock during its waits: a submitter is never held up by a GP.
  // (With the lock held through the GP, the join below would never return.)
  ledger book(4);
  g_ledger = &book;
  one_gp_registry reg;
  async_unregister reclaimer(reg, manual());
  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 0)));
  item* second = add_item(reg, 1);
  gp_gate gate;
  std::thread runner([&] {
    thread_registration<flavor::memb> r;
    EXPECT_EQ(reclaimer.run_now(), 1u);
  });
  gate.wait_entered();
  std::thread submitter([&] {
    thread_registration<flavor::memb> r;
    EXPECT_TRUE(reclaimer.submit(*second));
  });
  submitter.join();  // returned while grace period #1 is still in progress
  EXPECT_FALSE(findable(reg, 1));
  EXPECT_EQ(book.total_destroyed(), 0);
  gate.open();
  runner.join();
  EXPECT_EQ(book.total_destroyed(), 1) << "the second request is for the next batch";
  reclaimer.drain();
  EXPECT_EQ(book.total_destroyed(), 2);
}

TEST_F(async_counting, a_manual_submitter_over_the_budget_runs_the_batch_itself) {
  ledger book(8);
  g_ledger = &book;
  basic_registry<CF, std::mutex, hundred_byte_items> reg;
  async_unregister reclaimer(reg, manual({.budget_bytes = 200}));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(reclaimer.submit(*add_item(reg, i)));
  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 2)));  // over: runs the pending batch, then fits
  EXPECT_EQ(book.total_destroyed(), 2);
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.blocked_submits, 1u);
  EXPECT_EQ(st.batches, 1u);
  EXPECT_LE(st.pending_bytes_high_water, 200u);
}

TEST_F(async_counting, the_refuse_option_returns_an_empty_ticket_and_changes_nothing) {
  ledger book(8);
  g_ledger = &book;
  basic_registry<CF, std::mutex, hundred_byte_items> reg;
  async_unregister reclaimer(reg, manual({.budget_bytes = 200, .when_over_budget = over_budget::refuse}));
  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 0)));
  ASSERT_TRUE(reclaimer.submit(*add_item(reg, 1)));
  item* third = add_item(reg, 2);
  const unregister_ticket refused = reclaimer.submit(*third);
  EXPECT_FALSE(refused);
  EXPECT_TRUE(findable(reg, 2)) << "refused: still listed";
  EXPECT_EQ(third->state(), reg_state::registered);
  EXPECT_FALSE(reclaimer.unregister(*third)) << "unregister is refused the same way";
  EXPECT_EQ(reclaimer.stats().refused, 2u);
  EXPECT_EQ(reclaimer.stats().pending_bytes, 200u);
  EXPECT_EQ(reclaimer.run_now(), 2u);
  EXPECT_TRUE(reclaimer.submit(*third)) << "accepted once the batch released the bytes";
  reclaimer.drain();
  EXPECT_EQ(book.total_destroyed(), 3);
}

// --- cascades and the dismantle flag inside combined batches -------------------------------------

// The session/stream cascade: tests/support/cascade.hpp.

TEST_F(async_counting, cascades_and_the_dismantle_flag_inside_a_combined_batch) {
  cascade_log log;
  cascade_registry<CF> reg;
  record_into(reg, log);
  async_unregister reclaimer(reg, manual());
  constexpr int kSessions = 6, kStreams = 3;
  std::vector<session*> sessions;
  for (int i = 1; i <= kSessions; ++i) sessions.push_back(open_session(reg, i, kStreams));
  stream* also_submitted = sessions[0]->streams[1];  // stream 11: submitted itself AND a dependent

  std::vector<std::thread> submitters;
  std::latch start(3);
  for (int t = 0; t < 3; ++t) {
    submitters.emplace_back([&, t] {
      thread_registration<flavor::memb> r;
      start.arrive_and_wait();
      for (int i = t; i < kSessions; i += 3) ASSERT_TRUE(reclaimer.submit(*sessions[static_cast<std::size_t>(i)]));
      if (t == 0) {
        ASSERT_TRUE(reclaimer.submit(*also_submitted));
      }
    });
  }
  for (auto& th : submitters) th.join();
  {
    read_guard<flavor::memb> guard;
    EXPECT_EQ(reg.find<session_by_id>(guard, 1), nullptr) << "sessions unlisted by submit";
    EXPECT_NE(reg.find<stream_by_id>(guard, 10), nullptr) << "their streams are the batch's to unlist";
    EXPECT_EQ(reg.find<stream_by_id>(guard, 11), nullptr);
  }
  EXPECT_EQ(CF::synchronizes(), 0u);

  EXPECT_EQ(reclaimer.run_now(), static_cast<std::size_t>(kSessions + 1));
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(st.grace_periods, 2u) << "a cascade of any depth stays at two GPs";
  EXPECT_EQ(CF::synchronizes(), 2u) << "and the dismantle elisions ran none";
  EXPECT_EQ(st.last_batch.threads, 3u);
  EXPECT_EQ(st.last_batch.batch.objects, static_cast<std::size_t>(kSessions * (kStreams + 1)));
  EXPECT_EQ(st.last_batch.batch.dependents_added, static_cast<std::size_t>(kSessions * kStreams - 1));
  EXPECT_EQ(st.last_batch.batch.dismantle_elided, static_cast<unsigned>(kSessions));
  EXPECT_EQ(log.elided, kSessions);
  EXPECT_EQ(log.not_dismantling, 0) << "every object of the batch carries the dismantle flag";
  for (int s = 1; s <= kSessions; ++s)
    for (int i = 0; i < kStreams; ++i)
      EXPECT_EQ(log.stream_unlists[static_cast<std::size_t>(s * 10 + i)], 1)
          << "stream " << s * 10 + i << ": dependents unlisted by the batch, the submitted one by submit only";
  EXPECT_TRUE(reg.index<session_by_id>().empty());
  EXPECT_TRUE(reg.index<stream_by_id>().empty());
  ASSERT_EQ(log.destroyed.size(), static_cast<std::size_t>(kSessions * (kStreams + 1)));
  for (int s = 1; s <= kSessions; ++s)
    for (int i = 0; i < kStreams; ++i)
      if (s * 10 + i != 11) {
        EXPECT_LT(log.position("stream " + std::to_string(s * 10 + i)), log.position("session " + std::to_string(s)));
      }
}

// --- misuse --------------------------------------------------------------------------------------

TEST_F(async_counting, misuse_fails_loudly_and_changes_nothing) {
  one_gp_registry reg;
  async_unregister reclaimer(reg, manual());
  one_gp_registry other_reg;
  async_unregister other(other_reg, manual());  // only to issue a foreign ticket

  item never_added(1);
  try {
    (void)reclaimer.submit(never_added);
    ADD_FAILURE() << "submit of an unregistered object";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::not_registered);
  }
  EXPECT_EQ(reclaimer.stats().pending_bytes, 0u) << "its budget charge was returned";

  item* a = add_item(reg, 2);
  const unregister_ticket t = reclaimer.submit(*a);
  ASSERT_TRUE(t);
  try {
    (void)reclaimer.submit(*a);
    ADD_FAILURE() << "double submit";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::already_unregistering);
  }
  EXPECT_EQ(reclaimer.stats().submitted, 1u);

  item* b = add_item(reg, 3);
  {
    read_guard<CF> guard;
    try {
      (void)reclaimer.submit(*b);
      ADD_FAILURE() << "submit inside a read-side section";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::blocking_in_read_section);
    }
    try {
      reclaimer.wait(t);
      ADD_FAILURE() << "wait inside a read-side section";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::blocking_in_read_section);
    }
  }
  EXPECT_TRUE(findable(reg, 3));

  item* c = add_item(other_reg, 4);
  const unregister_ticket foreign = other.submit(*c);
  for (unregister_ticket bad : {foreign, unregister_ticket{}}) {
    try {
      reclaimer.wait(bad);
      ADD_FAILURE() << "wait on a foreign or empty ticket";
    } catch (const misuse_error& e) {
      EXPECT_EQ(e.kind(), misuse_kind::foreign_cookie);
    }
    EXPECT_THROW((void)reclaimer.poll(bad), misuse_error);
  }
  {
    scoped_misuse_policy quiet(misuse_policy::report, quiet_reporter);
    EXPECT_TRUE(reclaimer.poll(foreign)) << "under report: answered as done, so nobody waits forever";
    EXPECT_FALSE(reclaimer.submit(*a)) << "under report: refused";
  }
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(t));
  EXPECT_TRUE(reclaimer.submit(*b)) << "b is still registered: the refused submits changed nothing";
  reclaimer.drain();
}

// A read-side section opened with the flavor's own read_lock, not a read_guard: only liburcu can
// tell (read_ongoing, ~22 instructions), so submit asks it only before it would wait — for the
// writer lock another thread holds, or for the budget — and is refused there instead of waiting
// (the wait could be for this reader's grace period). One that waits for nothing goes through
// (issue 35; submit's contract). Registries of memb: the counting flavor's read_lock is no-op.
using memb_registry = basic_registry<flavor::memb, std::mutex, items>;
using memb_hundred_byte_registry = basic_registry<flavor::memb, std::mutex, hundred_byte_items>;

TEST_F(async_counting, a_submit_in_a_raw_read_section_is_refused_rather_than_wait_for_the_writer_lock) {
  watchdog dog(30s, "a submit inside a raw read section waiting for a writer lock held until it returns");
  memb_registry reg;
  async_unregister reclaimer(reg, manual());
  item* a = add_item(reg, 1);
  std::latch held(1), release(1);
  std::thread holder([&] {
    std::scoped_lock lock(reg.writer_lock());
    held.count_down();
    release.wait();  // until main's submit returned: a submit that waits for the lock never does
  });
  held.wait();
  misuse_capture cap;
  unregister_ticket t;
  {
    scoped_misuse_policy p(misuse_policy::report, cap);
    flavor::memb::read_lock();
    t = reclaimer.submit(*a);
    flavor::memb::read_unlock();
  }
  release.count_down();
  holder.join();
  EXPECT_FALSE(t) << "refused, not waited for";
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::blocking_in_read_section);
  EXPECT_TRUE(findable(reg, 1)) << "nothing changed";
  EXPECT_EQ(reclaimer.stats().submitted, 0u);
  const unregister_ticket later = reclaimer.submit(*a);  // outside the section it goes through
  ASSERT_TRUE(later);
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(later));
  EXPECT_FALSE(findable(reg, 1));
}

TEST_F(async_counting, a_submit_in_a_raw_read_section_is_refused_rather_than_wait_for_the_budget) {
  watchdog dog(30s, "a submit inside a raw read section waiting for the budget");
  memb_hundred_byte_registry reg;
  async_unregister reclaimer(reg, manual({.budget_bytes = 100}));
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  const unregister_ticket ta = reclaimer.submit(*a);  // the budget is full
  ASSERT_TRUE(ta);
  misuse_capture cap;
  unregister_ticket tb;
  {
    scoped_misuse_policy p(misuse_policy::report, cap);
    flavor::memb::read_lock();
    tb = reclaimer.submit(*b);  // would block, or run a's batch here: its grace period waits for this reader
    flavor::memb::read_unlock();
  }
  EXPECT_FALSE(tb);
  EXPECT_EQ(cap.calls, 1);
  EXPECT_EQ(cap.last_kind, misuse_kind::blocking_in_read_section);
  EXPECT_TRUE(findable(reg, 2)) << "nothing changed";
  EXPECT_EQ(reclaimer.stats().pending_bytes, 100u) << "b's bytes were not charged";
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(ta));
  const unregister_ticket later = reclaimer.submit(*b);
  ASSERT_TRUE(later);
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(later));
}

TEST_F(async_counting, a_submit_in_a_raw_read_section_that_waits_for_nothing_goes_through) {
  memb_registry reg;
  async_unregister reclaimer(reg, manual());
  item* a = add_item(reg, 1);
  misuse_capture cap;
  unregister_ticket t;
  {
    scoped_misuse_policy p(misuse_policy::report, cap);
    flavor::memb::read_lock();
    t = reclaimer.submit(*a);  // the lock free, the budget unlimited: nothing to wait for
    EXPECT_FALSE(findable(reg, 1)) << "unlisted at once, as any submit";
    flavor::memb::read_unlock();
  }
  ASSERT_TRUE(t);
  EXPECT_EQ(cap.calls, 0) << "not misuse: nothing waited";
  reclaimer.drain();  // its grace period waits for readers like the one above
  EXPECT_TRUE(reclaimer.poll(t));
}

/// A destroy hook that calls the members which wait for batches, on its own reclaimer.
struct reentrant_items : items {
  void destroy(item* i) noexcept {
    items::destroy(i);
    if (reenter) reenter();
  }
  static inline void (*reenter)() noexcept = nullptr;
};

TEST_F(async_counting, waiting_from_a_hook_of_its_own_batch_is_diagnosed_not_a_deadlock) {
  using reentrant_registry = basic_registry<CF, std::mutex, reentrant_items>;
  reentrant_registry reg;
  async_unregister reclaimer(reg, manual());
  static async_unregister<reentrant_registry>* self = nullptr;
  static unregister_ticket ticket{};
  static item* other = nullptr;
  self = &reclaimer;
  other = add_item(reg, 2);
  reentrant_items::reenter = []() noexcept {
    self->wait(ticket);
    EXPECT_FALSE(self->unregister(*other));
    self->drain();
    EXPECT_EQ(self->run_now(), 0u);
    EXPECT_EQ(self->run_if_due(), 0u);
  };
  std::vector<misuse_kind> seen;
  seen.reserve(8);  // the reporter is noexcept: no allocation in it
  auto reporter = [&](misuse_kind k, std::string_view) noexcept { seen.push_back(k); };
  {
    scoped_misuse_policy record(misuse_policy::report, reporter);
    ticket = reclaimer.submit(*add_item(reg, 1));
    EXPECT_EQ(reclaimer.run_now(), 1u) << "the batch ends: each call from its destroy was refused";
  }
  reentrant_items::reenter = nullptr;
  EXPECT_EQ(seen, std::vector<misuse_kind>(5, misuse_kind::waits_for_own_batch));
  EXPECT_TRUE(reclaimer.poll(ticket));
  EXPECT_TRUE(findable(reg, 2)) << "the refused unregister changed nothing";
  EXPECT_TRUE(reclaimer.submit(*other));
  reclaimer.drain();  // manual, max_age an hour: unregister's wait would never see a batch due
}

// --- issue 35: a submit's bookkeeping without the reclaimer's mutex ----------------------------

TEST_F(async_counting, the_bytes_threshold_is_due_again_in_every_generation) {
  // A submit decides under the writer lock alone whether it crosses batch_bytes (the next
  // crossing is kept ready and reset when a batch takes the generation): the batch after the
  // first is due by bytes too, not only the first.
  ledger book(6);
  g_ledger = &book;
  using hundred_registry = basic_registry<CF, std::mutex, hundred_byte_items>;
  hundred_registry reg;
  async_unregister reclaimer(reg, manual({.batch_count = 1'000'000, .batch_bytes = 200}));
  std::vector<item*> all;
  for (int i = 0; i < 6; ++i) all.push_back(add_item(reg, i));
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(reclaimer.submit(*all[static_cast<std::size_t>(2 * round)]));
    EXPECT_EQ(reclaimer.run_if_due(), 0u) << "round " << round << ": 100 of 200 bytes, nothing due";
    ASSERT_TRUE(reclaimer.submit(*all[static_cast<std::size_t>(2 * round + 1)]));
    EXPECT_EQ(reclaimer.run_if_due(), 2u) << "round " << round << ": 200 bytes, due";
  }
  EXPECT_EQ(book.total_destroyed(), 6);
  const async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 3u);
  EXPECT_EQ(st.pending_bytes_high_water, 200u) << "noted when each batch released its bytes";
  EXPECT_EQ(st.pending_count_high_water, 2u) << "noted before each batch's end";
}

TEST_F(async_counting, request_latencies_are_in_nanoseconds_of_the_steady_clock) {
  // Submits are stamped with a cycle counter where there is one, converted by the reclaimer's
  // own steady_clock readings: a latency cannot exceed the steady_clock time around its submit
  // and its batch (half again, for the conversion's error; a counter read as nanoseconds would be
  // off by the clock rate, ~2.6 on this machine).
  ledger book(1);
  g_ledger = &book;
  one_gp_registry reg;
  async_unregister reclaimer(reg, manual());
  item* it = add_item(reg, 0);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(reclaimer.submit(*it));
  EXPECT_EQ(reclaimer.run_now(), 1u);
  const auto around = std::chrono::steady_clock::now() - t0;
  const async_stats st = reclaimer.stats();
  EXPECT_GT(st.latency_max.count(), 0);
  EXPECT_LE(st.latency_max, around + around / 2);
}

// --- the latency histogram -----------------------------------------------------------------------

TEST(async_histogram, quantiles_are_bucket_bounds_within_an_eighth) {
  detail::latency_histogram h;
  EXPECT_EQ(h.quantile(0.5), 0u);
  for (std::uint64_t v = 1; v <= 1000; ++v) h.add(v * 1000);  // 1 µs .. 1 ms
  const auto p50 = h.quantile(0.50), p99 = h.quantile(0.99);
  EXPECT_GE(p50, 500'000u);
  EXPECT_LE(p50, 500'000u + 500'000u / 8);
  EXPECT_GE(p99, 990'000u);
  EXPECT_LE(p99, 1'000'000u);  // capped by the exact max
  EXPECT_EQ(h.max(), 1'000'000u);
}

TEST(async_histogram, a_run_from_its_bucket_floor_counts_as_one_add_per_duration) {
  // A batch's requests share their end, so the reclaimer counts their latencies a run at a time:
  // every duration in [bucket_floor(ns), ns] must land where one add per duration puts it.
  for (std::uint64_t ns : {0ull, 1ull, 7ull, 8ull, 9ull, 15ull, 16ull, 17ull, 100ull, 1'000ull, 4'095ull, 65'537ull}) {
    const std::uint64_t floor = detail::latency_histogram::bucket_floor(ns);
    ASSERT_LE(floor, ns);
    detail::latency_histogram run, each;
    run.add(ns, ns - floor + 1);
    for (std::uint64_t v = floor; v <= ns; ++v) each.add(v);
    for (double q : {0.01, 0.25, 0.5, 0.75, 0.99, 1.0}) EXPECT_EQ(run.quantile(q), each.quantile(q)) << ns << " q " << q;
    EXPECT_EQ(run.max(), each.max());
    if (floor > 0) {  // and the run is the whole bucket: one less is in another
      detail::latency_histogram below;
      below.add(floor - 1);
      below.add(floor);
      EXPECT_LT(below.quantile(0.5), floor) << ns;
    }
  }
  for (std::uint64_t ns : {std::uint64_t{1} << 40, (std::uint64_t{1} << 40) + 123'456'789}) {
    const std::uint64_t floor = detail::latency_histogram::bucket_floor(ns);
    EXPECT_EQ(detail::latency_histogram::bucket_floor(floor), floor);
    EXPECT_LT(detail::latency_histogram::bucket_floor(floor - 1), floor);
    EXPECT_LE(ns - floor, ns / 8);  // a bucket spans an eighth of its octave
  }
}

// --- qsbr: the reclaimer is offline while idle ---------------------------------------------------

struct qitem : registrable<qitem> {
  explicit qitem(int i) : id(i) {}
  int id;
  lfht_hook<qitem> by_id;
};
using qitem_by_id = lfht_index<qitem, &qitem::by_id, key_member<&qitem::id>, flavor::qsbr>;
struct qitems : indexed<qitem, qitem_by_id> {
  std::atomic<int> destroyed{0};
  void destroy(qitem* q) noexcept {
    ++destroyed;
    delete q;
  }
};
using qsbr_registry = basic_registry<flavor::qsbr, std::mutex, qitems>;

TEST(async_qsbr, a_qsbr_writer_does_not_wait_for_an_idle_or_blocked_reclaimer) {
  thread_registration<flavor::qsbr> reg_thread;  // online
  qsbr_registry reg;
  {
    async_unregister reclaimer(reg);  // background thread: registered, idle
    reg.domain().synchronize();       // would hang if the idle reclaimer stayed online
    auto* a = new qitem(1);
    ASSERT_TRUE(reg.add(*a));
    ASSERT_TRUE(reclaimer.unregister(*a));
    reg.domain().synchronize();  // idle again, offline again
    EXPECT_EQ(reg.policy<qitems>().destroyed.load(), 1);
  }
  {
    async_unregister reclaimer(reg, manual());
    auto* b = new qitem(2);
    ASSERT_TRUE(reg.add(*b));
    const unregister_ticket t = reclaimer.submit(*b);
    std::latch waiting(1);
    std::thread waiter([&] {
      thread_registration<flavor::qsbr> r;  // online, then blocked in wait: must go offline
      waiting.count_down();
      reclaimer.wait(t);
    });
    waiting.wait();
    reg.domain().synchronize();  // must not hang, whether the waiter is blocked yet or not
    reclaimer.drain();
    waiter.join();
    EXPECT_EQ(reg.policy<qitems>().destroyed.load(), 2);
  }
}

// --- reliability, round 3 (issue 22): each of these failed (or hung) on c93d650 ----------------

/// A parent whose notify queues its children; children live in caller-provided slots, so a test
/// can put a new child at the address of a destroyed one.
struct kid;
struct dad : registrable<dad> {
  explicit dad(int i) : id(i) {}
  int id;
  lfht_hook<dad> by_id;
  std::vector<kid*> kids;
};
struct kid : registrable<kid> {
  explicit kid(int i) : id(i) {}
  int id;
  lfht_hook<kid> by_id;
};
using dad_by_id = lfht_index<dad, &dad::by_id, key_member<&dad::id>>;
using kid_by_id = lfht_index<kid, &kid::by_id, key_member<&kid::id>>;
struct dads : indexed<dad, dad_by_id> {
  void notify(dad& d, batch& b) noexcept {
    for (kid* k : d.kids) b.queue(*k);
  }
  void destroy(dad* d) noexcept { delete d; }
};
struct kids : indexed<kid, kid_by_id> {
  int destroyed = 0;
  void destroy(kid* k) noexcept {
    ++destroyed;
    k->~kid();  // the slot stays: the next kid may be built at the same address
  }
};

TEST_F(async_counting, a_new_object_at_a_reused_address_is_still_unlisted_by_its_batch) {
  basic_registry<CF, std::mutex, dads, kids> reg;
  async_unregister reclaimer(reg, manual());
  alignas(kid) unsigned char slot[sizeof(kid)];

  auto* d1 = new dad(1);
  kid* k1 = new (slot) kid(10);
  d1->kids.push_back(k1);
  ASSERT_TRUE(reg.add(*d1));
  ASSERT_TRUE(reg.add(*k1));
  const unregister_ticket t1 = reclaimer.submit(*k1);  // unlisted now, waits in the reclaimer's queue
  ASSERT_TRUE(t1);
  {
    // Another writer's batch takes k1 over through its parent's cascade, and destroys it: the
    // mark says "unlisted at submit", so that batch does not unlist it a second time.
    misuse_log log;
    scoped_misuse_policy p(misuse_policy::report, log);
    EXPECT_EQ(reg.unregister(*d1).objects, 2u);
    EXPECT_TRUE(log.kinds.empty());
  }
  ASSERT_EQ(reg.policy<kids>().destroyed, 1);

  auto* d2 = new dad(2);
  kid* k2 = new (slot) kid(20);  // the address of k1
  ASSERT_EQ(static_cast<void*>(k2), static_cast<void*>(k1));
  d2->kids.push_back(k2);
  ASSERT_TRUE(reg.add(*d2));
  ASSERT_TRUE(reg.add(*k2));
  ASSERT_TRUE(reclaimer.submit(*d2));
  {
    misuse_log log;
    scoped_misuse_policy p(misuse_policy::report, log);
    reclaimer.drain();  // the batch of t1 (its object gone) and d2: k2 is a dependent, unlisted here
    EXPECT_TRUE(log.kinds.empty()) << "t1's object was taken over: legal (issue 35), not misuse";
  }
  EXPECT_TRUE(reclaimer.poll(t1));
  EXPECT_EQ(reg.policy<kids>().destroyed, 2);
  EXPECT_TRUE(reg.index<kid_by_id>().empty()) << "k2 was destroyed while still linked in its index";
  EXPECT_TRUE(reg.index<dad_by_id>().empty());
}

TEST_F(async_counting, an_object_of_another_registry_is_refused_with_nothing_changed) {
  one_gp_registry mine, theirs;
  async_unregister reclaimer(mine, manual());
  item* x = add_item(theirs, 7);
  EXPECT_THROW(
      {
        try {
          reclaimer.submit(*x);
        } catch (const misuse_error& e) {
          EXPECT_EQ(e.kind(), misuse_kind::wrong_registry);
          throw;
        }
      },
      misuse_error);
  {
    misuse_capture cap;
    scoped_misuse_policy p(misuse_policy::report, cap);
    EXPECT_FALSE(reclaimer.submit(*x));
    EXPECT_EQ(cap.last_kind, misuse_kind::wrong_registry);
  }
  EXPECT_TRUE(findable(theirs, 7));
  EXPECT_EQ(reclaimer.stats().pending_bytes, 0u);
  EXPECT_EQ(theirs.unregister(*x).objects, 1u);
}

/// Calls `on_destroy` (if set) from destroy, before deleting.
struct items_calling_back : items {
  std::function<void(item&)> on_destroy;
  void destroy(item* i) noexcept {
    if (on_destroy) on_destroy(*i);
    items::destroy(i);
  }
};
using calling_back_registry = basic_registry<CF, std::mutex, items_calling_back>;

TEST_F(async_counting, submit_from_destroy_completes_whatever_the_lock_options) {
  watchdog dog(30s, "submit from a destroy hook");
  for (const bool udw : {true, false}) {
    calling_back_registry reg;
    async_unregister reclaimer(reg, async_options{.max_age = 0us, .unlock_during_waits = udw});
    item* y = add_item(reg, 2);
    item* z = add_item(reg, 3);
    std::atomic<int> chained{0};
    reg.policy<items_calling_back>().on_destroy = [&](item& i) {
      if (i.id == 1 && reclaimer.submit(*y)) ++chained;  // async batch's destroy
      if (i.id == 4 && reclaimer.submit(*z)) ++chained;  // the registry's own batch's destroy
    };
    item* x = add_item(reg, 1);
    ASSERT_TRUE(reclaimer.unregister(*x));
    item* w = add_item(reg, 4);
    EXPECT_EQ(reg.unregister(*w).objects, 1u);  // default options: destroy runs without the lock
    reclaimer.drain();
    EXPECT_EQ(chained.load(), 2) << "unlock_during_waits = " << udw;
    EXPECT_FALSE(findable(reg, 2));
    EXPECT_FALSE(findable(reg, 3));
    reg.policy<items_calling_back>().on_destroy = nullptr;
  }
}

TEST_F(async_counting, submit_from_a_destroy_that_holds_the_writer_lock_is_refused_not_a_deadlock) {
  watchdog dog(30s, "submit from a destroy hook under hold_lock_through_drain");
  calling_back_registry reg(registry_options{.hold_lock_through_drain = true});
  async_unregister reclaimer(reg, manual());
  item* y = add_item(reg, 2);
  misuse_log log;
  reg.policy<items_calling_back>().on_destroy = [&](item&) {
    scoped_misuse_policy p(misuse_policy::report, log);
    EXPECT_FALSE(reclaimer.submit(*y));
  };
  item* x = add_item(reg, 1);
  EXPECT_EQ(reg.unregister(*x).objects, 1u);
  ASSERT_EQ(log.kinds.size(), 1u);
  EXPECT_EQ(log.kinds[0], misuse_kind::holds_writer_lock);
  reg.policy<items_calling_back>().on_destroy = nullptr;
  EXPECT_TRUE(findable(reg, 2));  // nothing changed
  EXPECT_EQ(reg.unregister(*y).objects, 1u);
}

TEST_F(async_counting, submit_from_destroy_is_never_held_up_by_the_budget) {
  watchdog dog(30s, "submit from destroy with a one-object budget");
  calling_back_registry reg;
  async_unregister reclaimer(reg, async_options{.max_age = 0us, .budget_bytes = sizeof(item)});
  item* y = add_item(reg, 2);
  std::atomic<bool> chained{false};
  reg.policy<items_calling_back>().on_destroy = [&](item& i) {
    if (i.id == 1) chained = static_cast<bool>(reclaimer.submit(*y));  // budget full: x is charged
  };
  item* x = add_item(reg, 1);
  ASSERT_TRUE(reclaimer.unregister(*x));
  reclaimer.drain();
  EXPECT_TRUE(chained.load());
  EXPECT_FALSE(findable(reg, 2));
  reg.policy<items_calling_back>().on_destroy = nullptr;
}

TEST_F(async_counting, on_batch_waiting_on_the_reclaimer_thread_is_diagnosed_not_a_hang) {
  watchdog dog(30s, "on_batch calling wait/unregister on the reclaimer's own thread");
  one_gp_registry reg;
  std::promise<std::pair<bool, unsigned long>> from_on_batch;
  std::atomic<bool> once{false};
  async_unregister<one_gp_registry>* self = nullptr;
  item* other = add_item(reg, 2);
  const unsigned long before = misuse_count(misuse_kind::waits_for_own_batch);
  async_options o{.max_age = 0us};
  o.on_batch = [&](const async_batch_report&) {
    if (once.exchange(true)) return;
    scoped_misuse_policy p(misuse_policy::report, quiet_reporter);
    const bool unregistered = self->unregister(*other);  // would wait for a batch only this thread runs
    self->drain();
    from_on_batch.set_value({unregistered, misuse_count(misuse_kind::waits_for_own_batch) - before});
  };
  async_unregister reclaimer(reg, o);
  self = &reclaimer;
  item* x = add_item(reg, 1);
  ASSERT_TRUE(reclaimer.submit(*x));  // nobody waits: the background thread runs the batch (max_age 0)
  const auto [unregistered, reports] = from_on_batch.get_future().get();
  EXPECT_FALSE(unregistered);
  EXPECT_EQ(reports, 2u);
  EXPECT_TRUE(findable(reg, 2));  // refused: nothing changed
  ASSERT_TRUE(reclaimer.unregister(*other));
}

TEST_F(async_counting, a_ticket_completes_only_after_its_object_was_destroyed) {
  calling_back_registry reg;
  async_unregister reclaimer(reg, manual());
  std::vector<unregister_ticket> tickets(3);
  std::vector<int> done_at_destroy;
  reg.policy<items_calling_back>().on_destroy = [&](item& i) {
    done_at_destroy.push_back(reclaimer.poll(tickets[static_cast<std::size_t>(i.id)]) ? 1 : 0);
  };
  for (int id = 0; id < 3; ++id) tickets[static_cast<std::size_t>(id)] = reclaimer.submit(*add_item(reg, id));
  for (const auto& t : tickets) EXPECT_FALSE(reclaimer.poll(t));
  reclaimer.drain();
  EXPECT_EQ(done_at_destroy, (std::vector<int>{0, 0, 0}));  // destroy happens-before poll == true
  for (const auto& t : tickets) EXPECT_TRUE(reclaimer.poll(t));
  reg.policy<items_calling_back>().on_destroy = nullptr;
}

/// validate refuses while `refuse` is set; blocks while `gate` is set, until it opens.
struct items_validated : items {
  bool refuse = false;
  std::latch* entered = nullptr;
  std::latch* gate = nullptr;
  std::latch* destroy_entered = nullptr;
  std::latch* destroy_gate = nullptr;
  void destroy(item* i) noexcept {
    if (std::latch* g = destroy_gate) {
      destroy_entered->count_down();
      g->wait();
    }
    items::destroy(i);
  }
  void validate(item&) {
    if (refuse) throw std::runtime_error("validate: refused");
    if (std::latch* g = gate) {  // read once: the test clears `gate` once this thread entered
      entered->count_down();
      g->wait();
    }
  }
};
using validated_registry = basic_registry<CF, std::mutex, items_validated>;

TEST_F(async_counting, a_submit_whose_validate_throws_leaves_the_object_registered_and_unqueued) {
  ledger book(2);
  g_ledger = &book;
  validated_registry reg;
  async_unregister reclaimer(reg, manual());
  item* x = add_item(reg, 1);
  reg.policy<items_validated>().refuse = true;
  EXPECT_THROW(reclaimer.submit(*x), std::runtime_error);
  reg.policy<items_validated>().refuse = false;
  reclaimer.drain();
  EXPECT_EQ(book.destroyed[1].load(), 0);  // not queued: no batch took it
  EXPECT_TRUE(findable(reg, 1));
  EXPECT_EQ(reclaimer.stats().pending_bytes, 0u);
  EXPECT_EQ(reg.unregister(*x).objects, 1u);
  EXPECT_EQ(book.destroyed[1].load(), 1);
}

TEST_F(async_counting, a_lone_unregister_runs_one_batch_at_once_and_takes_no_ticket) {
  // The lone caller's fast path: nothing pending, no batch running → one batch of its object at
  // once, one GP (nothing unlinked after it), counted as one request; tickets issued later start
  // at 1 (the fast path took none), so the two kinds of request never share a number.
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  const std::uint64_t gps0 = CF::synchronizes();
  ASSERT_TRUE(reclaimer.unregister(*a));
  EXPECT_FALSE(findable(reg, 1));
  async_stats st = reclaimer.stats();
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(st.submitted, 1u);
  EXPECT_EQ(st.completed, 1u);
  EXPECT_EQ(st.pending_count, 0u);
  EXPECT_EQ(st.pending_bytes, 0u);
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_EQ(CF::synchronizes() - gps0, 1u);
  const unregister_ticket t = reclaimer.submit(*b);
  EXPECT_EQ(t.sequence(), 1u);
  reclaimer.wait(t);
  st = reclaimer.stats();
  EXPECT_EQ(st.submitted, 2u);
  EXPECT_EQ(st.completed, 2u);
}

TEST_F(async_counting, an_unregister_whose_validate_throws_releases_the_run_and_changes_nothing) {
  // The fast path claims the run before its batch validates: a throwing validate must give the
  // claim and the budget charge back, or every later caller would wait for a batch that never
  // ends (the watchdog).
  watchdog dog(30s, "an unregister after a refused one");
  ledger book(2);
  g_ledger = &book;
  validated_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  item* x = add_item(reg, 1);
  reg.policy<items_validated>().refuse = true;
  EXPECT_THROW(reclaimer.unregister(*x), std::runtime_error);
  reg.policy<items_validated>().refuse = false;
  EXPECT_TRUE(findable(reg, 1));
  EXPECT_EQ(book.destroyed[1].load(), 0);
  async_stats st = reclaimer.stats();
  EXPECT_EQ(st.pending_bytes, 0u);
  EXPECT_EQ(st.pending_count, 0u);
  EXPECT_EQ(st.batches, 0u);
  EXPECT_EQ(st.submitted, 0u);
  ASSERT_TRUE(reclaimer.unregister(*x));
  EXPECT_EQ(book.destroyed[1].load(), 1);
  EXPECT_EQ(reclaimer.stats().completed, 1u);
}

TEST_F(async_counting, an_unregister_of_an_object_that_is_not_registered_is_refused_and_releases_the_run) {
  watchdog dog(30s, "an unregister after a refused one");
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.batch_count = 1'000'000, .max_age = std::chrono::hours(1)});
  item never_added(1);
  try {
    (void)reclaimer.unregister(never_added);
    ADD_FAILURE() << "unregister of an unregistered object";
  } catch (const misuse_error& e) {
    EXPECT_EQ(e.kind(), misuse_kind::not_registered);
  }
  {
    scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
    EXPECT_FALSE(reclaimer.unregister(never_added));
  }
  EXPECT_EQ(reclaimer.stats().pending_bytes, 0u);
  EXPECT_EQ(reclaimer.stats().submitted, 0u);
  item* a = add_item(reg, 2);
  ASSERT_TRUE(reclaimer.unregister(*a));
  EXPECT_FALSE(findable(reg, 2));
}

TEST_F(async_counting, a_manual_submitter_blocked_by_the_budget_is_woken_by_the_next_submit) {
  // c's request fills the budget; T1's submit blocks on it and runs c's batch itself (manual mode),
  // and T2's blocks too while that batch runs. When it ends, one of them charges its bytes ahead
  // and sits in validate (pending: 0, nothing to run) while the other sleeps on the budget. When
  // the first one's submit completes it must wake the other, which runs the batch (manual mode:
  // nobody else will) — else that one sleeps forever.
  watchdog dog(30s, "a manual submitter blocked by the budget");
  validated_registry reg;
  async_unregister reclaimer(reg, manual({.budget_bytes = sizeof(item)}));
  item* a = add_item(reg, 1);
  item* b = add_item(reg, 2);
  item* c = add_item(reg, 3);
  ASSERT_TRUE(reclaimer.submit(*c));
  std::latch destroying(1), finish_destroy(1), entered(1), gate(1);
  auto& policy = reg.policy<items_validated>();
  policy.destroy_entered = &destroying;
  policy.destroy_gate = &finish_destroy;
  std::thread t1([&] {
    thread_registration<flavor::memb> r;
    EXPECT_TRUE(reclaimer.submit(*a));
  });
  destroying.wait();  // T1 runs c's batch
  policy.destroy_gate = nullptr;
  policy.entered = &entered;
  policy.gate = &gate;
  std::thread t2([&] {
    thread_registration<flavor::memb> r;
    EXPECT_TRUE(reclaimer.submit(*b));
  });
  while (reclaimer.stats().blocked_now < 2) std::this_thread::yield();  // T2 on the budget too
  finish_destroy.count_down();
  entered.wait();  // one of them charged ahead, in validate
  policy.gate = nullptr;
  // The other asleep on the budget: blocked_now is read under the reclaimer's mutex, which a
  // blocked submitter holds until it waits (nothing is pending, so it cannot run a batch).
  while (reclaimer.stats().blocked_now != 1) std::this_thread::yield();
  gate.count_down();
  t1.join();
  t2.join();
  reclaimer.drain();
  EXPECT_EQ(reclaimer.stats().blocked_submits, 2u);
  EXPECT_FALSE(findable(reg, 1));
  EXPECT_FALSE(findable(reg, 2));
  EXPECT_FALSE(findable(reg, 3));
}

/// Poisoned at destroy, freed by the test: a reader that still reaches one reads the poison.
struct pitem : registrable<pitem> {
  explicit pitem(int i) : id(i) {}
  int id;
  lfht_hook<pitem> by_id;
  std::atomic<std::uint64_t> poison{kAlive};
};
using pitem_by_id = lfht_index<pitem, &pitem::by_id, key_member<&pitem::id>>;
struct poisoning_pitems : indexed<pitem, pitem_by_id> {
  std::atomic<int> destroyed{0};
  void destroy(pitem* p) noexcept {
    p->poison.store(kPoison);
    ++destroyed;
  }
};

// --- try_submit: a lost race is a result (issue 23) ----------------------------------------------

TEST_F(async_counting, try_submit_tells_a_lost_race_from_misuse) {
  one_gp_registry reg;
  ledger book(8);
  item* a = add_item(reg, 1);
  add_item(reg, 2);
  g_ledger = &book;
  async_unregister reclaimer(reg, manual());
  const submit_result first = reclaimer.try_submit(*a);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first.ticket);
  const submit_result again = reclaimer.try_submit(*a);  // submitted, its batch not run: no exception
  EXPECT_EQ(again.status, unregister_status::already_unregistering);
  EXPECT_FALSE(again.ticket);
  EXPECT_EQ(reclaimer.try_submit<by_id>(1).status, unregister_status::not_found) << "unlisted at submit";
  const submit_result by_key = reclaimer.try_submit<by_id>(2);
  ASSERT_TRUE(by_key);
  EXPECT_FALSE(findable(reg, 2));
  EXPECT_EQ(reclaimer.try_submit<by_id>(7).status, unregister_status::not_found);
  EXPECT_EQ(reclaimer.stats().submitted, 2u);
  EXPECT_EQ(reclaimer.stats().pending_bytes, 2 * sizeof(item)) << "a lost race charges nothing";
  reclaimer.wait(by_key.ticket);
  EXPECT_EQ(book.destroyed[1].load(), 1);
  EXPECT_EQ(book.destroyed[2].load(), 1);
  // Misuse stays misuse: an object never registered.
  item stranger(5);
  EXPECT_THROW(reclaimer.try_submit(stranger), misuse_error);
  EXPECT_EQ(reclaimer.stats().pending_bytes, 0u);
}

TEST_F(async_counting, try_submit_by_key_looks_again_after_waiting_for_the_budget) {
  // try_submit<by_id>(2) finds item 2, then blocks on the budget (outside the writer lock);
  // meanwhile another thread deletes item 2 through the registry and it is freed. When the
  // budget lets the submitter in, it must look the key up again under the lock: not_found, and
  // no use of the freed item (a stale pointer from the first look would be one: ASan).
  watchdog dog(std::chrono::seconds(30), "try_submit by key across a budget wait");
  ledger book(4);
  g_ledger = &book;
  one_gp_registry reg;
  async_unregister reclaimer(reg, async_options{.max_age = std::chrono::microseconds(0),
                                                .budget_bytes = sizeof(item)});  // one request at a time
  item* first = add_item(reg, 1);
  add_item(reg, 2);
  // Its batch holds the budget while its destroy runs, held there by the test, without the
  // writer lock (a batch whose drain sleeps on a holder would park and release its bytes:
  // issue 35; a grace period held open would hold up the registry's own batch below).
  std::latch in_destroy(1), release(1);
  g_destroy_hook = [&](int id) {
    if (id != 1) return;
    in_destroy.count_down();
    release.wait();
  };
  ASSERT_TRUE(reclaimer.submit(*first));
  in_destroy.wait();
  submit_result late;
  std::thread submitter([&] {
    thread_registration<flavor::memb> r;
    late = reclaimer.try_submit<by_id>(2);
  });
  while (reclaimer.stats().blocked_now != 1) std::this_thread::yield();  // past its first look
  EXPECT_TRUE(reg.try_unregister<by_id>(2)) << "the writer lock is free during the other batch's drain";
  EXPECT_EQ(book.destroyed[2].load(), 1);
  release.count_down();  // that batch ends, the budget lets the submitter in
  submitter.join();
  g_destroy_hook = nullptr;
  EXPECT_EQ(late.status, unregister_status::not_found);
  reclaimer.drain();
  EXPECT_EQ(book.total_destroyed(), 2);
}

TEST(async_race, two_threads_submitting_and_deleting_the_same_key_exactly_one_wins) {
  // 10,000 keys; two threads walk them in the same order, one submitting each key to the
  // reclaimer (try_submit by key), the other deleting it through the registry (try_unregister by
  // key) for even keys and submitting it too for odd ones, with real memb grace periods and the
  // background reclaimer running batches meanwhile. Exactly one winner per key, no exception,
  // every object destroyed exactly once (ASan: nothing touched after its free).
  constexpr int kKeys = 10'000;
  watchdog dog(std::chrono::seconds(120), "two threads submitting and deleting the same keys");
  thread_registration<flavor::memb> self;
  grace_domain<flavor::memb> domain;
  ledger book(kKeys);
  g_ledger = &book;
  {
    basic_registry<flavor::memb, std::mutex, items> reg(domain);
    async_unregister reclaimer(reg, async_options{.max_age = std::chrono::microseconds(0)});
    for (int k = 0; k < kKeys; ++k) ASSERT_TRUE(reg.add(*new item(k)));
    std::vector<std::atomic<int>> wins(kKeys);
    std::atomic<int> exceptions{0};
    std::latch start(2);
    auto run = [&](bool deleter) {
      thread_registration<flavor::memb> r;
      start.arrive_and_wait();
      for (int k = 0; k < kKeys; ++k) {
        try {
          bool won = false;
          if (deleter && k % 2 == 0) {
            won = static_cast<bool>(reg.try_unregister<by_id>(k));
          } else {
            won = static_cast<bool>(reclaimer.try_submit<by_id>(k));
          }
          if (won) wins[static_cast<std::size_t>(k)].fetch_add(1);
        } catch (...) {
          exceptions.fetch_add(1);
        }
      }
    };
    std::thread a(run, false), b(run, true);
    a.join();
    b.join();
    reclaimer.drain();
    int bad = 0;
    for (int k = 0; k < kKeys; ++k)
      if (wins[static_cast<std::size_t>(k)].load() != 1 || book.destroyed[static_cast<std::size_t>(k)].load() != 1) ++bad;
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(exceptions.load(), 0);
    EXPECT_EQ(book.total_destroyed(), kKeys);
    EXPECT_TRUE(reg.index<by_id>().empty());
  }
  g_ledger = nullptr;
}

TEST(async_memb, a_reader_inside_its_section_across_a_batch_never_sees_its_object_destroyed) {
  // The batch may skip grace period #1 only when one that began after the submit has ended: here
  // none could (the reader's section, begun before the submit, holds every GP open), so the batch
  // must wait for the reader. Skipping anyway would destroy the object under the reader.
  watchdog dog(30s, "a batch waiting for a reader's section");
  thread_registration<flavor::memb> self;
  basic_registry<flavor::memb, std::mutex, poisoning_pitems> reg;
  async_unregister reclaimer(reg, manual());
  auto x = std::make_unique<pitem>(1);
  ASSERT_TRUE(reg.add(*x));
  std::latch found(1);
  std::atomic<pid_t> batch_tid{0};
  std::atomic<int> violations{0};
  auto& destroyed = reg.policy<poisoning_pitems>().destroyed;
  std::thread reader([&] {
    thread_registration<flavor::memb> r;
    read_guard<flavor::memb> guard;
    const pitem* p = reg.find<pitem_by_id>(guard, 1);
    found.count_down();
    if (p == nullptr) return;
    // Inside the section until the batch is asleep in its grace period (or destroyed p: a failure).
    while (destroyed.load() == 0 && (batch_tid.load() == 0 || thread_state(batch_tid.load()) != 'S'))
      std::this_thread::yield();
    if (p->poison.load() != kAlive) ++violations;
  });
  found.wait();
  ASSERT_TRUE(reclaimer.submit(*x));  // unlisted now; the reader still holds it
  std::thread batch([&] {
    thread_registration<flavor::memb> r;
    batch_tid = gettid();
    EXPECT_EQ(reclaimer.run_now(), 1u);
  });
  batch.join();
  reader.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(reclaimer.stats().last_batch.batch.gps_pipelined, 0u);
}

}  // namespace
}  // namespace rcubatch::test
