// build_scaling_report: K resolution, the condition check reclassified for strong and weak
// scaling, the choice of X (goodput, throughput, a sweep's capacity point), S and E, cost and
// energy per output token, the refusal and its labels.
#include "llmload/analysis/scaling_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace llmload::analysis {
namespace {

using nlohmann::json;

// A run artifact's result.json as `llmload run` writes it (the parts scaling reads).
json run_result(double request_throughput, double output_throughput, const std::string& url, double concurrency = 16) {
  return json{
      {"schema_version", 1},
      {"artifact", "run"},
      {"request_throughput", request_throughput},
      {"output_throughput", output_throughput},
      {"request_goodput", nullptr},
      {"completed", 100},
      {"slo", nullptr},
      {"validity", {{"valid", true}, {"verdict", "VALID"}, {"reasons", json::array()}, {"reason", nullptr}, {"checked", true}}},
      {"conditions",
       {{"start_time", "2026-11-22T00:00:00Z"},
        {"command_line", {"llmload", "run", "--base-url", url}},
        {"seeds", {{"base", 0}, {"arrival", 11}}},
        {"endpoint", {{"base_url", url}, {"path", "/v1/completions"}}},
        {"machine", {{"hostname", "client-a"}, {"hardware_threads", 2}}},
        {"model", "llmload-mock"},
        {"tool", {{"name", "llmload"}, {"version", "0.1.0"}}},
        {"server",
         {{"models",
           {{"object", "list"},
            {"data", json::array({{{"id", "llmload-mock"}, {"created", 1000}, {"max_model_len", 2048},
                                    {"permission", json::array({{{"id", "modelperm-1"}, {"created", 1000}}})}}})}}}}},
        {"scenario",
         {{"scenario", "concurrency"}, {"concurrency", concurrency}, {"request_rate", nullptr}, {"num_requests", 200},
          {"output_tokens", 32}, {"input_tokens", 16}, {"slo", nullptr}}},
        {"workload", {{"output", {{"spec", "fixed:32"}}}}}}}};
}

ScalingInput run_input(const std::string& name, json result, std::optional<double> k) {
  ScalingInput in;
  in.name = name;
  in.type = ArtifactType::kRun;
  in.result = std::move(result);
  in.k = k;
  return in;
}

// A second deployment of the same setup: what naturally differs does differ.
json elsewhere(json r, const std::string& url) {
  r["conditions"]["endpoint"]["base_url"] = url;
  r["conditions"]["start_time"] = "2026-11-22T01:00:00Z";
  r["conditions"]["command_line"][3] = url;
  r["conditions"]["seeds"]["arrival"] = 12;
  r["conditions"]["machine"]["hostname"] = "client-b";
  r["conditions"]["server"]["models"]["data"][0]["created"] = 2000;
  r["conditions"]["server"]["models"]["data"][0]["permission"][0]["id"] = "modelperm-2";
  return r;
}

void add_slo(json& r, double goodput) {
  r["request_goodput"] = goodput;
  r["slo"] = {{"spec", "ttft:500ms,tpot:50ms,p99"}, {"verdict", "PASS"}};
  r["conditions"]["scenario"]["slo"] = "ttft:500ms,tpot:50ms,p99";
}

const ConditionDiff* find_diff(const ConditionCheck& c, const std::string& key) {
  for (const auto& d : c.differences) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

TEST(scaling_report, KFromOptionOrDevicesAndItsErrors) {
  std::vector<ScalingInput> in = {run_input("a", run_result(10, 320, "http://h:1"), std::nullopt),
                                  run_input("b", run_result(20, 640, "http://h:2"), std::nullopt)};
  // Neither --k nor conditions.devices: the message says to pass --k.
  try {
    resolve_k(in);
    FAIL() << "no K";
  } catch (const ScalingError& e) {
    EXPECT_NE(std::string(e.what()).find("--k"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
  in[0].result["conditions"]["devices"] = 1;
  in[1].result["conditions"]["devices"] = 4;
  EXPECT_EQ(resolve_k(in), (std::vector<double>{1, 4}));
  in[1].k = 2;  // --k wins over the recorded devices
  EXPECT_EQ(resolve_k(in), (std::vector<double>{1, 2}));
  in[1].k = 1.5;
  EXPECT_THROW(resolve_k(in), ScalingError);
  in[1].k = 0;
  EXPECT_THROW(resolve_k(in), ScalingError);
  in[1].k = 1;  // the same K twice
  try {
    resolve_k(in);
    FAIL() << "duplicate K";
  } catch (const ScalingError& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_k({in[0]}), ScalingError);  // one artifact is no scaling
}

TEST(scaling_report, StrongScalingFromThroughputWithNaturalDifferencesOnly) {
  const json r1 = run_result(10, 320, "http://h:1");
  const json r2 = elsewhere(run_result(19, 608, "http://h:2"), "http://h:2");
  const json r4 = elsewhere(run_result(30, 960, "http://h:4"), "http://h:4");
  // Given out of order: the table is by K.
  const std::vector<ScalingInput> in = {run_input("k4", r4, 4), run_input("k1", r1, 1), run_input("k2", r2, 2)};
  const ScalingReport r = build_scaling_report(in, {});
  EXPECT_FALSE(r.refused);
  EXPECT_TRUE(r.same_conditions);
  EXPECT_EQ(r.metric, ScalingMetric::kRequestThroughput);  // no SLO
  EXPECT_EQ(r.unit, "req/s");
  EXPECT_EQ(r.base_k, 1);
  EXPECT_EQ(r.base_name, "k1");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].name, "k1");
  EXPECT_EQ(r.rows[1].name, "k2");
  EXPECT_EQ(r.rows[2].name, "k4");
  EXPECT_DOUBLE_EQ(r.rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 1.9);
  EXPECT_DOUBLE_EQ(r.rows[1].efficiency, 0.95);
  EXPECT_DOUBLE_EQ(r.rows[2].speedup, 3.0);
  EXPECT_DOUBLE_EQ(r.rows[2].efficiency, 0.75);
  EXPECT_EQ(r.rows[1].k_source, "--k");
  // The URL, host, start stamps and seeds differ, none of it material.
  ASSERT_EQ(r.conditions.size(), 2u);
  for (const auto& c : r.conditions) {
    EXPECT_TRUE(c.same);
    EXPECT_EQ(c.base, "k1");
    for (const auto& d : c.differences) EXPECT_FALSE(d.material) << d.key;
    ASSERT_NE(find_diff(c, "endpoint.base_url"), nullptr);
    ASSERT_NE(find_diff(c, "server.models.data"), nullptr);
  }
  const json j = to_json(r);
  EXPECT_EQ(j["kind"], "strong");
  EXPECT_EQ(j["quantity"]["metric"], "request_throughput");
  EXPECT_EQ(j["rows"][1]["speedup"], 1.9);
  EXPECT_EQ(j["label"], "strong scaling, same conditions");
  const std::string text = format_scaling_report(r);
  EXPECT_NE(text.find("strong scaling"), std::string::npos) << text;
  EXPECT_NE(text.find("request throughput"), std::string::npos) << text;
  EXPECT_NE(text.find("not reported by the server"), std::string::npos) << text;
}

TEST(scaling_report, GoodputUnderTheSloWhenEveryRunHasOne) {
  json r1 = run_result(10, 320, "http://h:1");
  json r2 = elsewhere(run_result(20, 640, "http://h:2"), "http://h:2");
  add_slo(r1, 8);
  add_slo(r2, 18);
  const ScalingReport r = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, {});
  EXPECT_EQ(r.metric, ScalingMetric::kGoodput);
  ASSERT_TRUE(r.slo.has_value());
  EXPECT_EQ(*r.slo, "ttft:500ms,tpot:50ms,p99");
  EXPECT_NE(r.metric_label.find("ttft:500ms"), std::string::npos) << r.metric_label;
  EXPECT_DOUBLE_EQ(r.rows[1].x, 18);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 18.0 / 8.0);
  EXPECT_DOUBLE_EQ(r.rows[1].efficiency, 18.0 / 16.0);
  // --metric output_throughput overrides.
  ScalingReportOptions o;
  o.metric = ScalingMetric::kOutputThroughput;
  const ScalingReport t = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, o);
  EXPECT_EQ(t.unit, "tok/s");
  EXPECT_DOUBLE_EQ(t.rows[1].speedup, 2.0);
}

