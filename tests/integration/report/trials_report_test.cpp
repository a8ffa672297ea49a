// `llmload report` of trials (docs/report.md, `llmload run --trials N`): a trials artifact made
// from the real run of report_test.cpp's fixture, a real trials run, a sweep of trials artifacts,
// and the spread charts, checked in report.html, summary.csv and summary.md (and in headless
// Chromium where it is installed).

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

using llmload::testing::read_file;
using namespace std::chrono_literals;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Multiplies the numbers at these result.json paths ("a.b.c") by f, where they are numbers.
void scale(json& j, const std::vector<std::string>& paths, double f) {
  for (const auto& p : paths) {
    json* cur = &j;
    std::istringstream parts(p);
    std::string key;
    bool ok = true;
    while (std::getline(parts, key, '.')) {
      if (!cur->is_object() || !cur->contains(key)) {
        ok = false;
        break;
      }
      cur = &(*cur)[key];
    }
    if (ok && cur->is_number()) *cur = cur->get<double>() * f;
  }
}

/// The headline keys a trials artifact summarizes (docs/report.md: `llmload run --trials N`).
std::vector<std::string> headline_keys() {
  std::vector<std::string> keys = {"request_throughput", "output_throughput", "total_token_throughput", "request_goodput"};
  for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* st : {"mean", "median", "p90", "p95", "p99"}) keys.push_back(std::string(st) + "_" + m + "_ms");
  }
  return keys;
}

struct TrialSpec {
  double throughput = 1;   // factor on the source run's throughput numbers
  double latency = 1;      // factor on its latencies
  bool valid = true;       // false: INVALID with an error_rate reason
  json stopped = nullptr;  // the trial's stopped_early
};

/// A trials artifact in `dir`, in the shape `llmload run --trials N --output DIR` writes
/// (docs/report.md): trial-1 ... trial-N copies of the real run `source` with their numbers scaled,
/// each with its own report (the real `llmload report`), and DIR/result.json with the medians,
/// "trials", and "trial_summary" from the real analysis::summarize_trials. Returns that result.json.
json make_trials_artifact(const fs::path& dir, const fs::path& source, const std::vector<TrialSpec>& specs) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  json trials = json::array();
  std::vector<json> results;
  std::vector<std::string> latency_paths;
  for (const auto& k : headline_keys()) {
    if (k.find("_ms") != std::string::npos) latency_paths.push_back(k);
  }
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (const char* st : {"mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99.9_ms", "max_ms"}) {
      latency_paths.push_back(std::string("latency.") + m + "." + st);
      latency_paths.push_back(std::string("response_time.") + m + "." + st);
    }
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string name = "trial-" + std::to_string(i + 1);
    const fs::path td = dir / name;
    fs::copy(source, td, fs::copy_options::recursive);
    for (const char* f : {"report.html", "summary.md", "summary.csv"}) fs::remove(td / f);
    json r = json::parse(read_file((td / "result.json").string()));
    scale(r, {"request_throughput", "output_throughput", "total_token_throughput", "request_goodput", "slo.request_goodput",
              "slo.token_goodput"},
          specs[i].throughput);
    scale(r, latency_paths, specs[i].latency);
    if (!specs[i].valid) {
      r["validity"] = {{"valid", false},
                       {"verdict", "INVALID"},
                       {"checked", true},
                       {"reason", "error rate 7.5% above the maximum 5%"},
                       {"reasons", json::array({{{"code", "error_rate"}, {"message", "error rate 7.5% above the maximum 5%"}}})}};
    }
    r["stopped_early"] = specs[i].stopped;
    write_text(td / "result.json", r.dump());
    const RunResult rep = llmload({"report", td.string()});
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    json t = {{"trial", i + 1}, {"dir", name}, {"seed", 3 + i}};
    for (const auto& k : headline_keys()) t[k] = r.value(k, json());
    t["completed"] = r["completed"];
    t["failed"] = r["failed"];
    t["valid"] = specs[i].valid;
    t["slo_verdict"] = r["slo"]["verdict"];
    t["stopped_early"] = specs[i].stopped.is_object() ? specs[i].stopped["reason"] : json();
    trials.push_back(t);
    results.push_back(r);
  }
  json top = {{"schema_version", 1}, {"artifact", "trials"}};
  json summary = json::object();
  json noisy_metrics = json::array();
  for (const auto& k : headline_keys()) {
    std::vector<double> v;
    for (const auto& r : results) {
      if (r.contains(k) && r[k].is_number()) v.push_back(r[k].get<double>());
    }
    if (v.size() != results.size()) continue;
    const auto ts = llmload::analysis::summarize_trials(v);
    summary[k] = llmload::analysis::to_json(ts);
    top[k] = ts.median;
    if (ts.noisy) noisy_metrics.push_back(k);
  }
  double completed = 0, failed = 0;
  json reasons = json::array();
  json verdicts = json::array();
  int pass = 0, fail = 0, inconclusive = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    completed += results[i]["completed"].get<double>();
    failed += results[i]["failed"].get<double>();
    if (!specs[i].valid) {
      reasons.push_back({{"code", "error_rate"}, {"message", "error rate 7.5% above the maximum 5%"}, {"trial", i + 1}});
    }
    const std::string v = results[i]["slo"]["verdict"];
    verdicts.push_back(v);
    pass += v == "PASS";
    fail += v == "FAIL";
    inconclusive += v == "INCONCLUSIVE";
  }
  top["completed"] = completed;
  top["failed"] = failed;
  top["conditions"] = results[0]["conditions"];
  top["conditions"]["trials"] = {{"n", results.size()}, {"pause_s", 0}, {"seeds", {3, 4, 5}}};
  top["trials"] = trials;
  top["trial_summary"] = summary;
  top["noisy"] = !noisy_metrics.empty();
  top["noisy_metrics"] = noisy_metrics;
  top["validity"] = {{"valid", reasons.empty()},
                     {"verdict", reasons.empty() ? "VALID" : "INVALID"},
                     {"checked", true},
                     {"reasons", reasons},
                     {"reason", reasons.empty() ? json() : reasons[0]["message"]}};
  const std::string majority = 2 * pass > static_cast<int>(results.size()) ? "PASS" : (fail >= inconclusive ? "FAIL" : "INCONCLUSIVE");
  top["slo"] = {{"spec", results[0]["slo"]["spec"]}, {"verdict", majority}, {"trial_verdicts", verdicts}};
  write_text(dir / "result.json", top.dump(2));
  return top;
}

}  // namespace

