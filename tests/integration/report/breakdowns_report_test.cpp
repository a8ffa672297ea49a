// The report of issue 19's measurements (docs/report.md): a run artifact written from hand-made
// records (two models, requests that reason first, cached prompt tokens, the server's prefix-cache
// counters) shows TTFO beside TTFT (latency table and distribution chart), the Reasoning section,
// the Per model table and the prefix-cache line in report.html, summary.md and summary.csv; a
// plain run of the same shape shows none of them.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "report_helpers.hpp"

namespace llmload::report_test {
namespace {

using namespace std::chrono_literals;
using analysis::RequestRecord;
using llmload::testing::read_file;

// Request i: sent at i * 50 ms to model a (even) or b (odd); TTFT 20 ms; with `reasoning`, every
// other request of each model reasons 100 ms first (8 reasoning tokens of 28); 30 of its 100 prompt
// tokens cached, except every fourth request's (none).
std::vector<RequestRecord> records(bool reasoning, int n = 40) {
  std::vector<RequestRecord> rs;
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.index = static_cast<std::uint64_t>(i);
    r.item = r.index;
    r.in_window = true;
    r.t_intended = i * 50ms;
    r.t_send = r.t_intended;
    r.t_first = *r.t_send + 20ms;
    const bool reasons = reasoning && (i / 2) % 2 == 0;
    r.t_first_output = reasons ? *r.t_first + 100ms : *r.t_first;
    r.t_last = *r.t_first_output + 190ms;
    r.t_done = r.t_last;
    r.input_tokens = r.requested_input_tokens = 100;
    r.output_tokens = r.requested_output_tokens = reasons ? 28 : 20;
    r.tokens_from_usage = true;
    r.output_events = r.output_tokens;
    r.http_status = 200;
    if (reasons) {
      r.reasoning_tokens = 8;
      r.reasoning_tokens_source = "usage";
    }
    if (reasoning) {
      r.model = i % 2 == 0 ? "model-a" : "model-b";
      if (i % 4 != 3) r.cached_tokens = 30;  // the others cached nothing (vLLM then sends no cached_tokens)
    }
    rs.push_back(r);
  }
  return rs;
}

// The artifact of a run of these records (result.json, requests.jsonl, latency.hlog) in `dir`.
json write_artifact(const fs::path& dir, const std::vector<RequestRecord>& rs, bool server_counters) {
  analysis::MetricsAccumulator acc;
  for (const auto& r : rs) acc.add(r, {});
  analysis::Window w;
  w.start = 0ns;
  w.end = 4s;  // every request completes in it
  w.method = "test";
  const analysis::RunMetrics m =
      acc.finalize(w, false, analysis::parse_slo("ttft:30ms,ttfo:200ms"), analysis::LatencyView::kService, rs);
  json result = analysis::metrics_json(m);
  result["schema_version"] = 1;
  result["artifact"] = "run";
  result["conditions"] = {{"model", "model-a,model-b"}, {"start_time", "2026-01-01T00:00:00Z"}};
  if (server_counters) {
    result["server_metrics"] = {{"available", true},
                                {"delta", {{"prefix_cache_hits", 96.0}, {"prefix_cache_queries", 200.0}}}};
    analysis::add_server_prefix_cache(result);
  }
  std::string lines;
  for (const auto& r : rs) lines += analysis::record_json(r).dump() + "\n";
  write_text(dir / "requests.jsonl", lines);
  std::ostringstream hlog;
  analysis::write_latency_hlog(hlog, m, 1'767'225'600.0, "test");
  write_text(dir / "latency.hlog", hlog.str());
  write_text(dir / "result.json", result.dump(2));
  return result;
}

TEST(BreakdownsReport, ReasoningModelsAndPrefixCacheShown) {
  TempDir tmp;
  const fs::path dir = tmp.path();
  const json r = write_artifact(dir, records(true), true);
  ASSERT_EQ(r["requests"]["reasoning_first"], 20);
  analysis::write_report(dir.string());
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);

  // TTFO beside TTFT, in both views, and its percentile distribution.
  const std::string lat = element(html, "latency-table");
  const auto ttft = lat.find("<tr data-metric=\"ttft\">");
  const auto ttfo = lat.find("<tr data-metric=\"ttfo\">");
  ASSERT_NE(ttft, std::string::npos) << lat;
  ASSERT_NE(ttfo, std::string::npos) << lat;
  EXPECT_LT(ttft, ttfo);
  EXPECT_LT(ttfo, lat.find("<tr data-metric=\"tpot\">"));
  EXPECT_NE(lat.find("<tr data-metric=\"ttfo_rt\">"), std::string::npos);
  EXPECT_NE(lat.find("<td class=\"l\">TTFO</td><td>40</td><td>" +
                     analysis::format_number(r["latency"]["ttfo"]["mean_ms"].get<double>()) + "</td>"),
            std::string::npos)
      << lat;
  const std::string chart = figure(html, "chart-pct-ttfo");
  ASSERT_FALSE(chart.empty());
  EXPECT_NE(chart.find("TTFO (from t_send)"), std::string::npos);
  EXPECT_NE(chart.find("SLO 200 ms"), std::string::npos) << chart;

  // The reasoning phases.
  const std::string reasoning = element(html, "reasoning");
  EXPECT_NE(reasoning.find("<td data-key=\"reasoning_tokens\">160 (16.7% of output tokens)</td>"), std::string::npos)
      << reasoning;  // 20 x 8 of 20 x 28 + 20 x 20 tokens
  EXPECT_NE(reasoning.find("20 (20 reasoning first, 0 reasoning only)"), std::string::npos) << reasoning;
  EXPECT_NE(reasoning.find("<td data-key=\"sources\">usage 20</td>"), std::string::npos) << reasoning;
  const std::string phases = element(html, "reasoning-phases");
  EXPECT_NE(phases.find("<tr data-metric=\"duration\"><td class=\"l\">reasoning duration</td><td>20</td><td>100</td>"),
            std::string::npos)
      << phases;
  // Answer TPOT: 190 ms over 19 answer tokens, every request.
  EXPECT_NE(phases.find("<tr data-metric=\"answer_tpot\"><td class=\"l\">answer TPOT</td><td>40</td><td>10</td>"),
            std::string::npos)
      << phases;

  // Per model, with its own SLO verdict and the TTFO column.
  const std::string by = element(html, "by-model");
  EXPECT_EQ(count(by, "<tr data-model="), 2u);
  EXPECT_NE(by.find("<th>TTFO p99</th>"), std::string::npos);
  EXPECT_NE(by.find("<tr data-model=\"model-a\"><td class=\"l\">model-a</td><td>20</td><td>20</td><td>0</td><td>5</td>"),
            std::string::npos)
      << by;
  EXPECT_NE(by.find("<span class=\"badge inconclusive\">INCONCLUSIVE</span>"), std::string::npos) << by;

  // The prefix cache, from usage and the server's counters.
  EXPECT_NE(element(html, "prefix-cache")
                .find("Prefix cache hit rate: 22.5% of prompt tokens (900 of 4000 from usage; 30 of 40 requests reported "
                      "some); server 48.0% (its counters)."),
            std::string::npos)
      << element(html, "prefix-cache");

  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("| TTFO | 40 | "), std::string::npos) << md;
  EXPECT_NE(md.find("\n## Reasoning\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| reasoning tokens | 160 (16.7% of output tokens) |"), std::string::npos) << md;
  EXPECT_NE(md.find("\n## Per model\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| model-b | 20 | 0 | 5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- **Prefix cache hit rate**: 22.5% of prompt tokens (900 of 4000 from usage; 30 of 40 requests "
                    "reported some); server 48.0% (its counters)"),
            std::string::npos)
      << md;

  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::stod(rows[0].at("ttfo_p99_ms")), r["latency"]["ttfo"]["p99_ms"].get<double>());
  EXPECT_EQ(rows[0].at("reasoning_tokens"), "160");
  EXPECT_EQ(std::stod(rows[0].at("reasoning_share")), r["reasoning"]["share_of_output_tokens"].get<double>());
  EXPECT_EQ(std::stod(rows[0].at("prefix_cache_hit_rate")), 0.225);
  EXPECT_EQ(std::stod(rows[0].at("prefix_cache_server_hit_rate")), 0.48);
}

