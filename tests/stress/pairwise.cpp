// tests/stress/pairwise.cpp — rcubatch_pairwise: the features of issue 34's interaction table driven
// at random, together, on ONE registry from several threads, for one flavor chosen at run time.
//
//   rcubatch_pairwise --flavor memb --seconds 3       # ctest short mode (stress.pairwise.<flavor>, all four)
//   rcubatch_pairwise --flavor qsbr --seconds 600     # the soak (scripts/soak-pairwise.sh)
//
// The registry: three object types, each in an lfht_index AND an hlist_index (both keyed on id):
//   top   registrable<top>          owns mids   (owning<&top::mids>);  plain holds
//   mid   sharded_registrable<mid>  owns leaves (owning<&mid::leaves>); sharded holds
//   leaf  tracked_registrable<leaf> owned by a mid: depth 2 below a top;  tracked holds
// Some tops are "lone": never given children and never held, so a call_rcu callback may delete
// them with a drain that never sleeps; the others, deleted from a callback too, are held by readers
// (the drain then sleeps on the call_rcu worker: it skips rcu_barrier there, issue 34 item 5).
//
// The run is a series of epochs, each with a fresh registry whose registry_options cycle through
// default (lock dropped for the drain), hold_lock_through_drain and unlock_during_waits. In each:
//   writers  pick a stripe (try_lock: never block on it) whose families (a top, its mids, their
//            leaves) they then own: a model in the stripe says what is registered, so every call
//            has an exact expected result. Random operations: add top / mid / leaf; delete by
//            object (unregister, try_unregister); delete by key through the lfht or the hlist index
//            (try_unregister<Index>(key)), also of a dead key (not_found); replace of each type;
//            replace_with_children of a top (some new mids take an old mid's key, some are new);
//            a call_rcu callback (call_after_grace_period) that deletes a lone top by key or by
//            object, or replaces it (replace, replace_with_children) and deletes the new one.
//   readers  inside a read_guard, look ids up in every type through a random index; an object
//            found must not be poisoned (destroyed) nor past its grace periods, and neither may the
//            parent (and grandparent) its owner_hook names; some are held (tracked token, sharded
//            hold, plain hold) and put a few iterations later, checked again before the put.
//   watchdog no operation completed for --stall seconds: prints what every thread was doing and
//            aborts (a hang is a failure, not a CI timeout).
// At the end of each epoch everything left is unregistered (while readers still run and hold),
// the call_rcu callbacks are waited for (grace_domain::barrier), and then: every index is empty,
// created == destroyed per type, and every destroyed object is poisoned exactly once (destroy
// finds an already-poisoned object: "destroyed twice"). Destroyed objects stay in a quarantine
// until the epoch ends, so a late reader finds the poison deterministically, not only under ASan.
// Any misuse diagnosed (misuse.hpp) is fatal: a correct program has none.
#include <rcubatch.hpp>
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/index/lfht_index.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace pairwise {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint64_t kAlive = 0xA11FE0A11FE0A11Full, kPoison = 0xDEADBEEFDEADBEEFull;

// ---- what is exercised, and what waits for a fix ------------------------------------------------

// Every operation and reader action, counted: the report prints ops per combination.
#define PAIRWISE_COMBOS(X)                                                                   \
  X(add_top) X(add_lone_top) X(add_mid) X(add_leaf)                                         \
  X(del_obj_unregister_top) X(del_obj_unregister_mid) X(del_obj_unregister_leaf)            \
  X(del_obj_try_top) X(del_obj_try_mid) X(del_obj_try_leaf)                                 \
  X(del_key_lfht_top) X(del_key_lfht_mid) X(del_key_lfht_leaf)                              \
  X(del_key_hlist_top) X(del_key_hlist_mid) X(del_key_hlist_leaf)                           \
  X(del_key_dead_lfht) X(del_key_dead_hlist)                                                \
  X(replace_top) X(replace_mid) X(replace_leaf)                                             \
  X(replace_with_children_top) X(replace_with_children_mid)                                 \
  X(call_rcu_del_key_lone_top) X(call_rcu_del_obj_lone_top) X(call_rcu_replace_lone_top)     \
  X(call_rcu_replace_with_children_lone_top) X(call_rcu_del_held_object)                      \
  X(call_rcu_del_under_hold_lock_through_drain)                                             \
  X(read_hit_lfht) X(read_hit_hlist) X(read_parent_checked)                                 \
  X(hold_tracked_leaf) X(hold_sharded_mid) X(hold_plain_top) X(hold_untracked_leaf)         \
  X(epoch_default) X(epoch_hold_lock_through_drain) X(epoch_unlock_during_waits)
enum class combo : unsigned {
#define PAIRWISE_ENUM(n) n,
  PAIRWISE_COMBOS(PAIRWISE_ENUM)
#undef PAIRWISE_ENUM
      count
};
constexpr std::array<const char*, static_cast<std::size_t>(combo::count)> kComboNames{
#define PAIRWISE_NAME(n) #n,
    PAIRWISE_COMBOS(PAIRWISE_NAME)
#undef PAIRWISE_NAME
};


// ---- the objects ------------------------------------------------------------------------------

/// What every object carries for the checks. Plain on purpose: an early free is also a TSan race.
struct life {
  std::uint64_t magic = kAlive;
  std::uint64_t id = 0;
};

struct top;
struct mid;
struct leaf : rcubatch::tracked_registrable<leaf>, life {
  rcubatch::lfht_hook<leaf> by_lfht;
  rcubatch::hlist_hook<leaf> by_hlist;
  rcubatch::owner_hook<mid> owner;
  mid* model_parent = nullptr;  // test-side model (under the stripe's lock)
};
struct mid : rcubatch::sharded_registrable<mid>, life {
  rcubatch::lfht_hook<mid> by_lfht;
  rcubatch::hlist_hook<mid> by_hlist;
  rcubatch::owner_hook<top> owner;
  rcubatch::owned_list<leaf, &leaf::owner> leaves;
  top* model_parent = nullptr;
  std::vector<leaf*> model_leaves;
};
struct top : rcubatch::registrable<top>, life {
  rcubatch::lfht_hook<top> by_lfht;
  rcubatch::hlist_hook<top> by_hlist;
  rcubatch::owned_list<mid, &mid::owner> mids;
  bool lone = false;  // set before add: never gets children, never held (call_rcu deletes it)
  std::vector<mid*> model_mids;
};

template <class T, class F>
using by_lfht = rcubatch::lfht_index<T, &T::by_lfht, rcubatch::key_member<&life::id>, F>;
template <class T, class F>
using by_hlist = rcubatch::hlist_index<T, &T::by_hlist, rcubatch::key_member<&life::id>, F>;

enum kind : unsigned { k_top, k_mid, k_leaf, kKinds };
constexpr const char* kKindNames[] = {"top", "mid", "leaf"};

// ---- shared state of a run --------------------------------------------------------------------

struct counters {
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(combo::count)> ops{};
  std::array<std::atomic<std::uint64_t>, kKinds> created{}, destroyed{};
  std::atomic<std::uint64_t> violations{0}, progress{0}, lookups{0};
};

struct shared {
  counters c;
  std::mutex msg_mutex;
  std::vector<std::string> messages;
  std::mutex quarantine_mutex;  // destroy runs on writers, the main thread and call_rcu threads
  std::vector<std::pair<kind, life*>> quarantine;
  bool inject_missed_destroy = false;  // the negative control (set before any thread starts)
  std::atomic<bool> missed{false};

  void count(combo k, std::uint64_t n = 1) noexcept {
    c.ops[static_cast<std::size_t>(k)].fetch_add(n, std::memory_order_relaxed);
  }
  void violation(std::string what) noexcept {
    if (c.violations.fetch_add(1) < 20) {
      std::lock_guard lock(msg_mutex);
      try {
        messages.push_back(std::move(what));
      } catch (...) {
      }
    }
  }
};
shared* g = nullptr;  // the run's (the policies are default-constructed by the registry)

template <class T>
constexpr kind kind_of() {
  if constexpr (std::is_same_v<T, top>) return k_top;
  else if constexpr (std::is_same_v<T, mid>) return k_mid;
  else return k_leaf;
}

/// Every policy's destroy: checks, poisons, counts, quarantines (deleted at the epoch's end).
template <class T>
void destroy_checked(T* o) noexcept {
  constexpr kind k = kind_of<T>();
  if (o->magic != kAlive) {
    g->violation(std::string("destroy: ") + kKindNames[k] + " already poisoned (destroyed twice)");
    return;
  }
  if (o->state() != rcubatch::reg_state::released) g->violation("destroy: object not in state released");
  if (o->refs().count() != 0) g->violation("destroy: object still referenced");
  if constexpr (k == k_top) {
    if (!o->mids.empty()) g->violation("destroy: top destroyed with mids still in its owned list");
  } else if constexpr (k == k_mid) {
    if (!o->leaves.empty()) g->violation("destroy: mid destroyed with leaves still in its owned list");
  }
  o->magic = kPoison;
  // --inject-missed-destroy (the negative control): one destroy goes uncounted, as if the batch
  // had never destroyed that object; the epoch's created = destroyed check must catch it.
  if (g->inject_missed_destroy && g->missed.exchange(true) == false) return;
  g->c.destroyed[k].fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(g->quarantine_mutex);
  g->quarantine.emplace_back(k, static_cast<life*>(o));
}

template <class F>
struct top_policy : rcubatch::indexed<top, by_lfht<top, F>, by_hlist<top, F>>, rcubatch::owning<&top::mids> {
  void destroy(top* o) noexcept { destroy_checked(o); }
};
// Mids have the hlist index first: replace_with_children of a top pairs old and new mids through it
// (hlist_index::key_of, issue 34 item 2); tops and leaves have the lfht index first.
template <class F>
using mid_indexed = rcubatch::indexed<mid, by_hlist<mid, F>, by_lfht<mid, F>>;
template <class F>
struct mid_policy : mid_indexed<F>, rcubatch::owning<&mid::leaves> {
  void destroy(mid* o) noexcept { destroy_checked(o); }
};
template <class F>
struct leaf_policy : rcubatch::indexed<leaf, by_lfht<leaf, F>, by_hlist<leaf, F>> {
  void destroy(leaf* o) noexcept { destroy_checked(o); }
};
template <class F>
using registry_t = rcubatch::basic_registry<F, std::mutex, top_policy<F>, mid_policy<F>, leaf_policy<F>>;

// ---- options ----------------------------------------------------------------------------------

struct options {
  std::string flavor = "memb";
  double seconds = 3, epoch_seconds = 0;  // 0: seconds / 3, at most 2
  unsigned readers = 2, writers = 2, stripes = 32, stall = 30;
  std::uint64_t seed = 0;
  bool inject_missed_destroy = false;
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--flavor memb|qsbr|mb|bp] [--seconds S] [--epoch-seconds S] [--readers R] [--writers W]\n"
               "          [--stripes N] [--stall S] [--seed X] [--inject-missed-destroy 1]\n"
               "  RCUBATCH_PAIRWISE_SECONDS in the environment overrides --seconds (a soak from ctest).\n",
               argv0);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  auto count = [](const char* v) { return static_cast<unsigned>(std::strtoul(v, nullptr, 10)); };
  // Every flag takes one value: a table of setters.
  const std::pair<std::string_view, std::function<void(const char*)>> flags[] = {
      {"--flavor", [&](const char* v) { o.flavor = v; }},
      {"--seconds", [&](const char* v) { o.seconds = std::strtod(v, nullptr); }},
      {"--epoch-seconds", [&](const char* v) { o.epoch_seconds = std::strtod(v, nullptr); }},
      {"--readers", [&](const char* v) { o.readers = count(v); }},
      {"--writers", [&](const char* v) { o.writers = count(v); }},
      {"--stripes", [&](const char* v) { o.stripes = count(v); }},
      {"--stall", [&](const char* v) { o.stall = count(v); }},
      {"--seed", [&](const char* v) { o.seed = std::strtoull(v, nullptr, 10); }},
      {"--inject-missed-destroy", [&](const char* v) { o.inject_missed_destroy = count(v) != 0; }},
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string_view a = argv[i];
    const auto* f = std::find_if(std::begin(flags), std::end(flags), [&](const auto& e) { return e.first == a; });
    if (f == std::end(flags) || i + 1 >= argc) usage(argv[0]);
    f->second(argv[i + 1]);
  }
  if (const char* env = std::getenv("RCUBATCH_PAIRWISE_SECONDS")) o.seconds = std::strtod(env, nullptr);
  if (o.seconds <= 0 || o.writers == 0 || o.stripes == 0 || o.stall == 0) usage(argv[0]);
  if (o.epoch_seconds <= 0) o.epoch_seconds = std::min(2.0, o.seconds / 3);
  if (o.seed == 0) o.seed = static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
  return o;
}

