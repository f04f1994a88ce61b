// rcubatch/owned.hpp — owned children: a parent→children relation the library keeps.
//
//   struct session;
//   struct stream : rcubatch::registrable<stream> {
//     std::uint64_t id;
//     rcubatch::lfht_hook<stream> by_id;
//     rcubatch::owner_hook<session> owner;                    // names its session
//   };
//   struct session : rcubatch::registrable<session> {
//     std::uint64_t id;
//     rcubatch::lfht_hook<session> by_id;
//     rcubatch::owned_list<stream, &stream::owner> streams;   // kept by the library
//   };
//   using session_ids = rcubatch::lfht_index<session, &session::by_id, rcubatch::key_member<&session::id>>;
//   using stream_ids = rcubatch::lfht_index<stream, &stream::by_id, rcubatch::key_member<&stream::id>>;
//   struct session_policy : rcubatch::indexed<session, session_ids>, rcubatch::owning<&session::streams> {};
//   (compiled in tests/header_examples_test.cpp)
//
//   rcubatch::registry<session_policy, rcubatch::indexed<stream, stream_ids>> table;
//   table.add(*s);                      // the parent first
//   st->owner.set_parent(*s);           // (or owner_hook's constructor)
//   table.add(*st);                     // linked into s->streams under the writer lock
//   table.add(*st2);                    // st2 names s too
//   table.unregister(*st);              // alone: it leaves s->streams
//   table.unregister(*s);               // s and st2 (destroyed first), ≤ 2 grace periods
//   (compiled in tests/header_examples_test.cpp)
//
// Why the library keeps it: a `std::vector<child*>` filled before add dangles as soon as a child
// can be deleted alone, and the parent's hand-written notify that queues the children is
// boilerplate whose misspelled name compiles and silently destroys the parent under its children.
// Here the list is intrusive (Boost.Intrusive: a node in the child, no allocation), and it is
// changed only under the writer lock, at the three points the library controls:
//   - add(child): the child's hook names its parent, which must be registered in the same
//     registry and in no queue or batch; the child is linked into the parent's list after it is
//     published. A parent that is already going away makes add refuse (false, nothing published):
//     a lost race, not misuse. A parent never added is misuse (not_registered).
//   - the child's unlist (in any batch, or at async_unregister::submit): it leaves the list, and
//     unless a notify already queued it with a parent edge, it takes one on its owner (a reference
//     the owner's ref drain waits for, put after the child's destroy: ref_drain.hpp). So a child
//     deleted alone never appears in a later batch of its parent, and is destroyed before it.
//   - the parent's batch: in the notify phase, before the policy's own notify (if any), every
//     child still in the list is queued with batch::queue (its parent edge recorded): the
//     children share the batch's two grace periods, at any depth (a child that owns children of
//     its own queues them the same way, round by round), and are destroyed before their parent.
// The relation is declared once, on the parent's policy (owning<&Parent::list, ...>); the child
// type needs a policy (a lane) too — a compile error otherwise: rollback_many, registry and
// async_unregister all check it. A child type may be owned through one list only. The reverse
// omission — a child type with an owner_hook, its parent's policy without owning<> — cannot be a
// compile error (no C++20 code can see an owner_hook member in its child's type), so it is a
// misuse diagnosis before anything changes: an owner_hook marks the parent it names, and a
// registry whose policy for that parent owns no children refuses to unregister (or submit) it
// (not_in_batch), instead of destroying it under children that stay indexed and name it. (A
// parent whose policy owns one child type is not checked for a second, undeclared one.)
//
// Readers: a reader that found a child (inside a read section) may read child.owner.parent():
// the parent is destroyed after the child. A reader that found a parent may walk its children
// inside the same read section with rcu_range() (issue 37):
//
//   std::vector<std::uint64_t> seen;
//   rcubatch::read_guard<> guard;
//   if (const session* found = table.find<session_ids>(guard, std::uint64_t{1}))
//     for (const stream& child : found->streams.rcu_range()) seen.push_back(child.id);  // never a destroyed one
//   (compiled in tests/header_examples_test.cpp)
//
// Why a list of our own for readers, next to the Boost.Intrusive one: Boost.Intrusive's list is
// not RCU-safe — unlink and push_back write neighbours' pointers with plain stores in an order
// readers cannot rely on, and a safe_link unlink nulls the node's own pointers, so a reader
// standing on it would stop or fault. liburcu's rculist (cds_list_add_tail_rcu/del_rcu) is, but its
// publish and read are volatile accesses that ThreadSanitizer cannot see as ordering (every walk
// would be a reported race, or a suppression hiding real ones). So each child also carries one
// std::atomic "next" pointer, a singly linked chain kept in the Boost list's order: link publishes
// the child with a release store into its predecessor's next (the Boost list gives the
// predecessor in O(1), so unlink stays O(1)), unlink stores the child's next into its predecessor
// and leaves the child's own next as it was, so a reader standing on an unlinked child goes on to
// its successor. The Boost list stays the writer's view (size, order, iterators), unchanged.
// An unlinked child is destroyed after a grace period that follows its unlink (the batch that
// unlinks it, or the async_unregister batch that takes it after submit): a reader never reaches a
// destroyed child. Writers still change both only under the writer lock, at the points above.
#pragma once

