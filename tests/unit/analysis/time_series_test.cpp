// The report's time series keeps each interval's TTFTs exactly while they are few and in an
// HdrHistogram beyond (issue 20: the report's memory does not grow with the run): percentiles by
// nearest rank in both cases, the second within the histogram's 3 significant digits.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/html_report.hpp"

namespace time_series_test {
namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;

// `n` successful requests whose first token arrives in the first second, TTFTs from `ttft_ms`.
std::vector<RequestRecord> first_second(const std::vector<double>& ttft_ms) {
  std::vector<RequestRecord> out;
  for (std::size_t i = 0; i < ttft_ms.size(); ++i) {
    RequestRecord r;
    r.index = i;
    r.in_window = true;
    r.t_intended = Nanos(static_cast<std::int64_t>(i));
    r.t_send = r.t_intended;
    r.t_first = *r.t_send + std::chrono::duration_cast<Nanos>(std::chrono::duration<double, std::milli>(ttft_ms[i]));
    r.t_last = r.t_first;
    r.t_done = Nanos(2s);  // the series spans two seconds
    r.output_tokens = 1;
    r.output_events = 1;
    out.push_back(r);
  }
  return out;
}

double nearest_rank(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size()))));
  return v[rank - 1];
}

TEST(TimeSeries, FewTtftsGiveExactPercentiles) {
  std::vector<double> ttft;
  for (int i = 1; i <= 200; ++i) ttft.push_back(0.5 * i);
  const auto recs = first_second(ttft);
  const TimeSeries ts = compute_time_series(recs, nlohmann::json(), 1.0);
  ASSERT_EQ(ts.ttft_p50_ms.size(), 2U);
  EXPECT_NEAR(ts.ttft_p50_ms[0], nearest_rank(ttft, 50), 1e-9);
  EXPECT_NEAR(ts.ttft_p99_ms[0], nearest_rank(ttft, 99), 1e-9);
  EXPECT_TRUE(std::isnan(ts.ttft_p50_ms[1]));
}

TEST(TimeSeries, ManyTtftsInOneIntervalStayWithinTheHistogramsPrecision) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(std::log(40.0), 0.6);
  std::vector<double> ttft;
  for (int i = 0; i < 50'000; ++i) ttft.push_back(dist(rng));
  const auto recs = first_second(ttft);
  const TimeSeries ts = compute_time_series(recs, nlohmann::json(), 1.0);
  for (const auto& [p, got] : {std::pair{50.0, ts.ttft_p50_ms[0]}, std::pair{99.0, ts.ttft_p99_ms[0]}}) {
    const double exact = nearest_rank(ttft, p);
    EXPECT_NEAR(got, exact, exact * 1e-3 + 1e-3) << "p" << p;  // 3 significant digits (docs/report.md)
  }
}

}  // namespace
}  // namespace time_series_test
