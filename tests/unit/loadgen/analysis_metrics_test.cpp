#include <gtest/gtest.h>

#include <sstream>

#include <fmt/format.h>

#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/slo.hpp"

namespace llmload::analysis {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

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
    EXPECT_NE(std::string(e.what()).find("use ttft, tpot, e2e or accuracy"), std::string::npos);
  }
}

TEST(Slo, AMinimumAccuracyAsAFractionOrAPercentage) {
  const auto a = parse_slo("accuracy:0.95");
  ASSERT_TRUE(a.min_accuracy);
  EXPECT_DOUBLE_EQ(*a.min_accuracy, 0.95);
  EXPECT_TRUE(a.empty()) << "no latency bound";
  EXPECT_EQ(a.to_string(), "accuracy:0.95");
  const auto b = parse_slo("ttft:1s,accuracy:90%");
  EXPECT_DOUBLE_EQ(*b.min_accuracy, 0.9);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.to_string(), "ttft:1000ms,accuracy:0.9,p99");
  EXPECT_EQ(parse_slo(b.to_string()).min_accuracy, b.min_accuracy);
  for (const char* bad : {"accuracy:0", "accuracy:1.5", "accuracy:high", "accuracy:120%", "accuracy:"}) {
    EXPECT_THROW(parse_slo(bad), SloParseError) << bad;
  }
  try {
    parse_slo("accuracy:2");
  } catch (const SloParseError& e) {
    EXPECT_NE(std::string(e.what()).find("accuracy:0.95"), std::string::npos) << e.what();
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

// All output in one event (a non-streaming body): no time between tokens was observed, so no
// TPOT (it was 0); over several events, the mean gap.
TEST(Slo, OutputInOneEventHasNoTpot) {
  auto whole = rec(0ms, 0ms, 100ms, 100ms, 40);
  whole.output_events = 1;
  EXPECT_FALSE(whole.tpot());
  auto streamed = rec(0ms, 0ms, 10ms, 400ms, 40);
  streamed.output_events = 40;
  ASSERT_TRUE(streamed.tpot());
  EXPECT_EQ(*streamed.tpot(), 10ms);
  // Many events at one instant (a proxy that buffered the stream): no TPOT either, and a TPOT
  // bound leaves such answers out of its population (a TPOT of 0 passed them).
  auto buffered = rec(0ms, 0ms, 100ms, 100ms, 40);
  buffered.output_events = 40;
  EXPECT_FALSE(buffered.tpot());
  Window w;
  w.start = 0ns;
  w.end = 1s;
  w.method = "test";
  const std::vector<RequestRecord> all = {buffered, buffered, streamed};
  const SloResult s = evaluate_slo(parse_slo("tpot:1ms"), LatencyView::kService, w, all);
  ASSERT_EQ(s.metrics.size(), 1u);
  EXPECT_EQ(s.metrics[0].n, 1) << "only the streamed answer had a TPOT";
  EXPECT_EQ(s.metrics[0].exceedances, 1);
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

// Goodput counts good requests completing in the window, as request throughput counts requests:
// with a queue, requests whose intended start is in the window finish after it, and counting them
// by start made goodput exceed throughput (30.0 against 24.7 req/s in a queued closed-loop run).
TEST(Slo, GoodputCountsCompletionsInTheWindowAndNeverExceedsThroughput) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  // 20 requests intended every 50 ms over [0, 1 s); each takes 400 ms (queueing), so the last 8
  // complete after the window's end at 1 s. All meet the SLO.
  for (int i = 0; i < 20; ++i) {
    const Nanos t = i * 50ms;
    auto r = rec(t, t, t + 20ms, t + 400ms, 4);
    r.tokens_from_usage = true;
    acc.add(r, std::vector<ChunkArrival>{{t + 20ms, 1}, {t + 400ms, 3}});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{0ms, 1000ms, "test"}, true, parse_slo("ttft:100ms"), LatencyView::kResponse, records);
  ASSERT_TRUE(m.slo);
  EXPECT_EQ(m.slo->good, 20);  // every measured request was good
  EXPECT_DOUBLE_EQ(m.slo->attainment, 1.0);
  // 13 complete in the window (intended 0..600 ms, done 400..1000 ms; the end is inclusive).
  EXPECT_NEAR(m.request_throughput, 13.0, 1e-9);
  EXPECT_NEAR(m.slo->request_goodput, 13.0, 1e-9);
  EXPECT_NEAR(m.slo->token_goodput, 52.0, 1e-9);
  EXPECT_LE(m.slo->request_goodput, m.request_throughput);
  // A request that misses the bound lowers goodput, not throughput.
  records[0].t_first = 300ms;
  auto m2 = acc.finalize(Window{0ms, 1000ms, "test"}, true, parse_slo("ttft:100ms"), LatencyView::kResponse, records);
  EXPECT_NEAR(m2.request_throughput, 13.0, 1e-9);
  EXPECT_NEAR(m2.slo->request_goodput, 12.0, 1e-9);
  EXPECT_EQ(m2.slo->good, 19);
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

// ---- validity verdict, minimums, window record ----

// `n` requests 10 ms apart, 40 ms TTFT, 5 tokens; failures by HTTP status where `status(i)` != 200.
template <class F>
RunMetrics run_of(int n, F status, bool open_loop = false, const ValidityOptions& o = {}, Window w = {}) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < n; ++i) {
    auto r = rec(Nanos(i * 10ms), Nanos(i * 10ms), Nanos(i * 10ms + 40ms), Nanos(i * 10ms + 80ms), 5);
    r.index = static_cast<std::uint64_t>(i);
    if (const int st = status(i); st != 200) {
      r.error = ErrorClass::kHttpStatus;
      r.http_status = st;
      r.error_message = fmt::format("HTTP {}: busy", st);
      r.t_first.reset();
      r.t_last.reset();
    }
    acc.add(r, {});
    records.push_back(r);
  }
  if (w.end == Nanos(0)) w = Window{0ms, Nanos(n * 10ms), "test"};
  return acc.finalize(w, open_loop, std::nullopt, LatencyView::kService, records, o);
}
auto all_ok = [](int) { return 200; };

