// netsim/seed_table.hpp — `netsim seed-table`: every seed experiment, legacy then batched, one table.
#pragma once

#include <string>

namespace netsim {

struct seed_table_options {
  std::string scripts_dir;
  std::string flavor = "memb";
  unsigned readers = 1;
  bool short_sizes = false;  // ctest: small N so it stays fast
  unsigned repeat = 5;       // runs per experiment and mode; the table shows the median time
};

/// Prints the Markdown table and the goal checks on stdout. Returns the process exit status.
int run_seed_table(const seed_table_options& opt);

}  // namespace netsim
