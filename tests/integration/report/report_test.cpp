// `llmload report` end to end: real artifacts from the real `llmload run` against the real
// llmload-server on loopback, the report written by the real binary, and report.html rendered in
// headless Chromium (no console errors, no network requests, the charts present with data), plus
// checks of summary.csv / summary.md against result.json, sweeps, partial and corrupt artifacts.
// The trials reports are checked in trials_report_test.cpp, on the same artifacts.
// The Chromium checks skip when no chromium is installed (scripts/setup.sh installs it).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/capacity.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/trials.hpp"
#include "report_fixture.hpp"
#include "report_helpers.hpp"
#include "subprocess.hpp"

namespace llmload::report_test {
namespace {

using llmload::testing::binary_path;
using llmload::testing::read_file;
using llmload::testing::ServerHandle;
using namespace std::chrono_literals;

/// A short open-loop run of the real client against the shared server (its /metrics scraped every
/// 100 ms, so that the Little's-law cross-check has samples).
void real_run(const std::string& url, const fs::path& out, const std::string& rate, const std::string& n,
              const std::string& warmup) {
  const RunResult r = llmload({"run", "--base-url", url, "--scenario", "server", "--request-rate", rate, "--num-requests", n,
                               "--warmup", warmup, "--input-tokens", "64", "--output-tokens", "24", "--seed", "3",
                               "--slo", "ttft:150ms,tpot:40ms", "--server-metrics-interval", "100ms", "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::exists(out / "result.json"));
}

}  // namespace

void Report::SetUpTestSuite() {
  tmp_ = new TempDir();
  server_ = new ServerHandle(llmload::testing::start_server({}));
  root_ = fs::path(tmp_->path());
  // One run (warmup shaded, some hundreds of requests) and a two-point sweep.
  real_run(server_->base_url, root_ / "run", "80", "240", "40");
  real_run(server_->base_url, root_ / "sweep" / "rate-60", "60", "90", "10");
  real_run(server_->base_url, root_ / "sweep" / "rate-15", "15", "30", "5");
  chromium_ = find_chromium();
}
void Report::TearDownTestSuite() {
  // LLMLOAD_REPORT_KEEP_DIR=/some/dir keeps every artifact and report the test made (to open them).
  if (const char* keep = std::getenv("LLMLOAD_REPORT_KEEP_DIR"); keep != nullptr && *keep != '\0' && tmp_ != nullptr) {
    std::error_code ec;
    fs::remove_all(keep, ec);
    fs::copy(root_, keep, fs::copy_options::recursive, ec);
  }
  delete server_;
  server_ = nullptr;
  delete tmp_;
  tmp_ = nullptr;
}

TempDir* Report::tmp_ = nullptr;
llmload::testing::ServerHandle* Report::server_ = nullptr;
fs::path Report::root_;
std::string Report::chromium_;

// The report a run writes at its end reads the run's own record file (issue 20: no JSON parsed
// again on every pass); `llmload report` later reads requests.jsonl. Both give the same report.
void Report::TheRunsOwnReportIsTheOneMadeFromItsFiles() {
  // The same directory name (the report names the run after it), elsewhere.
  const fs::path dir = root_ / "rebuilt" / "run";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir.parent_path());
  fs::copy(root_ / "run", dir, fs::copy_options::recursive);
  for (const char* f : {"report.html", "summary.md", "summary.csv"}) fs::remove(dir / f);
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* f : {"summary.md", "summary.csv"}) {
    const std::string at_run_end = read_file((root_ / "run" / f).string());
    ASSERT_FALSE(at_run_end.empty()) << f;
    EXPECT_EQ(read_file((dir / f).string()), at_run_end) << f;
  }
}

void Report::RunReportRendersOfflineInChromiumWithEveryChart() {
  const fs::path dir = copy_run("run-html");
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("report.html"), std::string::npos) << r.out;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  // Header: verdicts and conditions.
  EXPECT_NE(html.find("id=\"verdict-slo\""), std::string::npos);
  EXPECT_NE(html.find("id=\"verdict-validity\""), std::string::npos);
  EXPECT_NE(html.find("id=\"conditions\""), std::string::npos);
  EXPECT_NE(html.find("id=\"latency-table\""), std::string::npos);
  const json result = json::parse(read_file((dir / "result.json").string()));
  EXPECT_NE(html.find(">SLO " + result["slo"]["verdict"].get<std::string>() + "<"), std::string::npos);
  EXPECT_NE(html.find(result["conditions"]["tool"]["version"].get<std::string>()), std::string::npos);
  // Every chart, each with a series that has data.
  for (const char* id : {"chart-pct-ttft", "chart-pct-tpot", "chart-pct-itl", "chart-pct-e2e", "chart-ts-requests",
                         "chart-ts-tokens", "chart-ts-inflight", "chart-ts-ttft"}) {
    const std::string fig = figure(html, id);
    ASSERT_FALSE(fig.empty()) << id;
    EXPECT_GE(max_series_points(fig), 5) << id;
  }
  // Percentile axis toward the tail; the TTFT SLO line (150 ms) and the shaded warmup.
  const std::string pct = figure(html, "chart-pct-ttft");
  EXPECT_NE(pct.find(">99%<"), std::string::npos);
  EXPECT_NE(pct.find(">90%<"), std::string::npos);
  EXPECT_NE(pct.find("SLO 150 ms"), std::string::npos);
  EXPECT_NE(figure(html, "chart-ts-requests").find("warmup (discarded)"), std::string::npos);
  // No trials array in a plain run: no trial charts.
  EXPECT_EQ(html.find("data-chart=\"trials-"), std::string::npos);

