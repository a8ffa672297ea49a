// The server's standard series from its exposition (analysis/prometheus.hpp): vLLM, SGLang and
// the real llmload-server registry (its names, GPU power and energy, the prefix-cache hit rate),
// the artifact's "server_metrics" JSON of a run (unavailable, bounded, counter resets) and the
// cross-check of the client's TTFT against the server's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "exposition_samples.hpp"
#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/prometheus.hpp"
#include "llmload/analysis/scaling_report.hpp"
#include "llmload/server/metrics.hpp"

namespace llmload::analysis::prom {
namespace {

using namespace test_samples;

// --------------------------------------------------------------------- standard server series

TEST(server_series, vllm_names) {
  const auto v = standard_values(parse_exposition(kVllmAfter));
  EXPECT_DOUBLE_EQ(*v.running, 12);
  EXPECT_DOUBLE_EQ(*v.waiting, 3);
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.375);
  EXPECT_DOUBLE_EQ(*v.preemptions, 6);
  EXPECT_DOUBLE_EQ(*v.prompt_tokens, 11000);
  EXPECT_DOUBLE_EQ(*v.generation_tokens, 10000);
  EXPECT_DOUBLE_EQ(*v.requests_finished, 110);
}

TEST(server_series, old_vllm_gpu_cache_usage_alias) {
  const auto v = standard_values(parse_exposition(
      "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.75\n"));
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.75);
  EXPECT_FALSE(v.running);
  const auto j = to_json(v);
  EXPECT_TRUE(j["running"].is_null());
  EXPECT_DOUBLE_EQ(j["kv_cache_usage"].get<double>(), 0.75);
}

TEST(server_series, sglang_names) {
  const Exposition e = parse_exposition(kSglang);
  const auto v = standard_values(e);
  EXPECT_DOUBLE_EQ(*v.running, 24);
  EXPECT_DOUBLE_EQ(*v.waiting, 3);
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.28);
  EXPECT_DOUBLE_EQ(*v.preemptions, 17);
  EXPECT_DOUBLE_EQ(*v.requests_finished, 12345);
  const auto ttft = find_server_histogram(e, ServerHistogram::kTtft);
  ASSERT_TRUE(ttft);
  EXPECT_EQ(ttft->first, "sglang:time_to_first_token_seconds");
  EXPECT_NEAR(histogram_quantile(0.5, ttft->second), 0.15, 1e-12);
  EXPECT_FALSE(find_server_histogram(e, ServerHistogram::kQueue));
}

// The real llmload-server registry (server_stub/metrics.hpp): what GET /metrics serves.
TEST(server_series, llmload_server_registry) {
  server::ServerMetrics m({"mock \"q\" \\ x\nline2"}, 8192, 16, 1000);
  m.set_scheduler_state(3, 2, 0.25);
  m.add_preemptions(4);
  m.add_prompt_tokens(300);
  m.add_generation_tokens(50);
  m.observe_time_to_first_token(0.05);
  m.observe_time_to_first_token(0.07);
  server::ServerMetrics::FinishedRequest r;
  r.prompt_tokens = 10;
  r.generation_tokens = 5;
  r.finished_reason = "length";
  r.ttft_s = 0.05;
  r.e2e_s = 0.55;
  r.ttft_observed = true;
  m.on_request_finished(r);
  const Exposition e = parse_exposition(m.render());
  EXPECT_EQ(detect_flavor(e), ServerFlavor::kVllm);  // vLLM's names only, without a GPU
  EXPECT_EQ(detect_flavor(e, "llmload"), ServerFlavor::kLlmloadServer);
  const auto v = standard_values(e);
  EXPECT_DOUBLE_EQ(*v.running, 3);
  EXPECT_DOUBLE_EQ(*v.waiting, 2);
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.25);
  EXPECT_DOUBLE_EQ(*v.preemptions, 4);
  EXPECT_DOUBLE_EQ(*v.generation_tokens, 50);
  EXPECT_DOUBLE_EQ(*v.requests_finished, 1);
  EXPECT_EQ(*e.family("vllm:num_requests_running")->samples[0].label("model_name"), "mock \"q\" \\ x\nline2");
  const auto ttft = find_server_histogram(e, ServerHistogram::kTtft);
  ASSERT_TRUE(ttft);
  EXPECT_DOUBLE_EQ(ttft->second.count, 2);
  EXPECT_NEAR(*histogram_mean(ttft->second), 0.06, 1e-9);
  const auto e2e = find_server_histogram(e, ServerHistogram::kE2e);
  ASSERT_TRUE(e2e);
  EXPECT_DOUBLE_EQ(e2e->second.count, 1);
  ASSERT_TRUE(find_server_histogram(e, ServerHistogram::kItl));
  EXPECT_EQ(find_server_histogram(e, ServerHistogram::kItl)->first, "vllm:inter_token_latency_seconds");

  m.set_gpu_power(300, 1000);  // with a GPU, its own llmload: families tell it apart
  EXPECT_EQ(detect_flavor(parse_exposition(m.render())), ServerFlavor::kLlmloadServer);
}

