// The Prometheus text-format parser and the server-metrics arithmetic (analysis/prometheus.hpp):
// real-format vLLM and SGLang expositions (written from the names, label layout and value
// spelling of vllm/v1/metrics/loggers.py + prometheus_client and sglang's collector.py), the
// real llmload-server registry, edge cases of the format, malformed input (a ParseError naming
// the line, never a crash), histogram_quantile as Prometheus computes it, deltas, the standard
// series and the artifact's JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/prometheus.hpp"
#include "llmload/analysis/scaling_report.hpp"
#include "llmload/server/metrics.hpp"

namespace llmload::analysis::prom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// vLLM V1 as prometheus_client renders it: counters' TYPE named with _total, _created samples as
// separate gauges, labels in declaration order with `le` between them, two engines (data
// parallel), default process collectors.
const char* kVllmBefore = R"(# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 12345.0
python_gc_objects_collected_total{generation="1"} 678.0
# HELP python_info Python platform information
# TYPE python_info gauge
python_info{implementation="CPython",major="3",minor="12",patchlevel="3",version="3.12.3"} 1.0
# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes 1.2345678e+10
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_preemptions_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7123456789012e+09
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 500.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 6.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.005",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.06",model_name="meta-llama/Llama-3.1-8B-Instruct"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.08",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.25",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.75",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="2.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.6
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.0
)";

// The same server after 100 more requests: TTFT 40 in (0.06, 0.08], 50 in (0.08, 0.1], 10 in
// (0.1, 0.25], summing 8.5 s; under load (running, waiting, KV usage per engine), 2 more
// preemptions.
const char* kVllmAfter = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
vllm:num_preemptions_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 11000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1e+04
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 106.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.005",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.06",model_name="meta-llama/Llama-3.1-8B-Instruct"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.08",model_name="meta-llama/Llama-3.1-8B-Instruct"} 50.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.25",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.75",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="2.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 9.1
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 60.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 110.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 208.0
)";

