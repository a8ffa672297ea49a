// compare_runs: conditions that differ (material or not) and metric deltas with intervals.
#include "llmload/analysis/run_compare.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "llmload/analysis/hdr_histogram.hpp"

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
  const RunComparison c = compare_runs(a, b);
  EXPECT_TRUE(c.same_conditions);
  ASSERT_EQ(c.conditions.size(), 2u);
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

}  // namespace
}  // namespace llmload::analysis