#include <atomic>
#include <cstddef>
#include <iterator>
#include <tuple>
#include <type_traits>

#include <boost/intrusive/list.hpp>

#include "rcubatch/batch.hpp"
#include "rcubatch/detail/rcu_chain.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

namespace detail {
template <class U>
registrable_base& base_of(U& obj) noexcept;
template <auto List>
struct owned_relation;
template <class C, auto Hook>
struct owned_chain_step;
}  // namespace detail

/// The hook a child embeds: a Boost.Intrusive list node (linked into its parent's owned_list by
/// the library) and the parent it names. safe_link: the hook knows whether it is linked.
template <class Parent>
class owner_hook
    : public boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  using parent_type = Parent;  ///< the type of the parent it names

  /// Effects: names no parent yet (set_parent before add). Throws: nothing.
  owner_hook() noexcept = default;
  /// Effects: names `parent`, and marks it as named by a child: a registry whose policy for
  /// Parent declares no owning<> refuses to unregister it (see the file comment). Throws: nothing.
  explicit owner_hook(Parent& parent) noexcept : parent_(&parent) { mark(parent); }
  owner_hook(const owner_hook&) = delete;
  owner_hook& operator=(const owner_hook&) = delete;

  /// Requires: the child is not added yet (the hook is not linked). Effects: names `parent`; the
  /// registry links the child into its list at add. Misuse: a linked hook (register_twice: the
  /// parent of an added child cannot change), nothing changed. Throws: misuse_error as above.
  void set_parent(Parent& parent) {
    if (this->is_linked()) {
      detail::diagnose(misuse_kind::register_twice,
                       "owner_hook::set_parent: the child is already linked into its parent's list (added); "
                       "its parent cannot change (nothing was changed)");
      return;
    }
    mark(parent);
    parent_.store(&parent, std::memory_order_release);
  }

  /// Effects: the parent it names, or nullptr. Thread safety: any thread; a reader that found the
  /// child inside a read section may use the parent in that section (it is destroyed after the
  /// child). Throws: nothing. Complexity: O(1).
  Parent* parent() const noexcept { return parent_.load(std::memory_order_acquire); }

 private:
  template <auto>
  friend struct detail::owned_relation;  // adopt: a linked child re-pointed to its parent's successor
  template <class, auto>
  friend class owned_list;
  template <class, auto>
  friend struct detail::owned_chain_step;
  static void mark(Parent& parent) noexcept;
  std::atomic<Parent*> parent_{nullptr};
  // The reader-visible chain (see the file comment): the next child in the parent's list, or
  // null. Written under the writer lock (release), read by readers (acquire). void*: the hook
  // does not know its child type; owned_list<Child, Hook> casts it back.
  std::atomic<void*> rcu_next_{nullptr};
};

namespace detail {
/// How a reader follows the children's chain (detail/rcu_chain.hpp). C: Child or const Child.
template <class C, auto Hook>
struct owned_chain_step {
  static C* next(C& c) noexcept { return static_cast<C*>((c.*Hook).rcu_next_.load(std::memory_order_acquire)); }
  static C& value(C& c) noexcept { return c; }
};
}  // namespace detail

