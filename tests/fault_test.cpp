// tests/fault_test.cpp — faults: a throwing validate hook, an allocation failure in the
// middle of a cascade, a leaked reference. Each test asserts what the registry looks like after
// the fault (states, queue contents, indexes, exact destroy and grace-period counts), not only that
// nothing crashed. No sleeps: threads meet on condition variables and latches.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "rcubatch.hpp"
#include "rcubatch/counting_flavor.hpp"
#include "support/counting.hpp"

// --- Allocation-failure injection -------------------------------------------------------------
// batch::retire(U*) allocates its node with nothrow new. Replacing the nothrow operator new lets a
// test make exactly the next such allocation fail. The replacement forwards to the ordinary
// operator new, so sanitizers still pair every allocation with the matching operator delete.
namespace {
std::atomic<int> g_fail_nothrow_new{0};  // > 0: the next N nothrow allocations fail
}  // namespace

void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  int left = g_fail_nothrow_new.load();
  while (left > 0 && !g_fail_nothrow_new.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0) return nullptr;
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }

namespace {

using rcubatch::reg_state;

// --- A small registry: objects published in slots, trees of dependents, sub-objects ------------
struct sub {
  int owner_id;
  bool disposed = false;
  unsigned long disposed_after_gps = 0;  // grace periods run when it was disposed
};

struct node : rcubatch::registrable<node> {
  explicit node(int i) : id(i) {}
  int id;
  std::uint64_t magic = 0xA11FE;
  node* parent = nullptr;
  std::vector<node*> children;
  sub* s = nullptr;
};

struct registry {
  explicit registry(std::size_t n) : slots(n) {}
  std::vector<std::atomic<node*>> slots;
  std::vector<std::unique_ptr<node>> storage;  // owns the memory: destroy only poisons
  std::vector<std::unique_ptr<sub>> subs;

  node* add(int id, node* parent = nullptr) {
    storage.push_back(std::make_unique<node>(id));
    node* n = storage.back().get();
    slots[static_cast<std::size_t>(id)].store(n);
    if (parent) {
      n->parent = parent;
      parent->children.push_back(n);
    }
    subs.push_back(std::make_unique<sub>(sub{id}));
    n->s = subs.back().get();
    EXPECT_TRUE(n->mark_registered());
    return n;
  }
  std::size_t published() const {
    std::size_t k = 0;
    for (const auto& s : slots) k += s.load() != nullptr;
    return k;
  }
  ~registry() {
    // Objects the test left registered: let their registrable destructor see a legal state.
    for (auto& n : storage) {
      if (n->state() == reg_state::released || n->state() == reg_state::uninitialized) continue;
      ADD_FAILURE() << "node " << n->id << " left in state " << rcubatch::to_string(n->state());
      n.release();  // leak rather than trip the fatal destroyed_while_linked check
    }
  }
};

struct hook_counts {
  int validate = 0, close = 0, unlist = 0, notify = 0, uninit = 0, destroy = 0, rebroadcast = 0;
};

template <class Flavor>
struct tree_policy {
  registry& reg;
  hook_counts& n;
  int throw_at = -1;          // validate throws for this id
  int fail_alloc_at = -1;     // uninit: retire's allocation fails for this id
  unsigned long (*gps_now)() noexcept = nullptr;

