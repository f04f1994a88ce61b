// rcubatch/registry_publish.hpp — how a registry publishes and replaces: the one add path
// (add_core: add, try_add, add_and_hold, add_under), the one replace path (replace_core: replace,
// try_replace, keep_children), and a family's add and replace (add_with_children,
// replace_with_children: all or nothing, the children in the parent's readers' chain before the
// parent is published). Out-of-class definitions of basic_registry's members, declared and
// documented in registry.hpp, which includes this file at its end (issue 35: one concept per header).
#pragma once

#include "rcubatch/registry.hpp"

namespace rcubatch {

template <class Flavor, class Lockable, class... Policies>
template <class Parent, class Range>
replace_result basic_registry<Flavor, Lockable, Policies...>::replace_with_children(Parent& old_parent, Parent& new_parent, Range&& new_children) {
  constexpr std::size_t kp = slot_of<Parent>();
  using P = object_at<kp>;
  using C = std::remove_pointer_t<std::remove_cvref_t<decltype(*std::begin(new_children))>>;
  constexpr std::size_t kc = slot_of<C>();
  using Rel = owner_of<object_at<kc>>;
  static_assert(!std::is_void_v<Rel>, "rcubatch::registry::replace_with_children: the children's type is not owned "
                                      "(no policy declares owning<&Parent::list> for it)");
  if constexpr (!std::is_void_v<Rel>) {
    static_assert(std::is_same_v<typename Rel::parent_type, P>,
                  "rcubatch::registry::replace_with_children: the children's owner type is not the parent's type");
    constexpr bool finds_old_child = detail::looks_up_by_object<std::tuple_element_t<kc, std::tuple<Policies...>>>;
    static_assert(finds_old_child,
                  "rcubatch::registry::replace_with_children: the children's policy must find the old child a new "
                  "one replaces, so its first index needs `key_of(const T&)` and `T* find_locked(const Key&)` "
                  "(lfht_index and hlist_index have both)");
    if constexpr (finds_old_child)  // no second, raw error from the body
      return replace_family<kp, kc, Rel>([&old_parent]() noexcept { return &static_cast<P&>(old_parent); },
                                         static_cast<P&>(new_parent), new_children);
  }
}

template <class Flavor, class Lockable, class... Policies>
template <class I, class K, class Parent, class Range>
replace_result basic_registry<Flavor, Lockable, Policies...>::try_replace_with_children(const K& key, Parent& new_parent, Range&& new_children) {
  constexpr std::size_t kp = slot_of<Parent>();
  using P = object_at<kp>;
  using C = std::remove_pointer_t<std::remove_cvref_t<decltype(*std::begin(new_children))>>;
  using Rel = owner_of<object_at<slot_of<C>()>>;
  static_assert(!std::is_void_v<Rel> && std::is_same_v<typename detail::relation_or_void<Rel>::parent, P>,
                "rcubatch::registry::try_replace_with_children: the children's type is not owned by the parent's "
                "(no policy declares owning<&Parent::list> for it)");
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*index<I>().find_locked(key))>, P>,
                "rcubatch::registry::try_replace_with_children: index I does not hold the parent's type");
  return replace_family<kp, slot_of<C>(), Rel>([this, &key]() { return index<I>().find_locked(key); },
                                               static_cast<P&>(new_parent), new_children);
}

template <class Flavor, class Lockable, class... Policies>
template <class Parent, class Range>
add_result basic_registry<Flavor, Lockable, Policies...>::add_with_children(Parent& parent, Range&& children) {
  constexpr std::size_t kp = slot_of<Parent>();
  using C = std::remove_pointer_t<std::remove_cvref_t<decltype(*std::begin(children))>>;
  constexpr std::size_t kc = slot_of<C>();
  using Rel = owner_of<object_at<kc>>;
  static_assert(!std::is_void_v<Rel> && std::is_same_v<typename detail::relation_or_void<Rel>::parent, object_at<kp>>,
                "rcubatch::registry::add_with_children: the children's type is not owned by the parent's (no "
                "policy declares owning<&Parent::list> for it)");
  if constexpr (!std::is_void_v<Rel>)
    return add_family<kp, kc, Rel>(static_cast<object_at<kp>&>(parent), children);
  else
    return {};
}

