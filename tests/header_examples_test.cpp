// The code examples of the header comments, compiled and run: one TEST per header, asserting what
// the example claims. Each header's example is a verbatim excerpt of its TEST (line by line,
// indentation aside), marked `(compiled in tests/header_examples_test.cpp)`; the ctest
// header_examples.snippets_are_compiled_code (cmake/check-header-snippets.cmake) fails when one
// drifts. Types are local to their TEST, so each example reads as it does in its header.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <urcu/rculfhash.h>

#include "rcubatch.hpp"
#include "rcubatch/counting_flavor.hpp"
#include "rcubatch/index/hlist_index.hpp"
#include "rcubatch/index/lfht_index.hpp"

namespace {

/// A policy for objects published nowhere but in the test: its unlist has nothing to unlink.
template <class T>
struct unlist_only {
  void unlist(T&) noexcept {}
};

// ---- annotate.hpp ---------------------------------------------------------------------------
namespace annotate_example {
struct device {
  cds_lfht_node node;
  int mtu = 0;
};
int match_any(cds_lfht_node*, const void*) { return 1; }
cds_lfht_node* lookup(cds_lfht* table, unsigned long hash) {
  cds_lfht_iter it;
  cds_lfht_lookup(table, hash, match_any, nullptr, &it);
  return cds_lfht_iter_get_node(&it);
}

TEST(header_examples, annotate) {
  rcubatch::thread_registration<> reg;
  cds_lfht* table = cds_lfht_new_flavor(1, 1, 0, 0, &rcubatch::default_flavor::table(), nullptr);
  ASSERT_NE(table, nullptr);
  auto* dev = new device;
  cds_lfht_node_init(&dev->node);
  const unsigned long hash = 42;
  {
    rcubatch::read_guard<> guard;  // rculfhash's updates, like its lookups, run in a read-side section
    dev->mtu = 1500;                             // writer: fill every field readers read
    rcubatch::annotate_publish(&dev->node);     // right before cds_lfht_add / cds_list_add_rcu
    cds_lfht_add(table, hash, &dev->node);

    cds_lfht_node* n = lookup(table, hash);     // reader, inside a read_guard
    rcubatch::annotate_subscribe(n);            // before reading the fields (also in match callbacks)
    ASSERT_EQ(n, &dev->node);
    EXPECT_EQ(caa_container_of(n, device, node)->mtu, 1500);
  }
  {
    rcubatch::read_guard<> writer_guard;
    EXPECT_EQ(cds_lfht_del(table, &dev->node), 0);
  }
  rcubatch::default_domain<>().synchronize();
  delete dev;
  EXPECT_EQ(cds_lfht_destroy(table, nullptr), 0);
}

}  // namespace annotate_example

// ---- retire_node.hpp ------------------------------------------------------------------------
namespace retire_node_example {
int routes_freed = 0;
struct route : rcubatch::retire_node {
  route() { dispose = [](rcubatch::retire_node* n) noexcept { delete static_cast<route*>(n); }; }
  ~route() { ++routes_freed; }
};
struct routed_session : rcubatch::registrable<routed_session> {
  route* fib_route = new route;
  route* cache_route = new route;
  int routes_freed_at_destroy = -1;
};
struct routed_session_policy {
  int* freed_at_destroy;
  void unlist(routed_session&) noexcept {}
  void uninit(routed_session& s, rcubatch::batch& b) noexcept {   // a policy's hook
    b.retire(*s.fib_route);            // after unlinking it: no allocation
    b.retire_with(s, *s.cache_route);  // disposed right after `s` is destroyed
  }
  void destroy(routed_session* s) noexcept {
    *freed_at_destroy = routes_freed;
    delete s;
  }
};

TEST(header_examples, retire_node) {
  using F = rcubatch::counting_flavor<struct retire_node_example>;
  rcubatch::grace_domain<F> domain;
  routes_freed = 0;
  auto* s = new routed_session;
  s->mark_registered();
  int freed_at_destroy = -1;
  const rcubatch::batch_stats st = rcubatch::unregister_one(*s, routed_session_policy{&freed_at_destroy}, domain);
  EXPECT_EQ(st.retired, 2u);
  EXPECT_EQ(freed_at_destroy, 1);  // the untied route went after the last GP, before the destroy
  EXPECT_EQ(routes_freed, 2);      // the tied one right after it
}

}  // namespace retire_node_example

// ---- dismantle.hpp --------------------------------------------------------------------------
namespace dismantle_example {
using dismantle_flavor = rcubatch::counting_flavor<struct dismantle_example>;
struct macvlan : rcubatch::registrable<macvlan> {
  int mac_node = 0;
};
struct mac_hash {
  std::set<int*> nodes;
  void unlink(int& n) { nodes.erase(&n); }
};
struct macvlan_port {
  mac_hash hash_;
  rcubatch::grace_domain<dismantle_flavor>& domain_;
  void remove_mac(macvlan& m);
};
void macvlan_port::remove_mac(macvlan& m) {
  hash_.unlink(m.mac_node);
  rcubatch::synchronize_unless_dismantling(m, domain_);   // free wait during a batch
}
struct macvlan_policy {
  macvlan_port& port;
  void unlist(macvlan&) noexcept {}
  bool uninit(macvlan& m) noexcept {
    port.remove_mac(m);
    return false;  // the elision alone must bring GP #2 (it came after GP #1)
  }
};

TEST(header_examples, dismantle) {
  dismantle_flavor::reset();
  rcubatch::grace_domain<dismantle_flavor> domain;
  macvlan_port port{{}, domain};
  macvlan survivor, doomed_one;
  port.hash_.nodes = {&survivor.mac_node};
  port.remove_mac(survivor);  // outside a batch (an address change): waits
  EXPECT_EQ(dismantle_flavor::synchronizes(), 1u);
  EXPECT_TRUE(port.hash_.nodes.empty());

  auto* doomed = new macvlan;
  doomed->mark_registered();
  port.hash_.nodes = {&doomed->mac_node};
  dismantle_flavor::reset();
  const rcubatch::batch_stats st = rcubatch::unregister_one(*doomed, macvlan_policy{port}, domain);
  EXPECT_EQ(st.dismantle_elided, 1u);              // no wait of its own inside the batch
  EXPECT_EQ(st.grace_periods, 2u);                 // the batch's two cover it
  EXPECT_EQ(dismantle_flavor::synchronizes(), 2u);
  EXPECT_EQ(domain.stats().dismantle_elided, 1u);
  EXPECT_TRUE(port.hash_.nodes.empty());
}

}  // namespace dismantle_example

// ---- counting_flavor.hpp --------------------------------------------------------------------
namespace counting_flavor_example {
struct widget : rcubatch::registrable<widget> {};
struct widget_policy {
  void unlist(widget&) noexcept {}
  void uninit(widget&) noexcept {}  // void: "I may have unlinked something", so GP #2 runs
};

TEST(header_examples, counting_flavor) {
  rcubatch::unreg_queue<widget> queue;
  auto* w = new widget;
  w->mark_registered();
  queue.push(*w);
  widget_policy policy;
  using F = rcubatch::counting_flavor<struct my_test_tag>;   // counters private to the tag
  rcubatch::grace_domain<F> domain;
  auto stats = rcubatch::rollback_many(queue, policy, domain);
  EXPECT_EQ(F::synchronizes(), 2u);
  EXPECT_EQ(stats.grace_periods, 2u);
}

}  // namespace counting_flavor_example

// ---- grace_domain.hpp -----------------------------------------------------------------------
namespace grace_domain_example {
struct device {};

TEST(header_examples, grace_domain) {
  rcubatch::thread_registration<> reg;
  std::atomic<device*> slot{new device};
  device* obj = slot.load();
  rcubatch::grace_domain<> domain;          // usually one per registry
  slot.store(nullptr);                      // unlink: readers cannot find obj any more
  auto cookie = domain.snapshot();          // "a GP that starts after now"
  domain.synchronize();                     // other work; here another caller's GP
  const bool waited = domain.wait_for(cookie);  // false: that GP ended after the snapshot
  delete obj;
  EXPECT_FALSE(waited);
  EXPECT_EQ(domain.stats().grace_periods, 1u);
  EXPECT_EQ(domain.stats().elided_by_cookie, 1u);
}

}  // namespace grace_domain_example

// ---- read_guard.hpp -------------------------------------------------------------------------
namespace read_guard_example {
struct device {
  int mtu = 0;
};

TEST(header_examples, read_guard) {
  device published;
  published.mtu = 1500;
  std::atomic<device*> slot{&published};
  auto use = [](const device& d) {
    EXPECT_EQ(d.mtu, 1500);
    EXPECT_TRUE(rcubatch::in_read_section<rcubatch::default_flavor>());
  };
  rcubatch::thread_registration<> reg;          // once per reader thread, for its lifetime
  {
    rcubatch::read_guard<> guard;               // read-side section
    device* d = slot.load(std::memory_order_acquire);  // d stays valid until the guard ends
    use(*d);
  }

  rcubatch::thread_registration<rcubatch::flavor::qsbr> qsbr_reg;   // a qsbr reader thread
  rcubatch::quiescent_state<rcubatch::flavor::qsbr>();   // qsbr readers: announce often
  EXPECT_FALSE(rcubatch::in_read_section<rcubatch::default_flavor>());
  EXPECT_EQ(rcubatch::misuse_count(rcubatch::misuse_kind::reader_not_registered), 0u);
}

}  // namespace read_guard_example

// ---- misuse.hpp -----------------------------------------------------------------------------
namespace misuse_example {
TEST(header_examples, misuse) {
  rcubatch::scoped_misuse_policy restore(rcubatch::current_misuse_policy());  // saves policy and reporter
  std::vector<std::string> log;
  rcubatch::set_misuse_policy(rcubatch::misuse_policy::report);
  auto reporter = [&log](rcubatch::misuse_kind, std::string_view m) noexcept {
    log.emplace_back(m);                      // a callable with state: kept by reference
  };
  rcubatch::set_misuse_reporter(reporter);
  counting_flavor_example::widget never_registered;
  rcubatch::unreg_queue<counting_flavor_example::widget> q;
  EXPECT_FALSE(q.push(never_registered));  // report: refused, reported, nothing changed
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("uninitialized"), std::string::npos) << log[0];
  EXPECT_TRUE(q.empty());
}

}  // namespace misuse_example