  void validate(node& x) {
    ++n.validate;
    if (x.id == throw_at) throw std::runtime_error("validate refused node " + std::to_string(x.id));
  }
  void close_many(rcubatch::object_range<node>) noexcept { ++n.close; }
  void unlist(node& x) noexcept {
    ++n.unlist;
    reg.slots[static_cast<std::size_t>(x.id)].store(nullptr);
    if (x.parent) std::erase(x.parent->children, &x);
    x.parent = nullptr;
  }
  void notify(node& x, rcubatch::batch& b) noexcept {
    ++n.notify;
    for (node* c : x.children) b.queue(*c);
  }
  void uninit(node& x, rcubatch::batch& b) noexcept {
    ++n.uninit;
    sub* s = std::exchange(x.s, nullptr);
    if (!s) return;
    if (x.id == fail_alloc_at) g_fail_nothrow_new.store(1);
    auto gps = gps_now;
    b.retire(s, [gps](sub* p) noexcept {
      EXPECT_FALSE(p->disposed) << "sub-object of node " << p->owner_id << " disposed twice";
      p->disposed = true;
      p->disposed_after_gps = gps ? gps() : 0;
    });
    g_fail_nothrow_new.store(0);
  }
  void rebroadcast(node&) noexcept { ++n.rebroadcast; }
  std::string name(const node& x) const { return "node-" + std::to_string(x.id); }
  void destroy(node* x) noexcept {
    ++n.destroy;
    EXPECT_EQ(x->magic, 0xA11FEu) << "node " << x->id << " destroyed twice";
    EXPECT_EQ(x->refs().count(), 0u) << "node " << x->id << " destroyed while referenced";
    x->magic = 0xDEAD;
  }
};

struct fault : rcubatch::test::counting_test<struct fault_tag> {};

// --- validate throws ------------------------------------------------------------------------
TEST_F(fault, validate_that_throws_aborts_the_batch_with_nothing_changed) {
  using F = fake;
  registry reg(200);
  std::vector<node*> all;
  for (int i = 0; i < 100; ++i) all.push_back(reg.add(i, i >= 50 ? all[static_cast<std::size_t>(i - 50)] : nullptr));
  rcubatch::unreg_queue<node> q;
  for (int i = 0; i < 50; ++i) q.push(*all[static_cast<std::size_t>(i)]);  // the parents; children cascade
  std::vector<node*> order_before;
  for (node& x : q) order_before.push_back(&x);

  hook_counts n;
  tree_policy<F> policy{reg, n, /*throw_at=*/37};
  EXPECT_THROW(rcubatch::rollback_many(q, policy, domain), std::runtime_error);

  // Nothing changed: the queue, the states, the indexes, the trees; no hook past validate ran.
  EXPECT_EQ(n.validate, 38);
  EXPECT_EQ(n.close + n.unlist + n.notify + n.uninit + n.destroy, 0);
  EXPECT_EQ(F::synchronizes(), 0u);
  ASSERT_EQ(q.size(), 50u);
  std::vector<node*> order_after;
  for (node& x : q) order_after.push_back(&x);
  EXPECT_EQ(order_after, order_before);
  EXPECT_EQ(reg.published(), 100u);
  for (node* x : all) {
    EXPECT_EQ(x->state(), reg_state::registered) << x->id;
    EXPECT_FALSE(x->dismantling()) << x->id;
    EXPECT_EQ(x->magic, 0xA11FEu);
    EXPECT_NE(x->s, nullptr);
  }
  for (int i = 0; i < 50; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)]->children.size(), 1u);

  // The same queue goes through once validate accepts it, cascade included, in 2 GPs.
  policy.throw_at = -1;
  const auto st = rcubatch::rollback_many(q, policy, domain);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(st.objects, 100u);
  EXPECT_EQ(st.dependents_added, 50u);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(F::synchronizes(), 2u);
  EXPECT_EQ(n.destroy, 100);
  EXPECT_EQ(reg.published(), 0u);
  for (node* x : all) EXPECT_EQ(x->state(), reg_state::released);
}

