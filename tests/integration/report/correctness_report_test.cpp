// The report's Scorecard block, Correctness section and the sweep's accuracy chart (issue 18;
// docs/report.md): a real graded run with --consistency and a real sweep against llmload-server's
// answering mode with its error and divergence models on, reported by the real `llmload report`
// and checked number by number against result.json / sweep.json; hand-written shapes (nulls, every
// table, hostile excerpts); artifacts without these fields (no section); the pages in Chromium.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/html_report.hpp"
#include "report_helpers.hpp"
#include "subprocess.hpp"

namespace {

using llmload::analysis::format_number;
using llmload::testing::read_file;
using llmload::testing::ServerHandle;
using namespace llmload::report_test;
using llmload::report_test::llmload;  // the function, not the namespace
using namespace std::chrono_literals;

std::string arithmetic_set() { return std::string(LLMLOAD_REPO_DIR) + "/data/accuracy/arithmetic.jsonl"; }

/// The report's percentage ("88.0%") and interval ("82.8–91.8%").
std::string pct(double v) { return fmt::format("{:.1f}%", v * 100); }
std::string ci(const json& pair) { return fmt::format("{:.1f}–{:.1f}%", pair[0].get<double>() * 100, pair[1].get<double>() * 100); }

double csv_num(const std::map<std::string, std::string>& row, const std::string& col) {
  EXPECT_FALSE(row.at(col).empty()) << col;
  return row.at(col).empty() ? std::nan("") : std::stod(row.at(col));
}

/// The scorecard of a real run: near the top (before the key metrics), its four parts with
/// result.json's numbers.
void expect_scorecard_of(const std::string& html, const json& r) {
  const std::string sc = element(html, "scorecard");
  ASSERT_FALSE(sc.empty());
  EXPECT_LT(html.find("id=\"scorecard\""), html.find("Key metrics"));
  for (const char* part : {"correctness", "performance", "cost", "reliability"}) {
    EXPECT_NE(sc.find(fmt::format("data-part=\"{}\"", part)), std::string::npos) << part;
  }
  const json& card = r["scorecard"];
  EXPECT_NE(sc.find("<dd data-key=\"accuracy\">" + pct(card["correctness"]["accuracy"].get<double>()) +
                    "<span class=\"ci\">95% CI " + ci(card["correctness"]["accuracy_ci95"]) + "</span>"),
            std::string::npos)
      << sc;
  EXPECT_NE(sc.find("<dd data-key=\"exact_match_rate\">" + pct(card["correctness"]["exact_match_rate"].get<double>())),
            std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"correct_goodput\">" + format_number(card["performance"]["correct_goodput"].get<double>()) +
                    " <span class=\"u\">req/s</span>"),
            std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"p99_ttft_ms\">" + format_number(card["performance"]["p99_ttft_ms"].get<double>())),
            std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"error_rate\">" + pct(card["reliability"]["error_rate"].get<double>())), std::string::npos);
  // No price was given: the cost is null, shown as a dash.
  EXPECT_TRUE(card["cost"]["per_million_output_tokens"].is_null());
  EXPECT_NE(sc.find("<dd data-key=\"per_million_output_tokens\"><span class=\"null\""), std::string::npos);

}