template <class Flavor, class Lockable, class... Policies>
template <class ParentIndex, class K, class U>
add_result basic_registry<Flavor, Lockable, Policies...>::add_under(const K& parent_key, U& child) {
  constexpr std::size_t k = slot_of<U>();
  using Rel = owner_of<object_at<k>>;
  static_assert(!std::is_void_v<Rel>, "rcubatch::registry::add_under: the child's type is not owned (no policy "
                                      "declares owning<&Parent::list> for it)");
  if constexpr (!std::is_void_v<Rel>) {
    using P = typename Rel::parent_type;
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(*index<ParentIndex>().find_locked(parent_key))>, P>,
                  "rcubatch::registry::add_under: ParentIndex does not hold the child's parent type");
    return add_core<k>(static_cast<object_at<k>&>(child), "registry::add_under",
                       [this, &parent_key](object_at<k>& c) {
                         P* const p = index<ParentIndex>().find_locked(parent_key);
                         if (p == nullptr || going_away(*p)) return add_status::parent_gone;
                         P* const named = Rel::hook_of(c).parent();
                         if (named == nullptr) Rel::hook_of(c).set_parent(*p);
                         else if (named != p)
                           throw std::invalid_argument("rcubatch::registry::add_under: the child's owner_hook names "
                                                       "another parent than the one with that key (nothing was "
                                                       "changed)");
                         return add_status::added;
                       },
                       false);
  }
}

template <class Flavor, class Lockable, class... Policies>
template <std::size_t K, class Resolve>
add_result basic_registry<Flavor, Lockable, Policies...>::add_core(object_at<K>& t, const char* caller, Resolve&& resolve, bool hold) {
  using T = object_at<K>;
  add_result res;  // refused
  if (!outside_read_section("add") || !lock_not_held(caller)) return res;
  std::scoped_lock lock(mutex_);
  if (!is_fresh(t, caller, "the object")) return res;
  if (const add_status s = std::forward<Resolve>(resolve)(t); s != add_status::added) {
    res.status = s;
    return res;
  }
  if constexpr (!std::is_void_v<owner_of<T>>) {
    if (!owner_accepts<owner_of<T>>(t, caller)) {
      res.status = owner_going_away<owner_of<T>>(t) ? add_status::parent_gone : add_status::refused;
      return res;
    }
  }
  if (!has_room<K>(1)) {
    res.status = add_status::full;
    return res;
  }
  publish_result r = publish_result::refused;
  try {
    r = detail::to_publish_result(std::get<K>(policies_).publish(t));
  } catch (...) {
    domain_->synchronize();  // the hook undid its links, but readers may have found obj
    throw;
  }
  if (r == publish_result::published) {
    link_owned(t);
    t.mark_registered();  // cannot fail: uninitialized was checked under this lock
    if (hold) t.refs().hold();  // before the lock is released: no batch can have taken it yet
    res.status = add_status::added;
    return res;
  }
  if (r == publish_result::refused_after_exposure) domain_->synchronize();
  res.status = add_status::duplicate;
  return res;
}

