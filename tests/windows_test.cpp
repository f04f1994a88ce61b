// Readers and holders that sit in the windows a broken batch would open (issue 12).
//
// The long stress runs almost never have a reader inside the few microseconds between an unlink
// and the grace period that covers it, so mutants that skip or misplace that GP were killed only by
// GP counts. Here a real liburcu reader (memb and qsbr, thread_registration + read_guard) is put
// into each window on purpose, by state, never by time:
//   - hooked<Flavor> is the real flavor whose synchronize() first announces "a GP starts" on the
//     board (and can hold one GP before or after its real body, as another thread's GP in
//     progress);
//   - a policy hook (notify, uninit) or the test itself tells the reader to look the object up
//     while it is still linked; the writer waits until the reader holds the pointer;
//   - the reader then stays in its read section until a GP that started after its lookup begins
//     (correct code: that GP cannot end before the reader leaves, so the object is alive) or until
//     the object is poisoned by its destroy / disposer (a broken batch freed it under the reader).
// The drain tests use holders instead (counting_flavor: no reader is involved) and a hang
// detector, so a lost wake-up fails in seconds rather than at the ctest timeout.
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/counting.hpp"
#include "support/flavors.hpp"
#include "support/objects.hpp"  // kAlive, kPoison
#include "support/thread_state.hpp"

namespace rcubatch::test {
namespace {

/// What every thread of a test waits on: GP starts, poisonings, the reader's handshake and a GP
/// held "in progress" on another thread. One mutex and one condvar: every wait is a predicate.
struct board_t {
  enum class hold { none, before_gp, after_gp };
  std::mutex m;
  std::condition_variable cv;
  unsigned long gp_starts = 0;
  bool go = false;     // the reader may look its object up now
  bool armed = false;  // the reader holds the pointer
  hold hold_next = hold::none;
  bool held = false;     // a GP is being held
  bool release = false;  // let it go

  void reset() {
    std::lock_guard l(m);
    gp_starts = 0;
    go = armed = held = release = false;
    hold_next = hold::none;
  }
  void hold_here(hold where) {
    std::unique_lock l(m);
    if (hold_next != where) return;
    hold_next = hold::none;
    held = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  }
  void gp_starting() {
    hold_here(hold::before_gp);
    std::lock_guard l(m);
    ++gp_starts;
    cv.notify_all();
  }
  void poison(std::atomic<std::uint64_t>& word) {
    std::lock_guard l(m);
    word.store(kPoison);
    cv.notify_all();
  }
  /// Called by a writer's hook: lets the reader look up, returns once it holds the pointer.
  void let_reader_look_up() {
    std::unique_lock l(m);
    go = true;
    cv.notify_all();
    cv.wait(l, [&] { return armed; });
  }
  void wait_held() {
    std::unique_lock l(m);
    cv.wait(l, [&] { return held; });
  }
  void let_go() {
    std::lock_guard l(m);
    release = true;
    cv.notify_all();
  }
};
board_t board;

/// Starts a GP of `domain` on a new thread and returns once the board holds it at `where`: a GP
/// in progress on another thread. board.let_go() ends it; the caller joins the thread.
template <class F>
std::thread start_held_gp(grace_domain<F>& domain, board_t::hold where) {
  {
    std::lock_guard l(board.m);
    board.hold_next = where;
  }
  std::thread t([&domain] { domain.synchronize(); });
  board.wait_held();
  return t;
}

/// The real flavor, plus the board's GP hooks around each synchronize().
template <class Base>
struct hooked : Base {
  static void synchronize() noexcept {
    board.gp_starting();
    Base::synchronize();
    board.hold_here(board_t::hold::after_gp);
  }
};

struct sub {
  std::atomic<std::uint64_t> poison{kAlive};
};

struct item : registrable<item> {
  std::atomic<std::uint64_t> poison{kAlive};
  std::atomic<item*>* slot = nullptr;  // where the primary index publishes it (unlist clears it)
  item* dependent = nullptr;           // queued from notify (the cascade)
  sub part;                            // a sub-object published in part_slot, retired in uninit
  std::atomic<sub*> part_slot{nullptr};
  std::atomic<item*> second_slot{nullptr};  // a secondary index, unlinked in notify (dismantle)
};

std::unique_ptr<item> make_item(std::atomic<item*>& slot) {
  auto p = std::make_unique<item>();
  p->slot = &slot;
  slot.store(p.get(), std::memory_order_release);
  p->mark_registered();
  return p;
}

/// Where most window tests start: one registered item published in its own slot, and the grace
/// domain its batch runs on. Declared before the reader, so the reader is joined before it goes.
template <class F>
struct lone_item {
  std::atomic<item*> slot{nullptr};
  std::unique_ptr<item> x = make_item(slot);
  grace_domain<F> domain;
};

/// A reader thread of Flavor F that, once told (board.go), looks up *slot inside a read_guard and
/// holds the pointer until a GP that started after the lookup begins, or the object is poisoned.
template <class F, class T>
class window_reader {
 public:
  explicit window_reader(std::atomic<T*>& s) : slot_(s), thread_([this] { run(); }) {}
  ~window_reader() {
    if (thread_.joinable()) thread_.join();
  }
  void join() { thread_.join(); }
  bool found = false;
  bool saw_poison = false;
  reg_state state_seen = reg_state::uninitialized;  // items only: the state it saw while holding