// --- allocation failure during a cascade ----------------------------------------------------
TEST_F(fault, allocation_failure_in_a_cascade_falls_back_to_an_inline_grace_period) {
  using F = fake;
  registry reg(64);
  // A chain 0 → 1 → 2 → 3 (each the dependent of the previous) plus 10 → 11, 10 → 12.
  node* a = reg.add(0);
  node* b1 = reg.add(1, a);
  node* c = reg.add(2, b1);
  reg.add(3, c);
  node* p = reg.add(10);
  reg.add(11, p);
  reg.add(12, p);
  rcubatch::unreg_queue<node> q;
  q.push(*a);
  q.push(*p);

  hook_counts n;
  tree_policy<F> policy{reg, n};
  policy.fail_alloc_at = 2;  // a dependent two levels down the cascade
  policy.gps_now = [] () noexcept { return F::synchronizes(); };
  const auto st = rcubatch::rollback_many(q, policy, domain);

  EXPECT_EQ(st.objects, 7u);
  EXPECT_EQ(st.dependents_added, 5u);
  EXPECT_EQ(st.retire_fallback_gps, 1u);
  EXPECT_EQ(st.retired, 6u);  // the seventh went through the fallback
  EXPECT_EQ(st.grace_periods, 3u);  // GP #1, the inline fallback GP, GP #2
  EXPECT_EQ(F::synchronizes(), 3u);
  // The registry is consistent: nothing published, every object released and destroyed once,
  // every sub-object disposed exactly once and never before a grace period after its unlink.
  EXPECT_EQ(reg.published(), 0u);
  EXPECT_EQ(n.destroy, 7);
  for (auto& x : reg.storage) {
    EXPECT_EQ(x->state(), reg_state::released) << x->id;
    EXPECT_TRUE(x->children.empty()) << x->id;
    EXPECT_EQ(x->s, nullptr);
  }
  for (auto& s : reg.subs) {
    EXPECT_TRUE(s->disposed) << s->owner_id;
    if (s->owner_id == 2) {
      EXPECT_EQ(s->disposed_after_gps, 2u) << "fallback: freed right after its inline GP";
    } else {
      EXPECT_EQ(s->disposed_after_gps, 3u) << "retired: freed after GP #2, node " << s->owner_id;
    }
  }
}

// --- a leaked reference ----------------------------------------------------------------------
// The stall reporter is a plain function pointer; it hands lines to the test through these.
std::mutex g_lines_mutex;
std::condition_variable g_lines_cv;
std::vector<std::string> g_lines;

void capture_line(std::string_view line) noexcept {
  std::lock_guard lock(g_lines_mutex);
  g_lines.emplace_back(line);
  g_lines_cv.notify_all();
}

TEST_F(fault, leaked_ref_gives_the_stall_report_and_no_early_destroy_until_released) {
  using F = rcubatch::flavor::memb;
  rcubatch::grace_domain<F> memb_domain;  // a real flavor: the fixture's counting domain is unused here
  registry reg(8);
  node* held = reg.add(1);
  reg.add(2);
  reg.add(3);
  held->refs().hold();  // the leak: nobody will put() until the test decides to
  {
    std::lock_guard lock(g_lines_mutex);
    g_lines.clear();
  }

  hook_counts n;
  std::mutex writer_lock;
  rcubatch::batch_stats st;
  std::thread writer([&] {
    tree_policy<F> policy{reg, n};
    rcubatch::unreg_queue<node> q;
    for (auto& x : reg.storage) q.push(*x);
    rcubatch::rollback_options opts;
    opts.drain.stall_report_interval = std::chrono::milliseconds(2);
    opts.drain.rebroadcast_interval = std::chrono::milliseconds(1);
    opts.drain.reporter = &capture_line;
    std::unique_lock lock(writer_lock);
    st = rcubatch::rollback_many(q, policy, memb_domain, rcubatch::unlock_during_waits(writer_lock), opts);
  });

  {
    std::unique_lock lock(g_lines_mutex);
    g_lines_cv.wait(lock, [] { return g_lines.size() >= 3; });  // three reports, not a sleep
    EXPECT_EQ(g_lines.front(), "waiting for node-1 to become free. Usage count = 1");
    for (const auto& l : g_lines) EXPECT_NE(l.find("node-1"), std::string::npos) << l;  // only the held one
  }
  // Reported, and not destroyed early: the two unreferenced objects are gone, the held one waits.
  EXPECT_EQ(held->state(), reg_state::unregistered);
  EXPECT_EQ(held->magic, 0xA11FEu);
  EXPECT_EQ(reg.published(), 0u);
  EXPECT_EQ(n.destroy, 2);  // written before the first report line, which we waited for
  {
    // The writer lock was handed back during the drain (unlock_during_waits): another writer
    // can take it while the batch waits for the leaked reference.
    std::unique_lock other_writer(writer_lock);
    EXPECT_EQ(held->state(), reg_state::unregistered);
  }

  held->refs().put();  // release the leak: the batch completes
  writer.join();
  EXPECT_EQ(n.destroy, 3);
  EXPECT_EQ(held->state(), reg_state::released);
  EXPECT_EQ(held->magic, 0xDEADu);
  EXPECT_GE(st.stall_reports, 3u);
  std::lock_guard lock(g_lines_mutex);
  EXPECT_EQ(st.stall_reports, g_lines.size());
  EXPECT_GE(st.rebroadcasts, 1u);
  EXPECT_GT(st.longest_drain_wait.count(), 0);
  EXPECT_EQ(st.objects, 3u);
}

