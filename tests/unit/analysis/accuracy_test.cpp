// Accuracy of graded requests (analysis/accuracy.hpp): the Wilson interval against published
// values, and the accuracy section's counts, per grader and subset, and correct goodput.
#include "llmload/analysis/accuracy.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace accuracy_test {

using namespace llmload::analysis;

// The Wilson score interval by hand: with p = s/n and z the normal quantile,
//   center = (p + z^2 / 2n) / (1 + z^2 / n)
//   half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)
// z(95%) = 1.959963984540054, z^2 = 3.841458820694124; z(99%) = 2.575829303548901.
//
//   0 of 10 at 95%:  p = 0: center = half = 0.192072941 / 1.384145882 = 0.138766400, so
//                    [0, 0.277532800].
//   5 of 10 at 95%:  center 0.5, half = 1.416010 * sqrt(0.025 + 0.009603647) = 0.263406909:
//                    [0.236593091, 0.763406909].
//   95 of 100 at 95%: center = 0.969207294 / 1.038414588 = 0.933352926,
//                    half = 1.887458 * sqrt(0.000475 + 0.0000960365) = 0.045103395:
//                    [0.888249531, 0.978456321].
//   10 of 10 at 95%: [1 - 0.277532800, 1] by symmetry with 0 of 10.
//   0 of 10 at 99%:  hi = z^2/n / (1 + z^2/n) = 0.663490 / 1.663490 = 0.398854093.
// Newcombe (1998, Statistics in Medicine 17:857-872) lists the Wilson score interval (his
// method 3) to 4 places for 81/263: 0.2553-0.3662, 15/148: 0.0624-0.1605, 0/20: 0-0.1611,
// 1/29: 0.0061-0.1718 and 29/29: 0.8830-1.
TEST(AccuracyWilson, MatchesThePublishedIntervals) {
  const auto expect = [](std::int64_t s, std::int64_t n, double conf, double lo, double hi, double tol) {
    const ProportionInterval ci = wilson_interval(s, n, conf);
    EXPECT_NEAR(ci.lo, lo, tol) << s << " of " << n;
    EXPECT_NEAR(ci.hi, hi, tol) << s << " of " << n;
  };
  expect(0, 10, 0.95, 0.0, 0.277532800, 1e-8);
  expect(5, 10, 0.95, 0.236593091, 0.763406909, 1e-8);
  expect(95, 100, 0.95, 0.888249531, 0.978456321, 1e-8);
  expect(81, 263, 0.95, 0.2553, 0.3662, 5e-5);
  expect(15, 148, 0.95, 0.0624, 0.1605, 5e-5);
  expect(0, 20, 0.95, 0.0, 0.1611, 5e-5);
  expect(1, 29, 0.95, 0.0061, 0.1718, 5e-5);
  expect(29, 29, 0.95, 0.8830, 1.0, 5e-5);
  expect(10, 10, 0.95, 1 - 0.277532800, 1.0, 1e-8);
  expect(0, 10, 0.99, 0.0, 0.398854093, 1e-8);
  EXPECT_EQ(wilson_interval(0, 10).lo, 0.0);  // exactly 0, not -1e-17
  EXPECT_EQ(wilson_interval(10, 10).hi, 1.0);
}

TEST(AccuracyWilson, EmptySampleAndBadArguments) {
  const ProportionInterval none = wilson_interval(0, 0);
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_EQ(none.hi, 1.0);
  EXPECT_THROW(wilson_interval(3, 2), std::invalid_argument);
  EXPECT_THROW(wilson_interval(-1, 2), std::invalid_argument);
  EXPECT_THROW(wilson_interval(1, 2, 1.0), std::invalid_argument);
  EXPECT_THROW(wilson_interval(1, 2, 0.0), std::invalid_argument);
}

RequestRecord graded(Grade g, std::string grader = "choice", std::string subset = "", std::uint64_t index = 0) {
  RequestRecord r;
  r.index = index;
  r.in_window = true;
  r.grade = g;
  r.grader = std::move(grader);
  r.subset = std::move(subset);
  return r;
}

const auto kAlways = [](const RequestRecord&) { return true; };


