// rcubatch/index/hlist_index.hpp — a writer-serialized RCU hash index on liburcu's hlist, resized
// without ever blocking a reader.
//
//   struct device : rcubatch::registrable<device> {
//     std::string name;                                     // the key: fixed before add
//     rcubatch::hlist_hook<device> by_name_hook;            // one hook per index the object is in
//   };
//   using by_name = rcubatch::hlist_index<device, &device::by_name_hook,
//                                         rcubatch::key_member<&device::name>>;
//   by_name index;                                          // default flavor, grows and shrinks
//
//   auto* d = new device;
//   d->name = "eth0";
//   index.add_unique(*d);                   // writer, under the caller's writer lock
//   {
//     rcubatch::read_guard<> guard;         // reader
//     if (device* found = index.find("eth0")) use(*found);  // valid until the guard ends
//   }
//   index.unlink(*d);                       // writer; free d only after a grace period
//   (compiled in tests/header_examples_test.cpp)
//
// Why another index: lfht_index (liburcu's rculfhash) lets several writers update at once, and
// pays for it on every update (a read lock, CAS loops, ordered "removal flags"): 15-29x the cost
// of a plain RCU hash chain unlink (issue 25's table). A registry's writers already serialize on
// its lock, like the kernel's device tables under RTNL, so this index uses the kernel's structure:
// an array of hash chains, updated with liburcu's cds_hlist_add_head_rcu / cds_hlist_del_rcu, read
// with rcu_dereference. liburcu has no such table, hence this one. Keep lfht_index for
// callers whose writers do not share a lock.
//
// Writers: ONE AT A TIME. Every member that changes the index (add_unique, add, add_or_replace,
// replace, unlink, resize, reclaim) must be serialized by the caller — a registry's writer lock
// does it. Builds without NDEBUG (and with RCUBATCH_INDEX_CHECKS on, the default) abort with a
// sentence when two such calls overlap (an atomic exchange per update; release builds check
// nothing). Updates need no read section and no registration, except for the grace period named
// under "Resizing".
//
// Readers (find, for_each_equal, iteration) run concurrently with the writer from any thread
// registered with Flavor, inside a read_guard<Flavor> (checked as in lfht_index, with
// RCUBATCH_INDEX_CHECKS). Everything the writer wrote into an object before adding it is
// visible to a reader that finds it (the TSan edges, annotate_publish / annotate_subscribe, are
// built in). The key and everything readers read must not change while the object is linked.
//
// Resizing: the kernel rhashtable's scheme (lib/rhashtable.c, Thomas Graf and Herbert Xu, 2014-),
// itself the resizable relativistic hash table of Triplett, McKenney and Walpole ("Resizable,
// Scalable, Concurrent Hash Tables via Relativistic Programming", USENIX ATC 2011) with a
// two-table migration instead of unzip/zip passes that each wait for a grace period. Read from
// the description, not copied (the kernel is GPL; this is written from the algorithm):
//   - a resize allocates a table of the new size and publishes it as the current table's
//     `future`; from then on adds go to the newest table;
//   - the writer moves entries from the old table to the new one, always the LAST entry of an
//     old chain, and always links it at the head of its new chain BEFORE unlinking it from the
//     old one. A reader standing on the moved entry follows it into the new chain, which is
//     harmless: nothing of its old chain came after it. A reader that misses it in the old
//     chain finds it in the new one, because a lookup searches each table and then its future;
//   - when the old table is empty the new one becomes current; the old one is freed after a
//     grace period (below).
// No grace period is waited for during a resize, and grow and shrink are the same code.
// Bound: each update migrates at most kMigrateVisits (16) old buckets and kMigrateMoves (8)
// entries, so no update pays more than that; a growth at load factor 1 finishes within
// B/8 updates (B: the old bucket count), long before the next growth is due (lookups search two
// tables meanwhile: for sizes between B and 1.125 B). Only adds start a
// resize (unlinks go on with one in progress), so a mass unlink — a registry's batch teardown —
// runs at the speed of cds_hlist_del_rcu and leaves the table as it was. Growth: when an add makes
// size() exceed the newest table's bucket count (load factor 1), to hlist_options::grow_factor
// (4) times that: filling to N moves about N/3 entries in all (N with doubling; each move is a
// cold line at large N, which made a growing insert 2.6-3.4x a presized table's at 10^6). Shrink
// (hlist_options::shrink, on by default): when an unlink has left size() below an eighth of the
// buckets and the next add finds it still there, to bit_ceil(2 x size()) (not below
// min_buckets) — so a presized table is not shrunk while it fills. resize(n) does a whole resize at
// once, O(n).
//
// Grace periods: a replaced table is freed once a grace period of the index's grace_domain
// (default_domain<Flavor>() unless given one) has elapsed since it was retired: adds that start
// or step a resize, and every add that makes size() a multiple of 64, check the oldest retired
// table's cookie (one atomic load) and free the elapsed ones; unlinks never look. A
// registry on the same domain elapses them with its batches. No update ever waits, except
// this one: when the retired tables would hold more bucket memory than the newest table, the
// update that would start the next resize first runs domain.synchronize() — never within a
// monotonic fill or drain (the retired sizes sum to less than the newest), only when the index
// oscillates. That call must not be in a read section (the wait would deadlock): inside one it
// is skipped and the resize waits for a later update; under qsbr the domain takes the thread
// offline while it waits (detail/blocking.hpp), so a registered qsbr writer may stay online.
// reclaim() runs that wait on demand. With Flavor = lfht_runtime_flavor (a flavor chosen at run
// time, as lfht_index takes it) there is no domain: updates never free a retired table and never
// wait; reclaim() runs one synchronize of that flavor (lfht_runtime_flavor::synchronize: offline
// under qsbr, with the TSan edge) and frees them all.
//
// Reading during a resize: find never misses a linked object and never returns an unlinked one
// that a grace period has passed; for_each_equal and iteration visit every object linked
// throughout, but one moved while the reader walks may be visited twice (rhashtable's walker
// says the same).
//
// Cost: a find is one hash, one acquire load of the table, one bucket walk comparing cached
// hashes (the key is compared only on an equal hash; an arithmetic key is compared alone), and
// one more load of `future` when the walk misses; with
// checks on, one thread-local read. An unlink is cds_hlist_del_rcu plus the migration check,
// and one store to the object itself (linked_in_ = nullptr, which holds(), the register_twice
// check and a second unlink rely on): with a reader busy on the same objects that store costs an
// unlink 3.5-4.6x a bare cds_hlist_del_rcu's time at 10,000 objects, against 1.4-1.6x without it
// and 1.1x a cds_hlist_del_rcu followed by the one store the kernel's hlist_del_rcu also makes to
// the object (pprev = LIST_POISON2; bench/bench_index.cpp's floor+poison; bench/RESULTS.md, 2026-12-03).
// Measured in bench/bench_index.cpp (see bench/RESULTS.md).
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "rcubatch/annotate.hpp"
#include "rcubatch/detail/probe.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/fwd.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/index/index_checks.hpp"
#include "rcubatch/index/key_of.hpp"          // key_member, key_members, lfht_hash: shared with lfht_index
#include "rcubatch/index/runtime_flavor.hpp"  // lfht_runtime_flavor
#include "rcubatch/misuse.hpp"
#include "rcubatch/read_guard.hpp"

