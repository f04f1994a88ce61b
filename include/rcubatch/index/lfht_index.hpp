// rcubatch/index/lfht_index.hpp — a typed RCU hash index over liburcu's rculfhash.
//
//   struct session : rcubatch::registrable<session> {
//     std::string name;                                   // the key: fixed before add
//     rcubatch::lfht_hook<session> by_name_hook;          // one hook per index the object is in
//   };
//   using by_name = rcubatch::lfht_index<session, &session::by_name_hook,
//                                        rcubatch::key_member<&session::name>>;
//   by_name index;                                        // default flavor, grows as it fills
//
//   auto* s = new session;
//   s->name = "alice";
//   index.add_unique(*s);                  // writer: false if the name is taken
//   {
//     rcubatch::read_guard<> guard;        // reader
//     if (session* found = index.find("alice")) use(*found);  // valid until the guard ends
//   }
//   index.unlink(*s);                      // writer; free s only after a grace period
//   (compiled in tests/header_examples_test.cpp)
//
// A multi-index (several objects per key, e.g. routes of one prefix in different tables): link
// with add() instead of add_unique(), and visit a key's objects with for_each_equal(key, f).
//
// The hook stores its owner, so lookups never need offsetof on T: types deriving from
// registrable are not standard-layout, and container_of on them is not portable. Keys are read
// through KeyOf (a functor `const T& -> key`), hashed with Hash and compared with KeyEqual; the
// defaults handle strings (any type convertible to std::string_view, so a std::string key can be
// looked up with a string_view or a literal) and integers or enums.
//
// Thread safety / memory ordering: updates (add_unique, add, add_or_replace, replace, unlink,
// resize, grow_if_needed) may come from several writers at once with no common lock, as rculfhash
// allows — the index's own bookkeeping (size(), the bucket count, each hook's link mark) is
// atomic, and rculfhash decides every race: of two add_unique of one key one links, of two unlinks
// of one object one returns true, an unlink racing add_or_replace/replace of its object loses to
// it or wins (and the replace returns false). Requires: each object is added by one writer (its
// hook is that writer's until add returns), and the caller keeps an object alive while it passes
// it to a member. A registry serializes its writers anyway (its writer lock). find and iteration
// run concurrently with all of them from any registered thread inside a read_guard<Flavor>. rculfhash needs the read lock
// even for updates: the update members take it themselves (nesting inside the caller's guard is
// fine). Everything the writer wrote into an object before adding it is visible to a reader that
// finds it; the ThreadSanitizer edges for that (annotate_publish / annotate_subscribe) are built in.
// The key and everything readers read must not change while the object is linked.
//
// Misuse: a thread must be registered with Flavor (qsbr: and online) before calling any member
// but the constructor and size(). find/begin outside a read_guard, and updates from an offline
// qsbr thread, abort with a sentence when RCUBATCH_INDEX_CHECKS is on (the default in every build,
// NDEBUG included; define it to 0 to opt out). Adding an object whose hook is already linked, resizing inside
// a read section and destroying a non-empty index are diagnosed through misuse.hpp's policy.
// Never free an unlinked object, nor add it again, before a grace period has passed.
//
// Cost: a lookup is one rculfhash lookup (hash, one bucket walk, a KeyEqual per node of the same
// hash) plus, with checks on, at most one thread-local read and a not-taken branch. Measured
// 2026-12-03 07:39-07:43 UTC (g++ -O2 -DNDEBUG, memb, 10,000 keys in 16,384 buckets, 100 x 10,000
// finds, a scratch probe): callgrind counts +3.6 instructions per find for int keys with one
// read_guard per 16 finds (173.5 vs 169.9), +1.0 with one guard per find (the guard's own depth
// update sets the flags the check tests), +3.4 / +4.0 for string keys "devN" (280.5 vs 277.1,
// 361.1 vs 357.1); in time, 30 interleaved rounds per case at load 4-6 gave median ratios
// 0.94-1.07 with no consistent sign: below this VM's noise. Growth decides the rest.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rcubatch/annotate.hpp"
#include "rcubatch/detail/probe.hpp"
#include "rcubatch/flavor.hpp"  // the liburcu flavor headers must precede rculfhash.h
#include "rcubatch/fwd.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/read_guard.hpp"
#include "rcubatch/index/index_checks.hpp"   // RCUBATCH_INDEX_CHECKS and the shared checks
#include "rcubatch/index/key_of.hpp"          // key_member, key_members, lfht_hash
#include "rcubatch/index/runtime_flavor.hpp"  // lfht_runtime_flavor, lfht_flavor

