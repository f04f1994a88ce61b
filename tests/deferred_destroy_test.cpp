// deferred_destroy.hpp and the chunked unlist (rollback_options::unlist_chunk), through a registry
// on memb and on qsbr: the flush returns before its destroys run (a destroy hook gated by a latch
// shows it), children are still destroyed before their parents and a held object after its holder
// lets go, on the reclaimer's thread; a writer gets the lock between two chunks of an unlist and
// meets the batch's objects as going away; the caller's array of pointers, which the passes
// before the return prefetch through, is never read after the call returns (the drain uses none,
// or its own copy). Every wait that could hang is under a watchdog.
#define RCUBATCH_INDEX_CHECKS 1
#include <rcubatch/deferred_destroy.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "support/flavors.hpp"
#include "support/watchdog.hpp"

namespace rcubatch::test {
namespace {

using namespace std::chrono_literals;

/// What the hooks saw, for the test running now (one test at a time per process).
struct hook_log {
  std::atomic<int> destroyed{0};
  std::atomic<int> parent_before_child{0};
  std::atomic<int> unlisted{0};
  std::atomic<std::thread::id> destroyed_on{};
  std::latch* destroy_gate = nullptr;   // the first destroy waits for it, if set
  std::latch* gate_entered = nullptr;   // counted down when that destroy starts waiting
  std::atomic<std::latch*> each_destroy{nullptr};  // counted down after each destroy, if set
  std::atomic<bool> gate_passed{false};
  // The chunked-unlist test: at these unlist counts the hook waits until a writer waits for the lock.
  int hold_at_1 = -1, hold_at_2 = -1;
  std::latch* first_chunk_done = nullptr;
  std::latch* second_chunk_done = nullptr;
  const void* lock_owner = nullptr;  // the registry, to ask its lock whether a writer waits
  bool (*writer_waiting)(const void*) = nullptr;
  std::atomic<int> unlisted_when_published{-1};  // set by the publish of the object inserted meanwhile

  void reset() {
    destroyed = 0;
    parent_before_child = 0;
    unlisted = 0;
    destroyed_on = std::thread::id{};
    destroy_gate = nullptr;
    gate_entered = nullptr;
    each_destroy = nullptr;
    gate_passed = false;
    hold_at_1 = hold_at_2 = -1;
    first_chunk_done = nullptr;
    second_chunk_done = nullptr;
    lock_owner = nullptr;
    writer_waiting = nullptr;
    unlisted_when_published = -1;
  }
  void on_destroy() {
    destroyed_on = std::this_thread::get_id();
    if (destroy_gate != nullptr && !gate_passed.exchange(true)) {
      if (gate_entered != nullptr) gate_entered->count_down();
      // A hook that blocks goes offline first under qsbr (the reclaimer is online in the registry's
      // flavor): another batch's grace period would wait for it otherwise.
      detail::offline_while_blocked<flavor::qsbr> offline;
      destroy_gate->wait();
    }
    destroyed.fetch_add(1);
    if (std::latch* each = each_destroy.load()) each->count_down();
  }
};
inline hook_log g_log;

template <class F>
struct box;

template <class F>
struct node : registrable<node<F>> {
  explicit node(int i) : id(i) {}
  int id;
  lfht_hook<node> by_id;
  owner_hook<box<F>> owner;
};
template <class F>
struct box : registrable<box<F>> {
  explicit box(int i) : id(i) {}
  int id;
  lfht_hook<box> by_id;
  owned_list<node<F>, &node<F>::owner> nodes;
  std::atomic<int> alive_nodes{0};
};
template <class F>
using node_ids = lfht_index<node<F>, &node<F>::by_id, key_member<&node<F>::id>, F>;
template <class F>
using box_ids = lfht_index<box<F>, &box<F>::by_id, key_member<&box<F>::id>, F>;

template <class F>
struct node_policy : indexed<node<F>, node_ids<F>> {
  using base = indexed<node<F>, node_ids<F>>;
  publish_result publish(node<F>& n) {
    if (n.id < 0) g_log.unlisted_when_published = g_log.unlisted.load();  // the writer between chunks
    return base::publish(n);
  }
  void unlist(node<F>& n) noexcept {
    base::unlist(n);
    const int count = g_log.unlisted.fetch_add(1) + 1;
    if (count == g_log.hold_at_1 && g_log.first_chunk_done != nullptr) g_log.first_chunk_done->count_down();
    if (count == g_log.hold_at_2 && g_log.second_chunk_done != nullptr) g_log.second_chunk_done->count_down();
    if (count == g_log.hold_at_1 || count == g_log.hold_at_2)  // the chunk's last: a writer must be waiting
      while (!g_log.writer_waiting(g_log.lock_owner)) std::this_thread::yield();
  }
  void destroy(node<F>* n) noexcept {
    if (box<F>* parent = n->owner.parent()) parent->alive_nodes.fetch_sub(1);
    g_log.on_destroy();
    delete n;
  }
};
template <class F>
struct box_policy : indexed<box<F>, box_ids<F>>, owning<&box<F>::nodes> {
  void destroy(box<F>* b) noexcept {
    if (b->alive_nodes != 0) g_log.parent_before_child.fetch_add(1);
    g_log.on_destroy();
    delete b;
  }
};
// The children's policy first: the drain scans the last lane (the boxes) first, so only the
// parent edge keeps a box from being destroyed before its nodes.
template <class F>
using table = basic_registry<F, std::mutex, node_policy<F>, box_policy<F>>;

/// A caller's array of pointers in pages of its own, which revoke() makes unreadable, as if the
/// caller had freed it: any later read faults (SIGSEGV in every build, which fails the test; the
/// heap would let a read of freed memory pass unseen outside ASan).
template <class T>
class revocable_array {
 public:
  explicit revocable_array(const std::vector<T*>& from)
      : size_(from.size()), bytes_(std::max<std::size_t>(1, from.size() * sizeof(T*))) {
    void* const p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "revocable_array: mmap");
    data_ = static_cast<T**>(p);
    std::copy(from.begin(), from.end(), data_);
  }
  revocable_array(const revocable_array&) = delete;
  revocable_array& operator=(const revocable_array&) = delete;
  ~revocable_array() { munmap(data_, bytes_); }
  /// A contiguous range of T*: unregister_many_deferred takes it as its order hint.
  std::span<T*> span() const noexcept { return {data_, size_}; }
  bool revoke() noexcept { return mprotect(data_, bytes_, PROT_NONE) == 0; }

