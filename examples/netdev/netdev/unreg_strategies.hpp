// netdev/unreg_strategies.hpp — make_unreg_strategy: an unreg_mode's strategy (netsim's --mode).
#pragma once

#include <memory>

#include "netdev/batched_unreg.hpp"
#include "netdev/legacy_unreg.hpp"
#include "netdev/unreg_strategy.hpp"

namespace netdev {

/// The strategy of `mode`. Throws: std::bad_alloc.
template <class Flavor>
std::unique_ptr<unreg_strategy<Flavor>> make_unreg_strategy(unreg_mode mode) {
  if (mode == unreg_mode::legacy) return std::make_unique<legacy_unreg<Flavor>>();
  return std::make_unique<batched_unreg<Flavor>>();
}

}  // namespace netdev