// ---- registrable.hpp ------------------------------------------------------------------------
namespace registrable_example {
TEST(header_examples, registrable) {
  std::set<const void*> published;
  auto publish = [&](const void* object) { published.insert(object); };
  struct session : rcubatch::registrable<session> { std::string name; };

  auto* s = new session;
  publish(s);                 // insert into the registry's RCU-visible indexes
  s->mark_registered();       // uninitialized → registered
  EXPECT_EQ(s->state(), rcubatch::reg_state::registered);
  EXPECT_EQ(published.count(s), 1u);
  rcubatch::grace_domain<rcubatch::counting_flavor<struct registrable_example>> domain;
  rcubatch::unreg_queue<session> q;
  q.push(*s);
  rcubatch::rollback_many(q, unlist_only<session>{}, domain);  // the default destroy deletes s
  EXPECT_TRUE(q.empty());
}
}  // namespace registrable_example

// ---- ref_count.hpp --------------------------------------------------------------------------
namespace ref_count_example {
struct packet_target : rcubatch::registrable<packet_target> {};
int uses = 0;
void use(packet_target&) { ++uses; }

TEST(header_examples, ref_count) {
  packet_target obj;
  obj.refs().hold();      // a holder (an in-flight packet, a cache) keeps obj alive
  use(obj);
  obj.refs().put();       // the last put after unregistration wakes the batch's ref drain
  // What this asserts is the hold/put pair outside a batch; the wake-up of a draining batch by the
  // last put is ref_drain_test's destroys_each_object_as_its_last_reference_drops_in_any_order.
  EXPECT_EQ(uses, 1);
  EXPECT_EQ(obj.refs().count(), 0u);
}
}  // namespace ref_count_example