#include <boost/intrusive/parent_from_member.hpp>
#include <urcu/rcuhlist.h>

namespace rcubatch {

/// The member an object embeds once per hlist_index it can be in. Not copyable: a copy would not
/// be linked. Readers read node_ and hash_ (and reach the object from the hook by its member
/// offset); linked_in_ is the writer's.
template <class T>
struct hlist_hook {
  hlist_hook() = default;
  hlist_hook(const hlist_hook&) = delete;
  hlist_hook& operator=(const hlist_hook&) = delete;

  /// True while the object is linked in an index (writer side: read it under the writer lock).
  bool is_linked() const noexcept { return linked_in_ != nullptr; }

  /// hlist_index's bookkeeping, read and written by the index only: not for users.
  ///@{
  cds_hlist_node node_{};            // first member: the chains hand back &node_
  unsigned long hash_ = 0;           // the key's hash, set before publication: chain walks and moves compare it
  const void* linked_in_ = nullptr;  // the index it is linked in; writer only
  ///@}
};

/// Sizing of an hlist_index. Bucket counts are powers of two.
struct hlist_options {
  std::size_t initial_buckets = 16;  ///< presize with the expected size to skip growth
  std::size_t min_buckets = 16;      ///< shrinking stops here
  std::size_t max_buckets = 0;       ///< growth stops here; 0: no limit
  bool grow = true;                  ///< grow at load factor 1 (see the file comment)
  /// A growth multiplies the bucket count by this (a power of two, at least 2). 4 moves each entry
  /// about N/3 times in all while a table fills to N instead of about N times with 2 (half the
  /// cost of an insert at N = 10^6: bench/RESULTS.md), for up to 4 buckets per entry right after a
  /// growth instead of 2.
  std::size_t grow_factor = 4;
  bool shrink = true;                ///< shrink below load factor 1/8
};

namespace detail {
[[noreturn]] inline void hlist_index_check_failed(const char* op, const char* what) noexcept {
  std::fprintf(stderr, "rcubatch: hlist_index::%s: %s\n", op, what);
  std::abort();
}

/// rcu_dereference of a chain link. The writer stores links with liburcu's volatile stores
/// (rcu_assign_pointer, CMM_STORE_SHARED), which TSan would pair with this load as a race; the
/// load is the RCU publication itself, ordered by those stores' barriers, so TSan is told to
/// skip it. What the link leads to is ordered for TSan by annotate_publish/annotate_subscribe.
#ifdef RCUBATCH_TSAN
__attribute__((no_sanitize("thread")))
#endif
inline cds_hlist_node* hlist_load_link(cds_hlist_node* const& link) noexcept {
  return rcu_dereference(link);
}
}  // namespace detail

/// Defaults (fwd.hpp): Flavor = default_flavor, Hash = lfht_hash, KeyEqual = std::equal_to<>.
template <class T, hlist_hook<T> T::*Hook, class KeyOf, class Flavor, class Hash, class KeyEqual>
class hlist_index {
  static constexpr bool kRuntimeFlavor = std::is_same_v<Flavor, lfht_runtime_flavor>;
  static_assert(kRuntimeFlavor || rcu_flavor<Flavor>,
                "hlist_index<..., Flavor>: Flavor must be an rcubatch flavor (flavor.hpp) or lfht_runtime_flavor");
  static_assert(std::is_invocable_v<const KeyOf&, const T&>,
                "hlist_index: KeyOf must be callable as key_of(const T&) and return the key.");