 private:
  std::size_t size_;
  std::size_t bytes_;
  T** data_ = nullptr;
};

template <class F>
class deferred_flush : public ::testing::Test {
 protected:
  void SetUp() override { g_log.reset(); }
  void TearDown() override { g_log.reset(); }

  std::vector<node<F>*> add_nodes(table<F>& t, int n, box<F>* parent = nullptr, int first_id = 0) {
    std::vector<node<F>*> v;
    for (int i = 0; i < n; ++i) {
      auto* x = new node<F>(first_id + i);
      if (parent != nullptr) {
        x->owner.set_parent(*parent);
        parent->alive_nodes.fetch_add(1);
      }
      EXPECT_TRUE(t.add(*x));
      v.push_back(x);
    }
    return v;
  }

  thread_registration<F> reg_;
};
TYPED_TEST_SUITE(deferred_flush, two_reader_disciplines<>, flavor_names);

TYPED_TEST(deferred_flush, the_flush_returns_before_any_destroy_and_its_ticket_waits_for_the_last) {
  using F = TypeParam;
  table<F> t;
  deferred_destroy reclaimer;
  auto nodes = this->add_nodes(t, 100);
  std::latch gate(1), entered(1);
  g_log.destroy_gate = &gate;
  g_log.gate_entered = &entered;
  watchdog dog(30s, "a deferred flush whose first destroy waits for the caller");
  flush_ticket ticket = t.unregister_many_deferred(nodes, reclaimer);  // would hang if it destroyed here
  entered.wait();  // the reclaimer is inside the first destroy
  EXPECT_EQ(ticket.stats_at_handoff().objects, 100u);
  EXPECT_EQ(ticket.stats_at_handoff().grace_periods, 1u) << "one batch, one grace period";
  EXPECT_EQ(g_log.destroyed.load(), 0) << "the call returned before any destroy ended";
  EXPECT_FALSE(ticket.ready());
  {
    read_guard<F> guard;
    EXPECT_EQ(t.template find<node_ids<F>>(guard, 5), nullptr) << "unpublished when the call returns";
  }
  gate.count_down();
  const batch_stats st = ticket.wait();
  EXPECT_TRUE(ticket.ready());
  EXPECT_EQ(g_log.destroyed.load(), 100) << "wait returns once every destroy ran";
  EXPECT_EQ(st.objects, 100u);
  EXPECT_EQ(st.grace_periods, 1u);
  EXPECT_NE(g_log.destroyed_on.load(), std::this_thread::get_id()) << "the destroys ran on the reclaimer";
  EXPECT_EQ(t.counters().batches.batches, 1u);
}

TYPED_TEST(deferred_flush, children_are_destroyed_before_their_parents_on_the_reclaimer) {
  using F = TypeParam;
  table<F> t;
  deferred_destroy reclaimer(deferred_options{.max_pending_objects = 1000, .destroy_chunk = 3});
  std::vector<box<F>*> boxes;
  for (int b = 0; b < 10; ++b) {
    auto* x = new box<F>(b);
    ASSERT_TRUE(t.add(*x));
    this->add_nodes(t, 4, x, 1000 + 10 * b);
    boxes.push_back(x);
  }
  watchdog dog(30s, "a deferred flush of parents with children");
  flush_ticket ticket = t.unregister_many_deferred(boxes, reclaimer);
  const batch_stats st = ticket.wait();
  EXPECT_EQ(st.objects, 50u) << "the parents and the children they queued";
  EXPECT_EQ(g_log.destroyed.load(), 50);
  EXPECT_EQ(g_log.parent_before_child.load(), 0) << "no box destroyed while one of its nodes was alive";
  EXPECT_LE(st.grace_periods, 2u);
}

TYPED_TEST(deferred_flush, a_held_object_is_destroyed_after_its_holder_lets_go_not_before_the_call_returns) {
  using F = TypeParam;
  table<F> t;
  deferred_destroy reclaimer;
  auto nodes = this->add_nodes(t, 10);
  nodes[3]->refs().hold();  // a holder that lets go only after the flush returned
  std::latch nine(9);
  g_log.each_destroy = &nine;
  watchdog dog(30s, "a deferred flush of a held object");
  flush_ticket ticket = t.unregister_many_deferred(nodes, reclaimer);  // would hang if it drained here
  nine.wait();  // the others are destroyed: the reclaimer's drain waits for the held one
  g_log.each_destroy = nullptr;
  EXPECT_FALSE(ticket.ready()) << "the held object is not destroyed yet";
  EXPECT_EQ(g_log.destroyed.load(), 9);
  nodes[3]->refs().put();
  ticket.wait();
  EXPECT_EQ(g_log.destroyed.load(), 10);
}

TYPED_TEST(deferred_flush, a_flush_beyond_the_pending_limit_is_handed_over_only_after_the_earlier_batch_is_destroyed) {
  using F = TypeParam;
  table<F> t;
  deferred_destroy reclaimer(deferred_options{.max_pending_objects = 5});
  auto first = this->add_nodes(t, 5);
  auto second = this->add_nodes(t, 3, nullptr, 100);
  std::latch gate(1), entered(1);
  g_log.destroy_gate = &gate;
  g_log.gate_entered = &entered;
  watchdog dog(30s, "a flush waiting for room under max_pending_objects");
  flush_ticket a = t.unregister_many_deferred(first, reclaimer);
  entered.wait();  // the reclaimer holds the first batch's 5 objects, its first destroy gated
  int destroyed_when_second_returned = -1;
  std::thread other([&] {
    thread_registration<F> reg;
    flush_ticket b = t.unregister_many_deferred(second, reclaimer);  // 5 + 3 > 5: waits
    destroyed_when_second_returned = g_log.destroyed.load();
    b.wait();
  });
  {
    offline_scope<F> offline;  // qsbr: the other flush's grace period must not wait for this thread
    while (reclaimer.waited_submits() == 0) std::this_thread::yield();  // it is waiting for room
    EXPECT_EQ(reclaimer.pending_objects(), 5u) << "the second batch is not handed over yet";
    gate.count_down();
    other.join();
  }
  a.wait();
  // ≥ 5, not == 5: once handed over, the reclaimer may destroy the second batch's objects before
  // the other thread reads the count.
  EXPECT_GE(destroyed_when_second_returned, 5) << "handed over only once the first batch was destroyed";
  EXPECT_EQ(g_log.destroyed.load(), 8);
}

TYPED_TEST(deferred_flush, a_writer_gets_in_between_two_chunks_and_meets_the_batch_as_going_away) {
  using F = TypeParam;
  registry_options opts;
  opts.rollback.unlist_chunk = 8;
  table<F> t(opts);
  deferred_destroy reclaimer;
  auto nodes = this->add_nodes(t, 64);
  std::latch first_chunk_done(1), second_chunk_done(1), writer_done(1);
  g_log.hold_at_1 = 8;   // the last unlist of chunk 1, then of chunk 2: a writer is waiting there
  g_log.hold_at_2 = 16;
  g_log.first_chunk_done = &first_chunk_done;
  g_log.second_chunk_done = &second_chunk_done;
  g_log.lock_owner = &t;
  g_log.writer_waiting = [](const void* r) { return const_cast<table<F>*>(static_cast<const table<F>*>(r))->writer_lock().contended(); };
  g_log.destroy_gate = &writer_done;  // the batch's objects stay alive for the writer's by-object call
  watchdog dog(60s, "a writer racing a chunked unlist");
  unregister_status later_chunk_by_key{}, unlisted_by_key{}, unlisted_by_object{};
  bool inserted = false;
  node<F>* newcomer = new node<F>(-1);
  std::thread writer([&] {
    thread_registration<F> reg;
    first_chunk_done.wait();
    inserted = t.add(*newcomer);  // waits for the end of chunk 1 only
    second_chunk_done.wait();     // (the lock is not fair: without this it might get in at once)
    later_chunk_by_key = t.template try_unregister<node_ids<F>>(40).status;  // gets in after chunk 2
    {
      read_guard<F> guard;
      EXPECT_EQ(t.template find<node_ids<F>>(guard, 3), nullptr) << "an object of chunk 1 is unlisted";
    }
    unlisted_by_key = t.template try_unregister<node_ids<F>>(3).status;
    unlisted_by_object = t.try_unregister(*nodes[3]).status;
    writer_done.count_down();
  });
  flush_ticket ticket = t.unregister_many_deferred(nodes, reclaimer);
  writer.join();
  EXPECT_TRUE(inserted);
  EXPECT_EQ(g_log.unlisted_when_published.load(), 8) << "the insert ran between chunk 1 and chunk 2";
  EXPECT_EQ(later_chunk_by_key, unregister_status::already_unregistering)
      << "a still-listed object of a later chunk is going away: not queued twice";
  EXPECT_EQ(unlisted_by_key, unregister_status::not_found);
  EXPECT_EQ(unlisted_by_object, unregister_status::already_unregistering);
  EXPECT_EQ(ticket.stats_at_handoff().grace_periods, 1u) << "one GP #1 after the last chunk";
  EXPECT_EQ(ticket.stats_at_handoff().objects, 64u);
  ticket.wait();
  EXPECT_EQ(g_log.destroyed.load(), 64);
  {
    read_guard<F> guard;
    EXPECT_EQ(t.template find<node_ids<F>>(guard, -1), newcomer) << "the insert made between chunks stays";
  }
  g_log.reset();
  t.unregister(*newcomer);
}

// The passes before the return prefetch through the caller's array (registry::unregister_many's
// order hint); the drain runs after the return, on the reclaimer's thread, when the array may be
// gone: it must use no hint, or its own copy (deferred_options::copy_order_hint). The first destroy
// is gated until the array is unreadable, so the drain's look-ahead past it would fault.
TYPED_TEST(deferred_flush, a_flush_never_reads_the_callers_pointer_array_after_the_call_returns) {
  using F = TypeParam;
  for (const bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "deferred_options::copy_order_hint" : "no copy of the hint");
    g_log.reset();
    table<F> t;
    deferred_destroy reclaimer(deferred_options{.copy_order_hint = copy});
    auto nodes = this->add_nodes(t, 100);
    revocable_array<node<F>> array(nodes);
    std::latch gate(1);
    g_log.destroy_gate = &gate;
    watchdog dog(30s, "a deferred flush over an array the caller frees at once");
    flush_ticket ticket = t.unregister_many_deferred(array.span(), reclaimer);
    ASSERT_TRUE(array.revoke());  // as the caller freeing it: a read from here on faults
    EXPECT_EQ(g_log.destroyed.load(), 0) << "the drain is held at its first destroy";
    gate.count_down();
    const batch_stats st = ticket.wait();
    EXPECT_EQ(st.objects, 100u);
    EXPECT_EQ(g_log.destroyed.load(), 100) << "every object destroyed without the caller's array";
  }
}

}  // namespace
}  // namespace rcubatch::test