// ---- ref_tracker.hpp ------------------------------------------------------------------------
namespace ref_tracker_example {
std::vector<std::string> logged;
void log(std::string_view tag, const char* file, unsigned line) {
  logged.push_back(std::string(tag) + "@" + file + ":" + std::to_string(line));
}

TEST(header_examples, ref_tracker) {
  struct device : rcubatch::tracked_registrable<device> { std::string name; };
  device dev;
  rcubatch::ref_token t = dev.refs().hold("rx_queue");   // records the tag and this line
  for (const rcubatch::ref_holder& h : rcubatch::holders(dev))
    log(h.tag, h.where.file_name(), h.where.line());      // "rx_queue", "rx.cpp", 42
  dev.refs().put(t);
  const unsigned hold_line = __LINE__ - 4;
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0], "rx_queue@" + std::string(__FILE__) + ":" + std::to_string(hold_line));
  EXPECT_TRUE(rcubatch::holders(dev).empty());
}
}  // namespace ref_tracker_example

// ---- sharded_refs.hpp -----------------------------------------------------------------------
TEST(header_examples, sharded_refs) {
  int uses = 0;
  auto use = [&](auto&) { ++uses; };
  struct route : rcubatch::sharded_registrable<route> {};   // chosen per type
  route r;
  r.refs().hold();          // touches this CPU's shard: no cache line shared with other CPUs
  use(r);
  r.refs().put();           // may land on another shard than its hold: only the sum matters
  EXPECT_EQ(uses, 1);
  EXPECT_EQ(r.refs().count(), 0u);
}