TEST(scaling_report, GoodputAskedForWithoutAnSloIsAnError) {
  ScalingReportOptions o;
  o.metric = ScalingMetric::kGoodput;
  try {
    build_scaling_report({run_input("a", run_result(10, 320, "http://h:1"), 1),
                          run_input("b", elsewhere(run_result(20, 640, "http://h:2"), "http://h:2"), 2)},
                         o);
    FAIL() << "no goodput";
  } catch (const ScalingError& e) {
    EXPECT_NE(std::string(e.what()).find("--slo"), std::string::npos) << e.what();
  }
}

TEST(scaling_report, AMaterialDifferenceIsRefusedUnlessAllowed) {
  const json r1 = run_result(10, 320, "http://h:1");
  json r2 = elsewhere(run_result(20, 1280, "http://h:2"), "http://h:2");
  r2["conditions"]["scenario"]["output_tokens"] = 64;
  r2["conditions"]["workload"]["output"]["spec"] = "fixed:64";
  r2["conditions"]["tool"]["version"] = "0.2.0";
  const std::vector<ScalingInput> in = {run_input("base", r1, 1), run_input("other", r2, 2)};
  const ScalingReport r = build_scaling_report(in, {});
  EXPECT_TRUE(r.refused);
  EXPECT_FALSE(r.same_conditions);
  EXPECT_TRUE(r.rows.empty());
  ASSERT_EQ(r.conditions.size(), 1u);
  const ConditionCheck& c = r.conditions[0];
  EXPECT_FALSE(c.same);
  for (const char* key : {"scenario.output_tokens", "workload.output.spec", "tool.version"}) {
    const ConditionDiff* d = find_diff(c, key);
    ASSERT_NE(d, nullptr) << key;
    EXPECT_TRUE(d->material) << key;
  }
  EXPECT_FALSE(find_diff(c, "endpoint.base_url")->material);
  const std::string text = format_scaling_report(r);
  for (const char* s : {"refused", "'base'", "'other'", "scenario.output_tokens", "tool.version", "workload.output.spec",
                        "--allow-different-conditions"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  EXPECT_EQ(text.find("endpoint.base_url"), std::string::npos) << "only material differences are listed\n" << text;

  ScalingReportOptions o;
  o.allow_different_conditions = true;
  const ScalingReport a = build_scaling_report(in, o);
  EXPECT_FALSE(a.refused);
  EXPECT_FALSE(a.same_conditions);
  ASSERT_EQ(a.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(a.rows[1].speedup, 2.0);
  EXPECT_EQ(to_json(a)["label"], "strong scaling across different conditions");
  const std::string t = format_scaling_report(a);
  EXPECT_NE(t.find("ACROSS DIFFERENT CONDITIONS"), std::string::npos) << t;
  EXPECT_NE(t.find("scenario.output_tokens"), std::string::npos) << t;
}

TEST(scaling_report, TheLoadMustBeEqualForStrongAndScaleWithKForWeak) {
  const json r1 = run_result(10, 320, "http://h:1", 4);
  const json r2 = elsewhere(run_result(19, 608, "http://h:2", 8), "http://h:2");
  const std::vector<ScalingInput> in = {run_input("k1", r1, 1), run_input("k2", r2, 2)};
  // Strong: a load that differs is a material difference.
  const ScalingReport s = build_scaling_report(in, {});
  EXPECT_TRUE(s.refused);
  ASSERT_NE(find_diff(s.conditions[0], "scenario.concurrency"), nullptr);
  EXPECT_TRUE(find_diff(s.conditions[0], "scenario.concurrency")->material);
  // Weak: 4 -> 8 at K 1 -> 2 is what weak scaling expects.
  ScalingReportOptions weak;
  weak.kind = ScalingKind::kWeak;
  const ScalingReport w = build_scaling_report(in, weak);
  EXPECT_FALSE(w.refused);
  EXPECT_TRUE(w.same_conditions);
  EXPECT_DOUBLE_EQ(w.rows[1].speedup, 1.9);
  EXPECT_DOUBLE_EQ(w.rows[1].efficiency, 0.95);
  EXPECT_EQ(to_json(w)["kind"], "weak");
  // Weak with a load that does not scale with K: 4 -> 6.
  json r3 = r2;
  r3["conditions"]["scenario"]["concurrency"] = 6;
  const ScalingReport n = build_scaling_report({in[0], run_input("k2", r3, 2)}, weak);
  EXPECT_TRUE(n.refused);
  EXPECT_TRUE(find_diff(n.conditions[0], "scenario.concurrency")->material);
  // Weak with the same load at both K: that is strong scaling.
  json r4 = r2;
  r4["conditions"]["scenario"]["concurrency"] = 4;
  const ScalingReport e = build_scaling_report({in[0], run_input("k2", r4, 2)}, weak);
  EXPECT_TRUE(e.refused);
  const ConditionDiff* d = find_diff(e.conditions[0], "scenario.concurrency");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->material);
  EXPECT_NE(format_scaling_report(e).find("--kind strong"), std::string::npos);
  // ... and under strong scaling 4.0 and 4 are the same load, whatever the JSON text.
  ASSERT_EQ(r1["conditions"]["scenario"]["concurrency"].dump(), "4.0");
  const ScalingReport s4 = build_scaling_report({in[0], run_input("k2", r4, 2)}, {});
  EXPECT_FALSE(s4.refused);
  EXPECT_FALSE(find_diff(s4.conditions[0], "scenario.concurrency")->material);
}

TEST(scaling_report, WithoutKOneTheBaseIsTheSmallestK) {
  const json r2 = run_result(20, 640, "http://h:2");
  const json r8 = elsewhere(run_result(60, 1920, "http://h:8"), "http://h:8");
  const ScalingReport r = build_scaling_report({run_input("k2", r2, 2), run_input("k8", r8, 8)}, {});
  EXPECT_EQ(r.base_k, 2);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 3.0);
  EXPECT_DOUBLE_EQ(r.rows[1].efficiency, 0.75);  // 3 / (8/2)
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("K0 = 2"), std::string::npos) << r.notes[0];
}

