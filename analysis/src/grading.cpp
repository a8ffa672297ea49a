#include "llmload/analysis/grading.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/json_schema.hpp"

namespace llmload::analysis {
namespace grading_impl {
namespace {

constexpr std::string_view kAcceptedForms =
    "exact, normalized, regex:PATTERN, choice, number, number:TOL (TOL >= 0), json";

// --- text helpers (ASCII) ---------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = to_lower(c);
  return out;
}

// Punctuation the normalized grader trims from both ends ('-', '+', '$', '%' and '#' are kept:
// they change what an answer says).
bool is_edge_punct(char c) { return std::string_view(".,;:!?\"'`()[]{}*_").find(c) != std::string_view::npos; }

// Case folded (ASCII), whitespace runs collapsed to one space, surrounding whitespace and
// punctuation trimmed.
std::string normalize(std::string_view s) {
  std::string out;
  bool pending_space = false;
  for (const char c : s) {
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += to_lower(c);
  }
  std::size_t b = 0;
  std::size_t e = out.size();
  while (b < e && (is_edge_punct(out[b]) || out[b] == ' ')) ++b;
  while (e > b && (is_edge_punct(out[e - 1]) || out[e - 1] == ' ')) --e;
  return out.substr(b, e - b);
}

// Starts of the whole words `word` (lower case) in `low` (the lowered text).
std::vector<std::size_t> word_starts(std::string_view low, std::string_view word) {
  std::vector<std::size_t> out;
  for (std::size_t p = low.find(word); p != std::string_view::npos; p = low.find(word, p + 1)) {
    const bool start_ok = p == 0 || !is_alpha(low[p - 1]);
    const std::size_t end = p + word.size();
    if (start_ok && (end == low.size() || !is_alpha(low[end]))) out.push_back(p);
  }
  return out;
}

GradeResult result(Grade g, std::string extracted, std::string detail = {}) {
  return GradeResult{g, std::move(extracted), std::move(detail)};
}

// --- exact, normalized, regex -----------------------------------------------------------------

GradeResult grade_exact(std::string_view output, std::string_view reference) {
  const std::string_view got = trim(output);
  if (got.empty()) return result(Grade::kUnparsed, "", "empty output");
  return result(got == trim(reference) ? Grade::kCorrect : Grade::kIncorrect, std::string(got));
}

GradeResult grade_normalized(std::string_view output, std::string_view reference) {
  std::string got = normalize(output);
  if (got.empty()) return result(Grade::kUnparsed, "", "empty output");
  const Grade g = got == normalize(reference) ? Grade::kCorrect : Grade::kIncorrect;
  return result(g, std::move(got));
}

GradeResult grade_regex(const std::string& pattern, std::string_view output, std::string_view reference) {
  const std::regex& re = json_schema::cached_regex(pattern);
  std::cmatch m;
  try {
    if (!json_schema::bounded_regex_search(output, re, m))
      return result(Grade::kUnparsed, "", "no match for the pattern");
  } catch (const std::regex_error& e) {
    return result(Grade::kUnparsed, "", std::string("the pattern could not be matched: ") + e.what());
  }
  const bool group = re.mark_count() >= 1 && m[1].matched;
  std::string got = group ? m[1].str() : m[0].str();
  const Grade g = normalize(got) == normalize(reference) ? Grade::kCorrect : Grade::kIncorrect;
  return result(g, std::move(got));
}

// --- choice -----------------------------------------------------------------------------------

bool is_choice_letter(char c) { return c >= 'A' && c <= 'J'; }

// Words that may stand between an answer marker and its letter or number ("the answer would be
// option B", "the correct choice is (C)").
bool is_filler(std::string_view w) {
  static constexpr std::array<std::string_view, 21> kWords = {
      "is",     "are",    "be",        "would",   "should",     "will",  "must",
      "option", "choice", "letter",    "the",     "one",        "final", "answer",
      "likely", "probably", "clearly", "therefore", "definitely", "thus", "most"};
  for (const auto k : kWords)
    if (w == k) return true;
  return false;
}

// Decoration between a marker and its answer: spaces, ':', '=', emphasis, quotes, dashes.
bool is_marker_decoration(char c) {
  return is_space(c) || std::string_view(":=*_\"'-`").find(c) != std::string_view::npos;
}

// The choice letter after an answer marker ending at `pos`: decoration and at most 4 filler
// words may come first; the letter must stand alone (not start a word or a code like "A1").
// Lower case only in brackets ("(b)") or before punctuation or the end ("answer: b."); "I" followed by a lower-case word or an apostrophe is the
// pronoun ("Answer: I think ...").
std::optional<char> letter_after_marker(std::string_view text, std::string_view low, std::size_t pos) {
  bool bracketed = false;
  int words = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (is_marker_decoration(c)) {
      ++pos;
    } else if (c == '(' || c == '[') {
      bracketed = true;
      ++pos;
    } else if (is_alpha(c)) {
      std::size_t end = pos;
      while (end < text.size() && is_alpha(text[end])) ++end;
      if (end - pos > 1) {
        if (++words > 4 || !is_filler(low.substr(pos, end - pos))) return std::nullopt;
        pos = end;
        continue;
      }
      const char up = to_upper(c);
      const bool closes = end == text.size() || std::string_view(".,;:!)]}*$").find(text[end]) != std::string_view::npos;
      if (!is_choice_letter(up) || (is_lower(c) && !bracketed && !closes)) return std::nullopt;
      if (end < text.size() && (is_digit(text[end]) || text[end] == '\'')) return std::nullopt;
      if (up == 'I' && !bracketed && end + 1 < text.size() && text[end] == ' ' && is_lower(text[end + 1]))
        return std::nullopt;
      return up;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// A capital choice letter at `i` that stands alone: no letter or digit on either side.
bool lone_capital(std::string_view t, std::size_t i) {
  return i < t.size() && is_choice_letter(t[i]) && (i == 0 || !is_alnum(t[i - 1])) &&
         (i + 1 == t.size() || !is_alnum(t[i + 1]));
}

// A verdict after a letter ending at `end` (past any ')', ']' or '*'): "B is correct", "(B) is
// the right answer", "B is the best choice".
bool verdict_follows(std::string_view low, std::size_t end) {
  while (end < low.size() && (low[end] == ')' || low[end] == ']' || low[end] == '*')) ++end;
  for (const std::string_view v : {" is correct", " is the correct", " is right", " is the right", " is the answer",
                                   " is the best", " is the most likely"})
    if (low.substr(end, v.size()) == v && (end + v.size() == low.size() || !is_alpha(low[end + v.size()]))) return true;
  return false;
}

// The letter of the last answer marker that names one: "answer ... B", "correct ... B",
// "\boxed{B}", "B is correct".
std::optional<char> marked_letter(std::string_view text, std::string_view low) {
  std::optional<std::pair<std::size_t, char>> best;
  const auto consider = [&](std::size_t p, std::optional<char> letter) {
    if (letter && (!best || p > best->first)) best = std::pair{p, *letter};
  };
  for (const std::string_view marker : {std::string_view("answer"), std::string_view("correct")})
    for (const std::size_t p : word_starts(low, marker)) consider(p, letter_after_marker(text, low, p + marker.size()));
  for (std::size_t p = low.find("\\boxed{"); p != std::string_view::npos; p = low.find("\\boxed{", p + 1))
    consider(p, letter_after_marker(text, low, p + 7));
  for (std::size_t i = 0; i < text.size(); ++i)
    if (lone_capital(text, i) && verdict_follows(low, i + 1)) consider(i, text[i]);
  if (!best) return std::nullopt;
  return best->second;
}

// Letters in the forms that name a choice without a marker: "(B)", "[B]", "**B**" ("**B.**"),
// "option B" / "choice B", "B." / "B)" / "B:" opening a line, and a lone capital closing the text.
std::set<char> decorated_letters(std::string_view t, std::string_view low) {
  std::set<char> out;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if ((t[i] == '(' && t[i + 2] == ')') || (t[i] == '[' && t[i + 2] == ']'))
      if (is_choice_letter(t[i + 1])) out.insert(t[i + 1]);
    if (t.substr(i, 2) == "**" && lone_capital(t, i + 2)) {
      std::size_t j = i + 3;
      if (j < t.size() && (t[j] == '.' || t[j] == ')' || t[j] == ':')) ++j;
      if (t.substr(j, 2) == "**") out.insert(t[i + 2]);
    }
  }
  for (const std::string_view w : {std::string_view("option"), std::string_view("choice")})
    for (const std::size_t p : word_starts(low, w))
      if (p + w.size() + 1 < t.size() && t[p + w.size()] == ' ' && lone_capital(t, p + w.size() + 1))
        out.insert(t[p + w.size() + 1]);
  for (std::size_t line = 0; line < t.size();) {
    std::size_t i = line;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '*' || t[i] == '#' || t[i] == '>')) ++i;
    if (i + 1 < t.size() && is_choice_letter(t[i]) && std::string_view(".):").find(t[i + 1]) != std::string_view::npos &&
        (i + 2 == t.size() || is_space(t[i + 2]) || t[i + 2] == '*'))
      out.insert(t[i]);
    const std::size_t nl = t.find('\n', line);
    line = nl == std::string_view::npos ? t.size() : nl + 1;
  }
  std::size_t end = t.size();
  while (end > 0 && (is_space(t[end - 1]) || std::string_view(".!*)]\"'`").find(t[end - 1]) != std::string_view::npos)) --end;
  if (end > 0 && lone_capital(t.substr(0, end), end - 1)) out.insert(t[end - 1]);
  return out;
}

// The choice letter a text names, or why none: after an answer marker; else the text is one
// letter (any case) in decoration; else the one letter its decorated forms agree on.
std::optional<char> choice_letter(std::string_view text, std::string* why) {
  const std::string low = lowered(text);
  if (const auto marked = marked_letter(text, low)) return marked;
  std::string_view bare = trim(text);
  while (!bare.empty() && std::string_view("*()[].:\"'` \t\r\n").find(bare.front()) != std::string_view::npos) bare.remove_prefix(1);
  while (!bare.empty() && std::string_view("*()[].:\"'` \t\r\n").find(bare.back()) != std::string_view::npos) bare.remove_suffix(1);
  if (bare.size() == 1 && is_choice_letter(to_upper(bare[0]))) return to_upper(bare[0]);
  const std::set<char> letters = decorated_letters(text, low);
  if (letters.size() == 1) return *letters.begin();
  if (letters.empty()) {
    *why = "no choice letter (A-J)";
  } else {
    *why = "several letters (";
    for (const char c : letters) *why += std::string(why->back() == '(' ? "" : ", ") + c;
    *why += ") and no answer marker";
  }
  return std::nullopt;
}

GradeResult grade_choice(std::string_view output, std::string_view reference) {
  std::string why;
  const auto got = choice_letter(output, &why);
  if (!got) return result(Grade::kUnparsed, "", why);
  std::string ref_why;
  const auto want = choice_letter(reference, &ref_why);
  if (!want) return result(Grade::kIncorrect, std::string(1, *got), "the reference names no choice letter: " + ref_why);
  return result(*got == *want ? Grade::kCorrect : Grade::kIncorrect, std::string(1, *got));
}

// --- number -----------------------------------------------------------------------------------

struct Number {
  std::string text;  // canonical: sign, digits without commas, '.' and the fraction
  double value = 0;
};

// A minus sign ending at `i` (exclusive): '-' or U+2212; its length in bytes (0: none). It is a
// sign only when what precedes it is not a letter or digit ("3-4" is a range, not -4).
std::size_t minus_before(std::string_view s, std::size_t i) {
  std::size_t len = 0;
  if (i >= 1 && s[i - 1] == '-') len = 1;
  else if (i >= 3 && s.substr(i - 3, 3) == "\xE2\x88\x92") len = 3;
  if (len == 0) return 0;
  return i - len == 0 || !is_alnum(s[i - len - 1]) ? len : 0;
}

// The number whose digits start at `i` (a digit, or '.' before a digit). Commas group thousands
// ("1,234": a comma followed by exactly three digits); one '.' followed by a digit starts the
// fraction (a trailing "." is the sentence's). A '$' and a minus sign before it are taken.
std::optional<Number> number_at(std::string_view s, std::size_t i, std::size_t* end) {
  std::size_t sign_at = i;
  if (sign_at > 0 && s[sign_at - 1] == '$') --sign_at;
  const bool negative = minus_before(s, sign_at) > 0;
  std::string text = negative ? "-" : "";
  std::size_t j = i;
  while (j < s.size() && is_digit(s[j])) text += s[j++];
  while (j + 3 < s.size() && s[j] == ',' && is_digit(s[j + 1]) && is_digit(s[j + 2]) && is_digit(s[j + 3]) &&
         (j + 4 == s.size() || !is_digit(s[j + 4]))) {
    text.append(s.substr(j + 1, 3));
    j += 4;
  }
  if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) {
    text += '.';
    ++j;
    while (j < s.size() && is_digit(s[j])) text += s[j++];
  }
  *end = j;
  if (text.empty() || text == "-") return std::nullopt;
  if (text[negative ? 1 : 0] == '.') text.insert(negative ? 1 : 0, "0");
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return Number{std::move(text), value};
}