// Power and energy: llmload-server's own families (with a GPU) and NVIDIA dcgm-exporter's (per GPU,
// energy in millijoules), recorded over a run and turned into energy per output token.
TEST(server_series, gpu_power_and_energy) {
  server::ServerMetrics m({"mock"}, 8192, 16, 1000);
  EXPECT_FALSE(standard_values(parse_exposition(m.render())).power_watts);  // no GPU: not served
  m.set_gpu_power(310.5, 1200);
  auto v = standard_values(parse_exposition(m.render()));
  ASSERT_TRUE(v.power_watts && v.energy_joules);
  EXPECT_DOUBLE_EQ(*v.power_watts, 310.5);
  EXPECT_DOUBLE_EQ(*v.energy_joules, 1200);

  const char* dcgm_before =
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} 120\n"
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} 5000000\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-b\"} 7000000\n"
      "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 1000\n";
  const char* dcgm_after =
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 300\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} 340\n"
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} 5600000\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-b\"} 7680000\n"
      "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 5000\n";
  v = standard_values(parse_exposition(dcgm_before));
  EXPECT_DOUBLE_EQ(*v.power_watts, 220);      // summed over the GPUs
  EXPECT_DOUBLE_EQ(*v.energy_joules, 12000);  // mJ -> J

  ServerMetricsRecording rec;
  rec.set_before(parse_exposition(dcgm_before), 10.0);
  rec.add_point(parse_exposition(dcgm_after), 12.0);
  rec.set_after(parse_exposition(dcgm_after), 14.0);
  const auto j = rec.to_json(10.0);
  EXPECT_EQ(j["series"]["power_watts"], nlohmann::json::parse("[220.0, 640.0, 640.0]"));
  EXPECT_EQ(j["series"]["energy_joules"], nlohmann::json::parse("[0.0, 1280.0, 1280.0]"));
  EXPECT_DOUBLE_EQ(j["peak"]["power_watts"].get<double>(), 640);
  EXPECT_DOUBLE_EQ(j["delta"]["energy_joules"].get<double>(), 1280);
  EXPECT_DOUBLE_EQ(j["before"]["energy_joules"].get<double>(), 12000);
  // 1280 J over 4000 generated tokens: 0.32 J per token, from the counter.
  std::string how;
  const auto per_token = analysis::energy_per_output_token(j, 1000.0, &how);
  ASSERT_TRUE(per_token) << how;
  EXPECT_NEAR(*per_token, 0.32, 1e-12);
  EXPECT_NE(how.find("energy counter"), std::string::npos) << how;
  // Without the counter, from the power series: the trapezoid mean over [0, 4] s is
  // (2 * 430 + 2 * 640) / 4 = 535 W, at 1000 output tokens/s 0.535 J per token.
  auto no_counter = j;
  no_counter["delta"]["energy_joules"] = nullptr;
  const auto from_power = analysis::energy_per_output_token(no_counter, 1000.0, &how);
  ASSERT_TRUE(from_power) << how;
  EXPECT_NEAR(*from_power, 0.535, 1e-9);
}

