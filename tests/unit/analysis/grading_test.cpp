// Graders (analysis/grading.hpp): each grader's accepted and rejected answers, as documented in
// docs/metrics.md ("Accuracy").
#include "llmload/analysis/grading.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace grading_test {

using llmload::analysis::Grade;
using llmload::analysis::GradeResult;
using llmload::analysis::GraderSpec;
using llmload::analysis::grade_output;

GradeResult grade(std::string_view grader, std::string_view output, std::string_view reference) {
  return grade_output(GraderSpec::parse(grader), output, reference);
}

Grade verdict(std::string_view grader, std::string_view output, std::string_view reference) {
  return grade(grader, output, reference).grade;
}

std::string extracted(std::string_view grader, std::string_view output, std::string_view reference = "0") {
  return grade(grader, output, reference).extracted;
}


TEST(GradingSpec, ParsesEachFormAndRoundTripsItsName) {
  for (const char* name : {"exact", "normalized", "choice", "number", "json", "regex:answer: (\\w+)", "number:0.5",
                           "number:1e-06", "regex: spaced "}) {
    const GraderSpec g = GraderSpec::parse(name);
    EXPECT_EQ(g.name(), name);
    EXPECT_EQ(GraderSpec::parse(g.name()), g) << name;
  }
  EXPECT_EQ(GraderSpec::parse("regex:a(b)").pattern, "a(b)");
  EXPECT_EQ(GraderSpec::parse("number:0.25").tolerance, 0.25);
  EXPECT_EQ(GraderSpec::parse("number:0").name(), "number");
  EXPECT_EQ(GraderSpec::parse("  choice ").kind, "choice");
}

TEST(GradingSpec, RejectsUnknownNamesBadRegexesAndBadTolerances) {
  for (const char* bad : {"", "exactly", "Choice", "regex:", "number:", "number:-1", "number:abc", "number:1x",
                          "number:inf", "json:x"})
    EXPECT_THROW(GraderSpec::parse(bad), std::invalid_argument) << bad;
  try {
    GraderSpec::parse("regex:(unclosed");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(unclosed"), std::string::npos) << e.what();
  }
  try {
    GraderSpec::parse("multiple");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("regex:PATTERN"), std::string::npos) << e.what();
  }
}

TEST(GradingExact, TrimsSurroundingWhitespaceOnly) {
  EXPECT_EQ(verdict("exact", "  Paris\n", "Paris"), Grade::kCorrect);
  EXPECT_EQ(verdict("exact", "paris", "Paris"), Grade::kIncorrect);
  EXPECT_EQ(verdict("exact", "Paris.", "Paris"), Grade::kIncorrect);
  EXPECT_EQ(verdict("exact", " \n\t", "Paris"), Grade::kUnparsed);
  EXPECT_EQ(extracted("exact", "  Paris\n"), "Paris");
}

TEST(GradingNormalized, FoldsCaseCollapsesSpacesAndTrimsPunctuation) {
  EXPECT_EQ(verdict("normalized", "  The  Eiffel\nTower. ", "the eiffel tower"), Grade::kCorrect);
  EXPECT_EQ(verdict("normalized", "\"Paris!\"", "paris"), Grade::kCorrect);
  EXPECT_EQ(verdict("normalized", "**Paris**", "Paris."), Grade::kCorrect);
  EXPECT_EQ(verdict("normalized", "Paris, France", "Paris"), Grade::kIncorrect);
  EXPECT_EQ(verdict("normalized", "-5", "5"), Grade::kIncorrect);  // a sign is not punctuation
  EXPECT_EQ(verdict("normalized", " ... ", "Paris"), Grade::kUnparsed);
  EXPECT_EQ(extracted("normalized", " The  Eiffel Tower. "), "the eiffel tower");
}

TEST(GradingRegex, ComparesTheFirstCaptureGroupOrTheMatchNormalized) {
  EXPECT_EQ(verdict("regex:[Aa]nswer: *(\\w+)", "Thinking... Answer: Paris. Answer: Rome", "paris"), Grade::kCorrect);
  EXPECT_EQ(extracted("regex:[Aa]nswer: *(\\w+)", "Answer: Paris"), "Paris");
  EXPECT_EQ(verdict("regex:[0-9]+ apples", "I have 12 apples", "12 APPLES"), Grade::kCorrect);
  EXPECT_EQ(verdict("regex:[Aa]nswer: *(\\w+)", "Answer: Rome", "Paris"), Grade::kIncorrect);
  EXPECT_EQ(verdict("regex:[Aa]nswer: *(\\w+)", "I do not know", "Paris"), Grade::kUnparsed);
  // An optional group that did not take part: the whole match.
  EXPECT_EQ(extracted("regex:x(y)?", "axb"), "x");
}