TEST(scaling_report, ZeroBaseThroughputIsAnError) {
  EXPECT_THROW(build_scaling_report({run_input("a", run_result(0, 0, "http://h:1"), 1),
                                     run_input("b", elsewhere(run_result(20, 640, "http://h:2"), "http://h:2"), 2)},
                                    {}),
               ScalingError);
}

TEST(scaling_report, CostPerMillionOutputTokensWithDevicesFromTheArtifactElseK) {
  json r1 = run_result(10, 500, "http://h:1");
  json r2 = elsewhere(run_result(20, 1000, "http://h:2"), "http://h:2");
  r2["conditions"]["devices"] = 4;  // e.g. 2 replicas of 2 devices: the cost counts devices
  ScalingReportOptions o;
  o.price_per_hour = 3.6;
  const ScalingReport r = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, o);
  // 3.6 $/h x 1 device / (3600 x 500 tok/s) x 1e6 = 2 $ per 1M tokens.
  ASSERT_TRUE(r.rows[0].cost_per_million_output_tokens);
  EXPECT_NEAR(*r.rows[0].cost_per_million_output_tokens, 2.0, 1e-12);
  EXPECT_EQ(r.rows[0].devices, 1);
  EXPECT_EQ(r.rows[0].devices_source, "K");
  EXPECT_NEAR(*r.rows[1].cost_per_million_output_tokens, 3.6 * 4 / (3600 * 1000.0) * 1e6, 1e-12);
  EXPECT_EQ(r.rows[1].devices, 4);
  EXPECT_EQ(r.rows[1].devices_source, "conditions.devices");
  EXPECT_NE(format_scaling_report(r).find("$/1M out tok"), std::string::npos);
  // Without a price: the artifacts' own conditions.price_per_hour, else none.
  const ScalingReport n = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, {});
  EXPECT_FALSE(n.rows[0].cost_per_million_output_tokens);
  EXPECT_NE(format_scaling_report(n).find("--price-per-hour"), std::string::npos);
  r1["conditions"]["price_per_hour"] = 7.2;
  r2["conditions"]["price_per_hour"] = 7.2;
  const ScalingReport p = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, {});
  EXPECT_TRUE(p.same_conditions);
  EXPECT_NEAR(*p.rows[0].cost_per_million_output_tokens, 4.0, 1e-12);
}