// ---- rollback_many.hpp ----------------------------------------------------------------------
namespace rollback_many_example {
struct stream : rcubatch::registrable<stream> {};
struct session : rcubatch::registrable<session> {
  std::vector<stream*> streams;
};
struct session_registry {
  std::mutex writer_mutex;
  std::set<session*> sessions;
  std::set<stream*> streams;
};
struct session_policy {
  session_registry& reg;
  void unlist(session& s) noexcept { reg.sessions.erase(&s); }
  void notify(session& s, rcubatch::batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);
  }
};
struct stream_policy {
  session_registry& reg;
  void unlist(stream& st) noexcept { reg.streams.erase(&st); }
};
session* add_session(session_registry& r, int streams) {
  auto* s = new session;
  for (int i = 0; i < streams; ++i) {
    s->streams.push_back(new stream);
    r.streams.insert(s->streams.back());
    s->streams.back()->mark_registered();
  }
  r.sessions.insert(s);
  s->mark_registered();
  return s;
}

TEST(header_examples, rollback_many) {
  using F = rcubatch::counting_flavor<struct rollback_many_example>;
  rcubatch::grace_domain<F> domain;
  session_registry registry;
  std::vector<session*> doomed;
  for (int i = 0; i < 50; ++i) doomed.push_back(add_session(registry, 0));
  std::scoped_lock lock(registry.writer_mutex);       // the caller's lock, held throughout
  rcubatch::unreg_queue<session> q;
  for (session* s : doomed) q.push(*s);
  rcubatch::batch_stats st = rcubatch::rollback_many(q, session_policy{registry}, domain);
  // st.grace_periods <= 2, whatever q.size() and however deep the cascade
  EXPECT_LE(st.grace_periods, 2u);
  EXPECT_EQ(st.objects, 50u);
  EXPECT_TRUE(registry.sessions.empty());
}

TEST(header_examples, rollback_many_several_types) {
  using F = rcubatch::counting_flavor<struct rollback_many_several_example>;
  rcubatch::grace_domain<F> domain;
  session_registry reg;
  rcubatch::unreg_queue<session> sessions;
  rcubatch::unreg_queue<stream> streams;
  for (int i = 0; i < 10; ++i) sessions.push(*add_session(reg, 3));
  // Several object types in one batch, each with its own queue and policy; hooks of one lane
  // may queue dependents of any lane (sessions queue their streams from notify):
  rcubatch::rollback_many(domain, rcubatch::lane(sessions, session_policy{reg}),
                                  rcubatch::lane(streams, stream_policy{reg}));
  EXPECT_TRUE(reg.sessions.empty());
  EXPECT_TRUE(reg.streams.empty());  // the 30 streams were cascaded into the same batch
  EXPECT_LE(F::synchronizes(), 2u);
}
}  // namespace rollback_many_example

