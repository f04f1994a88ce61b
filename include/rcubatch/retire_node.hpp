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

#include <cstdint>

#include <boost/intrusive/slist.hpp>
#include <boost/intrusive/slist_hook.hpp>

namespace rcubatch {

/// Derive from it and set `dispose`; the batch calls dispose(this) once, after the grace period
/// that covers the node's unlink.
struct retire_node
    : boost::intrusive::slist_base_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> {
  void (*dispose)(retire_node*) noexcept = nullptr;  ///< called once with this node, by the batch
  /// Set by batch::retire_with, not by users: the address of the owner it is disposed right
  /// after (0: untied). The batch keeps tied retirees (an owner object stores no list of them),
  /// so the node records its owner (only compared, never followed).
  std::uintptr_t tied_to = 0;
};

namespace detail {
/// FIFO list of retirees (the batch's untied ones): disposed in retire order.
using retire_fifo = boost::intrusive::slist<retire_node, boost::intrusive::cache_last<true>,
                                            boost::intrusive::constant_time_size<false>>;
/// One pointer: the retirees of owners outside the batch (disposed after the drain).
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