template <class Flavor, class Lockable, class... Policies>
template <std::size_t K, bool kKeep, class FindOld>
replace_result basic_registry<Flavor, Lockable, Policies...>::replace_core(FindOld&& find_old, object_at<K>& n, const char* caller) {
  using T = object_at<K>;
  using Policy = std::tuple_element_t<K, std::tuple<Policies...>>;
  static_assert(requires(Policy& p, T& t) { p.replace(t, t); },
                "rcubatch::registry::replace: the object's policy needs `replace(T& old, T& new)` (indexed has it)");
  static_assert(!kKeep || detail::has_owned_lists<Policy>,
                "rcubatch::registry::replace(..., keep_children): the object's policy owns no children (declare "
                "owning<&T::list> on it)");
  replace_result r;  // refused
  if (!outside_read_section("replace") || !lock_not_held(caller)) {
    r.stats.refused = true;
    return r;
  }
  std::scoped_lock lock(mutex_);
  if (!is_fresh(n, caller, "the new object")) {
    r.stats.refused = true;
    return r;
  }
  T* const o = std::forward<FindOld>(find_old)();
  if (o == nullptr) {
    r.status = replace_status::not_found;
    return r;
  }
  bool lost = going_away(*o);  // in a batch or a queue: a lost race, not misuse
  if constexpr (!std::is_void_v<owner_of<T>>) lost = lost || owner_going_away<owner_of<T>>(*o);  // its owner's batch takes it
  if (lost) {
    r.status = replace_status::already_unregistering;
    return r;
  }
  if (!successor_owner_accepts(*o, n, caller)) {  // an owned child: n takes o's place
    r.stats.refused = true;
    return r;
  }
  queues q(*this);
  if (!q.push(*o)) {  // never added here, or another registry's: diagnosed by push
    r.stats.refused = true;
    return r;
  }
  // kKeep: n's readers' chain is o's before n is published (a reader finding n sees o's children).
  if constexpr (kKeep) children_step<K>([&]<class Rel>() { Rel::share(*o, n); });
  try {
    std::get<K>(policies_).replace(*o, n);  // throws with nothing changed; the queue is dropped
  } catch (...) {
    if constexpr (kKeep) children_step<K>([&]<class Rel>() { Rel::unshare(n); });  // n never published
    throw;
  }
  link_owned(n);
  n.mark_registered();  // cannot fail: uninitialized, checked under this lock
  detail::registrable_access::set_unlisted_early(*o, true);  // its batch skips the unlist
  if constexpr (kKeep) children_step<K>([&]<class Rel>() { Rel::adopt(*o, n); });
  r.status = replace_status::replaced;
  r.replaced = true;
  r.stats = run(q, std::index_sequence_for<Policies...>{});
  return r;
}

template <class Flavor, class Lockable, class... Policies>
template <class I, bool kKeep, class K, class U>
replace_result basic_registry<Flavor, Lockable, Policies...>::replace_by_key(const K& key, U& new_obj) {
  constexpr std::size_t k = slot_of<U>();
  using T = object_at<k>;
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*index<I>().find_locked(key))>, T>,
                "rcubatch::registry::try_replace: index I does not hold the new object's type");
  return replace_core<k, kKeep>([this, &key]() { return index<I>().find_locked(key); }, static_cast<T&>(new_obj),
                                "registry::try_replace");
}

template <class Flavor, class Lockable, class... Policies>
template <std::size_t K, class Step>
void basic_registry<Flavor, Lockable, Policies...>::children_step(Step&& step) noexcept {
  using Rels = detail::owned_lists_t<std::tuple_element_t<K, std::tuple<Policies...>>>;
  [&]<class... Rs>(std::type_identity<std::tuple<Rs...>>) {
    (step.template operator()<Rs>(), ...);
  }(std::type_identity<Rels>{});
}

template <class Flavor, class Lockable, class... Policies>
bool basic_registry<Flavor, Lockable, Policies...>::is_fresh(const detail::registrable_base& obj, const char* caller, const char* role, bool linked) {
  if (obj.state() == reg_state::uninitialized && !linked) [[likely]]
    return true;
  detail::diag_text msg(caller);
  msg += ": ";
  msg += role;
  msg += " is ";
  msg += linked ? "linked into an owned_list" : to_string(obj.state());
  msg += "; it must be freshly constructed (nothing was changed)";
  detail::diagnose(misuse_kind::register_twice, msg.view());
  return false;
}

template <class Flavor, class Lockable, class... Policies>
template <class C, class Range>
std::vector<C*> basic_registry<Flavor, Lockable, Policies...>::family_members(Range& children, const char* caller) {
  std::vector<C*> out;
  for (auto&& element : children) {
    if constexpr (std::is_pointer_v<std::remove_cvref_t<decltype(element)>>) {
      if (element == nullptr) throw std::invalid_argument(std::string("rcubatch::") + caller + ": a null pointer");
      out.push_back(static_cast<C*>(element));
    } else {
      out.push_back(static_cast<C*>(&element));
    }
  }
  return out;
}

template <class Flavor, class Lockable, class... Policies>
template <class Rel, class C>
bool basic_registry<Flavor, Lockable, Policies...>::family_is_fresh(const typename Rel::parent_type& parent, const std::vector<C*>& children,
                            const char* caller, const char* parent_role, const char* child_role) {
  if (!is_fresh(parent, caller, parent_role)) return false;
  for (C* c : children) {
    if (!is_fresh(*c, caller, child_role)) return false;
    if (Rel::hook_of(*c).is_linked()) return is_fresh(*c, caller, child_role, /*linked=*/true);
    const auto* const named = Rel::hook_of(*c).parent();
    if (named != nullptr && named != &parent)
      throw std::invalid_argument(std::string("rcubatch::") + caller + ": " + child_role +
                                  "'s owner_hook names another parent than " + parent_role + " (nothing was changed)");
  }
  return true;
}

