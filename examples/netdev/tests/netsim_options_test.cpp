// netsim's command line (netsim/options.hpp): what good arguments set, and that each bad one is a
// usage_error naming what was wrong (main prints it with the usage and exits 2).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "netsim/options.hpp"

namespace {

using netsim::command_line;
using args = std::vector<std::string>;

command_line parse(const args& a) { return netsim::parse_command_line(a, "/default/scripts"); }

/// The message of the usage_error `a` throws ("" if it parses).
std::string error_of(const args& a) {
  try {
    parse(a);
  } catch (const netsim::usage_error& e) {
    return e.what();
  }
  return "";
}

std::string value_of(const netsim::variables& v, const std::string& name) {
  std::string w = "{" + name + "}";
  EXPECT_FALSE(v.substitute(w).has_value());
  return w;
}

/// Everything a run command line sets but its -D variables.
struct run_settings {
  netdev::unreg_mode mode;
  unsigned readers;
  bool force;
  std::string flavor;
  bool stats_json;
  std::string batch_file;
  args command;
};

/// Expects `c` to be a run with exactly the settings `want`.
void expect_run(const command_line& c, const run_settings& want) {
  EXPECT_EQ(c.what, command_line::action::run);
  EXPECT_EQ(c.run.session.mode, want.mode);
  EXPECT_EQ(c.run.session.readers, want.readers);
  EXPECT_EQ(c.run.session.force, want.force);
  EXPECT_EQ(c.run.flavor, want.flavor);
  EXPECT_EQ(c.run.stats_json, want.stats_json);
  EXPECT_EQ(c.run.batch_file, want.batch_file);
  EXPECT_EQ(c.run.command, want.command);
}

TEST(netsim_options, defaults_with_a_command) {
  expect_run(parse({"link", "add", "d0", "type", "dummy"}),
             {.mode = netdev::unreg_mode::batched, .readers = 1, .force = false, .flavor = "memb",
              .stats_json = false, .batch_file = "", .command = {"link", "add", "d0", "type", "dummy"}});
}

TEST(netsim_options, every_run_option) {
  const command_line c = parse({"--mode", "legacy", "--readers", "64", "--flavor", "qsbr", "-force", "--stats", "json",
                                "-D", "N=20", "-D", "EMPTY=", "-batch", "x.batch"});
  expect_run(c, {.mode = netdev::unreg_mode::legacy, .readers = 64, .force = true, .flavor = "qsbr",
                 .stats_json = true, .batch_file = "x.batch", .command = {}});
  EXPECT_EQ(value_of(c.run.vars, "N"), "20");
  EXPECT_EQ(value_of(c.run.vars, "EMPTY"), "");
  EXPECT_EQ(parse({"--force", "-b", "-"}).run.batch_file, "-");
  EXPECT_EQ(parse({"--readers", "0", "-b", "-"}).run.session.readers, 0U);
}

TEST(netsim_options, the_command_starts_at_the_first_word_that_is_not_an_option) {
  // An unknown option, or an option missing its value, is the command (the interpreter answers it).
  EXPECT_EQ(parse({"--readers", "2", "--bogus", "x"}).run.command, (args{"--bogus", "x"}));
  EXPECT_EQ(parse({"--mode"}).run.command, (args{"--mode"}));
  // Options after the command belong to it.
  const command_line c = parse({"link", "show", "--mode", "legacy"});
  EXPECT_EQ(c.run.session.mode, netdev::unreg_mode::batched);
  EXPECT_EQ(c.run.command, (args{"link", "show", "--mode", "legacy"}));
}

TEST(netsim_options, help) {
  EXPECT_EQ(parse({"--help"}).what, command_line::action::help);
  EXPECT_EQ(parse({"--mode", "legacy", "-h"}).what, command_line::action::help);
}

TEST(netsim_options, bad_run_arguments_name_what_was_wrong) {
  EXPECT_EQ(error_of({}), "no command: give -batch FILE|- or a COMMAND");
  EXPECT_EQ(error_of({"--mode", "fast", "link", "show"}), "--mode must be batched or legacy");
  EXPECT_EQ(error_of({"--readers", "65", "link", "show"}), "--readers takes a number from 0 to 64");
  EXPECT_EQ(error_of({"--readers", "-1", "link", "show"}), "--readers takes a number from 0 to 64");
  EXPECT_EQ(error_of({"--readers", "2x", "link", "show"}), "--readers takes a number from 0 to 64");
  EXPECT_EQ(error_of({"--stats", "yaml", "link", "show"}), "--stats takes json or text");
  EXPECT_EQ(error_of({"-D", "N", "link", "show"}), "-D needs NAME=VALUE");
  EXPECT_EQ(error_of({"--flavor", "signal", "link", "show"}), "unknown flavor 'signal'; expected one of: memb, qsbr, mb, bp");
  EXPECT_EQ(error_of({"--readers", "2"}), "no command: give -batch FILE|- or a COMMAND");
}

TEST(netsim_options, seed_table) {
  const command_line d = parse({"seed-table"});
  EXPECT_EQ(d.what, command_line::action::seed_table);
  EXPECT_EQ(d.seed_table.scripts_dir, "/default/scripts");
  EXPECT_FALSE(d.seed_table.short_sizes);
  EXPECT_EQ(d.seed_table.repeat, 5U);
  const command_line c =
      parse({"seed-table", "--short", "--repeat", "1000", "--flavor", "bp", "--readers", "3", "--scripts", "/s"});
  EXPECT_TRUE(c.seed_table.short_sizes);
  EXPECT_EQ(c.seed_table.repeat, 1000U);
  EXPECT_EQ(c.seed_table.flavor, "bp");
  EXPECT_EQ(c.seed_table.readers, 3U);
  EXPECT_EQ(c.seed_table.scripts_dir, "/s");
}

TEST(netsim_options, bad_seed_table_arguments_name_what_was_wrong) {
  EXPECT_EQ(error_of({"seed-table", "--long"}), "seed-table: unknown argument --long");
  EXPECT_EQ(error_of({"seed-table", "--repeat", "0"}), "--repeat takes a number from 1 to 1000");
  EXPECT_EQ(error_of({"seed-table", "--repeat"}), "seed-table: --repeat needs a value");
  EXPECT_EQ(error_of({"seed-table", "--readers", "99"}), "--readers takes a number from 0 to 64");
  EXPECT_EQ(error_of({"seed-table", "--flavor", "rcu"}), "unknown flavor 'rcu'; expected one of: memb, qsbr, mb, bp");
  EXPECT_EQ(error_of({"seed-table", "--short", "link", "show"}), "seed-table: unknown argument link");
}

}  // namespace