std::vector<std::string> codes(const RunMetrics& m) {
  std::vector<std::string> out;
  for (const auto& r : m.validity_reasons) out.push_back(r.code);
  return out;
}

TEST(Validity, SamplesNeededForAPercentile) {
  EXPECT_EQ(samples_needed(99), 100);
  EXPECT_EQ(samples_needed(99.9), 1000);
  EXPECT_EQ(samples_needed(99.99), 10000);
  EXPECT_EQ(samples_needed(95), 20);
  EXPECT_EQ(samples_needed(90), 10);
  EXPECT_EQ(samples_needed(50), 2);
  EXPECT_EQ(samples_needed(99.5), 200);
  EXPECT_EQ(samples_needed(100), 1);
  EXPECT_EQ(samples_needed(0), 1);
}

TEST(Validity, TooFewSamplesAtTheBoundary) {
  EXPECT_EQ(codes(run_of(99, all_ok)), std::vector<std::string>{"too_few_samples"});
  EXPECT_TRUE(codes(run_of(100, all_ok)).empty());
  // The SLO's percentile counts: p99.9 needs 1,000.
  ValidityOptions o;
  o.percentiles = {99.9};
  auto m = run_of(100, all_ok, false, o);
  ASSERT_EQ(codes(m), std::vector<std::string>{"too_few_samples"});
  EXPECT_NE(m.validity_reasons[0].message.find("p99.9 needs at least 1000"), std::string::npos)
      << m.validity_reasons[0].message;
  EXPECT_EQ(m.minimums.required_samples, 1000);
  EXPECT_FALSE(m.minimums.met);
  // Measured requests are counted, failed ones included: one failure does not push a run sized
  // at the floor under it (the error rate judges failures), but 99 measured requests are too few.
  o = {};
  o.max_error_rate = 1;
  auto f = run_of(100, [](int i) { return i == 7 ? 429 : 200; }, false, o);
  EXPECT_TRUE(codes(f).empty()) << f.invalid_reason;
  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(codes(run_of(99, [](int i) { return i == 7 ? 429 : 200; }, false, o)),
            std::vector<std::string>{"too_few_samples"});
  // A shard leaves it to the merged run.
  o = {};
  o.check_samples = false;
  EXPECT_TRUE(codes(run_of(10, all_ok, false, o)).empty());
}

