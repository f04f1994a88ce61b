// rcubatch/membership.hpp — members shared by several parents: membership edges the library keeps.
//
//   struct nh_group;
//   struct nexthop : rcubatch::registrable<nexthop> {
//     std::uint32_t id;
//     rcubatch::lfht_hook<nexthop> by_id;
//     rcubatch::memberships<nexthop, nh_group> groups;          // the groups it is in (writer side)
//   };
//   struct nh_group : rcubatch::registrable<nh_group> {
//     std::uint32_t id;
//     rcubatch::lfht_hook<nh_group> by_id;
//     rcubatch::member_list<nexthop, &nexthop::groups> members{*this};  // readers may walk it
//   };
//   using nexthop_ids = rcubatch::lfht_index<nexthop, &nexthop::by_id, rcubatch::key_member<&nexthop::id>>;
//   using group_ids = rcubatch::lfht_index<nh_group, &nh_group::by_id, rcubatch::key_member<&nh_group::id>>;
//   struct group_policy : rcubatch::indexed<nh_group, group_ids>,
//                         rcubatch::having_members<&nh_group::members,
//                                                  &rcubatch::queue_when_empty<&nh_group::members>> {};
//   (compiled in tests/header_examples_test.cpp)
//
//   rcubatch::registry<group_policy, rcubatch::indexed<nexthop, nexthop_ids>> table;
//   table.add(*nh); table.add(*nh2); table.add(*g);
//   { std::scoped_lock lock(table.writer_lock()); g->members.join(*nh); g->members.join(*nh2); }
//   table.unregister(*nh);    // nh leaves every group it is in (g keeps nh2)
//   table.unregister(*nh2);   // g, left with no member, goes in nh2's batch: ≤ 2 grace periods
//   (compiled in tests/header_examples_test.cpp)
//
// Deleting a group (table.unregister(*g)) drops its edges; its members stay registered, in their
// other groups.
//
// Replace: memberships are not carried across registry::replace (nor try_replace). The old
// version is torn down as a delete tears it down, edges and all: a replaced member leaves every
// group (each gets the Hook, so queue_when_empty deletes a group it was the last member of, in the
// replace's batch), a replaced group drops its edges; the new version starts in no group, or with
// no member. Join again under the writer lock (tests/interaction_rows_test.cpp shows both).
//
// Linux's nexthop groups are the model (net/ipv4/nexthop.c: a group holds one nh_grp_entry per
// member, and each nexthop a list of the entries naming it; deleting a nexthop removes its entries
// from every group, and a group left with no member is deleted too; deleting a group only drops
// its entries). Here the entry is a member_edge, allocated by join and freed by the batch that
// removes it, after its grace periods. The relation is declared once, on the group's policy
// (having_members<&Group::list, Hook>); the member's policy declares nothing. Edges change only
// under the registry's writer lock, at these points:
//   - join (the caller, under the writer lock): a new edge at the tail of the group's list and in
//     the member's memberships; readers see it once join returns.
//   - the member's batch, unlist phase: each of its edges leaves its group's list (readers of the
//     group stop finding the member, before grace period #1); notify phase: for each group it
//     left that is still registered and not in this batch, the Hook runs (Hook(group, batch):
//     queue_when_empty queues a group with no member left — in the same batch, at no extra grace
//     period), and the edge is retired to the batch.
//   - the group's batch, unlist phase: each of its edges leaves its member's memberships and is
//     retired to the batch; the members stay registered.
// So a member deletion costs its edges no grace period of their own: ≤ 2 per batch, as always.
//
// Thread safety / memory ordering: readers walk a group's members inside a read section
// (member_list::rcu_range), with the discipline of owned_list::rcu_range (owned.hpp says why a
// list of our own): an edge is published by a release store into its predecessor's next and
// unlinked by storing its next into its predecessor, its own next kept; it is freed after a grace
// period that follows its unlink (batch::retire), and its member is destroyed after one too. So a
// reader never reaches a freed edge nor a destroyed member; a member leaving during the walk is
// seen or not. memberships is writer-side only.
//
// Misuse: join of an object that is not registered (not_registered) or of a member already in
// the group (register_twice): diagnosed, nothing changed. A group whose policy declares no
// having_members<> cannot be unregistered once it had a member (join marks it, as owner_hook
// marks a parent: owned.hpp's children_left_behind refuses it), instead of leaving edges that name
// it after its destroy. Both types need a lane (a policy) in the registry: a compile error
// otherwise.
//
// Not here (issue 37, left for later): leaving one group without deleting either side (its edge
// would need a grace period of its own), and async_unregister's pipelined grace period #1 — a
// batch with a type of a membership relation always waits for its own first grace period, as its
// unlist pass unlinks edges.
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
#include "rcubatch/retire_node.hpp"