  static constexpr unsigned kMigrateVisits = 16;  // old buckets an update may empty
  static constexpr unsigned kMigrateMoves = 8;    // entries an update may move

  /// One bucket array. Readers reach it through current_ and then each table's future.
  struct table {
    explicit table(std::size_t n) noexcept : mask(n - 1) {}
    const std::size_t mask;
    std::atomic<table*> future{nullptr};  // the table entries are moving to; never cleared
    table* retired_next = nullptr;        // writer only: the retired list
    gp_cookie retired_at{};               // writer only
    cds_hlist_head* heads() noexcept { return reinterpret_cast<cds_hlist_head*>(this + 1); }
    const cds_hlist_head* heads() const noexcept { return reinterpret_cast<const cds_hlist_head*>(this + 1); }
    std::size_t buckets() const noexcept { return mask + 1; }
    std::size_t bytes() const noexcept { return sizeof(table) + buckets() * sizeof(cds_hlist_head); }
  };
  static_assert(alignof(table) >= alignof(cds_hlist_head));
  /// The most buckets a table may have: its size in bytes (header and heads) must fit a size_t.
  /// 2^61 buckets of 8 bytes used to wrap the size to the header's alone (issue 34: a heap
  /// overflow, where bad_alloc is documented).
  static constexpr std::size_t kMaxTableBuckets =
      std::bit_floor((std::numeric_limits<std::size_t>::max() - sizeof(table)) / sizeof(cds_hlist_head));

 public:
  using value_type = T;  ///< the indexed objects' type
  using key_type = std::remove_cvref_t<std::invoke_result_t<const KeyOf&, const T&>>;  ///< what KeyOf returns
  using flavor_type = Flavor;  ///< the flavor readers use (or lfht_runtime_flavor)

  /// Effects: an empty index of options.initial_buckets buckets whose retired tables wait for
  /// `domain`'s grace periods. Requires: `domain` outlives the index. Throws:
  /// std::invalid_argument naming a count that is not a power of two (or min > max);
  /// std::bad_alloc. Needs no registration.
  explicit hlist_index(hlist_options options = {}, grace_domain<Flavor>& domain = default_domain<Flavor>(),
                       KeyOf key_of = {}, Hash hash = {}, KeyEqual equal = {})
    requires(!kRuntimeFlavor)
      : hlist_index(&domain, options, std::move(key_of), std::move(hash), std::move(equal)) {}

  /// lfht_runtime_flavor only: as above, on the flavor `flavor` describes
  /// (lfht_runtime_flavor::of<F>()), with no grace domain: the retired tables are freed by
  /// reclaim() (one synchronize of the flavor, the thread offline under qsbr) or with the index,
  /// never by an update. Requires: `flavor` outlives the index.
  explicit hlist_index(const lfht_runtime_flavor& flavor, hlist_options options = {}, KeyOf key_of = {},
                       Hash hash = {}, KeyEqual equal = {})
    requires kRuntimeFlavor
      : hlist_index(&flavor, options, std::move(key_of), std::move(hash), std::move(equal)) {}

 private:
  using grace_source = std::conditional_t<kRuntimeFlavor, const lfht_runtime_flavor, grace_domain<Flavor>>;

  hlist_index(grace_source* gp, hlist_options options, KeyOf key_of, Hash hash, KeyEqual equal)
      : key_of_(std::move(key_of)), hash_(std::move(hash)), equal_(std::move(equal)), domain_(gp),
        options_(options) {
    check_power_of_two(options.initial_buckets, "initial_buckets");
    check_power_of_two(options.min_buckets, "min_buckets");
    if (options.grow_factor < 2) throw std::invalid_argument("rcubatch::hlist_index: grow_factor must be at least 2");
    check_power_of_two(options.grow_factor, "grow_factor");
    if (options.max_buckets != 0) {
      check_power_of_two(options.max_buckets, "max_buckets");
      if (options.min_buckets > options.max_buckets)
        throw std::invalid_argument("rcubatch::hlist_index: min_buckets is larger than max_buckets");
    }
    newest_ = make_table(clamp(options.initial_buckets));
    current_.store(newest_, std::memory_order_relaxed);
    set_thresholds();
  }

 public:

  /// Requires: no thread can reach the index any more. Effects: frees every table. Misuse: a
  /// non-empty index is reported (destroyed_while_linked) and its objects unlinked, not freed.
  ~hlist_index() {
    if (size() != 0) {
      detail::diagnose_noexcept(misuse_kind::destroyed_while_linked,
                                "hlist_index destroyed with " + std::to_string(size()) +
                                    " objects still linked: they are unlinked, not freed");
      for (table* t = current(); t != nullptr; t = t->future.load(std::memory_order_relaxed))
        for (std::size_t b = 0; b < t->buckets(); ++b)
          for (cds_hlist_node* n = t->heads()[b].next; n != nullptr; n = n->next) hook_of(n)->linked_in_ = nullptr;
    }
    table* t = current();
    while (t != nullptr) {
      table* next = t->future.load(std::memory_order_relaxed);
      free_table(t);
      t = next;
    }
    while (retired_head_ != nullptr) {  // nothing can reach the index: no grace period to wait for
      table* r = retired_head_;
      retired_head_ = r->retired_next;
      free_table(r);
    }
  }