// SGLang (collector.py) as its docs show it: `_sum` first, `le` first, exponent values.
const char* kSglang = R"(# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.557572e+06
# HELP sglang:num_requests_total Number of requests processed.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 12345.0
# HELP sglang:num_retracted_requests_total Number of retracted requests.
# TYPE sglang:num_retracted_requests_total counter
sglang:num_retracted_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 17.0
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 24.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP sglang:cache_hit_rate The cache hit rate
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.007507552643049313
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.3518979474117756e+06
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
sglang:time_to_first_token_seconds_bucket{le="0.2",model_name="meta-llama/Llama-3.1-8B-Instruct"} 300.0
sglang:time_to_first_token_seconds_bucket{le="0.4",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
sglang:time_to_first_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
# HELP sglang:e2e_request_latency_seconds Histogram of End-to-end request latency in seconds
# TYPE sglang:e2e_request_latency_seconds histogram
sglang:e2e_request_latency_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 800.0
sglang:e2e_request_latency_seconds_bucket{le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
sglang:e2e_request_latency_seconds_bucket{le="2.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
sglang:e2e_request_latency_seconds_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
sglang:e2e_request_latency_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
)";

// ------------------------------------------------------------------------------- the parser

TEST(prometheus_parse, vllm_families_types_help_and_labels) {
  const Exposition e = parse_exposition(kVllmBefore);
  const Family* running = e.family("vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->type, MetricType::kGauge);
  EXPECT_EQ(running->help, "Number of requests in model execution batches.");
  ASSERT_EQ(running->samples.size(), 2u);
  EXPECT_EQ(*running->samples[1].label("engine"), "1");
  EXPECT_EQ(*running->samples[1].label("model_name"), "meta-llama/Llama-3.1-8B-Instruct");

  const Family* preempt = e.family("vllm:num_preemptions_total");
  ASSERT_NE(preempt, nullptr);
  EXPECT_EQ(preempt->type, MetricType::kCounter);
  EXPECT_EQ(e.family("vllm:num_preemptions_created")->type, MetricType::kGauge);

  const Family* ttft = e.family("vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, MetricType::kHistogram);
  EXPECT_EQ(ttft->samples.size(), 16u);  // 14 buckets + _count + _sum, all in the family
  EXPECT_EQ(ttft->samples.back().name, "vllm:time_to_first_token_seconds_sum");
  EXPECT_DOUBLE_EQ(ttft->samples.back().value, 0.6);

  EXPECT_DOUBLE_EQ(e.family("process_virtual_memory_bytes")->samples[0].value, 1.2345678e10);
  EXPECT_EQ(*e.family("python_info")->samples[0].label("version"), "3.12.3");
  EXPECT_EQ(e.families.size(), 13u);
  EXPECT_EQ(to_string(detect_flavor(e)), "vllm");
}

TEST(prometheus_parse, sglang_sum_before_buckets) {
  const Exposition e = parse_exposition(kSglang);
  EXPECT_EQ(detect_flavor(e), ServerFlavor::kSglang);
  const auto h = histogram(e, "sglang:time_to_first_token_seconds");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->le, (std::vector<double>{0.1, 0.2, 0.4, kInf}));
  EXPECT_EQ(h->cumulative, (std::vector<double>{100, 300, 400, 400}));
  EXPECT_DOUBLE_EQ(h->count, 400);
  EXPECT_DOUBLE_EQ(h->sum, 2.3518979474117756e+06);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "sglang:prompt_tokens_total"), 8128902.0);
}

TEST(prometheus_parse, label_value_and_help_escapes) {
  const Exposition e = parse_exposition(
      "# HELP m Line one\\nline two with a \\\\ backslash and a \\t kept\n"
      "# TYPE m gauge\n"
      "m{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",utf8=\"caf\xc3\xa9 \xe2\x9c\x93\"} 1\n");
  const Family* f = e.family("m");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->help, "Line one\nline two with a \\ backslash and a \\t kept");
  const Sample& s = f->samples.at(0);
  EXPECT_EQ(*s.label("path"), "C:\\dir");
  EXPECT_EQ(*s.label("quote"), "say \"hi\"");
  EXPECT_EQ(*s.label("nl"), "a\nb");
  EXPECT_EQ(*s.label("utf8"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(s.label("absent"), nullptr);
}

TEST(prometheus_parse, special_values_and_timestamps) {
  const Exposition e = parse_exposition(
      "a NaN\n"
      "b +Inf\n"
      "c -Inf\n"
      "d 1e+06 1712345678901\n"
      "e -0.5 -5\n"
      "f Inf\n"
      "g 3\n"
      "h .5e-3\n"
      "i +7\n"
      "j nan\n");
  auto v = [&](const char* n) { return e.family(n)->samples.at(0).value; };
  EXPECT_TRUE(std::isnan(v("a")));
  EXPECT_EQ(v("b"), kInf);
  EXPECT_EQ(v("c"), -kInf);
  EXPECT_DOUBLE_EQ(v("d"), 1e6);
  EXPECT_EQ(e.family("d")->samples[0].timestamp_ms, 1712345678901);
  EXPECT_DOUBLE_EQ(v("e"), -0.5);
  EXPECT_EQ(e.family("e")->samples[0].timestamp_ms, -5);
  EXPECT_EQ(v("f"), kInf);
  EXPECT_DOUBLE_EQ(v("g"), 3);
  EXPECT_FALSE(e.family("g")->samples[0].timestamp_ms);
  EXPECT_DOUBLE_EQ(v("h"), 0.0005);
  EXPECT_DOUBLE_EQ(v("i"), 7);
  EXPECT_TRUE(std::isnan(v("j")));
  EXPECT_EQ(e.family("a")->type, MetricType::kUntyped);
}

TEST(prometheus_parse, whitespace_crlf_blank_lines_comments_and_trailing_comma) {
  const Exposition e = parse_exposition(
      "\n"
      "# just a comment\n"
      "#another\n"
      "   \t\n"
      "# TYPE x counter\r\n"
      "x_total{a=\"1\",} 2\r\n"
      "x_total { a = \"2\" , b=\"3\" } \t 4   \n"
      "y{} 5\n"
      "  z\t6");  // no final newline
  // `x_total` is not the family `x` (a counter's samples carry the family's own name in 0.0.4).
  ASSERT_NE(e.family("x_total"), nullptr);
  EXPECT_EQ(e.family("x_total")->samples.size(), 2u);
  EXPECT_EQ(*e.family("x_total")->samples[1].label("b"), "3");
  EXPECT_DOUBLE_EQ(*sum_samples(e, "x_total"), 6);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "x_total", {{"a", "2"}}), 4);
  EXPECT_FALSE(sum_samples(e, "x_total", {{"a", "9"}}));
  EXPECT_TRUE(e.family("y")->samples[0].labels.empty());
  EXPECT_DOUBLE_EQ(e.family("z")->samples[0].value, 6);
  EXPECT_EQ(e.family("x")->type, MetricType::kCounter);
  EXPECT_TRUE(e.family("x")->samples.empty());
}

TEST(prometheus_parse, empty_and_comment_only_inputs) {
  EXPECT_TRUE(parse_exposition("").families.empty());
  EXPECT_EQ(parse_exposition("# hello\n\n# world\n").sample_count(), 0u);
  // HELP and TYPE alone declare a family without samples.
  const Exposition e = parse_exposition("# HELP q Some help\n# TYPE q gauge\n");
  ASSERT_EQ(e.families.size(), 1u);
  EXPECT_EQ(e.families[0].help, "Some help");
  EXPECT_EQ(e.sample_count(), 0u);
}

