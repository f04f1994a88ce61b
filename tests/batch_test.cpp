// batch: what hooks can do with the running batch — dependents, retire, note_unlinked.
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include "support/counting.hpp"
#include "support/misuse_capture.hpp"
#include "support/objects.hpp"
#include "support/policies.hpp"

namespace rcubatch::test {
namespace {

struct sub_object {
  std::vector<std::string>* log;
  int id;
};

struct batch_test : counting_test<struct batch_test_tag> {
  std::vector<std::string> log;
};

TEST_F(batch_test, retired_sub_objects_are_freed_right_after_the_last_grace_period_before_the_objects) {
  fake::on_synchronize = [this] { log.push_back("GP"); };
  struct policy : recording_policy {
    static constexpr bool publishes_nothing() { return true; }
    bool uninit(node& n, batch& b) noexcept {
      record("uninit:" + std::to_string(n.id));
      b.retire(new sub_object{log, n.id}, [](sub_object* s) noexcept {
        s->log->push_back("free-sub:" + std::to_string(s->id));
        delete s;
      });
      return false;  // the retire alone must be enough to require GP #2
    }
  } p;
  p.log = &log;
  unreg_queue<node> q;
  queue_registered(q, 2);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_EQ(s.retired, 2u);
  EXPECT_EQ(s.grace_periods, 2u);
  const std::vector<std::string> tail(log.end() - 6, log.end());
  // Join order (uninit and the drain); untied retirees in the order they were retired.
  const std::vector<std::string> expected{"uninit:1", "GP", "free-sub:0", "free-sub:1", "destroy:0", "destroy:1"};
  EXPECT_EQ(tail, expected);
}

struct intrusive_sub : retire_node {
  static inline int disposed = 0;
  intrusive_sub() {
    dispose = [](retire_node* n) noexcept {
      ++disposed;
      delete static_cast<intrusive_sub*>(n);
    };
  }
};

TEST_F(batch_test, an_intrusive_retire_node_is_disposed_without_allocation) {
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    void uninit(node&, batch& b) noexcept { b.retire(*new intrusive_sub); }
  };
  intrusive_sub::disposed = 0;
  unreg_queue<node> q;
  queue_registered(q, 3);
  const batch_stats s = rollback_many(q, policy{}, domain);
  EXPECT_EQ(intrusive_sub::disposed, 3);
  EXPECT_EQ(s.retired, 3u);
}

TEST_F(batch_test, note_unlinked_requires_the_second_grace_period) {
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    bool uninit(node&, batch& b) noexcept {
      b.note_unlinked();
      return false;
    }
  };
  unreg_queue<node> q;
  queue_registered(q, 3);
  EXPECT_EQ(rollback_many(q, policy{}, domain).grace_periods, 2u);
}

TEST_F(batch_test, knows_its_objects) {
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    std::size_t seen_size = 0;
    bool contained = false;
    void batch_notify(batch& b) noexcept {
      seen_size = b.size();
      contained = b.contains(*b.objects_of<node>().begin());
    }
  } p;
  unreg_queue<node> q;
  queue_registered(q, 4);
  rollback_many(q, p, domain);
  EXPECT_EQ(p.seen_size, 4u);
  EXPECT_TRUE(p.contained);
}

TEST_F(batch_test, a_dependent_queued_after_notify_is_refused_and_stays_registered) {
  scoped_misuse_policy report(misuse_policy::report, quiet_reporter);
  auto late = make_registered(1, 50);
  struct policy {
    static constexpr bool publishes_nothing() { return true; }
    node* late;
    bool accepted = true;
    void uninit(node&, batch& b) noexcept { accepted = b.queue(*late); }
  } p{late[0]};
  const unsigned long before = misuse_count(misuse_kind::queued_too_late);
  unreg_queue<node> q;
  queue_registered(q, 1);
  rollback_many(q, p, domain);
  EXPECT_FALSE(p.accepted);
  EXPECT_EQ(misuse_count(misuse_kind::queued_too_late), before + 1) << "its own kind, not a double unregister";
  EXPECT_EQ(late[0]->state(), reg_state::registered);
  unregister_one(*late[0], recording_policy{}, domain);
}

TEST_F(batch_test, a_dependent_taken_from_a_callers_queue_joins_the_batch) {
  auto nodes = make_registered(2);
  nodes[0]->dependents = {nodes[1]};
  unreg_queue<node> pending;  // nodes[1] was queued elsewhere, e.g. by a dellink
  pending.push(*nodes[1]);
  unreg_queue<node> q;
  q.push(*nodes[0]);
  std::atomic<int> destroyed{0};
  const batch_stats s = rollback_many(q, recording_policy{.destroyed = &destroyed}, domain);
  EXPECT_EQ(destroyed.load(), 2);
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(s.dependents_added, 1u);
}

TEST_F(batch_test, retire_with_disposes_each_owners_sub_objects_right_after_it_even_when_tied_out_of_order) {
  // Every node ties one sub-object to itself, and every node but the first ties one more to the
  // first node, so the first node's retirees are tied between other owners' (the batch keeps
  // them, each owner's together, in the order they were tied).
  struct policy : recording_policy {
    static constexpr bool publishes_nothing() { return true; }
    node* first = nullptr;
    void tie(batch& b, node& owner, int id, const char* what) noexcept {
      b.retire_with(owner, new sub_object{log, id}, [what](sub_object* s) noexcept {
        s->log->push_back(std::string("sub:") + std::to_string(s->id) + what);
        delete s;
      });
    }
    bool uninit(node& n, batch& b) noexcept {
      if (&n != first) tie(b, *first, n.id, "x");
      tie(b, n, n.id, "a");
      return false;
    }
  } p;
  p.log = &log;
  unreg_queue<node> q;
  const std::vector<node*> nodes = make_registered(4);
  p.first = nodes[0];
  for (node* n : nodes) q.push(*n);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_EQ(s.retired, 7u);
  const std::vector<std::string> tail(log.end() - 11, log.end());
  // Join order (uninit and the drain); node 0's retirees in the order they were tied, each of
  // nodes 1-3 tying one to node 0 between its own.
  const std::vector<std::string> expected{"destroy:0", "sub:0a", "sub:1x",  "sub:2x", "sub:3x", "destroy:1",
                                          "sub:1a",    "destroy:2", "sub:2a", "destroy:3", "sub:3a"};
  EXPECT_EQ(tail, expected);
}

TEST_F(batch_test, retiring_the_same_node_twice_is_reported_and_disposes_it_once) {
  // normal_link used to link the node to itself and dispose it twice (a use-after-free).
  misuse_log seen;
  scoped_misuse_policy report(misuse_policy::report, seen);
  intrusive_sub::disposed = 0;
  struct policy {
    intrusive_sub* sub;
    void unlist(node&) noexcept {}
    void uninit(node&, batch& b) noexcept {
      b.retire(*sub);
      b.retire(*sub);
    }
  } p{new intrusive_sub};
  unreg_queue<node> q;
  queue_registered(q, 1);
  const batch_stats s = rollback_many(q, p, domain);
  EXPECT_EQ(intrusive_sub::disposed, 1);
  EXPECT_EQ(s.retired, 1u);
  EXPECT_EQ(seen.kinds, (std::vector<misuse_kind>{misuse_kind::retired_twice}));
}

}  // namespace
}  // namespace rcubatch::test
