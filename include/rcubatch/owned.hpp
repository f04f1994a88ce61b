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
// the parent is destroyed after the child. The lists themselves are writer-side (under the lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <iterator>
#include <tuple>
#include <type_traits>

#include <boost/intrusive/list.hpp>

#include "rcubatch/batch.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/registrable.hpp"

namespace rcubatch {

namespace detail {
template <class U>
registrable_base& base_of(U& obj) noexcept;
template <auto List>
struct owned_relation;
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
  static void mark(Parent& parent) noexcept;
  std::atomic<Parent*> parent_{nullptr};
};

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
/// names it. Writer-side: changed by the library under the registry's writer lock, read under it.
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

 private:
  template <auto>
  friend struct detail::owned_relation;
  list_type list_;
};

namespace detail {
/// One parent→children relation, from the parent's list member (owning<&Parent::list>).
template <class Parent, class Child, auto Hook, owned_list<Child, Hook> Parent::*List>
struct owned_relation<List> {
  using parent_type = Parent;
  using child_type = Child;
  using list_type = typename owned_list<Child, Hook>::list_type;
  static list_type& list_of(Parent& p) noexcept { return (p.*List).list_; }
  static owner_hook<Parent>& hook_of(Child& c) noexcept { return c.*Hook; }
  /// Requires: the writer lock; `to` took `from`'s place (registry::replace with keep_children).
  /// Effects: from's children, in order, at the end of to's list (an O(1) splice), each hook
  /// naming `to` (a release store: a reader that follows parent() finds from or to).
  static void adopt(Parent& from, Parent& to) noexcept {
    list_type& dst = list_of(to);
    const auto first_moved = dst.size();
    dst.splice(dst.end(), list_of(from));  // constant_time_size: O(1)
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
  if constexpr (has_owned_lists<Policy>) {
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
  auto& list = Rel::list_of(*p);
  list.erase(list.iterator_to(c));
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
  if (typename Rel::parent_type* const p = Rel::hook_of(c).parent()) Rel::list_of(*p).push_back(c);
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
};
}  // namespace detail

template <class Parent>
void owner_hook<Parent>::mark(Parent& parent) noexcept {
  detail::registrable_access::mark_named_as_owner(detail::base_of(parent));
}

}  // namespace rcubatch
