// Sequential stopping for SLO-sized runs (analysis/sequential_slo.hpp): looks at fixed prefixes
// in release order, alpha spent over the looks, PASS and clear FAIL decided, borderline servers
// kept running.
#include "llmload/analysis/sequential_slo.hpp"

#include <gtest/gtest.h>

#include "llmload/analysis/stats.hpp"

namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;

SloSpec ttft_slo(Nanos bound) {
  SloSpec s;
  s.ttft = bound;
  return s;
}

RequestRecord with_ttft(Nanos ttft) {
  RequestRecord r;
  r.t_intended = 0ns;
  r.t_send = 0ns;
  r.t_first = ttft;
  r.t_last = ttft + 10ms;
  r.t_done = r.t_last;
  r.output_tokens = 4;
  r.in_window = true;
  return r;
}

const RequestRecord kFast = with_ttft(10ms);
const RequestRecord kSlow = with_ttft(900ms);

// Feeds requests 0.. in order, `over(i)` deciding which exceed the 500 ms bound; returns the
// number of completions after which the verdict became conclusive (0: never within `limit`).
template <typename Over>
std::int64_t run_until_conclusive(SequentialSlo& s, std::int64_t limit, Over over) {
  for (std::int64_t i = 0; i < limit; ++i) {
    if (s.on_complete(i, over(i) ? kSlow : kFast)) return i + 1;
  }
  return 0;
}

TEST(sequential_slo, FirstLookIsTheSmallestPassAtItsShareOfTheConfidence) {
  SloSpec slo = ttft_slo(500ms);
  // At p99 the early-stopping minimum at look 0's 99.5% (528) is below the sample a p99 needs
  // not to be low-confidence: the first look is that sample.
  EXPECT_LT(early_stopping_min_requests(0, 0.99, 0.995), kConfidentP99Samples);
  EXPECT_EQ(SequentialSlo::first_look_size(slo), kConfidentP99Samples);
  // At p99.9, early stopping decides: stricter than a single look at 99%.
  slo.percentile = 99.9;
  const auto n0 = SequentialSlo::first_look_size(slo);
  EXPECT_GT(n0, early_stopping_min_requests(0, 0.999, 0.99));
  EXPECT_EQ(n0, early_stopping_min_requests(0, 0.999, 0.995));
}

TEST(sequential_slo, AServerWellWithinTheBoundPassesAtTheFirstLook) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  const auto n0 = s.next_look();
  EXPECT_EQ(run_until_conclusive(s, 100'000, [](std::int64_t) { return false; }), n0);
  ASSERT_EQ(s.looks().size(), 1u);
  EXPECT_EQ(s.looks()[0].decision, "PASS");
  EXPECT_NEAR(s.looks()[0].confidence, 0.995, 1e-12);
  EXPECT_NE(s.summary().find("conclusive (PASS)"), std::string::npos) << s.summary();
}

TEST(sequential_slo, ALookWaitsForEveryRequestOfItsPrefixWhateverTheCompletionOrder) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  const auto n0 = s.next_look();
  // Later requests complete first: they are not part of look 0 and do not make it.
  for (std::int64_t i = 10; i < n0 + 200; ++i) EXPECT_FALSE(s.on_complete(i, kFast)) << i;
  EXPECT_TRUE(s.looks().empty());
  // The slowest of the prefix complete last: their exceedances are in the look (1% over a p99
  // bound: neither a PASS nor a clear FAIL).
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_FALSE(s.on_complete(i, kSlow));
  ASSERT_EQ(s.looks().size(), 1u);
  EXPECT_EQ(s.looks()[0].decision, "continue");
  EXPECT_NE(s.looks()[0].detail.find("ttft 10/"), std::string::npos) << s.looks()[0].detail;
  // A completion is counted once.
  EXPECT_FALSE(s.on_complete(0, kFast));
}

TEST(sequential_slo, AClearlyFailingServerFailsAtTheFirstLook) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  const auto n0 = s.next_look();
  // 10% over a p99 bound.
  EXPECT_EQ(run_until_conclusive(s, 100'000, [](std::int64_t i) { return i % 10 == 0; }), n0);
  EXPECT_EQ(s.looks().back().decision, "FAIL");
}

TEST(sequential_slo, FailedRequestsAreExceedances) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  RequestRecord failed = kFast;
  failed.error = ErrorClass::kHttpStatus;
  for (std::int64_t i = 0; i < s.next_look(); ++i) s.on_complete(i, i % 10 == 0 ? failed : kFast);
  ASSERT_TRUE(s.conclusive());
  EXPECT_EQ(s.looks().back().decision, "FAIL");
}

TEST(sequential_slo, ABorderlinePassNeedsMoreLooksEachStricter) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  const auto n0 = s.next_look();
  // 0.4% over a p99 bound: passes, but not from the first sample.
  const auto n = run_until_conclusive(s, 200'000, [](std::int64_t i) { return i % 250 == 0; });
  ASSERT_GT(n, n0);
  EXPECT_EQ(s.looks().back().decision, "PASS");
  double spent = 0;
  for (std::size_t k = 0; k < s.looks().size(); ++k) {
    EXPECT_EQ(s.looks()[k].n, n0 << k);  // the sample doubles
    if (k > 0) {
      EXPECT_GT(s.looks()[k].confidence, s.looks()[k - 1].confidence);
    }
    spent += 1.0 - s.looks()[k].confidence;
  }
  EXPECT_LE(spent, 0.01);  // all looks together keep the 99% confidence
  EXPECT_EQ(n, s.looks().back().n);
}

TEST(sequential_slo, AServerAtExactlyThePercentileStaysInconclusive) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kService);
  // 1% over a p99 bound: neither a PASS nor a clear FAIL.
  EXPECT_EQ(run_until_conclusive(s, 40'000, [](std::int64_t i) { return i % 100 == 0; }), 0);
  EXPECT_FALSE(s.conclusive());
  EXPECT_GE(s.looks().size(), 6u);
  EXPECT_NE(s.summary().find("not conclusive"), std::string::npos) << s.summary();
}

TEST(sequential_slo, EveryBoundMustPassAndAnyClearFailStops) {
  SloSpec slo = ttft_slo(500ms);
  slo.e2e = 2s;
  SequentialSlo s(slo, LatencyView::kService);
  RequestRecord long_e2e = kFast;
  long_e2e.t_last = 3s;
  long_e2e.t_done = 3s;
  for (std::int64_t i = 0; i < s.next_look(); ++i) s.on_complete(i, i % 5 == 0 ? long_e2e : kFast);
  ASSERT_TRUE(s.conclusive());
  EXPECT_EQ(s.looks().back().decision, "FAIL");
  EXPECT_NE(s.looks().back().detail.find("e2e"), std::string::npos);
}

TEST(sequential_slo, TheResponseViewCountsTheScheduleLag) {
  SequentialSlo s(ttft_slo(500ms), LatencyView::kResponse);
  RequestRecord late = kFast;
  late.t_intended = -1s;  // sent a second late: 1.01 s from its intended time
  for (std::int64_t i = 0; i < s.next_look(); ++i) s.on_complete(i, late);
  EXPECT_EQ(s.looks().back().decision, "FAIL");
}

TEST(sequential_slo, AnEmptySloIsRefused) { EXPECT_THROW(SequentialSlo(SloSpec{}, LatencyView::kService), std::invalid_argument); }

}  // namespace