bool starts_number(std::string_view s, std::size_t i) {
  if (i >= s.size()) return false;
  if (is_digit(s[i])) return true;
  return s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1]) && (i == 0 || !is_digit(s[i - 1]));
}

// The number right after `pos`, past spaces, '$', emphasis, ':', '=', '(' and at most 4 filler
// words ("is", "would be", "final", ...).
std::optional<Number> number_after(std::string_view s, std::string_view low, std::size_t pos) {
  int words = 0;
  while (pos < s.size()) {
    const char c = s[pos];
    if (starts_number(s, pos)) {
      std::size_t end = 0;
      return number_at(s, pos, &end);
    }
    if (is_alpha(c)) {
      std::size_t end = pos;
      while (end < s.size() && is_alpha(s[end])) ++end;
      if (++words > 4 || !is_filler(low.substr(pos, end - pos))) return std::nullopt;
      pos = end;
    } else if (is_space(c) || std::string_view("$*_:=(-#").find(c) != std::string_view::npos) {
      ++pos;
    } else if (s.substr(pos, 3) == "\xE2\x88\x92") {
      pos += 3;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// GSM8K: the number after the first "####" (lm-eval's strict match); else after the last
// "answer" marker or "\boxed{"; else the last number in the text (lm-eval's flexible match).
std::optional<Number> extract_number(std::string_view s) {
  const std::string low = lowered(s);
  for (std::size_t p = s.find("####"); p != std::string_view::npos; p = s.find("####", p + 4))
    if (auto n = number_after(s, low, p + 4)) return n;
  std::optional<std::pair<std::size_t, Number>> marked;
  for (const std::size_t p : word_starts(low, "answer"))
    if (auto n = number_after(s, low, p + 6)) marked = std::pair{p, std::move(*n)};
  for (std::size_t p = s.find("\\boxed{"); p != std::string_view::npos; p = s.find("\\boxed{", p + 1))
    if (auto n = number_after(s, low, p + 7); n && (!marked || p > marked->first)) marked = std::pair{p, std::move(*n)};
  if (marked) return std::move(marked->second);
  std::optional<Number> last;
  for (std::size_t i = 0; i < s.size();) {
    if (!starts_number(s, i)) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    if (auto n = number_at(s, i, &end)) last = std::move(n);
    i = std::max(end, i + 1);
  }
  return last;
}

GradeResult grade_number(double tolerance, std::string_view output, std::string_view reference) {
  const auto got = extract_number(output);
  if (!got) return result(Grade::kUnparsed, "", "no number");
  const auto want = extract_number(reference);
  if (!want) return result(Grade::kIncorrect, got->text, "the reference has no number");
  const double allowance = tolerance + 1e-9 * std::max(std::fabs(got->value), std::fabs(want->value));
  const Grade g = std::fabs(got->value - want->value) <= allowance ? Grade::kCorrect : Grade::kIncorrect;
  return result(g, got->text);
}

// --- json -------------------------------------------------------------------------------------

std::optional<nlohmann::json> parse_json(std::string_view s) {
  auto j = nlohmann::json::parse(s.begin(), s.end(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// The body of the first fenced block whose info string is `tag` ("json", case-insensitive, or ""
// for a bare fence); nullopt when there is none. An unclosed fence runs to the end.
std::optional<std::string_view> fenced_block(std::string_view s, std::string_view low, std::string_view tag) {
  for (std::size_t p = low.find("```"); p != std::string_view::npos;) {
    const std::size_t eol = std::min(low.find('\n', p), low.size());
    const bool matches = trim(low.substr(p + 3, eol - p - 3)) == tag;
    const std::size_t body = std::min(eol + 1, s.size());
    const std::size_t close = low.find("```", body);
    if (matches) return s.substr(body, (close == std::string_view::npos ? s.size() : close) - body);
    if (close == std::string_view::npos) break;
    p = low.find("```", close + 3);
  }
  return std::nullopt;
}

GradeResult grade_json(std::string_view output, std::string_view reference) {
  std::string_view text = trim(output);
  std::optional<nlohmann::json> value = parse_json(text);
  if (!value) {
    const std::string low = lowered(output);
    auto block = fenced_block(output, low, "json");
    if (!block) block = fenced_block(output, low, "");
    if (block) {
      text = trim(*block);
      value = parse_json(text);
    }
  }
  if (!value) return result(Grade::kUnparsed, "", "no JSON value (the output, or its first ```json block)");
  const std::string_view ref = trim(reference);
  if (ref.empty()) return result(Grade::kCorrect, std::string(text));
  const auto schema = parse_json(ref);
  if (!schema || !(schema->is_object() || schema->is_boolean()))
    return result(Grade::kIncorrect, std::string(text), "the reference is not a JSON Schema (an object)");
  try {
    std::string why = json_schema::validate(*value, *schema);
    const Grade g = why.empty() ? Grade::kCorrect : Grade::kIncorrect;
    return result(g, std::string(text), std::move(why));
  } catch (const std::invalid_argument& e) {
    return result(Grade::kIncorrect, std::string(text), std::string("the reference schema cannot be used: ") + e.what());
  }
}

std::string format_tolerance(double t) {
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), t);
  return std::string(buf.data(), r.ptr);
}

}  // namespace
}  // namespace grading_impl

GraderSpec GraderSpec::parse(std::string_view text) {
  namespace gi = grading_impl;
  const std::string_view t = gi::trim(text);
  GraderSpec g;
  if (t == "exact" || t == "normalized" || t == "choice" || t == "number" || t == "json") {
    g.kind = std::string(t);
    return g;
  }
  if (t.substr(0, 6) == "regex:") {
    g.kind = "regex";
    g.pattern = std::string(text.substr(text.find(':') + 1));  // the pattern as written, spaces kept
    if (g.pattern.empty()) throw std::invalid_argument("grader 'regex:' has no pattern (regex:PATTERN)");
    json_schema::cached_regex(g.pattern);  // throws naming the pattern
    return g;
  }
  if (t.substr(0, 7) == "number:") {
    const std::string_view tol = t.substr(7);
    double v = -1;
    const auto [ptr, ec] = std::from_chars(tol.data(), tol.data() + tol.size(), v);
    if (tol.empty() || ec != std::errc() || ptr != tol.data() + tol.size() || !std::isfinite(v) || v < 0)
      throw std::invalid_argument("grader '" + std::string(t) + "': the tolerance must be a number >= 0 (number:0.01)");
    g.kind = "number";
    g.tolerance = v;
    return g;
  }
  throw std::invalid_argument("unknown grader '" + std::string(t) + "'; accepted: " + std::string(gi::kAcceptedForms));
}

std::string GraderSpec::name() const {
  if (kind == "regex") return "regex:" + pattern;
  if (kind == "number" && tolerance != 0.0) return "number:" + grading_impl::format_tolerance(tolerance);
  return kind;
}

GradeResult grade_output(const GraderSpec& grader, std::string_view output, std::string_view reference) {
  namespace gi = grading_impl;
  if (grader.kind == "exact") return gi::grade_exact(output, reference);
  if (grader.kind == "normalized") return gi::grade_normalized(output, reference);
  if (grader.kind == "regex") return gi::grade_regex(grader.pattern, output, reference);
  if (grader.kind == "choice") return gi::grade_choice(output, reference);
  if (grader.kind == "number") return gi::grade_number(grader.tolerance, output, reference);
  if (grader.kind == "json") return gi::grade_json(output, reference);
  throw std::invalid_argument("unknown grader kind '" + grader.kind + "'; accepted: " + std::string(gi::kAcceptedForms));
}

}  // namespace llmload::analysis
