// rcubatch/registry_by_key.hpp — registry deletes that look their objects up under the writer
// lock: try_unregister_many<I>(keys), the conditional try_unregister<I>(key, pred) and the flush
// by predicate unregister_if<I>(pred) (try_unregister<I>(key) itself stays in registry.hpp, beside
// the combining gate it goes through). Out-of-class definitions of basic_registry's members,
// declared and documented in registry.hpp, which includes this file at its end (issue 35).
#pragma once

#include "rcubatch/registry.hpp"

namespace rcubatch {

template <class Flavor, class Lockable, class... Policies>
template <class I, class Keys>
unregister_result basic_registry<Flavor, Lockable, Policies...>::try_unregister_many(const Keys& keys) {
  unregister_result r;
  std::size_t going = 0;  // found, but already going away
  r.stats = unregister_with([&](queues& q) {
    auto& index_ = index<I>();
    for (const auto& key : keys) {
      auto* obj = index_.find_locked(key);
      if (obj == nullptr || q.contains(*obj)) {
        ++r.missed;
      } else if (going_away(*obj)) {  // still listed, in a running batch (a chunked unlist's)
        ++r.missed;
        ++going;
      } else if (q.push(*obj)) {
        ++r.unregistered;
      }
    }
  });
  if (r.unregistered > 0) r.status = unregister_status::unregistered;
  else if (r.stats.refused) r.status = unregister_status::refused;  // every key found was refused (report)
  else if (going > 0) r.status = unregister_status::already_unregistering;
  return r;
}

template <class Flavor, class Lockable, class... Policies>
template <class I, class K, class Pred>
unregister_result basic_registry<Flavor, Lockable, Policies...>::try_unregister(const K& key, Pred&& pred) {
  unregister_result r;
  bool kept = false;
  r.stats = unregister_with([&](queues& q) {
    auto* const obj = index<I>().find_locked(key);
    if (obj == nullptr || going_away(*obj)) {
      ++r.missed;
    } else if (!static_cast<bool>(pred(std::as_const(*obj)))) {
      kept = true;
    } else if (q.push(*obj)) {
      ++r.unregistered;
    }
  });
  r.status = r.unregistered > 0 ? unregister_status::unregistered
             : kept             ? unregister_status::kept
             : r.stats.refused  ? unregister_status::refused
                                : unregister_status::not_found;
  return r;
}

template <class Flavor, class Lockable, class... Policies>
template <class I, class Pred>
unregister_result basic_registry<Flavor, Lockable, Policies...>::unregister_if(Pred&& pred) {
  unregister_result r;
  r.stats = unregister_with([&](queues& q) {
    const read_guard<typename I::flavor_type> walk;
    for (auto& obj : index<I>()) {
      if (going_away(obj) || q.contains(obj) || !static_cast<bool>(pred(std::as_const(obj)))) continue;
      if (q.push(obj)) ++r.unregistered;
    }
  });
  r.status = r.unregistered > 0 ? unregister_status::unregistered
             : r.stats.refused  ? unregister_status::refused
                                : unregister_status::not_found;
  return r;
}

}  // namespace rcubatch
