#include "llmload/server/arithmetic_answer.hpp"

#include <fmt/format.h>

namespace llmload::server {
namespace {

bool arith_is_digit(char c) { return c >= '0' && c <= '9'; }
bool arith_is_operator(char c) { return c == '+' || c == '-' || c == '*'; }

/// The end of the digit run starting at `i` (i itself when there is none).
std::size_t digits_end(std::string_view s, std::size_t i) {
  while (i < s.size() && arith_is_digit(s[i])) ++i;
  return i;
}

/// A digit run's value, wrapping modulo 2^64.
std::uint64_t wrapping_number(std::string_view digits) {
  std::uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

/// The end of the expression that starts with the digit run at `start`: the run, then as many
/// " op digits" as follow. Sets `operators` to how many were taken.
std::size_t expression_end(std::string_view s, std::size_t start, int& operators) {
  std::size_t end = digits_end(s, start);
  operators = 0;
  while (end + 3 < s.size() && s[end] == ' ' && arith_is_operator(s[end + 1]) && s[end + 2] == ' ' &&
         arith_is_digit(s[end + 3])) {
    end = digits_end(s, end + 3);
    ++operators;
  }
  return end;
}

/// An integer option value: [-]digits, nothing else (surrounding spaces, tabs and '\r' removed).
std::optional<std::int64_t> option_value(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  if (text.empty() || digits_end(text, 0) != text.size()) return std::nullopt;
  const std::uint64_t magnitude = wrapping_number(text);
  return static_cast<std::int64_t>(negative ? 0 - magnitude : magnitude);
}

/// The options on the lines after position `from` (the expression's end).
std::vector<ChoiceOption> find_options(std::string_view prompt, std::size_t from) {
  std::vector<ChoiceOption> options;
  std::size_t line = prompt.find('\n', from);
  while (line != std::string_view::npos) {
    const std::size_t begin = line + 1;
    const std::size_t next = prompt.find('\n', begin);
    std::string_view text = prompt.substr(begin, next == std::string_view::npos ? std::string_view::npos : next - begin);
    line = next;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    if (text.size() < 3 || text[0] < 'A' || text[0] > 'Z' || text[1] != '.' || text[2] != ' ') continue;
    const auto value = option_value(text.substr(3));
    if (!value) continue;
    bool seen = false;
    for (const auto& o : options) seen = seen || o.letter == text[0];
    if (!seen) options.push_back(ChoiceOption{text[0], *value});
  }
  return options;
}

std::uint64_t distance(std::int64_t a, std::int64_t b) {
  return a >= b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

char nearest_letter(const std::vector<ChoiceOption>& options, std::int64_t value) {
  const ChoiceOption* best = &options.front();
  for (const auto& o : options) {
    if (distance(o.value, value) < distance(best->value, value)) best = &o;
  }
  return best->letter;
}

}  // namespace

std::optional<std::int64_t> evaluate_arithmetic(std::string_view e) {
  if (e.empty() || !arith_is_digit(e.front())) return std::nullopt;
  int operators = 0;
  if (expression_end(e, 0, operators) != e.size() || operators == 0) return std::nullopt;
  // sum of products, modulo 2^64: `sum` holds the terms before the current product.
  std::uint64_t sum = 0;
  std::uint64_t product = 0;
  bool negative_term = false;
  std::size_t i = 0;
  char op = '+';
  while (i < e.size()) {
    const std::size_t end = digits_end(e, i);
    const std::uint64_t n = wrapping_number(e.substr(i, end - i));
    if (op == '*') {
      product *= n;
    } else {
      sum += negative_term ? 0 - product : product;
      product = n;
      negative_term = op == '-';
    }
    if (end >= e.size()) break;
    op = e[end + 1];
    i = end + 3;
  }
  sum += negative_term ? 0 - product : product;
  return static_cast<std::int64_t>(sum);
}

std::optional<ArithmeticQuestion> find_arithmetic_question(std::string_view prompt) {
  std::size_t best_start = 0;
  std::size_t best_end = 0;
  std::size_t i = 0;
  while (i < prompt.size()) {
    if (!arith_is_digit(prompt[i]) || (i > 0 && arith_is_digit(prompt[i - 1]))) {
      ++i;
      continue;
    }
    int operators = 0;
    const std::size_t end = expression_end(prompt, i, operators);
    if (operators > 0) {
      best_start = i;
      best_end = end;
    }
    i = end;
  }
  if (best_end == 0) return std::nullopt;
  ArithmeticQuestion q;
  q.expression = std::string(prompt.substr(best_start, best_end - best_start));
  q.value = *evaluate_arithmetic(q.expression);
  q.options = find_options(prompt, best_end);
  if (q.multiple_choice()) q.correct = nearest_letter(q.options, q.value);
  return q;
}

std::string answer_text(const ArithmeticQuestion& q, bool wrong, std::uint64_t draw) {
  if (q.multiple_choice()) {
    char letter = q.correct;
    if (wrong) {
      std::vector<char> others;
      for (const auto& o : q.options) {
        if (o.letter != q.correct) others.push_back(o.letter);
      }
      letter = others.empty() ? static_cast<char>(q.correct == 'Z' ? 'A' : q.correct + 1)
                              : others[static_cast<std::size_t>(draw % others.size())];
    }
    return fmt::format("Answer: {}", letter);
  }
  std::int64_t value = q.value;
  if (wrong) {
    const auto k = static_cast<std::int64_t>(draw % 18);  // 0..8: +1..+9; 9..17: -1..-9
    const std::int64_t offset = k < 9 ? k + 1 : -(k - 8);
    value = static_cast<std::int64_t>(static_cast<std::uint64_t>(value) + static_cast<std::uint64_t>(offset));
  }
  return fmt::format("The answer is {}. #### {}", value, value);
}

}  // namespace llmload::server