TEST(Validity, ErrorRateAboveTheThresholdAndServerErrors) {
  ValidityOptions o;
  o.max_error_rate = 0.05;
  // 10 of 200 failed (429: not a server error): exactly the threshold is still valid.
  auto at = run_of(200, [](int i) { return i % 20 == 19 ? 429 : 200; }, false, o);
  EXPECT_EQ(at.failed, 10);
  EXPECT_TRUE(codes(at).empty()) << at.invalid_reason;
  auto above = run_of(200, [](int i) { return i % 20 == 19 || i == 0 ? 429 : 200; }, false, o);
  EXPECT_EQ(above.failed, 11);
  ASSERT_EQ(codes(above), std::vector<std::string>{"error_rate"});
  EXPECT_NE(above.validity_reasons[0].message.find("11 of 200"), std::string::npos) << above.invalid_reason;
  EXPECT_NE(above.validity_reasons[0].message.find("http_status"), std::string::npos) << above.invalid_reason;
  // One 5xx among 120 requests: under the error-rate threshold, but the server returned errors.
  auto one = run_of(120, [](int i) { return i == 50 ? 502 : 200; }, false, o);
  ASSERT_EQ(codes(one), std::vector<std::string>{"server_errors"});
  EXPECT_NE(one.invalid_reason.find("1 measured requests with HTTP 5xx"), std::string::npos) << one.invalid_reason;
  EXPECT_NE(one.invalid_reason.find("HTTP 502: busy"), std::string::npos) << one.invalid_reason;
}

TEST(Validity, MinimumsOfDurationAndRequests) {
  ValidityOptions o;
  o.min_duration = 2s;
  o.min_requests = 150;
  o.max_duration = 1500ms;
  o.max_duration_reached = true;
  auto m = run_of(120, all_ok, false, o);  // a 1.2 s window
  EXPECT_EQ(codes(m), (std::vector<std::string>{"duration_below_minimum", "requests_below_minimum"}));
  for (const auto& r : m.validity_reasons) EXPECT_NE(r.message.find("--max-duration"), std::string::npos) << r.message;
  EXPECT_FALSE(m.minimums.met);
  auto j = metrics_json(m);
  EXPECT_DOUBLE_EQ(j["minimums"]["min_duration_s"].get<double>(), 2.0);
  EXPECT_EQ(j["minimums"]["min_requests"], 150);
  EXPECT_DOUBLE_EQ(j["minimums"]["max_duration_s"].get<double>(), 1.5);
  EXPECT_TRUE(j["minimums"]["max_duration_reached"].get<bool>());
  EXPECT_FALSE(j["minimums"]["met"].get<bool>());
  EXPECT_EQ(j["minimums"]["required_samples"], 100);

  o.min_duration = 1s;
  o.min_requests = 120;
  o.max_duration_reached = false;
  auto ok = run_of(120, all_ok, false, o);
  EXPECT_TRUE(codes(ok).empty());
  EXPECT_TRUE(ok.minimums.met);
  EXPECT_TRUE(metrics_json(ok)["minimums"]["met"].get<bool>());
}