template <class Flavor, class Lockable, class... Policies>
template <std::size_t kp, std::size_t kc, class Rel, class Range>
add_result basic_registry<Flavor, Lockable, Policies...>::add_family(object_at<kp>& parent, Range& children) {
  using P = object_at<kp>;
  using C = object_at<kc>;
  add_result res;  // refused
  if (!outside_read_section("add_with_children") || !lock_not_held("registry::add_with_children")) return res;
  const std::vector<C*> fresh = family_members<C>(children, "registry::add_with_children");
  std::scoped_lock lock(mutex_);
  if (!family_is_fresh<Rel>(parent, fresh, "registry::add_with_children", "the parent", "a child")) return res;
  if constexpr (!std::is_void_v<owner_of<P>>) {  // the parent is itself owned: its owner must accept it
    if (!owner_accepts<owner_of<P>>(parent, "registry::add_with_children")) {
      res.status = owner_going_away<owner_of<P>>(parent) ? add_status::parent_gone : add_status::refused;
      return res;
    }
  }
  if (!has_room<kp>(1) || !has_room<kc>(fresh.size())) {
    res.status = add_status::full;
    return res;
  }
  auto& pp = std::get<kp>(policies_);
  auto& cp = std::get<kc>(policies_);
  std::size_t done = 0;    // children published
  std::size_t linked = 0;  // children linked into parent's list
  bool exposed = false;
  bool parent_published = false;
  auto undo = [&]() noexcept {
    while (done > 0) cp.unlist(*fresh[--done]);
    while (linked > 0) Rel::unlink(parent, *fresh[--linked]);
    if (exposed) domain_->synchronize();  // readers may have found a new object: the caller frees them
  };
  try {
    for (C* c : fresh)
      if (Rel::hook_of(*c).parent() == nullptr) Rel::hook_of(*c).set_parent(parent);
    // In parent's readers' chain before anything is published: a reader that finds the parent
    // the moment it is published sees every child (linked after, they were missing in between).
    for (; linked < fresh.size(); ++linked) Rel::link(parent, *fresh[linked]);
    for (; done < fresh.size(); ++done) {
      const publish_result r = detail::to_publish_result(cp.publish(*fresh[done]));
      if (r != publish_result::published) {
        exposed = exposed || r == publish_result::refused_after_exposure;
        break;  // undone by the policy itself
      }
      exposed = true;
    }
    if (done == fresh.size()) {
      const publish_result r = detail::to_publish_result(pp.publish(parent));
      parent_published = r == publish_result::published;
      exposed = exposed || r == publish_result::refused_after_exposure;
    }
  } catch (...) {
    exposed = true;
    undo();
    throw;
  }
  if (!parent_published) {
    undo();
    res.status = add_status::duplicate;
    return res;
  }
  // --- nothing below fails ---
  link_owned(parent);
  parent.mark_registered();
  for (C* c : fresh) c->mark_registered();  // linked into parent's list before the publishes
  res.status = add_status::added;
  return res;
}