#include <urcu/rculfhash.h>

namespace rcubatch {

/// The member an object embeds once per lfht_index it can be in. Standard-layout on purpose: the
/// index gets from rculfhash's node to the hook with a cast, and from the hook to the owner with
/// the pointer the hook carries. Not copyable: a copy would not be linked.
template <class T>
struct lfht_hook {
  lfht_hook() = default;
  lfht_hook(const lfht_hook&) = delete;
  lfht_hook& operator=(const lfht_hook&) = delete;

  /// True while the object is linked in an index (writer side: read it under the writer lock).
  bool is_linked() const noexcept { return linked_in_.load(std::memory_order_relaxed) != nullptr; }

  /// lfht_index's bookkeeping, read and written by the index only: not for users.
  ///@{
  cds_lfht_node node_{};         // first member: rculfhash hands back &node_
  T* owner_ = nullptr;           // set before publication, never changed while readers can see it
  std::atomic<const void*> linked_in_{nullptr};  // the index it is linked in; writers only (any number, relaxed: rculfhash orders the links)
  ///@}
};

/// How an index's bucket array follows its size.
enum class lfht_growth : unsigned char {
  /// The writer doubles the buckets inside the add that makes size() exceed them (outside read
  /// sections; an add inside the caller's guard defers it to the next update outside one, or to
  /// grow_if_needed()). Never shrinks, so a mass unlink runs no resize and no grace period.
  on_add,
  /// CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING: liburcu's resize worker grows and shrinks; each
  /// shrink step waits for a grace period in that worker, and a mass unlink shrinks in steps
  /// (netdev measured that competing with the batch's own grace periods). Caveat, 0.13.2: filling
  /// a 1-bucket table with 40,000 objects from a thread pinned to one CPU, the table stopped
  /// growing in 1 of 14 runs, the worker idle and the adds walking ever longer chains; by the
  /// source, __cds_lfht_resize_lazy_launch sets resize_initiated after queueing the work, so a
  /// worker that finishes first leaves it set and no resize is launched again.
  automatic,
  /// Only resize() changes the bucket count.
  manual,
};

/// Sizing. Every count is a bucket count and a power of two (0 for max_buckets: no limit).
struct lfht_options {
  unsigned long initial_buckets = 16;  ///< buckets at creation
  /// Bucket arrays kept allocated (rculfhash min_nr_alloc_buckets), and the floor of resize();
  /// 0.13.2's automatic shrink goes below it (it only keeps the arrays).
  unsigned long min_buckets = 1;
  unsigned long max_buckets = 0;   ///< growth stops here; 0: rculfhash's own limit
  lfht_growth growth = lfht_growth::on_add;  ///< who grows the table (lfht_growth)
};

namespace detail {
/// Nanoseconds spent in lfht_index resizes run by the caller's thread, all indexes together.
/// Relaxed: a statistic; indexes of several writers may resize at once.
inline std::atomic<std::int64_t> lfht_resize_ns{0};
}  // namespace detail

/// Effects: the wall time all lfht_index objects of the process have spent resizing in the calling
/// threads (on_add growth, grow_if_needed, resize), since the process started. rculfhash fills each
/// new bucket order of >= 8,192 buckets in helper threads (one per CPU) and joins them, so this time
/// is mostly not the caller's CPU time: a program can tell that wait apart from preemption (netsim's
/// `time` prints it). lfht_growth::automatic resizes run in liburcu's worker and are not counted.
/// Complexity: O(1). Thread safety: any thread; the value is a relaxed sum.
inline std::chrono::nanoseconds lfht_total_resize_time() noexcept {
  return std::chrono::nanoseconds(detail::lfht_resize_ns.load(std::memory_order_relaxed));
}


/// Defaults (fwd.hpp): Flavor = default_flavor, Hash = lfht_hash, KeyEqual = std::equal_to<>.
template <class T, lfht_hook<T> T::*Hook, class KeyOf, class Flavor, class Hash, class KeyEqual>
class lfht_index {
  static constexpr bool kRuntimeFlavor = std::is_same_v<Flavor, lfht_runtime_flavor>;
  static_assert(kRuntimeFlavor || lfht_flavor<Flavor>,
                "lfht_index<..., Flavor>: Flavor must be a liburcu flavor (rcubatch::flavor::memb, qsbr, mb or "
                "bp; rculfhash needs F::table()) or lfht_runtime_flavor.");
  static_assert(std::is_invocable_v<const KeyOf&, const T&>,
                "lfht_index: KeyOf must be callable as key_of(const T&) and return the key.");