TEST(Validity, ResultJsonKeepsTheFirstVersionsKeysAndAddsTheReasons) {
  // Open loop, every request 5 ms late: the schedule-lag reason comes first.
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < 50; ++i) {
    auto r = rec(Nanos(i * 10ms), Nanos(i * 10ms + 5ms), Nanos(i * 10ms + 45ms), Nanos(i * 10ms + 85ms), 5);
    acc.add(r, {});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{0ms, 500ms, "t"}, true, std::nullopt, LatencyView::kResponse, records);
  ASSERT_EQ(codes(m), (std::vector<std::string>{"schedule_lag", "too_few_samples"}));
  EXPECT_TRUE(m.invalid);
  EXPECT_NE(m.invalid_reason.find("late enough to change the results"), std::string::npos) << m.invalid_reason;
  EXPECT_NE(m.invalid_reason.find("schedule lag p50 5.0"), std::string::npos) << m.invalid_reason;
  auto j = metrics_json(m);
  const auto& v = j["validity"];
  EXPECT_FALSE(v["valid"].get<bool>());
  EXPECT_EQ(v["verdict"], "INVALID");
  EXPECT_EQ(v["reason"], m.invalid_reason);
  EXPECT_TRUE(v["checked"].get<bool>());
  ASSERT_EQ(v["reasons"].size(), 2u);
  EXPECT_EQ(v["reasons"][0]["code"], "schedule_lag");
  EXPECT_EQ(v["reasons"][1]["code"], "too_few_samples");
  EXPECT_EQ(v["checks"], json::array({"schedule_lag", "too_few_samples", "error_rate", "server_errors"}));
  EXPECT_DOUBLE_EQ(v["max_error_rate"].get<double>(), 0.05);
  EXPECT_TRUE(j["stopped_early"].is_null());
  // The console names the verdict and every reason.
  const std::string out = console_report(m, "t");
  EXPECT_NE(out.find("INVALID"), std::string::npos);
  EXPECT_NE(out.find("RUN INVALID [schedule_lag]"), std::string::npos) << out;
  EXPECT_NE(out.find("RUN INVALID [too_few_samples]"), std::string::npos) << out;
  EXPECT_EQ(console_report(run_of(100, all_ok), "t").find("RUN INVALID"), std::string::npos);
  EXPECT_NE(console_report(run_of(100, all_ok), "t").find("VALID"), std::string::npos);
}

// `n` open-loop requests 10 ms apart with a 40 ms service TTFT; request i is sent lag(i) late.
template <class F>
RunMetrics lagged_run(int n, F lag, const std::optional<SloSpec>& slo = std::nullopt, const ValidityOptions& o = {}) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < n; ++i) {
    const Nanos t = i * 10ms;
    const Nanos l = lag(i);
    auto r = rec(t, t + l, t + l + 40ms, t + l + 80ms, 5);
    acc.add(r, {});
    records.push_back(r);
  }
  return acc.finalize(Window{0ms, Nanos(n * 10ms), "test"}, true, slo, LatencyView::kResponse, records, o);
}

// Timer wake-up latency: 3% of requests 1.5 ms late beside a 40 ms TTFT moves no reported number
// by 5%: reported (late_fraction), not INVALID. The old rule (1% over 1 ms) called it INVALID.
TEST(Validity, ScheduleLagThatChangesNothingIsReportedNotInvalid) {
  auto m = lagged_run(1000, [](int i) { return i % 33 == 5 ? Nanos(1500us) : Nanos(50us); });
  EXPECT_GT(m.late_fraction, 0.01);
  EXPECT_TRUE(codes(m).empty()) << m.invalid_reason;
  EXPECT_EQ(m.validity_checks.front(), "schedule_lag") << "the check ran";
}

// The same share of requests 30 ms late moves the p99 TTFT from the intended time by far more
// than 5%: INVALID, saying which number moved and by how much.
TEST(Validity, ScheduleLagThatMovesAReportedNumberIsInvalidWithTheNumber) {
  auto m = lagged_run(1000, [](int i) { return i % 33 == 5 ? Nanos(30ms) : Nanos(50us); });
  ASSERT_EQ(codes(m), std::vector<std::string>{"schedule_lag"});
  EXPECT_NE(m.invalid_reason.find("p99 TTFT"), std::string::npos) << m.invalid_reason;
  EXPECT_NE(m.invalid_reason.find("remedies"), std::string::npos) << "no CPU share known: both remedies";
}