TEST(scaling_report, EnergyPerOutputTokenFromTheServersEnergyOrPower) {
  std::string how;
  // Not available at all, and available without power: "not reported by the server".
  EXPECT_FALSE(energy_per_output_token(json{{"available", false}}, 100.0, &how));
  EXPECT_NE(how.find("not reported by the server"), std::string::npos);
  const json plain = {{"available", true}, {"delta", {{"generation_tokens", 1000}}}, {"series", {{"t_s", {0, 1}}}}};
  EXPECT_FALSE(energy_per_output_token(plain, 100.0, &how));
  EXPECT_NE(how.find("not reported by the server"), std::string::npos);
  EXPECT_NE(how.find("DCGM_FI_DEV_POWER_USAGE"), std::string::npos) << how;
  // An energy counter: joules over the server's generated tokens.
  json e = plain;
  e["delta"]["energy_joules"] = 500.0;
  ASSERT_TRUE(energy_per_output_token(e, 100.0, &how));
  EXPECT_DOUBLE_EQ(*energy_per_output_token(e, 100.0, &how), 0.5);
  // A power series: time-averaged watts over output tokens per second. 200 W for 1 s then 400 W
  // ramping: trapezoids (0,200)-(1,200) and (1,200)-(3,400): (200 + 600) / 3 s = 266.67 W.
  json p = plain;
  p["series"] = {{"t_s", {0.0, 1.0, 3.0}}, {"power_watts", {200.0, 200.0, 400.0}}};
  const auto j = energy_per_output_token(p, 400.0, &how);
  ASSERT_TRUE(j);
  EXPECT_NEAR(*j, (800.0 / 3.0) / 400.0, 1e-12);
  EXPECT_NE(how.find("power"), std::string::npos);
  // Power but no tokens: nothing to divide by.
  EXPECT_FALSE(energy_per_output_token(p, 0.0, &how));

  // In the report, per row.
  json r1 = run_result(10, 500, "http://h:1");
  json r2 = elsewhere(run_result(20, 1000, "http://h:2"), "http://h:2");
  r1["server_metrics"] = e;
  r2["server_metrics"] = e;
  r2["server_metrics"]["delta"]["energy_joules"] = 800.0;
  const ScalingReport r = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, {});
  EXPECT_DOUBLE_EQ(*r.rows[0].energy_j_per_output_token, 0.5);
  EXPECT_DOUBLE_EQ(*r.rows[1].energy_j_per_output_token, 0.8);
  EXPECT_NE(format_scaling_report(r).find("J/out tok"), std::string::npos);
}