// ---- unreg_queue.hpp ------------------------------------------------------------------------
namespace unreg_queue_example {
int sessions_destroyed = 0;
struct session : rcubatch::registrable<session> {
  ~session() { ++sessions_destroyed; }
};
TEST(header_examples, unreg_queue) {
  using F = rcubatch::counting_flavor<struct unreg_queue_example>;
  rcubatch::grace_domain<F> domain;
  unlist_only<session> policy;
  std::vector<session*> doomed;
  for (int i = 0; i < 100; ++i) {
    doomed.push_back(new session);
    doomed.back()->mark_registered();
  }
  sessions_destroyed = 0;
  rcubatch::unreg_queue<session> q;
  for (session* s : doomed) q.push(*s);         // O(1), no allocation
  rcubatch::rollback_many(q, policy, domain);   // one batch, ≤ 2 GPs
  EXPECT_EQ(sessions_destroyed, 100);
  EXPECT_LE(F::synchronizes(), 2u);
  EXPECT_TRUE(q.empty());
}

}  // namespace unreg_queue_example

// ---- batch.hpp ------------------------------------------------------------------------------
namespace batch_example {
struct stream : rcubatch::registrable<stream> {};
struct fib_route {};
struct fib_table {
  std::set<fib_route*> routes;
  void unlink(fib_route* r) { routes.erase(r); }
};
struct streaming_session : rcubatch::registrable<streaming_session> {
  std::vector<stream*> streams;
  std::vector<fib_route*> routes;
};
struct streaming_session_policy {
  fib_table& fib;
  void unlist(streaming_session&) noexcept {}
  void notify(streaming_session& s, rcubatch::batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);             // dependents of any type in the batch
  }
  void uninit(streaming_session& s, rcubatch::batch& b) noexcept {
    for (fib_route* r : s.routes) { fib.unlink(r); b.retire(r); }   // freed after GP #2
  }
};
TEST(header_examples, batch) {
  using F = rcubatch::counting_flavor<struct batch_example>;
  rcubatch::grace_domain<F> domain;
  fib_table fib;
  auto* s = new streaming_session;
  s->mark_registered();
  for (int i = 0; i < 3; ++i) {
    s->streams.push_back(new stream);
    s->streams.back()->mark_registered();
    s->routes.push_back(new fib_route);
    fib.routes.insert(s->routes.back());
  }
  rcubatch::unreg_queue<streaming_session> sessions;
  rcubatch::unreg_queue<stream> streams;
  sessions.push(*s);
  const rcubatch::batch_stats st =
      rcubatch::rollback_many(domain, rcubatch::lane(sessions, streaming_session_policy{fib}),
                              rcubatch::lane(streams, unlist_only<stream>{}));
  EXPECT_EQ(st.objects, 4u);
  EXPECT_EQ(st.dependents_added, 3u);
  EXPECT_EQ(st.retired, 3u);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_TRUE(fib.routes.empty());
}

}  // namespace batch_example

// ---- registry.hpp ---------------------------------------------------------------------------
namespace owned_example {
struct session;
struct stream : rcubatch::registrable<stream> {
  std::uint64_t id;
  rcubatch::lfht_hook<stream> by_id;
  rcubatch::owner_hook<session> owner;                    // names its session
};
struct session : rcubatch::registrable<session> {
  std::uint64_t id;
  rcubatch::lfht_hook<session> by_id;
  rcubatch::owned_list<stream, &stream::owner> streams;   // kept by the library
};
using session_ids = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
using stream_ids = rcubatch::lfht_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;
struct session_policy : rcubatch::indexed<session, session_ids>, rcubatch::owning<&session::streams> {};

TEST(header_examples, owned) {
  rcubatch::thread_registration<> reg;
  auto* s = new session;
  s->id = 1;
  auto* st = new stream;
  st->id = 10;
  auto* st2 = new stream;
  st2->id = 11;
  st2->owner.set_parent(*s);

  rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_ids>> table;
  table.add(*s);                      // the parent first
  st->owner.set_parent(*s);           // (or owner_hook's constructor)
  table.add(*st);                     // linked into s->streams under the writer lock
  table.add(*st2);                    // st2 names s too
  table.unregister(*st);              // alone: it leaves s->streams
  table.unregister(*s);               // s and st2 (destroyed first), ≤ 2 grace periods

  EXPECT_TRUE(table.index<session_ids>().empty());
  EXPECT_TRUE(table.index<stream_ids>().empty());
}
}  // namespace owned_example

