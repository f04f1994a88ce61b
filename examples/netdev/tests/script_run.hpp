// examples/netdev/tests/script_run.hpp — runs a netsim script in-process on memb, with no reader
// threads, and keeps what it printed: the netsim tests' one way to run a script.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "netsim/session.hpp"

namespace netsim_test {

struct outcome {
  netsim::session_result result;
  std::string out, err;
  std::vector<std::string> read_errors;  ///< read_script's, each naming file:line (the lines still run)
};

/// Effects: reads `script` as file `file` and runs it in one session (mode, -force as given).
inline outcome run_script(const std::string& script, const std::string& file, netdev::unreg_mode mode, bool force) {
  std::istringstream in(script);
  outcome o;
  auto lines = netsim::read_script(in, file, o.read_errors);
  netsim::session_options opt;
  opt.mode = mode;
  opt.readers = 0;
  opt.force = force;
  std::ostringstream out, err;
  o.result = netsim::run_session<rcubatch::flavor::memb>(lines, netsim::variables{}, opt, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

}  // namespace netsim_test