// The prefix cache (issue 19): vLLM's counters as llmload-server serves them, turned into the
// server's hit rate over a run (the counters' change), SGLang's cached tokens among its prompt
// tokens, and the hit-rate gauge of servers without counters.
TEST(server_series, prefix_cache_hit_rate) {
  server::ServerMetrics m({"mock"}, 8192, 16, 1000);
  m.add_prefix_cache(100, 40);
  ServerMetricsRecording rec;
  const Exposition before = parse_exposition(m.render());
  auto v = standard_values(before);
  ASSERT_TRUE(v.prefix_cache_hits && v.prefix_cache_queries);
  EXPECT_DOUBLE_EQ(*v.prefix_cache_hits, 40);
  EXPECT_DOUBLE_EQ(*v.prefix_cache_queries, 100);
  rec.set_before(before, 1.0);
  m.add_prefix_cache(200, 96);  // during the run: 96 of 200 prompt tokens found
  rec.set_after(parse_exposition(m.render()), 3.0);
  const auto j = rec.to_json(0.0);
  EXPECT_DOUBLE_EQ(j["delta"]["prefix_cache_hits"].get<double>(), 96);
  EXPECT_DOUBLE_EQ(j["delta"]["prefix_cache_queries"].get<double>(), 200);
  const auto rate = analysis::server_prefix_cache(j);
  ASSERT_TRUE(rate);
  EXPECT_DOUBLE_EQ(rate->hit_rate, 0.48);
  EXPECT_EQ(rate->source, "counters");

  // SGLang: cached tokens among its prompt tokens; its gauge too.
  const auto sg = standard_values(parse_exposition(
      "# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{model_name=\"m\"} 30\n"
      "# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"m\"} 120\n"
      "# TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate{model_name=\"m\"} 0.25\n"));
  ASSERT_TRUE(sg.prefix_cache_hits && sg.prefix_cache_queries && sg.prefix_cache_hit_rate);
  EXPECT_DOUBLE_EQ(*sg.prefix_cache_hits, 30);
  EXPECT_DOUBLE_EQ(*sg.prefix_cache_queries, 120);
  EXPECT_DOUBLE_EQ(*sg.prefix_cache_hit_rate, 0.25);

  // vLLM V0: only the gauge; the rate is its mean over the run's scrapes.
  ServerMetricsRecording v0;
  v0.set_before(parse_exposition("# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate 0.1\n"), 0);
  v0.add_point(parse_exposition("# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate 0.3\n"), 1);
  v0.set_after(parse_exposition("# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate 0.5\n"), 2);
  const auto g = analysis::server_prefix_cache(v0.to_json(0));
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->hit_rate, 0.3);
  EXPECT_EQ(g->source, "gauge");
}

TEST(server_series, unknown_server) {
  const Exposition e = parse_exposition("up 1\nhttp_requests_total{code=\"200\"} 5\n");
  EXPECT_EQ(detect_flavor(e), ServerFlavor::kUnknown);
  const auto v = standard_values(e);
  EXPECT_FALSE(v.running || v.waiting || v.kv_cache_usage || v.preemptions);
}

// ---------------------------------------------------------------- the artifact and the cross-check