namespace rcubatch {

template <class Member, class Group>
class memberships;
template <class Member, auto Groups>
class member_list;

namespace detail {
template <auto List, auto Hook>
struct member_relation;
template <class M>
struct memberships_traits;
template <class Member, class Group>
struct memberships_traits<memberships<Member, Group> Member::*> {
  using member_type = Member;
  using group_type = Group;
};
}  // namespace detail

/// One membership: Group → Member (Linux's nh_grp_entry). Allocated by member_list::join and
/// freed by the batch that removes it; users only read it.
template <class Member, class Group>
class member_edge : private retire_node {
 public:
  member_edge(const member_edge&) = delete;
  member_edge& operator=(const member_edge&) = delete;
  /// Effects: the member. Thread safety: a reader that reached the edge in a read section.
  Member& member() const noexcept { return *member_; }
  /// Effects: the group. Thread safety: as member().
  Group& group() const noexcept { return *group_; }

 private:
  template <class, class>
  friend class memberships;
  template <class, auto>
  friend class member_list;
  template <auto, auto>
  friend struct detail::member_relation;

  member_edge(Member& m, Group& g) noexcept : member_(&m), group_(&g) {
    dispose = [](retire_node* n) noexcept { delete static_cast<member_edge*>(n); };
  }
  retire_node& node() noexcept { return *this; }

  Member* member_;
  Group* group_;
  std::atomic<member_edge*> next_in_group_{nullptr};  // the readers' chain: written under the writer lock
  member_edge* prev_in_group_ = nullptr;              // writer-side only
  boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> in_member_;
};

/// The edges naming a member, a member of it: the groups it is in. Writer-side (the registry's
/// writer lock): the library links and unlinks; users read size/empty under the lock.
template <class Member, class Group>
class memberships {
 public:
  using edge_type = member_edge<Member, Group>;  ///< one membership
  /// Effects: in no group. Throws: nothing.
  memberships() noexcept = default;
  memberships(const memberships&) = delete;
  memberships& operator=(const memberships&) = delete;
  /// Effects: how many groups it is in. Requires: the writer lock, or no concurrent writer.
  std::size_t size() const noexcept { return list_.size(); }
  /// Effects: whether it is in no group. Requires: as size.
  bool empty() const noexcept { return list_.empty(); }

 private:
  template <class, auto>
  friend class member_list;
  template <auto, auto>
  friend struct detail::member_relation;
  using list_type =
      boost::intrusive::list<edge_type,
                             boost::intrusive::member_hook<edge_type, decltype(edge_type::in_member_),
                                                           &edge_type::in_member_>,
                             boost::intrusive::constant_time_size<true>>;
  list_type list_;
};

/// The members of a group, a member of the group: one edge per member, in join order. Readers
/// walk it inside a read section (rcu_range); writers change it under the writer lock (join; the
/// batches do the rest).
template <class Member, auto Groups>
class member_list {
  using traits = detail::memberships_traits<decltype(Groups)>;
  static_assert(std::is_same_v<typename traits::member_type, Member>,
                "rcubatch::member_list<Member, Groups>: Groups must be a member `memberships<Member, Group> Member::*`");

 public:
  using member_type = Member;                            ///< the members' type
  using group_type = typename traits::group_type;        ///< the type of the object holding this list
  using edge_type = member_edge<Member, group_type>;     ///< one membership

  /// Effects: an empty list of `self`, the group holding it (`members{*this}`). Throws: nothing.
  explicit member_list(group_type& self) noexcept : group_(&self) {}
  member_list(const member_list&) = delete;
  member_list& operator=(const member_list&) = delete;
  /// Frees the edges still linked: by then the group is destroyed (after its batch, which
  /// unlinked them all) or was never registered. Nothing else can name them.
  ~member_list() {
    for (edge_type* e = first_.load(std::memory_order_relaxed); e != nullptr;) {
      edge_type* next = e->next_in_group_.load(std::memory_order_relaxed);
      if (e->in_member_.is_linked()) {
        auto& l = (e->member_->*Groups).list_;
        l.erase(l.iterator_to(*e));
      }
      delete e;
      e = next;
    }
  }