 public:
  using value_type = T;  ///< the indexed objects' type
  using key_type = std::remove_cvref_t<std::invoke_result_t<const KeyOf&, const T&>>;  ///< what KeyOf returns
  using flavor_type = Flavor;  ///< the liburcu flavor readers and rculfhash use

  /// Effects: creates the rculfhash table. Throws: std::invalid_argument naming the option that
  /// is not a power of two (or min_buckets > max_buckets); std::bad_alloc. Needs no registration.
  explicit lfht_index(lfht_options options = {}, KeyOf key_of = {}, Hash hash = {}, KeyEqual equal = {})
    requires(!kRuntimeFlavor)
      : lfht_index(nullptr, options, std::move(key_of), std::move(hash), std::move(equal)) {}

  /// lfht_runtime_flavor only: as above, on the flavor `flavor` describes (lfht_runtime_flavor::of<F>()).
  /// Requires: `flavor` outlives the index (of<F>()'s objects are static).
  explicit lfht_index(const lfht_runtime_flavor& flavor, lfht_options options = {}, KeyOf key_of = {}, Hash hash = {},
                      KeyEqual equal = {})
    requires kRuntimeFlavor
      : lfht_index(&flavor, options, std::move(key_of), std::move(hash), std::move(equal)) {}

 private:
  lfht_index(const lfht_runtime_flavor* runtime, lfht_options options, KeyOf key_of, Hash hash, KeyEqual equal)
      : key_of_(std::move(key_of)), hash_(std::move(hash)), equal_(std::move(equal)), options_(options), runtime_(runtime) {
    check_power_of_two(options.initial_buckets, "initial_buckets");
    check_power_of_two(options.min_buckets, "min_buckets");
    if (options.max_buckets != 0) {
      check_power_of_two(options.max_buckets, "max_buckets");
      if (options.min_buckets > options.max_buckets)
        throw std::invalid_argument("rcubatch::lfht_index: min_buckets is larger than max_buckets");
    }
    const int flags = options.growth == lfht_growth::automatic ? CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING : 0;
    const unsigned long initial = options.max_buckets != 0 && options.initial_buckets > options.max_buckets
                                      ? options.max_buckets
                                      : options.initial_buckets;
    buckets_.store(initial, std::memory_order_relaxed);
    table_ = cds_lfht_new_flavor(initial, options.min_buckets, options.max_buckets, flags, flavor_table(), nullptr);
    if (table_ == nullptr) throw std::bad_alloc();
  }

 public:

  /// Requires: no thread can reach the index any more; with lfht_growth::automatic, the caller is
  /// outside read sections (liburcu's destroy waits for a running shrink, which waits for them).
  /// Effects: frees the table. A qsbr caller is taken offline for the wait and back online.
  /// Misuse: a non-empty index is reported (destroyed_while_linked) and its objects unlinked, not
  /// freed (they are the caller's); a destroy that could deadlock is reported
  /// (blocking_in_read_section) and the table leaked. Blocking: automatic growth only, see above.
  ~lfht_index() {
    if (size() != 0) {
      detail::diagnose_noexcept(misuse_kind::destroyed_while_linked,
                                "lfht_index destroyed with " + std::to_string(size()) +
                                    " objects still linked: they are unlinked, not freed");
      with_read_lock([&]() noexcept {
        cds_lfht_iter it;
        for (cds_lfht_first(table_, &it); cds_lfht_iter_get_node(&it) != nullptr; cds_lfht_next(table_, &it)) {
          cds_lfht_node* n = cds_lfht_iter_get_node(&it);
          if (cds_lfht_del(table_, n) == 0) hook_of(n)->linked_in_.store(nullptr, std::memory_order_relaxed);
        }
      });
    }
    if (options_.growth == lfht_growth::automatic && in_section()) {
      detail::diagnose_noexcept(misuse_kind::blocking_in_read_section,
                                "lfht_index with automatic growth destroyed inside a read section of " +
                                    std::string(flavor_name()) + ": it could deadlock, so its table is leaked");
      return;
    }
    if (quiescent_state_based() && read_ongoing()) {  // online: a resize worker's grace period would wait for us
      with_thread_offline([&]() noexcept { cds_lfht_destroy(table_, nullptr); });
      return;
    }
    cds_lfht_destroy(table_, nullptr);
  }

  lfht_index(const lfht_index&) = delete;
  lfht_index& operator=(const lfht_index&) = delete;

  // --- Writer side: concurrent writers allowed (file comment); each takes the read lock itself --

  /// Requires: obj's hook is not linked; its key and reader-visible fields are initialized.
  /// Effects: links obj unless an object with an equal key is linked; returns whether it did. On
  /// false nothing changed (obj may be freed or reused at once). Misuse: a linked hook is
  /// diagnosed (register_twice) and nothing changes. Complexity: O(1) expected, plus a growth
  /// step (lfht_growth::on_add). Blocking: never waits for a grace period.
  bool add_unique(T& obj) {
    if (!check_unlinked(obj, "add_unique")) return false;
    lfht_hook<T>& h = obj.*Hook;
    const auto& key = key_of_(obj);
    const probe<key_type> p{this, &key};
    h.owner_ = &obj;
    cds_lfht_node* in = nullptr;
    {
      check_online("add_unique");  // before the guard, which would bring an offline thread online
      with_read_lock([&]() noexcept {
        annotate_publish(&h.node_);  // liburcu's publication is invisible to TSan
        in = cds_lfht_add_unique(table_, hash_(key), &match_key<key_type>, &p, &h.node_);
      });
    }
    if (in != &h.node_) return false;
    linked(h);
    return true;
  }

  /// Requires, Misuse, Complexity: as add_unique. Effects: links obj even if objects with an
  /// equal key are linked (rculfhash's cds_lfht_add): the index becomes a multi-index for that
  /// key — find returns one of them, for_each_equal visits them all. Returns false only on the
  /// misuse (a linked hook). Blocking: never waits for a grace period.
  bool add(T& obj) {
    if (!check_unlinked(obj, "add")) return false;
    lfht_hook<T>& h = obj.*Hook;
    const unsigned long hv = hash_(key_of_(obj));
    h.owner_ = &obj;
    {
      check_online("add");  // before the guard, which would bring an offline thread online
      with_read_lock([&]() noexcept {
        annotate_publish(&h.node_);
        cds_lfht_add(table_, hv, &h.node_);
      });
    }
    linked(h);
    return true;
  }