  // The server cross-checks, as result.json has them (the real run scraped llmload-server's /metrics).
  using llmload::analysis::format_number;
  const std::string checks = element(html, "cross-checks");
  ASSERT_FALSE(checks.empty());
  const json& tc = result["ttft_cross_check"];
  ASSERT_TRUE(tc.is_object());
  if (tc.value("available", false)) {
    const std::string table = element(html, "ttft-cross-check");
    EXPECT_NE(table.find("<td>" + format_number(tc["client_mean_ms"]) + "</td><td>" + format_number(tc["server_mean_ms"]) +
                         "</td><td>" + format_number(tc["mean_diff_ms"]) + "</td>"),
              std::string::npos)
        << table;
    // Either "overhead ≈ X ms" or, when the populations make the difference negative (the
    // server's clock starts at the kernel's receive time, so the true per-request difference is
    // only the loopback transit), "client below server by -X ms".
    const double diff = tc["mean_diff_ms"].get<double>();
    EXPECT_NE(element(html, "ttft-cross-check-verdict").find(format_number(diff < 0 ? -diff : diff) + " ms"),
              std::string::npos)
        << element(html, "ttft-cross-check-verdict");
  } else {
    EXPECT_NE(element(html, "ttft-cross-check").find(escaped(tc["reason"].get<std::string>())), std::string::npos);
  }
  const json& ll = result["littles_law"];
  ASSERT_TRUE(ll.is_object());
  if (ll.value("available", false)) {
    const std::string verdict = element(html, "littles-law-verdict");
    EXPECT_NE(verdict.find(std::string("data-agrees=\"") + (ll["agrees"].get<bool>() ? "true" : "false")), std::string::npos);
    EXPECT_NE(element(html, "littles-law").find("<td>" + format_number(ll["server_mean_in_system"]) + "</td>"), std::string::npos);
    EXPECT_NE(element(html, "littles-law").find("<td>" + format_number(ll["client_throughput_x_mean_e2e"]) + "</td>"),
              std::string::npos);
  } else {
    EXPECT_NE(element(html, "littles-law").find(escaped(ll["reason"].get<std::string>())), std::string::npos);
  }
  // How the window was chosen: --warmup 40 (requests).
  const std::string window = element(html, "window");
  ASSERT_FALSE(window.empty());
  EXPECT_NE(window.find("by request count (requests: 40)"), std::string::npos) << window;
  // The server's own series over time (scraped every 100 ms).
  EXPECT_GE(max_series_points(figure(html, "chart-ts-server")), 5);
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("## Server cross-checks"), std::string::npos) << md;
  EXPECT_NE(md.find("- **Little's law**: "), std::string::npos);
  EXPECT_NE(md.find("## Measurement window"), std::string::npos);

  if (chromium_.empty()) return;  // reported as a skip at the end of the test
  expect_clean_render(render(chromium_, dir / "report.html"), 9);
  screenshot(dir / "report.html", "run-report.png", "1300,4600");
}

void Report::CsvAndMarkdownCarryTheNumbersOfResultJson() {
  const fs::path dir = copy_run("run-csv");
  const fs::path out = root_ / "elsewhere";
  const RunResult r = llmload({"report", dir.string(), "--output", out.string(), "--interval", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "report.html"));  // --output
  const json res = json::parse(read_file((dir / "result.json").string()));
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  auto num = [&](const std::string& col) { return std::stod(row.at(col)); };
  // Exact: the CSV prints the shortest round-trip form of result.json's doubles.
  EXPECT_EQ(row.at("run"), "run-csv");
  EXPECT_EQ(num("offered_load"), res["load"]["offered_rate"].get<double>());
  EXPECT_EQ(row.at("load_kind"), "rate");
  EXPECT_EQ(num("request_throughput"), res["request_throughput"].get<double>());
  EXPECT_EQ(num("output_throughput"), res["output_throughput"].get<double>());
  EXPECT_EQ(num("request_goodput"), res["slo"]["request_goodput"].get<double>());
  EXPECT_EQ(num("token_goodput"), res["slo"]["token_goodput"].get<double>());
  EXPECT_EQ(num("attainment"), res["slo"]["attainment"].get<double>());
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (const char* p : {"p50", "p90", "p99"}) {
      const std::string col = std::string(m) + "_" + p + "_ms";
      EXPECT_EQ(num(col), res["latency"][m][std::string(p) + "_ms"].get<double>()) << col;
    }
  }
  EXPECT_EQ(num("completed"), res["completed"].get<double>());
  EXPECT_EQ(num("failed"), res["failed"].get<double>());
  EXPECT_EQ(row.at("slo_verdict"), res["slo"]["verdict"]);
  EXPECT_EQ(row.at("validity"), res["validity"]["valid"].get<bool>() ? "valid" : "INVALID");
  EXPECT_EQ(row.at("interrupted"), "false");

  using llmload::analysis::format_number;
  const std::string md = read_file((out / "summary.md").string());
  EXPECT_NE(md.find("# llmload report: run-csv"), std::string::npos);
  EXPECT_NE(md.find("- **SLO**: " + res["slo"]["verdict"].get<std::string>()), std::string::npos);
  EXPECT_NE(md.find("| request throughput | " + format_number(res["request_throughput"]) + " req/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| output throughput | " + format_number(res["output_throughput"]) + " tokens/s |"), std::string::npos);
  const auto& t = res["latency"]["ttft"];
  EXPECT_NE(md.find("| TTFT | " + format_number(t["count"]) + " | " + format_number(t["mean_ms"]) + " | " +
                    format_number(t["p50_ms"]) + " | " + format_number(t["p90_ms"]) + " | " + format_number(t["p95_ms"]) + " | " +
                    format_number(t["p99_ms"])),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tpot | 40 |"), std::string::npos) << md;  // the SLO table
  EXPECT_NE(md.find("**command line**"), std::string::npos);
  // --interval reaches the time series.
  EXPECT_NE(read_file((out / "report.html").string()).find("per 0.5 s interval"), std::string::npos);
}

