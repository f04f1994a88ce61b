// examples/sessions — sessions.cpp again, on rcubatch::registry: the same table, streams and
// batch, with the writer lock, the grace domain and the indexes owned by the façade.
// The part specific to rcubatch is between the two "rcubatch" rulers; the rest is the program.
#include <rcubatch.hpp>
#include <rcubatch/index/hlist_index.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
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
  std::vector<stream*> streams;  // set before add, then read by the batch only
};
using session_ids = rcubatch::hlist_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
using session_names = rcubatch::hlist_index<session, &session::by_name, rcubatch::key_member<&session::name>>;
using stream_ids = rcubatch::hlist_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;

struct session_policy : rcubatch::indexed<session, session_ids, session_names> {
  void notify(session& s, rcubatch::batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);  // streams go in the same batch, before s
  }
};
using table = rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_ids>>;

bool close_session_named(table& t, const std::string& name) {
  // Looked up under the writer lock: of two threads racing to close it, one gets `unregistered`,
  // the other `not_found` (never a freed object). Its streams go in the same batch.
  rcubatch::unregister_result r = t.try_unregister<session_names>(name);
  return r.status == rcubatch::unregister_status::unregistered;
}

void close_sessions(table& t, const std::vector<session*>& doomed) {
  rcubatch::batch_stats st = t.unregister_many(doomed);  // takes the lock; sessions and streams
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
    if (!t.add(*st)) std::abort();  // false: the id is taken (not here: ids are unique)
    s->streams.push_back(st);
  }
  if (!t.add(*s)) std::abort();     // published in both indexes, then registered
  return s;
}

int main() {
  constexpr std::uint64_t kSessions = 10'000;
  rcubatch::thread_registration<> registered;  // every thread that reads or writes registers
  table t;
  std::vector<session*> open;
  for (std::uint64_t id = 0; id < kSessions; ++id) open.push_back(open_session(t, id, 1 + id % 4));

  // By key: one more session, closed by name; the second try finds nothing (a lost race looks so).
  open_session(t, kSessions, 2);
  const std::string extra = "session-" + std::to_string(kSessions);
  if (!close_session_named(t, extra) || close_session_named(t, extra)) return 1;
  std::printf("closed %s by name; a second close found nothing\n", extra.c_str());

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
      const session* s = t.find<session_ids>(guard, i % kSessions);
      if (s != nullptr && t.find<session_names>(guard, s->name) != nullptr) found.fetch_add(1, std::memory_order_relaxed);
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
  return t.index<session_ids>().empty() && t.index<stream_ids>().empty() ? 0 : 1;
}