/// A result.json filled in by hand: two graders and subsets, an accuracy SLO that fails, a
/// tokenizer comparison, a hostile excerpt, a scorecard with nulls, errors and an INVALID run.
json hand_written(json r, const std::string& hostile) {
  const json group = {{"graded", 100}, {"correct", 80}, {"incorrect", 15}, {"unparsed", 5}, {"accuracy", 0.8},
                      {"accuracy_ci95", {0.711, 0.866}}, {"unparsed_rate", 0.05}};
  r["accuracy"] = {{"graded", 200}, {"correct", 176}, {"incorrect", 20}, {"unparsed", 4}, {"accuracy", 0.88},
                   {"accuracy_ci95", {0.8276, 0.918}}, {"unparsed_rate", 0.02}, {"confidence", 0.95}, {"failed_requests", 3},
                   {"by_grader", {{"number", group}, {"choice", group}}},
                   {"by_subset", {{"algebra <b>", group}, {"geometry", group}}},
                   {"correct_goodput", {{"requests", 150}, {"rate_per_s", 12.5}, {"meaning", "met the SLO and correct"}}},
                   {"slo", {{"min_accuracy", 0.9}, {"verdict", "FAIL"}, {"method", "Wilson interval against the bound"}}}};
  r["slo"]["spec"] = "ttft:500ms,accuracy:0.9";
  r["slo"]["accuracy"] = r["accuracy"]["slo"];
  r["slo"]["latency_verdict"] = "PASS";
  r["slo"]["verdict"] = "FAIL";
  r["consistency"] = {{"method", "tokenizer"}, {"compared", 50}, {"identical", 40}, {"exact_match_rate", 0.8},
                      {"exact_match_ci95", {0.67, 0.89}}, {"confidence", 0.95}, {"tested_requests", 50},
                      {"first_divergence",
                       {{"count", 10}, {"min", 2}, {"p50", 7}, {"p90", 20}, {"max", 31}, {"mean", 9.5},
                        {"histogram", {{{"from", 2}, {"to", 9}, {"count", 6}}, {{"from", 10}, {"to", 17}, {"count", 3}},
                                       {{"from", 18}, {"to", 31}, {"count", 1}}}}}},
                      {"diverged", {{{"item", 4}, {"position", 7}, {"reference_excerpt", "The answer is 12."},
                                     {"output_excerpt", hostile}}}},
                      {"reference", {{"kind", "run"}, {"dir", "/runs/baseline"}}}};
  r["scorecard"] = {{"correctness", {{"accuracy", 0.88}, {"accuracy_ci95", {0.8276, 0.918}}, {"unparsed_rate", 0.02},
                                     {"exact_match_rate", nullptr}, {"exact_match_ci95", nullptr}}},
                    {"performance", {{"request_goodput", 14.0}, {"correct_goodput", 12.5}, {"request_throughput", 15.25},
                                     {"p99_ttft_ms", 123.4}, {"p99_tpot_ms", nullptr}, {"p99_e2el_ms", 2345.0}, {"slo_verdict", "FAIL"}}},
                    {"cost", {{"per_million_output_tokens", 1.25}, {"energy_per_output_token_j", nullptr}}},
                    {"reliability", {{"error_rate", 0.015}, {"errors_by_class", {{"timeout", 2}, {"http_5xx", 1}}}, {"valid", false}}}};
  return r;
}

class CorrectnessReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    root_ = fs::path(tmp_->path());
    chromium_ = find_chromium();
    // Wrong answers and divergent continuations: accuracy below 100%, some outputs not identical.
    server_ = new ServerHandle(llmload::testing::start_server(
        {"--latency-model", "fixed", "--ttft", "3ms", "--itl", "1ms", "--wrong-answer-rate", "0.15", "--divergence-rate", "0.02"}));
    const std::vector<std::string> graded = {"--base-url", server_->base_url, "--dataset-name", "gsm8k", "--dataset-path",
                                             arithmetic_set(), "--output-tokens", "32", "--seed", "5", "--consistency"};
    auto with = [&](std::vector<std::string> a, const std::vector<std::string>& extra) {
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    const RunResult run = llmload(with({"run"}, with(graded, {"--concurrency", "8", "--num-requests", "120", "--consistency-requests",
                                                              "60", "--slo", "ttft:500ms,accuracy:0.5", "--output",
                                                              (root_ / "graded").string()})));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    const RunResult sweep = llmload(with({"sweep"}, with(graded, {"--concurrency", "2,8", "--num-requests", "60",
                                                                  "--consistency-requests", "30", "--slo", "accuracy:0.5",
                                                                  "--output", (root_ / "sweep").string()})),
                                    180s);
    EXPECT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
    // A run of synthesized prompts: nothing graded, nothing compared.
    const RunResult plain = llmload({"run", "--base-url", server_->base_url, "--concurrency", "4", "--num-requests", "40",
                                     "--input-tokens", "32", "--output-tokens", "16", "--output", (root_ / "plain").string()});
    EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  }
  static void TearDownTestSuite() {
    if (const char* keep = std::getenv("LLMLOAD_REPORT_KEEP_DIR"); keep != nullptr && *keep != '\0' && tmp_ != nullptr) {
      std::error_code ec;
      const fs::path dst = fs::path(keep) / "correctness";
      fs::remove_all(dst, ec);
      fs::create_directories(keep, ec);
      fs::copy(root_, dst, fs::copy_options::recursive, ec);
    }
    delete server_;
    server_ = nullptr;
    delete tmp_;
    tmp_ = nullptr;
  }
  void SetUp() override {
    for (const char* d : {"graded", "sweep", "plain"}) {
      if (!fs::exists(root_ / d / "result.json") && !fs::exists(root_ / d / "sweep.json")) {
        GTEST_FAIL() << "the artifacts could not be generated (" << d << ")";
      }
    }
  }
  /// A copy of one artifact in a fresh directory, without its report.
  static fs::path copy_of(const std::string& from, const std::string& name) {
    const fs::path d = root_ / name;
    fs::remove_all(d);
    fs::copy(root_ / from, d, fs::copy_options::recursive);
    for (const char* f : {"report.html", "summary.md", "summary.csv"}) fs::remove(d / f);
    return d;
  }
  static json result_of(const fs::path& d) { return json::parse(read_file((d / "result.json").string())); }
  static std::string report(const fs::path& d) {
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return read_file((d / "report.html").string());
  }

  void GradedRunShowsTheScorecardAndCorrectness();
  void CsvAndMarkdownCarryTheCorrectness();
  void HandWrittenShapesRender();
  void ArtifactsWithoutThemHaveNoSection();
  void SweepShowsAccuracyVersusLoad();
  void HandWrittenSweepPointsGetTheChart();

  static TempDir* tmp_;
  static ServerHandle* server_;
  static fs::path root_;
  static std::string chromium_;
};
TempDir* CorrectnessReport::tmp_ = nullptr;
ServerHandle* CorrectnessReport::server_ = nullptr;
fs::path CorrectnessReport::root_;
std::string CorrectnessReport::chromium_;

