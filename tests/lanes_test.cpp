// rollback_many over several object types: sessions that own 1–4 streams (their own registrable
// type, their own index) and a cached route each. Streams join from the session's notify, routes
// are retired in uninit. Exact GP counts with the counting flavor; real readers on memb and qsbr
// checking a poison word; the lifetimes under references (ref_drain.hpp's order guarantees).
#include <rcubatch/rollback_many.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/counting.hpp"
#include "support/flavors.hpp"
#include "support/objects.hpp"  // kAlive, kPoison

namespace rcubatch::test {
namespace {

struct session;

struct route : retire_node {
  explicit route(std::atomic<int>* counter) : disposed(counter) {
    dispose = [](retire_node* n) noexcept {
      auto* r = static_cast<route*>(n);
      r->poison.store(kPoison);
      r->disposed->fetch_add(1);
    };
  }
  std::atomic<std::uint64_t> poison{kAlive};
  std::atomic<int>* disposed;
};

struct stream : registrable<stream> {
  stream(session* o, int s) : owner(o), slot(s) {}
  session* owner;
  int slot;
  std::atomic<std::uint64_t> poison{kAlive};
  std::atomic<int> destroyed_times{0};
};

struct session : registrable<session> {
  explicit session(int i) : id(i) {}
  int id;
  std::atomic<std::uint64_t> poison{kAlive};
  std::atomic<int> destroyed_times{0};
  std::array<std::atomic<stream*>, 4> streams{};  // the stream index readers go through
  std::array<stream*, 4> owned{};                  // what the session owns (the writer's view)
  std::atomic<route*> cached_route{nullptr};
};

/// The registry: a table of session slots readers look up, the objects (kept to the end of the
/// test so a reader that reaches a destroyed one reads poison, not freed memory), and a log.
struct registry {
  explicit registry(int n) : slots(static_cast<std::size_t>(n)) {}
  std::vector<std::atomic<session*>> slots;
  std::vector<std::unique_ptr<session>> sessions;
  std::vector<std::unique_ptr<stream>> streams;
  std::vector<std::unique_ptr<route>> routes;
  std::atomic<int> sessions_destroyed{0}, streams_destroyed{0}, routes_disposed{0};

  std::mutex log_mutex;
  std::vector<std::string> log;  // destroy and dispose order, where a test asks for it
  bool logging = false;
  void record(std::string s) {
    if (!logging) return;
    std::lock_guard l(log_mutex);
    log.push_back(std::move(s));
  }

  /// Publishes n sessions with 1–4 streams and a route each.
  void populate(std::mt19937& rng) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      auto s = std::make_unique<session>(static_cast<int>(i));
      const int k = 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < k; ++j) {
        auto st = std::make_unique<stream>(s.get(), j);
        st->mark_registered();
        s->streams[static_cast<std::size_t>(j)].store(st.get(), std::memory_order_release);
        s->owned[static_cast<std::size_t>(j)] = st.get();
        streams.push_back(std::move(st));
      }
      auto r = std::make_unique<route>(&routes_disposed);
      s->cached_route.store(r.get(), std::memory_order_release);
      routes.push_back(std::move(r));
      s->mark_registered();
      slots[i].store(s.get(), std::memory_order_release);
      sessions.push_back(std::move(s));
    }
  }
};

struct session_policy {
  registry* reg;
  bool tie_routes = false;
  void unlist(session& s) noexcept { reg->slots[static_cast<std::size_t>(s.id)].store(nullptr, std::memory_order_release); }
  void notify(session& s, batch& b) noexcept {
    for (stream* st : s.owned)
      if (st != nullptr) b.queue(*st);
  }
  void uninit(session& s, batch& b) noexcept {
    if (route* r = s.cached_route.exchange(nullptr, std::memory_order_acq_rel)) {
      if (tie_routes) {
        b.retire_with(s, *r);
      } else {
        b.retire(*r);
      }
    }
  }
  void destroy(session* s) noexcept {
    s->poison.store(kPoison);
    s->destroyed_times.fetch_add(1);
    reg->sessions_destroyed.fetch_add(1);
    reg->record("session:" + std::to_string(s->id));
  }
};

