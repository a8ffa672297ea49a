// Time to first output token (issue 19, docs/metrics.md "The first token"): TTFO and TTFO_rt from
// hand-made records with known answers, their histograms, result.json keys, the .hlog tags,
// requests.jsonl and its reader, the console rows (shown only when a request reasoned first), and
// the SLO: `--slo ttfo:...` parsed, printed, exceeded and judged (early stopping, goodput,
// sequential stopping).

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/sequential_slo.hpp"
#include "llmload/analysis/slo.hpp"

namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;
using nlohmann::json;

// A measured successful request: sent at `intended + lag`, first token `first` after the send,
// first output token `first_output` after the send (nullopt: reasoning only), last `last` after it.
RequestRecord request(Nanos intended, Nanos lag, Nanos first, std::optional<Nanos> first_output, Nanos last,
                      std::int64_t out = 11, std::int64_t reasoning = 0, std::string source = "") {
  RequestRecord r;
  r.in_window = true;
  r.t_intended = intended;
  r.t_send = intended + lag;
  r.t_first = *r.t_send + first;
  if (first_output) r.t_first_output = *r.t_send + *first_output;
  r.t_last = *r.t_send + last;
  r.t_done = r.t_last;
  r.output_tokens = out;
  r.tokens_from_usage = true;
  r.reasoning_tokens = reasoning;
  r.reasoning_tokens_source = std::move(source);
  return r;
}

// Reasoned 100 ms first: TTFT 10 ms, TTFO 110 ms (111 ms from the intended time), 10 reasoning
// and 11 answer tokens.
RequestRecord reasoned() { return request(0ms, 1ms, 10ms, 110ms, 210ms, 21, 10, "usage"); }
// No reasoning: TTFO = TTFT = 50 ms.
RequestRecord plain() { return request(0ms, 0ms, 50ms, 50ms, 150ms); }
// Reasoning only: no output token.
RequestRecord reasoning_only() { return request(0ms, 0ms, 10ms, std::nullopt, 60ms, 5, 5, "events"); }

Window window_of(Nanos end) {
  Window w;
  w.start = 0ns;
  w.end = end;
  w.method = "test";
  return w;
}

RunMetrics metrics_of(const std::vector<RequestRecord>& rs, const std::optional<SloSpec>& slo = std::nullopt,
                      LatencyView view = LatencyView::kService) {
  MetricsAccumulator acc;
  for (const auto& r : rs) acc.add(r, {});
  return acc.finalize(window_of(10s), false, slo, view, rs);
}

TEST(Ttfo, RecordLatencies) {
  const RequestRecord r = reasoned();
  EXPECT_EQ(r.ttft(), Nanos(10ms));
  EXPECT_EQ(r.ttfo(), Nanos(110ms));
  EXPECT_EQ(r.ttfo_rt(), Nanos(111ms));
  EXPECT_TRUE(r.reasoning_first());
  EXPECT_EQ(r.reasoning_duration(), Nanos(100ms));
  EXPECT_EQ(r.answer_tpot(), Nanos(10ms));  // (210 - 110) ms over 11 - 1 answer tokens

  const RequestRecord p = plain();
  EXPECT_EQ(p.ttfo(), p.ttft());
  EXPECT_FALSE(p.reasoning_first());
  EXPECT_FALSE(p.reasoning_duration());
  EXPECT_EQ(p.answer_tpot(), p.tpot());

  const RequestRecord o = reasoning_only();
  EXPECT_FALSE(o.ttfo());
  EXPECT_FALSE(o.ttfo_rt());
  EXPECT_TRUE(o.reasoning_first());
  EXPECT_FALSE(o.answer_tpot());  // no answer token

  // A record that does not say (no t_first_output, no reasoning source): not reasoning first.
  RequestRecord old = plain();
  old.t_first_output.reset();
  EXPECT_FALSE(old.reasoning_first());
  EXPECT_FALSE(old.ttfo());
}