void Report::SweepOfSubdirectoriesGetsTheSweepCharts() {
  const fs::path dir = root_ / "sweep";
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("run"), "rate-15");  // in increasing offered load, not name order
  EXPECT_EQ(rows[1].at("run"), "rate-60");
  EXPECT_EQ(std::stod(rows[0].at("offered_load")), 15.0);
  EXPECT_EQ(std::stod(rows[1].at("offered_load")), 60.0);
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  EXPECT_NE(html.find("id=\"sweep-table\""), std::string::npos);
  for (const char* id : {"chart-latency-throughput-ttft", "chart-latency-throughput-tpot", "chart-latency-throughput-e2e",
                         "chart-goodput", "chart-attainment", "chart-pct-by-load-ttft", "p0-chart-pct-ttft", "p1-chart-ts-requests"}) {
    const std::string fig = figure(html, id);
    ASSERT_FALSE(fig.empty()) << id;
    EXPECT_GE(max_series_points(fig), 2) << id;
  }
  EXPECT_NE(figure(html, "chart-latency-throughput-ttft").find("SLO 150 ms"), std::string::npos);
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("# llmload sweep report: sweep"), std::string::npos);
  EXPECT_NE(md.find("| rate-15 | 15 req/s |"), std::string::npos) << md;

  if (chromium_.empty()) return;  // reported as a skip at the end of the test
  expect_clean_render(render(chromium_, dir / "report.html"), 20);
}