  /// Requires, Misuse, Complexity: as add_unique. Effects: links obj; an object with an equal key
  /// is unlinked in the same step (readers see one or the other, never neither) and returned, to
  /// be freed after a grace period; nullptr if there was none.
  T* add_or_replace(T& obj) {
    if (!check_unlinked(obj, "add_or_replace")) return nullptr;
    lfht_hook<T>& h = obj.*Hook;
    const auto& key = key_of_(obj);
    const probe<key_type> p{this, &key};
    h.owner_ = &obj;
    cds_lfht_node* old = nullptr;
    {
      check_online("add_or_replace");  // before the guard, which would bring an offline thread online
      with_read_lock([&]() noexcept {
        annotate_publish(&h.node_);
        old = cds_lfht_add_replace(table_, hash_(key), &match_key<key_type>, &p, &h.node_);
      });
    }
    if (old == nullptr) {
      linked(h);
      return nullptr;
    }
    h.linked_in_.store(this, std::memory_order_relaxed);  // took old's place: the size is unchanged
    hook_of(old)->linked_in_.store(nullptr, std::memory_order_relaxed);
    return hook_of(old)->owner_;
  }

  /// Requires: as add_unique for new_obj. Effects: if old_obj is linked here, puts new_obj in its
  /// place atomically (readers see one or the other) and returns true; free old_obj after a grace
  /// period. Returns false, changing nothing, if old_obj is not linked here. Throws:
  /// std::invalid_argument if the keys differ (nothing changed). Complexity: O(1) expected.
  bool replace(T& old_obj, T& new_obj) {
    lfht_hook<T>& old_h = old_obj.*Hook;
    if (old_h.linked_in_.load(std::memory_order_relaxed) != this) return false;
    if (!check_unlinked(new_obj, "replace")) return false;
    const auto& key = key_of_(new_obj);
    if (!equal_(key_of_(old_obj), key))
      throw std::invalid_argument("rcubatch::lfht_index::replace: the new object's key differs from the old one's");
    lfht_hook<T>& h = new_obj.*Hook;
    const probe<key_type> p{this, &key};
    const unsigned long hv = hash_(key);
    h.owner_ = &new_obj;
    int rc = 0;
    {
      check_online("replace");  // before the guard, which would bring an offline thread online
      with_read_lock([&]() noexcept {
        cds_lfht_iter it;  // cds_lfht_replace wants an iterator on the old node
        cds_lfht_lookup(table_, hv, &match_node, &old_h.node_, &it);
        annotate_publish(&h.node_);
        rc = cds_lfht_replace(table_, &it, hv, &match_key<key_type>, &p, &h.node_);
      });
    }
    if (rc != 0) return false;  // only a concurrent writer could cause it: outside the contract
    old_h.linked_in_.store(nullptr, std::memory_order_relaxed);
    h.linked_in_.store(this, std::memory_order_relaxed);
    return true;
  }

  /// Effects: true when obj is linked in this index (not in another one, nor in none). Writer
  /// side (under the writer lock); readers never need it. Complexity: O(1), no lookup.
  bool holds(const T& obj) const noexcept { return (obj.*Hook).linked_in_.load(std::memory_order_relaxed) == this; }

  /// Effects: if obj is linked here, unlinks it and returns true; readers already inside a read
  /// section may still find it, so free it (or add it again) only after a grace period. Returns
  /// false if it was not linked here. Never frees. Complexity: O(1) expected. Blocking: never.
  bool unlink(T& obj) noexcept {
    lfht_hook<T>& h = obj.*Hook;
    if (h.linked_in_.load(std::memory_order_relaxed) != this) return false;
    int rc = 0;
    {
      check_online("unlink");  // before the guard, which would bring an offline thread online
      with_read_lock([&]() noexcept { rc = cds_lfht_del(table_, &h.node_); });
    }
    if (rc != 0) return false;
    h.linked_in_.store(nullptr, std::memory_order_relaxed);  // owner_ stays: a reader may still be reading it
    size_.fetch_sub(1, std::memory_order_relaxed);  // an RMW: writers may race (a load and a store lost updates)
    return true;
  }