TEST(GradingRegex, LongOutputsAreSearchedInWindowsWithoutOverflowingTheStack) {
  // One search of "answer: (.*)" over 100,000 characters overflows libstdc++'s recursive matcher;
  // windows of 4 KiB find the first match, and a match longer than the window is cut.
  const std::string filler(100000, 'x');
  EXPECT_EQ(verdict("regex:Final: (\\w)", filler + "\nFinal: B", "b"), Grade::kCorrect);
  EXPECT_EQ(verdict("regex:Final: (\\w)", "Final: A\n" + filler + "\nFinal: B", "b"), Grade::kIncorrect);
  const GradeResult r = grade("regex:answer: (x*)", "answer: " + filler, "x");
  EXPECT_EQ(r.grade, Grade::kIncorrect);
  EXPECT_GT(r.extracted.size(), 2000u);
  EXPECT_LE(r.extracted.size(), 4096u);
  // A match straddling the first window's end (starting at 3,000) is found whole in the next.
  const std::string text = std::string(3000, '.') + "<answer>" + std::string(1500, 'y') + "</answer>" + filler;
  EXPECT_EQ(extracted("regex:<answer>(y+)</answer>", text).size(), 1500u);
  // '^' does not match at a later window's start.
  EXPECT_EQ(verdict("regex:^(x)", std::string(5000, '.') + filler, "x"), Grade::kUnparsed);
}

TEST(GradingChoice, AcceptsTheCommonAnswerForms) {
  const char* accepted[] = {
      "B",
      "b",
      " (B) ",
      "B.",
      "B) Paris",
      "**B**",
      "**B.** Paris is the capital.",
      "Answer: B",
      "answer: b.",
      "**Answer:** B",
      "The answer is (B).",
      "The answer is B because Paris is the capital.",
      "The correct option is B",
      "The correct answer would be option (b).",
      "Let me think. A is wrong and C is wrong. Therefore the answer is B.",
      "A. Rome\nB. Paris\nC. Berlin\n\nAnswer: B",
      "I would pick option B",
      "It must be B.",
      "Final answer: [B]",
      "The answer is A. Wait, no: the answer is B.",  // the last marker
      "Therefore, the answer is $\\boxed{B}$.",
      "B is the correct answer.",
      "A is wrong. C is wrong. (B) is correct.",
  };
  for (const char* out : accepted) {
    const GradeResult r = grade("choice", out, "B");
    EXPECT_EQ(r.grade, Grade::kCorrect) << out << " -> '" << r.extracted << "' " << r.detail;
    EXPECT_EQ(r.extracted, "B") << out;
  }
}

TEST(GradingChoice, ExtractedButWrongIsIncorrect) {
  EXPECT_EQ(verdict("choice", "The answer is C.", "B"), Grade::kIncorrect);
  EXPECT_EQ(verdict("choice", "J", "B"), Grade::kIncorrect);
  EXPECT_EQ(extracted("choice", "Answer: (j)"), "J");
  EXPECT_EQ(verdict("choice", "Answer: I", "I"), Grade::kCorrect);
  EXPECT_EQ(verdict("choice", "The answer is A, since B is wrong.", "A"), Grade::kCorrect);
}

TEST(GradingChoice, NoLetterOrSeveralWithoutAMarkerIsUnparsed) {
  const char* unparsed[] = {
      "",
      "Paris",
      "I don't know.",
      "A dog is an animal.",
      "The answer is a dog.",
      "Answer: Berlin",
      "It is either (A) or (C).",
      "A. Rome\nB. Paris\nC. Berlin",
      "Option A or option B",
      "K",
      "Answer: I think it depends",
      "The answer is not obvious",
      "B is incorrect",
  };
  for (const char* out : unparsed) {
    const GradeResult r = grade("choice", out, "B");
    EXPECT_EQ(r.grade, Grade::kUnparsed) << out << " -> '" << r.extracted << "'";
    EXPECT_TRUE(r.extracted.empty()) << out;
    EXPECT_FALSE(r.detail.empty()) << out;
  }
  EXPECT_NE(grade("choice", "It is either (A) or (C).", "B").detail.find("A, C"), std::string::npos);
}

TEST(GradingChoice, TheReferenceMayBeDecoratedButMustNameALetter) {
  EXPECT_EQ(verdict("choice", "B", "(B)"), Grade::kCorrect);
  EXPECT_EQ(verdict("choice", "B", "b"), Grade::kCorrect);
  EXPECT_EQ(verdict("choice", "B", "Answer: B"), Grade::kCorrect);
  const GradeResult r = grade("choice", "B", "Paris");
  EXPECT_EQ(r.grade, Grade::kIncorrect);
  EXPECT_NE(r.detail.find("reference"), std::string::npos);
}

