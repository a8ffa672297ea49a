// The answering mode's questions: finding the last arithmetic expression of a prompt, its value,
// multiple-choice options, and the answer texts (arithmetic_answer.hpp).
#include "llmload/server/arithmetic_answer.hpp"

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace llmload::server::arithmetic_test {
namespace {

TEST(ArithmeticAnswer, MultiplicationBindsTighterAndEachLevelGoesLeftToRight) {
  EXPECT_EQ(evaluate_arithmetic("48 + 17 * 3"), 99);
  EXPECT_EQ(evaluate_arithmetic("2 * 3 + 4"), 10);
  EXPECT_EQ(evaluate_arithmetic("10 - 4 - 3"), 3);
  EXPECT_EQ(evaluate_arithmetic("3 - 10"), -7);
  EXPECT_EQ(evaluate_arithmetic("2 * 3 * 4 - 5 * 6 + 1"), -5);
  EXPECT_EQ(evaluate_arithmetic("0 * 7"), 0);
  EXPECT_EQ(evaluate_arithmetic("007 + 1"), 8);
}

TEST(ArithmeticAnswer, SixtyFourBitArithmeticWraps) {
  EXPECT_EQ(evaluate_arithmetic("9223372036854775807 + 1"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(evaluate_arithmetic("4294967296 * 4294967296"), 0);
}

TEST(ArithmeticAnswer, OnlyTheExactFormIsAnExpression) {
  for (const char* bad : {"", "48", "48 +", "48 + ", "48+17", "48  + 17", "48 + 17 ", " 48 + 17", "48 / 2", "-4 + 1",
                          "4 + x", "4 +17"}) {
    EXPECT_FALSE(evaluate_arithmetic(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(ArithmeticAnswer, TheLastExpressionOfAPromptIsTheQuestion) {
  const std::string prompt =
      "Q: What is 3 * 4?\nA: The answer is 12. #### 12\n\nQ: What is 7 - 2 - 1?\nA: The answer is 4. #### 4\n\n"
      "Q: What is 48 + 17 * 3?\nA:";
  const auto q = find_arithmetic_question(prompt);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->expression, "48 + 17 * 3");
  EXPECT_EQ(q->value, 99);
  EXPECT_FALSE(q->multiple_choice());
  // Digits glued to other characters still make operands; a lone number or a malformed
  // expression does not make a question.
  EXPECT_EQ(find_arithmetic_question("What is 12 * 12?")->value, 144);
  EXPECT_EQ(find_arithmetic_question("x=5 + 6.")->value, 11);
  EXPECT_FALSE(find_arithmetic_question("In 2024 there were 3 of them, 4+5 and 7 -1"));
  EXPECT_FALSE(find_arithmetic_question("no numbers at all"));
}

TEST(ArithmeticAnswer, OptionsAfterTheExpressionMakeAMultipleChoiceQuestion) {
  const std::string prompt =
      "The following are multiple choice questions.\n\nWhat is 2 + 2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer: B\n\n"
      "What is 48 + 17 * 3?\nA. 98\nB. 100\n  C. 99\nD. 97\r\nE. ninety\nAnswer:";
  const auto q = find_arithmetic_question(prompt);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->value, 99);
  ASSERT_TRUE(q->multiple_choice());
  ASSERT_EQ(q->options.size(), 4u) << "E is not an integer";
  EXPECT_EQ(q->options[0].letter, 'A');
  EXPECT_EQ(q->options[3].value, 97);
  EXPECT_EQ(q->correct, 'C');
  EXPECT_EQ(answer_text(*q, false, 0), "Answer: C");
}

TEST(ArithmeticAnswer, WithoutAnEqualOptionTheNearestIsRight) {
  auto q = find_arithmetic_question("What is 10 * 10?\nA. 90\nB. 105\nC. -100\n");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->correct, 'B');
  q = find_arithmetic_question("What is 1 + 1?\nA. 1\nB. 3\n");  // a tie: the first
  EXPECT_EQ(q->correct, 'A');
  q = find_arithmetic_question("A. 1\nB. 2\nWhat is 1 + 1?");  // options before the expression do not count
  EXPECT_FALSE(q->multiple_choice());
}

TEST(ArithmeticAnswer, AnswerTextsAreGsm8kAndChoiceStyle) {
  const auto q = find_arithmetic_question("What is 48 + 17 * 3?");
  EXPECT_EQ(answer_text(*q, false, 12345), "The answer is 99. #### 99");
  const auto negative = find_arithmetic_question("What is 3 - 10?");
  EXPECT_EQ(answer_text(*negative, false, 0), "The answer is -7. #### -7");
}

TEST(ArithmeticAnswer, AWrongNumberIsOffByOneToNineEitherWay) {
  const auto q = find_arithmetic_question("What is 48 + 17 * 3?");
  std::set<std::string> seen;
  for (std::uint64_t draw = 0; draw < 18; ++draw) {
    const std::string text = answer_text(*q, true, draw);
    EXPECT_NE(text, answer_text(*q, false, draw));
    seen.insert(text);
  }
  ASSERT_EQ(seen.size(), 18u) << "the 18 offsets";
  for (int d = 1; d <= 9; ++d) {
    for (const int v : {99 + d, 99 - d}) {
      EXPECT_TRUE(seen.count("The answer is " + std::to_string(v) + ". #### " + std::to_string(v))) << v;
    }
  }
}

TEST(ArithmeticAnswer, AWrongChoiceIsAnotherOption) {
  const auto q = find_arithmetic_question("What is 2 + 2?\nA. 3\nB. 4\nC. 5\n");
  std::set<std::string> seen;
  for (std::uint64_t draw = 0; draw < 20; ++draw) seen.insert(answer_text(*q, true, draw));
  EXPECT_EQ(seen, (std::set<std::string>{"Answer: A", "Answer: C"}));
  // A single option: the next letter.
  EXPECT_EQ(answer_text(*find_arithmetic_question("2 + 2\nB. 4"), true, 7), "Answer: C");
  EXPECT_EQ(answer_text(*find_arithmetic_question("2 + 2\nZ. 4"), true, 7), "Answer: A");
}

}  // namespace
}  // namespace llmload::server::arithmetic_test