  /// Requires: outside read sections (misuse otherwise: blocking_in_read_section, nothing done).
  /// Effects: sets the bucket count to the power of two at or above `buckets` (within min/max),
  /// in this thread. Blocking: a shrink waits for a grace period per halving.
  void resize(unsigned long buckets) {
    if (in_section()) {
      detail::diagnose(misuse_kind::blocking_in_read_section,
                       "lfht_index::resize called inside a read section of " + std::string(flavor_name()) +
                           ": a shrink waits for a grace period");
      return;
    }
    unsigned long n = std::bit_ceil(buckets == 0 ? 1UL : buckets);
    if (n < options_.min_buckets) n = options_.min_buckets;
    if (options_.max_buckets != 0 && n > options_.max_buckets) n = options_.max_buckets;
    buckets_.store(n, std::memory_order_relaxed);
    timed_resize(n);
  }

  /// lfht_growth::on_add: runs the growth an add inside a read section deferred. Requires:
  /// outside read sections. Otherwise a no-op. Complexity: amortized O(1) per add.
  void grow_if_needed() {
    if (options_.growth != lfht_growth::on_add || in_section()) return;
    const std::size_t n = size();
    unsigned long b = buckets_.load(std::memory_order_relaxed);
    if (n <= b || (options_.max_buckets != 0 && b >= options_.max_buckets)) return;
    unsigned long target = std::bit_ceil(static_cast<unsigned long>(n));
    if (options_.max_buckets != 0 && target > options_.max_buckets) target = options_.max_buckets;
    // Of concurrent writers past the same size, one grows (rculfhash serializes resizes anyway).
    if (!buckets_.compare_exchange_strong(b, target, std::memory_order_relaxed)) return;
    timed_resize(target);  // grows in this thread: no grace period
  }

  /// Writer side: find() with the read lock taken for the call. Requires: the caller serializes
  /// with the frees (holds the writer lock), which is what keeps the result alive afterwards.
  template <class K>
  T* find_locked(const K& key) const {
    T* found = nullptr;
    with_read_lock([&]() noexcept { found = find(key); });
    return found;
  }

  // --- Reader side: inside a read_guard<Flavor> -----------------------------------------------

  /// Requires: the caller is inside a read_guard<Flavor> (checked). Effects: the linked object
  /// whose key equals `key`, or nullptr; it stays valid until the guard ends. K is key_type or
  /// any type Hash and KeyEqual accept alike (a string_view for a std::string key). Complexity:
  /// O(1) expected. Thread safety: concurrent with updates.
  template <class K>
  T* find(const K& key) const {
    check_read_section("find");
    const probe<K> p{this, &key};
    cds_lfht_iter it;
    cds_lfht_lookup(table_, hash_(key), &match_key<K>, &p, &it);
    cds_lfht_node* n = cds_lfht_iter_get_node(&it);
    if (n == nullptr) return nullptr;
    annotate_subscribe(n);
    return hook_of(n)->owner_;
  }

  /// Requires: inside a read_guard<Flavor> (checked). Effects: calls f(obj) for every linked
  /// object whose key equals `key` (several after add), in the table's order; an object linked or
  /// unlinked meanwhile may or may not be visited. Returns the number of calls. f must not update
  /// this index. Complexity: O(1) expected plus one step per duplicate. Thread safety: as find.
  template <class K, class F>
  std::size_t for_each_equal(const K& key, F&& f) const {
    check_read_section("for_each_equal");
    const probe<K> p{this, &key};
    cds_lfht_iter it;
    std::size_t visited = 0;
    cds_lfht_lookup(table_, hash_(key), &match_key<K>, &p, &it);
    for (cds_lfht_node* n = cds_lfht_iter_get_node(&it); n != nullptr; n = cds_lfht_iter_get_node(&it)) {
      annotate_subscribe(n);
      ++visited;
      f(*hook_of(n)->owner_);
      cds_lfht_next_duplicate(table_, &match_key<K>, &p, &it);
    }
    return visited;
  }