  hlist_index(const hlist_index&) = delete;
  hlist_index& operator=(const hlist_index&) = delete;

  // --- Writer side: one writer at a time (the caller's lock) -------------------------------------

  /// Requires: the caller serializes writers; obj's hook is not linked; its key and reader-visible
  /// fields are initialized. Effects: links obj unless an object with an equal key is linked;
  /// returns whether it did (on false nothing changed: obj may be freed or reused at once).
  /// Misuse: a linked hook is diagnosed (register_twice), nothing changes. Complexity: O(1)
  /// expected plus the bounded resize step. Blocking: as the file comment's "Grace periods".
  bool add_unique(T& obj) {
    const writer_scope w(this, "add_unique");
    if (!check_unlinked(obj, "add_unique")) return false;
    const auto& key = key_of_(obj);
    const unsigned long hv = hash_(key);
    if (writer_find(key, hv) != nullptr) return false;
    link(obj, hv);
    return true;
  }

  /// Requires, Misuse, Complexity: as add_unique. Effects: links obj even if objects with an equal
  /// key are linked (a multi-index: for_each_equal visits them all). Returns false only on misuse.
  bool add(T& obj) {
    const writer_scope w(this, "add");
    if (!check_unlinked(obj, "add")) return false;
    link(obj, hash_(key_of_(obj)));
    return true;
  }

  /// Requires, Misuse, Complexity: as add_unique. Effects: links obj; an object with an equal key
  /// is swapped out in the same step (readers see one or the other, never neither) and returned,
  /// to be freed after a grace period; nullptr if there was none.
  T* add_or_replace(T& obj) {
    const writer_scope w(this, "add_or_replace");
    if (!check_unlinked(obj, "add_or_replace")) return nullptr;
    const auto& key = key_of_(obj);
    const unsigned long hv = hash_(key);
    T* old = writer_find(key, hv);
    if (old == nullptr) {
      link(obj, hv);
      return nullptr;
    }
    swap_in(old->*Hook, obj, hv);
    return old;
  }

  /// Requires: as add_unique for new_obj. Effects: if old_obj is linked here, puts new_obj in its
  /// place atomically (readers see one or the other) and returns true; free old_obj after a grace
  /// period. Returns false, changing nothing, if old_obj is not linked here. Throws:
  /// std::invalid_argument if the keys differ (nothing changed). Complexity: O(1).
  bool replace(T& old_obj, T& new_obj) {
    const writer_scope w(this, "replace");
    hlist_hook<T>& old_h = old_obj.*Hook;
    if (old_h.linked_in_ != this) return false;
    if (!check_unlinked(new_obj, "replace")) return false;
    const auto& key = key_of_(new_obj);
    if (!equal_(key_of_(old_obj), key))
      throw std::invalid_argument("rcubatch::hlist_index::replace: the new object's key differs from the old one's");
    swap_in(old_h, new_obj, old_h.hash_);
    return true;
  }

  /// Effects: if obj is linked here, unlinks it (cds_hlist_del_rcu) and returns true; readers
  /// already inside a read section may still find it, so free it (or add it again) only after a
  /// grace period. Returns false if it was not linked here. Never frees obj. Complexity: O(1)
  /// plus the bounded resize step.
  bool unlink(T& obj) noexcept {
    const writer_scope w(this, "unlink");
    hlist_hook<T>& h = obj.*Hook;
    if (h.linked_in_ != this) return false;
    cds_hlist_del_rcu(&h.node_);  // h.node_.next stays: a reader standing on obj goes on from it
    h.linked_in_ = nullptr;       // hash_ stays: a reader may still be reading it
    const std::size_t n = size_.load(std::memory_order_relaxed) - 1;
    size_.store(n, std::memory_order_relaxed);
    if (migrating_ || n < shrink_below_) [[unlikely]] {
      // Goes on with a resize, never starts one (a mass unlink runs at hlist speed): a shrink
      // is left to the next add.
      if (n < shrink_below_) shrink_wanted_ = true;
      if (migrating_) migrate_step();
    }
    return true;
  }

  /// Writer side, for a bulk add: starts loading the bucket head an add of obj will write, so that
  /// a writer adding many objects can ask for the line of the add a few objects ahead and have it
  /// by then (the bucket heads of a large table are cold: one miss per add otherwise). Reads
  /// obj's key (hashes it); changes nothing. Requires: the caller serializes writers.
  void prefetch_add(const T& obj) const noexcept {
    const unsigned long hv = hash_(key_of_(obj));
    __builtin_prefetch(&newest_->heads()[hv & newest_->mask], 1);
  }

  /// Effects: true when obj is linked in this index. Writer side. Complexity: O(1), no lookup.
  bool holds(const T& obj) const noexcept { return (obj.*Hook).linked_in_ == this; }
  /// Same as holds (lfht_index's spelling).
  bool contains(const T& obj) const noexcept { return holds(obj); }

