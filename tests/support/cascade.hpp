// tests/support/cascade.hpp — sessions that own streams: the two-type cascade (a session's notify
// queues its streams into the same batch) on a registry, as the registry and async_unregister
// tests use it. The hooks record into a cascade_log the test owns:
//   cascade_log log;
//   cascade_registry<CF> reg;
//   record_into(reg, log);
//   session* s = open_session(reg, 1, 3);   // session 1 with streams 10, 11, 12
//   reg.unregister(*s);                     // log.destroyed: the streams, then "session 1"
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rcubatch/dismantle.hpp>
#include <rcubatch/index/lfht_index.hpp>
#include <rcubatch/registry.hpp>

#include "objects.hpp"  // kAlive

namespace rcubatch::test {

struct stream : registrable<stream> {
  explicit stream(int i) : id(i) {}
  int id;
  lfht_hook<stream> by_id;
  std::atomic<std::uint64_t> poison{kAlive};
};
struct session : registrable<session> {
  explicit session(int i) : id(i) {}
  int id;
  lfht_hook<session> by_id;
  std::vector<stream*> streams;     // queued by notify
  std::atomic<bool> destroyed{false};  // set by destroy, just before the delete (a holder checks it)
};
using session_by_id = lfht_index<session, &session::by_id, key_member<&session::id>>;  // memb
using stream_by_id = lfht_index<stream, &stream::by_id, key_member<&stream::id>>;

/// What the cascade's hooks did. The destroy hooks may run on a reclaimer thread while the test
/// thread (or a holder) reads `destroyed`: it is written under `m`.
struct cascade_log {
  std::mutex m;
  std::vector<std::string> destroyed;                           ///< "stream 10", "session 1": destroy order
  std::vector<int> stream_unlists = std::vector<int>(1000, 0);  ///< unlist calls per stream id (< 1000)
  int not_dismantling = 0;  ///< uninit calls on an object whose batch did not mark it dismantling
  int elided = 0;           ///< sessions' own GPs skipped in uninit (synchronize_unless_dismantling)
  std::latch* streams_gone = nullptr;  ///< counted down once per destroyed stream, when set

  void add(std::string line) {
    std::scoped_lock l(m);
    destroyed.push_back(std::move(line));
  }
  /// Where `line` stands in `destroyed` (destroyed.size() if absent). Requires: no batch running.
  std::ptrdiff_t position(const std::string& line) const {
    return std::find(destroyed.begin(), destroyed.end(), line) - destroyed.begin();
  }
};

/// Sessions: notify queues the streams; uninit runs the session's own GP unless the batch is
/// dismantling (it always is: the GP is elided and counted).
template <class F>
struct session_policy : indexed<session, session_by_id> {
  cascade_log* log = nullptr;
  grace_domain<F>* domain = nullptr;
  void notify(session& s, batch& b) noexcept {
    for (stream* st : s.streams) b.queue(*st);
  }
  void uninit(session& s, batch&) noexcept {
    if (!s.dismantling()) ++log->not_dismantling;
    if (!synchronize_unless_dismantling(s, *domain)) ++log->elided;
  }
  void destroy(session* s) noexcept {
    log->add("session " + std::to_string(s->id));
    s->destroyed = true;
    delete s;
  }
};
/// Streams: unlists counted per id, the dismantle flag checked in uninit.
template <class F>
struct stream_policy : indexed<stream, stream_by_id> {
  cascade_log* log = nullptr;
  void unlist(stream& st) noexcept {
    ++log->stream_unlists.at(static_cast<std::size_t>(st.id));
    indexed::unlist(st);
  }
  void uninit(stream& st) noexcept {
    if (!st.dismantling()) ++log->not_dismantling;
  }
  void destroy(stream* st) noexcept {
    log->add("stream " + std::to_string(st->id));
    if (log->streams_gone != nullptr) log->streams_gone->count_down();
    delete st;
  }
};
template <class F>
using cascade_registry = basic_registry<F, std::mutex, session_policy<F>, stream_policy<F>>;

/// Effects: points reg's hooks at `log` (and the session hook at reg's domain). Call before the
/// first add; `log` outlives reg.
template <class F>
void record_into(cascade_registry<F>& reg, cascade_log& log) noexcept {
  reg.template policy<session_policy<F>>().log = &log;
  reg.template policy<session_policy<F>>().domain = &reg.domain();
  reg.template policy<stream_policy<F>>().log = &log;
}

/// Adds session `id` and its streams id * 10, id * 10 + 1, ... (n_streams < 10) to reg; returns
/// the session (reg's batches own it from now on).
template <class F>
session* open_session(cascade_registry<F>& reg, int id, int n_streams) {
  auto* s = new session(id);
  for (int i = 0; i < n_streams; ++i) {
    auto* st = new stream(id * 10 + i);
    EXPECT_TRUE(reg.add(*st));
    s->streams.push_back(st);
  }
  EXPECT_TRUE(reg.add(*s));
  return s;
}

}  // namespace rcubatch::test