  /// Iterates the linked objects in hash order (`for (T& obj : index)`). Requires: the whole loop
  /// inside one read_guard<Flavor> (checked at begin()). An object linked or unlinked during the
  /// loop may or may not be visited; every other one is visited once.
  class iterator {
   public:
    /// An input iterator over T (std::iterator_traits members).
    ///@{
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = T&;
    using pointer = T*;
    using iterator_category = std::input_iterator_tag;
    ///@}

    iterator() = default;
    /// The object it is at; the next one; at the end (== end()). Requires: inside the read_guard.
    ///@{
    T& operator*() const noexcept { return *hook_of(it_.node)->owner_; }
    T* operator->() const noexcept { return hook_of(it_.node)->owner_; }
    iterator& operator++() noexcept {
      cds_lfht_next(table_, &it_);
      subscribe();
      return *this;
    }
    void operator++(int) noexcept { ++*this; }
    friend bool operator==(const iterator& i, std::default_sentinel_t) noexcept { return i.it_.node == nullptr; }
    ///@}

   private:
    friend class lfht_index;
    explicit iterator(cds_lfht* table) noexcept : table_(table) {
      cds_lfht_first(table_, &it_);
      subscribe();
    }
    void subscribe() const noexcept {
      if (it_.node != nullptr) annotate_subscribe(it_.node);
    }
    cds_lfht* table_ = nullptr;
    cds_lfht_iter it_{};
  };

  /// Every linked object, for range-for inside a read_guard (checked like find).
  ///@{
  iterator begin() const {
    check_read_section("begin");
    return iterator(table_);
  }
  std::default_sentinel_t end() const noexcept { return {}; }
  ///@}

  /// Linked objects, as counted by the writers (exact once concurrent updates have returned; any
  /// thread may read).
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  /// size() == 0.
  bool empty() const noexcept { return size() == 0; }
  /// Writer side: whether obj is linked in this index.
  bool contains(const T& obj) const noexcept { return (obj.*Hook).linked_in_.load(std::memory_order_relaxed) == this; }
  /// Effects: obj's key as this index computes it (KeyOf), linked or not: what find_locked takes
  /// to look up the object obj would replace (registry::replace_with_children). Throws: what KeyOf throws.
  decltype(auto) key_of(const T& obj) const { return key_of_(obj); }
  /// The bucket count the writer last asked rculfhash for (automatic growth changes it unseen).
  unsigned long buckets() const noexcept { return buckets_.load(std::memory_order_relaxed); }
  /// Resizes this index ran in its writers' threads (growth on add, grow_if_needed, resize); their
  /// time is in lfht_total_resize_time(). Writer side.
  std::size_t resizes() const noexcept { return resizes_.load(std::memory_order_relaxed); }

 private:
  template <class K>
  struct probe {
    const lfht_index* self;
    const K* key;
  };

  static lfht_hook<T>* hook_of(cds_lfht_node* n) noexcept {
    static_assert(std::is_standard_layout_v<lfht_hook<T>>);
    return reinterpret_cast<lfht_hook<T>*>(n);  // node_ is the first member: pointer-interconvertible
  }

  // Called by rculfhash, from C: noexcept turns a throwing KeyOf or KeyEqual into terminate
  // instead of unwinding through liburcu's frames.
  template <class K>
  static int match_key(cds_lfht_node* n, const void* arg) noexcept {
    annotate_subscribe(n);  // pairs with annotate_publish in the adds
    const auto* p = static_cast<const probe<K>*>(arg);
    return p->self->equal_(p->self->key_of_(*hook_of(n)->owner_), *p->key) ? 1 : 0;
  }
  static int match_node(cds_lfht_node* n, const void* node) noexcept { return n == node ? 1 : 0; }

  static void check_power_of_two(unsigned long v, const char* name) {
    detail::index_require_power_of_two("lfht_options", name, v);
  }

