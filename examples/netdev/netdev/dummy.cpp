// netdev/dummy.cpp — the dummy link type (drivers/net/dummy.c) and the namespace's lo: no link
// state, no tables of their own, nothing to unlink (a batch of dummies skips grace period #2).
#include "netdev/link_ops.hpp"

namespace netdev {

namespace {
std::string dummy_validate(netns&, const link_request& req, const net_device*) { return refuse_tunnel_params(req); }
}  // namespace

const link_ops dummy_link_ops{.validate = dummy_validate};

/// lo is never created by `link add` (loopback_net_init makes it) and cannot be deleted.
const link_ops loopback_link_ops{.has_dellink = false, .validate = dummy_validate};

}  // namespace netdev