void Report::SweepJsonListsPointsAndCapacity() {
  const fs::path dir = root_ / "sweep-listed";
  fs::create_directories(dir);
  write_text(dir / "sweep.json", R"({"points": [
      {"dir": "../sweep/rate-60", "offered": 60},
      {"dir": "../sweep/rate-15", "offered": 15},
      {"dir": "rate-200", "offered": 200}],
    "capacity": {"highest_pass": 15, "lowest_fail": 60}})");
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The listed point that was never run is a note, not an error.
  EXPECT_NE(r.err.find("points[2] ('rate-200'): no artifact"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  EXPECT_NE(html.find("capacity 15 req/s (highest passing load; the lowest failing is 60 req/s)"), std::string::npos);
  // Both points are too short for a p99 (too_few_samples): a capacity resting on them is not a clean pass.
  const std::string badge = element(html, "verdict-capacity");
  EXPECT_NE(badge.find("class=\"badge warn\""), std::string::npos) << badge;
  // Each point names too_few_samples among its reasons (a busy machine may add schedule_lag: timing, not asserted).
  EXPECT_NE(badge.find("INVALID points: "), std::string::npos) << badge;
  for (const std::string point : {"../sweep/rate-15 (", "../sweep/rate-60 ("}) {
    const auto at = badge.find(point);
    ASSERT_NE(at, std::string::npos) << badge;
    const std::string reasons = badge.substr(at + point.size(), badge.find(')', at) - at - point.size());
    EXPECT_NE(reasons.find("too_few_samples"), std::string::npos) << point << ": " << badge;
  }
  const std::string lt = figure(html, "chart-latency-throughput-ttft");
  EXPECT_NE(lt.find("class=\"callout\""), std::string::npos);
  EXPECT_NE(lt.find("capacity (15 req/s)"), std::string::npos);
  EXPECT_NE(figure(html, "chart-attainment").find("capacity bracket"), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("run"), "../sweep/rate-15");
  EXPECT_NE(read_file((dir / "summary.md").string()).find("(capacity)"), std::string::npos);

  write_text(dir / "sweep.json", R"({"points": [{"offered": 3}]})");
  const RunResult bad = llmload({"report", dir.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("sweep.json: points[0] needs \"dir\""), std::string::npos) << bad.err;
}

/// Validity wherever a number is: each INVALID point's reasons in the points table, and the capacity
/// badge in a warning style when a point bounding it is INVALID or the search says it is not valid.
void Report::SweepValidityShownWithTheCapacity() {
  const fs::path dir = root_ / "sweep-validity";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* p : {"rate-15", "rate-60"}) {
    fs::copy(root_ / "sweep" / p, dir / p, fs::copy_options::recursive);
  }
  auto set_validity = [&](const char* point, const json& validity) {
    const fs::path f = dir / point / "result.json";
    json r = json::parse(read_file(f.string()));
    r["validity"] = validity;
    write_text(f, r.dump(2));
  };
  const json valid = {{"valid", true}, {"verdict", "VALID"}, {"checked", true}, {"reasons", json::array()}};
  const json invalid = {{"valid", false},
                        {"verdict", "INVALID"},
                        {"checked", true},
                        {"reasons",
                         {{{"code", "error_rate"}, {"message", "error rate 5.0% > 1% <max>"}},
                          {{"code", "schedule_lag"}, {"message", "p99 schedule lag 80 ms"}}}}};
  const std::string capacity = R"("capacity": {"highest_pass": 15, "lowest_fail": 60})";
  write_text(dir / "sweep.json", R"({"points": [{"dir": "rate-15", "offered": 15}, {"dir": "rate-60", "offered": 60}], )" +
                                     capacity + "}");

  // Both points VALID: a clean badge, no validity list.
  set_validity("rate-15", valid);
  set_validity("rate-60", valid);
  RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string html = read_file((dir / "report.html").string());
  EXPECT_NE(element(html, "verdict-capacity").find("class=\"badge pass\""), std::string::npos) << element(html, "verdict-capacity");
  EXPECT_EQ(element(html, "verdict-capacity").find("data-valid"), std::string::npos);
  EXPECT_TRUE(element(html, "capacity-validity").empty());
  EXPECT_EQ(element(html, "sweep-table").find("point-reasons"), std::string::npos);

  // The highest passing point INVALID: its reasons in the table, the badge a warning naming it.
  set_validity("rate-15", invalid);
  r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  html = read_file((dir / "report.html").string());
  const std::string badge = element(html, "verdict-capacity");
  EXPECT_NE(badge.find("class=\"badge warn\""), std::string::npos) << badge;
  EXPECT_NE(badge.find("data-valid=\"false\""), std::string::npos) << badge;
  EXPECT_NE(badge.find("capacity 15 req/s"), std::string::npos) << badge;
  EXPECT_NE(badge.find("INVALID points: rate-15 (error_rate, schedule_lag)"), std::string::npos) << badge;
  const std::string why = element(html, "capacity-validity");
  EXPECT_NE(why.find("rate-15, the highest passing load, is INVALID"), std::string::npos) << why;
  EXPECT_EQ(why.find("rate-60"), std::string::npos) << why;
  const std::string table = element(html, "sweep-table");
  const auto row15 = table.find("data-point=\"0\"");
  const auto row60 = table.find("data-point=\"1\"");
  ASSERT_NE(row15, std::string::npos);
  ASSERT_NE(row60, std::string::npos);
  const std::string first = table.substr(row15, row60 - row15);
  EXPECT_NE(first.find("<li data-code=\"error_rate\"><code>error_rate</code> " + escaped("error rate 5.0% > 1% <max>") + "</li>"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("<li data-code=\"schedule_lag\">"), std::string::npos) << first;
  EXPECT_EQ(table.substr(row60).find("point-reasons"), std::string::npos);
  std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("**INVALID points: rate-15 (error_rate, schedule_lag)**"), std::string::npos) << md;
  EXPECT_NE(md.find("| INVALID: `error_rate` error rate 5.0% > 1% <max>; `schedule_lag` p99 schedule lag 80 ms |"),
            std::string::npos)
      << md;

  // Both points VALID, but the capacity search says its answer is not valid (sweep.json capacity).
  set_validity("rate-15", valid);
  write_text(dir / "sweep.json",
             R"({"points": [{"dir": "rate-15", "offered": 15}, {"dir": "rate-60", "offered": 60}],
                 "capacity": {"highest_pass": 15, "lowest_fail": 60, "valid": false,
                              "invalid_reasons": ["the lowest non-passing load is INCONCLUSIVE, not a FAIL"]}})");
  r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  html = read_file((dir / "report.html").string());
  EXPECT_NE(element(html, "verdict-capacity").find("class=\"badge warn\""), std::string::npos);
  EXPECT_NE(element(html, "capacity-validity").find("the lowest non-passing load is INCONCLUSIVE, not a FAIL"), std::string::npos);
  md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("capacity search not valid: the lowest non-passing load is INCONCLUSIVE, not a FAIL"), std::string::npos) << md;

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 10);
}

