// The issue-19 sections of a trials artifact (loadgen/src/app/trial_sections.cpp): counts summed
// over the trials, rates recomputed from the sums, medians where the numbers are not counts, and
// sections some trial lacks or holds nulls in (prefix_cache from the server's counters only).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trial_sections.hpp"

namespace llmload::app::trial_sections_test {

using nlohmann::json;

json trial(const json& result) { return {{"sections", trial_sections(result)}}; }

TEST(TrialSections, CountsAreSummedAndRatesRecomputed) {
  const json a = {{"structured_output",
                   {{"requests", 10}, {"judged", 10}, {"valid", 9}, {"invalid", 1}, {"text_answers", 0},
                    {"tool_call_requests", 10}, {"tool_calls", 10}, {"by_verdict", {{"valid", 9}, {"invalid_json", 1}}},
                    {"examples", {"request 3: invalid_json: x"}}}},
                  {"prefix_cache", {{"cached_tokens", 50}, {"prompt_tokens", 100}, {"requests", 10},
                                    {"requests_reporting", 4}, {"server_hit_rate", 0.4}}},
                  {"by_model", {{"m", {{"requests", 10}, {"completed", 10}, {"failed", 0}, {"request_throughput", 2.0},
                                       {"latency", {{"ttft", {{"p99_ms", 10.0}}}}}}}}}};
  const json b = {{"structured_output",
                   {{"requests", 30}, {"judged", 30}, {"valid", 27}, {"invalid", 3}, {"by_verdict", {{"valid", 27}, {"schema_violation", 3}}}}},
                  {"prefix_cache", {{"cached_tokens", 150}, {"prompt_tokens", 200}, {"requests", 20},
                                    {"requests_reporting", 20}, {"server_hit_rate", 0.6}}},
                  {"by_model", {{"m", {{"requests", 30}, {"completed", 29}, {"failed", 1}, {"request_throughput", 4.0},
                                       {"latency", {{"ttft", {{"p99_ms", 30.0}}}}}}}}}};
  json agg = json::object();
  pool_trial_sections(agg, {trial(a), trial(b)});
  const json& so = agg["structured_output"];
  EXPECT_EQ(so["judged"], 40);
  EXPECT_EQ(so["invalid"], 4);
  EXPECT_DOUBLE_EQ(so["invalid_rate"].get<double>(), 0.1) << "4 of 40, not the mean of 0.1 and 0.1 by chance";
  EXPECT_EQ(so["by_verdict"]["schema_violation"], 3);
  EXPECT_EQ(so["by_verdict"]["invalid_json"], 1);
  EXPECT_EQ(so["examples"].size(), 1u);
  EXPECT_DOUBLE_EQ(agg["prefix_cache"]["hit_rate"].get<double>(), 200.0 / 300.0) << "tokens summed, then divided";
  EXPECT_DOUBLE_EQ(agg["prefix_cache"]["server_hit_rate"].get<double>(), 0.5);
  EXPECT_EQ(agg["by_model"]["m"]["requests"], 40);
  EXPECT_EQ(agg["by_model"]["m"]["failed"], 1);
  EXPECT_DOUBLE_EQ(agg["by_model"]["m"]["request_throughput"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(agg["by_model"]["m"]["latency"]["ttft"]["p99_ms"].get<double>(), 20.0);
  EXPECT_TRUE(agg["reasoning"].is_null()) << "no trial reasoned";
}

TEST(TrialSections, NullCountsAndMissingSectionsAreTolerated) {
  // A run whose responses carried no cached_tokens but whose server counted: nulls in the counts.
  const json server_only = {{"prefix_cache", {{"cached_tokens", nullptr}, {"prompt_tokens", nullptr}, {"hit_rate", nullptr},
                                              {"requests_reporting", 0}, {"server_hit_rate", 0.3},
                                              {"source", "server_metrics"}}}};
  json agg = json::object();
  pool_trial_sections(agg, {trial(server_only), trial(json::object()), trial(server_only)});
  EXPECT_TRUE(agg["prefix_cache"]["hit_rate"].is_null());
  EXPECT_DOUBLE_EQ(agg["prefix_cache"]["server_hit_rate"].get<double>(), 0.3);
  EXPECT_EQ(agg["prefix_cache"]["source"], "server_metrics");
  EXPECT_TRUE(agg["structured_output"].is_null());
  json none = json::object();
  pool_trial_sections(none, {});
  EXPECT_TRUE(none["by_model"].is_null());
}

}  // namespace llmload::app::trial_sections_test