void CorrectnessReport::GradedRunShowsTheScorecardAndCorrectness() {
  const fs::path dir = copy_of("graded", "graded-html");
  const std::string html = report(dir);
  expect_no_external_resources(html);
  const json r = result_of(dir);
  const json& acc = r["accuracy"];
  const json& con = r["consistency"];
  ASSERT_TRUE(acc.is_object());
  ASSERT_TRUE(con.is_object());
  ASSERT_GT(acc["incorrect"].get<int>(), 0) << "the error model is on: some answers are wrong";

  expect_scorecard_of(html, r);

  // Accuracy: the headline with its interval, the per-grader table, correct goodput, the SLO verdict.
  const std::string a = element(html, "accuracy");
  EXPECT_NE(a.find(pct(acc["accuracy"].get<double>()) + " <span class=\"u\">graded correct</span>"), std::string::npos) << a;
  EXPECT_NE(a.find("95% CI " + ci(acc["accuracy_ci95"])), std::string::npos);
  EXPECT_NE(a.find(fmt::format("{} correct · {} incorrect · {} unparsed", format_number(acc["correct"].get<double>()),
                               format_number(acc["incorrect"].get<double>()), format_number(acc["unparsed"].get<double>()))),
            std::string::npos);
  EXPECT_NE(a.find(format_number(acc["correct_goodput"]["rate_per_s"].get<double>())), std::string::npos);
  const json& g = acc["by_grader"]["number"];
  EXPECT_NE(element(html, "accuracy-by-grader")
                .find(fmt::format("<td class=\"l\">number</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                                  format_number(g["graded"].get<double>()), format_number(g["correct"].get<double>()),
                                  format_number(g["incorrect"].get<double>()), format_number(g["unparsed"].get<double>()),
                                  pct(g["accuracy"].get<double>()), ci(g["accuracy_ci95"]))),
            std::string::npos)
      << element(html, "accuracy-by-grader");
  const std::string verdict = acc["slo"]["verdict"].get<std::string>();
  EXPECT_NE(element(html, "accuracy-slo").find("data-verdict=\"" + verdict + "\""), std::string::npos);
  EXPECT_NE(element(html, "accuracy-slo").find("accuracy SLO ≥ 50.0%: " + verdict), std::string::npos);
  EXPECT_NE(element(html, "slo-spec").find("accuracy ≥ 50.0% " + verdict), std::string::npos) << element(html, "slo-spec");

  // Consistency: the exact-match rate with its interval, the count compared, the method.
  const std::string c = element(html, "consistency");
  EXPECT_NE(c.find(pct(con["exact_match_rate"].get<double>()) + " <span class=\"u\">exact match</span>"), std::string::npos) << c;
  EXPECT_NE(c.find("95% CI " + ci(con["exact_match_ci95"])), std::string::npos);
  EXPECT_NE(c.find(format_number(con["compared"].get<double>()) + " <span class=\"u\">requests</span>"), std::string::npos);
  EXPECT_NE(c.find(">" + con["method"].get<std::string>() + " <"), std::string::npos);
  // The first-divergence histogram, one bar per bin; the diverged requests, one row each, escaped.
  const json& fd = con["first_divergence"];
  ASSERT_TRUE(fd.is_object()) << "the divergence model is on: some outputs diverge";
  const std::string hist = figure(html, "chart-first-divergence");
  ASSERT_FALSE(hist.empty());
  EXPECT_EQ(count(hist, "<rect class=\"bar\""), fd["histogram"].size());
  const json& bin = fd["histogram"][0];
  EXPECT_NE(hist.find(fmt::format("{}–{}: {} request", format_number(bin["from"].get<double>()), format_number(bin["to"].get<double>()),
                                  format_number(bin["count"].get<double>()))),
            std::string::npos);
  const std::string dv = element(html, "diverged");
  EXPECT_EQ(count(dv, "<tr data-item="), con["diverged"].size());
  for (const auto& d : con["diverged"]) {
    EXPECT_NE(dv.find(fmt::format("<td>{}</td><td>{}</td><td class=\"excerpt\">{}</td><td class=\"excerpt\">{}</td>",
                                  format_number(d["item"].get<double>()), format_number(d["position"].get<double>()),
                                  escaped(d["reference_excerpt"]), escaped(d["output_excerpt"]))),
              std::string::npos)
        << d.dump();
  }

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 9);
  screenshot(chromium_, dir / "report.html", "correctness-report.png", "1400,4200");
}