/// A run of --scenario stages: its result.json "stages" as a Stages table (page and summary.md); a
/// run without stages has none.
void Report::StagesRunGetsAStagesSection() {
  using llmload::analysis::format_number;
  const fs::path dir = root_ / "stages";
  fs::remove_all(dir);
  const RunResult run = llmload({"run", "--base-url", server_->base_url, "--scenario", "stages", "--stages",
                                 "rate:20@1s,concurrency:2@1s", "--input-tokens", "64", "--output-tokens", "24", "--seed", "3",
                                 "--slo", "ttft:150ms,tpot:40ms", "--output", dir.string()});
  ASSERT_TRUE(fs::exists(dir / "result.json")) << run.exit_code << run.out << run.err;  // the verdicts are not the point here
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json result = json::parse(read_file((dir / "result.json").string()));
  ASSERT_TRUE(result.contains("stages") && result["stages"].is_array()) << result.dump(2).substr(0, 2000);
  ASSERT_EQ(result["stages"].size(), 2u);
  const std::string html = read_file((dir / "report.html").string());
  EXPECT_NE(html.find("<h2>Stages</h2>"), std::string::npos);
  const std::string table = element(html, "stages");
  ASSERT_FALSE(table.empty());
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("## Stages"), std::string::npos) << md;
  for (const auto& st : result["stages"]) {
    const int i = st["stage"].get<int>();
    const auto at = table.find(fmt::format("<tr data-stage=\"{}\">", i));
    ASSERT_NE(at, std::string::npos) << table;
    const std::string row = table.substr(at, table.find("</tr>", at) - at);
    EXPECT_NE(row.find(escaped(st["load"].get<std::string>())), std::string::npos) << row;
    const double requests = st["requests"].get<double>();
    const double tput = st["request_throughput"].get<double>();
    EXPECT_NE(row.find(fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td>", format_number(requests),
                                   format_number(st["completed"].get<double>()), format_number(st["failed"].get<double>()),
                                   format_number(tput))),
              std::string::npos)
        << row;
    if (st["ttft_ms"]["p99"].is_number()) {
      EXPECT_NE(row.find("<td>" + format_number(st["ttft_ms"]["p99"].get<double>()) + "</td>"), std::string::npos) << row;
    }
    if (st["slo_attainment"].is_number()) {
      EXPECT_NE(row.find(fmt::format("<td>{:.1f}%</td>", st["slo_attainment"].get<double>() * 100)), std::string::npos) << row;
    }
    EXPECT_NE(md.find(fmt::format("| {} | {} |", i, st["load"].get<std::string>())), std::string::npos) << md;
  }

  // A run without stages ("stages": null in result.json): no Stages section.
  const fs::path plain = copy_run("run-no-stages");
  ASSERT_EQ(llmload({"report", plain.string()}).exit_code, 0);
  const std::string plain_html = read_file((plain / "report.html").string());
  EXPECT_EQ(plain_html.find("Stages</h2>"), std::string::npos);
  EXPECT_TRUE(element(plain_html, "stages").empty());
  EXPECT_EQ(read_file((plain / "summary.md").string()).find("Stages"), std::string::npos);

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 4);
}