void misuse_is_fatal(rcubatch::misuse_kind k, std::string_view msg) noexcept {
  std::fprintf(stderr, "rcubatch_pairwise: misuse diagnosed (%.*s): %.*s\n", static_cast<int>(to_string(k).size()),
               to_string(k).data(), static_cast<int>(msg.size()), msg.data());
}

/// What a thread is doing, for the watchdog's report. Written by its thread, read by the watchdog.
struct doing_slot {
  std::atomic<const char*> what{"starting"};
  std::atomic<std::uint64_t> id{0};
  void set(const char* w, std::uint64_t i = 0) noexcept {
    id.store(i, std::memory_order_relaxed);
    what.store(w, std::memory_order_relaxed);
  }
};

/// A stripe: families (tops, their mids, their leaves) that only its lock's holder changes, and
/// the model of what of them is registered.
struct stripe {
  std::mutex m;
  std::vector<top*> tops;
  std::vector<std::uint64_t> dead_ids;  // ids this stripe deleted: a key lookup must miss them
};

/// A deferred delete: queued with call_after_grace_period (the flavor's call_rcu), run on
/// liburcu's call_rcu worker.
struct deferred_delete {
  enum what_kind : unsigned char { by_object, by_key, replace, replace_with_children };
  rcu_head head;  // first: the callback gets its address
  void* run;
  top* obj;
  what_kind what;
  bool via_hlist;
};