TEST(BreakdownsReport, APlainRunShowsNoneOfThem) {
  TempDir tmp;
  const fs::path dir = tmp.path();
  const json r = write_artifact(dir, records(false), false);
  ASSERT_EQ(r["requests"]["reasoning_first"], 0);
  ASSERT_FALSE(r["latency"]["ttfo"].is_null());  // TTFO = TTFT is measured, just not shown
  analysis::write_report(dir.string());
  const std::string html = read_file((dir / "report.html").string());
  for (const char* what : {"data-metric=\"ttfo\"", "data-metric=\"ttfo_rt\"", "chart-pct-ttfo", "id=\"reasoning\"",
                           "id=\"by-model\"", "id=\"prefix-cache\"", "TTFO"}) {
    EXPECT_EQ(html.find(what), std::string::npos) << what;
  }
  EXPECT_NE(html.find("<tr data-metric=\"ttft\">"), std::string::npos);
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_EQ(md.find("TTFO"), std::string::npos) << md;
  EXPECT_EQ(md.find("Reasoning"), std::string::npos) << md;
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  for (const char* col : {"ttfo_p50_ms", "ttfo_p99_ms", "reasoning_tokens", "prefix_cache_hit_rate"}) {
    EXPECT_EQ(rows[0].at(col), "") << col;
  }
}

// A sweep of two such runs: its points table gains p99 TTFO and the prefix-cache hit rate.
TEST(BreakdownsReport, SweepPointsGainTtfoAndCacheColumns) {
  TempDir tmp;
  const fs::path dir = tmp.path();
  std::vector<json> results;
  for (const char* point : {"rate-1", "rate-2"}) {
    fs::create_directories(dir / point);
    json r = write_artifact(dir / point, records(true), false);
    r["load"] = {{"offered_rate", point == std::string("rate-1") ? 1.0 : 2.0}};
    write_text(dir / point / "result.json", r.dump(2));
    results.push_back(r);
  }
  analysis::write_report(dir.string());
  const std::string html = read_file((dir / "report.html").string());
  const std::string table = element(html, "sweep-table");
  EXPECT_NE(table.find("<th>p99 TTFO (ms)</th><th>prefix cache hit</th>"), std::string::npos) << table;
  EXPECT_EQ(count(table, "<td data-key=\"p99_ttfo_ms\">" +
                             analysis::format_number(results[0]["latency"]["ttfo"]["p99_ms"].get<double>()) + "</td>"),
            2u)
      << table;
  EXPECT_EQ(count(table, "<td data-key=\"prefix_cache_hit_rate\">22.5%</td>"), 2u) << table;
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("| failed | p99 TTFO (ms) | prefix cache hit |"), std::string::npos) << md;
}

}  // namespace
}  // namespace llmload::report_test