  /// Effects: finishes a resize in progress, then moves every object into a table of the power of
  /// two at or above `buckets` (within min/max), in this call: O(size() + buckets), never waits.
  /// Requires: the writer's serialization. Throws: std::bad_alloc (nothing changed).
  void resize(std::size_t buckets) {
    const writer_scope w(this, "resize");
    finish_migration();
    const std::size_t n = buckets_for(buckets);
    if (n == newest_->buckets()) return;
    start_migration(n);
    finish_migration();
  }

  /// Effects: room for `objects` linked objects with no growth on the way: if that is more than
  /// the newest table's bucket count, resize(objects) (the power of two at or above it, within
  /// max_buckets); never shrinks. For a writer that knows how many adds are coming (a bulk
  /// create): filling with growth by 4 moves about a third of the entries again, each move a cold
  /// line at a large size. Requires and Throws: as resize. Complexity: O(size() + objects) when
  /// it resizes, O(1) otherwise.
  void reserve(std::size_t objects) {
    if (objects > newest_->buckets() && buckets_for(objects) > newest_->buckets()) resize(objects);
  }

  /// Requires: outside read sections of Flavor (misuse blocking_in_read_section, nothing done).
  /// Effects: waits for a grace period of the index's domain if a retired table still needs one,
  /// and frees them all. Blocking: at most one grace period (offline under qsbr).
  void reclaim() {
    const writer_scope w(this, "reclaim");
    if (retired_head_ == nullptr) return;
    if (in_section()) {
      detail::diagnose(misuse_kind::blocking_in_read_section,
                       "hlist_index::reclaim called inside a read section of " + std::string(flavor_name()) +
                           ": freeing the retired tables waits for a grace period");
      return;
    }
    wait_for_retired();
  }

  /// Writer side: find() without the read-section check. Requires: the caller serializes with the
  /// writers and with the frees (holds the writer lock), which is what keeps the result alive.
  template <class K>
  T* find_locked(const K& key) const {
    return writer_find(key, hash_(key));
  }

  /// Effects: obj's key as this index computes it (KeyOf), linked or not: what find_locked takes
  /// to look up the object obj would replace (registry::replace_with_children), as lfht_index's.
  /// Throws: what KeyOf throws.
  decltype(auto) key_of(const T& obj) const { return key_of_(obj); }

  // --- Reader side: inside a read_guard<Flavor> ------------------------------------------------

  /// Requires: the caller is inside a read_guard<Flavor> (checked). Effects: the linked object
  /// whose key equals `key`, or nullptr; it stays valid until the guard ends. K is key_type or any
  /// type Hash and KeyEqual accept alike. Complexity: O(1) expected. Thread safety: concurrent
  /// with the writer, resizes included.
  template <class K>
  T* find(const K& key) const {
    check_read_section("find");
    return lookup(key, hash_(key));
  }

  /// Requires: inside a read_guard<Flavor> (checked). Effects: calls f(obj) for every linked
  /// object whose key equals `key`; one linked or unlinked meanwhile may or may not be visited,
  /// and during a resize one may be visited twice (file comment). Returns the number of calls.
  /// f must not update this index.
  template <class K, class F>
  std::size_t for_each_equal(const K& key, F&& f) const {
    check_read_section("for_each_equal");
    const unsigned long hv = hash_(key);
    std::size_t visited = 0;
    for_each_table([&](const table* t) {
      for (cds_hlist_node* n = detail::hlist_load_link(t->heads()[hv & t->mask].next); n != nullptr;
           n = detail::hlist_load_link(n->next)) {
        annotate_subscribe(n);
        const hlist_hook<T>* h = hook_of(n);
        if (h->hash_ == hv && equal_(key_of_(*owner_of(h)), key)) {
          ++visited;
          f(*owner_of(h));
        }
      }
      return false;
    });
    return visited;
  }

  /// Iterates the linked objects (`for (T& obj : index)`). Requires: the whole loop inside one
  /// read_guard<Flavor> (checked at begin()). An object linked or unlinked during the loop may or
  /// may not be visited; every other one is visited once, or twice if a resize moved it meanwhile.
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
    T& operator*() const noexcept { return *owner_of(hook_of(node_)); }
    T* operator->() const noexcept { return owner_of(hook_of(node_)); }
    iterator& operator++() noexcept {
      node_ = detail::hlist_load_link(node_->next);
      settle();
      return *this;
    }
    void operator++(int) noexcept { ++*this; }
    friend bool operator==(const iterator& i, std::default_sentinel_t) noexcept { return i.node_ == nullptr; }
    ///@}

   private:
    friend class hlist_index;
    explicit iterator(const table* t) noexcept : table_(t) {
      node_ = detail::hlist_load_link(table_->heads()[0].next);
      settle();
    }
    /// Moves to the next node if on none: the next bucket, then the next table.
    void settle() noexcept {
      while (node_ == nullptr) {
        if (++bucket_ > table_->mask) {
          cmm_smp_rmb();  // see lookup()
          table_ = table_->future.load(std::memory_order_acquire);
          if (table_ == nullptr) return;
          bucket_ = 0;
        }
        node_ = detail::hlist_load_link(table_->heads()[bucket_].next);
      }
      annotate_subscribe(node_);
    }
    const table* table_ = nullptr;
    std::size_t bucket_ = 0;
    cds_hlist_node* node_ = nullptr;
  };