 private:
  void run() {
    thread_registration<F> reg;
    {
      offline_scope<F> offline;  // qsbr: not a reader while it waits to be told
      std::unique_lock l(board.m);
      board.cv.wait(l, [] { return board.go; });
    }
    read_guard<F> guard;
    T* p = slot_.load(std::memory_order_acquire);
    std::unique_lock l(board.m);
    found = p != nullptr;
    const unsigned long g0 = board.gp_starts;
    board.armed = true;
    board.cv.notify_all();
    if (p == nullptr) return;
    board.cv.wait(l, [&] { return board.gp_starts > g0 || p->poison.load() != kAlive; });
    saw_poison = p->poison.load() != kAlive;
    if constexpr (std::is_same_v<T, item>) state_seen = p->state();
  }

  std::atomic<T*>& slot_;
  std::thread thread_;
};

/// A Lockable for unlock_during_waits whose first unlock (in GP #1, after the snapshot and the
/// elapsed check, before wait_for) runs a test action.
struct hook_lock {
  std::function<void()> on_first_unlock;
  bool fired = false;
  void lock() noexcept {}
  void unlock() noexcept {
    if (!std::exchange(fired, true) && on_first_unlock) on_first_unlock();
  }
};


// --- the policies --------------------------------------------------------------------------------

/// Unlist clears the primary slot; notify lets the reader find the dependent (still linked) and
/// then queues it; no uninit, no retire: only the cascade needs GP #2.
struct cascade_policy {
  void unlist(item& x) noexcept { x.slot->store(nullptr, std::memory_order_release); }
  void notify(item& x, batch& b) noexcept {
    if (x.dependent == nullptr) return;
    board.let_reader_look_up();
    b.queue(*x.dependent);
  }
  void destroy(item* x) noexcept { board.poison(x->poison); }
};

/// uninit unlinks a sub-object the reader holds and retires it; it returns false ("nothing else
/// unlinked"), so only the retire asks for GP #2.
struct retire_policy {
  void unlist(item& x) noexcept { x.slot->store(nullptr, std::memory_order_release); }
  bool uninit(item& x, batch& b) noexcept {
    board.let_reader_look_up();
    x.part_slot.store(nullptr, std::memory_order_release);
    b.retire(&x.part, [](sub* s) noexcept { board.poison(s->poison); });
    return false;
  }
  void destroy(item* x) noexcept { board.poison(x->poison); }
};

/// notify unlinks the object from a secondary index and skips its own GP (dismantling).
template <class F>
struct dismantle_policy {
  grace_domain<F>* domain;
  void unlist(item& x) noexcept { x.slot->store(nullptr, std::memory_order_release); }
  void notify(item& x) noexcept {
    board.let_reader_look_up();
    x.second_slot.store(nullptr, std::memory_order_release);
    synchronize_unless_dismantling(x, *domain);
  }
  void destroy(item* x) noexcept { board.poison(x->poison); }
};

struct plain_policy {
  void unlist(item& x) noexcept { x.slot->store(nullptr, std::memory_order_release); }
  void destroy(item* x) noexcept { board.poison(x->poison); }
};

// --- readers in the windows (memb and qsbr) -----------------------------------------------------

template <class F>
class windows : public ::testing::Test {
 protected:
  void SetUp() override { board.reset(); }
  void TearDown() override { board.reset(); }
};
TYPED_TEST_SUITE(windows, two_reader_disciplines<hooked>);

/// The batch of a window test: `x` alone in a queue through `policy`; the reader is joined after.
template <class F, class T, class Policy, class... Options>
batch_stats run_batch_then_join(window_reader<F, T>& reader, item& x, Policy policy, grace_domain<F>& domain,
                                Options&&... options) {
  unreg_queue<item> q;
  q.push(x);
  const batch_stats st = rollback_many(q, policy, domain, std::forward<Options>(options)...);
  reader.join();
  return st;
}

/// The reader found the object while it was linked and never saw it destroyed; `broken` says
/// what the batch did wrong otherwise.
template <class F, class T>
void expect_alive_for_the_reader(const window_reader<F, T>& reader, const char* broken) {
  EXPECT_TRUE(reader.found);
  EXPECT_FALSE(reader.saw_poison) << broken;
}

// Window: a dependent's unlist (after GP #1) .. GP #2. Kills "GP #2 skipped when only the cascade
// needs it" and "the unregistering state transition skipped".
TYPED_TEST(windows, a_reader_holding_a_dependent_unlisted_after_gp1_sees_it_alive_until_gp2) {
  using F = TypeParam;
  std::atomic<item*> parent_slot{nullptr}, dep_slot{nullptr};
  auto parent = make_item(parent_slot);
  auto dep = make_item(dep_slot);
  parent->dependent = dep.get();
  window_reader<F, item> reader(dep_slot);
  grace_domain<F> domain;
  const batch_stats st = run_batch_then_join(reader, *parent, cascade_policy{}, domain);
  expect_alive_for_the_reader(reader, "the dependent was destroyed while a reader that found it before its unlist "
                                      "still held it (no GP between the unlist and the destroy)");
  EXPECT_EQ(reader.state_seen, reg_state::unregistering);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(dep->poison.load(), kPoison);
  EXPECT_EQ(parent->poison.load(), kPoison);
}

// Window: a retiree's unlink in uninit .. GP #2 .. its disposal. Kills "retire does not ask for
// GP #2" and "untied retirees disposed before GP #2".
TYPED_TEST(windows, a_reader_holding_a_sub_object_retired_in_uninit_sees_it_alive_until_gp2) {
  using F = TypeParam;
  lone_item<F> o;
  o.x->part_slot.store(&o.x->part);
  window_reader<F, sub> reader(o.x->part_slot);
  const batch_stats st = run_batch_then_join(reader, *o.x, retire_policy{}, o.domain);
  expect_alive_for_the_reader(reader, "the retired sub-object was disposed under a reader that found it before "
                                      "its unlink");
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(o.x->part.poison.load(), kPoison);
  EXPECT_EQ(o.x->poison.load(), kPoison);
}

// Window: a dismantle elision's unlink in notify .. GP #2. Kills "the elision does not ask for
// GP #2".
TYPED_TEST(windows, a_reader_holding_an_object_unlinked_by_a_dismantle_elision_sees_it_alive_until_gp2) {
  using F = TypeParam;
  lone_item<F> o;
  o.x->second_slot.store(o.x.get());
  window_reader<F, item> reader(o.x->second_slot);
  const batch_stats st = run_batch_then_join(reader, *o.x, dismantle_policy<F>{&o.domain}, o.domain);
  expect_alive_for_the_reader(reader, "destroyed with no GP after the secondary unlink");
  EXPECT_EQ(st.dismantle_elided, 1u);
  EXPECT_EQ(o.x->poison.load(), kPoison);
}

// Window: another thread's GP has done its real work (it can no longer wait for a new reader) but
// the domain still shows it in progress; the reader finds the object; the batch unlists it and
// snapshots. That GP began before the unlink: it must not satisfy the batch's cookie. Kills
// "snapshot's cookie satisfied by the GP in progress".
TYPED_TEST(windows, a_gp_that_began_before_the_unlink_does_not_cover_it) {
  using F = TypeParam;
  lone_item<F> o;
  // Its flavor GP is over; the domain's sequence is still odd.
  std::thread other = start_held_gp(o.domain, board_t::hold::after_gp);
  window_reader<F, item> reader(o.slot);  // registered only now: that GP never waited for it
  board.let_reader_look_up();
  hook_lock lock;
  lock.on_first_unlock = [] { board.let_go(); };  // after the batch's snapshot: let that GP end
  const batch_stats st = run_batch_then_join(reader, *o.x, plain_policy{}, o.domain, unlock_during_waits(lock));
  other.join();
  expect_alive_for_the_reader(reader, "destroyed after a GP that began before its unlink (and never waited for "
                                      "the reader)");
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_EQ(o.x->poison.load(), kPoison);
}

// Window: the batch's cookie was taken while idle; another thread's GP starts (it covers the
// unlink) but has not ended when the batch calls wait_for. Kills "wait_for treats a GP still in
// progress on another thread as elapsed".
TYPED_TEST(windows, a_gp_still_in_progress_on_another_thread_is_waited_for) {
  using F = TypeParam;
  lone_item<F> o;
  window_reader<F, item> reader(o.slot);
  board.let_reader_look_up();
  std::thread other;
  std::atomic<bool> unlock_returned{false};
  hook_lock lock;
  lock.on_first_unlock = [&] {  // after the snapshot (idle) and the elapsed check
    // In progress for the domain, not begun for liburcu.
    other = start_held_gp(o.domain, board_t::hold::before_gp);
    unlock_returned = true;
  };
  std::atomic<pid_t> writer_tid{0};
  batch_stats st;
  std::thread writer([&] {
    writer_tid = gettid();
    unreg_queue<item> q;
    q.push(*o.x);
    st = rollback_many(q, plain_policy{}, o.domain, unlock_during_waits(lock));
  });
  // Release the other GP only once the writer sleeps on the domain's GP mutex (correct code) or
  // the object is gone (a mutant that took the running GP as ended): both are states, not times.
  while (!unlock_returned.load()) std::this_thread::yield();
  while (o.x->poison.load() == kAlive && thread_state(writer_tid.load()) != 'S') std::this_thread::yield();
  board.let_go();
  writer.join();
  other.join();
  reader.join();
  expect_alive_for_the_reader(reader, "destroyed while the GP covering its unlink was still in progress");
  EXPECT_EQ(o.x->poison.load(), kPoison);
  EXPECT_EQ(st.grace_periods + st.gps_elided, 1u);
}

// --- holders and the drain (counting flavor: no reader here) ------------------------------------

struct drain_tag;
using fake = counting_flavor<drain_tag>;

/// Runs f on a thread; if it has not returned after `limit`, prints `what` and ends the process
/// with a failure at once. A hang detector, not a speed assertion: correct code needs microseconds,
/// and the drain's own timers are set to 60 s so that only a wake-up by the put can finish in time.
void finishes_or_dies(const char* what, const std::function<void()>& f,
                      std::chrono::seconds limit = std::chrono::seconds(10)) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    f();
    std::lock_guard l(m);
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock l(m);
    if (!cv.wait_for(l, limit, [&] { return done; })) {
      std::fprintf(stderr, "FAILED (hang detector, %lld s): %s\n", static_cast<long long>(limit.count()), what);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  t.join();
}

/// A holder thread: waits for its cue, then runs its action.
struct holder {
  std::mutex m;
  std::condition_variable cv;
  bool cue = false;
  std::function<void()> action;
  std::thread t;
  void start() {
    t = std::thread([this] {
      std::unique_lock l(m);
      cv.wait(l, [&] { return cue; });
      l.unlock();
      action();
    });
  }
  void signal() {
    std::lock_guard l(m);
    cue = true;
    cv.notify_all();
  }
  void join() {
    if (t.joinable()) t.join();
  }
};

/// destroy poisons; the destroy of `trigger` (done in the drain's first pass, before it waits)
/// cues the holder; rebroadcast(cue_on) cues it too.
struct drain_policy {
  item* trigger = nullptr;
  item* rebroadcast_cue = nullptr;
  holder* h = nullptr;
  bool* part_alive_at_destroy = nullptr;  // retire_with: the sub-object outlives its owner's destroy
  item* owner = nullptr;
  item* retire_with_part_of = nullptr;
  item* child = nullptr;            // notify(parent) queues it
  bool* child_gone_at_parent_destroy = nullptr;

