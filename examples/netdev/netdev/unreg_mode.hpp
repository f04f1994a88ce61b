// netdev/unreg_mode.hpp — which kernel era's unregistration a registry runs.
#pragma once

namespace netdev {

/// batched: 2.6.33+'s unregister_netdevice_many (one rcubatch::rollback_many per command).
/// legacy: 2.6.32, one device at a time with the grace periods it paid (netdev/legacy_unreg.hpp).
enum class unreg_mode { batched, legacy };

}  // namespace netdev