  /// Requires: inside a read_guard<Flavor> (checked). The first linked object.
  iterator begin() const {
    check_read_section("begin");
    return iterator(current());
  }
  /// The end of the iteration.
  std::default_sentinel_t end() const noexcept { return {}; }

  /// Linked objects, as counted by the writer (exact under the writer lock; any thread may read).
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  /// size() == 0.
  bool empty() const noexcept { return size() == 0; }
  /// Writer side: the bucket count of the table adds go to (the new one during a resize).
  std::size_t buckets() const noexcept { return newest_->buckets(); }
  /// Writer side: whether a resize is migrating entries (readers search two tables meanwhile).
  bool resizing() const noexcept { return migrating_; }
  /// Writer side: resizes started (growth, shrink, resize()).
  std::size_t resizes() const noexcept { return resizes_; }
  /// Writer side: replaced tables not yet freed (each waits for a grace period of the domain).
  std::size_t retired_tables() const noexcept { return retired_count_; }
  /// The grace domain the retired tables wait for (not with lfht_runtime_flavor).
  grace_domain<Flavor>& domain() const noexcept
    requires(!kRuntimeFlavor)
  {
    return *domain_;
  }

 private:
  /// RCUBATCH_INDEX_CHECKS and no NDEBUG: aborts when two writer calls overlap.
  class writer_scope {
   public:
    writer_scope(const hlist_index* self, const char* op) noexcept {
#if RCUBATCH_INDEX_CHECKS != 0 && !defined(NDEBUG)
      self_ = self;
      if (self->writing_.exchange(true, std::memory_order_acquire))
        detail::hlist_index_check_failed(op, "two writers at once: hlist_index needs its writers serialized by "
                                             "the caller's lock (lfht_index allows concurrent writers)");
#else
      (void)self, (void)op;
#endif
    }
    ~writer_scope() {
#if RCUBATCH_INDEX_CHECKS != 0 && !defined(NDEBUG)
      self_->writing_.store(false, std::memory_order_release);
#endif
    }
    writer_scope(const writer_scope&) = delete;
    writer_scope& operator=(const writer_scope&) = delete;

   private:
#if RCUBATCH_INDEX_CHECKS != 0 && !defined(NDEBUG)
    const hlist_index* self_;
#endif
  };

  // The object a hook is embedded in, from the hook's member offset (Boost.Intrusive's
  // get_parent_from_member, which also handles a T that is not standard-layout): a reader reaches
  // the key without first loading a pointer stored in the hook. An owner pointer there made every
  // comparison a dependent load: lookups 1.3-1.4x a kernel-style chain at 10^6 objects, against
  // 0.9-1.0x for the same chain given the same indirection (bench/RESULTS.md, 2026-12-03).
  static T* owner_of(const hlist_hook<T>* h) noexcept {
    return boost::intrusive::get_parent_from_member<T>(const_cast<hlist_hook<T>*>(h), Hook);
  }

  static hlist_hook<T>* hook_of(cds_hlist_node* n) noexcept {
    static_assert(std::is_standard_layout_v<hlist_hook<T>>);
    return reinterpret_cast<hlist_hook<T>*>(n);  // node_ is the first member: pointer-interconvertible
  }

  table* current() const noexcept { return current_.load(std::memory_order_acquire); }

  /// f(t) for the current table and each future; stops when f returns true.
  template <class F>
  void for_each_table(F&& f) const {
    for (const table* t = current(); t != nullptr;) {
      if (f(t)) return;
      // Ordering for weakly ordered CPUs (the kernel's smp_rmb in rhashtable lookups): having seen
      // an entry's removal from this table, see its insertion into the future one.
      cmm_smp_rmb();
      t = t->future.load(std::memory_order_acquire);
    }
  }

  template <class K>
  T* lookup(const K& key, unsigned long hv) const {
    const table* t = current();
    do {
      for (cds_hlist_node* n = detail::hlist_load_link(t->heads()[hv & t->mask].next); n != nullptr;
           n = detail::hlist_load_link(n->next)) {
        annotate_subscribe(n);  // pairs with annotate_publish in link() and swap_in()
        hlist_hook<T>* h = hook_of(n);
        if constexpr (std::is_arithmetic_v<key_type> && std::is_arithmetic_v<K>) {
          // A number compares as cheaply as its cached hash: compare it alone, as the kernel's
          // ifindex chain does (the hash first made a find 1.23-1.31x the floor at 10^4, against
          // 1.15-1.17x; bench_index, 2026-12-03).
          if (equal_(key_of_(*owner_of(h)), key)) [[likely]]
            return owner_of(h);
        } else if (h->hash_ == hv && equal_(key_of_(*owner_of(h)), key)) [[likely]]
          return owner_of(h);
      }
      cmm_smp_rmb();  // as in for_each_table
      t = t->future.load(std::memory_order_acquire);
    } while (t != nullptr);
    return nullptr;
  }
  template <class K>
  T* writer_find(const K& key, unsigned long hv) const {
    return lookup(key, hv);  // the writer's own view: no read section needed, it frees nothing
  }

  static void check_power_of_two(std::size_t v, const char* name) {
    detail::index_require_power_of_two("hlist_options", name, v);
  }
  std::size_t clamp(std::size_t n) const noexcept {
    if (n < options_.min_buckets) n = options_.min_buckets;
    if (options_.max_buckets != 0 && n > options_.max_buckets) n = options_.max_buckets;
    return n;
  }