TEST(AccuracySummary, NullWithoutGradedRequests) {
  EXPECT_TRUE(accuracy_summary({}, kAlways, 10).is_null());
  RequestRecord plain;
  plain.in_window = true;
  EXPECT_TRUE(accuracy_summary(std::vector<RequestRecord>{plain}, kAlways, 10).is_null());
  RequestRecord warm = graded(Grade::kCorrect);
  warm.warmup = true;
  RequestRecord outside = graded(Grade::kCorrect);
  outside.in_window = false;
  EXPECT_TRUE(accuracy_summary(std::vector<RequestRecord>{warm, outside}, kAlways, 10).is_null());
}

TEST(AccuracySummary, CountsRatesAndIntervalInTheDocumentedShape) {
  std::vector<RequestRecord> rs;
  for (int i = 0; i < 95; ++i) rs.push_back(graded(Grade::kCorrect));
  for (int i = 0; i < 3; ++i) rs.push_back(graded(Grade::kIncorrect));
  for (int i = 0; i < 2; ++i) rs.push_back(graded(Grade::kUnparsed));
  RequestRecord failed = graded(Grade::kNone);
  failed.error = ErrorClass::kTimeout;
  rs.push_back(failed);
  rs.push_back(failed);
  RequestRecord stopped = failed;
  stopped.error = ErrorClass::kStoppedEarly;  // not a failure
  rs.push_back(stopped);
  RequestRecord ungraded_row = failed;
  ungraded_row.grader.clear();  // a row without a grader: never graded, not counted
  rs.push_back(ungraded_row);
  RequestRecord warm = graded(Grade::kIncorrect);
  warm.warmup = true;
  rs.push_back(warm);
  RequestRecord outside = graded(Grade::kIncorrect);
  outside.in_window = false;
  rs.push_back(outside);

  const auto j = accuracy_summary(rs, kAlways, 50.0);
  EXPECT_EQ(j["graded"], 100);
  EXPECT_EQ(j["correct"], 95);
  EXPECT_EQ(j["incorrect"], 3);
  EXPECT_EQ(j["unparsed"], 2);
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(j["unparsed_rate"].get<double>(), 0.02);
  EXPECT_NEAR(j["accuracy_ci95"][0].get<double>(), 0.888249531, 1e-8);  // 95 of 100, as above
  EXPECT_NEAR(j["accuracy_ci95"][1].get<double>(), 0.978456321, 1e-8);
  EXPECT_EQ(j["confidence"], 0.95);
  EXPECT_EQ(j["failed_requests"], 2);
  EXPECT_FALSE(j.contains("by_subset"));
  ASSERT_TRUE(j["by_grader"].contains("choice"));
  EXPECT_EQ(j["by_grader"].size(), 1u);
  EXPECT_EQ(j["by_grader"]["choice"]["graded"], 100);
  EXPECT_EQ(j["correct_goodput"]["requests"], 95);
  EXPECT_DOUBLE_EQ(j["correct_goodput"]["rate_per_s"].get<double>(), 1.9);
  EXPECT_TRUE(j["correct_goodput"]["meaning"].is_string());
  for (const char* key : {"graded", "correct", "incorrect", "unparsed", "accuracy", "accuracy_ci95", "unparsed_rate",
                          "confidence", "failed_requests", "by_grader", "correct_goodput"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(AccuracySummary, PerGraderAndPerSubset) {
  const std::vector<RequestRecord> rs = {
      graded(Grade::kCorrect, "choice", "algebra"),     graded(Grade::kIncorrect, "choice", "algebra"),
      graded(Grade::kCorrect, "choice", "history"),     graded(Grade::kCorrect, "number", "gsm8k"),
      graded(Grade::kUnparsed, "number", "gsm8k"),      graded(Grade::kCorrect, "number"),
  };
  const auto j = accuracy_summary(rs, kAlways, 1.0, 0.99);
  EXPECT_EQ(j["confidence"], 0.99);
  const auto& choice = j["by_grader"]["choice"];
  EXPECT_EQ(choice["graded"], 3);
  EXPECT_EQ(choice["correct"], 2);
  EXPECT_EQ(choice["incorrect"], 1);
  EXPECT_EQ(choice["unparsed"], 0);
  EXPECT_DOUBLE_EQ(choice["accuracy"].get<double>(), 2.0 / 3.0);
  const auto& number = j["by_grader"]["number"];
  EXPECT_EQ(number["graded"], 3);
  EXPECT_DOUBLE_EQ(number["unparsed_rate"].get<double>(), 1.0 / 3.0);
  // Subsets: only records that name one.
  ASSERT_TRUE(j.contains("by_subset"));
  EXPECT_EQ(j["by_subset"].size(), 3u);
  EXPECT_EQ(j["by_subset"]["algebra"]["graded"], 2);
  EXPECT_DOUBLE_EQ(j["by_subset"]["algebra"]["accuracy"].get<double>(), 0.5);
  EXPECT_EQ(j["by_subset"]["history"]["correct"], 1);
  EXPECT_EQ(j["by_subset"]["gsm8k"]["unparsed"], 1);
  // The 99% interval of 1 of 1 (by hand: z^2 = 6.634897, center = (1 + 3.317448) / 7.634897 = 0.565489,
  // half = 2.575829 / 7.634897 * sqrt(6.634897 / 4) = 0.434511: [0.130978, 1]).
  EXPECT_NEAR(j["by_subset"]["history"]["accuracy_ci95"][0].get<double>(), 0.130977543, 1e-8);
  EXPECT_EQ(j["by_subset"]["history"]["accuracy_ci95"][1].get<double>(), 1.0);
}

TEST(AccuracySummary, CorrectGoodputCountsCorrectAnswersThatMetTheSlo) {
  std::vector<RequestRecord> rs;
  for (std::uint64_t i = 0; i < 10; ++i) rs.push_back(graded(i < 6 ? Grade::kCorrect : Grade::kIncorrect, "exact", "", i));
  // Requests 0-6 met the SLO: of the 6 correct ones (0-5) all did; 6 met it but was wrong.
  const auto slo = [](const RequestRecord& r) { return r.index <= 6 && r.index != 2; };
  const auto j = accuracy_summary(rs, slo, 4.0);
  EXPECT_EQ(j["correct_goodput"]["requests"], 5);  // 0, 1, 3, 4, 5
  EXPECT_DOUBLE_EQ(j["correct_goodput"]["rate_per_s"].get<double>(), 1.25);
  // Without an SLO (an empty function): every correct answer.
  const auto k = accuracy_summary(rs, {}, 4.0);
  EXPECT_EQ(k["correct_goodput"]["requests"], 6);
  // No window: no rate.
  EXPECT_TRUE(accuracy_summary(rs, slo, 0.0)["correct_goodput"]["rate_per_s"].is_null());
}

}  // namespace accuracy_test

namespace llmload::analysis {
namespace {

// Newcombe (1998), "ProportionInterval estimation for the difference between independent proportions",
// Statistics in Medicine 17:873-890, Table II example (a): 56/70 against 48/80, method 10 (the
// hybrid score interval): difference 0.2000, interval 0.0524 to 0.3339.
TEST(AccuracyCompare, NewcombeHybridScoreIntervalOfTheDifference) {
  const auto c = compare_proportions(48, 80, 56, 70);
  ASSERT_TRUE(c.is_object());
  EXPECT_NEAR(c["difference"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(c["difference_ci95"][0].get<double>(), 0.0524, 5e-4);
  EXPECT_NEAR(c["difference_ci95"][1].get<double>(), 0.3339, 5e-4);
  EXPECT_TRUE(c["significant"].get<bool>());
  // Reversed, the interval is mirrored.
  const auto r = compare_proportions(56, 70, 48, 80);
  EXPECT_NEAR(r["difference_ci95"][0].get<double>(), -0.3339, 5e-4);
  EXPECT_NEAR(r["difference_ci95"][1].get<double>(), -0.0524, 5e-4);
  // Equal proportions: not significant; an empty side: null.
  EXPECT_FALSE(compare_proportions(90, 100, 91, 100)["significant"].get<bool>());
  EXPECT_TRUE(compare_proportions(0, 0, 5, 10).is_null());
}

}  // namespace
}  // namespace llmload::analysis
