// rcubatch/retire_node.hpp — a sub-object handed to a batch to be freed after its grace periods.
//
//   struct route : rcubatch::retire_node {
//     route() { dispose = [](rcubatch::retire_node* n) noexcept { delete static_cast<route*>(n); }; }
//     ~route() { ++routes_freed; }
//   };
//   (compiled in tests/header_examples_test.cpp)
//
//   void uninit(routed_session& s, rcubatch::batch& b) noexcept {   // a policy's hook
//     b.retire(*s.fib_route);            // after unlinking it: no allocation
//     b.retire_with(s, *s.cache_route);  // disposed right after `s` is destroyed
//   }
//   (compiled in tests/header_examples_test.cpp)
//
// The hook is safe_link: a node knows whether it is retired, so retiring it twice is diagnosed
// (misuse_kind::retired_twice) instead of linking it to itself and disposing it twice.
#pragma once

#include <boost/intrusive/slist.hpp>
#include <boost/intrusive/slist_hook.hpp>

namespace rcubatch {

/// Derive from it and set `dispose`; the batch calls dispose(this) once, after the grace period
/// that covers the node's unlink.
struct retire_node
    : boost::intrusive::slist_base_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
  void (*dispose)(retire_node*) noexcept = nullptr;
};

namespace detail {
/// FIFO list of retirees (the batch's untied ones): disposed in retire order.
using retire_fifo = boost::intrusive::slist<retire_node, boost::intrusive::cache_last<true>,
                                            boost::intrusive::constant_time_size<false>>;
/// One pointer: the retirees tied to one owner object, disposed right after it (newest first).
using retire_chain = boost::intrusive::slist<retire_node, boost::intrusive::linear<true>,
                                             boost::intrusive::constant_time_size<false>>;

inline void dispose_all(retire_fifo& l) noexcept {
  l.clear_and_dispose([](retire_node* n) noexcept { n->dispose(n); });
}
inline void dispose_all(retire_chain& l) noexcept {
  l.clear_and_dispose([](retire_node* n) noexcept { n->dispose(n); });
}
}  // namespace detail

}  // namespace rcubatch