TEST(GradingNumber, StrictHashMarkFirstThenAnswerIsThenTheLastNumber) {
  // "####" wins over a later number (lm-eval's strict match) ...
  EXPECT_EQ(extracted("number", "3 + 4 = 7\n#### 7\nso 9 in total"), "7");
  EXPECT_EQ(extracted("number", "#### 10 and #### 12"), "10");
  // ... then "answer is" (the last one) over the last number ...
  EXPECT_EQ(extracted("number", "The answer is 42. Check: 40 + 2 = 42, 3 steps."), "42");
  EXPECT_EQ(extracted("number", "The answer is: $18.\nThat took 2 minutes."), "18");
  EXPECT_EQ(extracted("number", "Final answer: **-3**"), "-3");
  EXPECT_EQ(extracted("number", "so \\boxed{72} apples, 3 ways"), "72");
  // ... then the last number in the text (lm-eval's flexible match).
  EXPECT_EQ(extracted("number", "She had 5 apples and ate 2, so 3 are left."), "3");
}

TEST(GradingNumber, CommasDollarsSignsDecimalsAndTrailingPeriods) {
  EXPECT_EQ(extracted("number", "It costs $1,234."), "1234");
  EXPECT_EQ(extracted("number", "a loss of -$5"), "-5");
  EXPECT_EQ(extracted("number", "a loss of $-5.50 overall"), "-5.50");
  EXPECT_EQ(extracted("number", "temperature: -12.5 degrees"), "-12.5");
  EXPECT_EQ(extracted("number", "pages 3-4"), "4");  // a range, not -4
  EXPECT_EQ(extracted("number", "the numbers 1,2,3"), "3");  // not thousands groups
  EXPECT_EQ(extracted("number", "about .5 of it"), "0.5");
  EXPECT_EQ(extracted("number", "1,234,567.89 total"), "1234567.89");
  EXPECT_EQ(extracted("number", "\xE2\x88\x92" "7 below"), "-7");  // U+2212 minus
}

TEST(GradingNumber, ComparesToAGsm8kReferenceWithinTheTolerance) {
  const char* gsm8k = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
                      "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72";
  EXPECT_EQ(verdict("number", "She sold 72 clips.", gsm8k), Grade::kCorrect);
  EXPECT_EQ(verdict("number", "The answer is 72.0", "72"), Grade::kCorrect);
  EXPECT_EQ(verdict("number", "The answer is $1,000", "1000"), Grade::kCorrect);
  EXPECT_EQ(verdict("number", "She sold 24 clips.", gsm8k), Grade::kIncorrect);
  EXPECT_EQ(verdict("number", "#### 71", gsm8k), Grade::kIncorrect);
  EXPECT_EQ(verdict("number", "3.14", "3.14159"), Grade::kIncorrect);
  EXPECT_EQ(verdict("number:0.01", "3.14", "3.14159"), Grade::kCorrect);
  EXPECT_EQ(verdict("number:0.001", "3.14", "3.14159"), Grade::kIncorrect);
  EXPECT_EQ(verdict("number", "0.30000000000000004", "0.3"), Grade::kCorrect);  // relative 1e-9
  EXPECT_EQ(verdict("number", "I cannot say.", "72"), Grade::kUnparsed);
  EXPECT_EQ(verdict("number", "", "72"), Grade::kUnparsed);
  EXPECT_EQ(grade("number", "72", "seventy-two").grade, Grade::kIncorrect);
}

TEST(GradingJson, ParsesTheOutputOrItsFirstJsonFence) {
  EXPECT_EQ(verdict("json", " {\"a\": 1} ", ""), Grade::kCorrect);
  EXPECT_EQ(verdict("json", "Here it is:\n```json\n{\"a\": [1, 2]}\n```\nDone.", ""), Grade::kCorrect);
  EXPECT_EQ(extracted("json", "Here:\n```JSON\n{\"a\": 1}\n```", ""), "{\"a\": 1}");
  EXPECT_EQ(verdict("json", "```\n[1, 2]\n```", ""), Grade::kCorrect);  // a bare fence
  EXPECT_EQ(verdict("json", "```python\nx = 1\n```\n```json\n{}\n```", ""), Grade::kCorrect);
  EXPECT_EQ(verdict("json", "{\"a\": 1,}", ""), Grade::kUnparsed);
  EXPECT_EQ(verdict("json", "Here is the object: {\"a\": 1}", ""), Grade::kUnparsed);
  EXPECT_EQ(verdict("json", "```json\n{\"a\": \n```", ""), Grade::kUnparsed);
}