// ---- the run ------------------------------------------------------------------------------------

template <class F>
class run {
 public:
  using registry = registry_t<F>;

  explicit run(const options& o) : o_(o), doing_(o.readers + o.writers + 2) {}

  int go() {
    g = &s_;
    s_.inject_missed_destroy = o_.inject_missed_destroy;
    rcubatch::thread_registration<F> reg_main;
    std::thread dog([this] { watchdog(); });
    const auto t_end = clock_type::now() + std::chrono::duration<double>(o_.seconds);
    unsigned epoch = 0;
    do {
      run_epoch(epoch++);
    } while (clock_type::now() < t_end && s_.c.violations.load() == 0);
    {
      std::lock_guard lock(dog_mutex_);
      finished_ = true;
    }
    dog_cv_.notify_all();
    dog.join();
    return report(epoch);
  }

 private:
  doing_slot& main_slot() {
    s_.c.progress.fetch_add(1, std::memory_order_relaxed);  // a step of the epoch: progress
    return doing_.back();
  }

  // --- one epoch: a fresh registry with one of the three lock modes -----------------------------
  void run_epoch(unsigned epoch) {
    rcubatch::registry_options ro;
    ro.rollback.drain.stall_report_interval = std::chrono::seconds(3600);  // the watchdog reports hangs
    ro.rollback.drain.rebroadcast_interval = std::chrono::milliseconds(50);
    switch (epoch % 3) {
      case 0: s_.count(combo::epoch_default); break;
      case 1: ro.hold_lock_through_drain = true; s_.count(combo::epoch_hold_lock_through_drain); break;
      default: ro.unlock_during_waits = true; s_.count(combo::epoch_unlock_during_waits); break;
    }
    hold_lock_ = ro.hold_lock_through_drain;
    registry reg(ro, domain_);
    reg_ = &reg;
    std::vector<stripe> stripes(o_.stripes);
    stripes_ = &stripes;
    stop_writers_ = stop_readers_ = false;
    std::vector<std::thread> readers, writers;
    for (unsigned i = 0; i < o_.readers; ++i) readers.emplace_back([this, i, epoch] { reader(i, epoch); });
    for (unsigned i = 0; i < o_.writers; ++i) writers.emplace_back([this, i, epoch] { writer(i, epoch); });
    {
      rcubatch::offline_scope<F> offline;  // qsbr: the main thread only waits
      main_slot().set("waiting for the epoch to end", epoch);
      std::unique_lock lock(dog_mutex_);
      // A timed run, not a synchronization: the epoch lasts epoch_seconds (or until a violation).
      dog_cv_.wait_for(lock, std::chrono::duration<double>(o_.epoch_seconds),
                       [this] { return s_.c.violations.load() != 0; });
    }
    stop_writers_ = true;
    {
      rcubatch::offline_scope<F> offline;
      for (auto& t : writers) t.join();
    }
    // Tear down what is left while the readers still run and hold.
    main_slot().set("tearing down the epoch's families", epoch);
    std::vector<top*> left;
    for (stripe& st : stripes)
      for (top* t : st.tops) left.push_back(t);
    if (!left.empty()) {
      const auto stats = reg.unregister_many(left);
      if (stats.refused) s_.violation("teardown: unregister_many refused");
    }
    main_slot().set("grace_domain::barrier: waiting for the call_rcu deletes", epoch);
    domain_.barrier();
    if (deferred_done_.load(std::memory_order_acquire) != deferred_queued_.load(std::memory_order_relaxed))
      s_.violation("grace_domain::barrier returned before every call_rcu delete had run");
    stop_readers_ = true;
    {
      rcubatch::offline_scope<F> offline;
      for (auto& t : readers) t.join();
    }
    main_slot().set("checking the epoch", epoch);
    auto empty = [&](auto& idx, const char* name) {
      if (!idx.empty()) s_.violation(std::string("epoch end: ") + name + " not empty");
    };
    empty(reg.template index<by_lfht<top, F>>(), "top lfht_index");
    empty(reg.template index<by_hlist<top, F>>(), "top hlist_index");
    empty(reg.template index<by_lfht<mid, F>>(), "mid lfht_index");
    empty(reg.template index<by_hlist<mid, F>>(), "mid hlist_index");
    empty(reg.template index<by_lfht<leaf, F>>(), "leaf lfht_index");
    empty(reg.template index<by_hlist<leaf, F>>(), "leaf hlist_index");
    for (unsigned k = 0; k < kKinds; ++k)
      if (s_.c.created[k].load() != s_.c.destroyed[k].load())
        s_.violation("epoch " + std::to_string(epoch) + ": " + kKindNames[k] + " created " +
                     std::to_string(s_.c.created[k].load()) + ", destroyed " + std::to_string(s_.c.destroyed[k].load()));
    if (s_.c.violations.load() != 0) {
      // Objects may still be registered (a leaked family): destroying the registry or freeing
      // them would be a fatal misuse that hides the report. Report and leave now.
      const int rc = report(epoch + 1);
      std::fflush(stdout);
      std::_Exit(rc);
    }
    std::lock_guard lock(s_.quarantine_mutex);
    for (auto [k, l] : s_.quarantine) {
      if (l->magic != kPoison) s_.violation("quarantine: an object not poisoned");
      switch (k) {
        case k_top: delete static_cast<top*>(l); break;
        case k_mid: delete static_cast<mid*>(l); break;
        default: delete static_cast<leaf*>(l); break;
      }
    }
    s_.quarantine.clear();
    reg_ = nullptr;
  }