void Report::NewResultShapesRender() {
  using llmload::analysis::format_number;
  // A run's result.json in the current shape, with every new section filled in by hand: validity
  // with several reasons, an auto-detected warmup, minimums not met, an early stop, the cost, and
  // the cross-checks' other branches (TTFT unavailable, Little's law disagreeing).
  const fs::path dir = copy_run("run-shapes");
  json res = json::parse(read_file((dir / "result.json").string()));
  const double w0 = res["window"]["start_s"].get<double>();
  res["validity"] = {{"valid", false},
                     {"verdict", "INVALID"},
                     {"checked", true},
                     {"reason", "error rate 7.5% above the maximum 5%"},
                     {"reasons", json::array({{{"code", "error_rate"}, {"message", "error rate 7.5% above the maximum 5%"}},
                                              {{"code", "server_errors"}, {"message", "the server answered 12 requests with HTTP 503"}}})}};
  res["window"]["warmup"] = {
      {"method", "auto"},
      {"detection",
       {{"method", "MSER-5"},
        {"interval_s", 0.025},
        {"found", true},
        {"deciding_series", "ttft"},
        {"start_s", w0},
        {"series",
         {{"ttft", {{"found", true}, {"truncation_s", w0}, {"reason", "MSER-5: minimum at d = 4"}}},
          {"throughput", {{"found", false}, {"truncation_s", nullptr}, {"reason", "no steady state: minimum at the search limit"}}}}},
        {"cooldown", {{"method", "end of issuing"}, {"discarded_s", 0.2}}}}}};
  res["minimums"] = {{"min_duration_s", 30}, {"min_requests", 1000}, {"max_duration_s", 60}, {"met", false}};
  res["stopped_early"] = {{"reason", "over-saturated: the queue grew for 5 s"}};
  res["cost"] = {{"price_per_hour", 2.5}, {"devices", 2}, {"per_million_output_tokens", 0.8123456}};
  res["ttft_cross_check"] = {{"available", false}, {"reason", "the server exports no TTFT histogram"}};
  res["littles_law"] = {{"available", true},           {"server_mean_in_system", 20.5}, {"client_throughput_x_mean_e2e", 16.4},
                        {"relative_deviation", 0.25},  {"tolerance", 0.12},             {"agrees", false},
                        {"samples", 30},               {"explanation", "Little's law: inconsistent"}};
  write_text(dir / "result.json", res.dump());
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  // Validity: the verdict and every reason with its code.
  EXPECT_NE(element(html, "verdict-validity").find("INVALID (2 reasons)"), std::string::npos);
  const std::string reasons = element(html, "validity-reasons");
  EXPECT_EQ(count(reasons, "<li"), 2u) << reasons;
  EXPECT_NE(reasons.find("data-code=\"error_rate\""), std::string::npos);
  EXPECT_NE(reasons.find("data-code=\"server_errors\""), std::string::npos);
  EXPECT_NE(reasons.find("HTTP 503"), std::string::npos);
  // The early stop.
  EXPECT_FALSE(element(html, "verdict-stopped").empty());
  EXPECT_NE(element(html, "stopped-early").find("over-saturated: the queue grew for 5 s"), std::string::npos);
  // How the window was chosen: the detection, per series, and the minimums not met.
  const std::string window = element(html, "window");
  EXPECT_NE(window.find("automatic"), std::string::npos) << window;
  EXPECT_NE(window.find("decided by the &#39;ttft&#39; series"), std::string::npos) << window;
  EXPECT_NE(window.find("over 0.025 s intervals"), std::string::npos);
  EXPECT_NE(window.find("end of issuing"), std::string::npos);  // the cooldown
  EXPECT_NE(window.find(">NOT met<"), std::string::npos);
  EXPECT_NE(window.find("window at least 30 s, at least 1000 measured requests; the run at most 60 s"), std::string::npos);
  const std::string det = element(html, "warmup-detection");
  EXPECT_EQ(count(det, "<tr data-series="), 2u) << det;
  EXPECT_NE(det.find("ttft (deciding)"), std::string::npos);
  // The time series shade the auto-detected warmup (window.start_s) and say how it was found.
  const std::string ts = figure(html, "chart-ts-requests");
  EXPECT_NE(ts.find("auto warmup (discarded)"), std::string::npos);
  EXPECT_NE(ts.find("the warmup was detected by MSER-5 (decided by the ttft series)"), std::string::npos);
  EXPECT_NE(ts.find("auto warmup 0–" + format_number(w0) + " s"), std::string::npos) << ts.substr(ts.find("chart-note"), 300);
  // Cost, and the cross-checks' other branches.
  EXPECT_NE(element(html, "cost").find("$" + format_number(0.8123456)), std::string::npos);
  EXPECT_NE(element(html, "ttft-cross-check").find("Not available: the server exports no TTFT histogram"), std::string::npos);
  EXPECT_NE(element(html, "littles-law-verdict").find("data-agrees=\"false\""), std::string::npos);
  EXPECT_NE(element(html, "littles-law-verdict").find("does NOT agree"), std::string::npos);
  EXPECT_NE(element(html, "littles-law-verdict").find("+25.0%"), std::string::npos);
  EXPECT_NE(element(html, "littles-law").find("±12.0%"), std::string::npos);
  // summary.csv and summary.md carry the same.
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("validity"), "INVALID");
  EXPECT_EQ(rows[0].at("validity_reasons"), "error_rate;server_errors");
  EXPECT_EQ(rows[0].at("stopped_early"), "over-saturated: the queue grew for 5 s");
  EXPECT_EQ(std::stod(rows[0].at("cost_per_million_output_tokens")), 0.8123456);
  EXPECT_EQ(rows[0].at("trials"), "");
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("- **Validity**: INVALID\n  - `error_rate` error rate 7.5% above the maximum 5%\n  - `server_errors` "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- **Stopped early**: over-saturated"), std::string::npos);
  EXPECT_NE(md.find("- **Steady-state detection**: MSER-5, found"), std::string::npos);
  EXPECT_NE(md.find("- **Minimums**: NOT met"), std::string::npos);
  EXPECT_NE(md.find("| cost | $" + format_number(0.8123456) + " per 1M output tokens"), std::string::npos);
  EXPECT_NE(md.find("- **Little's law**: does NOT agree"), std::string::npos);

  // The older validity shape ({valid, reason, checked}) still reads, and a Little's law that
  // could not be computed says why.
  res["validity"] = {{"valid", false}, {"checked", true}, {"reason", "the client could not hold the offered load"}};
  res["littles_law"] = {{"available", false}, {"reason", "fewer than 3 server samples inside the measurement window"}};
  res.erase("cost");
  res["conditions"]["price_per_hour"] = 3.0;  // no "cost": computed from the conditions
  res["conditions"]["devices"] = 4;
  write_text(dir / "result.json", res.dump());
  const RunResult r2 = llmload({"report", dir.string()});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const std::string html2 = read_file((dir / "report.html").string());
  EXPECT_NE(html2.find("<p class=\"reason\">the client could not hold the offered load</p>"), std::string::npos);
  EXPECT_NE(element(html2, "littles-law").find("Not available: fewer than 3 server samples"), std::string::npos);
  const double cost = 3.0 * 4 / (3600 * res["output_throughput"].get<double>()) * 1e6;
  EXPECT_NE(element(html2, "cost").find("$" + format_number(cost)), std::string::npos) << element(html2, "cost");
  const auto rows2 = read_csv(dir / "summary.csv");
  EXPECT_EQ(rows2.at(0).at("validity"), "INVALID");
  EXPECT_EQ(rows2.at(0).at("validity_reasons"), "the client could not hold the offered load");
  EXPECT_NEAR(std::stod(rows2.at(0).at("cost_per_million_output_tokens")), cost, cost * 1e-12);

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 9);
}

