// tests/support/mid_walk_reader.hpp — readers of an RCU chain, for the tests of owned_list::rcu_range
// and member_list::rcu_range: ids_walked (a walk at rest, in one read section), late_walk_reader
// (one that finds the parent, then walks only once the writer changed it) and mid_walk_reader,
// a reader that stops on the first element of a walk, inside its read section, until the writer
// has unlinked under it, then walks on:
//
//   mid_walk_reader<flavor::memb> reader(
//       [&](const read_guard<flavor::memb>& guard) { return t.find<group_ids>(guard, 10)->members.rcu_range(); },
//       [&] { return g->state() != reg_state::registered; });   // the writer's unlist ran
//   t.unregister(*g);                                           // waits for the reader in its GP
//   EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));   // the ids walked
//
// The constructor returns once the reader stands on the first element. The wait for the writer
// is a yield loop on an observable state (the writer cannot end its grace period before the
// reader leaves, so the reader must not block); the test's watchdog fails a hang.
#pragma once

#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

#include <rcubatch/read_guard.hpp>

namespace rcubatch::test {

/// What both readers below share: a registered thread that runs `body(walked, standing)` — it
/// counts `standing` down once it stands where the writer must find it — and the ids it walked.
template <class Flavor>
class walking_reader {
 public:
  walking_reader(const walking_reader&) = delete;
  walking_reader& operator=(const walking_reader&) = delete;
  ~walking_reader() {
    if (thread_.joinable()) thread_.join();
  }

  /// Effects: waits for the walk to end; the ids it yielded, in order.
  std::vector<std::uint64_t> join() {
    thread_.join();
    return walked_;
  }

 protected:
  /// Starts the thread; returns once it counted `standing` down.
  template <class Body>
  explicit walking_reader(Body body)
      : thread_([this, body] {
          thread_registration<Flavor> registered;
          body(walked_, standing_);
        }) {
    standing_.wait();
  }

 private:
  std::vector<std::uint64_t> walked_;
  std::latch standing_{1};
  std::thread thread_;  // last: it starts once the members above exist
};

template <class Flavor>
class mid_walk_reader : public walking_reader<Flavor> {
 public:
  template <class RangeOf, class WriterUnlinked>
  mid_walk_reader(RangeOf range_of, WriterUnlinked writer_unlinked)
      : walking_reader<Flavor>([range_of, writer_unlinked](std::vector<std::uint64_t>& walked, std::latch& standing) {
          read_guard<Flavor> guard;
          auto range = range_of(guard);
          auto it = range.begin();
          walked.push_back(it->id);
          standing.count_down();
          while (!writer_unlinked()) std::this_thread::yield();
          for (++it; it != range.end(); ++it) walked.push_back(it->id);
        }) {}
};

/// A reader that finds something (a parent) inside its read section, then waits in that section
/// until the writer has changed it, and only then walks it: what a reader preempted between its
/// lookup and its walk sees.
///
///   late_walk_reader<flavor::memb> reader(
///       [&](const read_guard<flavor::memb>& guard) { return t.find<session_ids>(guard, 1); },
///       [&] { return child->owner.parent() != old; },               // the writer's replace ran
///       [](const session* found) { return found->streams.rcu_range(); });
///   t.replace(*old, *fresh, rcubatch::keep_children);              // waits for the reader in its GP
///   EXPECT_EQ(reader.join(), (std::vector<std::uint64_t>{1, 2, 3}));
///
/// The constructor returns once the reader has found it (a null find walks nothing). The wait is
/// mid_walk_reader's: a yield loop, under the test's watchdog.
template <class Flavor>
class late_walk_reader : public walking_reader<Flavor> {
 public:
  template <class Find, class WriterDone, class RangeOf>
  late_walk_reader(Find find, WriterDone writer_done, RangeOf range_of)
      : walking_reader<Flavor>([find, writer_done, range_of](std::vector<std::uint64_t>& walked, std::latch& standing) {
          read_guard<Flavor> guard;
          const auto* found = find(guard);
          standing.count_down();
          while (!writer_done()) std::this_thread::yield();
          if (found != nullptr)
            for (const auto& x : range_of(found)) walked.push_back(x.id);
        }) {}
};

/// The ids a walk of `range_of()` yields, in one read section of Flavor, into an Ids container
/// (a vector keeps the order, a set compares as a set).
template <class Flavor, class Ids, class RangeOf>
Ids ids_walked(RangeOf range_of) {
  read_guard<Flavor> guard;
  Ids ids;
  for (const auto& x : range_of()) ids.insert(ids.end(), x.id);
  return ids;
}

}  // namespace rcubatch::test