void Report::TrialsArtifactReport() {
  using llmload::analysis::format_number;
  // Three trials of the real run; the throughput of trial 3 far off (noisy), trial 2 INVALID.
  const fs::path dir = root_ / "trials";
  const json top = make_trials_artifact(dir, root_ / "run",
                                        {{1.0, 1.0, true, nullptr}, {1.03, 0.97, false, nullptr}, {0.75, 1.05, true, nullptr}});
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A trials artifact has no requests.jsonl or latency.hlog of its own: that is not partial.
  EXPECT_EQ(r.err.find("no requests.jsonl"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no latency.hlog"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  EXPECT_EQ(html.find("class=\"notes\""), std::string::npos);
  EXPECT_NE(html.find("<h1>llmload trials report</h1>"), std::string::npos);
  // The headline: medians with [min–max] and the 95% CI, as trial_summary has them.
  const std::string summary = element(html, "trial-summary");
  ASSERT_FALSE(summary.empty());
  for (const char* key : {"request_throughput", "output_throughput", "p99_ttft_ms"}) {
    const json& ts = top["trial_summary"][key];
    const std::string row_start = std::string("<tr data-metric=\"") + key + "\"";
    const auto at = summary.find(row_start);
    ASSERT_NE(at, std::string::npos) << key;
    const std::string row = summary.substr(at, summary.find("</tr>", at) - at);
    EXPECT_NE(row.find("<td>" + format_number(ts["median"]) + "</td><td>" + format_number(ts["min"]) + "–" +
                       format_number(ts["max"]) + "</td>"),
              std::string::npos)
        << row;
    EXPECT_NE(row.find("[" + format_number(ts["ci"]["low"]) + ", " + format_number(ts["ci"]["high"]) + "]"), std::string::npos)
        << row;
  }
  const std::string kv = html.substr(html.find("data-key=\"request_throughput\""), 400);
  EXPECT_NE(kv.find(format_number(top["request_throughput"])), std::string::npos) << kv;
  EXPECT_NE(kv.find("[" + format_number(top["trial_summary"]["request_throughput"]["min"]) + "–" +
                    format_number(top["trial_summary"]["request_throughput"]["max"]) + "]"),
            std::string::npos)
      << kv;
  // Noisy: flagged, with which metrics.
  ASSERT_TRUE(top["noisy"].get<bool>()) << "the test's trials should be noisy: " << top["noisy_metrics"];
  const std::string noisy = element(html, "verdict-noisy");
  EXPECT_NE(noisy.find(top["noisy_metrics"][0].get<std::string>()), std::string::npos) << noisy;
  EXPECT_NE(summary.find("<tr data-metric=\"" + top["noisy_metrics"][0].get<std::string>() + "\" class=\"noisy\""),
            std::string::npos);
  // One row per trial, linking to its report.
  const std::string table = element(html, "trials-table");
  EXPECT_EQ(count(table, "<tr data-trial="), 3u);
  for (int k = 1; k <= 3; ++k) {
    const std::string href = "href=\"trial-" + std::to_string(k) + "/report.html\"";
    EXPECT_NE(table.find(href), std::string::npos) << table;
    EXPECT_TRUE(fs::exists(dir / ("trial-" + std::to_string(k)) / "report.html"));
  }
  EXPECT_NE(table.find("<span class=\"badge invalid\">INVALID</span>"), std::string::npos);
  // Validity: INVALID because trial 2 is, with the trial named.
  EXPECT_NE(element(html, "validity-reasons").find("trial 2: error rate 7.5%"), std::string::npos);
  // The spread charts: one dot per trial, the median line, the invalid trial marked.
  const std::string spread = figure(html, "chart-trials-request_throughput");
  EXPECT_EQ(count(spread, "<circle class=\"marker\""), 3u);
  EXPECT_EQ(count(spread, "class=\"marker cross\""), 1u);
  EXPECT_NE(spread.find("median " + format_number(top["request_throughput"])), std::string::npos);
  EXPECT_NE(spread.find("95% CI"), std::string::npos);
  // Each trial's distribution, and trial 1 over time (saying so).
  const std::string pct = figure(html, "chart-pct-ttft");
  EXPECT_EQ(count(pct, "<path class=\"series\""), 3u);
  EXPECT_GE(max_series_points(pct), 5);
  const std::string ts = figure(html, "chart-ts-requests");
  EXPECT_GE(max_series_points(ts), 5);
  EXPECT_NE(ts.find("trial 1 of 3"), std::string::npos);
  EXPECT_FALSE(element(html, "trials-cross-checks").empty());
  // summary.csv: the medians exactly, the trials, noisy, the reasons.
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::stod(rows[0].at("request_throughput")), top["request_throughput"].get<double>());
  EXPECT_EQ(std::stod(rows[0].at("ttft_p99_ms")), top["p99_ttft_ms"].get<double>());
  EXPECT_EQ(std::stod(rows[0].at("e2e_p50_ms")), top["median_e2el_ms"].get<double>());
  EXPECT_EQ(std::stod(rows[0].at("completed")), top["completed"].get<double>());
  EXPECT_EQ(rows[0].at("trials"), "3");
  EXPECT_EQ(rows[0].at("noisy"), "true");
  EXPECT_EQ(rows[0].at("validity"), "INVALID");
  EXPECT_EQ(rows[0].at("validity_reasons"), "error_rate@trial-2");
  EXPECT_EQ(rows[0].at("slo_verdict"), top["slo"]["verdict"]);
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("# llmload trials report: trials"), std::string::npos);
  EXPECT_NE(md.find("| request throughput | " + format_number(top["request_throughput"]) + " req/s [" +
                    format_number(top["trial_summary"]["request_throughput"]["min"]) + "–" +
                    format_number(top["trial_summary"]["request_throughput"]["max"]) + "] |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**NOISY**"), std::string::npos);
  EXPECT_NE(md.find("| metric | median | min–max | 95% CI | CV | noisy |"), std::string::npos);

  // Written elsewhere, the links to the trials' reports still resolve.
  const fs::path out = root_ / "trials-report-elsewhere" / "deeper";
  ASSERT_EQ(llmload({"report", dir.string(), "--output", out.string()}).exit_code, 0);
  const std::string moved = read_file((out / "report.html").string());
  static const std::regex href(R"re(href="([^"#][^"]*)")re");
  std::size_t links = 0;
  for (std::sregex_iterator it(moved.begin(), moved.end(), href), end; it != end; ++it) {
    ++links;
    EXPECT_TRUE(fs::exists(out / std::string((*it)[1]))) << (*it)[1];
  }
  EXPECT_EQ(links, 3u);

  // A trial not run yet is a note; a "trials" that is not an array is an error naming the file.
  const fs::path partial = root_ / "trials-partial";
  fs::remove_all(partial);
  fs::copy(dir, partial, fs::copy_options::recursive);
  fs::remove_all(partial / "trial-3");
  const RunResult rp = llmload({"report", partial.string()});
  ASSERT_EQ(rp.exit_code, 0) << rp.err;
  EXPECT_NE(rp.err.find("trial 3 ('trial-3'): no artifact there"), std::string::npos) << rp.err;
  json bad = top;
  bad["trials"] = "trial-1";
  write_text(partial / "result.json", bad.dump());
  const RunResult rb = llmload({"report", partial.string()});
  EXPECT_EQ(rb.exit_code, 2);
  EXPECT_NE(rb.err.find("result.json: \"trials\" is not an array"), std::string::npos) << rb.err;

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 15);
  screenshot(dir / "report.html", "trials-report.png", "1400,5200");
}