void Report::PartialArtifactStillRendersWhatItHas() {
  const fs::path dir = copy_run("run-partial");
  fs::remove(dir / "result.json");
  fs::remove(dir / "latency.hlog");
  // Cut the last line in half, as a run killed while writing would.
  std::string jsonl = read_file((dir / "requests.jsonl").string());
  jsonl.resize(jsonl.size() - 40);
  write_text(dir / "requests.jsonl", jsonl);
  std::size_t measured = 0;  // the complete lines of requests after warmup
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && !j["warmup"].get<bool>()) ++measured;
  }
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no result.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is cut off"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("recomputed from requests.jsonl"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  EXPECT_GE(max_series_points(figure(html, "chart-pct-ttft")), 5);
  EXPECT_GE(max_series_points(figure(html, "chart-ts-requests")), 5);
  EXPECT_TRUE(figure(html, "chart-pct-itl").empty());  // ITL needs the per-event gaps
  EXPECT_NE(html.find("class=\"notes\""), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("request_throughput"), "");  // unknown without result.json
  EXPECT_EQ(std::stod(rows[0].at("completed")) + std::stod(rows[0].at("failed")), static_cast<double>(measured));
}

void Report::MissingOrCorruptFilesAreClearErrors() {
  {
    const RunResult r = llmload({"report", (root_ / "no-such-dir").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("no-such-dir' does not exist"), std::string::npos) << r.err;
  }
  {
    const fs::path d = root_ / "empty-dir";
    fs::create_directories(d);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds no llmload artifact"), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-result");
    write_text(d / "result.json", "{\"completed\": 3,");
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("result.json: not valid JSON"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(d / "report.html"));
  }
  {
    const fs::path d = copy_run("bad-jsonl");
    std::string jsonl = read_file((d / "requests.jsonl").string());
    jsonl.insert(jsonl.find('\n') + 1, "{\"index\": oops}\n");
    write_text(d / "requests.jsonl", jsonl);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("requests.jsonl: line 2 is not valid JSON"), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-field");
    std::string jsonl = read_file((d / "requests.jsonl").string());
    const auto pos = jsonl.find("\"t_intended_ms\":");
    jsonl.replace(pos, 16, "\"t_intended_xx\":");
    write_text(d / "requests.jsonl", jsonl);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("requests.jsonl: line 1: missing \"t_intended_ms\""), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-hlog");
    write_text(d / "latency.hlog", "Tag=ttft,0.1,1.0,2.0,HISTFnot-base64!!\n");
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("latency.hlog: hlog line 1"), std::string::npos) << r.err;
  }
}

// One test: a real run and a real two-point sweep (a few seconds of load), then every check.
TEST_F(Report, RealArtifactsEndToEnd) {
  {
    SCOPED_TRACE("RunReportRendersOfflineInChromiumWithEveryChart");
    RunReportRendersOfflineInChromiumWithEveryChart();
  }
  {
    SCOPED_TRACE("CsvAndMarkdownCarryTheNumbersOfResultJson");
    CsvAndMarkdownCarryTheNumbersOfResultJson();
  }
  {
    SCOPED_TRACE("SweepOfSubdirectoriesGetsTheSweepCharts");
    SweepOfSubdirectoriesGetsTheSweepCharts();
  }
  {
    SCOPED_TRACE("SweepJsonListsPointsAndCapacity");
    SweepJsonListsPointsAndCapacity();
  }
  {
    SCOPED_TRACE("SweepValidityShownWithTheCapacity");
    SweepValidityShownWithTheCapacity();
  }
  {
    SCOPED_TRACE("StagesRunGetsAStagesSection");
    StagesRunGetsAStagesSection();
  }
  {
    SCOPED_TRACE("NewResultShapesRender");
    NewResultShapesRender();
  }
  {
    SCOPED_TRACE("TrialsArtifactReport");
    TrialsArtifactReport();
  }
  {
    SCOPED_TRACE("SweepOfTrialsArtifacts");
    SweepOfTrialsArtifacts();
  }
  {
    SCOPED_TRACE("RealTrialsRunReports");
    RealTrialsRunReports();
  }
  {
    SCOPED_TRACE("TrialsArrayGetsSpreadCharts");
    TrialsArrayGetsSpreadCharts();
  }
  {
    SCOPED_TRACE("PartialArtifactStillRendersWhatItHas");
    PartialArtifactStillRendersWhatItHas();
  }
  {
    SCOPED_TRACE("MissingOrCorruptFilesAreClearErrors");
    MissingOrCorruptFilesAreClearErrors();
  }
  {
    SCOPED_TRACE("TheRunsOwnReportIsTheOneMadeFromItsFiles");
    TheRunsOwnReportIsTheOneMadeFromItsFiles();
  }
  if (chromium_.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs the Debian package): the report.html "
                    "checks in a browser were skipped; everything else ran";
  }
}