struct stream_policy {
  registry* reg;
  void unlist(stream& st) noexcept {
    st.owner->streams[static_cast<std::size_t>(st.slot)].store(nullptr, std::memory_order_release);
  }
  void destroy(stream* st) noexcept {
    st->poison.store(kPoison);
    st->destroyed_times.fetch_add(1);
    reg->streams_destroyed.fetch_add(1);
    reg->record("stream:" + std::to_string(st->owner->id) + "." + std::to_string(st->slot));
  }
};

void expect_each_destroyed_once(registry& reg) {
  for (auto& s : reg.sessions) EXPECT_EQ(s->destroyed_times.load(), 1) << "session " << s->id;
  for (auto& st : reg.streams) EXPECT_EQ(st->destroyed_times.load(), 1) << "stream of " << st->owner->id;
  EXPECT_EQ(reg.routes_disposed.load(), static_cast<int>(reg.routes.size()));
}

struct lanes_tag;
using fake = counting_flavor<lanes_tag>;
struct rollback_many_lanes : counting_test<lanes_tag> {};

TEST_F(rollback_many_lanes, a_two_type_cascade_of_ten_thousand_sessions_costs_exactly_two_grace_periods) {
  constexpr int kSessions = 10'000;
  registry reg(kSessions);
  std::mt19937 rng(1);
  reg.populate(rng);
  unreg_queue<session> sessions;
  unreg_queue<stream> streams;  // empty: streams join from the sessions' notify
  for (auto& s : reg.sessions) sessions.push(*s);

  const batch_stats st = rollback_many(domain, lane(sessions, session_policy{&reg}), lane(streams, stream_policy{&reg}));

  EXPECT_EQ(fake::synchronizes(), 2u);
  EXPECT_EQ(st.grace_periods, 2u);
  EXPECT_EQ(st.objects, reg.sessions.size() + reg.streams.size());
  EXPECT_EQ(st.dependents_added, reg.streams.size());
  EXPECT_EQ(st.retired, reg.routes.size());
  EXPECT_EQ(st.rounds, 2u) << "sessions, then their streams";
  expect_each_destroyed_once(reg);
}

TEST_F(rollback_many_lanes, a_dependent_of_a_type_with_no_lane_is_fatal_under_every_policy) {
  // Past grace period #1 nothing can be refused: leaving the stream out would destroy its session
  // while the stream stays findable and points at it (issue 22). So it aborts, naming the cause,
  // even under misuse_policy::report.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto without_stream_lane = [this] {
    registry reg(1);
    std::mt19937 rng(2);
    reg.populate(rng);
    unreg_queue<session> sessions;
    sessions.push(*reg.sessions[0]);
    set_misuse_policy(misuse_policy::report);  // in the death test's child only; the default reporter
    rollback_many(sessions, session_policy{&reg}, domain);  // no stream lane
  };
  EXPECT_DEATH(without_stream_lane(), "its parent would be destroyed while it can still be found");
}

// --- lifetimes under references ---------------------------------------------------------------

/// Lets a holder thread act once the drain's first pass has destroyed every free object.
struct drain_watch {
  std::mutex m;
  std::condition_variable cv;
  int destroyed = 0;
  void bump() {
    std::lock_guard l(m);
    ++destroyed;
    cv.notify_all();
  }
  void wait_for(int n) {
    std::unique_lock l(m);
    cv.wait(l, [&] { return destroyed >= n; });
  }
};

struct watched_session_policy : session_policy {
  drain_watch* watch;
  void destroy(session* s) noexcept {
    session_policy::destroy(s);
    watch->bump();
  }
};
struct watched_stream_policy : stream_policy {
  drain_watch* watch;
  void destroy(stream* st) noexcept {
    stream_policy::destroy(st);
    watch->bump();
  }
};