  bool check_unlinked(T& obj, const char* op) {
    if (!(obj.*Hook).is_linked()) return true;
    detail::diagnose_hook_linked("lfht_index", op, (obj.*Hook).linked_in_.load(std::memory_order_relaxed) == this);
    return false;
  }

  void check_read_section(const char* op) const noexcept {
    if constexpr (RCUBATCH_INDEX_CHECKS != 0) {
      if (!in_section())
        detail::index_check_failed(op, "called outside a read_guard: what it finds may be freed at any time");
    } else {
      (void)op;
    }
  }
  // rculfhash's updates rely on the read lock, which under qsbr means being online.
  void check_online(const char* op) const noexcept {
    if constexpr (RCUBATCH_INDEX_CHECKS != 0) {
      if (quiescent_state_based() && !read_ongoing())
        detail::index_check_failed(op, "called from a qsbr thread that is offline or not registered");
    } else {
      (void)op;
    }
  }

  // The flavor's calls, from the type (a liburcu flavor) or from runtime_ (lfht_runtime_flavor).
  template <class Fn>
  static void call(void* fn) {
    (*static_cast<Fn*>(fn))();
  }
  /// fn() inside a read section of the flavor (fn must not throw: it runs inside liburcu's lock).
  template <class Fn>
  void with_read_lock(Fn&& fn) const noexcept {
    if constexpr (kRuntimeFlavor) {
      runtime_->run_in_read_section(&call<std::remove_reference_t<Fn>>, &fn);
    } else {
      read_guard<Flavor> guard;
      fn();
    }
  }
  template <class Fn>
  void with_thread_offline(Fn&& fn) const noexcept {
    if constexpr (kRuntimeFlavor) {
      runtime_->run_offline(&call<std::remove_reference_t<Fn>>, &fn);
    } else if constexpr (Flavor::quiescent_state_based) {
      offline_scope<Flavor> offline;
      fn();
    } else {
      fn();
    }
  }
  bool in_section() const noexcept {
    if constexpr (kRuntimeFlavor) return runtime_->in_read_section();
    else return in_read_section<Flavor>();
  }
  bool quiescent_state_based() const noexcept {
    if constexpr (kRuntimeFlavor) return runtime_->quiescent_state_based;
    else return Flavor::quiescent_state_based;
  }
  bool read_ongoing() const noexcept {
    if constexpr (kRuntimeFlavor) return runtime_->read_ongoing();
    else return static_cast<bool>(Flavor::read_ongoing());
  }
  std::string_view flavor_name() const noexcept {
    if constexpr (kRuntimeFlavor) return runtime_->name;
    else return Flavor::name;
  }
  const rcu_flavor_struct* flavor_table() const noexcept {
    if constexpr (kRuntimeFlavor) return runtime_->table;
    else return &Flavor::table();
  }

  void timed_resize(unsigned long buckets) {  // in this thread
    const auto start = std::chrono::steady_clock::now();
    RCUBATCH_PROBE(index_resize, this, std::size_t{0}, buckets);  // 0: liburcu's resize worker may have moved the old count
    cds_lfht_resize(table_, buckets);
    const auto took = std::chrono::steady_clock::now() - start;
    detail::lfht_resize_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count(),
                                     std::memory_order_relaxed);
    resizes_.fetch_add(1, std::memory_order_relaxed);
  }

  void linked(lfht_hook<T>& h) {
    h.linked_in_.store(this, std::memory_order_relaxed);
    size_.fetch_add(1, std::memory_order_relaxed);
    grow_if_needed();
  }

  [[no_unique_address]] KeyOf key_of_;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
  lfht_options options_;
  std::atomic<unsigned long> buckets_{0};  // the count last asked of rculfhash; writers only
  const lfht_runtime_flavor* runtime_ = nullptr;  // lfht_runtime_flavor only; null otherwise
  cds_lfht* table_ = nullptr;
  std::atomic<std::size_t> size_{0};    // writers' RMWs, relaxed: size() may be read anywhere
  std::atomic<std::size_t> resizes_{0};  // writers only
};

}  // namespace rcubatch