// --- a registered QSBR writer in the ref drain --------------------------------------------------
// Was LIBRARY BUG 3 (RELIABILITY.md), fixed in 89202d3; kept as the regression test. Under qsbr, rollback_many called from a registered, online
// thread waits in the ref drain while still online. Every grace period of every other thread then
// waits for the drain — and a holder that needs a grace period before it can put() its reference
// deadlocks with it. grace_domain's own waits are fine (liburcu's synchronize goes offline around
// itself); the drain's condition-variable wait is not. Fix: in ref_drain::run (or around it in
// rollback_engine::run), when Flavor::quiescent_state_based and the thread is online
// (Flavor::read_ongoing()), call Flavor::thread_offline() before waiting and thread_online()
// after — safe, because the caller of a blocking rollback_many cannot hold QSBR-protected
// pointers across it anyway.
// The test breaks the cycle itself so it never hangs: if the holder's grace period has not ended
// within the guard time, it puts the reference anyway and the test fails on the recorded order.
TEST_F(fault, qsbr_writer_in_the_ref_drain_does_not_block_other_grace_periods) {
  using F = rcubatch::flavor::qsbr;
  rcubatch::thread_registration<F> me;  // the writer is a registered, online QSBR thread
  rcubatch::grace_domain<F> qsbr_domain, other_domain;  // real: the fixture's counting domain is unused
  registry reg(4);
  node* held = reg.add(1);
  held->refs().hold();
  {
    std::lock_guard lock(g_lines_mutex);
    g_lines.clear();
  }
  std::atomic<bool> gp_done_before_put{false};
  std::thread holder([&] {
    {  // wait until the drain is waiting for us: its first stall line
      std::unique_lock lock(g_lines_mutex);
      g_lines_cv.wait(lock, [] { return !g_lines.empty(); });
    }
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread gp([&] {
      other_domain.synchronize();  // another writer's grace period
      std::lock_guard lock(m);
      done = true;
      cv.notify_all();
    });
    {
      std::unique_lock lock(m);
      // A deadlock guard, not a synchronization sleep: the assertion is on the order below.
      gp_done_before_put = cv.wait_for(lock, std::chrono::seconds(20), [&] { return done; });
    }
    held->refs().put();
    gp.join();
  });
  hook_counts n;
  tree_policy<F> policy{reg, n};
  rcubatch::unreg_queue<node> q;
  q.push(*held);
  rcubatch::rollback_options opts;
  opts.drain.stall_report_interval = std::chrono::milliseconds(1);
  opts.drain.reporter = &capture_line;
  const auto st = rcubatch::rollback_many(q, policy, qsbr_domain, opts);
  {
    rcubatch::offline_scope<F> off;  // let the holder's grace period finish if it is still waiting
    holder.join();
  }
  EXPECT_EQ(st.objects, 1u);
  EXPECT_TRUE(gp_done_before_put.load())
      << "another thread's grace period waited for this writer's ref drain (online QSBR thread)";
}

}  // namespace