template <class Flavor, class Lockable, class... Policies>
template <std::size_t kp, std::size_t kc, class Rel, class FindOld, class Range>
replace_result basic_registry<Flavor, Lockable, Policies...>::replace_family(FindOld&& find_old, object_at<kp>& new_p, Range& new_children) {
  using P = object_at<kp>;
  using C = object_at<kc>;
  auto& pp = std::get<kp>(policies_);
  auto& cp = std::get<kc>(policies_);
  using first_index = std::tuple_element_t<0, typename std::remove_cvref_t<decltype(cp)>::index_types>;
  replace_result result;
  if (!outside_read_section("replace_with_children") || !lock_not_held("registry::replace_with_children")) {
    result.stats.refused = true;
    return result;
  }
  // the new children, then: [0, swapped) replaced an old one, (paired below)
  const std::vector<C*> fresh = family_members<C>(new_children, "registry::replace_with_children");
  std::vector<C*> replaced_old(fresh.size(), nullptr);  // per new child: the old one it replaced
  std::scoped_lock lock(mutex_);
  queues q(*this);
  P* const found = std::forward<FindOld>(find_old)();  // under the lock (try_replace_with_children: by key)
  if (found == nullptr) {
    result.status = replace_status::not_found;
    return result;
  }
  P& old_p = *found;
  if (going_away(old_p)) {  // a lost race: a result, not misuse (issue 37)
    result.status = replace_status::already_unregistering;
    return result;
  }
  if (!family_is_fresh<Rel>(new_p, fresh, "registry::replace_with_children", "the new parent", "a new child")) {
    result.stats.refused = true;
    return result;
  }
  // A parent that is itself owned (A owns old_p): new_p takes old_p's place in A's list, as replace's new object.
  if (!successor_owner_accepts(old_p, new_p, "registry::replace_with_children")) {
    result.stats.refused = true;
    return result;
  }
  if (!q.push(old_p)) {  // not registered here, going away, in a queue: diagnosed by push
    result.stats.refused = true;
    return result;
  }
  // --- apply, remembering how far: undo() takes back exactly what was done ---
  bool parent_swapped = false;
  std::size_t linked = 0;   // new children linked into new_p's list
  std::size_t applied = 0;  // new children handled (replaced an old one, or published)
  bool exposed = false;
  auto undo = [&]() noexcept {
    while (applied > 0) {
      --applied;
      C& c = *fresh[applied];
      if (C* old_c = replaced_old[applied]) {
        cp.replace(c, *old_c);  // back in place (its keys are c's: cannot differ)
        detail::registrable_access::set_unlisted_early(*old_c, false);
      } else {
        cp.unlist(c);
      }
    }
    while (linked > 0) Rel::unlink(new_p, *fresh[--linked]);
    if (parent_swapped) pp.replace(new_p, old_p);
    if (exposed) domain_->synchronize();  // readers may have found a new object: the caller frees them
  };
  try {
    for (C* c : fresh)
      if (Rel::hook_of(*c).parent() == nullptr) Rel::hook_of(*c).set_parent(new_p);
    // In new_p's readers' chain before new_p is published (as add_family's): a reader that finds
    // new_p the moment it takes old_p's place sees every new child (linked after, none in between).
    for (; linked < fresh.size(); ++linked) Rel::link(new_p, *fresh[linked]);
    pp.replace(old_p, new_p);  // throws with nothing changed
    parent_swapped = exposed = true;
    auto& index0 = cp.template index<first_index>();
    for (; applied < fresh.size(); ++applied) {
      C& c = *fresh[applied];
      C* existing = index0.find_locked(index0.key_of(c));
      if (existing != nullptr) {
        const bool old_child = Rel::hook_of(*existing).is_linked() && Rel::hook_of(*existing).parent() == &old_p &&
                               !detail::registrable_access::unlisted_early(*existing);
        if (!old_child) break;  // the key is another object's (or a new child's): a duplicate
        cp.replace(*existing, c);  // all or nothing; throws with this pair unchanged
        detail::registrable_access::set_unlisted_early(*existing, true);  // also marks it paired
        replaced_old[applied] = existing;
        ++result.swapped;
      } else {
        const publish_result r = detail::to_publish_result(cp.publish(c));
        if (r != publish_result::published) break;  // undone by the policy itself
        ++result.added;
      }
    }
  } catch (...) {
    undo();
    throw;
  }
  if (applied < fresh.size()) {  // refused: a duplicate key, or a refused publish
    undo();
    q.template of<P>().clear();
    result.swapped = result.added = 0;
    return result;
  }
  // --- nothing below fails ---
  link_owned(new_p);
  new_p.mark_registered();
  detail::registrable_access::set_unlisted_early(old_p, true);  // its batch skips the unlist
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    fresh[i]->mark_registered();  // linked into new_p's list before the publishes
    if (C* old_c = replaced_old[i]) q.template of<C>().push(*old_c);  // unlisted: the queue's own push
  }
  result.replaced = true;
  result.status = replace_status::replaced;
  result.stats = run(q, std::index_sequence_for<Policies...>{});
  return result;
}

}  // namespace rcubatch