void CorrectnessReport::CsvAndMarkdownCarryTheCorrectness() {
  const fs::path dir = copy_of("graded", "graded-csv");
  report(dir);
  const json r = result_of(dir);
  const json& acc = r["accuracy"];
  const json& con = r["consistency"];
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  // Exact: the shortest round-trip form of result.json's doubles.
  EXPECT_EQ(csv_num(row, "accuracy"), acc["accuracy"].get<double>());
  EXPECT_EQ(csv_num(row, "accuracy_ci_lo"), acc["accuracy_ci95"][0].get<double>());
  EXPECT_EQ(csv_num(row, "accuracy_ci_hi"), acc["accuracy_ci95"][1].get<double>());
  EXPECT_EQ(csv_num(row, "graded"), acc["graded"].get<double>());
  EXPECT_EQ(csv_num(row, "unparsed_rate"), acc["unparsed_rate"].get<double>());
  EXPECT_EQ(csv_num(row, "correct_goodput"), acc["correct_goodput"]["rate_per_s"].get<double>());
  EXPECT_EQ(row.at("accuracy_slo_verdict"), acc["slo"]["verdict"]);
  EXPECT_EQ(csv_num(row, "exact_match_rate"), con["exact_match_rate"].get<double>());
  EXPECT_EQ(csv_num(row, "exact_match_ci_lo"), con["exact_match_ci95"][0].get<double>());
  EXPECT_EQ(csv_num(row, "exact_match_ci_hi"), con["exact_match_ci95"][1].get<double>());
  EXPECT_EQ(csv_num(row, "compared"), con["compared"].get<double>());
  EXPECT_EQ(csv_num(row, "first_divergence_p50"), con["first_divergence"]["p50"].get<double>());
  EXPECT_EQ(csv_num(row, "error_rate"), r["scorecard"]["reliability"]["error_rate"].get<double>());
  EXPECT_EQ(row.at("energy_per_output_token_j"), "");  // null: no energy counter

  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("## Scorecard"), std::string::npos) << md;
  EXPECT_NE(md.find("| **Correctness** | accuracy " + pct(acc["accuracy"].get<double>()) + " (95% CI " + ci(acc["accuracy_ci95"]) + ")"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| **Cost** | per 1M output tokens —; "), std::string::npos);
  EXPECT_NE(md.find("## Correctness"), std::string::npos);
  EXPECT_NE(md.find(fmt::format("- **Accuracy**: {} (95% CI {}), {} of {} graded correct", pct(acc["accuracy"].get<double>()),
                                ci(acc["accuracy_ci95"]), format_number(acc["correct"].get<double>()),
                                format_number(acc["graded"].get<double>()))),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- **Accuracy SLO**: ≥ 50.0%: " + acc["slo"]["verdict"].get<std::string>()), std::string::npos);
  EXPECT_NE(md.find(fmt::format("- **Consistency**: {} identical (95% CI {}), {} of {} compared, by {}",
                                pct(con["exact_match_rate"].get<double>()), ci(con["exact_match_ci95"]),
                                format_number(con["identical"].get<double>()), format_number(con["compared"].get<double>()),
                                con["method"].get<std::string>())),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| number | " + format_number(acc["by_grader"]["number"]["graded"].get<double>()) + " | "), std::string::npos);
  EXPECT_EQ(count(md, "\n| " + format_number(con["diverged"][0]["item"].get<double>()) + " | "), 1u);
}

/// The hand-written shapes (hand_written) on the page, in summary.md and summary.csv; then a
/// consistency with nothing compared.
void CorrectnessReport::HandWrittenShapesRender() {
  const fs::path dir = copy_of("plain", "hand-written");
  const std::string hostile = "<script>alert('x')</script> & | *b* `c` [l](u)";
  json r = hand_written(result_of(dir), hostile);
  write_text(dir / "result.json", r.dump(2));
  const json first = r;
  const std::string html = report(dir);
  expect_no_external_resources(html);
  const std::string sc = element(html, "scorecard");
  EXPECT_NE(sc.find("<dd data-key=\"accuracy\">88.0%<span class=\"ci\">95% CI 82.8–91.8%</span></dd>"), std::string::npos) << sc;
  EXPECT_NE(sc.find("<dd data-key=\"exact_match_rate\"><span class=\"null\""), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"p99_tpot_ms\"><span class=\"null\""), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"p99_e2el_ms\">2345 <span class=\"u\">ms</span>"), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"per_million_output_tokens\">$1.25</dd>"), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"errors_by_class\">http_5xx 1, timeout 2</dd>"), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"valid\"><span class=\"badge invalid\">INVALID</span>"), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"slo_verdict\"><span class=\"badge fail\">FAIL</span>"), std::string::npos);
  EXPECT_NE(element(html, "accuracy-slo").find("accuracy SLO ≥ 90.0%: FAIL"), std::string::npos);
  EXPECT_NE(element(html, "slo-spec").find("latency PASS, accuracy ≥ 90.0% FAIL"), std::string::npos);
  EXPECT_EQ(count(element(html, "accuracy-by-grader"), "<tr data-name="), 2u);
  const std::string subsets = element(html, "accuracy-by-subset");
  EXPECT_NE(subsets.find("<td class=\"l\">algebra &lt;b&gt;</td><td>100</td><td>80</td><td>15</td><td>5</td><td>80.0%</td>"
                         "<td>71.1–86.6%</td><td>5.0%</td>"),
            std::string::npos)
      << subsets;
  EXPECT_NE(element(html, "consistency").find("token ids"), std::string::npos);
  EXPECT_NE(html.find("Reference: the saved run /runs/baseline."), std::string::npos);
  const std::string hist = figure(html, "chart-first-divergence");
  EXPECT_EQ(count(hist, "<rect class=\"bar\""), 3u);
  EXPECT_NE(hist.find("first divergent token (position)"), std::string::npos);
  EXPECT_NE(hist.find("token 10–17: 3 requests"), std::string::npos);
  // The excerpt is text, never markup.
  EXPECT_NE(element(html, "diverged").find("<td class=\"excerpt\">" + escaped(hostile) + "</td>"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);

  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("| **Reliability** | error rate 1.5%; errors by class http_5xx 1, timeout 2; validity INVALID |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| algebra &lt;b&gt; | 100 | 80 | 15 | 5 | 80.0% | 71.1–86.6% | 5.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 | 7 | The answer is 12. | &lt;script&gt;alert('x')&lt;/script&gt; &amp; \\| \\*b\\* \\`c\\` \\[l\\](u) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 10–17 | 3 |"), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("accuracy_slo_verdict"), "FAIL");
  EXPECT_EQ(rows[0].at("first_divergence_p50"), "7");
  EXPECT_EQ(rows[0].at("error_rate"), "0.015");

  // Nothing to compare: the section says so.
  r["consistency"] = {{"method", "words"}, {"compared", 0}, {"identical", 0}, {"exact_match_rate", nullptr},
                      {"exact_match_ci95", nullptr}, {"first_divergence", nullptr}, {"diverged", json::array()}};
  write_text(dir / "result.json", r.dump(2));
  const std::string html2 = report(dir);
  EXPECT_NE(element(html2, "consistency").find("Nothing to compare"), std::string::npos);
  EXPECT_TRUE(figure(html2, "chart-first-divergence").empty());

  if (chromium_.empty()) return;
  write_text(dir / "result.json", first.dump());  // the first shape again, for the browser
  report(dir);
  expect_clean_render(render(chromium_, dir / "report.html"), 5);
}