  /// Requires: the registry's writer lock; the group and `m` are registered in that registry.
  /// Effects: `m` becomes a member (an edge at the tail, published with a release store: readers
  /// see it from here on). Returns false, nothing changed: the group or `m` is already being
  /// unregistered (a lost race, not misuse). Misuse (diagnosed, false, nothing changed): either
  /// is not registered (not_registered), `m` is a member already (register_twice).
  /// Throws: std::bad_alloc (nothing changed); misuse_error as above. Complexity: O(size()).
  bool join(Member& m) {
    const reg_state gs = static_cast<registrable<group_type>&>(*group_).state();
    const reg_state ms = static_cast<registrable<Member>&>(m).state();
    if (gs == reg_state::uninitialized || ms == reg_state::uninitialized) {
      detail::diagnose(misuse_kind::not_registered,
                       "member_list::join: the group or the member is not registered (nothing was changed)");
      return false;
    }
    if (gs != reg_state::registered || ms != reg_state::registered) return false;
    for (const Member& already : rcu_range()) {
      if (&already == &m) {
        detail::diagnose(misuse_kind::register_twice,
                         "member_list::join: the object is a member of this group already (nothing was changed)");
        return false;
      }
    }
    auto* e = new edge_type(m, *group_);
    e->prev_in_group_ = last_;
    std::atomic<edge_type*>& slot = last_ == nullptr ? first_ : last_->next_in_group_;
    slot.store(e, std::memory_order_release);
    last_ = e;
    ++size_;
    (m.*Groups).list_.push_back(*e);
    detail::registrable_access::mark_named_as_owner(static_cast<registrable<group_type>&>(*group_));
    return true;
  }

  /// Effects: how many members. Requires: the writer lock, or no concurrent writer. O(1).
  std::size_t size() const noexcept { return size_; }
  /// Effects: whether no member is left. Requires: as size.
  bool empty() const noexcept { return size_ == 0; }

  /// How a reader follows the edges (detail/rcu_chain.hpp), yielding their members.
  template <class M>
  struct chain_step {
    /// Effects: the next edge (acquire: as its join published it), or null.
    static const edge_type* next(const edge_type& e) noexcept {
      return e.next_in_group_.load(std::memory_order_acquire);
    }
    /// Effects: the edge's member.
    static M& value(const edge_type& e) noexcept { return e.member(); }
  };
  /// What rcu_range returns: a forward range over the members (M is Member or const Member),
  /// for readers (its contract is rcu_range's).
  template <class M>
  using range = detail::rcu_chain_range<const edge_type, M, chain_step<M>>;

  /// Effects: the members, in join order: each member linked for the whole walk is visited once;
  /// one joining or leaving during the walk is visited or not; none after its destroy. The walk
  /// always ends (edges are linked at the tail only, never linked again once unlinked).
  /// Requires: the walk and every use of what it yields lie inside one read section of the
  /// registry's flavor in which the group itself was found (or the writer lock is held: then it
  /// is exact). Thread safety: any number of readers, concurrently with the writer.
  /// Throws: nothing. Complexity: O(1); the walk O(members).
  range<Member> rcu_range() noexcept { return range<Member>(first_.load(std::memory_order_acquire)); }
  /// Effects, Requires, Thread safety: as rcu_range(), read-only.
  range<const Member> rcu_range() const noexcept {
    return range<const Member>(first_.load(std::memory_order_acquire));
  }

 private:
  template <auto, auto>
  friend struct detail::member_relation;

  /// Requires: the writer lock; e is in this list. Effects: e out of the readers' chain and the
  /// writer's count; e's own next is kept (a reader standing on it goes on).
  void unlink(edge_type& e) noexcept {
    edge_type* const next = e.next_in_group_.load(std::memory_order_relaxed);
    std::atomic<edge_type*>& slot = e.prev_in_group_ == nullptr ? first_ : e.prev_in_group_->next_in_group_;
    slot.store(next, std::memory_order_release);
    if (next == nullptr)
      last_ = e.prev_in_group_;
    else
      next->prev_in_group_ = e.prev_in_group_;
    --size_;
  }

  group_type* group_;                       // the group holding this list
  std::atomic<edge_type*> first_{nullptr};  // the readers' head: written under the writer lock
  edge_type* last_ = nullptr;               // writer-side
  std::size_t size_ = 0;                    // writer-side
};

/// A ready-made Hook for having_members: queues the group when it has no member left (Linux
/// deletes a nexthop group whose last nexthop goes). Runs in the notify phase of the member's
/// batch, under the writer lock.
namespace detail {
template <class L>
struct list_holder;
template <class Group, class List>
struct list_holder<List Group::*> {
  using type = Group;
};
}  // namespace detail

template <auto List>
void queue_when_empty(typename detail::list_holder<decltype(List)>::type& g, batch& b) noexcept {
  if ((g.*List).empty()) b.queue(g);
}

/// A policy mixin for the group's policy: its objects have members through the member_list named
/// (a member of its object type). Hook: nullptr, or a function `void(Group&, batch&) noexcept`
/// called once per group a deleted member leaves (see the file comment), e.g. queue_when_empty.
/// Adds no hook of its own: a notify written by the policy is kept.
template <auto List, auto Hook = nullptr>
struct having_members {
  /// The relation: what rollback_many reads.
  using member_lists = std::tuple<detail::member_relation<List, Hook>>;
};

namespace detail {
/// One group→members relation, from the group's list member and its hook.
template <class Group, class Member, auto Groups, member_list<Member, Groups> Group::*List, auto Hook>
struct member_relation<List, Hook> {
  using group_type = Group;
  using member_type = Member;
  using edge_type = member_edge<Member, Group>;
  static_assert(std::is_same_v<decltype(Hook), std::nullptr_t> ||
                    std::is_nothrow_invocable_r_v<void, decltype(Hook), Group&, batch&>,
                "rcubatch::having_members<&Group::list, Hook>: Hook must be nullptr or a function "
                "`void hook(Group&, rcubatch::batch&) noexcept` (it runs in a batch's notify phase)");