namespace registry_example {
struct stream : rcubatch::registrable<stream> {
  explicit stream(std::uint64_t i) : id(i) {}
  std::uint64_t id;
  rcubatch::lfht_hook<stream> by_id;
};
struct session : rcubatch::registrable<session> {
  session(std::uint64_t i, std::string n) : id(i), name(std::move(n)) {}
  std::uint64_t id;
  std::string name;
  rcubatch::lfht_hook<session> by_id, by_name;
  std::vector<stream*> streams;
};

TEST(header_examples, registry) {
  rcubatch::thread_registration<> reg;
  int found_alice = 0;
  auto use = [&](const session& s) { found_alice += s.name == "alice"; };
  auto* s = new session(1, "alice");
  std::vector<session*> doomed{new session(2, "bob"), new session(3, "carol")};
  auto* last = new session(4, "dave");

  using by_id = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
  using by_name = rcubatch::lfht_index<session, &session::by_name, rcubatch::key_member<&session::name>>;
  rcubatch::registry<rcubatch::indexed<session, by_id, by_name>> sessions;

  if (!sessions.add(*s)) delete s;                    // false: its id or name is taken
  for (session* d : doomed) sessions.add(*d);
  sessions.add(*last);
  {
    rcubatch::read_guard<> guard;                     // readers
    if (session* found = sessions.find<by_name>(guard, "alice")) use(*found);
  }
  sessions.unregister(*s);                            // 1 or 2 grace periods, then delete
  sessions.unregister_many(doomed);                   // ≤ 2 grace periods, whatever the size
  sessions.unregister_with([&](auto& q) { q.push(*last); });  // fill the queues yourself

  EXPECT_EQ(found_alice, 1);
  auto* twin = new session(5, "bob");  // bob's name is free again; a second "bob" is not
  auto* second = new session(6, "bob");
  EXPECT_TRUE(sessions.add(*twin));
  EXPECT_FALSE(sessions.add(*second));
  delete second;
  EXPECT_EQ(sessions.unregister(*twin).objects, 1u);
  rcubatch::read_guard<> guard;
  EXPECT_EQ(sessions.find<by_name>(guard, "alice"), nullptr);
  EXPECT_EQ(sessions.find<by_id>(guard, std::uint64_t{4}), nullptr);
}

TEST(header_examples, registry_several_types) {
  rcubatch::thread_registration<> reg;
  using by_id = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
  using by_name = rcubatch::lfht_index<session, &session::by_name, rcubatch::key_member<&session::name>>;
  using stream_by_id = rcubatch::lfht_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;

  struct session_policy : rcubatch::indexed<session, by_id, by_name> {
    void notify(session& s, rcubatch::batch& b) noexcept { for (stream* st : s.streams) b.queue(*st); }
  };
  rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_by_id>> table;

  auto* s = new session(1, "alice");
  ASSERT_TRUE(table.add(*s));
  for (std::uint64_t i = 10; i < 13; ++i) {
    s->streams.push_back(new stream(i));
    ASSERT_TRUE(table.add(*s->streams.back()));
  }
  const rcubatch::batch_stats st = table.unregister(*s);
  EXPECT_EQ(st.objects, 4u);  // the session and its three streams, in one batch
  EXPECT_LE(st.grace_periods, 2u);
  rcubatch::read_guard<> guard;
  EXPECT_EQ(table.find<stream_by_id>(guard, std::uint64_t{11}), nullptr);
}

TEST(header_examples, registry_reload_by_key) {
  rcubatch::thread_registration<> reg;
  using by_id = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
  rcubatch::registry<rcubatch::indexed<session, by_id>> sessions;
  ASSERT_TRUE(sessions.add(*new session(1, "alice")));
  ASSERT_TRUE(sessions.add(*new session(2, "tmp-a")));
  ASSERT_TRUE(sessions.add(*new session(3, "tmp-b")));

  auto* fresh = new session(1, "alice");
  if (!sessions.try_replace<by_id>(std::uint64_t{1}, *fresh)) delete fresh;  // not_found, or a delete won
  sessions.unregister_if<by_id>([](const session& x) { return x.name.starts_with("tmp-"); });  // one batch

  EXPECT_EQ(sessions.size<session>(), 1u);
  {
    rcubatch::read_guard<> guard;
    EXPECT_EQ(sessions.find<by_id>(guard, std::uint64_t{1}), fresh);
  }
  EXPECT_EQ(sessions.unregister(*fresh).objects, 1u);
}

}  // namespace registry_example