/// Two sessions with two streams each; `hold` is held while the batch runs, and put by a holder
/// thread once every other object that may go has gone (`before_put` runs first, on that thread).
/// Returns the destroy/dispose log.
std::vector<std::string> run_with_one_held(registry& reg, ref_count& hold, int free_objects, bool tie_routes,
                                           const std::function<void()>& before_put = [] {}) {
  fake::reset();
  grace_domain<fake> domain;
  drain_watch watch;
  reg.logging = true;
  hold.hold();
  std::thread holder([&] {
    watch.wait_for(free_objects);
    before_put();
    reg.record("put");
    hold.put();
  });
  unreg_queue<session> sessions;
  unreg_queue<stream> streams;
  for (auto& s : reg.sessions) sessions.push(*s);
  watched_session_policy sp;
  sp.reg = &reg;
  sp.tie_routes = tie_routes;
  sp.watch = &watch;
  watched_stream_policy tp;
  tp.reg = &reg;
  tp.watch = &watch;
  rollback_many(domain, lane(sessions, sp), lane(streams, tp));
  holder.join();
  return reg.log;
}

/// Fills a registry of two slots with two sessions of two streams each.
void two_sessions_two_streams(registry& reg) {
  for (int i = 0; i < 2; ++i) {
    auto s = std::make_unique<session>(i);
    for (int j = 0; j < 2; ++j) {
      auto st = std::make_unique<stream>(s.get(), j);
      st->mark_registered();
      s->streams[static_cast<std::size_t>(j)].store(st.get());
      s->owned[static_cast<std::size_t>(j)] = st.get();
      reg.streams.push_back(std::move(st));
    }
    s->mark_registered();
    reg.slots[static_cast<std::size_t>(i)].store(s.get());
    reg.sessions.push_back(std::move(s));
  }
}

/// two_sessions_two_streams, plus a cached route per session (reg.routes[i] is session i's).
void two_sessions_two_streams_and_routes(registry& reg) {
  two_sessions_two_streams(reg);
  for (auto& s : reg.sessions) {
    reg.routes.push_back(std::make_unique<route>(&reg.routes_disposed));
    s->cached_route.store(reg.routes.back().get());
  }
}

std::ptrdiff_t position(const std::vector<std::string>& log, const std::string& what) {
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i] == what) return static_cast<std::ptrdiff_t>(i);
  ADD_FAILURE() << what << " never happened";
  return -1;
}

TEST_F(rollback_many_lanes, with_no_holder_every_stream_is_destroyed_before_its_session_in_one_pass) {
  // ref_drain.hpp guarantee 3: the last lane first, each in join order; nothing waits.
  registry reg(2);
  two_sessions_two_streams(reg);
  reg.logging = true;
  unreg_queue<session> sessions;
  unreg_queue<stream> streams;
  for (auto& s : reg.sessions) sessions.push(*s);
  const batch_stats st = rollback_many(domain, lane(sessions, session_policy{&reg}), lane(streams, stream_policy{&reg}));
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k)
      EXPECT_LT(position(reg.log, "stream:" + std::to_string(s) + "." + std::to_string(k)),
                position(reg.log, "session:" + std::to_string(s)));
  EXPECT_EQ(st.longest_drain_wait.count(), 0) << "no object had to be waited for";
  expect_each_destroyed_once(reg);
}

TEST_F(rollback_many_lanes, a_held_stream_delays_its_own_session_only) {
  registry reg(2);
  two_sessions_two_streams(reg);
  stream& held = *reg.streams[0];  // session 0's stream 0
  // Free at once: session 1, its two streams, session 0's other stream = 4 objects.
  const auto log = run_with_one_held(reg, held.refs(), 4, false);
  EXPECT_LT(position(log, "session:1"), position(log, "put")) << "an unrelated session does not wait";
  EXPECT_LT(position(log, "stream:0.1"), position(log, "put"));
  EXPECT_LT(position(log, "put"), position(log, "stream:0.0"));
  EXPECT_LT(position(log, "stream:0.0"), position(log, "session:0"))
      << "the session is destroyed only after its held stream";
  expect_each_destroyed_once(reg);
}