TEST(Ttfo, HistogramsAndResultKeys) {
  const RunMetrics m = metrics_of({reasoned(), plain(), reasoning_only()});
  const auto& s = m.latency.at(Metric::kTtfo);
  EXPECT_EQ(s.count, 2);  // the reasoning-only request has no TTFO sample
  EXPECT_DOUBLE_EQ(s.mean_us, 80'000);
  EXPECT_NEAR(static_cast<double>(s.min_us), 50'000, 50);  // the histogram's bucket
  EXPECT_NEAR(static_cast<double>(s.max_us), 110'000, 110);  // the histogram's bucket, 3 significant digits
  EXPECT_EQ(m.latency.at(Metric::kTtfoRt).count, 2);
  EXPECT_DOUBLE_EQ(m.latency.at(Metric::kTtfoRt).mean_us, 80'500);  // (111 + 50) / 2 ms
  EXPECT_EQ(m.reasoning_first_requests, 2);
  EXPECT_TRUE(m.shows_ttfo());

  const json j = metrics_json(m);
  EXPECT_EQ(j["latency"]["ttfo"]["count"], 2);
  EXPECT_DOUBLE_EQ(j["latency"]["ttfo"]["mean_ms"].get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(j["response_time"]["ttfo"]["mean_ms"].get<double>(), 80.5);
  EXPECT_DOUBLE_EQ(j["mean_ttfo_ms"].get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(j["p99_ttfo_ms"].get<double>(), j["latency"]["ttfo"]["p99_ms"].get<double>());
  EXPECT_EQ(j["requests"]["reasoning_first"], 2);
}

TEST(Ttfo, NullWithoutSampleAndHiddenWithoutReasoning) {
  // Records without t_first_output (a client that does not fill it): the keys are there, null.
  RequestRecord r = plain();
  r.t_first_output.reset();
  const RunMetrics none = metrics_of({r, r});
  const json j = metrics_json(none);
  ASSERT_TRUE(j["latency"].contains("ttfo"));
  EXPECT_TRUE(j["latency"]["ttfo"].is_null());
  EXPECT_TRUE(j["response_time"]["ttfo"].is_null());
  for (const char* k : {"mean_ttfo_ms", "median_ttfo_ms", "std_ttfo_ms", "p90_ttfo_ms", "p95_ttfo_ms", "p99_ttfo_ms"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  EXPECT_EQ(j["requests"]["reasoning_first"], 0);
  EXPECT_TRUE(j["reasoning"].is_null());
  EXPECT_TRUE(j["by_model"].is_null());
  EXPECT_TRUE(j["prefix_cache"].is_null());

  // A plain run: TTFO = TTFT has samples, but the console shows no TTFO row.
  const RunMetrics p = metrics_of({plain(), plain()});
  EXPECT_EQ(p.latency.at(Metric::kTtfo).count, 2);
  EXPECT_FALSE(p.shows_ttfo());
  const std::string console = console_report(p, "plain");
  EXPECT_EQ(console.find("TTFO"), std::string::npos) << console;
  EXPECT_EQ(console.find("Reasoning"), std::string::npos) << console;

  // With a request that reasoned first: TTFO beside TTFT, in both views.
  const std::string with = console_report(metrics_of({reasoned(), plain()}), "reasoning");
  const auto ttft = with.find("\nTTFT ");
  const auto ttfo = with.find("\nTTFO ");
  ASSERT_NE(ttft, std::string::npos) << with;
  ASSERT_NE(ttfo, std::string::npos) << with;
  EXPECT_LT(ttft, ttfo);
  EXPECT_LT(ttfo, with.find("\nTPOT "));
  EXPECT_NE(with.find("\nTTFO (from sched) "), std::string::npos) << with;
  EXPECT_NE(with.find(fmt::format("\n{:<18}{:>8.2f}", "TTFO", 80.0)), std::string::npos) << with;  // (110 + 50) / 2
}

TEST(Ttfo, HlogTagsAndRequestsJsonl) {
  const RunMetrics m = metrics_of({reasoned(), plain()});
  std::stringstream out;
  write_latency_hlog(out, m, 1'700'000'000.0, "test");
  const HlogFile file = read_hlog(out);
  std::vector<std::string> tags;
  for (const auto& in : file.intervals) tags.push_back(in.tag.value_or(""));
  ASSERT_EQ(tags.size(), kAllMetrics.size());
  EXPECT_EQ(tags[8], "ttfo");
  EXPECT_EQ(tags[9], "ttfo_rt");
  EXPECT_EQ(file.intervals[8].histogram.total_count(), 2);

  const json line = record_json(reasoned());
  EXPECT_DOUBLE_EQ(line["ttfo_ms"].get<double>(), 110.0);
  EXPECT_DOUBLE_EQ(line["ttfo_rt_ms"].get<double>(), 111.0);
  EXPECT_DOUBLE_EQ(line["t_first_output_ms"].get<double>(), 111.0);
  EXPECT_EQ(line["reasoning_tokens"], 10);
  EXPECT_EQ(line["reasoning_tokens_source"], "usage");
  const RequestRecord back = record_from_json(line);
  EXPECT_EQ(back.ttfo(), Nanos(110ms));
  EXPECT_EQ(back.reasoning_duration(), Nanos(100ms));
  EXPECT_EQ(back.reasoning_tokens, 10);
  EXPECT_TRUE(record_json(reasoning_only())["ttfo_ms"].is_null());
}

TEST(TtfoSlo, ParseAndPrint) {
  const SloSpec s = parse_slo("ttfo:500ms");
  ASSERT_TRUE(s.ttfo);
  EXPECT_EQ(*s.ttfo, Nanos(500ms));
  EXPECT_FALSE(s.ttft);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.to_string(), "ttfo:500ms,p99");
  const SloSpec all = parse_slo("tpot:50ms ttfo:2s,ttft:1s,p90");
  EXPECT_EQ(all.to_string(), "ttft:1000ms,ttfo:2000ms,tpot:50ms,p90");
  EXPECT_EQ(parse_slo(all.to_string()).to_string(), all.to_string());
  EXPECT_THROW(parse_slo("ttfo:0ms"), SloParseError);
  EXPECT_THROW(parse_slo("ttfo:fast"), SloParseError);
  try {
    parse_slo("ttfx:1s");
    FAIL();
  } catch (const SloParseError& e) {
    EXPECT_NE(std::string(e.what()).find("ttfo"), std::string::npos) << e.what();
  }
}

TEST(TtfoSlo, ExceedanceInBothViews) {
  const SloSpec s = parse_slo("ttfo:110500us");
  EXPECT_FALSE(slo_exceedance(reasoned(), s, LatencyView::kService).ttfo);   // 110 ms
  EXPECT_TRUE(slo_exceedance(reasoned(), s, LatencyView::kResponse).ttfo);   // 111 ms from t_intended
  EXPECT_TRUE(slo_exceedance(reasoning_only(), s, LatencyView::kService).ttfo);  // never an output token
  RequestRecord failed = plain();
  failed.error = ErrorClass::kStreamError;
  EXPECT_TRUE(slo_exceedance(failed, s, LatencyView::kService).ttfo);
  EXPECT_TRUE(meets_slo(plain(), s, LatencyView::kService));
  // A TTFT bound the reasoned request meets, and a TTFO bound it does not.
  EXPECT_FALSE(meets_slo(reasoned(), parse_slo("ttft:20ms,ttfo:100ms"), LatencyView::kService));
  EXPECT_TRUE(meets_slo(reasoned(), parse_slo("ttft:20ms"), LatencyView::kService));
}

// n requests one per 10 ms, `over` of them with a TTFO of 300 ms, the others 50 ms (TTFT 10 ms).
std::vector<RequestRecord> ttfo_load(int n, int over) {
  std::vector<RequestRecord> rs;
  for (int i = 0; i < n; ++i) {
    const Nanos t = i * 10ms;
    rs.push_back(request(t, 0ms, 10ms, i < over ? 300ms : 50ms, 400ms, 11, 4, "usage"));
  }
  return rs;
}

TEST(TtfoSlo, VerdictAttainmentAndGoodput) {
  const auto slo = parse_slo("ttfo:100ms");
  {
    const RunMetrics m = metrics_of(ttfo_load(500, 0), slo);
    ASSERT_TRUE(m.slo);
    ASSERT_EQ(m.slo->metrics.size(), 1u);
    EXPECT_EQ(m.slo->metrics[0].metric, "ttfo");
    EXPECT_EQ(m.slo->metrics[0].exceedances, 0);
    EXPECT_EQ(m.slo->metrics[0].required, 459);  // zero exceedances need 459 requests
    EXPECT_EQ(m.slo->verdict, Verdict::kPass);
    EXPECT_DOUBLE_EQ(m.slo->attainment, 1.0);
    // 500 good requests completing in the 10 s window.
    EXPECT_DOUBLE_EQ(m.slo->request_goodput, 50.0);
    const json j = metrics_json(m);
    EXPECT_DOUBLE_EQ(j["slo"]["bounds_ms"]["ttfo"].get<double>(), 100.0);
    EXPECT_EQ(j["slo"]["spec"], "ttfo:100ms,p99");
  }
  {
    const RunMetrics m = metrics_of(ttfo_load(500, 100), slo);
    EXPECT_EQ(m.slo->metrics[0].exceedances, 100);
    EXPECT_EQ(m.slo->verdict, Verdict::kFail);
    EXPECT_DOUBLE_EQ(m.slo->attainment, 0.8);
    EXPECT_DOUBLE_EQ(m.slo->request_goodput, 40.0);
    EXPECT_NEAR(static_cast<double>(m.slo->metrics[0].observed_us.value_or(-1)), 300'000, 300);
  }
  {
    const RunMetrics m = metrics_of(ttfo_load(200, 0), slo);
    EXPECT_EQ(m.slo->verdict, Verdict::kInconclusive);  // 200 < 459
  }
  {
    // TTFT alone passes the same load that TTFO fails.
    const RunMetrics m = metrics_of(ttfo_load(500, 100), parse_slo("ttft:100ms"));
    EXPECT_EQ(m.slo->verdict, Verdict::kPass);
  }
}

TEST(TtfoSlo, SequentialStopping) {
  SequentialSlo seq(parse_slo("ttfo:100ms"), LatencyView::kService);
  const auto rs = ttfo_load(2000, 1000);
  for (std::size_t i = 0; i < rs.size() && !seq.conclusive(); ++i) seq.on_complete(static_cast<std::int64_t>(i), rs[i]);
  ASSERT_TRUE(seq.conclusive());
  EXPECT_EQ(seq.looks().back().decision, "FAIL");
  EXPECT_NE(seq.looks().back().detail.find("ttfo "), std::string::npos) << seq.looks().back().detail;
}

}  // namespace