/// What owned_list::rcu_range returns: a forward range over a parent's children, for readers
/// (its contract is rcu_range's). C is Child or const Child.
template <class C, auto Hook>
using owned_rcu_range = detail::rcu_chain_range<C, C, detail::owned_chain_step<C, Hook>>;

namespace detail {
template <auto List>
struct owned_relation;
template <class Hook>
struct hook_member_traits;
template <class Child, class Parent>
struct hook_member_traits<owner_hook<Parent> Child::*> {
  using child_type = Child;
  using parent_type = Parent;
};
}  // namespace detail

/// The children of a parent, a member of the parent: Child objects whose owner_hook member Hook
/// names it. Changed by the library under the registry's writer lock. Writers read it under the
/// lock (begin/end/size/empty); readers walk it inside a read section with rcu_range().
template <class Child, auto Hook>
class owned_list {
  using traits = detail::hook_member_traits<decltype(Hook)>;
  static_assert(std::is_same_v<typename traits::child_type, Child>,
                "rcubatch::owned_list<Child, Hook>: Hook must be a member `owner_hook<Parent> Child::*` of Child");

 public:
  using child_type = Child;                             ///< the children's type
  using parent_type = typename traits::parent_type;     ///< the type of the object holding this list
  /// The Boost.Intrusive list underneath (writer-side; the library alone links and unlinks).
  using list_type = boost::intrusive::list<Child, boost::intrusive::member_hook<Child, owner_hook<parent_type>, Hook>,
                                           boost::intrusive::constant_time_size<true>>;
  using iterator = typename list_type::iterator;              ///< yields Child&
  using const_iterator = typename list_type::const_iterator;  ///< yields const Child&

  /// Effects: no children. Throws: nothing.
  owned_list() = default;
  owned_list(const owned_list&) = delete;
  owned_list& operator=(const owned_list&) = delete;

  /// Effects: the children in the order they were added (the list is changed by the library
  /// only: an iterator cannot link or unlink). Requires: the writer lock, or no concurrent
  /// writer. Throws: nothing. Complexity: O(1).
  iterator begin() noexcept { return list_.begin(); }
  /// Effects: the end of the children. Requires, Throws, Complexity: as begin.
  iterator end() noexcept { return list_.end(); }
  /// Effects: as begin, read-only. Requires, Throws, Complexity: as begin.
  const_iterator begin() const noexcept { return list_.begin(); }
  /// Effects: as end, read-only. Requires, Throws, Complexity: as begin.
  const_iterator end() const noexcept { return list_.end(); }
  /// Effects: how many children are linked. Requires: as begin. Throws: nothing. Complexity: O(1).
  std::size_t size() const noexcept { return list_.size(); }
  /// Effects: whether no child is linked. Requires: as begin. Throws: nothing. Complexity: O(1).
  bool empty() const noexcept { return list_.empty(); }

  /// Effects: the children for a reader, in the order they were added: every child linked for the
  /// whole walk is visited once; a child linked or unlinked during the walk is visited or not;
  /// none is visited after its destroy. The walk always ends (each step follows a pointer a writer
  /// stored, towards the tail: a child is linked only at the tail, and an unlinked child is never
  /// linked again). The old version of a parent replaced keeping its children
  /// (registry::replace(old, new, keep_children)) walks on into the new one's chain: a reader that
  /// found the old parent sees every moved child still linked (to the new parent) for its whole
  /// walk, once (splice_back says why this is safe). Requires: the walk and every use of the
  /// children it yields lie inside one read section of the registry's flavor (read_guard), in
  /// which the parent itself was found (or the writer lock is held). Thread safety: any number of
  /// readers, concurrently with the writer. Throws: nothing. Complexity: O(1); the walk O(children).
  owned_rcu_range<Child, Hook> rcu_range() noexcept { return owned_rcu_range<Child, Hook>(first()); }
  /// Effects, Requires, Thread safety: as rcu_range(), read-only.
  owned_rcu_range<const Child, Hook> rcu_range() const noexcept {
    return owned_rcu_range<const Child, Hook>(first());
  }

 private:
  template <auto>
  friend struct detail::owned_relation;

  Child* first() const noexcept { return static_cast<Child*>(rcu_first_.load(std::memory_order_acquire)); }
  static std::atomic<void*>& next_of(Child& c) noexcept { return (c.*Hook).rcu_next_; }