TEST_F(rollback_many_lanes, a_held_session_delays_neither_other_sessions_nor_untied_retirees) {
  registry reg(2);
  two_sessions_two_streams_and_routes(reg);
  session& held = *reg.sessions[0];
  // Free at once: session 1 and all four streams.
  std::atomic<int>* disposed = &reg.routes_disposed;
  const auto log = run_with_one_held(reg, held.refs(), 5, false);
  EXPECT_LT(position(log, "session:1"), position(log, "put"));
  for (const char* s : {"stream:0.0", "stream:0.1", "stream:1.0", "stream:1.1"})
    EXPECT_LT(position(log, s), position(log, "put")) << s;
  EXPECT_LT(position(log, "put"), position(log, "session:0"));
  EXPECT_EQ(disposed->load(), 2) << "both routes were disposed";
  expect_each_destroyed_once(reg);
}

TEST_F(rollback_many_lanes, untied_retirees_are_disposed_before_a_held_owner_lets_go_and_tied_ones_after) {
  for (bool tie : {false, true}) {
    registry reg(2);
    two_sessions_two_streams_and_routes(reg);
    session& held = *reg.sessions[0];
    route* held_route = reg.routes[0].get();
    // The holder checks the route's state when it lets go: tied → still alive, untied → gone.
    std::atomic<bool> route_alive_at_put{false};
    run_with_one_held(reg, held.refs(), 5, tie, [&] { route_alive_at_put = held_route->poison.load() == kAlive; });
    EXPECT_EQ(route_alive_at_put.load(), tie) << (tie ? "a tied route waits for its held owner"
                                                       : "an untied route does not wait for any holder");
    EXPECT_EQ(held_route->poison.load(), kPoison);
    expect_each_destroyed_once(reg);
  }
}

// --- writers that release the lock during waits --------------------------------------------------

TEST_F(rollback_many_lanes, a_cascade_reaching_an_object_in_another_writers_batch_is_not_misuse_and_waits_for_it) {
  // Writer B unregisters stream 0.0 and releases the lock during its grace period #1; writer A's
  // batch on session 0 then reaches the same stream from notify. That is a legal interleaving:
  // A's session must wait for B's destroy of the stream, and nothing is reported.
  using slow = fake;
  registry reg(2);
  two_sessions_two_streams(reg);
  std::mutex writer_lock;
  // Two domains: B's parked GP holds its domain's GP mutex, which A's own GPs must not wait for.
  grace_domain<slow> domain_b;  // A uses the fixture's `domain`
  std::latch b_in_gp1(1), a_done_notify(1);
  // B's first GP parks until A has run its cascade; later GPs (A's own, B's #2) pass through.
  std::atomic<int> gps{0};
  slow::on_synchronize = [&] {
    if (gps.fetch_add(1) == 0) {
      b_in_gp1.count_down();
      a_done_notify.wait();
    }
  };
  const unsigned long misuse_before =
      misuse_count(misuse_kind::already_unregistering) + misuse_count(misuse_kind::queued_too_late);
  reg.logging = true;

  std::thread writer_b([&] {
    std::unique_lock lock(writer_lock);
    unreg_queue<stream> q;
    q.push(*reg.streams[0]);
    rollback_many(q, stream_policy{&reg}, domain_b, unlock_during_waits(lock));
  });
  b_in_gp1.wait();
  {
    struct signalling_policy : session_policy {
      std::latch* done;
      void notify(session& s, batch& b) noexcept {
        session_policy::notify(s, b);  // reaches stream 0.0, which is in B's batch
        done->count_down();
      }
    } sp;
    sp.reg = &reg;
    sp.done = &a_done_notify;
    std::unique_lock lock(writer_lock);
    unreg_queue<session> sessions;
    unreg_queue<stream> streams;
    sessions.push(*reg.sessions[0]);
    rollback_many(domain, unlock_during_waits(lock), lane(sessions, sp), lane(streams, stream_policy{&reg}));
  }
  writer_b.join();
  EXPECT_EQ(misuse_count(misuse_kind::already_unregistering) + misuse_count(misuse_kind::queued_too_late),
            misuse_before)
      << "a legal race is not misuse";
  EXPECT_LT(position(reg.log, "stream:0.0"), position(reg.log, "session:0"));
  EXPECT_EQ(reg.streams[0]->destroyed_times.load(), 1);
  EXPECT_EQ(reg.streams[1]->destroyed_times.load(), 1);
  EXPECT_EQ(reg.sessions[0]->destroyed_times.load(), 1);
  // Session 1 and its streams were never unregistered: release them for the registry's teardown.
  unreg_queue<session> rest;
  unreg_queue<stream> rest_streams;
  rest.push(*reg.sessions[1]);
  rollback_many(domain, lane(rest, session_policy{&reg}), lane(rest_streams, stream_policy{&reg}));
}