// A lag too small to move the percentiles by 5% still invalidates the run when it flips the
// verdict: a TTFT bound of 41 ms is met from t_send (40 ms) and missed from t_intended.
TEST(Validity, ScheduleLagThatChangesTheVerdictIsInvalid) {
  auto slo = parse_slo("ttft:41ms");
  auto m = lagged_run(1000, [](int i) { return i % 20 == 3 ? Nanos(1500us) : Nanos(50us); }, slo);
  ASSERT_TRUE(m.slo);
  EXPECT_EQ(m.slo->service_view_verdict, Verdict::kPass);
  EXPECT_EQ(m.slo->verdict, Verdict::kFail);
  ASSERT_EQ(codes(m), std::vector<std::string>{"schedule_lag"});
  EXPECT_NE(m.invalid_reason.find("changed the SLO verdict (FAIL from the intended send times, PASS"),
            std::string::npos)
      << m.invalid_reason;
  // The same lag with a bound far away changes nothing.
  auto far = lagged_run(1000, [](int i) { return i % 20 == 3 ? Nanos(1500us) : Nanos(50us); }, parse_slo("ttft:500ms"));
  EXPECT_TRUE(codes(far).empty()) << far.invalid_reason;
  EXPECT_EQ(far.slo->verdict, far.slo->service_view_verdict);
}

// An in-flight cap (--max-concurrency 1): requests wait for the slot, so they are sent late by
// design and the response-time view shows the wait. That is the cap's, not the client's, lag.
TEST(Validity, WaitingForAnInFlightSlotIsNotClientLag) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  Nanos free_at{0};
  for (int i = 0; i < 200; ++i) {
    const Nanos t = i * 10ms;
    const Nanos send = std::max(t, free_at);
    auto r = rec(t, send, send + 5ms, send + 15ms, 5);
    free_at = send + 15ms;
    acc.add(r, {});
    records.push_back(r);
  }
  ValidityOptions capped;
  capped.max_inflight = 1;
  auto m = acc.finalize(Window{0ms, 2000ms, "t"}, true, std::nullopt, LatencyView::kResponse, records, capped);
  EXPECT_GT(m.late_fraction, 0.5) << "most requests waited for the slot";
  EXPECT_TRUE(codes(m).empty()) << m.invalid_reason;
  // The same records without a cap are a client that fell behind.
  auto uncapped = acc.finalize(Window{0ms, 2000ms, "t"}, true, std::nullopt, LatencyView::kResponse, records);
  EXPECT_EQ(codes(uncapped), std::vector<std::string>{"schedule_lag"});
}

// The message tells timer wake-up latency (an idle client) from a saturated one.
TEST(Validity, ScheduleLagRemedyFollowsTheClientsCpu) {
  ValidityOptions idle;
  idle.client_core_share = 0.08;
  auto a = lagged_run(1000, [](int i) { return i % 33 == 5 ? Nanos(30ms) : Nanos(50us); }, std::nullopt, idle);
  EXPECT_NE(a.invalid_reason.find("timer wake-up latency"), std::string::npos) << a.invalid_reason;
  EXPECT_NE(a.invalid_reason.find("--schedule-spin"), std::string::npos) << a.invalid_reason;
  ValidityOptions busy;
  busy.client_core_share = 0.97;
  auto b = lagged_run(1000, [](int i) { return i % 33 == 5 ? Nanos(30ms) : Nanos(50us); }, std::nullopt, busy);
  EXPECT_NE(b.invalid_reason.find("saturated"), std::string::npos) << b.invalid_reason;
  EXPECT_NE(b.invalid_reason.find("--shard-count"), std::string::npos) << b.invalid_reason;
}