TEST(prometheus_parse, summary_and_interleaved_families) {
  const Exposition e = parse_exposition(
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 1\n"
      "s{quantile=\"0.99\"} 2\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 1\n"
      "s_sum 3\n"  // back to the summary: found by name
      "h_bucket{le=\"+Inf\"} 2\n"
      "h_count 2\n"
      "s_count 2\n"
      "h_sum 1.5\n");
  ASSERT_EQ(e.families.size(), 2u);
  EXPECT_EQ(e.family("s")->samples.size(), 4u);
  EXPECT_EQ(e.family("h")->samples.size(), 4u);
  const auto h = histogram(e, "h");
  ASSERT_TRUE(h);
  EXPECT_DOUBLE_EQ(h->count, 2);
  EXPECT_DOUBLE_EQ(*histogram_mean(*h), 0.75);
}

// Each malformed line gives a ParseError naming its line and the problem.
TEST(prometheus_parse, malformed_input_is_a_clear_error) {
  struct Case {
    std::string text;
    std::size_t line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"ok 1\nm\n", 2, "missing value"},
      {"m abc\n", 1, "not a number"},
      {"m 0x10\n", 1, "not a number"},
      {"m 1.2.3\n", 1, "not a number"},
      {"m{a=\"1} 2\n", 1, "unterminated"},
      {"m{a=\"1\n", 1, "unterminated"},
      {"m{a=\"\\x\"} 1\n", 1, "invalid escape"},
      {"m{a 1} 1\n", 1, "expected '='"},
      {"m{a=1} 1\n", 1, "double quotes"},
      {"m{a=\"1\" b=\"2\"} 1\n", 1, "expected ','"},
      {"m{a=\"1\"\n", 1, "not closed"},
      {"m{\"a\"=\"1\"} 1\n", 1, "expected a label name"},
      {"1m 2\n", 1, "expected a metric name"},
      {"m-x 2\n", 1, "invalid character"},
      {"m{a=\"1\",a=\"2\"} 1\n", 1, "appears twice"},
      {"m 1 2 3\n", 1, "after the timestamp"},
      {"m 1 1.5\n", 1, "timestamp"},
      {"# TYPE m blah\n", 1, "unknown type"},
      {"# TYPE m gauge extra\n", 1, "unexpected text"},
      {"# TYPE m gauge\n# TYPE m counter\n", 2, "second TYPE"},
      {"# HELP m a\n# HELP m b\n", 2, "second HELP"},
      {"# TYPE\n", 1, "without a metric name"},
      {"# TYPE h histogram\nh_bucket 1\n", 2, "no 'le' label"},
      {"# TYPE h histogram\nh_bucket{le=\"big\"} 1\n", 2, "not a number"},
      {"# TYPE s summary\ns 1\n", 2, "quantile"},
      {"<html><body>Not Found</body></html>\n", 1, "expected a metric name"},
      {"{\"detail\":\"Not Found\"}", 1, "expected a metric name"},
      {"a 1\nb 2\n\nc{x=\"1\"} 3 4 5\n", 4, "after the timestamp"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      (void)parse_exposition(c.text);
      ADD_FAILURE() << "parsed";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line " + std::to_string(c.line) + ":"), std::string::npos) << e.what();
    }
    std::string err;
    EXPECT_FALSE(try_parse_exposition(c.text, &err));
    EXPECT_FALSE(err.empty());
  }
}

// Every truncation and every single-byte corruption of a real exposition either parses or gives
// a ParseError: no crash, no other exception.
TEST(prometheus_parse, truncated_or_corrupted_input_never_crashes) {
  const std::string text = std::string(kVllmBefore).substr(0, 3000);
  std::size_t parsed = 0;
  std::size_t rejected = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    std::string err;
    (try_parse_exposition(std::string_view(text).substr(0, n), &err) ? parsed : rejected)++;
  }
  for (std::size_t i = 0; i < text.size(); i += 7) {
    for (char c : {'\0', '"', '\\', '{', '}', ' ', '\n', '\xff', '='}) {
      std::string t = text;
      t[i] = c;
      std::string err;
      (try_parse_exposition(t, &err) ? parsed : rejected)++;
    }
  }
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(rejected, 0u);
}

// ---------------------------------------------------------------------------- the arithmetic

TEST(prometheus_math, sums_and_means_over_label_sets) {
  const Exposition e = parse_exposition(kVllmAfter);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:num_requests_running"), 12);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:num_requests_running", {{"engine", "1"}}), 5);
  EXPECT_DOUBLE_EQ(*mean_samples(e, "vllm:kv_cache_usage_perc"), 0.375);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:request_success_total"), 110);
  EXPECT_FALSE(sum_samples(e, "vllm:absent"));
  EXPECT_FALSE(mean_samples(e, "vllm:absent"));
  // NaN samples are skipped.
  const Exposition n = parse_exposition("g{a=\"1\"} NaN\ng{a=\"2\"} 4\n");
  EXPECT_DOUBLE_EQ(*sum_samples(n, "g"), 4);
  EXPECT_DOUBLE_EQ(*mean_samples(n, "g"), 4);
}