TEST(scaling_report, TrialsArtifactsUseTheMedianWithTheSpread) {
  auto trials = [](json r, std::vector<double> x) {
    r["artifact"] = "trials";
    r["trials"] = json::array();
    for (std::size_t i = 0; i < x.size(); ++i) {
      r["trials"].push_back({{"trial", i + 1}, {"dir", "trial-" + std::to_string(i + 1)}, {"request_throughput", x[i]}});
    }
    r["request_throughput"] = x[1];  // the median of three sorted values
    r["conditions"]["trials"] = {{"n", x.size()}, {"pause_s", 0}, {"seeds", json::array({1, 2, 3})}};
    return r;
  };
  ScalingInput a = run_input("a", trials(run_result(0, 320, "http://h:1"), {9, 10, 11}), 1);
  a.type = ArtifactType::kTrials;
  json rb = trials(elsewhere(run_result(0, 640, "http://h:2"), "http://h:2"), {19, 20, 22});
  rb["conditions"]["trials"]["seeds"] = json::array({4, 5, 6});  // seeds differ naturally
  rb["noisy"] = true;
  ScalingInput b = run_input("b", rb, 2);
  b.type = ArtifactType::kTrials;
  // Energy from each trial's own server metrics: the median over the trials.
  for (double joules : {300.0, 500.0, 400.0}) {
    json t = {{"output_throughput", 640}};
    t["server_metrics"] = {{"available", true}, {"delta", {{"energy_joules", joules}, {"generation_tokens", 1000}}}};
    b.trial_results.push_back(std::move(t));
  }
  const ScalingReport r = build_scaling_report({a, b}, {});
  EXPECT_TRUE(r.same_conditions);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 2.0);
  EXPECT_EQ(r.rows[1].trials, 3u);
  EXPECT_DOUBLE_EQ(*r.rows[1].x_min, 19);
  EXPECT_DOUBLE_EQ(*r.rows[1].x_max, 22);
  EXPECT_TRUE(r.rows[1].noisy);
  EXPECT_DOUBLE_EQ(*r.rows[1].energy_j_per_output_token, 0.4);
  EXPECT_NE(r.rows[1].x_source.find("median of 3 trials"), std::string::npos);
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.find("noisy") != std::string::npos;
  EXPECT_TRUE(noted);
  // A different number of trials is a material difference.
  json rc = rb;
  rc["conditions"]["trials"]["n"] = 5;
  b.result = rc;
  EXPECT_TRUE(build_scaling_report({a, b}, {}).refused);
}

