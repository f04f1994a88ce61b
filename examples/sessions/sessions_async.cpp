// examples/sessions — many threads, one object each: every worker closes its own sessions with
// rcubatch::async_unregister. Each close unlists the session at once and returns without waiting
// for a grace period; a background reclaimer tears the requests of all workers down in combined
// batches (streams included, as cascades), within a memory budget.
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
  rcubatch::hlist_hook<session> by_id;
  std::vector<stream*> streams;  // set before add, then read by the batch only
};
using session_ids = rcubatch::hlist_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
using stream_ids = rcubatch::hlist_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;

struct session_policy : rcubatch::indexed<session, session_ids> {
  void notify(session& s, rcubatch::batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);  // streams go in the same batch, before s
  }
  std::size_t pending_bytes(const session& s) const {  // what the budget charges per request
    return sizeof(session) + s.streams.size() * sizeof(stream);
  }
};
using table = rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_ids>>;

void worker(rcubatch::async_unregister<table>& reclaimer, const std::vector<session*>& mine) {
  for (session* s : mine) {
    rcubatch::unregister_ticket t = reclaimer.submit(*s);  // unlisted now; never waits for a GP
    if (!t) std::abort();  // refused: only with over_budget::refuse
  }
}

void close_all(table& t, const std::vector<std::vector<session*>>& per_thread) {
  rcubatch::async_unregister reclaimer(t, rcubatch::async_options{.budget_bytes = 1 << 20});
  std::vector<std::thread> workers;
  for (const auto& mine : per_thread)
    workers.emplace_back([&reclaimer, &mine] {
      rcubatch::thread_registration<> registered;
      worker(reclaimer, mine);
    });
  for (std::thread& w : workers) w.join();
  reclaimer.drain();  // every session and stream submitted so far is destroyed
  const rcubatch::async_stats st = reclaimer.stats();
  std::printf("closed %llu sessions from %zu threads: %llu objects in %llu batches, %llu grace periods, "
              "peak pending %zu bytes\n",
              static_cast<unsigned long long>(st.completed), per_thread.size(),
              static_cast<unsigned long long>(st.objects), static_cast<unsigned long long>(st.batches),
              static_cast<unsigned long long>(st.grace_periods), st.pending_bytes_high_water);
}
// ---- rcubatch ----------------------------------------------------------------------------------

session* open_session(table& t, std::uint64_t id, int n_streams) {
  auto* s = new session;
  s->id = id;
  for (int i = 0; i < n_streams; ++i) {
    auto* st = new stream;
    st->id = id * 8 + static_cast<std::uint64_t>(i);
    if (!t.add(*st)) std::abort();
    s->streams.push_back(st);
  }
  if (!t.add(*s)) std::abort();
  return s;
}

int main() {
  constexpr std::uint64_t kSessions = 8'000;
  constexpr std::size_t kThreads = 8;
  rcubatch::thread_registration<> registered;  // every thread that reads or writes registers
  table t;
  std::vector<std::vector<session*>> per_thread(kThreads);
  for (std::uint64_t id = 0; id < kSessions; ++id) per_thread[id % kThreads].push_back(open_session(t, id, 1 + id % 4));

  std::atomic<bool> stop{false};
  std::latch reader_started(1);
  std::thread reader([&] {  // looks sessions up while they are being closed
    rcubatch::thread_registration<> reg;
    reader_started.count_down();
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      rcubatch::read_guard<> guard;
      static_cast<void>(t.find<session_ids>(guard, i % kSessions));
    }
  });
  reader_started.wait();
  close_all(t, per_thread);
  stop = true;
  reader.join();
  return t.index<session_ids>().empty() && t.index<stream_ids>().empty() ? 0 : 1;
}
