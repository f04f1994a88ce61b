// examples/sessions — the server template: sessions own streams (owned children: no notify to
// write, no vector of child pointers to keep in step); worker threads delete streams one by one
// and sessions in bulk, by key, racing each other (a lost race is a result, not an exception);
// a session is reloaded atomically with its streams while a reader keeps looking it up.
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
struct session;
struct stream : rcubatch::registrable<stream> {
  std::uint64_t id;
  rcubatch::hlist_hook<stream> by_id;
  rcubatch::owner_hook<session> owner;  // names its session; the table links it into session::streams
};
struct session : rcubatch::registrable<session> {
  std::uint64_t id;
  std::string name;
  rcubatch::hlist_hook<session> by_id, by_name;
  rcubatch::owned_list<stream, &stream::owner> streams;  // closed with the session, before it
};
using session_ids = rcubatch::hlist_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
using session_names = rcubatch::hlist_index<session, &session::by_name, rcubatch::key_member<&session::name>>;
using stream_ids = rcubatch::hlist_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;
struct session_policy : rcubatch::indexed<session, session_ids, session_names>, rcubatch::owning<&session::streams> {};
using table = rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_ids>>;

// Lost races are results: 0 objects / keys missed when another thread closed them first.
std::size_t close_stream(table& t, std::uint64_t id) { return t.try_unregister<stream_ids>(id).stats.objects; }
rcubatch::unregister_result close_sessions(table& t, const std::vector<std::uint64_t>& ids) {
  return t.try_unregister_many<session_ids>(ids);  // sessions and their streams, ≤ 2 GPs
}
// The new version and its streams replace the old ones in one step; readers find one or the other.
unsigned reload(table& t, session& old_version, session& new_version, const std::vector<stream*>& streams) {
  return t.replace_with_children(old_version, new_version, streams).stats.grace_periods;
}
// ---- rcubatch ----------------------------------------------------------------------------------

session* new_session(std::uint64_t id, int n_streams, std::vector<stream*>& streams) {
  auto* s = new session;
  s->id = id;
  s->name = "session-" + std::to_string(id);
  streams.clear();
  for (int i = 0; i < n_streams; ++i) {
    auto* st = new stream;
    st->id = id * 8 + static_cast<std::uint64_t>(i);
    st->owner.set_parent(*s);
    streams.push_back(st);
  }
  return s;
}

session* open_session(table& t, std::uint64_t id, int n_streams) {
  std::vector<stream*> streams;
  session* s = new_session(id, n_streams, streams);
  if (!t.add(*s)) std::abort();  // false: the id or name is taken (not here: they are unique)
  for (stream* st : streams)
    if (!t.add(*st)) std::abort();  // linked into s->streams by the table
  return s;
}

int main() {
  constexpr std::uint64_t kSessions = 10'000;
  constexpr unsigned kWorkers = 4;
  rcubatch::thread_registration<> registered;  // every thread that reads or writes registers
  table t;
  std::vector<session*> open;
  for (std::uint64_t id = 0; id < kSessions; ++id) open.push_back(open_session(t, id, 1 + id % 4));

  // Reload session 7 (a new version, same keys, same stream ids) while a reader looks it up.
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> lookups{0}, misses{0};
  std::latch reader_started(1);
  std::thread reader([&] {
    rcubatch::thread_registration<> reg;
    reader_started.count_down();
    while (!stop.load(std::memory_order_relaxed)) {
      rcubatch::read_guard<> guard;
      const session* s = t.find<session_names>(guard, "session-7");
      if (s == nullptr || t.find<stream_ids>(guard, std::uint64_t{7 * 8}) == nullptr) misses.fetch_add(1);
      lookups.fetch_add(1, std::memory_order_relaxed);
    }
  });
  reader_started.wait();
  std::vector<stream*> streams;
  session* v2 = new_session(7, 4, streams);
  const unsigned reload_gps = reload(t, *open[7], *v2, streams);
  stop = true;
  reader.join();

  // Workers race: each closes the first stream of its quarter of the sessions alone, then every
  // worker closes all the sessions in bulk, by key, in chunks: each session goes exactly once.
  std::atomic<std::uint64_t> objects{0}, sessions{0}, streams_alone{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      rcubatch::thread_registration<> reg;
      for (std::uint64_t id = w; id < kSessions; id += kWorkers) streams_alone += close_stream(t, id * 8);
      std::vector<std::uint64_t> chunk;
      for (std::uint64_t id = 0; id < kSessions; ++id) {
        chunk.push_back((id + w * 2'500) % kSessions);  // the workers start at different keys
        if (chunk.size() < 500) continue;
        const rcubatch::unregister_result r = close_sessions(t, chunk);
        sessions += r.unregistered;
        objects += r.stats.objects;
        chunk.clear();
      }
    });
  }
  for (auto& w : workers) w.join();
  objects += streams_alone;
  std::printf("reloaded session 7 with its streams with %u grace periods; the reader missed %llu of %llu lookups\n",
              reload_gps, static_cast<unsigned long long>(misses.load()),
              static_cast<unsigned long long>(lookups.load()));
  std::printf("closed %llu sessions and %llu streams from %u threads (%llu streams alone)\n",
              static_cast<unsigned long long>(sessions.load()),
              static_cast<unsigned long long>(objects.load() - sessions.load()), kWorkers,
              static_cast<unsigned long long>(streams_alone.load()));
  return misses.load() == 0 && t.index<session_ids>().empty() && t.index<stream_ids>().empty() ? 0 : 1;
}