// --- real liburcu: readers race the two-type cascade ---------------------------------------------

template <class F>
class rollback_many_lanes_real : public ::testing::Test {};
TYPED_TEST_SUITE(rollback_many_lanes_real, two_reader_disciplines<>);

TYPED_TEST(rollback_many_lanes_real, readers_never_see_a_destroyed_session_stream_or_route) {
  using F = TypeParam;
  constexpr int kSessions = 2'000;
  constexpr int kRounds = 5;
  std::atomic<long> lookups{0}, found{0}, violations{0};
  std::atomic<bool> stop{false};
  std::atomic<registry*> current{nullptr};
  std::latch reader_ready(1);

  std::thread reader([&] {
    thread_registration<F> reg;
    std::mt19937 rng(7);
    reader_ready.count_down();
    while (!stop.load(std::memory_order_acquire)) {
      {
        read_guard<F> guard;
        registry* r = current.load(std::memory_order_acquire);
        if (r != nullptr) {
          for (int i = 0; i < 16; ++i) {
            session* s = r->slots[rng() % r->slots.size()].load(std::memory_order_acquire);
            ++lookups;
            if (s == nullptr) continue;
            ++found;
            if (s->poison.load(std::memory_order_relaxed) != kAlive) ++violations;
            for (auto& slot : s->streams)
              if (stream* st = slot.load(std::memory_order_acquire))
                if (st->poison.load(std::memory_order_relaxed) != kAlive) ++violations;
            if (route* rt = s->cached_route.load(std::memory_order_acquire))
              if (rt->poison.load(std::memory_order_relaxed) != kAlive) ++violations;
          }
        }
      }
      quiescent_state<F>();
    }
  });
  reader_ready.wait();

  thread_registration<F> writer;
  grace_domain<F> domain;
  std::vector<std::unique_ptr<registry>> done;  // kept until the reader stops: it may hold a pointer
  for (int round = 0; round < kRounds; ++round) {
    auto reg = std::make_unique<registry>(kSessions);
    std::mt19937 rng(static_cast<unsigned>(round));
    reg->populate(rng);
    current.store(reg.get(), std::memory_order_release);
    // Let the reader find objects before they go (a state, not a time: it has looked some up).
    const long seen = found.load();
    while (found.load() < seen + 1000) std::this_thread::yield();
    unreg_queue<session> sessions;
    unreg_queue<stream> streams;
    for (auto& s : reg->sessions) sessions.push(*s);
    const batch_stats st = [&] {
      offline_scope<F> offline;  // qsbr: the writer is not a reader while it waits
      return rollback_many(domain, lane(sessions, session_policy{reg.get()}), lane(streams, stream_policy{reg.get()}));
    }();
    EXPECT_EQ(st.grace_periods + st.gps_elided, 2u);
    EXPECT_EQ(st.grace_periods, 2u);
    expect_each_destroyed_once(*reg);
    done.push_back(std::move(reg));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(found.load(), 0) << "the reader must have reached live sessions for the check to mean anything";
}

}  // namespace
}  // namespace rcubatch::test