  // --- readers -------------------------------------------------------------------------------
  template <class T>
  void check(const T* o, const char* what) {
    if (o->magic != kAlive) s_.violation(std::string("reader: ") + what + " poisoned inside a read section");
    const auto st = o->state();
    if (st == rcubatch::reg_state::unregistered || st == rcubatch::reg_state::released)
      s_.violation(std::string("reader: ") + what + " reachable past its grace periods (state " +
                   std::string(rcubatch::to_string(st)) + ")");
  }

  template <class T>
  T* look(const rcubatch::read_guard<F>& guard, std::uint64_t id, bool hlist) {
    T* o = hlist ? reg_->template find<by_hlist<T, F>>(guard, id) : reg_->template find<by_lfht<T, F>>(guard, id);
    if (o != nullptr) s_.count(hlist ? combo::read_hit_hlist : combo::read_hit_lfht);
    return o;
  }

  struct held {
    kind k;
    life* obj;
    rcubatch::ref_token token;  // leaf: tracked
    bool untracked = false;
    std::uint64_t taken = 0;    // the reader's iteration: put a few iterations later
  };

  void put(held& h) {
    if (h.obj->magic != kAlive) s_.violation("reader: a held object was destroyed before its put");
    switch (h.k) {
      case k_top: static_cast<top*>(h.obj)->refs().put(); break;
      case k_mid: static_cast<mid*>(h.obj)->refs().put(); break;
      default:
        if (h.untracked) static_cast<leaf*>(h.obj)->refs().put();
        else static_cast<leaf*>(h.obj)->refs().put(h.token);
    }
  }

  void reader(unsigned i, unsigned epoch) {
    rcubatch::thread_registration<F> reg_thread;
    doing_slot& me = doing_[i];
    std::mt19937_64 rng(o_.seed * 31 + epoch * 1009 + i);
    std::deque<held> holds;
    const bool untracked = true;  // plain holds beside tracked ones on leaves (issue 34 item 4)
    std::vector<std::pair<kind, const life*>> seen;  // found in this section: re-checked at its end
    std::uint64_t iteration = 0;
    while (!stop_readers_.load(std::memory_order_acquire)) {
      ++iteration;
      me.set("reader: in a read section", epoch);
      seen.clear();
      {
        rcubatch::read_guard<F> guard;
        const std::uint64_t top_id = next_id_.load(std::memory_order_relaxed);
        for (int j = 0; j < 16; ++j) {
          const std::uint64_t id = top_id - 1 - rng() % std::min<std::uint64_t>(top_id - 1, 4096);
          const bool hl = rng() % 2 == 0;
          if (top* t = look<top>(guard, id, hl)) {
            check(t, "top");
            seen.emplace_back(k_top, t);
            if (!t->lone && rng() % 8 == 0) {
              t->refs().hold();
              holds.push_back({k_top, t, {}, false, iteration});
              s_.count(combo::hold_plain_top);
            }
          }
          if (mid* m = look<mid>(guard, id, hl)) {
            check(m, "mid");
            seen.emplace_back(k_mid, m);
            if (top* p = m->owner.parent()) check(p, "the top a found mid names");
            s_.count(combo::read_parent_checked);
            if (rng() % 8 == 0) {
              m->refs().hold();
              holds.push_back({k_mid, m, {}, false, iteration});
              s_.count(combo::hold_sharded_mid);
            }
          }
          if (leaf* l = look<leaf>(guard, id, hl)) {
            check(l, "leaf");
            seen.emplace_back(k_leaf, l);
            if (mid* p = l->owner.parent()) {
              check(p, "the mid a found leaf names");
              if (top* pp = p->owner.parent()) check(pp, "the top a found leaf's mid names");
              s_.count(combo::read_parent_checked);
            }
            if (rng() % 8 == 0) {
              if (untracked && rng() % 2 == 0) {
                l->refs().hold();
                holds.push_back({k_leaf, l, {}, true, iteration});
                s_.count(combo::hold_untracked_leaf);
              } else {
                holds.push_back({k_leaf, l, l->refs().hold("pairwise reader"), false, iteration});
                s_.count(combo::hold_tracked_leaf);
              }
            }
          }
        }
        // Everything found must still be intact at the section's end: this widens the window in
        // which an early free is seen from nanoseconds to the whole section.
        for (auto [k, o] : seen) {
          if (k == k_top) check(static_cast<const top*>(o), "top (at the section's end)");
          else if (k == k_mid) check(static_cast<const mid*>(o), "mid (at the section's end)");
          else check(static_cast<const leaf*>(o), "leaf (at the section's end)");
        }
      }
      me.set("reader: putting references", epoch);
      s_.c.lookups.fetch_add(16, std::memory_order_relaxed);
      // Holds last up to 4 iterations: long enough for drains to wait for them, never forever
      // (the epoch's teardown waits for every one of them while the readers run).
      while (!holds.empty() && holds.front().taken + 4 <= iteration) {
        put(holds.front());
        holds.pop_front();
      }
      rcubatch::quiescent_state<F>();
      std::this_thread::yield();  // 2 cores, more threads: let the writers and GP waiters run
    }
    for (held& h : holds) put(h);
  }