  /// Requires: the writer lock; c is not linked. Effects: c at the tail of both views; readers
  /// see it once its release store (into the old tail's next, or the head) is visible.
  void link_back(Child& c) noexcept {
    next_of(c).store(nullptr, std::memory_order_relaxed);  // not yet reachable: ordered by the release below
    std::atomic<void*>& slot = list_.empty() ? rcu_first_ : next_of(list_.back());
    slot.store(&c, std::memory_order_release);
    list_.push_back(c);
  }
  /// Requires: the writer lock; c is linked here. Effects: c out of both views; its own next is
  /// kept, so a reader standing on c goes on to its successor. (release: the successor was
  /// published before, but a reader that loads this store must see it initialized.)
  void unlink(Child& c) noexcept {
    const auto it = list_.iterator_to(c);
    std::atomic<void*>& slot = it == list_.begin() ? rcu_first_ : next_of(*std::prev(it));
    slot.store(next_of(c).load(std::memory_order_relaxed), std::memory_order_release);
    list_.erase(it);
  }

  /// Requires: the writer lock; from's parent is going away and gets no child again (the only
  /// caller is a replace keeping the children: from belongs to the old version). Effects: from's
  /// children, in order, at the tail of both views of this list (O(1)); from's writer view is
  /// empty. A reader walking from's chain goes on through the moved children as before (their
  /// nexts are unchanged); one walking this list sees all of them or none (one release store
  /// links the whole chain).
  /// from's readers' head is kept, not nulled: it goes on pointing into the moved chain, so a
  /// reader that found the old parent before the replace but starts its walk only after it still
  /// sees every child (those linked for its whole walk; tests/owned_readers_test.cpp). Nulling it
  /// would show that reader a parent with no children, which no version ever had. Keeping it is
  /// safe: a reader reaches the old parent only through a pointer this replace overwrites (the
  /// index entry, a child's parent()), so it did not see the replace's stores; a grace period
  /// that starts after them waits for its section. A moved child is destroyed after a grace
  /// period that follows its unlink, which comes after this replace under the writer lock: so it
  /// outlives that reader. And nothing links into from again (its parent is going away: add and
  /// add_under refuse it), so the stale head is never written, only destroyed with its parent.
  void splice_back(owned_list& from) noexcept {
    if (from.list_.empty()) return;  // (shared or not: from's head is then null, as is ours)
    std::atomic<void*>& slot = list_.empty() ? rcu_first_ : next_of(list_.back());
    slot.store(from.rcu_first_.load(std::memory_order_relaxed), std::memory_order_release);
    list_.splice(list_.end(), from.list_);  // constant_time_size: O(1)
  }

  /// Requires: the writer lock; this list is empty and not yet reachable by readers (its parent
  /// is about to take from's parent's place: registry::replace with keep_children). Effects: this
  /// list's readers' head points at from's chain, the writer's view unchanged; splice_back then
  /// moves the writer's view. Why before the publish: a reader that finds the new parent as soon
  /// as it is published must see its children; linked only after, they were missing for readers
  /// in between (tests/owned_readers_test.cpp). unshare undoes it when the publish throws.
  void share_chain_of(const owned_list& from) noexcept {
    rcu_first_.store(from.rcu_first_.load(std::memory_order_relaxed), std::memory_order_release);
  }
  /// Requires: the writer lock; share_chain_of was called and this list's parent never became
  /// reachable. Effects: the readers' head empty again.
  void unshare() noexcept { rcu_first_.store(nullptr, std::memory_order_relaxed); }

  list_type list_;
  std::atomic<void*> rcu_first_{nullptr};  // the readers' head (a Child*, typed as the hooks' next): under the writer lock
};

