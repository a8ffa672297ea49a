#include <gtest/gtest.h>

#include <sstream>

#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/slo.hpp"

namespace llmload::analysis {
namespace {

using namespace std::chrono_literals;

TEST(Slo, ParsesBoundsAndPercentile) {
  auto s = parse_slo("ttft:2000ms,tpot:200ms");
  EXPECT_EQ(s.ttft, Nanos(2s));
  EXPECT_EQ(s.tpot, Nanos(200ms));
  EXPECT_FALSE(s.e2e);
  EXPECT_EQ(s.percentile, 99.0);
  auto t = parse_slo("ttft:500ms tpot:50ms e2el:10s p99.9");
  EXPECT_EQ(t.e2e, Nanos(10s));
  EXPECT_EQ(t.percentile, 99.9);
  EXPECT_EQ(parse_slo("ttft:250,p:90").ttft, Nanos(250ms));  // bare numbers are milliseconds
  EXPECT_EQ(parse_slo("ttft:2000ms,tpot:200ms").to_string(), "ttft:2000ms,tpot:200ms,p99");
}

TEST(Slo, RejectsBadSpecsWithTheFix) {
  for (const char* bad : {"", "latency:5ms", "ttft", "ttft:fast", "p101,ttft:1s", "p99", "ttft:0ms"}) {
    try {
      parse_slo(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const SloParseError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  try {
    parse_slo("latency:5ms");
  } catch (const SloParseError& e) {
    EXPECT_NE(std::string(e.what()).find("use ttft, tpot or e2e"), std::string::npos);
  }
}

RequestRecord rec(Nanos intended, Nanos send, Nanos first, Nanos last, std::int64_t n_out) {
  RequestRecord r;
  r.t_intended = intended;
  r.t_send = send;
  r.t_first = first;
  r.t_last = last;
  r.t_done = last;
  r.output_tokens = n_out;
  r.in_window = true;
  return r;
}

TEST(Slo, PerRequestAttainmentUsesTheChosenView) {
  auto slo = parse_slo("ttft:100ms");
  // Sent 200 ms late; 50 ms service TTFT; 250 ms from the intended time.
  auto r = rec(0ms, 200ms, 250ms, 300ms, 5);
  EXPECT_TRUE(meets_slo(r, slo, LatencyView::kService));
  EXPECT_FALSE(meets_slo(r, slo, LatencyView::kResponse));
  r.error = ErrorClass::kIncomplete;
  EXPECT_FALSE(meets_slo(r, slo, LatencyView::kService));
}

TEST(Slo, SingleTokenRequestPassesTpotBound) {
  auto r = rec(0ms, 0ms, 10ms, 10ms, 1);
  EXPECT_FALSE(r.tpot());
  EXPECT_TRUE(meets_slo(r, parse_slo("tpot:1ms"), LatencyView::kService));
}

TEST(Report, JsonHasVllmKeysAndNestedData) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < 10; ++i) {
    auto r = rec(Nanos(i * 100ms), Nanos(i * 100ms), Nanos(i * 100ms + 40ms), Nanos(i * 100ms + 80ms), 5);
    r.input_tokens = 11;
    r.tokens_from_usage = true;
    std::vector<ChunkArrival> chunks;
    for (int k = 0; k < 5; ++k) chunks.push_back({*r.t_first + k * 10ms, 1});
    acc.add(r, chunks);
    records.push_back(r);
  }
  Window w{0ms, 980ms, "test"};
  auto m = acc.finalize(w, true, parse_slo("ttft:100ms"), LatencyView::kResponse, records);
  auto j = metrics_json(m);
  for (const char* k : {"completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
                        "request_throughput", "output_throughput", "total_token_throughput", "request_goodput",
                        "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms",
                        "mean_tpot_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms", "slo", "response_time",
                        "schedule_lag", "window", "validity"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["completed"], 10);
  EXPECT_EQ(j["total_input_tokens"], 110);
  EXPECT_NEAR(j["mean_ttft_ms"].get<double>(), 40.0, 1e-9);
  EXPECT_NEAR(j["p99_ttft_ms"].get<double>(), 40.0, 0.05);
  EXPECT_NEAR(j["duration"].get<double>(), 0.98, 1e-12);
  EXPECT_EQ(j["slo"]["verdict"], "INCONCLUSIVE");
  EXPECT_EQ(j["slo"]["attainment"], 1.0);
  // Token arrivals inside the window: all 50.
  EXPECT_NEAR(j["output_throughput"].get<double>(), 50 / 0.98, 1e-9);

  auto line = record_json(records[3]);
  EXPECT_NEAR(line["ttft_ms"].get<double>(), 40.0, 1e-9);
  EXPECT_EQ(line["error_class"], "none");

  // The .hlog has one tagged interval per metric that reads back with the same counts.
  std::stringstream ss;
  write_latency_hlog(ss, m, 1.7e9, "test");
  auto file = read_hlog(ss);
  ASSERT_EQ(file.intervals.size(), kAllMetrics.size());
  for (const auto& iv : file.intervals) {
    ASSERT_TRUE(iv.tag);
    if (*iv.tag == "ttft") {
      EXPECT_EQ(iv.histogram.total_count(), 10);
      EXPECT_EQ(iv.histogram.value_at_percentile(99), m.latency.at(Metric::kTtft).percentile(99));
    }
  }
}

TEST(Report, ConsoleSummaryShowsEveryMetricAndTheVerdict) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  auto r = rec(0ms, 0ms, 40ms, 80ms, 5);
  acc.add(r, std::vector<ChunkArrival>{{40ms, 1}, {80ms, 4}});
  records.push_back(r);
  auto m = acc.finalize(Window{0ms, 80ms, "t"}, false, parse_slo("ttft:100ms"), LatencyView::kService, records);
  const std::string out = console_report(m, "title");
  for (const char* s : {"TTFT", "TPOT", "ITL", "E2E", "p99.9", "goodput", "p99 verdict:", "INCONCLUSIVE"}) {
    EXPECT_NE(out.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace llmload::analysis
