#include "netsim/script.hpp"

#include <cctype>
#include <charconv>

namespace netsim {

std::optional<std::string> split_words(std::string_view text, std::vector<std::string>& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size() || text[i] == '#') break;
    std::string word;
    if (text[i] == '"') {
      const std::size_t close = text.find('"', i + 1);
      if (close == std::string_view::npos) return "unterminated quote";
      word = text.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) word += text[i++];
    }
    out.push_back(std::move(word));
  }
  return std::nullopt;
}

std::vector<script_line> read_script(std::istream& in, const std::string& file, std::vector<std::string>& errors) {
  std::vector<script_line> lines;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    script_line l{{file, number}, {}};
    if (auto err = split_words(text, l.words)) {
      errors.push_back(file + ":" + std::to_string(number) + ": error: " + *err);
      continue;
    }
    if (!l.words.empty()) lines.push_back(std::move(l));
  }
  return lines;
}

std::optional<long long> parse_number(std::string_view s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> variables::substitute(std::string& word) const {
  // Resumes after each inserted value, so a value that itself contains "{...}" (possible through
  // -D) is not expanded again — which could loop forever.
  std::size_t open, from = 0;
  while ((open = word.find('{', from)) != std::string::npos) {
    const std::size_t close = word.find('}', open);
    if (close == std::string::npos) return "unterminated {expression} in \"" + word + "\"";
    const std::string expr = word.substr(open + 1, close - open - 1);
    const std::size_t op = expr.find_first_of("+-*/%");
    const std::string name = expr.substr(0, op);
    auto it = values_.find(name);
    if (it == values_.end()) return "unknown variable \"" + name + "\"";
    std::string value = it->second;
    if (op != std::string::npos) {
      auto lhs = parse_number(value);
      auto rhs = parse_number(std::string_view(expr).substr(op + 1));
      if (!lhs || !rhs) return "bad arithmetic in {" + expr + "}";
      if ((expr[op] == '/' || expr[op] == '%') && *rhs == 0) return "division by zero in {" + expr + "}";
      long long r = 0;
      switch (expr[op]) {
        case '+': r = *lhs + *rhs; break;
        case '-': r = *lhs - *rhs; break;
        case '*': r = *lhs * *rhs; break;
        case '/': r = *lhs / *rhs; break;
        default: r = *lhs % *rhs; break;
      }
      value = std::to_string(r);
    }
    word.replace(open, close - open + 1, value);
    from = open + value.size();
  }
  return std::nullopt;
}

}  // namespace netsim