// One population per window: requests started in the warmup that complete in the window count in
// request throughput as their tokens count in output throughput; the send rate is taken over the
// sending span, so the drain does not dilute it.
TEST(Throughput, WarmupStartedCompletionsCountAndTheSendRateIgnoresTheDrain) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  // 30 requests every 100 ms from 0, each 250 ms long; the first 5 are warmup. Window [500 ms,
  // 3 s]: the last send is at 2.9 s, the last completion at 3.15 s.
  for (int i = 0; i < 30; ++i) {
    const Nanos t = i * 100ms;
    auto r = rec(t, t, t + 50ms, t + 250ms, 5);
    r.warmup = i < 5;
    r.in_window = !r.warmup;
    r.tokens_from_usage = true;
    acc.add(r, std::vector<ChunkArrival>{{t + 50ms, 1}, {t + 250ms, 4}});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{500ms, 3000ms, "test"}, true, parse_slo("ttft:100ms"), LatencyView::kResponse, records);
  // Completions in [0.5, 3.0] s: requests 3..27 (done at 0.55 .. 2.95 s) = 25, two started in warmup.
  EXPECT_EQ(m.completing_in_window, 25);
  EXPECT_NEAR(m.request_throughput, 25 / 2.5, 1e-9);
  EXPECT_NEAR(m.slo->request_goodput, m.request_throughput, 1e-9) << "goodput counts the same requests";
  EXPECT_EQ(m.completed, 25) << "the latency population is the measured requests (intended in the window)";
  // 25 measured requests sent from 0.5 s to 2.9 s: 24 gaps over 2.4 s.
  EXPECT_NEAR(m.achieved_send_rate, 10.0, 1e-9);
  EXPECT_NEAR(m.intended_send_rate, 10.0, 1e-9);
}

// A closed loop's window starts at the release a completion made: that completion is before the
// window, not in it. One slot, 100 ms requests back to back, 2 of warmup: the server completes 10
// a second, and the window [200 ms, 900 ms] says so (it said 8 in 0.7 s: 11.4 a second).
TEST(Throughput, AClosedLoopsWindowHoldsTheRateItsServerDelivers) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < 10; ++i) {
    const Nanos t = i * 100ms;
    auto r = rec(t, t, t + 50ms, t + 100ms, 5);
    r.warmup = i < 2;
    r.in_window = !r.warmup;
    r.tokens_from_usage = true;
    acc.add(r, std::vector<ChunkArrival>{{t + 50ms, 1}, {t + 100ms, 4}});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{200ms, 900ms, "test"}, false, parse_slo("ttft:100ms"), LatencyView::kService, records);
  EXPECT_EQ(m.completing_in_window, 7);
  EXPECT_NEAR(m.request_throughput, 10.0, 1e-9);
  EXPECT_NEAR(m.slo->request_goodput, 10.0, 1e-9);
}

// The achieved rate is over the sends, the intended one over the schedule, whatever order the
// requests completed in; only the measured requests count.
TEST(Throughput, AchievedAndIntendedSendRatesAreEachOverTheirOwnSpan) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  // Scheduled every 100 ms; request i is sent i ms late; records in reverse (completion) order.
  for (int i = 29; i >= 0; --i) {
    const Nanos t = i * 100ms;
    auto r = rec(t, t + i * 1ms, t + 60ms, t + 250ms, 5);
    r.warmup = i < 5;
    r.in_window = !r.warmup;
    acc.add(r, std::vector<ChunkArrival>{{t + 60ms, 5}});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{500ms, 3000ms, "test"}, true, std::nullopt, LatencyView::kResponse, records);
  // Measured: 5..29. Intended 0.5 .. 2.9 s; sent 0.505 .. 2.929 s.
  EXPECT_NEAR(m.intended_send_rate, 24 / 2.4, 1e-9);
  EXPECT_NEAR(m.achieved_send_rate, 24 / 2.424, 1e-9);
  // Gaps of 101 ms exactly: no spread.
  EXPECT_NEAR(m.realized_interarrival_cv, 0.0, 1e-9);
}