namespace detail {
/// One parent→children relation, from the parent's list member (owning<&Parent::list>).
template <class Parent, class Child, auto Hook, owned_list<Child, Hook> Parent::*List>
struct owned_relation<List> {
  using parent_type = Parent;
  using child_type = Child;
  using list_type = typename owned_list<Child, Hook>::list_type;
  static list_type& list_of(Parent& p) noexcept { return (p.*List).list_; }
  /// Requires: the writer lock. Effects: owned_list::link_back / unlink (both views kept in step).
  static void link(Parent& p, Child& c) noexcept { (p.*List).link_back(c); }
  static void unlink(Parent& p, Child& c) noexcept { (p.*List).unlink(c); }
  static owner_hook<Parent>& hook_of(Child& c) noexcept { return c.*Hook; }
  /// Requires: the writer lock; `to` took `from`'s place (registry::replace with keep_children).
  /// Effects: from's children, in order, at the end of to's list (an O(1) splice), each hook
  /// naming `to` (a release store: a reader that follows parent() finds from or to).
  /// Requires: the writer lock; `to` is about to take `from`'s place and is not published yet.
  /// Effects: readers who find `to` see from's children from its publish on (owned_list::
  /// share_chain_of); adopt completes the move. unshare: the publish failed, `to` stays empty.
  static void share(Parent& from, Parent& to) noexcept { (to.*List).share_chain_of(from.*List); }
  static void unshare(Parent& to) noexcept { (to.*List).unshare(); }
  static void adopt(Parent& from, Parent& to) noexcept {
    list_type& dst = list_of(to);
    const auto first_moved = dst.size();
    (to.*List).splice_back(from.*List);
    auto it = dst.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(first_moved));
    for (; it != dst.end(); ++it) hook_of(*it).parent_.store(&to, std::memory_order_release);
  }
};
}  // namespace detail

/// A policy mixin: the policy's objects own the children in the lists named (members of its
/// object type, each an owned_list). The batch of such an object queues every child still in
/// its lists, before the policy's own notify (see the file comment). Adds no hook: it only
/// declares `owned_lists`, so a notify written by the policy is kept, not hidden.
template <auto... Lists>
struct owning {
  static_assert(sizeof...(Lists) >= 1, "rcubatch::owning<&Parent::list, ...>: name at least one owned_list member");
  /// The relations, one per list named: what rollback_many and the registry read.
  using owned_lists = std::tuple<detail::owned_relation<Lists>...>;
};