TEST(server_recording, json_shape_of_a_run) {
  ServerMetricsRecording rec;
  rec.set_endpoint("http://127.0.0.1:8000/metrics");
  rec.set_interval(0.5);
  rec.set_before(parse_exposition(kVllmBefore), 99.5);
  rec.add_point(parse_exposition(kVllmAfter), 100.5);
  rec.add_error("GET http://127.0.0.1:8000/metrics: request exceeded the total timeout (5 s)");
  rec.add_error("GET http://127.0.0.1:8000/metrics: request exceeded the total timeout (5 s)");
  rec.set_after(parse_exposition(kVllmAfter), 101.25);
  const auto j = rec.to_json(100.0);

  EXPECT_TRUE(j["available"].get<bool>());
  EXPECT_EQ(j["flavor"], "vllm");
  EXPECT_DOUBLE_EQ(j["interval_s"].get<double>(), 0.5);
  EXPECT_EQ(j["scrapes"], 3);
  EXPECT_EQ(j["errors"], 2);
  EXPECT_EQ(j["error_messages"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["before"]["t_s"].get<double>(), -0.5);
  EXPECT_DOUBLE_EQ(j["after"]["t_s"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(j["before"]["running"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["after"]["running"].get<double>(), 12);

  const auto& s = j["series"];
  EXPECT_EQ(s["t_s"], nlohmann::json::parse("[-0.5, 0.5, 1.25]"));
  EXPECT_EQ(s["running"], nlohmann::json::parse("[0.0, 12.0, 12.0]"));
  EXPECT_EQ(s["waiting"], nlohmann::json::parse("[0.0, 3.0, 3.0]"));
  EXPECT_EQ(s["kv_cache_usage"], nlohmann::json::parse("[0.0, 0.375, 0.375]"));
  EXPECT_EQ(s["preemptions"], nlohmann::json::parse("[0.0, 2.0, 2.0]"));  // since the before snapshot
  EXPECT_EQ(s["requests_finished"], nlohmann::json::parse("[0.0, 100.0, 100.0]"));
  EXPECT_FALSE(s["truncated"].get<bool>());
  EXPECT_DOUBLE_EQ(j["peak"]["running"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(j["delta"]["preemptions"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(j["delta"]["generation_tokens"].get<double>(), 9500);

  const auto& t = j["server_ttft"];
  EXPECT_EQ(t["metric"], "vllm:time_to_first_token_seconds");
  EXPECT_DOUBLE_EQ(t["count"].get<double>(), 100);
  EXPECT_NEAR(t["mean_ms"].get<double>(), 85, 1e-6);
  EXPECT_NEAR(t["p50_ms"].get<double>(), 84, 1e-6);
  EXPECT_NEAR(t["p90_ms"].get<double>(), 100, 1e-6);
  EXPECT_NEAR(t["p99_ms"].get<double>(), 235, 1e-6);
  EXPECT_EQ(t["buckets"]["le"].back(), "+Inf");
  EXPECT_EQ(t["buckets"]["cumulative"].back(), 100.0);
  const auto& e2e = j["server_e2e"];
  EXPECT_DOUBLE_EQ(e2e["count"].get<double>(), 100);
  EXPECT_NEAR(e2e["mean_ms"].get<double>(), 2000, 1e-6);
  EXPECT_TRUE(e2e["p99_ms"].get<double>() > 0);
  EXPECT_TRUE(j["server_queue"].is_null());  // not in this exposition
  EXPECT_TRUE(j["notes"].empty());
  // The whole object is valid JSON text (no NaN or Inf).
  EXPECT_EQ(nlohmann::json::parse(j.dump()).size(), j.size());
}

TEST(server_recording, unavailable_and_bounded) {
  ServerMetricsRecording off;
  off.set_endpoint("http://127.0.0.1:1/metrics");
  off.set_unavailable("GET http://127.0.0.1:1/metrics returned HTTP 404");
  const auto j = off.to_json();
  EXPECT_FALSE(j["available"].get<bool>());
  EXPECT_EQ(j["reason"], "not available: GET http://127.0.0.1:1/metrics returned HTTP 404");

  ServerMetricsRecording small(3);
  const Exposition e = parse_exposition(kVllmAfter);
  small.set_before(e, 0);
  for (int i = 1; i <= 10; ++i) small.add_point(e, i);
  small.set_after(e, 11);
  const auto k = small.to_json();
  EXPECT_EQ(k["series"]["t_s"].size(), 3u);
  EXPECT_DOUBLE_EQ(k["series"]["t_s"].back().get<double>(), 11);  // the after point is kept
  EXPECT_TRUE(k["series"]["truncated"].get<bool>());
  EXPECT_EQ(k["scrapes"], 12);
}

TEST(server_recording, missing_after_and_counter_reset) {
  ServerMetricsRecording rec;
  rec.set_before(parse_exposition(kVllmAfter), 0);
  auto j = rec.to_json();
  EXPECT_TRUE(j["after"].is_null());
  EXPECT_TRUE(j["server_ttft"].is_null());
  EXPECT_FALSE(j["notes"].empty());

  ServerMetricsRecording restarted;
  restarted.set_before(parse_exposition(kVllmAfter), 0);
  restarted.set_after(parse_exposition(kVllmBefore), 1);  // counts went down
  j = restarted.to_json();
  EXPECT_TRUE(j["server_ttft"]["reset"].get<bool>());
  EXPECT_DOUBLE_EQ(j["server_ttft"]["count"].get<double>(), 10);
  EXPECT_FALSE(j["notes"].empty());
}

TEST(server_cross_check, client_vs_server_ttft) {
  ServerMetricsRecording rec;
  rec.set_before(parse_exposition(kVllmBefore), 0);
  rec.set_after(parse_exposition(kVllmAfter), 1);
  const auto server = rec.to_json();

  const auto c = cross_check_ttft(90.0, 88.0, server, 100);
  EXPECT_TRUE(c["available"].get<bool>());
  EXPECT_NEAR(c["server_mean_ms"].get<double>(), 85, 1e-6);
  EXPECT_NEAR(c["mean_diff_ms"].get<double>(), 5, 1e-6);
  EXPECT_NEAR(c["p50_diff_ms"].get<double>(), 4, 1e-6);
  EXPECT_EQ(c["server_p50_bucket_ms"], nlohmann::json::parse("[80.0, 100.0]"));
  EXPECT_TRUE(c["count_matches"].get<bool>());
  EXPECT_TRUE(c["notes"].empty());
  EXPECT_NE(c["caveat"].get<std::string>().find("network"), std::string::npos);

  const auto d = cross_check_ttft(80.0, 80.0, server, 90);
  EXPECT_FALSE(d["count_matches"].get<bool>());
  EXPECT_EQ(d["notes"].size(), 2u);  // the counts differ; the client is below the server

  EXPECT_FALSE(cross_check_ttft(90, 88, nlohmann::json{{"available", false}, {"reason", "not available: x"}})["available"]
                   .get<bool>());
  EXPECT_FALSE(cross_check_ttft(90, 88, nlohmann::json(nullptr))["available"].get<bool>());
  ServerMetricsRecording idle;
  idle.set_before(parse_exposition(kVllmBefore), 0);
  idle.set_after(parse_exposition(kVllmBefore), 1);
  const auto none = cross_check_ttft(90, 88, idle.to_json());
  EXPECT_FALSE(none["available"].get<bool>());
  EXPECT_NE(none["reason"].get<std::string>().find("no TTFT"), std::string::npos);
}

}  // namespace
}  // namespace llmload::analysis::prom
