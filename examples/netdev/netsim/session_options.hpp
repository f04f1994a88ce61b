// netsim/session_options.hpp — how one netsim run is set up (no flavor, no registry: the option
// parser, netsim/options.hpp, fills it without instantiating the interpreter).
#pragma once

#include "netdev/unreg_mode.hpp"

namespace netsim {

struct session_options {
  netdev::unreg_mode mode = netdev::unreg_mode::batched;
  unsigned readers = 1;
  bool force = false;
  bool print_times = true;
  /// Keep every `time` line's figures in session_result::timings (seed-table). Off, a stream of
  /// any length runs in memory independent of its length.
  bool record_times = true;
  /// Flush `out` after each line (a pipe's reader sees each answer as its command runs).
  bool flush_each_line = false;
};

}  // namespace netsim