// Requests all released at one instant (a closed loop stopped before any completed, offline's
// batch) were one burst by design: no send rate (it said 9,600/s for 16 sends within 1.6 ms), and
// result.json says null.
TEST(Throughput, ABurstReleasedAtOneInstantHasNoSendRate) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  for (int i = 0; i < 16; ++i) {
    auto r = rec(0ms, i * 100us, 50ms, 250ms, 5);
    acc.add(r, std::vector<ChunkArrival>{{50ms, 5}});
    records.push_back(r);
  }
  auto m = acc.finalize(Window{0ms, 1000ms, "test"}, true, std::nullopt, LatencyView::kResponse, records);
  EXPECT_EQ(m.achieved_send_rate, 0.0);
  EXPECT_EQ(m.intended_send_rate, 0.0);
  EXPECT_EQ(m.realized_interarrival_cv, 0.0);
  const auto j = metrics_json(m);
  EXPECT_TRUE(j["load"]["achieved_send_rate"].is_null()) << j["load"].dump();
  EXPECT_TRUE(j["load"]["intended_send_rate"].is_null()) << j["load"].dump();
}

// The token-arrival series stays bounded however long the run (issue 16's soak: memory flat): past
// kMaxTokenBins bins its width doubles, and the window's token count is still exact up to its two
// edge bins.
TEST(Throughput, TokenArrivalBinsStayBoundedOverALongRun) {
  MetricsAccumulator acc;
  std::vector<RequestRecord> records;
  // 20 minutes, one request per second, 10 tokens each 100 ms apart from 50 ms after its start.
  const int seconds = 20 * 60;
  for (int i = 0; i < seconds; ++i) {
    const Nanos t = i * 1s;
    std::vector<ChunkArrival> chunks;
    for (int k = 0; k < 10; ++k) chunks.push_back({t + 50ms + k * 100ms, 1});
    auto r = rec(t, t, t + 50ms, t + 950ms, 10);
    acc.add(r, chunks);
    records.push_back(r);
  }
  // 1.2 M ms is over 2^19 and 2^20 bins of 1 ms: the bins are 4 ms wide, at most 2^19 of them.
  EXPECT_EQ(acc.token_bin(), 4ms);
  auto whole = acc.finalize(Window{0ms, Nanos(seconds * 1s), "test"}, false, std::nullopt, LatencyView::kService, records);
  EXPECT_DOUBLE_EQ(whole.output_tokens_in_window, 10.0 * seconds) << "no token lost in the merges";
  EXPECT_EQ(whole.token_bin, 4ms);
  // A window from 100.5 s to 700.5 s: its tokens are those of [100.5, 700.5] up to two 4 ms bins
  // (the arrivals at x.45 and x.55 s lie 50 ms from the edges: none in the edge bins).
  auto part = acc.finalize(Window{100500ms, 700500ms, "test"}, false, std::nullopt, LatencyView::kService, records);
  EXPECT_DOUBLE_EQ(part.output_tokens_in_window, 600.0 * 10.0);
  EXPECT_NEAR(part.output_throughput, 10.0, 1e-9);
  // A short run keeps 1 ms bins.
  MetricsAccumulator short_run;
  short_run.add(rec(0ms, 0ms, 10ms, 20ms, 2), std::vector<ChunkArrival>{{10ms, 1}, {20ms, 1}});
  EXPECT_EQ(short_run.token_bin(), kTokenBin);
}

TEST(Validity, WindowRecordsHowTheWarmupWasChosen) {
  Window w{0ms, 1s, "test"};
  auto j = metrics_json(run_of(100, all_ok, false, {}, w));
  EXPECT_EQ(j["window"]["warmup"], json({{"method", "none"}}));
  EXPECT_EQ(j["window"]["method"], "test");
  for (const char* k : {"start_s", "end_s", "length_s", "method"}) EXPECT_TRUE(j["window"].contains(k)) << k;
  w.warmup_method = "requests";
  w.warmup_requests = 20;
  j = metrics_json(run_of(100, all_ok, false, {}, w));
  EXPECT_EQ(j["window"]["warmup"]["requests"], 20);
  w.warmup_method = "time";
  w.warmup_requests = 0;
  w.warmup_duration = 5s;
  j = metrics_json(run_of(100, all_ok, false, {}, w));
  EXPECT_DOUBLE_EQ(j["window"]["warmup"]["duration_s"].get<double>(), 5.0);
}

}  // namespace
}  // namespace llmload::analysis
