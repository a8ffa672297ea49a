#pragma once
// The answering mode's questions (docs/server.md, "Answers"): an arithmetic expression found in
// a prompt, its value, optional multiple-choice options, and the answer text the mock writes.
//
// Expression: non-negative integers (runs of ASCII digits, the first not preceded by a digit)
// separated by single spaces and one of + - *, at least 2 operands, e.g. "48 + 17 * 3". The LAST
// one in the text is the question (few-shot examples come before it). * binds tighter than + and
// -, each level left to right; 64-bit two's-complement arithmetic (wrapping on overflow).
//
// Options: lines after the expression's line that start (after spaces or tabs) with a capital
// letter, a dot and a space, and whose rest is an integer ("B. 99", "C. -4"); the first line of a
// letter counts. With at least one, the question is multiple choice: the correct letter is the
// option equal to the value, else the nearest one (the first of equals).
//
// Answer texts (words separated by single spaces):
//   multiple choice  "Answer: X"
//   otherwise        "The answer is N. #### N"
// Pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

struct ChoiceOption {
  char letter = 'A';
  std::int64_t value = 0;
};

struct ArithmeticQuestion {
  std::string expression;             ///< as found, e.g. "48 + 17 * 3"
  std::int64_t value = 0;             ///< its value
  std::vector<ChoiceOption> options;  ///< empty: not multiple choice (GSM8K style)
  char correct = 0;                   ///< with options: the right letter

  bool multiple_choice() const { return !options.empty(); }
};

/// The value of an expression of the form above (the whole text), or nullopt.
std::optional<std::int64_t> evaluate_arithmetic(std::string_view expression);

/// The last expression in `prompt` and the options after it, or nullopt when there is none.
std::optional<ArithmeticQuestion> find_arithmetic_question(std::string_view prompt);

/// The answer's text: the right one, or (wrong) one that differs, chosen by `draw`: N + d with
/// d = ±1..±9 (uniform over the 18 offsets), or another option's letter (uniform among the
/// others; with a single option, the next letter of the alphabet, Z -> A).
std::string answer_text(const ArithmeticQuestion& question, bool wrong, std::uint64_t draw);

}  // namespace llmload::server