namespace detail {
/// P::owned_lists, or no relation (overload resolution picks the first when P has it).
template <class P>
auto owned_lists_or_none(int) -> typename P::owned_lists;
template <class P>
auto owned_lists_or_none(long) -> std::tuple<>;
template <class P>
using owned_lists_t = decltype(owned_lists_or_none<std::remove_cv_t<P>>(0));

template <class P>
inline constexpr bool has_owned_lists = std::tuple_size_v<owned_lists_t<P>> != 0;

/// The relations of every policy, in one tuple.
template <class... Ps>
using all_relations_t = decltype(std::tuple_cat(std::declval<owned_lists_t<Ps>>()...));

/// How many relations of Rels have T as their child type.
template <class T, class Rels>
struct relations_of_child;
template <class T, class... Rs>
struct relations_of_child<T, std::tuple<Rs...>> {
  static constexpr std::size_t count = (std::size_t{std::is_same_v<typename Rs::child_type, T>} + ... + 0);
};

/// The relation whose child type is T among Rels (void: T is owned by nobody).
template <class T, class Rels>
struct owner_relation {
  using type = void;
};
template <class T, class R, class... Rs>
struct owner_relation<T, std::tuple<R, Rs...>> {
  using type = std::conditional_t<std::is_same_v<typename R::child_type, T>, R,
                                  typename owner_relation<T, std::tuple<Rs...>>::type>;
};
template <class T, class... Ps>
using owner_relation_t = typename owner_relation<T, all_relations_t<Ps...>>::type;

template <class X, class... Ts>
inline constexpr bool one_of = (std::is_same_v<X, Ts> || ...);

/// Whether every child type of every relation is one of Ts, and each is owned through one list.
template <class Rels, class... Ts>
struct relations_check;
template <class... Rs, class... Ts>
struct relations_check<std::tuple<Rs...>, Ts...> {
  static constexpr bool children_have_lanes = (one_of<typename Rs::child_type, Ts...> && ... && true);
  static constexpr bool one_owner_each =
      ((relations_of_child<typename Rs::child_type, std::tuple<Rs...>>::count == 1) && ...);
};

template <class U>
registrable_base& base_of(U& obj) noexcept {
  using X = registrable_type_t<U>;
  return static_cast<registrable<X>&>(static_cast<X&>(obj));
}

/// Whether obj, whose policy in a registry owns no children (no owning<>), was named by an
/// owner_hook: tearing it down would leave those children indexed and naming it. The registry
/// checks it wherever it queues an object for teardown (registry.hpp: queues::push,
/// async_unregister's submit and unregister) and refuses: an owner_hook cannot be seen in its
/// child's type without reflection, so this is a misuse diagnosis rather than a compile error.
template <class Policy, class U>
bool children_left_behind(U& obj) noexcept {
  // A policy with members (membership.hpp: having_members<>) deletes its edges: a group's mark.
  if constexpr (has_owned_lists<Policy> || requires { typename std::remove_cv_t<Policy>::member_lists; }) {
    return false;
  } else {
    return registrable_access::named_as_owner(base_of(obj));
  }
}

/// Requires: the writer lock; c is registered and being unlisted (a batch's unlist, or
/// async_unregister::submit). Effects: takes c out of its parent's list; unless a notify already
/// recorded a parent edge, records one on that parent (a reference, put after c's destroy), so
/// the parent is destroyed after c whichever batch takes it. No effect if c is not linked.
template <class Rel>
void unlink_from_owner(typename Rel::child_type& c) noexcept {
  auto& hook = Rel::hook_of(c);
  if (!hook.is_linked()) return;
  typename Rel::parent_type* const p = hook.parent();
  Rel::unlink(*p, c);
  registrable_base& parent = base_of(*p);
  std::atomic<registrable_base*>& edge = registrable_access::parent(base_of(c));
  // Edges are recorded under the writer lock (batch::queue runs in notify), and c's release,
  // which alone replaces its edge, comes after this unlist: a relaxed look is exact here, and
  // spares the hold and put of the common case (a child its parent's notify queued).
  if (edge.load(std::memory_order_relaxed) != nullptr) return;
  parent.refs().hold();
  registrable_base* expected = nullptr;
  if (!edge.compare_exchange_strong(expected, &parent, std::memory_order_acq_rel))
    parent.refs().put();  // a notify queued it: that edge orders the destroys (first edge wins)
}

/// Requires: the writer lock; successor is not added yet. Effects: the successor of old (the object
/// registry::replace and registry::replace_with_children put in old's place) names old's parent
/// when it names none itself and old is linked in that parent's list: it takes old's place there
/// too (link_to_owner links it once it is published; old leaves at its batch's unlist). One
/// definition for both replaces, so a parent that is itself owned (A owns B owns C: B replaced
/// with its children) keeps its new version in its owner's list. Misuse: as owner_hook::set_parent.
template <class Rel>
void inherit_owner(typename Rel::child_type& old, typename Rel::child_type& successor) {
  auto& hook = Rel::hook_of(successor);
  const auto& old_hook = Rel::hook_of(old);
  if (hook.parent() == nullptr && old_hook.is_linked()) hook.set_parent(*old_hook.parent());
}

/// Requires: the writer lock; c is published and about to be marked registered; its parent was
/// checked by the registry (owner_accepts). Effects: links c at the tail of its parent's list.
template <class Rel>
void link_to_owner(typename Rel::child_type& c) noexcept {
  if (typename Rel::parent_type* const p = Rel::hook_of(c).parent()) Rel::link(*p, c);
}

/// The notify-phase step of a parent's batch: every child still in each list joins the batch
/// (batch::queue records the parent edge).
template <class Rels>
struct queue_children;
template <class... Rs>
struct queue_children<std::tuple<Rs...>> {
  template <class Parent>
  static void run(Parent& p, batch& b) noexcept {
    (queue_all<Rs>(p, b), ...);
  }
  template <class Rel, class Parent>
  static void queue_all(Parent& p, batch& b) noexcept {
    for (auto& child : Rel::list_of(p)) b.queue(child);
  }
  /// Whether run(p, b) would queue anything: a child in one of p's lists. The unlist pass asks it
  /// of each parent it visits anyway (one load per list), so that a batch whose parents have no
  /// children skips the notify pass, a second walk (rollback_many.hpp, typed_lane::notify_new).
  template <class Parent>
  static bool any(Parent& p) noexcept {
    return (!Rs::list_of(p).empty() || ...);
  }
};
}  // namespace detail

template <class Parent>
void owner_hook<Parent>::mark(Parent& parent) noexcept {
  detail::registrable_access::mark_named_as_owner(detail::base_of(parent));
}

}  // namespace rcubatch
