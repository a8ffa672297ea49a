// compare_runs: conditions that differ (material or not) and metric deltas with intervals.
#include "llmload/analysis/run_compare.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/hdr_log.hpp"

namespace llmload::analysis {
namespace {

using nlohmann::json;

json result(double rate, int completed, const std::string& url) {
  return json{{"completed", completed},
              {"request_throughput", rate},
              {"output_throughput", rate * 64},
              {"request_goodput", rate},
              {"conditions",
               {{"start_time", "2026-11-22T00:00:00Z"},
                {"command_line", {"llmload", "run"}},
                {"seeds", {{"base", 1}}},
                {"endpoint", {{"base_url", url}}},
                {"scenario", {{"request_rate", 10.0}}}}}};
}

const MetricComparison* find(const RunComparison& c, const std::string& m) {
  for (const auto& x : c.metrics) {
    if (x.metric == m) return &x;
  }
  return nullptr;
}

TEST(run_compare, OnlyInformationalDifferencesKeepTheConditionsTheSame) {
  CompareArtifact a{"a", result(10, 1000, "http://h:1"), std::nullopt};
  CompareArtifact b{"b", result(10.1, 1010, "http://h:1"), std::nullopt};
  b.result["conditions"]["start_time"] = "2026-11-22T01:00:00Z";
  b.result["conditions"]["seeds"]["base"] = 2;
  // The workload's seed follows --seed (statistics.md: another --seed for an independent B); a
  // sweep's point records one trial where a plain run records none.
  a.result["conditions"]["workload"]["seed"] = 1;
  b.result["conditions"]["workload"]["seed"] = 2;
  a.result["conditions"]["trials"] = {{"n", 1}, {"pause_s", 0.0}, {"seeds", {1}}};  // as trials.cpp writes it
  // A sweep point's first workload item is a function of its load (scaling compares points of
  // different loads): the load is the condition, compared on its own.
  a.result["conditions"]["workload"]["first_item"] = 4294967296;
  b.result["conditions"]["workload"]["first_item"] = 8589934592;
  const RunComparison c = compare_runs(a, b);
  EXPECT_TRUE(c.same_conditions);
  ASSERT_EQ(c.conditions.size(), 7u);
  for (const auto& d : c.conditions) EXPECT_FALSE(d.material) << d.key;
  // 1000 vs 1010 completions: Poisson intervals overlap, not significant.
  const auto* t = find(c, "request_throughput");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->delta.significant);
  EXPECT_EQ(t->delta.method, CompareMethod::kQuantileCiOverlap);
  EXPECT_EQ(to_json(c)["label"], "same conditions");
}

TEST(run_compare, AMaterialDifferenceLabelsTheComparison) {
  CompareArtifact a{"a", result(10, 1000, "http://h:1"), std::nullopt};
  CompareArtifact b{"b", result(20, 2000, "http://h:2"), std::nullopt};
  b.result["conditions"]["scenario"]["request_rate"] = 20.0;
  b.result["conditions"]["scenario"].erase("request_rate");
  b.result["conditions"]["scenario"]["concurrency"] = 8;
  const RunComparison c = compare_runs(a, b);
  EXPECT_FALSE(c.same_conditions);
  std::set<std::string> keys;
  for (const auto& d : c.conditions) keys.insert(d.key);
  EXPECT_TRUE(keys.count("endpoint.base_url"));
  EXPECT_TRUE(keys.count("scenario.request_rate"));
  EXPECT_TRUE(keys.count("scenario.concurrency"));
  for (const auto& d : c.conditions) {
    if (d.key == "scenario.concurrency") {
      EXPECT_EQ(d.a, "(absent)");
    }
  }
  const auto* t = find(c, "request_throughput");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->delta.significant) << "10 vs 20 req/s over 1000-2000 completions";
  const std::string text = format_comparison(c, "A", "B");
  EXPECT_NE(text.find("comparison across different conditions"), std::string::npos) << text;
}