  bool check_unlinked(T& obj, const char* op) {
    if (!(obj.*Hook).is_linked()) return true;
    detail::diagnose_hook_linked("hlist_index", op, (obj.*Hook).linked_in_ == this);
    return false;
  }
  void check_read_section(const char* op) const noexcept {
    if constexpr (RCUBATCH_INDEX_CHECKS != 0) {
      if (!in_section())
        detail::hlist_index_check_failed(op, "called outside a read_guard: what it finds may be freed at any time");
    } else {
      (void)op;
    }
  }

  /// The bucket count for a request of `n`: the power of two at or above it, within min/max
  /// (both powers of two, so clamping first changes nothing but keeps bit_ceil in range).
  /// Throws: std::bad_alloc past kMaxTableBuckets, where no table fits (bit_ceil has no answer).
  std::size_t buckets_for(std::size_t n) const {
    n = clamp(n == 0 ? std::size_t{1} : n);
    if (n > kMaxTableBuckets) throw std::bad_alloc();
    return clamp(std::bit_ceil(n));
  }

  /// The one place a table's size is computed. Throws: std::bad_alloc (no table of `n` buckets
  /// fits in memory, or in a size_t), nothing allocated.
  static table* make_table(std::size_t n) {
    if (n > kMaxTableBuckets) throw std::bad_alloc();
    void* mem = std::calloc(1, sizeof(table) + n * sizeof(cds_hlist_head));  // zeroed heads: empty chains
    if (mem == nullptr) throw std::bad_alloc();
    return new (mem) table(n);
  }
  static void free_table(table* t) noexcept {
    t->~table();
    std::free(t);
  }

  void link(T& obj, unsigned long hv) {
    hlist_hook<T>& h = obj.*Hook;
    h.hash_ = hv;
    annotate_publish(&h.node_);  // liburcu's publication is invisible to TSan
    cds_hlist_add_head_rcu(&h.node_, &newest_->heads()[hv & newest_->mask]);
    h.linked_in_ = this;
    const std::size_t n = size_.load(std::memory_order_relaxed) + 1;
    size_.store(n, std::memory_order_relaxed);
    // One test on the common path: a migration, a size past a threshold, or (every 64th size)
    // retired tables to look at.
    if (migrating_ || n > grow_above_ || shrink_wanted_ || (retired_head_ != nullptr && n % 64 == 0)) [[unlikely]]
      after_link();
  }

  /// new_obj takes old_h's place in its chain: one pointer store publishes it, and old's own
  /// links stay for readers standing on it. liburcu 0.13 has no cds_hlist_replace_rcu.
  void swap_in(hlist_hook<T>& old_h, T& new_obj, unsigned long hv) noexcept {
    hlist_hook<T>& h = new_obj.*Hook;
    h.hash_ = hv;
    cds_hlist_node* old = &old_h.node_;
    h.node_.next = old->next;
    h.node_.prev = old->prev;
    annotate_publish(&h.node_);
    if (old->next != nullptr) old->next->prev = &h.node_;
    rcu_set_pointer(&old->prev->next, &h.node_);
    old_h.linked_in_ = nullptr;
    h.linked_in_ = this;
  }

  // --- Resizing ----------------------------------------------------------------------------------

  /// After a link: a bounded migration step, or the start of a resize.
  void after_link() {
    if (retired_head_ != nullptr) free_elapsed();
    if (migrating_) {
      migrate_step();
      return;
    }
    const std::size_t n = size();
    const std::size_t b = newest_->buckets();
    std::size_t target = b;
    if (options_.grow && n > b) target = clamp(b * options_.grow_factor);
    else if (shrink_wanted_ && n < b / 8) target = clamp(std::bit_ceil(n * 2 == 0 ? std::size_t{1} : n * 2));
    else shrink_wanted_ = false;  // an add that finds size() back above b/8 drops the request
    if (target == b) return;
    if constexpr (!kRuntimeFlavor) {
      if (retired_bytes_ > newest_->bytes()) {  // only when the index oscillates: see the file comment
        if (in_section()) return;               // a later update outside one does it
        wait_for_retired();
      }
    }
    try {
      start_migration(target);
    } catch (const std::bad_alloc&) {  // the index works at any load factor: retry on a later update
      return;
    }
    migrate_step();
  }

  /// The sizes past which an add starts a resize, for the newest table's bucket count.
  void set_thresholds() noexcept {
    const std::size_t b = newest_->buckets();
    grow_above_ = options_.grow && clamp(b * options_.grow_factor) != b ? b : SIZE_MAX;
    shrink_below_ = options_.shrink && b > options_.min_buckets ? b / 8 : 0;
  }

  void start_migration(std::size_t buckets) {
    RCUBATCH_PROBE(index_resize, this, newest_->buckets(), buckets);
    table* t = make_table(buckets);
    newest_->future.store(t, std::memory_order_release);  // readers of the old table look here next
    newest_ = t;
    migrating_ = true;
    shrink_wanted_ = false;
    set_thresholds();
    migrate_next_ = 0;
    ++resizes_;
  }