  void unlist(item& x) noexcept { x.slot->store(nullptr, std::memory_order_release); }
  void notify(item& x, batch& b) noexcept {
    if (x.dependent != nullptr) b.queue(*x.dependent);
  }
  void uninit(item& x, batch& b) noexcept {
    if (&x == retire_with_part_of) b.retire_with(x, &x.part, [](sub* s) noexcept { board.poison(s->poison); });
  }
  void rebroadcast(item& x) noexcept {
    if (&x == rebroadcast_cue) h->signal();
  }
  void destroy(item* x) noexcept {
    if (x == owner && part_alive_at_destroy) *part_alive_at_destroy = x->part.poison.load() == kAlive;
    if (x->dependent != nullptr && child_gone_at_parent_destroy)
      *child_gone_at_parent_destroy = x->dependent->poison.load() == kPoison;
    board.poison(x->poison);
    if (x == trigger) h->signal();
  }
  std::string name(const item&) const { return "held item"; }
};

drain_options quiet_drain() {
  drain_options o;
  o.stall_report_interval = std::chrono::milliseconds(60'000);
  o.rebroadcast_interval = std::chrono::milliseconds(60'000);
  o.reporter_fn = [](std::string_view) {};
  return o;
}

struct drain_windows : counting_test<drain_tag> {
  void SetUp() override { board.reset(); }

  /// The batch of `objects` (pushed in this order) through `p` with `opts`, under the hang
  /// detector (`what` names the hang).
  batch_stats run_or_die(const char* what, std::initializer_list<item*> objects, drain_policy p,
                         const rollback_options& opts) {
    batch_stats st;
    finishes_or_dies(what, [&] {
      unreg_queue<item> q;
      for (item* x : objects) q.push(*x);
      st = rollback_many(q, p, domain, opts);
    });
    return st;
  }
};

// The put lands after the drain has counted the object as held (the trigger is destroyed after it
// in the drain's first pass) and usually after the drain sleeps: only its wake-up can end the
// wait within 60 s. Twenty rounds, so the put lands after the sleep in most of them. Kills "the
// last put does not notify" (ref_count) and "released() does not wake the drain" (ref_drain).
TEST_F(drain_windows, a_put_after_the_drain_started_waiting_wakes_it) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<item*> s1{nullptr}, s2{nullptr};
    auto trigger = make_item(s1);  // pushed last: scanned after `held` (join order)
    auto held = make_item(s2);
    held->refs().hold();
    holder h;
    h.action = [&] { held->refs().put(); };
    h.start();
    rollback_options opts;
    opts.drain = quiet_drain();
    const batch_stats st = run_or_die("a put after the drain began waiting did not wake it (lost wake-up)",
                                      {held.get(), trigger.get()}, {.trigger = trigger.get(), .h = &h}, opts);
    h.join();
    ASSERT_EQ(held->poison.load(), kPoison);
    EXPECT_EQ(st.stall_reports, 0u) << "woken by the stall timer, not by the put";
    EXPECT_EQ(st.rebroadcasts, 0u);
  }
}

// Held twice; the first put must not let the drain destroy it. The holder waits for two stall
// reports after its first put (the drain is then past any wake-up that put could have caused) or
// for the object's destroy, and checks it is alive. Kills "put notifies one reference early".
TEST_F(drain_windows, an_object_still_held_once_is_not_destroyed) {
  std::atomic<item*> s1{nullptr}, s2{nullptr};
  auto trigger = make_item(s1);
  auto held = make_item(s2);
  held->refs().hold();
  held->refs().hold();
  std::mutex rm;
  std::condition_variable rcv;
  int reports = 0;
  bool alive_while_held = false;
  holder h;
  h.action = [&] {
    int r0;
    {
      std::lock_guard l(rm);
      r0 = reports;
    }
    held->refs().put();
    {
      std::unique_lock l(rm);
      rcv.wait(l, [&] { return reports >= r0 + 2 || held->poison.load() != kAlive; });
    }
    alive_while_held = held->poison.load() == kAlive;
    if (alive_while_held) held->refs().put();
  };
  h.start();
  rollback_options opts;
  opts.drain = quiet_drain();
  opts.drain.stall_report_interval = std::chrono::milliseconds(5);
  opts.drain.reporter_fn = [&](std::string_view) {
    std::lock_guard l(rm);
    ++reports;
    rcv.notify_all();
  };
  run_or_die("an object held twice was never freed", {held.get(), trigger.get()}, {.trigger = trigger.get(), .h = &h},
             opts);
  h.join();
  EXPECT_TRUE(alive_while_held) << "destroyed while one reference was still held";
  EXPECT_EQ(held->poison.load(), kPoison);
}

// The holder lets go only when the stall report names the object. Kills "stall report
// suppressed" in seconds (the hang detector), not at the ctest timeout.
TEST_F(drain_windows, the_stall_report_names_a_held_object) {
  std::atomic<item*> s1{nullptr};
  auto held = make_item(s1);
  held->refs().hold();
  holder h;
  h.action = [&] { held->refs().put(); };
  h.start();
  std::string line;
  rollback_options opts;
  opts.drain = quiet_drain();
  opts.drain.stall_report_interval = std::chrono::milliseconds(5);
  opts.drain.reporter_fn = [&](std::string_view l) {
    if (line.empty()) line = std::string(l);
    h.signal();
  };
  const batch_stats st = run_or_die("no stall report for a held object", {held.get()}, {.h = &h}, opts);
  h.join();
  EXPECT_GE(st.stall_reports, 1u);
  EXPECT_NE(line.find("held item"), std::string::npos) << line;
  EXPECT_EQ(held->poison.load(), kPoison);
}

// A sub-object retired with its owner is used by the owner's holder after GP #2 (cued by the
// drain's rebroadcast while the owner is held) and by the owner's destroy. Kills "retire_with
// disposed with the untied retirees" and "tied retirees disposed before the owner's destroy".
TEST_F(drain_windows, a_sub_object_retired_with_its_owner_outlives_the_owners_holders_and_destroy) {
  std::atomic<item*> s1{nullptr};
  auto owner = make_item(s1);
  owner->refs().hold();
  bool alive_for_holder = false, alive_at_destroy = false;
  holder h;
  h.action = [&] {
    alive_for_holder = owner->part.poison.load() == kAlive;
    owner->refs().put();
  };
  h.start();
  rollback_options opts;
  opts.drain = quiet_drain();
  opts.drain.rebroadcast_interval = std::chrono::milliseconds(1);
  run_or_die("the owner was never freed", {owner.get()},
             {.rebroadcast_cue = owner.get(),
              .h = &h,
              .part_alive_at_destroy = &alive_at_destroy,
              .owner = owner.get(),
              .retire_with_part_of = owner.get()},
             opts);
  h.join();
  EXPECT_TRUE(alive_for_holder) << "disposed while a holder of its owner could still use it";
  EXPECT_TRUE(alive_at_destroy) << "disposed before its owner's destroy";
  EXPECT_EQ(owner->part.poison.load(), kPoison);
}

// A held dependent delays its parent's destroy; the parent is destroyed once it goes. Kills
// "record_parent does nothing" (parent destroyed first) and "release does not put the parent"
// (the parent is never destroyed: the hang detector).
TEST_F(drain_windows, a_parent_is_destroyed_after_its_held_dependent_and_only_then) {
  std::atomic<item*> s1{nullptr}, s2{nullptr};
  auto parent = make_item(s1);
  auto child = make_item(s2);
  parent->dependent = child.get();
  child->refs().hold();
  bool child_gone = false;
  holder h;
  h.action = [&] { child->refs().put(); };
  h.start();
  rollback_options opts;
  opts.drain = quiet_drain();
  opts.drain.rebroadcast_interval = std::chrono::milliseconds(1);
  run_or_die("the parent of a released dependent was never freed", {parent.get()},
             {.rebroadcast_cue = child.get(), .h = &h, .child_gone_at_parent_destroy = &child_gone}, opts);
  h.join();
  EXPECT_TRUE(child_gone) << "the parent was destroyed while its dependent was still held";
  EXPECT_EQ(parent->poison.load(), kPoison);
  EXPECT_EQ(child->poison.load(), kPoison);
}

}  // namespace
}  // namespace rcubatch::test
