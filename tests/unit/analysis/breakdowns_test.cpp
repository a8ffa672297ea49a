// Issue 19's breakdowns of a run, with known answers from hand-made records: the reasoning phases
// (tokens, share, sources, reasoning duration, answer TPOT), per-model results (counts, throughput,
// latency percentiles, each model's SLO judged alone) and the prefix-cache hit rate (usage, and
// the server's counters or gauge), as result.json keys and console lines.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/model_breakdown.hpp"
#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/reasoning_metrics.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/structured_output.hpp"

namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;
using nlohmann::json;

// A measured successful request sent at `send`: first token after `first`, first output token
// after `first_output` (nullopt: reasoning only), last after `last`.
RequestRecord request(Nanos send, Nanos first, std::optional<Nanos> first_output, Nanos last, std::int64_t out,
                      std::int64_t reasoning = 0, std::string source = "", std::string model = "") {
  RequestRecord r;
  r.in_window = true;
  r.t_intended = send;
  r.t_send = send;
  r.t_first = send + first;
  if (first_output) r.t_first_output = send + *first_output;
  r.t_last = send + last;
  r.t_done = r.t_last;
  r.input_tokens = 100;
  r.output_tokens = out;
  r.tokens_from_usage = true;
  r.reasoning_tokens = reasoning;
  r.reasoning_tokens_source = std::move(source);
  r.model = std::move(model);
  return r;
}

Window window_of(Nanos start, Nanos end) {
  Window w;
  w.start = start;
  w.end = end;
  w.method = "test";
  return w;
}

RunMetrics metrics_of(const std::vector<RequestRecord>& rs, Window w, const std::optional<SloSpec>& slo = std::nullopt) {
  MetricsAccumulator acc;
  for (const auto& r : rs) acc.add(r, {});
  return acc.finalize(w, false, slo, LatencyView::kService, rs);
}

std::vector<RequestRecord> reasoning_records() {
  std::vector<RequestRecord> rs;
  // A: 10 reasoning of 21 tokens (usage); reasoning 100 ms; answer TPOT (210 - 110) / 10 = 10 ms.
  rs.push_back(request(0ms, 10ms, 110ms, 210ms, 21, 10, "usage"));
  // B: no reasoning; answer TPOT = TPOT = 100 / 10 = 10 ms.
  rs.push_back(request(0ms, 50ms, 50ms, 150ms, 11));
  // C: reasoning only (5 tokens, counted from the events): no output token, no answer TPOT.
  rs.push_back(request(0ms, 10ms, std::nullopt, 60ms, 5, 5, "events"));
  // D: 20 reasoning of 31 (tokenizer); reasoning 300 ms; answer TPOT (500 - 300) / 10 = 20 ms.
  rs.push_back(request(0ms, 0ms, 300ms, 500ms, 31, 20, "tokenizer"));
  // Not in the statistics: a warmup request and a failed one, both with reasoning.
  RequestRecord warm = request(0ms, 10ms, 1s, 2s, 100, 90, "usage");
  warm.warmup = true;
  warm.in_window = false;
  rs.push_back(warm);
  RequestRecord failed = request(0ms, 10ms, 1s, 2s, 100, 90, "usage");
  failed.error = ErrorClass::kStreamError;
  rs.push_back(failed);
  return rs;
}

