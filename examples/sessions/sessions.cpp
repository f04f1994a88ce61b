// examples/sessions — the template to copy: a session table whose sessions own streams, closed in
// batches with two grace periods whatever their number, while readers look sessions up.
// The part specific to rcubatch is between the two "rcubatch" rulers; the rest is the program.
#include <rcubatch.hpp>
#include <rcubatch/index/hlist_index.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// ---- rcubatch ----------------------------------------------------------------------------------
struct stream : rcubatch::registrable<stream> {
  std::uint64_t id;
  rcubatch::hlist_hook<stream> by_id;
};
struct session : rcubatch::registrable<session> {
  std::uint64_t id;
  std::string name;
  rcubatch::hlist_hook<session> by_id, by_name;
  std::vector<stream*> streams;  // written under the table's writer lock
};

struct table {
  std::mutex writer;
  rcubatch::grace_domain<> domain;
  rcubatch::hlist_index<session, &session::by_id, rcubatch::key_member<&session::id>> sessions;
  rcubatch::hlist_index<session, &session::by_name, rcubatch::key_member<&session::name>> names;
  rcubatch::hlist_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>> streams;
};

struct session_policy {
  table& t;
  void unlist(session& s) noexcept { t.sessions.unlink(s), t.names.unlink(s); }
  void notify(session& s, rcubatch::batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);  // streams go in the same batch, before s
  }
};
struct stream_policy {
  table& t;
  void unlist(stream& st) noexcept { t.streams.unlink(st); }
};

void close_sessions(table& t, const std::vector<session*>& doomed) {
  std::scoped_lock lock(t.writer);
  rcubatch::unreg_queue<session> sessions;
  rcubatch::unreg_queue<stream> streams;
  for (session* s : doomed) sessions.push(*s);
  rcubatch::batch_stats st = rcubatch::rollback_many(t.domain, rcubatch::lane(sessions, session_policy{t}),
                                                     rcubatch::lane(streams, stream_policy{t}));
  std::printf("closed %zu sessions and their streams with %u grace periods\n", doomed.size(), st.grace_periods);
}
// ---- rcubatch ----------------------------------------------------------------------------------

session* open_session(table& t, std::uint64_t id, int n_streams) {
  auto* s = new session;
  s->id = id;
  s->name = "session-" + std::to_string(id);
  for (int i = 0; i < n_streams; ++i) {
    auto* st = new stream;
    st->id = id * 8 + static_cast<std::uint64_t>(i);
    t.streams.add_unique(*st);
    st->mark_registered();  // published first, then registered
    s->streams.push_back(st);
  }
  t.sessions.add_unique(*s);
  t.names.add_unique(*s);
  s->mark_registered();
  return s;
}

int main() {
  constexpr std::uint64_t kSessions = 10'000;
  rcubatch::thread_registration<> registered;  // every thread that reads or writes registers
  table t;
  std::vector<session*> open;
  {
    std::scoped_lock lock(t.writer);
    for (std::uint64_t id = 0; id < kSessions; ++id) open.push_back(open_session(t, id, 1 + id % 4));
  }

  // A reader looks sessions up by id and by name while the writer closes them; a holder keeps a
  // reference on one session across the close (the batch waits for it, and only for it).
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> found{0};
  std::latch reader_started(1), holding(1);
  std::thread reader([&] {
    rcubatch::thread_registration<> reg;
    reader_started.count_down();
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      rcubatch::read_guard<> guard;
      const session* s = t.sessions.find(i % kSessions);
      if (s != nullptr && t.names.find(s->name) != nullptr) found.fetch_add(1, std::memory_order_relaxed);
    }
  });
  session* held = open[42];
  held->refs().hold();
  std::thread holder([&] {
    holding.wait();
    held->refs().put();  // the last reference: the batch destroys session 42 now
  });
  reader_started.wait();
  holding.count_down();
  close_sessions(t, open);
  stop = true;
  reader.join();
  holder.join();
  std::printf("reader found %llu sessions while they were being closed\n",
              static_cast<unsigned long long>(found.load()));
  return t.sessions.size() == 0 && t.streams.size() == 0 ? 0 : 1;
}