void Report::RealTrialsRunReports() {
  // The real `llmload run --trials 2`: its report reads the trials artifact it wrote.
  const fs::path dir = root_ / "real-trials";
  const RunResult run = llmload({"run", "--base-url", server_->base_url, "--scenario", "server", "--request-rate", "40",
                                 "--num-requests", "30", "--warmup", "4", "--input-tokens", "32", "--output-tokens", "8",
                                 "--seed", "5", "--trials", "2", "--output", dir.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const json top = json::parse(read_file((dir / "result.json").string()));
  ASSERT_EQ(top["artifact"], "trials");
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no requests.jsonl"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no latency.hlog"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  EXPECT_FALSE(element(html, "trial-summary").empty());
  const std::string table = element(html, "trials-table");
  EXPECT_EQ(count(table, "<tr data-trial="), 2u);
  EXPECT_EQ(count(table, "/report.html\""), 2u) << table;  // each trial has its own report
  EXPECT_EQ(count(figure(html, "chart-pct-ttft"), "<path class=\"series\""), 2u);
  EXPECT_GE(max_series_points(figure(html, "chart-ts-requests")), 2);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("trials"), "2");
  EXPECT_EQ(std::stod(rows[0].at("request_throughput")), top["request_throughput"].get<double>());
  EXPECT_EQ(std::stod(rows[0].at("completed")), top["completed"].get<double>());
}

void Report::SweepOfTrialsArtifacts() {
  using llmload::analysis::format_number;
  // A sweep whose points are trials artifacts (three trials each, from the real sweep's runs);
  // the higher point stopped early in one trial; the capacity from the search's JSON.
  const fs::path dir = root_ / "sweep-trials";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const json low = make_trials_artifact(dir / "rate-15", root_ / "sweep" / "rate-15",
                                        {{1.0, 1.0, true, nullptr}, {0.97, 1.1, true, nullptr}, {1.02, 0.9, true, nullptr}});
  const json high = make_trials_artifact(
      dir / "rate-60", root_ / "sweep" / "rate-60",
      {{1.0, 1.0, true, nullptr}, {0.9, 1.3, true, {{"reason", "over-saturated: queue growing"}}}, {1.04, 0.95, true, nullptr}});
  llmload::analysis::CapacityResult cap;
  cap.stop = llmload::analysis::CapacityStop::kToleranceReached;
  cap.explanation = "the bracket [15, 60] is within the tolerance";
  cap.highest_pass = 15;
  cap.lowest_fail = 60;
  cap.goodput_at_capacity = 14.5;
  cap.throughput_at_capacity = 14.9;
  cap.relative_width = 3;
  json capacity = llmload::analysis::to_json(cap);
  capacity["tolerance"] = 0.1;
  const json sweep = {{"schema_version", 1},
                      {"artifact", "sweep"},
                      {"load_kind", "rate"},
                      {"slo", "ttft:150ms,tpot:40ms,p99"},
                      {"points", json::array({{{"dir", "rate-15"}, {"offered", 15}, {"trials", 3}, {"verdict", low["slo"]["verdict"]},
                                               {"stopped_early", nullptr}},
                                              {{"dir", "rate-60"}, {"offered", 60}, {"trials", 3}, {"verdict", high["slo"]["verdict"]},
                                               {"stopped_early", {{"reason", "over-saturated: queue growing"}}}}})},
                      {"capacity", capacity}};
  write_text(dir / "sweep.json", sweep.dump(2));
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no requests.jsonl"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  // The capacity: the bracket from sweep.json, the search's details, the SLO.
  EXPECT_NE(html.find("capacity 15 req/s (highest passing load; the lowest failing is 60 req/s)"), std::string::npos);
  const std::string details = element(html, "capacity-details");
  EXPECT_NE(details.find("goodput at capacity 14.5 req/s"), std::string::npos) << details;
  EXPECT_NE(details.find("stopped: tolerance_reached"), std::string::npos) << details;
  EXPECT_NE(element(html, "sweep-slo").find("ttft:150ms,tpot:40ms,p99"), std::string::npos);
  // Latency-throughput: medians with min–max whiskers (both axes), the SLO line, the capacity
  // circled, the stopped point marked.
  const std::string lt = figure(html, "chart-latency-throughput-ttft");
  EXPECT_GE(count(lt, "class=\"whisker\""), 4u) << lt.substr(0, 3000);
  EXPECT_NE(lt.find("SLO 150 ms"), std::string::npos);
  EXPECT_NE(lt.find("capacity (15 req/s)"), std::string::npos);
  EXPECT_EQ(count(lt, "class=\"marker cross\""), 1u);
  EXPECT_NE(lt.find("stopped early"), std::string::npos);
  // Goodput and attainment versus offered load: whiskers, the bracket, the stopped point.
  for (const char* id : {"chart-goodput", "chart-goodput-tokens", "chart-attainment"}) {
    const std::string fig = figure(html, id);
    ASSERT_FALSE(fig.empty()) << id;
    EXPECT_NE(fig.find("capacity bracket"), std::string::npos) << id;
    EXPECT_EQ(count(fig, "class=\"marker cross\""), 1u) << id;
  }
  EXPECT_GE(count(figure(html, "chart-goodput"), "class=\"whisker\""), 2u);
  EXPECT_GE(max_series_points(figure(html, "chart-pct-by-load-ttft")), 5);
  // The points table: median [min–max] across trials, the stop.
  const std::string table = element(html, "sweep-table");
  for (const json* t : {&low, &high}) {
    const json& s = (*t)["trial_summary"]["request_throughput"];
    EXPECT_NE(table.find("<td>" + format_number(s["median"]) + "<br><span class=\"rng\">[" + format_number(s["min"]) + "–" +
                         format_number(s["max"]) + "]</span></td>"),
              std::string::npos)
        << table;
  }
  EXPECT_NE(table.find("over-saturated: queue growing"), std::string::npos);
  // p99 TTFT in the SLO's view: the median of the trials' values.
  {
    std::vector<double> v;
    for (int k = 1; k <= 3; ++k) {
      const json tr = json::parse(read_file((dir / "rate-60" / ("trial-" + std::to_string(k)) / "result.json").string()));
      const bool rt = tr["slo"].value("view", "") == "response";
      v.push_back(tr[rt ? "response_time" : "latency"]["ttft"]["p99_ms"].get<double>());
    }
    EXPECT_NE(table.find(format_number(median_of(v)) + "<br><span class=\"rng\">[" + format_number(*std::min_element(v.begin(), v.end())) +
                         "–" + format_number(*std::max_element(v.begin(), v.end())) + "]"),
              std::string::npos)
        << table;
  }
  // Each point's section is a trials report.
  EXPECT_FALSE(element(html, "p0-trial-summary").empty());
  EXPECT_FALSE(element(html, "p1-trials-table").empty());
  EXPECT_NE(element(html, "p1-trials-table").find("href=\"rate-60/trial-2/report.html\""), std::string::npos);
  EXPECT_FALSE(element(html, "p1-verdict-stopped").empty());
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("run"), "rate-15");
  EXPECT_EQ(rows[1].at("trials"), "3");
  EXPECT_EQ(rows[1].at("stopped_early"), "trial 2: over-saturated: queue growing");
  EXPECT_EQ(std::stod(rows[1].at("request_throughput")), high["request_throughput"].get<double>());
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("- **Capacity search**: goodput at capacity 14.5 req/s"), std::string::npos) << md;
  EXPECT_NE(md.find("| rate-15 (capacity) | 15 req/s | " + format_number(low["request_throughput"]) + " ["), std::string::npos) << md;

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 20);
  screenshot(dir / "report.html", "sweep-trials-report.png", "1400,4000");
}

void Report::TrialsArrayGetsSpreadCharts() {
  const fs::path dir = copy_run("run-trials");
  json res = json::parse(read_file((dir / "result.json").string()));
  res["trials"] = json::array({{{"request_throughput", 70.5}, {"p99_ttft_ms", 31.0}},
                               {{"request_throughput", 72.0}, {"p99_ttft_ms", 29.5}},
                               {{"result", {{"request_throughput", 69.0}, {"p99_ttft_ms", 35.0}}}}});
  write_text(dir / "result.json", res.dump());
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  const std::string fig = figure(html, "chart-trials-request_throughput");
  ASSERT_FALSE(fig.empty());
  EXPECT_NE(fig.find("median 70.5"), std::string::npos);
  EXPECT_NE(fig.find("3 trials: min 69, median 70.5, max 72"), std::string::npos);
  EXPECT_FALSE(figure(html, "chart-trials-p99_ttft_ms").empty());
}

}  // namespace llmload::report_test