  /// The member's unlist: its edges leave their groups' lists (they stay in its memberships
  /// until notify, which needs their groups).
  static void leave_groups(Member& m) noexcept {
    for (edge_type& e : (m.*Groups).list_) (e.group_->*List).unlink(e);
  }
  /// The member's notify: each group it left that is still registered and not in this batch gets
  /// the hook; every edge is retired (its unlink, in unlist, came before grace period #1).
  static void notify_groups(Member& m, batch& b) noexcept {
    auto& edges = (m.*Groups).list_;
    while (!edges.empty()) {
      edge_type& e = edges.front();
      edges.pop_front();
      Group& g = *e.group_;
      b.retire(e.node());
      if constexpr (!std::is_same_v<decltype(Hook), std::nullptr_t>) {
        if (static_cast<registrable<Group>&>(g).state() == reg_state::registered && !b.contains(g)) Hook(g, b);
      }
    }
  }
  /// The group's unlist: its edges leave their members' memberships and are retired; the readers'
  /// chain is emptied for new walks (walks under way go on: the edges' next pointers are kept).
  static void drop_members(Group& g, batch& b) noexcept {
    auto& list = g.*List;
    for (edge_type* e = list.first_.load(std::memory_order_relaxed); e != nullptr;) {
      edge_type* const next = e->next_in_group_.load(std::memory_order_relaxed);
      auto& of_member = (e->member_->*Groups).list_;
      of_member.erase(of_member.iterator_to(*e));
      b.retire(e->node());
      e = next;
    }
    list.first_.store(nullptr, std::memory_order_release);
    list.last_ = nullptr;
    list.size_ = 0;
  }
};

/// P::member_lists, or none.
template <class P>
auto member_lists_or_none(int) -> typename P::member_lists;
template <class P>
auto member_lists_or_none(long) -> std::tuple<>;
template <class P>
using member_lists_t = decltype(member_lists_or_none<std::remove_cv_t<P>>(0));

/// The relations (of every policy Ps) in which T is the member type, in one tuple.
template <class T, class Rels>
struct relations_with_member;
template <class T>
struct relations_with_member<T, std::tuple<>> {
  using type = std::tuple<>;
};
template <class T, class R, class... Rs>
struct relations_with_member<T, std::tuple<R, Rs...>> {
  using rest = typename relations_with_member<T, std::tuple<Rs...>>::type;
  using type = std::conditional_t<std::is_same_v<typename R::member_type, T>,
                                  decltype(std::tuple_cat(std::declval<std::tuple<R>>(), std::declval<rest>())), rest>;
};
template <class T, class... Ps>
using member_relations_t =
    typename relations_with_member<T, decltype(std::tuple_cat(std::declval<member_lists_t<Ps>>()...))>::type;

/// The three steps of a lane, over a tuple of relations (empty: nothing, at no cost).
template <class Rels>
struct membership_steps;
template <class... Rs>
struct membership_steps<std::tuple<Rs...>> {
  static constexpr bool any = sizeof...(Rs) != 0;
  template <class M>
  static void leave_groups(M& m) noexcept {
    (Rs::leave_groups(m), ...);
  }
  template <class M>
  static void notify_groups(M& m, batch& b) noexcept {
    (Rs::notify_groups(m, b), ...);
  }
  template <class G>
  static void drop_members(G& g, batch& b) noexcept {
    (Rs::drop_members(g, b), ...);
  }
};

/// Whether every member type of the relations Rels is one of Ts (has a lane).
template <class Rels, class... Ts>
struct membership_check;
template <class M, class... Ts>
inline constexpr bool has_lane_among = (std::is_same_v<M, Ts> || ...);
template <class... Rs, class... Ts>
struct membership_check<std::tuple<Rs...>, Ts...> {
  static constexpr bool members_have_lanes = (has_lane_among<typename Rs::member_type, Ts...> && ... && true);
};
template <class... Ps>
using all_member_lists_t = decltype(std::tuple_cat(std::declval<member_lists_t<Ps>>()...));
}  // namespace detail

}  // namespace rcubatch
