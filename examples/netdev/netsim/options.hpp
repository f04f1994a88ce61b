// netsim/options.hpp — netsim's command line, parsed into plain data (no flavor, no registry), so
// that every good and bad argument can be tested without running anything (tests/netsim_options_test).
//
//   netsim [--mode batched|legacy] [--readers N] [--flavor memb|qsbr|mb|bp] [-force]
//          [--stats json|text] [-D NAME=VALUE]... (-batch FILE|- | COMMAND...)
//   netsim seed-table [--short] [--repeat K] [--flavor F] [--readers N] [--scripts DIR]
//   netsim -h|--help
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "netsim/script.hpp"
#include "netsim/seed_table.hpp"
#include "netsim/session_options.hpp"

namespace netsim {

/// The usage lines (printed after a usage error, and by --help) and the command summary (--help).
extern const char* const kUsage;
extern const char* const kHelp;

/// The four liburcu flavors netsim can run on, by their command-line names.
bool is_flavor_name(const std::string& name) noexcept;

/// What `netsim [options] (-batch FILE | COMMAND...)` asks for.
struct run_options {
  session_options session;
  std::string flavor = "memb";  // one of is_flavor_name's names
  bool stats_json = false;      // --stats json: one JSON object on stdout, the answers on stderr
  bool stats_text = false;      // --stats text: the registry's figures (batches, GPs, phase times) on stderr at exit
  std::string batch_file;       // "-" = stdin; empty: run `command`
  std::vector<std::string> command;
  variables vars;               // -D NAME=VALUE
};

struct command_line {
  enum class action { run, seed_table, help };
  action what = action::run;
  run_options run;               // what == run
  seed_table_options seed_table; // what == seed_table
};

/// A command line netsim cannot run; what() names the argument and what was wrong with it.
class usage_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses argv[1..] (`args`, without the program name).
/// Run mode: options are read up to the first word that is not one (or an option missing its
/// value): that word and everything after it is the command, given to the interpreter as is.
/// `default_scripts_dir` is seed-table's --scripts when not given.
/// Throws: usage_error — an unknown seed-table argument, a bad value (--mode, --readers 0…64,
/// --repeat 1…1000, --stats, -D without '=', an unknown --flavor), or neither -batch nor a command.
/// Complexity: O(total length of args).
command_line parse_command_line(const std::vector<std::string>& args, const std::string& default_scripts_dir);

}  // namespace netsim