  /// Moves the last entry of the old chain `head` to the head of its chain in the newest table:
  /// linked there first, unlinked from the old chain second (that order is what keeps every
  /// reader's lookup complete: see the file comment). By hand rather than cds_hlist_add_head_rcu,
  /// whose plain store of next assumes a node no reader can see yet.
  void move_last(cds_hlist_node* last) noexcept {
    cds_hlist_node* prev = last->prev;
    cds_hlist_head* to = &newest_->heads()[hook_of(last)->hash_ & newest_->mask];
    cds_hlist_node* first = to->next;
    CMM_STORE_SHARED(last->next, first);  // a reader standing on `last` now walks the new chain
    last->prev = reinterpret_cast<cds_hlist_node*>(to);
    if (first != nullptr) first->prev = last;
    rcu_set_pointer(&to->next, last);
#ifdef RCUBATCH_HLIST_INDEX_TEST_PROBE
    // Test seam (tests/index_hlist_test.cpp): `last` is in both chains here, and every linked
    // object must be found; a reordered move would leave it in neither. Not defined otherwise.
    RCUBATCH_HLIST_INDEX_TEST_PROBE(static_cast<const void*>(owner_of(hook_of(last))));
#endif
    rcu_set_pointer(&prev->next, static_cast<cds_hlist_node*>(nullptr));  // then gone from the old chain
  }

  /// One bounded step: empties at most kMigrateVisits old buckets, moving at most kMigrateMoves entries.
  void migrate_step() noexcept {
    table* old = current();
    unsigned moves = 0;
    for (unsigned visits = 0; visits < kMigrateVisits && moves < kMigrateMoves;) {
      cds_hlist_head* head = &old->heads()[migrate_next_];
      cds_hlist_node* last = head->next;
      if (last != nullptr) {
        while (last->next != nullptr) last = last->next;
        while (moves < kMigrateMoves && head->next != nullptr) {
          cds_hlist_node* prev = last->prev;
          move_last(last);
          ++moves;
          last = prev;
        }
        if (head->next != nullptr) return;  // budget spent: this bucket goes on next time
      }
      ++visits;
      if (++migrate_next_ > old->mask) {
        finish_old(old);
        return;
      }
    }
  }

  /// The old table is empty: the newest becomes current, the old one waits for a grace period.
  void finish_old(table* old) noexcept {
    table* next = old->future.load(std::memory_order_relaxed);
    current_.store(next, std::memory_order_release);
    migrating_ = false;
    migrate_next_ = 0;
    if constexpr (!kRuntimeFlavor) old->retired_at = domain_->snapshot();  // after the store: a reader that can still reach old began before it
    old->retired_next = nullptr;
    if (retired_tail_ != nullptr) retired_tail_->retired_next = old;
    else retired_head_ = old;
    retired_tail_ = old;
    retired_bytes_ += old->bytes();
    ++retired_count_;
  }

  void finish_migration() noexcept {
    while (resizing()) migrate_step();
  }

  /// Every retired table, after a grace period that began after the last one was retired.
  void wait_for_retired() {
    if constexpr (kRuntimeFlavor) {
      domain_->synchronize();
      while (retired_head_ != nullptr) free_retired_head();
    } else {
      domain_->wait_for(retired_tail_->retired_at);
      free_elapsed();
    }
  }
  void free_retired_head() noexcept {
    table* r = retired_head_;
    retired_head_ = r->retired_next;
    if (retired_head_ == nullptr) retired_tail_ = nullptr;
    retired_bytes_ -= r->bytes();
    --retired_count_;
    free_table(r);
  }

  void free_elapsed() noexcept {
    if constexpr (kRuntimeFlavor) return;  // no cookies: reclaim() frees them
    else
      while (retired_head_ != nullptr && domain_->elapsed(retired_head_->retired_at)) free_retired_head();
  }

  bool in_section() const noexcept {
    if constexpr (kRuntimeFlavor) return domain_->in_read_section();
    else return in_read_section<Flavor>();
  }
  std::string_view flavor_name() const noexcept {
    if constexpr (kRuntimeFlavor) return domain_->name;
    else return Flavor::name;
  }

  // What readers read, on a line the writer does not write to on every update (with size_ next
  // to current_, each unlink moved a busy reader's line: 4.3x the floor's remove at N = 10,000).
  [[no_unique_address]] KeyOf key_of_;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
  grace_source* domain_;  // grace_domain<Flavor>, or the lfht_runtime_flavor
  std::atomic<table*> current_{nullptr};  // where readers start; release-stored by the writer
  hlist_options options_;
  // The writer's.
  alignas(64) table* newest_ = nullptr;   // writer only: where adds go (current_ unless resizing)
  bool migrating_ = false;                // writer only: newest_ != current_
  bool shrink_wanted_ = false;            // writer only: an unlink left size() below shrink_below_
  std::size_t grow_above_ = 0;            // writer only: set_thresholds()
  std::size_t shrink_below_ = 0;
  std::size_t migrate_next_ = 0;          // writer only: the next old bucket to empty
  table* retired_head_ = nullptr;         // writer only: replaced tables, oldest first
  table* retired_tail_ = nullptr;
  std::size_t retired_bytes_ = 0;
  std::size_t retired_count_ = 0;
  std::size_t resizes_ = 0;
  std::atomic<std::size_t> size_{0};      // written by the writer, relaxed: size() may be read anywhere
  mutable std::atomic<bool> writing_{false};  // the overlapping-writers check
};

}  // namespace rcubatch