  // --- writers -------------------------------------------------------------------------------
  std::uint64_t fresh_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  template <class T>
  void created(T&) {
    s_.c.created[kind_of<T>()].fetch_add(1, std::memory_order_relaxed);
  }

  /// The model forgets o (and what hangs below it); its id becomes a dead key of the stripe.
  template <class T>
  void forget(stripe& st, T* o, bool deleted_now = true) {
    if (deleted_now) {  // (a call_rcu delete happens later: its key is not dead yet)
      st.dead_ids.push_back(o->id);
      if (st.dead_ids.size() > 64) st.dead_ids.erase(st.dead_ids.begin());
    }
    if constexpr (std::is_same_v<T, top>) {
      st.tops.erase(std::find(st.tops.begin(), st.tops.end(), o));
    } else if constexpr (std::is_same_v<T, mid>) {
      auto& v = o->model_parent->model_mids;
      v.erase(std::find(v.begin(), v.end(), o));
    } else {
      auto& v = o->model_parent->model_leaves;
      v.erase(std::find(v.begin(), v.end(), o));
    }
  }

  /// Calls fn with a random registered object of the stripe as its own type (top*, mid* or leaf*),
  /// after naming `what` in the thread's slot; nothing if the stripe has none.
  template <class Fn>
  void on_random_object(stripe& st, std::mt19937_64& rng, doing_slot& me, const char* what, Fn&& fn) {
    auto [k, p] = pick(st, rng);
    if (p == nullptr) return;
    me.set(what, p->id);
    if (k == k_top) fn(static_cast<top*>(p));
    else if (k == k_mid) fn(static_cast<mid*>(p));
    else fn(static_cast<leaf*>(p));
  }

  /// A random registered object of the stripe: its kind and pointer (nullptr if none).
  std::pair<kind, life*> pick(stripe& st, std::mt19937_64& rng, bool non_lone_top = false) {
    if (st.tops.empty()) return {k_top, nullptr};
    top* t = st.tops[rng() % st.tops.size()];
    if (non_lone_top && t->lone) return {k_top, nullptr};
    const unsigned depth = static_cast<unsigned>(rng() % 3);
    if (depth == 0 || t->model_mids.empty()) return {k_top, t};
    mid* m = t->model_mids[rng() % t->model_mids.size()];
    if (depth == 1 || m->model_leaves.empty()) return {k_mid, m};
    return {k_leaf, m->model_leaves[rng() % m->model_leaves.size()]};
  }

  void expect(bool ok, const char* what) {
    if (!ok) s_.violation(std::string("writer: ") + what);
  }

  template <class T>
  void delete_by_object(stripe& st, T* o, std::mt19937_64& rng) {
    constexpr kind k = kind_of<T>();
    forget(st, o);
    if (rng() % 2 == 0) {
      const auto stats = reg_->unregister(*o);
      expect(!stats.refused && stats.objects >= 1, "unregister(obj) of a registered object did not tear it down");
      s_.count(k == k_top ? combo::del_obj_unregister_top
                          : k == k_mid ? combo::del_obj_unregister_mid : combo::del_obj_unregister_leaf);
    } else {
      const auto r = reg_->try_unregister(*o);
      expect(r.status == rcubatch::unregister_status::unregistered, "try_unregister(obj) of a registered object");
      s_.count(k == k_top ? combo::del_obj_try_top : k == k_mid ? combo::del_obj_try_mid : combo::del_obj_try_leaf);
    }
  }

  template <class T>
  void delete_by_key(stripe& st, T* o, std::mt19937_64& rng) {
    constexpr kind k = kind_of<T>();
    const std::uint64_t id = o->id;
    forget(st, o);
    const bool hl = rng() % 2 == 0;
    const auto r = hl ? reg_->template try_unregister<by_hlist<T, F>>(id) : reg_->template try_unregister<by_lfht<T, F>>(id);
    expect(r.status == rcubatch::unregister_status::unregistered && r.unregistered == 1,
           "try_unregister<Index>(key) of a registered key");
    constexpr combo lf[] = {combo::del_key_lfht_top, combo::del_key_lfht_mid, combo::del_key_lfht_leaf};
    constexpr combo hc[] = {combo::del_key_hlist_top, combo::del_key_hlist_mid, combo::del_key_hlist_leaf};
    s_.count(hl ? hc[k] : lf[k]);
  }

