// netsim/script.hpp — reading `ip -batch` style scripts, with netsim's small extensions.
//
// A script is one command per line; `#` starts a comment; words split on blanks, "double quotes"
// group. Extensions, so the seed experiments fit in a few lines and scale from ctest to full size:
//   default NAME VALUE        define NAME unless -D NAME=VALUE gave it
//   for VAR FROM TO CMD...    run CMD for VAR = FROM..TO (inclusive)
//   {EXPR}                    inside any word: NAME, or NAME op INT with op one of + - * / %
// Every line keeps its file and line number for error messages ("file:12: error: ...").
#pragma once

#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netsim {

struct source_location {
  std::string file;
  int line = 0;
};

struct script_line {
  source_location where;
  std::vector<std::string> words;
};

/// The whole of `s` as a decimal integer (optional sign), or nothing.
std::optional<long long> parse_number(std::string_view s);

/// Splits `text` into words. Returns an error message on an unterminated quote.
std::optional<std::string> split_words(std::string_view text, std::vector<std::string>& out);

/// Reads every non-empty, non-comment line. Errors (bad quoting) are returned as messages with
/// their location, and the line is skipped.
std::vector<script_line> read_script(std::istream& in, const std::string& file, std::vector<std::string>& errors);

class variables {
 public:
  void set(const std::string& name, std::string value) { values_[name] = std::move(value); }
  void set_default(const std::string& name, std::string value) { values_.try_emplace(name, std::move(value)); }
  /// Replaces every {EXPR} in `word`. Returns the error message on an unknown name or bad syntax.
  std::optional<std::string> substitute(std::string& word) const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace netsim