// A trace replay recorded --input-tokens/--output-tokens/--request-rate it did not use; a newer
// one records them as null. Against each other: no difference of conditions. A run that used a
// rate against one that did not still differs, in its arrivals.
TEST(run_compare, ASettingOneRunDidNotUseIsNoDifferenceOfItsOwn) {
  CompareArtifact old_trace{"a", result(10, 1000, "http://h:1"), std::nullopt};
  old_trace.result["conditions"]["scenario"]["input_tokens"] = 128;
  old_trace.result["conditions"]["scenario"]["arrival_process"] = "timestamps";
  CompareArtifact new_trace{"b", result(10, 1000, "http://h:1"), std::nullopt};
  new_trace.result["conditions"]["scenario"]["request_rate"] = nullptr;
  new_trace.result["conditions"]["scenario"]["input_tokens"] = nullptr;
  new_trace.result["conditions"]["scenario"]["arrival_process"] = "timestamps";
  const RunComparison same = compare_runs(old_trace, new_trace);
  EXPECT_TRUE(same.same_conditions);
  EXPECT_EQ(same.conditions.size(), 2u) << "still listed, as informational";
  // Another input length that both used is a difference.
  CompareArtifact longer = old_trace;
  longer.result["conditions"]["scenario"]["input_tokens"] = 1024;
  EXPECT_FALSE(compare_runs(old_trace, longer).same_conditions);
  // A Poisson run against the replay: its arrivals differ.
  CompareArtifact poisson = old_trace;
  poisson.result["conditions"]["scenario"]["arrival_process"] = "poisson";
  EXPECT_FALSE(compare_runs(poisson, new_trace).same_conditions);
}

