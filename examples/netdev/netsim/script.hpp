// netsim/script.hpp — reading `ip -batch` style scripts, with netsim's small extensions.
//
// A script is one command per line, split as iproute2's getcmdline/makeargs split a batch line:
// `#` anywhere starts a comment, a trailing backslash continues the line, words split on blanks,
// and a word that starts with ' or " runs to the same quote (the quotes are not part of it).
// A line ends at its first NUL byte, as ip handles the line getline gave it as a C string: a line of
// NULs is empty, and `type dummy<NUL>junk` is `type dummy`.
// Extensions, so the seed experiments fit in a few lines and scale from ctest to full size:
//   default NAME VALUE        define NAME unless -D NAME=VALUE gave it
//   for VAR FROM TO CMD...    run CMD for VAR = FROM..TO (inclusive)
//   {EXPR}                    inside any word: {NAME} or {NAME op INT} with op one of + - * / %,
//                             NAME a defined variable; any other `{...}` is ordinary text, as ip reads it
// Every line keeps its file and line number for error messages ("file:12: error: ...").
//
// Bounds (no input makes the reader grow without limit): a line longer than kMaxLineBytes is
// reported and skipped without being stored; line_reader holds one line at a time, so reading a
// stream of any length takes memory independent of its length.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netsim {

/// The longest line (continuations included) the reader accepts, in bytes.
inline constexpr std::size_t kMaxLineBytes = 1024 * 1024;

struct source_location {
  std::string file;
  long long line = 0;
};

struct script_line {
  source_location where;
  std::vector<std::string> words;
};

/// The whole of `s` as a decimal integer (optional '-'), or nothing. For netsim's own syntax
/// (for bounds, {EXPR}, counts).
std::optional<long long> parse_number(std::string_view s);

/// The whole of `s` as an unsigned integer the way iproute2's get_unsigned/get_u16 read one
/// (strtoul base 0): "0x10" is 16, "010" is 8, "10" is 10. Nothing on a sign, junk or overflow.
std::optional<unsigned long long> parse_ip_integer(std::string_view s);

/// `s` for an error message: quoted, and cut to 64 bytes with its length when longer (a 10 MB
/// word is not echoed whole).
std::string quoted(std::string_view s);

/// Splits one line (comment already stripped or not) into words, as makeargs does. Returns an
/// error message on an unterminated quote.
std::optional<std::string> split_words(std::string_view text, std::vector<std::string>& out);

/// Reads a script one line at a time.
class line_reader {
 public:
  line_reader(std::istream& in, std::string file) : in_(in), file_(std::move(file)) {}
  /// The next non-empty line into `out`. Returns false at the end of the input. A line that cannot
  /// be read (too long, bad quoting) sets `error` ("file:N: error: ...") and returns true with
  /// `out.words` empty; the caller reports it and goes on or stops.
  bool next(script_line& out, std::string& error);

 private:
  /// One physical line without its newline; false at EOF with nothing read. Stores at most
  /// kMaxLineBytes + 1 bytes of it (the rest is read and dropped), so `overlong` can be told.
  bool physical_line(std::string& text, bool& overlong);

  std::istream& in_;
  std::string file_;
  bool can_continue_ = false;  // the last physical line ended in a newline, with no NUL before it
  long long number_ = 0;
};

/// Reads every non-empty, non-comment line. Errors (bad quoting, overlong lines) are returned as
/// messages with their location, and the line is skipped.
std::vector<script_line> read_script(std::istream& in, const std::string& file, std::vector<std::string>& errors);

class variables {
 public:
  void set(const std::string& name, std::string value) { values_[name] = std::move(value); }
  void set_default(const std::string& name, std::string value) { values_.try_emplace(name, std::move(value)); }
  /// Replaces every {NAME} and {NAME op INT} whose NAME is defined. Returns the error message on
  /// bad or overflowing arithmetic; the word is unchanged then.
  /// Complexity: O(length of the result).
  std::optional<std::string> substitute(std::string& word) const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace netsim