/// An artifact from before issue 18 (no accuracy, consistency or scorecard) renders as before; a
/// new run of synthesized prompts has a scorecard with dashes and no Correctness section.
void CorrectnessReport::ArtifactsWithoutThemHaveNoSection() {
  const fs::path dir = copy_of("plain", "old-shape");
  json r = result_of(dir);
  for (const char* k : {"accuracy", "consistency", "scorecard"}) r.erase(k);
  if (r["slo"].is_object()) {
    r["slo"].erase("accuracy");
    r["slo"].erase("latency_verdict");
  }
  write_text(dir / "result.json", r.dump(2));
  const std::string html = report(dir);
  for (const char* id : {"id=\"scorecard\"", "id=\"correctness\"", "Correctness</h2>", "Scorecard</h2>", "chart-first-divergence"}) {
    EXPECT_EQ(html.find(id), std::string::npos) << id;
  }
  EXPECT_NE(html.find("id=\"latency-table\""), std::string::npos);  // the rest is there
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_EQ(md.find("## Scorecard"), std::string::npos);
  EXPECT_EQ(md.find("## Correctness"), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  for (const char* col : {"accuracy", "accuracy_ci_lo", "exact_match_rate", "compared", "error_rate"}) {
    EXPECT_EQ(rows[0].at(col), "") << col;
  }

  const fs::path plain = copy_of("plain", "plain-html");
  const json pr = result_of(plain);
  EXPECT_TRUE(pr.value("accuracy", json()).is_null());
  EXPECT_TRUE(pr.value("consistency", json()).is_null());  // null or absent
  const std::string ph = report(plain);
  EXPECT_EQ(ph.find("id=\"correctness\""), std::string::npos);
  const std::string sc = element(ph, "scorecard");
  ASSERT_FALSE(sc.empty());
  EXPECT_NE(sc.find("<dd data-key=\"accuracy\"><span class=\"null\""), std::string::npos);
  EXPECT_NE(sc.find("<dd data-key=\"request_throughput\">" + format_number(pr["request_throughput"].get<double>())),
            std::string::npos);
}

/// The real sweep: sweep.json's per-point accuracy and identical rate in the chart, the points
/// table, summary.csv and summary.md.
void CorrectnessReport::SweepShowsAccuracyVersusLoad() {
  const fs::path dir = root_ / "sweep";
  const std::string html = report(dir);
  expect_no_external_resources(html);
  const json sj = json::parse(read_file((dir / "sweep.json").string()));
  ASSERT_EQ(sj["points"].size(), 2u);
  const std::string fig = figure(html, "chart-correctness-by-load");
  ASSERT_FALSE(fig.empty());
  EXPECT_NE(fig.find("accuracy SLO 50.0%"), std::string::npos);  // from the SLO spec
  // Beside the latency-throughput charts: right after them.
  EXPECT_LT(html.find("id=\"chart-latency-throughput-e2e\""), html.find("id=\"chart-correctness-by-load\""));
  EXPECT_LT(html.find("id=\"chart-correctness-by-load\""), html.find("id=\"chart-goodput\""));
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  const std::string md = read_file((dir / "summary.md").string());
  const std::string table = element(html, "sweep-table");
  for (std::size_t i = 0; i < 2; ++i) {
    const json& p = sj["points"][i];
    ASSERT_TRUE(p["accuracy"].is_object()) << p.dump();
    ASSERT_TRUE(p["consistency"].is_object()) << p.dump();
    for (const char* k : {"accuracy", "consistency"}) {
      const json& e = p[k];
      // The chart's data: [offered, rate in %]; the whisker's tip names the interval and count.
      EXPECT_NE(fig.find(fmt::format("[{:.5g},{:.5g}]", p["offered"].get<double>(), e["rate"].get<double>() * 100)), std::string::npos)
          << k << " " << i << "\n" << fig;
      EXPECT_NE(fig.find("(95% CI " + ci(e["ci95"]) + "), " + format_number(e["n"].get<double>())), std::string::npos) << k;
      const std::string cell = fmt::format("<td data-key=\"{}\">{}<br><span class=\"rng\">[{:.1f}–{:.1f}]</span></td>",
                                           std::string(k) == "accuracy" ? "accuracy" : "identical", pct(e["rate"].get<double>()),
                                           e["ci95"][0].get<double>() * 100, e["ci95"][1].get<double>() * 100);
      EXPECT_NE(table.find(cell), std::string::npos) << cell << "\n" << table;
      EXPECT_NE(md.find(" " + pct(e["rate"].get<double>()) + " [" + ci(e["ci95"]) + "] |"), std::string::npos) << md;
    }
    EXPECT_EQ(csv_num(rows[i], "accuracy"), p["accuracy"]["rate"].get<double>());
    EXPECT_EQ(csv_num(rows[i], "accuracy_ci_lo"), p["accuracy"]["ci95"][0].get<double>());
    EXPECT_EQ(csv_num(rows[i], "exact_match_rate"), p["consistency"]["rate"].get<double>());
    EXPECT_EQ(csv_num(rows[i], "compared"), p["consistency"]["n"].get<double>());
  }
  EXPECT_EQ(count(fig, "class=\"whisker\""), 4u) << fig;  // every rate with its interval
  EXPECT_NE(md.find("| accuracy | identical |"), std::string::npos);
  // Each point's own section has its Correctness (a trials point: pooled).
  EXPECT_NE(html.find("id=\"p0-correctness\""), std::string::npos);
  EXPECT_NE(html.find("id=\"p1-scorecard\""), std::string::npos);

  if (chromium_.empty()) return;
  expect_clean_render(render(chromium_, dir / "report.html"), 20);
  screenshot(chromium_, dir / "report.html", "sweep-correctness-report.png", "1400,3200");
}

/// A sweep.json whose points carry accuracy that their result.json does not (older points): the
/// chart from sweep.json alone; a point without it is left out; a sweep without any has no chart.
void CorrectnessReport::HandWrittenSweepPointsGetTheChart() {
  const fs::path dir = root_ / "sweep-hand";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* p : {"c2", "c4", "c8"}) {
    fs::copy(root_ / "plain", dir / p, fs::copy_options::recursive);
    json r = result_of(dir / p);
    for (const char* k : {"accuracy", "consistency", "scorecard"}) r.erase(k);
    write_text(dir / p / "result.json", r.dump());
  }
  write_text(dir / "sweep.json", R"({"load_kind": "concurrency", "points": [
      {"dir": "c2", "offered": 2, "accuracy": {"rate": 0.9, "ci95": [0.85, 0.94], "n": 200}, "consistency": null},
      {"dir": "c4", "offered": 4, "accuracy": {"rate": 0.75, "ci95": [0.69, 0.8], "n": 200},
       "consistency": {"rate": 0.5, "ci95": [0.4, 0.6], "n": 100}},
      {"dir": "c8", "offered": 8, "accuracy": null, "consistency": null}]})");
  const std::string html = report(dir);
  const std::string fig = figure(html, "chart-correctness-by-load");
  ASSERT_FALSE(fig.empty());
  EXPECT_NE(fig.find("[2,90]"), std::string::npos) << fig;
  EXPECT_NE(fig.find("[4,75]"), std::string::npos);
  EXPECT_NE(fig.find("[4,50]"), std::string::npos);
  EXPECT_EQ(fig.find("[8,"), std::string::npos);  // no rate at 8
  EXPECT_EQ(count(fig, "class=\"whisker\""), 3u);
  EXPECT_NE(fig.find("offered 2 concurrent: accuracy 90.0% (95% CI 85.0–94.0%), 200 graded"), std::string::npos) << fig;
  const std::string table = element(html, "sweep-table");
  EXPECT_NE(table.find("<td data-key=\"accuracy\">75.0%<br><span class=\"rng\">[69.0–80.0]</span></td>"), std::string::npos);
  EXPECT_NE(table.find("<td data-key=\"identical\">–</td>"), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("accuracy"), "0.9");
  EXPECT_EQ(rows[1].at("exact_match_ci_hi"), "0.6");
  EXPECT_EQ(rows[2].at("accuracy"), "");

  // Without any accuracy or consistency: no chart, no columns.
  write_text(dir / "sweep.json", R"({"load_kind": "concurrency", "points": [{"dir": "c2", "offered": 2}, {"dir": "c4", "offered": 4}]})");
  const std::string none = report(dir);
  EXPECT_TRUE(figure(none, "chart-correctness-by-load").empty());
  EXPECT_EQ(element(none, "sweep-table").find("data-key=\"accuracy\""), std::string::npos);
  EXPECT_EQ(element(none, "sweep-table").find(">accuracy</th>"), std::string::npos);
  EXPECT_EQ(read_file((dir / "summary.md").string()).find("| accuracy |"), std::string::npos);
}

// One test: the artifacts are made once (ctest runs each test in a process of its own).
TEST_F(CorrectnessReport, ScorecardCorrectnessAndSweepChart) {
  {
    SCOPED_TRACE("GradedRunShowsTheScorecardAndCorrectness");
    GradedRunShowsTheScorecardAndCorrectness();
  }
  {
    SCOPED_TRACE("CsvAndMarkdownCarryTheCorrectness");
    CsvAndMarkdownCarryTheCorrectness();
  }
  {
    SCOPED_TRACE("HandWrittenShapesRender");
    HandWrittenShapesRender();
  }
  {
    SCOPED_TRACE("ArtifactsWithoutThemHaveNoSection");
    ArtifactsWithoutThemHaveNoSection();
  }
  {
    SCOPED_TRACE("SweepShowsAccuracyVersusLoad");
    SweepShowsAccuracyVersusLoad();
  }
  {
    SCOPED_TRACE("HandWrittenSweepPointsGetTheChart");
    HandWrittenSweepPointsGetTheChart();
  }
  if (chromium_.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs the Debian package): the report.html checks in a "
                    "browser were skipped; everything else ran";
  }
}

}  // namespace