TEST(Reasoning, KnownAnswers) {
  const auto r = summarize_reasoning(reasoning_records());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->requests, 3);         // A, C, D
  EXPECT_EQ(r->reasoning_first, 3);  // A, C, D
  EXPECT_EQ(r->reasoning_only, 1);   // C
  EXPECT_EQ(r->reasoning_tokens, 35);
  EXPECT_EQ(r->output_tokens, 68);
  ASSERT_TRUE(r->share());
  EXPECT_DOUBLE_EQ(*r->share(), 35.0 / 68.0);
  EXPECT_EQ(r->sources, (std::map<std::string, std::int64_t>{{"events", 1}, {"tokenizer", 1}, {"usage", 1}}));
  EXPECT_EQ(r->duration.count, 2);
  EXPECT_DOUBLE_EQ(r->duration.mean_us, 200'000);
  EXPECT_NEAR(static_cast<double>(r->duration.p50_us), 100'000, 100);
  EXPECT_NEAR(static_cast<double>(r->duration.p99_us), 300'000, 300);
  EXPECT_EQ(r->answer_tpot.count, 3);  // A, B, D
  EXPECT_NEAR(r->answer_tpot.mean_us, 40'000.0 / 3.0, 1e-6);
  EXPECT_NEAR(static_cast<double>(r->answer_tpot.p50_us), 10'000, 10);
  EXPECT_NEAR(static_cast<double>(r->answer_tpot.p99_us), 20'000, 20);

  const json j = metrics_json(metrics_of(reasoning_records(), window_of(0s, 10s)))["reasoning"];
  EXPECT_EQ(j["requests"], 3);
  EXPECT_EQ(j["reasoning_tokens"], 35);
  EXPECT_DOUBLE_EQ(j["share_of_output_tokens"].get<double>(), 35.0 / 68.0);
  EXPECT_EQ(j["sources"], json({{"events", 1}, {"tokenizer", 1}, {"usage", 1}}));
  EXPECT_EQ(j["duration"]["count"], 2);
  EXPECT_DOUBLE_EQ(j["duration"]["mean_ms"].get<double>(), 200.0);
  EXPECT_EQ(j["answer_tpot"]["count"], 3);
  for (const char* k : {"count", "mean_ms", "p50_ms", "p90_ms", "p99_ms"}) EXPECT_TRUE(j["duration"].contains(k)) << k;

  const std::string console = reasoning_console(r);
  auto has = [&](const std::string& line) { EXPECT_NE(console.find(line), std::string::npos) << line << "\n" << console; };
  has(fmt::format("{:<40}{:>12} (51.5%)\n", "Reasoning tokens (share of output):", 35));
  has(fmt::format("{:<40}{:>12} (3 reasoning first, 1 reasoning only)\n", "Requests with reasoning:", 3));
  has(fmt::format("{:<40}{:>12}\n", "Reasoning tokens counted from:", "events 1, tokenizer 1, usage 1"));
  has(fmt::format("{:<40}{:>12} (p50 100.03, p90 300.03, p99 300.03; n=2)\n", "Reasoning duration mean (ms):", "200.00"));
}

// Reasoning first is what the client saw (TTFO after TTFT): a request that reasoned, but whose
// first answer token was read at the time of its first token (one segment, one read), is counted
// as a request with reasoning and not as reasoning first.
TEST(Reasoning, AnAnswerReadWithItsReasoningIsNotReasoningFirst) {
  std::vector<RequestRecord> rs;
  rs.push_back(request(0ms, 10ms, 110ms, 210ms, 21, 10, "usage"));  // reasoning first
  rs.push_back(request(0ms, 40ms, 40ms, 140ms, 21, 10, "usage"));   // reasoning and answer read together
  const auto r = summarize_reasoning(rs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->requests, 2);
  EXPECT_EQ(r->reasoning_first, 1);
  EXPECT_EQ(r->duration.count, 1);
  EXPECT_FALSE(rs[1].reasoning_first());
  EXPECT_EQ(rs[1].ttfo(), rs[1].ttft());
}

TEST(Reasoning, NullWithoutAReasoningSource) {
  std::vector<RequestRecord> rs = {request(0ms, 50ms, 50ms, 150ms, 11)};
  EXPECT_FALSE(summarize_reasoning(rs));
  EXPECT_TRUE(metrics_json(metrics_of(rs, window_of(0s, 10s)))["reasoning"].is_null());
  EXPECT_EQ(reasoning_console(std::nullopt), "");
}

// Model a: 4 requests completing in [0, 10 s] with TTFT 100 ms and 10 output tokens each, and one
// straddling the window's end (t_first 9.5 s, t_last 10.5 s: half of its 10 tokens in the window).
// Model b: 3 successes with TTFT 200 ms and a failure.
std::vector<RequestRecord> two_models() {
  std::vector<RequestRecord> rs;
  for (int i = 0; i < 4; ++i) rs.push_back(request(i * 1s, 100ms, 100ms, 1100ms, 10, 0, "", "a"));
  rs.push_back(request(9400ms, 100ms, 100ms, 1100ms, 10, 0, "", "a"));
  for (int i = 0; i < 3; ++i) rs.push_back(request(i * 1s, 200ms, 200ms, 1200ms, 10, 0, "", "b"));
  RequestRecord failed = request(5s, 200ms, 200ms, 1200ms, 10, 0, "", "b");
  failed.error = ErrorClass::kHttpStatus;
  failed.http_status = 500;
  rs.push_back(failed);
  return rs;
}

TEST(ByModel, CountsThroughputLatencyAndVerdicts) {
  const auto by = model_breakdown(two_models(), window_of(0s, 10s), parse_slo("ttft:150ms"), LatencyView::kService);
  ASSERT_EQ(by.size(), 2u);
  const ModelResult& a = by.at("a");
  EXPECT_EQ(a.requests, 5);
  EXPECT_EQ(a.completed, 5);
  EXPECT_EQ(a.failed, 0);
  EXPECT_DOUBLE_EQ(a.request_throughput, 0.4);  // 4 completing in 10 s
  EXPECT_DOUBLE_EQ(a.output_throughput, 4.5);   // 40 + 5 tokens in 10 s
  EXPECT_EQ(a.ttft.count, 5);
  EXPECT_NEAR(static_cast<double>(a.ttft.p99_us), 100'000, 100);
  EXPECT_EQ(a.ttfo.count, 5);
  ASSERT_TRUE(a.slo);
  EXPECT_DOUBLE_EQ(a.slo->attainment, 1.0);
  EXPECT_DOUBLE_EQ(a.slo->request_goodput, 0.4);
  EXPECT_EQ(a.slo->verdict, Verdict::kInconclusive);  // 5 requests cannot show p99

  const ModelResult& b = by.at("b");
  EXPECT_EQ(b.requests, 4);
  EXPECT_EQ(b.completed, 3);
  EXPECT_EQ(b.failed, 1);
  EXPECT_DOUBLE_EQ(b.request_throughput, 0.3);
  EXPECT_DOUBLE_EQ(b.slo->attainment, 0.0);
  EXPECT_EQ(b.slo->metrics[0].exceedances, 4);  // the failure counts as over
  EXPECT_EQ(b.slo->verdict, Verdict::kFail);

  // One model (or none): no breakdown, null in result.json.
  std::vector<RequestRecord> one = two_models();
  for (auto& r : one) r.model = "a";
  EXPECT_TRUE(model_breakdown(one, window_of(0s, 10s), std::nullopt, LatencyView::kService).empty());
  EXPECT_TRUE(metrics_json(metrics_of(one, window_of(0s, 10s)))["by_model"].is_null());
}

TEST(ByModel, EachModelJudgedByTheEarlyStoppingRule) {
  // 500 good requests of "fast" (0 exceedances: PASS needs 459) and 500 of "slow" all over the bound.
  std::vector<RequestRecord> rs;
  for (int i = 0; i < 500; ++i) {
    rs.push_back(request(i * 10ms, 50ms, 50ms, 100ms, 4, 0, "", "fast"));
    rs.push_back(request(i * 10ms, 300ms, 300ms, 400ms, 4, 0, "", "slow"));
  }
  const RunMetrics m = metrics_of(rs, window_of(0s, 10s), parse_slo("ttft:100ms"));
  EXPECT_EQ(m.slo->verdict, Verdict::kFail);  // the run
  EXPECT_EQ(m.by_model.at("fast").slo->verdict, Verdict::kPass);
  EXPECT_EQ(m.by_model.at("fast").slo->metrics[0].required, 459);
  EXPECT_EQ(m.by_model.at("slow").slo->verdict, Verdict::kFail);

  const json j = metrics_json(m)["by_model"];
  EXPECT_EQ(j["fast"]["requests"], 500);
  EXPECT_EQ(j["fast"]["slo"]["verdict"], "PASS");
  EXPECT_DOUBLE_EQ(j["fast"]["slo"]["attainment"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["fast"]["slo"]["request_goodput"].get<double>(), 50.0);
  EXPECT_EQ(j["slow"]["slo"]["verdict"], "FAIL");
  EXPECT_DOUBLE_EQ(j["slow"]["slo"]["attainment"].get<double>(), 0.0);
  EXPECT_NEAR(j["slow"]["latency"]["ttft"]["p50_ms"].get<double>(), 300.0, 0.3);
  for (const char* k : {"ttft", "tpot", "e2e", "ttfo"}) EXPECT_TRUE(j["fast"]["latency"].contains(k)) << k;

  const std::string console = console_report(m, "two models");
  EXPECT_NE(console.find(" Per model (p99 in ms) "), std::string::npos) << console;
  EXPECT_NE(console.find(fmt::format("\n{:<16}{:>10}{:>7.2f}{:>8.1f}{:>8}", "fast", "500/0", 50.0, 200.0, "50.02")),
            std::string::npos)
      << console;
  EXPECT_NE(console.find("   100.0 PASS\n"), std::string::npos) << console;
  EXPECT_NE(console.find("     0.0 FAIL\n"), std::string::npos) << console;
  EXPECT_EQ(console.find("TTFO"), std::string::npos) << console;  // nobody reasoned
}

TEST(PrefixCache, FromUsage) {
  std::vector<RequestRecord> rs;
  RequestRecord a = request(0ms, 10ms, 10ms, 20ms, 2);
  a.cached_tokens = 30;  // of 100 prompt tokens
  RequestRecord b = request(0ms, 10ms, 10ms, 20ms, 2);
  b.input_tokens = 50;
  b.cached_tokens = 0;
  RequestRecord c = request(0ms, 10ms, 10ms, 20ms, 2);  // reported nothing
  c.input_tokens = 1000;
  RequestRecord warm = a;
  warm.warmup = true;
  warm.cached_tokens = 100;
  rs = {a, b, c, warm};
  // c said nothing: vLLM leaves prompt_tokens_details out when nothing was cached, so its 1000
  // prompt tokens count as misses: 30 of 1150.
  const auto p = summarize_prefix_cache(rs);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->requests_reporting, 2);
  EXPECT_EQ(p->requests, 3);
  EXPECT_EQ(p->cached_tokens, 30);
  EXPECT_EQ(p->prompt_tokens, 1150);
  EXPECT_DOUBLE_EQ(*p->hit_rate(), 30.0 / 1150.0);
  const json j = metrics_json(metrics_of(rs, window_of(0s, 10s)))["prefix_cache"];
  EXPECT_EQ(j, json({{"cached_tokens", 30},
                     {"prompt_tokens", 1150},
                     {"hit_rate", 30.0 / 1150.0},
                     {"requests", 3},
                     {"requests_reporting", 2},
                     {"source", "usage"}}));
  EXPECT_EQ(prefix_cache_console(p),
            fmt::format("{:<40}{:>12} (30 of 1150 prompt tokens cached; 2 of 3 requests reported some)\n",
                        "Prefix cache hit rate:", "2.61%"));
  // No request of the run reported cached_tokens: nothing to say.
  EXPECT_FALSE(summarize_prefix_cache(std::vector<RequestRecord>{c}));
}

TEST(PrefixCache, ServerCountersAndGauge) {
  // vLLM's counters: 96 of 200 prompt tokens found over the run.
  json sm = {{"available", true},
             {"delta", {{"prefix_cache_hits", 96.0}, {"prefix_cache_queries", 200.0}}},
             {"series", {{"prefix_cache_hit_rate", {nullptr, nullptr}}}}};
  auto s = server_prefix_cache(sm);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->hit_rate, 0.48);
  EXPECT_EQ(s->source, "counters");
  json result = {{"prefix_cache", prefix_cache_json(PrefixCacheSummary{2, 30, 150, 3})}, {"server_metrics", sm}};
  add_server_prefix_cache(result);
  EXPECT_DOUBLE_EQ(result["prefix_cache"]["hit_rate"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(result["prefix_cache"]["server_hit_rate"].get<double>(), 0.48);
  EXPECT_EQ(result["prefix_cache"]["source"], "usage");

  // No counters: the mean of the hit-rate gauge over the scrapes.
  json gauge = {{"available", true},
                {"delta", {{"prefix_cache_hits", nullptr}, {"prefix_cache_queries", nullptr}}},
                {"series", {{"prefix_cache_hit_rate", {0.2, nullptr, 0.4}}}}};
  s = server_prefix_cache(gauge);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->hit_rate, 0.3);
  EXPECT_EQ(s->source, "gauge");

  // The responses reported nothing: the server's rate alone.
  json only = {{"prefix_cache", nullptr}, {"server_metrics", sm}};
  add_server_prefix_cache(only);
  EXPECT_EQ(only["prefix_cache"]["source"], "server_metrics");
  EXPECT_EQ(only["prefix_cache"]["requests_reporting"], 0);
  EXPECT_TRUE(only["prefix_cache"]["requests"].is_null());
  EXPECT_TRUE(only["prefix_cache"]["hit_rate"].is_null());
  EXPECT_DOUBLE_EQ(only["prefix_cache"]["server_hit_rate"].get<double>(), 0.48);

  // Nothing from either: null stays null; no queries is no rate.
  json none = {{"prefix_cache", nullptr}, {"server_metrics", {{"available", false}, {"reason", "off"}}}};
  add_server_prefix_cache(none);
  EXPECT_TRUE(none["prefix_cache"].is_null());
  EXPECT_FALSE(server_prefix_cache({{"available", true}, {"delta", {{"prefix_cache_hits", 0.0}, {"prefix_cache_queries", 0.0}}}}));
}

// finalize() gathers in its first pass whether each optional summary has anything to summarize,
// and makes that summary's own pass only then. Whatever the records, every summary must be what
// its own pass over them gives: here the edge cases of each population (a feature only on a
// warmup request, outside the window, on a failed request; one model beside requests without
// one; a second model only in the warmup).
TEST(Finalize, EverySummaryIsWhatItsOwnPassGives) {
  const Window w = window_of(0s, 10s);
  auto base = [] {
    std::vector<RequestRecord> rs;
    rs.push_back(request(0ms, 10ms, 10ms, 100ms, 11, 0, "", "a"));
    rs.push_back(request(1ms, 20ms, 20ms, 120ms, 11, 0, "", ""));
    return rs;
  };
  std::vector<std::pair<std::string, std::vector<RequestRecord>>> cases;
  cases.emplace_back("nothing optional", base());
  {
    auto rs = base();
    RequestRecord warm = request(0ms, 10ms, 50ms, 100ms, 11, 5, "usage", "b");  // reasoning, a 2nd model
    warm.warmup = true;
    warm.in_window = false;
    warm.cached_tokens = 7;
    warm.structured = "json_schema";
    warm.structured_verdict = "valid";
    rs.push_back(warm);
    cases.emplace_back("features only in the warmup", rs);
  }
  {
    auto rs = base();
    RequestRecord out = request(0ms, 10ms, 50ms, 100ms, 11, 5, "usage", "a");
    out.in_window = false;
    out.cached_tokens = 7;
    out.structured = "json_schema";
    out.structured_verdict = "valid";
    rs.push_back(out);
    cases.emplace_back("features only outside the window", rs);
  }
  {
    auto rs = base();
    RequestRecord failed = request(0ms, 10ms, 50ms, 100ms, 11, 5, "usage", "a");
    failed.error = ErrorClass::kStreamError;
    failed.cached_tokens = 7;
    failed.structured = "tool_call";
    rs.push_back(failed);
    cases.emplace_back("features only on a failed request", rs);
  }
  {
    auto rs = base();
    rs[0].reasoning_tokens = 4;
    rs[0].reasoning_tokens_source = "usage";
    rs[0].t_first_output = rs[0].t_first.value() + 30ms;
    rs[1].cached_tokens = 50;
    rs[1].structured = "json_object";
    rs[1].structured_verdict = "invalid_json";
    rs.push_back(request(2ms, 10ms, 10ms, 90ms, 9, 0, "", "b"));
    cases.emplace_back("every feature measured", rs);
  }
  for (const auto& [name, rs] : cases) {
    SCOPED_TRACE(name);
    const RunMetrics m = metrics_of(rs, w, parse_slo("ttft:150ms"));
    EXPECT_EQ(to_json(m.reasoning), to_json(summarize_reasoning(rs)));
    EXPECT_EQ(by_model_json(m.by_model), by_model_json(model_breakdown(rs, w, parse_slo("ttft:150ms"), LatencyView::kService)));
    EXPECT_EQ(prefix_cache_json(m.prefix_cache), prefix_cache_json(summarize_prefix_cache(rs)));
    EXPECT_EQ(structured_output_json(m.structured_output), structured_output_json(summarize_structured_output(rs)));
    EXPECT_EQ(m.reasoning_first_requests, std::count_if(rs.begin(), rs.end(), [](const RequestRecord& r) {
                return !r.warmup && r.in_window && r.reasoning_first();
              }));
  }
  // The cases reach both sides of each check.
  const RunMetrics all = metrics_of(cases.back().second, w);
  EXPECT_TRUE(all.reasoning && all.prefix_cache && all.structured_output);
  EXPECT_EQ(all.by_model.size(), 2u);
  EXPECT_EQ(all.reasoning_first_requests, 1);
  const RunMetrics warm_only = metrics_of(cases[1].second, w);
  EXPECT_FALSE(warm_only.reasoning || warm_only.prefix_cache || warm_only.structured_output);
  EXPECT_EQ(warm_only.by_model.size(), 2u) << "the breakdown counts every request's model, warmup included";
}

}  // namespace