TEST(prometheus_math, delta_quantiles_and_mean_of_a_run) {
  const Exposition before = parse_exposition(kVllmBefore);
  const Exposition after = parse_exposition(kVllmAfter);
  const auto hb = histogram(before, "vllm:time_to_first_token_seconds");
  const auto ha = histogram(after, "vllm:time_to_first_token_seconds");
  ASSERT_TRUE(hb && ha);
  const auto d = histogram_delta(*hb, *ha);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->reset);
  EXPECT_DOUBLE_EQ(d->hist.count, 100);
  EXPECT_NEAR(d->hist.sum, 8.5, 1e-12);
  EXPECT_NEAR(*histogram_mean(d->hist), 0.085, 1e-12);
  // histogram_quantile by hand: p50 has rank 50 in (0.08, 0.1] holding 50 from cumulative 40:
  // 0.08 + 0.02 × 10/50; p90 (rank 90) is that bucket's top; p99 (rank 99) is 9/10 into
  // (0.1, 0.25].
  EXPECT_NEAR(histogram_quantile(0.5, d->hist), 0.084, 1e-12);
  EXPECT_NEAR(histogram_quantile(0.9, d->hist), 0.1, 1e-12);
  EXPECT_NEAR(histogram_quantile(0.99, d->hist), 0.235, 1e-12);
  EXPECT_DOUBLE_EQ(histogram_quantile(0.0, d->hist), 0.0);  // rank 0: the first bucket, from 0
  EXPECT_NEAR(histogram_quantile(1.0, d->hist), 0.25, 1e-12);
}

TEST(prometheus_math, histogram_quantile_edge_cases) {
  Histogram h;
  h.le = {1, 2, kInf};
  h.cumulative = {10, 10, 20};
  h.count = 20;
  // Rank in the first bucket: interpolated from 0.
  EXPECT_DOUBLE_EQ(histogram_quantile(0.25, h), 0.5);
  // Rank in +Inf: the largest finite bound.
  EXPECT_DOUBLE_EQ(histogram_quantile(0.99, h), 2);
  EXPECT_EQ(histogram_quantile(-0.1, h), -kInf);
  EXPECT_EQ(histogram_quantile(1.1, h), kInf);
  EXPECT_TRUE(std::isnan(histogram_quantile(std::nan(""), h)));

  Histogram empty;
  empty.le = {1, kInf};
  empty.cumulative = {0, 0};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, empty)));
  EXPECT_FALSE(histogram_mean(empty));

  Histogram only_inf;
  only_inf.le = {kInf};
  only_inf.cumulative = {5};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, only_inf)));

  Histogram no_inf;  // as given by hand: not a valid Prometheus histogram
  no_inf.le = {1, 2};
  no_inf.cumulative = {1, 2};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, no_inf)));

  Histogram negative;
  negative.le = {-1, 0, kInf};
  negative.cumulative = {5, 10, 10};
  EXPECT_DOUBLE_EQ(histogram_quantile(0.2, negative), -1);  // first bound <= 0: no interpolation
  EXPECT_DOUBLE_EQ(histogram_quantile(0.75, negative), -0.5);

  Histogram dip;  // non-monotonic (a delta of racing scrapes): made monotonic first
  dip.le = {1, 2, 3, kInf};
  dip.cumulative = {2, 1, 8, 8};  // taken as {2, 2, 8, 8}
  EXPECT_DOUBLE_EQ(histogram_quantile(0.5, dip), 2.0 + 2.0 / 6.0);
}

TEST(prometheus_math, delta_reset_and_incompatible_buckets) {
  Histogram a;
  a.le = {1, kInf};
  a.cumulative = {5, 10};
  a.sum = 7;
  a.count = 10;
  Histogram b = a;
  b.cumulative = {1, 2};
  b.sum = 1;
  b.count = 2;
  const auto d = histogram_delta(a, b);  // b has fewer: the server restarted
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->reset);
  EXPECT_DOUBLE_EQ(d->hist.count, 2);
  Histogram c = a;
  c.le = {2, kInf};
  EXPECT_FALSE(histogram_delta(a, c));
}

TEST(prometheus_math, histogram_without_inf_bucket_gets_one) {
  const Exposition e = parse_exposition(
      "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 5\nh_count 6\nh_sum 9\n");
  const auto h = histogram(e, "h");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->le.back(), kInf);
  EXPECT_DOUBLE_EQ(h->cumulative.back(), 6);
  EXPECT_FALSE(histogram(e, "absent"));
}

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