  void delete_dead_key(stripe& st, std::mt19937_64& rng) {
    if (st.dead_ids.empty()) return;
    const std::uint64_t id = st.dead_ids[rng() % st.dead_ids.size()];
    // The id was a top's, a mid's or a leaf's: look it up in every type; none may find it.
    const bool hl = rng() % 2 == 0;
    rcubatch::unregister_result r[3];
    if (hl) {
      r[0] = reg_->template try_unregister<by_hlist<top, F>>(id);
      r[1] = reg_->template try_unregister<by_hlist<mid, F>>(id);
      r[2] = reg_->template try_unregister<by_hlist<leaf, F>>(id);
    } else {
      r[0] = reg_->template try_unregister<by_lfht<top, F>>(id);
      r[1] = reg_->template try_unregister<by_lfht<mid, F>>(id);
      r[2] = reg_->template try_unregister<by_lfht<leaf, F>>(id);
    }
    for (const auto& x : r) {
      expect(x.status == rcubatch::unregister_status::not_found, "try_unregister<Index>(dead key) found an object");
      expect(x.stats.grace_periods == 0, "try_unregister<Index>(dead key) waited for a grace period");
    }
    s_.count(hl ? combo::del_key_dead_hlist : combo::del_key_dead_lfht);
  }

  template <class T>
  void replace_one(stripe& st, T* o) {
    constexpr kind k = kind_of<T>();
    T* n = new T;
    n->id = o->id;
    if constexpr (k == k_top) n->lone = o->lone;
    if (!reg_->replace(*o, *n).replaced) {
      s_.violation(std::string("replace of a registered ") + kKindNames[k] + " refused");
      delete n;
      return;
    }
    created(*n);
    // The model: n takes o's place; o's children went with o.
    if constexpr (k == k_top) {
      *std::find(st.tops.begin(), st.tops.end(), o) = n;
    } else if constexpr (k == k_mid) {
      n->model_parent = o->model_parent;
      auto& v = o->model_parent->model_mids;
      *std::find(v.begin(), v.end(), o) = n;
    } else {
      n->model_parent = o->model_parent;
      auto& v = o->model_parent->model_leaves;
      *std::find(v.begin(), v.end(), o) = n;
    }
    s_.count(k == k_top ? combo::replace_top : k == k_mid ? combo::replace_mid : combo::replace_leaf);
  }

  /// replace_with_children of a top (its mids: some new ones take an old mid's key) or of a mid
  /// (its leaves: the new mid takes the old one's place in its top's list, issue 34 item 1).
  template <class P, class C>
  void replace_family(stripe& st, P* o, std::mt19937_64& rng) {
    P* n = new P;
    n->id = o->id;
    std::vector<C*> kids;
    auto& old_kids = [&]() -> std::vector<C*>& {
      if constexpr (std::is_same_v<P, top>) return o->model_mids;
      else return o->model_leaves;
    }();
    for (C* c : old_kids)
      if (rng() % 2 == 0) {
        kids.push_back(new C);
        kids.back()->id = c->id;  // takes the old child's place
      }
    for (unsigned j = static_cast<unsigned>(rng() % 3); j > 0; --j) {
      kids.push_back(new C);
      kids.back()->id = fresh_id();
    }
    const auto r = reg_->replace_with_children(*o, *n, kids);
    if (!r.replaced) {
      s_.violation(std::string("replace_with_children of a registered ") + kKindNames[kind_of<P>()] +
                   " and its children refused");
      for (C* c : kids) delete c;
      delete n;
      return;
    }
    created(*n);
    for (C* c : kids) {
      created(*c);
      c->model_parent = n;
    }
    if constexpr (std::is_same_v<P, top>) {
      *std::find(st.tops.begin(), st.tops.end(), o) = n;
      n->model_mids = std::move(kids);
      s_.count(combo::replace_with_children_top);
    } else {
      n->model_parent = o->model_parent;
      auto& v = o->model_parent->model_mids;
      *std::find(v.begin(), v.end(), o) = n;
      n->model_leaves = std::move(kids);
      s_.count(combo::replace_with_children_mid);
    }
  }

  static void deferred(rcu_head* h) {
    auto* d = reinterpret_cast<deferred_delete*>(h);
    static_cast<run*>(d->run)->run_deferred(*d);
    delete d;
  }
  void run_deferred(const deferred_delete& d) {
    // On liburcu's call_rcu worker, through call_after_grace_period (flavor.hpp), which marks the
    // worker registered (a raw F::call would make the registry's read sections diagnose
    // reader_not_registered) and gives TSan the edges the raw call lacks.
    doing_slot& me = doing_[o_.readers + o_.writers];
    const std::uint64_t id = d.obj->id;  // d.obj is alive: only this callback deletes it
    static constexpr const char* kWhat[] = {
        "call_rcu callback: try_unregister(obj) of a top", "call_rcu callback: try_unregister<Index>(key) of a top",
        "call_rcu callback: replace of a top, then try_unregister(new)",
        "call_rcu callback: replace_with_children of a top, then try_unregister(new)"};
    me.set(kWhat[d.what], id);
    switch (d.what) {
      case deferred_delete::by_key: {
        const auto r = d.via_hlist ? reg_->template try_unregister<by_hlist<top, F>>(id)
                                   : reg_->template try_unregister<by_lfht<top, F>>(id);
        expect(r.status == rcubatch::unregister_status::unregistered, "call_rcu callback: try_unregister<Index>(key)");
        break;
      }
      case deferred_delete::by_object: {
        const auto r = reg_->try_unregister(*d.obj);
        expect(r.status == rcubatch::unregister_status::unregistered, "call_rcu callback: try_unregister(obj)");
        break;
      }
      default: {  // a replace (plain, or with an empty set of children), then the new one goes too
        top* n = new top;
        n->id = id;
        n->lone = true;
        bool ok = false;
        if (d.what == deferred_delete::replace) {
          ok = reg_->replace(*d.obj, *n).replaced;
        } else {
          std::vector<mid*> none;
          ok = reg_->replace_with_children(*d.obj, *n, none).replaced;
        }
        expect(ok, "call_rcu callback: replace of a registered top refused");
        if (!ok) {
          delete n;
          break;
        }
        created(*n);
        const auto r = reg_->try_unregister(*n);
        expect(r.status == rcubatch::unregister_status::unregistered, "call_rcu callback: try_unregister(new)");
      }
    }
    me.set("call_rcu callback: returned", id);
    s_.c.progress.fetch_add(1, std::memory_order_relaxed);
    // Release: the epoch's end acquires it after grace_domain::barrier(), whose wait goes through
    // liburcu and gives ThreadSanitizer no edge from this callback's work (the registry's mutex it
    // locked) to the main thread that then destroys the registry.
    deferred_done_.fetch_add(1, std::memory_order_release);
  }