// --- the computations, on synthetic records ----------------------------------------------------
namespace {

llmload::analysis::RequestRecord record(double send_s, double first_s, double last_s, std::int64_t tokens) {
  using llmload::analysis::Nanos;
  auto ns = [](double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); };
  llmload::analysis::RequestRecord r;
  r.t_intended = ns(send_s);
  r.t_send = ns(send_s);
  r.t_first = ns(first_s);
  r.t_last = ns(last_s);
  r.t_done = ns(last_s);
  r.output_tokens = tokens;
  r.in_window = true;
  return r;
}

TEST(ReportSeries, TokensAndInFlightAreConserved) {
  std::vector<llmload::analysis::RequestRecord> recs;
  // 20 requests, one every 0.5 s, each 2.5 s long with 11 tokens: 5 in flight in steady state.
  for (int i = 0; i < 20; ++i) recs.push_back(record(0.5 * i, 0.5 * i + 0.5, 0.5 * i + 2.5, 11));
  const auto ts = llmload::analysis::compute_time_series(recs, json::object({{"window", {{"start_s", 1.0}, {"end_s", 9.0}}}}), 1.0);
  EXPECT_DOUBLE_EQ(ts.interval_s, 1.0);
  EXPECT_DOUBLE_EQ(ts.end_s, 12.0);
  ASSERT_EQ(ts.start_s.size(), 12u);
  double tokens = 0, completions = 0, busy = 0;
  for (std::size_t i = 0; i < ts.start_s.size(); ++i) {
    tokens += ts.tokens_per_s[i];
    completions += ts.completions_per_s[i];
    busy += ts.in_flight[i];
  }
  EXPECT_NEAR(tokens, 20 * 11, 1e-6);
  EXPECT_NEAR(completions, 20, 1e-9);
  EXPECT_NEAR(busy, 20 * 2.5, 1e-6);  // request-seconds
  EXPECT_NEAR(ts.in_flight[5], 5.0, 1e-6);
  EXPECT_NEAR(ts.ttft_p50_ms[5], 500.0, 1e-6);
  EXPECT_TRUE(std::isnan(ts.ttft_p50_ms[11]));  // no first token in the last second
  EXPECT_EQ(ts.window_start_s, 1.0);
  EXPECT_EQ(ts.window_end_s, 9.0);
}

TEST(ReportSeries, IntervalFollowsTheRunLength) {
  using llmload::analysis::choose_interval;
  EXPECT_DOUBLE_EQ(choose_interval(3), 0.1);
  EXPECT_DOUBLE_EQ(choose_interval(16), 0.5);
  EXPECT_DOUBLE_EQ(choose_interval(60), 1);
  EXPECT_DOUBLE_EQ(choose_interval(600), 10);
  EXPECT_DOUBLE_EQ(choose_interval(3600), 60);
}

TEST(ReportSeries, PercentileCurveReachesTheTail) {
  llmload::analysis::HdrHistogram h;
  for (int v = 1; v <= 10000; ++v) h.record(v * 10);  // 10 us .. 100 ms
  const auto curve = llmload::analysis::percentile_curve(h);
  ASSERT_GT(curve.size(), 150u);  // x from 0 to log10(10000) = 4 in steps of 0.02, then the max
  EXPECT_DOUBLE_EQ(curve.front().first, 0.0);
  EXPECT_NEAR(curve[50].first, 90.0, 1e-9);  // x = 1
  EXPECT_NEAR(curve[100].first, 99.0, 1e-9);  // x = 2
  EXPECT_NEAR(curve[100].second, h.value_at_percentile(99) / 1e3, 1e-12);
  EXPECT_DOUBLE_EQ(curve.back().first, 100.0);
  EXPECT_DOUBLE_EQ(curve.back().second, h.max() / 1e3);
  for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i].second, curve[i - 1].second);
}

TEST(ReportFormat, NumbersForPeople) {
  using llmload::analysis::format_number;
  EXPECT_EQ(format_number(2554.469), "2554");
  EXPECT_EQ(format_number(12515.79), "12,516");
  EXPECT_EQ(format_number(1234567.0), "1,234,567");
  EXPECT_EQ(format_number(38.91), "38.9");
  EXPECT_EQ(format_number(9.876), "9.88");
  EXPECT_EQ(format_number(0.228), "0.228");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(40.0), "40");
  EXPECT_EQ(format_number(-3.5), "-3.50");
  EXPECT_EQ(format_number(std::nan("")), "–");
}

}  // namespace
}  // namespace llmload::report_test