TEST(GradingJson, ValidatesAgainstTheReferenceSchema) {
  const char* schema = R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[A-Z]"},
      "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 150},
      "score": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
      "kind": {"const": "person"}
    },
    "required": ["name", "age"],
    "additionalProperties": false
  })";
  const auto check = [&](const char* out) { return grade("json", out, schema); };
  EXPECT_EQ(check(R"({"name": "Ann", "age": 30})").grade, Grade::kCorrect);
  EXPECT_EQ(check(R"({"name": "Zoë", "age": 30.0, "score": null, "tags": ["a"], "kind": "person"})").grade,
            Grade::kCorrect);  // 3 code points; 30.0 is an integer
  EXPECT_EQ(check(R"({"name": "Ann", "age": 30, "score": 1, "tags": ["b", "a"]})").grade, Grade::kCorrect);
  struct Case {
    const char* output;
    const char* detail;  // a part of the reason
  };
  const Case rejected[] = {
      {R"([1])", "(root): expected object"},
      {R"({"name": "Ann"})", "\"age\" is missing"},
      {R"({"name": "Ann", "age": 30, "x": 1})", "\"x\" is not allowed"},
      {R"({"name": "A", "age": 30})", "/name: a string of 1 characters, shorter than minLength 2"},
      {R"({"name": "Annabel", "age": 30})", "longer than maxLength"},
      {R"({"name": "ann", "age": 30})", "does not match the pattern"},
      {R"({"name": "Ann", "age": 30.5})", "/age: expected integer"},
      {R"({"name": "Ann", "age": -1})", "below the minimum 0"},
      {R"({"name": "Ann", "age": 150})", "not below the exclusive maximum 150"},
      {R"({"name": "Ann", "age": 3, "score": 0})", "not above the exclusive minimum"},
      {R"({"name": "Ann", "age": 3, "score": 1.5})", "above the maximum 1"},
      {R"({"name": "Ann", "age": 3, "score": "x"})", "expected one of"},
      {R"({"name": "Ann", "age": 3, "tags": []})", "fewer than minItems"},
      {R"({"name": "Ann", "age": 3, "tags": ["a", "b", "a"]})", "more than maxItems"},
      {R"({"name": "Ann", "age": 3, "tags": ["a", "c"]})", "/tags/1: \"c\" is not one of"},
      {R"({"name": "Ann", "age": 3, "kind": "dog"})", "is not the constant"},
  };
  for (const Case& c : rejected) {
    const GradeResult r = check(c.output);
    EXPECT_EQ(r.grade, Grade::kIncorrect) << c.output;
    EXPECT_NE(r.detail.find(c.detail), std::string::npos) << c.output << ": " << r.detail;
  }
}

TEST(GradingJson, SchemaEdgeCases) {
  // additionalProperties as a schema, positional items, draft 4 boolean exclusiveMaximum.
  const char* schema = R"({"additionalProperties": {"type": "number"}, "properties": {"p": {"items": [{"type": "string"}]}},
                          "maximum": 5, "exclusiveMaximum": true, "anyOf": [{"type": "string"}]})";
  EXPECT_EQ(verdict("json", R"({"x": 1, "p": ["s", 2]})", schema), Grade::kCorrect);  // anyOf ignored
  EXPECT_EQ(verdict("json", R"({"x": "1"})", schema), Grade::kIncorrect);
  EXPECT_EQ(verdict("json", R"({"p": [2]})", schema), Grade::kIncorrect);
  EXPECT_EQ(verdict("json", "5", schema), Grade::kIncorrect);
  EXPECT_EQ(verdict("json", "4.5", schema), Grade::kCorrect);
  EXPECT_EQ(verdict("json", "1", "true"), Grade::kCorrect);
  EXPECT_EQ(verdict("json", "1", "false"), Grade::kIncorrect);
  // A schema pattern over a long string (searched in windows, no stack overflow).
  const std::string long_value = "{\"s\": \"" + std::string(100000, 'a') + "b\"}";
  EXPECT_EQ(verdict("json", long_value, R"({"properties": {"s": {"pattern": "b$"}}})"), Grade::kCorrect);
  EXPECT_EQ(verdict("json", long_value, R"({"properties": {"s": {"pattern": "^b"}}})"), Grade::kIncorrect);
  // A key with '/' in the pointer.
  EXPECT_NE(grade("json", R"({"a/b": "x"})", R"({"additionalProperties": {"type": "number"}})").detail.find("/a~1b"),
            std::string::npos);
  // A reference that is not a schema, or a schema that cannot be used: incorrect, saying why.
  EXPECT_NE(grade("json", "{}", "[1]").detail.find("not a JSON Schema"), std::string::npos);
  EXPECT_NE(grade("json", "{}", R"({"type": "integr"})").detail.find("integr"), std::string::npos);
  EXPECT_NE(grade("json", R"({"s": "x"})", R"({"properties": {"s": {"pattern": "("}}})").detail.find("does not compile"),
            std::string::npos);
}

}  // namespace grading_test