TEST(scaling_report, SweepsScaleByTheirCapacityPointsGoodput) {
  auto sweep = [](double highest_pass, double goodput) {
    return json{{"schema_version", 1},
                {"artifact", "sweep"},
                {"load_kind", "concurrency"},
                {"slo", "ttft:500ms,p99"},
                {"points", json::array({{{"dir", "c-" + std::to_string(static_cast<int>(highest_pass))},
                                         {"offered", highest_pass}}})},
                {"capacity",
                 {{"highest_pass", highest_pass},
                  {"lowest_fail", highest_pass + 1},
                  {"stop", "tolerance_reached"},
                  {"goodput_at_capacity", goodput},
                  {"points", json::array({{{"load", highest_pass},
                                           {"trials", json::array({{{"goodput", goodput - 1}},
                                                                   {{"goodput", goodput}},
                                                                   {{"goodput", goodput + 2}}})}}})}}}};
  };
  ScalingInput a = run_input("s1", run_result(10, 320, "http://h:1", 12), 1);
  a.type = ArtifactType::kSweep;
  a.sweep = sweep(12, 10);
  ScalingInput b = run_input("s2", elsewhere(run_result(21, 640, "http://h:2", 25), "http://h:2"), 2);
  b.type = ArtifactType::kSweep;
  b.sweep = sweep(25, 21);
  // The capacity points' loads differ (12 vs 25): the search's answer, not a condition.
  const ScalingReport r = build_scaling_report({a, b}, {});
  EXPECT_FALSE(r.refused);
  EXPECT_EQ(r.metric, ScalingMetric::kCapacityGoodput);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 2.1);
  EXPECT_DOUBLE_EQ(*r.rows[1].capacity_load, 25);
  EXPECT_DOUBLE_EQ(*r.rows[1].x_min, 20);
  EXPECT_DOUBLE_EQ(*r.rows[1].x_max, 23);
  EXPECT_NE(r.metric_label.find("capacity"), std::string::npos);
  // A sweep against another SLO is material.
  b.sweep["slo"] = "ttft:200ms,p99";
  const ScalingReport d = build_scaling_report({a, b}, {});
  EXPECT_TRUE(d.refused);
  ASSERT_NE(find_diff(d.conditions[0], "sweep.slo"), nullptr);
  // A sweep without a capacity point gives no X.
  b.sweep = sweep(25, 21);
  b.sweep["capacity"]["highest_pass"] = nullptr;
  b.sweep["capacity"]["goodput_at_capacity"] = nullptr;
  EXPECT_THROW(build_scaling_report({a, b}, {}), ScalingError);
}

TEST(scaling_report, InvalidRunsAreComputedButFlagged) {
  json r1 = run_result(10, 320, "http://h:1");
  json r2 = elsewhere(run_result(20, 640, "http://h:2"), "http://h:2");
  r2["validity"] = {{"valid", false},
                    {"verdict", "INVALID"},
                    {"reasons", json::array({{{"code", "schedule_lag"}, {"message", "the client fell behind"}}})},
                    {"reason", nullptr},
                    {"checked", true}};
  const ScalingReport r = build_scaling_report({run_input("a", r1, 1), run_input("b", r2, 2)}, {});
  EXPECT_FALSE(r.rows[1].valid);
  EXPECT_EQ(r.rows[1].validity_reason, "the client fell behind");
  const std::string text = format_scaling_report(r);
  EXPECT_NE(text.find("INVALID"), std::string::npos) << text;
  EXPECT_FALSE(to_json(r)["rows"][1]["valid"].get<bool>());
}

TEST(scaling_report, MetricNamesParse) {
  EXPECT_EQ(parse_scaling_metric("auto"), ScalingMetric::kAuto);
  EXPECT_EQ(parse_scaling_metric("goodput"), ScalingMetric::kGoodput);
  EXPECT_EQ(parse_scaling_metric("request_throughput"), ScalingMetric::kRequestThroughput);
  EXPECT_EQ(parse_scaling_metric("output_throughput"), ScalingMetric::kOutputThroughput);
  EXPECT_FALSE(parse_scaling_metric("tokens"));
}

}  // namespace
}  // namespace llmload::analysis