  /// Hands a top to a call_rcu callback that deletes it (by key or by object).
  void defer_delete(stripe& st, top* t, std::mt19937_64& rng) {
    forget(st, t, false);
    auto* d = new deferred_delete{{}, this, t, static_cast<deferred_delete::what_kind>(rng() % 4), rng() % 2 == 0};
    if (!t->lone && d->what >= deferred_delete::replace) d->what = deferred_delete::by_object;
    constexpr combo kLone[] = {combo::call_rcu_del_obj_lone_top, combo::call_rcu_del_key_lone_top,
                               combo::call_rcu_replace_lone_top, combo::call_rcu_replace_with_children_lone_top};
    if (t->lone && !hold_lock_) s_.count(kLone[d->what]);
    deferred_queued_.fetch_add(1, std::memory_order_relaxed);
    rcubatch::call_after_grace_period<F, &run::deferred>(&d->head);  // d and t belong to the callback now
  }

  /// A new C (mid or leaf) under `parent`, named by its owner_hook: add links it into the
  /// parent's owned list. At most 4 children per parent.
  template <class C, class P>
  void add_child(P& parent, doing_slot& me) {
    auto& kids = [&]() -> std::vector<C*>& {
      if constexpr (std::is_same_v<C, mid>) return parent.model_mids;
      else return parent.model_leaves;
    }();
    if (kids.size() >= 4) return;
    C* c = new C;
    c->id = fresh_id();
    c->owner.set_parent(parent);
    me.set(std::is_same_v<C, mid> ? "writer: add(mid) under its top" : "writer: add(leaf) under its mid", c->id);
    if (!reg_->add(*c)) {
      s_.violation(std::string("add(") + kKindNames[kind_of<C>()] + ") under a registered parent refused");
      delete c;
      return;
    }
    created(*c);
    c->model_parent = &parent;
    kids.push_back(c);
    s_.count(std::is_same_v<C, mid> ? combo::add_mid : combo::add_leaf);
  }

  void writer_op(stripe& st, std::mt19937_64& rng, doing_slot& me) {
    const unsigned op = static_cast<unsigned>(rng() % 16);
    switch (op) {
      case 0:
      case 1: {  // add a top
        if (st.tops.size() >= 8) return;
        top* t = new top;
        t->id = fresh_id();
        t->lone = rng() % 4 == 0;
        me.set("writer: add(top)", t->id);
        if (!reg_->add(*t)) {
          s_.violation("add(top) with a fresh id refused");
          delete t;
          return;
        }
        created(*t);
        st.tops.push_back(t);
        s_.count(t->lone ? combo::add_lone_top : combo::add_top);
        return;
      }
      case 2:
      case 3: {  // add a mid under a top
        auto [k, p] = pick(st, rng, true);
        if (p != nullptr && k == k_top) add_child<mid>(*static_cast<top*>(p), me);
        return;
      }
      case 4:
      case 5: {  // add a leaf under a mid (depth 2)
        auto [k, p] = pick(st, rng, true);
        if (p != nullptr && k == k_mid) add_child<leaf>(*static_cast<mid*>(p), me);
        return;
      }
      case 6:
      case 7:
        on_random_object(st, rng, me, "writer: delete by object", [&](auto* o) { delete_by_object(st, o, rng); });
        return;
      case 8:
      case 9:
        on_random_object(st, rng, me, "writer: delete by key", [&](auto* o) { delete_by_key(st, o, rng); });
        return;
      case 10:
        me.set("writer: delete by a dead key");
        delete_dead_key(st, rng);
        return;
      case 11:
      case 12:
        on_random_object(st, rng, me, "writer: replace", [&](auto* o) { replace_one(st, o); });
        return;
      case 13: {
        auto [k, p] = pick(st, rng, true);
        if (p == nullptr) return;
        if (k == k_top) {
          me.set("writer: replace_with_children(top)", p->id);
          replace_family<top, mid>(st, static_cast<top*>(p), rng);
        } else if (k == k_mid) {
          me.set("writer: replace_with_children(mid)", p->id);
          replace_family<mid, leaf>(st, static_cast<mid*>(p), rng);
        }
        return;
      }
      default: {  // 14, 15: a delete from a call_rcu callback
        if (st.tops.empty()) return;
        top* t = st.tops[rng() % st.tops.size()];
        const bool held_family = !t->lone;
        if (held_family) s_.count(combo::call_rcu_del_held_object);
        if (hold_lock_) s_.count(combo::call_rcu_del_under_hold_lock_through_drain);
        me.set("writer: call_rcu(delete a top)", t->id);
        defer_delete(st, t, rng);
        return;
      }
    }
  }

