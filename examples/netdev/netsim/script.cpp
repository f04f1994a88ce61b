#include "netsim/script.hpp"

#include <cctype>
#include <charconv>
#include <climits>

namespace netsim {

namespace {
bool is_blank(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_ident_start(char c) noexcept { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) noexcept { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
}  // namespace

std::string quoted(std::string_view s) {
  constexpr std::size_t kShown = 64;
  if (s.size() <= kShown) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kShown)) + "...\" (" + std::to_string(s.size()) + " bytes)";
}

std::optional<std::string> split_words(std::string_view text, std::vector<std::string>& out) {
  if (const auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_blank(text[i])) ++i;
    if (i >= text.size()) break;
    if (text[i] == '"' || text[i] == '\'') {
      const std::size_t close = text.find(text[i], i + 1);
      if (close == std::string_view::npos) return std::string("Unterminated quoted string");
      out.emplace_back(text.substr(i + 1, close - i - 1));
      i = close + 1;  // makeargs ends the word at the closing quote, whatever follows it
    } else {
      const std::size_t start = i;
      while (i < text.size() && !is_blank(text[i])) ++i;
      out.emplace_back(text.substr(start, i - start));
    }
  }
  return std::nullopt;
}

bool line_reader::physical_line(std::string& text, bool& overlong) {
  text.clear();
  can_continue_ = false;
  std::streambuf* buf = in_.rdbuf();
  bool any = false;
  // ip reads a line with getline but then handles it as a C string (getcmdline's strchr/strstr,
  // makeargs): the line ends at its first NUL. The bytes after it up to the newline are read
  // and dropped, so they neither make words nor count against the line cap.
  bool cut_at_nul = false;
  // Character by character from the stream buffer: returns as soon as a newline arrives (a pipe
  // is read as it is written) and never stores more than one line's cap.
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in_.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (c == '\n') {
      // getcmdline joins the next line on strstr(line, "\\\n"): the backslash-newline must be
      // in the C string, so not after a NUL, and not at the end of input without a newline.
      can_continue_ = !cut_at_nul;
      return true;
    }
    if (c == '\0') cut_at_nul = true;
    if (cut_at_nul) continue;
    if (text.size() <= kMaxLineBytes) text.push_back(static_cast<char>(c));
    else overlong = true;
  }
}

bool line_reader::next(script_line& out, std::string& error) {
  out.words.clear();
  error.clear();
  std::string text, more;
  for (;;) {
    bool overlong = false;
    if (!physical_line(text, overlong)) return false;
    const long long first = ++number_;
    out.where = {file_, first};
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    // getcmdline: a backslash at the end of a line joins the next one (its comment stripped too).
    while (!overlong && can_continue_ && !text.empty() && text.back() == '\\') {
      text.pop_back();
      bool more_overlong = false;
      if (!physical_line(more, more_overlong)) {
        error = file_ + ":" + std::to_string(first) + ": error: Missing continuation line";
        return true;
      }
      ++number_;
      if (auto hash = more.find('#'); hash != std::string::npos) more.resize(hash);
      if (more_overlong || text.size() + more.size() > kMaxLineBytes) overlong = true;
      else text += more;
    }
    if (overlong || text.size() > kMaxLineBytes) {
      error = file_ + ":" + std::to_string(first) + ": error: line longer than " + std::to_string(kMaxLineBytes) +
              " bytes";
      return true;
    }
    if (auto e = split_words(text, out.words)) {
      out.words.clear();
      error = file_ + ":" + std::to_string(first) + ": error: " + *e;
      return true;
    }
    if (!out.words.empty()) return true;
  }
}

std::vector<script_line> read_script(std::istream& in, const std::string& file, std::vector<std::string>& errors) {
  std::vector<script_line> lines;
  line_reader reader(in, file);
  script_line l;
  std::string error;
  while (reader.next(l, error)) {
    if (!error.empty()) errors.push_back(error);
    else lines.push_back(std::move(l));
    l = {};
  }
  return lines;
}

std::optional<long long> parse_number(std::string_view s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<unsigned long long> parse_ip_integer(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  unsigned long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::string> variables::substitute(std::string& word) const {
  // Built into a new string, each value inserted once and never expanded again (a -D value may
  // contain "{X}": expanding it again could loop forever), in one pass over the word.
  if (word.find('{') == std::string::npos) return std::nullopt;
  std::string out;
  std::size_t i = 0;
  // The first '}' at or after the current position, kept across the '{'s: searching afresh from
  // each '{' made a word of n '{' and no '}' cost n²/2 byte reads (1 MiB of '{': 77 s). Positions
  // only move forward, so each byte is searched once: O(length of the word) in all.
  std::size_t next_close = 0;
  bool close_known = false;
  while (i < word.size()) {
    const std::size_t open = word.find('{', i);
    if (open == std::string::npos) break;
    out.append(word, i, open - i);
    // {NAME} or {NAME op INT}: anything else, or an undefined NAME, is text (ip allows '{' in names).
    std::size_t p = open + 1;
    if (p < word.size() && is_ident_start(word[p]))
      while (p < word.size() && is_ident(word[p])) ++p;
    const std::string_view name(word.data() + open + 1, p - open - 1);
    if (!close_known || (next_close != std::string::npos && next_close < p)) {
      next_close = word.find('}', p);
      close_known = true;
    }
    const std::size_t close = next_close;
    const auto it = name.empty() || close == std::string::npos ? values_.end() : values_.find(name);
    const bool plain = close == p;
    const bool arith = close != std::string::npos && close > p + 1 && std::string_view("+-*/%").find(word[p]) != std::string_view::npos;
    if (it == values_.end() || (!plain && !arith)) {
      out.push_back('{');
      i = open + 1;
      continue;
    }
    if (plain) {
      out += it->second;
    } else {
      const std::string_view expr(word.data() + open + 1, close - open - 1);
      auto lhs = parse_number(it->second);
      auto rhs = parse_number(std::string_view(word.data() + p + 1, close - p - 1));
      if (!lhs || !rhs) return "bad arithmetic in " + netsim::quoted("{" + std::string(expr) + "}");
      const char op = word[p];
      if ((op == '/' || op == '%') && *rhs == 0) return "division by zero in " + netsim::quoted("{" + std::string(expr) + "}");
      long long r = 0;
      bool overflow = false;
      switch (op) {
        case '+': overflow = __builtin_add_overflow(*lhs, *rhs, &r); break;
        case '-': overflow = __builtin_sub_overflow(*lhs, *rhs, &r); break;
        case '*': overflow = __builtin_mul_overflow(*lhs, *rhs, &r); break;
        // LLONG_MIN / -1 (and % -1) traps on x86 (SIGFPE): the quotient does not fit.
        case '/': overflow = *lhs == LLONG_MIN && *rhs == -1; if (!overflow) r = *lhs / *rhs; break;
        default: r = *rhs == -1 ? 0 : *lhs % *rhs; break;  // LLONG_MIN % -1 traps too; the remainder is 0
      }
      if (overflow) return "arithmetic overflow in " + netsim::quoted("{" + std::string(expr) + "}");
      out += std::to_string(r);
    }
    i = close + 1;
  }
  out.append(word, i, std::string::npos);
  word = std::move(out);
  return std::nullopt;
}

}  // namespace netsim