TEST(run_compare, PercentilesUseTheHistogramsIntervals) {
  auto hlog_with = [](std::int64_t base_us) {
    HlogFile f;
    HlogInterval i;
    i.tag = "ttft";
    i.histogram = HdrHistogram(1, 3'600'000'000, 3);
    for (int k = 0; k < 5000; ++k) i.histogram.record(base_us + (k % 100) * 10);
    f.intervals.push_back(std::move(i));
    return f;
  };
  CompareArtifact a{"a", result(10, 5000, "u"), hlog_with(20'000)};
  CompareArtifact same{"same", result(10, 5000, "u"), hlog_with(20'000)};
  CompareArtifact slower{"slower", result(10, 5000, "u"), hlog_with(40'000)};
  const RunComparison c_same = compare_runs(a, same);
  const auto* p = find(c_same, "ttft_p99_ms");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->delta.significant);
  const RunComparison c = compare_runs(a, slower);
  const auto* q = find(c, "ttft_p50_ms");
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(q->delta.significant);
  EXPECT_NEAR(q->delta.delta, 20.0, 0.1);
  EXPECT_EQ(find(c, "tpot_p50_ms"), nullptr) << "no tpot histogram: not compared";
}

TEST(run_compare, PerTrialValuesUseWelch) {
  CompareArtifact a{"a", result(10, 1000, "u"), std::nullopt};
  CompareArtifact b{"b", result(12, 1200, "u"), std::nullopt};
  a.result["trials"] = json::array({{{"request_throughput", 10.0}}, {{"request_throughput", 10.2}}, {{"request_throughput", 9.9}}});
  b.result["trials"] = json::array({{{"request_throughput", 12.0}}, {{"request_throughput", 12.1}}, {{"request_throughput", 11.8}}});
  const RunComparison c = compare_runs(a, b);
  const auto* t = find(c, "request_throughput");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->delta.method, CompareMethod::kWelchT);
  EXPECT_TRUE(t->delta.significant);
}


HlogFile ttft_hlog(std::int64_t base_us, int n = 5000) {
  HlogFile f;
  HlogInterval i;
  i.tag = "ttft";
  i.histogram = HdrHistogram(1, 3'600'000'000, 3);
  for (int k = 0; k < n; ++k) i.histogram.record(base_us + (k % 100) * 10);
  f.intervals.push_back(std::move(i));
  return f;
}

// Two big runs 2% apart: the intervals separate (the test alone would say "significant"), but
// 2% is below the default 5% minimum effect; with --min-effect 1% it is significant.
TEST(run_compare, TheMinimumEffectDecidesSmallDifferences) {
  CompareArtifact a{"a", result(10, 5000, "u"), ttft_hlog(20'000)};
  CompareArtifact b{"b", result(10, 5000, "u"), ttft_hlog(20'400)};
  const RunComparison c = compare_runs(a, b);
  const auto* p = find(c, "ttft_p50_ms");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->delta.statistically_significant) << p->delta.explanation;
  EXPECT_FALSE(p->delta.significant);
  EXPECT_TRUE(p->delta.below_threshold);
  EXPECT_NEAR(p->delta.threshold, 0.05 * p->delta.a, 1e-9);
  const std::string text = format_comparison(c, "A", "B");
  EXPECT_EQ(text.find("YES"), std::string::npos) << text;
  EXPECT_NE(text.find("no (< thr)"), std::string::npos) << text;
  EXPECT_NE(text.find("5% of A (--min-effect)"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(to_json(c)["min_effect"].get<double>(), 0.05);

  const RunComparison strict = compare_runs(a, b, CompareSettings{0.01});
  EXPECT_TRUE(find(strict, "ttft_p50_ms")->delta.significant);
  // Identical histograms: nothing significant at any minimum effect.
  const RunComparison same = compare_runs(a, a, CompareSettings{0.0});
  for (const auto& m : same.metrics) EXPECT_FALSE(m.delta.significant) << m.metric;
  // The resolution is the histogram bucket of the value: 16 us at 20 ms.
  EXPECT_NEAR(find(same, "ttft_p50_ms")->delta.resolution, 0.016, 1e-12);
}

TEST(run_compare, ShowsBothSidesValidityAndSloVerdict) {
  CompareArtifact a{"a", result(10, 1000, "u"), std::nullopt};
  CompareArtifact b{"b", result(10, 1000, "u"), std::nullopt};
  a.result["validity"] = {{"valid", true}, {"verdict", "VALID"}, {"reasons", json::array()}};
  a.result["slo"] = {{"spec", "ttft:500ms"}, {"verdict", "PASS"}};
  b.result["validity"] = {{"valid", false},
                          {"verdict", "INVALID"},
                          {"reasons", json::array({{{"code", "schedule_lag"}, {"message", "the client fell behind"}},
                                                   {{"code", "error_rate"}, {"message", "12% failed"}}})}};
  b.result["slo"] = {{"spec", "ttft:500ms"}, {"verdict", "FAIL"}};
  const RunComparison c = compare_runs(a, b);
  EXPECT_EQ(c.a.validity, "VALID");
  EXPECT_EQ(c.b.validity, "INVALID");
  ASSERT_EQ(c.b.reasons.size(), 2u);
  const std::string text = format_comparison(c, "A", "B");
  EXPECT_NE(text.find("A: VALID, SLO ttft:500ms: PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("B: INVALID (schedule_lag: the client fell behind; error_rate: 12% failed), SLO ttft:500ms: FAIL"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("B is INVALID"), std::string::npos) << text;
  const json j = to_json(c);
  EXPECT_EQ(j["a"]["validity"], "VALID");
  EXPECT_EQ(j["b"]["slo_verdict"], "FAIL");
  EXPECT_EQ(j["b"]["validity_reasons"].size(), 2u);
  // A trials artifact's reasons, one per trial: each text once, with its trials.
  CompareArtifact trials{"t", result(10, 1000, "u"), std::nullopt};
  trials.result["validity"] = {{"valid", false},
                               {"verdict", "INVALID"},
                               {"reasons", json::array({{{"trial", 1}, {"code", "too_few_samples"}, {"message", "40 < 100"}},
                                                        {{"trial", 2}, {"code", "too_few_samples"}, {"message", "40 < 100"}},
                                                        {{"trial", 2}, {"code", "error_rate"}, {"message", "9%"}}})}};
  const SideVerdicts tv = side_verdicts(trials.result);
  ASSERT_EQ(tv.reasons.size(), 2u);
  EXPECT_EQ(tv.reasons[0], "trials 1, 2: too_few_samples: 40 < 100");
  EXPECT_EQ(tv.reasons[1], "trial 2: error_rate: 9%");
  EXPECT_EQ(format_verdicts(tv, true), "INVALID (too_few_samples; error_rate), no SLO");
  // No validity and no SLO (an old artifact): said so, not invented.
  CompareArtifact old{"old", result(10, 1000, "u"), std::nullopt};
  const std::string t2 = format_comparison(compare_runs(old, old), "A", "B");
  EXPECT_NE(t2.find("A: validity unknown (the artifact has none), no SLO"), std::string::npos) << t2;
  EXPECT_TRUE(to_json(compare_runs(old, old))["a"]["slo_verdict"].is_null());
}

// The note about percentiles never contradicts the table: trials artifacts (no latency.hlog at
// their top) compare percentiles by Welch and get no note; runs without histograms get the note
// and no percentile rows.
TEST(run_compare, NotesAgreeWithTheTable) {
  CompareArtifact a{"a", result(10, 1000, "u"), std::nullopt};
  CompareArtifact b{"b", result(10, 1000, "u"), std::nullopt};
  const RunComparison none = compare_runs(a, b);
  EXPECT_EQ(find(none, "ttft_p99_ms"), nullptr);
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("A and B have no latency.hlog"), std::string::npos) << none.notes[0];
  EXPECT_NE(none.notes[0].find("ttft_p99_ms"), std::string::npos);

  a.result["trials"] = json::array({{{"p99_ttft_ms", 50.0}, {"request_throughput", 10.0}},
                                    {{"p99_ttft_ms", 51.0}, {"request_throughput", 10.1}}});
  b.result["trials"] = a.result["trials"];
  const RunComparison t = compare_runs(a, b);
  const auto* p = find(t, "ttft_p99_ms");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->delta.method, CompareMethod::kWelchT);
  const std::string text = format_comparison(t, "A", "B");
  EXPECT_EQ(text.find("no latency.hlog"), std::string::npos) << text;
  // A run with histograms against trials with per-trial values: compared (overlap with the trials' CI).
  CompareArtifact run{"run", result(10, 5000, "u"), ttft_hlog(50'000)};
  const RunComparison mixed = compare_runs(run, a);
  const auto* m = find(mixed, "ttft_p99_ms");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->delta.method, CompareMethod::kQuantileCiOverlap);
}

// --- sweeps on disk ----------------------------------------------------------------------------

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = fs::temp_directory_path() / ("llmload-run-compare-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A sweep point as `llmload sweep` writes it: a trials artifact of one trial, whose histograms are
// in trial-1/latency.hlog.
void write_point(const fs::path& dir, double rate, double throughput, std::int64_t ttft_us, const std::string& verdict,
                 bool valid) {
  json r = result(throughput, 2000, "http://h:1");
  r["conditions"]["scenario"]["request_rate"] = rate;
  r["artifact"] = "trials";
  r["trials"] = json::array({{{"trial", 1}, {"dir", "trial-1"}, {"request_throughput", throughput}}});
  r["validity"] = {{"valid", valid},
                   {"verdict", valid ? "VALID" : "INVALID"},
                   {"reasons", valid ? json::array() : json::array({{{"code", "schedule_lag"}, {"message", "behind"}}})}};
  r["slo"] = {{"spec", "ttft:100ms"}, {"verdict", verdict}};
  write_file(dir / "result.json", r.dump());
  std::ostringstream h;
  HlogWriter w(h);
  w.write_header("test", 1.7e9);
  w.write_legend();
  HdrHistogram hist(1, 3'600'000'000, 3);
  for (int k = 0; k < 2000; ++k) hist.record(ttft_us + (k % 100) * 10);
  w.write_interval(hist, 0, 10, "ttft");
  write_file(dir / "trial-1" / "latency.hlog", h.str());
}

void write_sweep(const fs::path& dir, const std::vector<double>& rates, const json& capacity) {
  json pts = json::array();
  for (double r : rates) pts.push_back({{"dir", fmt::format("rate-{:g}", r)}, {"offered", r}});
  write_file(dir / "sweep.json", json{{"artifact", "sweep"}, {"load_kind", "rate"}, {"slo", "ttft:100ms"}, {"points", pts},
                                      {"capacity", capacity}}
                                     .dump());
}

TEST(run_compare, SweepsCompareCurvesAndCapacities) {
  TempDir t;
  const fs::path a = t.path / "a";
  const fs::path b = t.path / "b";
  // A: 10, 20 pass, 40 fails; the search's bracket [20, 40).
  write_point(a / "rate-10", 10, 10.0, 20'000, "PASS", true);
  write_point(a / "rate-20", 20, 20.0, 40'000, "PASS", true);
  write_point(a / "rate-40", 40, 30.0, 200'000, "FAIL", false);
  write_sweep(a, {10, 20, 40}, {{"highest_pass", 20}, {"lowest_fail", 40}, {"goodput_at_capacity", 19.5}});
  // B: the same at 10; at 20 TTFT doubled; 30 only in B; no capacity object: from the verdicts.
  write_point(b / "rate-10", 10, 10.0, 20'000, "PASS", true);
  write_point(b / "rate-20", 20, 20.0, 80'000, "PASS", true);
  write_point(b / "rate-30", 30, 28.0, 150'000, "FAIL", true);
  write_sweep(b, {10, 20, 30}, nullptr);

  EXPECT_EQ(detect_compare_artifact(a.string()), CompareArtifactKind::kSweep);
  EXPECT_EQ(detect_compare_artifact((a / "rate-10").string()), CompareArtifactKind::kRun);
  const SweepArtifact sa = load_compare_sweep(a.string());
  ASSERT_EQ(sa.points.size(), 3u);
  ASSERT_TRUE(sa.points[0].run.hlog.has_value()) << "a one-trial point's histograms come from trial-1";

  const SweepComparison c = compare_sweeps(sa, load_compare_sweep(b.string()));
  ASSERT_EQ(c.points.size(), 4u);  // 10, 20, 30, 40
  EXPECT_TRUE(c.points[0].in_a && c.points[0].in_b);
  for (const auto& m : c.points[0].run.metrics) EXPECT_FALSE(m.delta.significant) << "identical point: " << m.metric;
  const MetricComparison* ttft20 = find(c.points[1].run, "ttft_p50_ms");
  ASSERT_NE(ttft20, nullptr);
  EXPECT_TRUE(ttft20->delta.significant);
  EXPECT_EQ(find(c.points[1].run, "ttft_p90_ms"), nullptr) << "the curve rows only: p50/p99";
  EXPECT_NE(find(c.points[1].run, "request_goodput"), nullptr);
  EXPECT_DOUBLE_EQ(c.points[2].offered, 30);
  EXPECT_FALSE(c.points[2].in_a);
  EXPECT_TRUE(c.points[2].in_b);
  EXPECT_TRUE(c.points[3].in_a);
  EXPECT_FALSE(c.points[3].in_b);
  EXPECT_EQ(c.points[3].a.validity, "INVALID");
  EXPECT_EQ(c.points[3].a.slo_verdict, "FAIL");

  EXPECT_EQ(c.capacity_a.source, "sweep.json");
  EXPECT_EQ(*c.capacity_a.highest_pass, 20);
  EXPECT_EQ(c.capacity_b.source, "the points' SLO verdicts");
  EXPECT_EQ(*c.capacity_b.highest_pass, 20);
  EXPECT_EQ(*c.capacity_b.lowest_fail, 30);
  ASSERT_TRUE(c.capacity_ratio.has_value());
  EXPECT_DOUBLE_EQ(*c.capacity_ratio, 1.0);
  EXPECT_EQ(c.capacity_direction, 0) << "[20, 40) and [20, 30) overlap";

  const std::string text = format_sweep_comparison(c, "A", "B");
  EXPECT_NE(text.find("offered 30 req/s: only in B"), std::string::npos) << text;
  EXPECT_NE(text.find("offered 40 req/s: only in A (INVALID (schedule_lag), SLO ttft:100ms: FAIL)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("B / A = 1.000: the brackets overlap"), std::string::npos) << text;
  EXPECT_NE(text.find("bracket [20, 40)"), std::string::npos) << text;
  EXPECT_NE(text.find("INVALID points show their reasons' codes"), std::string::npos) << text;
  const json j = to_json(c);
  EXPECT_EQ(j["kind"], "sweeps");
  EXPECT_EQ(j["capacity"]["a"]["lowest_fail"], 40.0);
  EXPECT_EQ(j["points"][1]["a"]["validity"], "VALID");
  EXPECT_TRUE(j["points"][1]["metrics"]["ttft_p50_ms"]["significant"].get<bool>());

  // A capacity that doubled: B passes at 40 where A failed.
  write_point(b / "rate-40", 40, 40.0, 30'000, "PASS", true);
  write_point(b / "rate-80", 80, 50.0, 300'000, "FAIL", true);
  write_sweep(b, {10, 20, 40, 80}, {{"highest_pass", 40}, {"lowest_fail", 80}});
  const SweepComparison up = compare_sweeps(sa, load_compare_sweep(b.string()));
  EXPECT_EQ(up.capacity_direction, 1);
  EXPECT_DOUBLE_EQ(*up.capacity_ratio, 2.0);
  EXPECT_NE(up.capacity_explanation.find("B is higher"), std::string::npos) << up.capacity_explanation;
  const SweepComparison down = compare_sweeps(load_compare_sweep(b.string()), sa);
  EXPECT_EQ(down.capacity_direction, -1);
  // The same sweep twice: the same capacity and bracket, said so.
  const SweepComparison self = compare_sweeps(sa, sa);
  EXPECT_EQ(self.capacity_direction, 0);
  EXPECT_NE(self.capacity_explanation.find("B / A = 1.000: the same capacity and bracket"), std::string::npos)
      << self.capacity_explanation;

  // Sweeps without SLO verdicts have no capacity: said which, in plain words.
  const fs::path n = t.path / "no-slo";
  write_point(n / "rate-10", 10, 10.0, 20'000, "", true);
  write_point(n / "rate-20", 20, 20.0, 40'000, "", true);
  write_sweep(n, {10, 20}, nullptr);
  const SweepArtifact sn = load_compare_sweep(n.string());
  EXPECT_EQ(compare_sweeps(sn, sn).capacity_explanation,
            "capacity not compared: neither sweep has a capacity (no conclusive SLO verdict, no capacity in sweep.json)");
  EXPECT_NE(compare_sweeps(sn, sa).capacity_explanation.find(": A has no capacity ("), std::string::npos);
  EXPECT_NE(compare_sweeps(sa, sn).capacity_explanation.find(": B has no capacity ("), std::string::npos);

  // Every point INCONCLUSIVE (too few requests to tell), none failed: the capacity is unknown, as
  // `llmload report` says, not "below every load tried".
  const fs::path u = t.path / "inconclusive";
  write_point(u / "rate-10", 10, 10.0, 20'000, "INCONCLUSIVE", true);
  write_point(u / "rate-20", 20, 20.0, 40'000, "INCONCLUSIVE", true);
  write_sweep(u, {10, 20}, nullptr);
  const SweepArtifact su = load_compare_sweep(u.string());
  EXPECT_FALSE(sweep_capacity(su).lowest_fail.has_value());
  EXPECT_TRUE(sweep_capacity(su).source.empty());
  EXPECT_NE(compare_sweeps(su, su).capacity_explanation.find("neither sweep has a capacity"), std::string::npos);
  EXPECT_EQ(format_sweep_comparison(compare_sweeps(su, su), "A", "B").find("below every load tried"),
            std::string::npos);
}

TEST(run_compare, BadInputNamesTheFile) {
  TempDir t;
  EXPECT_THROW(detect_compare_artifact((t.path / "missing").string()), CompareInputError);
  try {
    detect_compare_artifact(t.path.string());
    ADD_FAILURE() << "an empty directory is no artifact";
  } catch (const CompareInputError& e) {
    EXPECT_NE(std::string(e.what()).find("neither result.json"), std::string::npos) << e.what();
  }
  write_file(t.path / "s" / "sweep.json", "{\"points\": [");
  try {
    load_compare_sweep((t.path / "s").string());
    ADD_FAILURE() << "corrupt sweep.json";
  } catch (const CompareInputError& e) {
    EXPECT_NE(std::string(e.what()).find((t.path / "s" / "sweep.json").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  write_file(t.path / "r" / "result.json", "not json");
  try {
    load_compare_run((t.path / "r").string());
    ADD_FAILURE() << "corrupt result.json";
  } catch (const CompareInputError& e) {
    EXPECT_NE(std::string(e.what()).find("result.json"), std::string::npos) << e.what();
  }
  // A listed point whose result.json is corrupt: an error naming that file, not a skipped point.
  write_file(t.path / "s2" / "sweep.json", R"({"points": [{"dir": "rate-1", "offered": 1}]})");
  write_file(t.path / "s2" / "rate-1" / "result.json", "{");
  try {
    load_compare_sweep((t.path / "s2").string());
    ADD_FAILURE() << "corrupt point";
  } catch (const CompareInputError& e) {
    EXPECT_NE(std::string(e.what()).find("rate-1"), std::string::npos) << e.what();
  }
  // A point not run yet: left out with a note.
  write_file(t.path / "s3" / "sweep.json", R"({"points": [{"dir": "rate-1", "offered": 1}]})");
  const SweepArtifact s3 = load_compare_sweep((t.path / "s3").string());
  EXPECT_TRUE(s3.points.empty());
  ASSERT_EQ(s3.notes.size(), 1u);
}

}  // namespace
}  // namespace llmload::analysis