  void writer(unsigned i, unsigned epoch) {
    rcubatch::thread_registration<F> reg_thread;  // online throughout, as users write it
    doing_slot& me = doing_[o_.readers + i];
    std::mt19937_64 rng(o_.seed * 37 + epoch * 7919 + i);
    auto& stripes = *stripes_;
    while (!stop_writers_.load(std::memory_order_acquire)) {
      stripe& st = stripes[rng() % stripes.size()];
      if (st.m.try_lock()) {  // never blocks: another writer owns that stripe now
        writer_op(st, rng, me);
        st.m.unlock();
        s_.c.progress.fetch_add(1, std::memory_order_relaxed);
      }
      me.set("writer: between operations", epoch);
      rcubatch::quiescent_state<F>();  // qsbr: holds no protected pointer here
    }
  }

  // --- watchdog ------------------------------------------------------------------------------
  void watchdog() {
    std::unique_lock lock(dog_mutex_);
    std::uint64_t last = ~std::uint64_t{0};
    auto last_change = clock_type::now();
    while (!finished_) {
      // Sampling, not synchronization: progress is checked once a second.
      dog_cv_.wait_for(lock, std::chrono::seconds(1));
      // Writers' operations, call_rcu deletes and the epochs' steps: not the readers' lookups,
      // which go on while every writer is deadlocked.
      const std::uint64_t now = s_.c.progress.load();
      if (now != last) {
        last = now;
        last_change = clock_type::now();
        continue;
      }
      if (finished_ || clock_type::now() - last_change < std::chrono::seconds(o_.stall)) continue;
      std::fprintf(stderr, "rcubatch_pairwise: watchdog: no operation completed in %u s (flavor %s, %s); threads:\n",
                   o_.stall, std::string(F::name).c_str(),
                   hold_lock_ ? "hold_lock_through_drain" : "lock dropped for the drain");
      for (std::size_t t = 0; t < doing_.size(); ++t)
        std::fprintf(stderr, "  thread %zu: %s (id/epoch %" PRIu64 ")\n", t, doing_[t].what.load(), doing_[t].id.load());
      std::fflush(stderr);
      std::abort();
    }
  }

  // --- report --------------------------------------------------------------------------------
  int report(unsigned epochs) {
    auto& c = s_.c;
    std::uint64_t created = 0, destroyed = 0;
    for (unsigned k = 0; k < kKinds; ++k) created += c.created[k].load(), destroyed += c.destroyed[k].load();
    for (std::size_t k = 0; k < rcubatch::kMisuseKinds; ++k)
      if (rcubatch::misuse_count(static_cast<rcubatch::misuse_kind>(k)) != 0)
        s_.violation("misuse diagnosed: " + std::string(rcubatch::to_string(static_cast<rcubatch::misuse_kind>(k))));
    std::printf("rcubatch_pairwise flavor=%s seconds=%.1f epochs=%u readers=%u writers=%u stripes=%u seed=%" PRIu64 "\n",
                std::string(F::name).c_str(), o_.seconds, epochs, o_.readers, o_.writers, o_.stripes, o_.seed);
    std::printf("  ops per combination:\n");
    for (std::size_t k = 0; k < kComboNames.size(); ++k) {
      std::printf("    %-44s %12" PRIu64 "\n", kComboNames[k], c.ops[k].load());
    }
    std::printf("  lookups=%" PRIu64 " operations=%" PRIu64 "\n", c.lookups.load(), c.progress.load());
    for (unsigned k = 0; k < kKinds; ++k)
      std::printf("  %-4s created=%" PRIu64 " destroyed=%" PRIu64 "\n", kKindNames[k], c.created[k].load(),
                  c.destroyed[k].load());
    std::printf("  created=%" PRIu64 " destroyed=%" PRIu64 " violations=%" PRIu64 "\n", created, destroyed,
                c.violations.load());
    for (const auto& m : s_.messages) std::printf("  VIOLATION: %s\n", m.c_str());
    if (c.violations.load() != 0) {
      std::printf("FAILED\n");
      return 1;
    }
    // The checks prove something only if the run reached objects and held some.
    if (c.lookups.load() == 0 || c.ops[static_cast<std::size_t>(combo::read_hit_lfht)].load() == 0 ||
        c.ops[static_cast<std::size_t>(combo::hold_tracked_leaf)].load() == 0 || created == 0) {
      std::printf("FAILED: the readers never reached or held an object (the checks were vacuous)\n");
      return 1;
    }
    std::printf("OK\n");
    return 0;
  }

  const options& o_;
  shared s_;
  rcubatch::grace_domain<F> domain_;
  std::vector<doing_slot> doing_;  // readers, writers, the call_rcu callbacks, main
  registry* reg_ = nullptr;
  std::vector<stripe>* stripes_ = nullptr;
  std::atomic<bool> hold_lock_{false};  // this epoch's registry_options::hold_lock_through_drain
  std::atomic<bool> stop_writers_{false}, stop_readers_{false};
  std::atomic<std::uint64_t> next_id_{2};
  std::atomic<std::uint64_t> deferred_queued_{0}, deferred_done_{0};  // call_rcu deletes queued, run
  std::mutex dog_mutex_;
  std::condition_variable dog_cv_;
  bool finished_ = false;
};

}  // namespace
}  // namespace pairwise

int main(int argc, char** argv) {
  const pairwise::options o = pairwise::parse(argc, argv);
  rcubatch::set_misuse_reporter(&pairwise::misuse_is_fatal);
  rcubatch::set_misuse_policy(rcubatch::misuse_policy::abort_process);
  return rcubatch::with_flavor(
      o.flavor, [&]<class F>(std::type_identity<F>) { return pairwise::run<F>(o).go(); },
      [](const rcubatch::unknown_flavor& e) { return std::fprintf(stderr, "rcubatch_pairwise: %s\n", e.what()), 2; });
}