// ---- async_unregister.hpp -------------------------------------------------------------------
namespace async_unregister_example {
using registry_example::session;  // an id, a name and their hooks

TEST(header_examples, async_unregister) {
  rcubatch::thread_registration<> reg;
  using sessions_policy =
      rcubatch::indexed<session, rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>>;
  auto* s = new session(1, "alice");
  auto* s2 = new session(2, "bob");
  auto* s3 = new session(3, "carol");

  rcubatch::registry<sessions_policy> sessions;
  rcubatch::async_unregister reclaimer(sessions);     // a background reclaimer thread
  sessions.add(*s);                                   // registered as usual
  sessions.add(*s2);
  auto ticket = reclaimer.submit(*s);                 // unlisted now; never waits for a GP
  reclaimer.poll(ticket);                             // destroyed yet? (never blocks)
  reclaimer.wait(ticket);                             // until *s is destroyed
  reclaimer.unregister(*s2);                          // submit + wait: callers combine
  reclaimer.drain();                                  // everything submitted so far is gone

  EXPECT_TRUE(reclaimer.poll(ticket));
  ASSERT_TRUE(sessions.add(*s3));
  const rcubatch::unregister_ticket third = reclaimer.submit(*s3);
  reclaimer.drain();
  EXPECT_TRUE(reclaimer.poll(third));
  EXPECT_EQ(reclaimer.stats().completed, 3u);
  EXPECT_EQ(reclaimer.stats().objects, 3u);
}

}  // namespace async_unregister_example

// ---- index/lfht_index.hpp -------------------------------------------------------------------
namespace lfht_index_example {
TEST(header_examples, lfht_index) {
  rcubatch::thread_registration<> reg;
  int hits = 0;
  auto use = [&](const auto& x) { hits += x.name == "alice"; };
  struct session : rcubatch::registrable<session> {
    std::string name;                                   // the key: fixed before add
    rcubatch::lfht_hook<session> by_name_hook;          // one hook per index the object is in
  };
  using by_name = rcubatch::lfht_index<session, &session::by_name_hook,
                                       rcubatch::key_member<&session::name>>;
  by_name index;                                        // default flavor, grows as it fills

  auto* s = new session;
  s->name = "alice";
  index.add_unique(*s);                  // writer: false if the name is taken
  {
    rcubatch::read_guard<> guard;        // reader
    if (session* found = index.find("alice")) use(*found);  // valid until the guard ends
  }
  index.unlink(*s);                      // writer; free s only after a grace period

  EXPECT_EQ(hits, 1);
  EXPECT_EQ(index.size(), 0u);
  rcubatch::default_domain<>().synchronize();
  delete s;
}

}  // namespace lfht_index_example

namespace hlist_index_example {
TEST(header_examples, hlist_index) {
  rcubatch::thread_registration<> reg;
  int hits = 0;
  auto use = [&](const auto& x) { hits += x.name == "eth0"; };
  struct device : rcubatch::registrable<device> {
    std::string name;                                     // the key: fixed before add
    rcubatch::hlist_hook<device> by_name_hook;            // one hook per index the object is in
  };
  using by_name = rcubatch::hlist_index<device, &device::by_name_hook,
                                        rcubatch::key_member<&device::name>>;
  by_name index;                                          // default flavor, grows and shrinks

  auto* d = new device;
  d->name = "eth0";
  index.add_unique(*d);                   // writer, under the caller's writer lock
  {
    rcubatch::read_guard<> guard;         // reader
    if (device* found = index.find("eth0")) use(*found);  // valid until the guard ends
  }
  index.unlink(*d);                       // writer; free d only after a grace period

  EXPECT_EQ(hits, 1);
  EXPECT_EQ(index.size(), 0u);
  rcubatch::default_domain<>().synchronize();
  delete d;
}
}  // namespace hlist_index_example

}  // namespace
