// ServerMetrics: values after updates, vLLM's bucket layouts, cumulative buckets, +Inf == count,
// sums, label escaping, value formatting, and exact totals under concurrent updates.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "llmload/server/metrics.hpp"
#include "sample_requests.hpp"

namespace llmload::server {
namespace {

constexpr const char* kModel = "m";

ServerMetrics make_metrics(std::int64_t max_model_len = 8192) {
  return ServerMetrics({kModel}, max_model_len, 16, 1000);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value of the sample `name{engine="0",<extra,>model_name="m"}`; fails if absent.
double value_of(const std::string& text, const std::string& name, const std::string& extra = "") {
  const std::string key = name + "{engine=\"0\"," + (extra.empty() ? "" : extra + ",") +
                          "model_name=\"" + kModel + "\"} ";
  for (const auto& line : lines_of(text)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
  }
  ADD_FAILURE() << "no sample " << key << " in:\n" << text;
  return -1;
}

bool has_sample(const std::string& text, const std::string& name) {
  for (const auto& line : lines_of(text)) {
    if (line.rfind(name + "{", 0) == 0) return true;
  }
  return false;
}

// The `le` values of histogram `name`, in rendered order, and their cumulative counts.
std::vector<std::pair<std::string, double>> buckets_of(const std::string& text,
                                                       const std::string& name) {
  std::vector<std::pair<std::string, double>> out;
  const std::string prefix = name + "_bucket{engine=\"0\",le=\"";
  for (const auto& line : lines_of(text)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const auto end = line.find('"', prefix.size());
    const std::string le = line.substr(prefix.size(), end - prefix.size());
    out.emplace_back(le, std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return out;
}

std::vector<std::string> les_of(const std::string& text, const std::string& name) {
  std::vector<std::string> les;
  for (const auto& [le, count] : buckets_of(text, name)) les.push_back(le);
  return les;
}

TEST(ServerMetrics, FreshRegistryRendersEveryFamilyAtZero) {
  const auto m = make_metrics();
  const std::string text = m.render();
  for (const char* gauge : {"vllm:num_requests_running", "vllm:num_requests_waiting",
                            "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}) {
    EXPECT_EQ(value_of(text, gauge), 0.0) << gauge;
  }
  for (const char* counter :
       {"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"}) {
    EXPECT_EQ(value_of(text, counter), 0.0) << counter;
  }
  for (const char* reason : {"stop", "length", "abort"}) {
    EXPECT_EQ(value_of(text, "vllm:request_success_total",
                       std::string("finished_reason=\"") + reason + "\""),
              0.0);
  }
  for (const char* h :
       {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds", "vllm:request_time_per_output_token_seconds",
        "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
        "vllm:request_inference_time_seconds", "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds", "vllm:request_prompt_tokens",
        "vllm:request_generation_tokens", "vllm:request_params_max_tokens",
        "vllm:iteration_tokens_total"}) {
    EXPECT_EQ(value_of(text, std::string(h) + "_count"), 0.0) << h;
    EXPECT_EQ(value_of(text, std::string(h) + "_sum"), 0.0) << h;
    EXPECT_EQ(value_of(text, std::string(h) + "_bucket", "le=\"+Inf\""), 0.0) << h;
  }
  EXPECT_FALSE(has_sample(text, "llmload:gpu_power_watts"));
  EXPECT_FALSE(has_sample(text, "llmload:gpu_energy_joules_total"));
  EXPECT_EQ(text.back(), '\n');
}

TEST(ServerMetrics, CacheConfigInfoCarriesTheConfigurationInLabels) {
  const std::string text = make_metrics().render();
  EXPECT_NE(text.find("vllm:cache_config_info{block_size=\"16\",engine=\"0\",model_name=\"m\","
                      "num_gpu_blocks=\"1000\"} 1.0\n"),
            std::string::npos)
      << text;
}

TEST(ServerMetrics, GaugesTakeTheLastValueAndCountersAdd) {
  auto m = make_metrics();
  m.set_scheduler_state(7, 9, 0.5);
  m.set_scheduler_state(3, 2, 0.25);
  m.add_preemptions(2);
  m.add_preemptions(3);
  m.add_preemptions(-4);  // ignored: counters only go up
  m.add_prefix_cache(100, 40);
  m.add_prefix_cache(10, 0);
  m.add_prompt_tokens(300);
  m.add_generation_tokens(50);
  m.add_generation_tokens(1);
  const std::string text = m.render();
  EXPECT_EQ(value_of(text, "vllm:num_requests_running"), 3.0);
  EXPECT_EQ(value_of(text, "vllm:num_requests_waiting"), 2.0);
  EXPECT_EQ(value_of(text, "vllm:kv_cache_usage_perc"), 0.25);
  EXPECT_EQ(value_of(text, "vllm:gpu_cache_usage_perc"), 0.25);
  EXPECT_EQ(value_of(text, "vllm:num_preemptions_total"), 5.0);
  EXPECT_EQ(value_of(text, "vllm:prefix_cache_queries_total"), 110.0);
  EXPECT_EQ(value_of(text, "vllm:prefix_cache_hits_total"), 40.0);
  EXPECT_EQ(value_of(text, "vllm:prompt_tokens_total"), 300.0);
  EXPECT_EQ(value_of(text, "vllm:generation_tokens_total"), 51.0);
  EXPECT_NE(text.find("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"),
            std::string::npos);
}

TEST(ServerMetrics, GpuPowerAppearsOnceSet) {
  auto m = make_metrics();
  m.set_gpu_power(300.0, 10.0);
  m.set_gpu_power(350.5, 12345.25);
  const std::string text = m.render();
  EXPECT_EQ(value_of(text, "llmload:gpu_power_watts"), 350.5);
  EXPECT_EQ(value_of(text, "llmload:gpu_energy_joules_total"), 12345.25);
  EXPECT_NE(text.find("# TYPE llmload:gpu_power_watts gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE llmload:gpu_energy_joules_total counter\n"), std::string::npos);
}

TEST(ServerMetrics, HistogramBucketsAreCumulativeWithInfEqualToCount) {
  auto m = make_metrics();
  for (std::int64_t n : {1, 8, 9, 20000}) m.observe_iteration_tokens(n);
  const std::string text = m.render();
  const std::string h = "vllm:iteration_tokens_total";
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"1.0\""), 1.0);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"8.0\""), 2.0);  // upper bounds are inclusive
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"16.0\""), 3.0);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"16384.0\""), 3.0);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"+Inf\""), 4.0);
  EXPECT_EQ(value_of(text, h + "_count"), 4.0);
  EXPECT_EQ(value_of(text, h + "_sum"), 20018.0);
  const auto buckets = buckets_of(text, h);
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_LE(buckets[i - 1].second, buckets[i].second) << buckets[i].first;
  }
  EXPECT_EQ(buckets.back().first, "+Inf");
}

TEST(ServerMetrics, InterTokenLatencyFeedsTheDeprecatedNameToo) {
  auto m = make_metrics();
  for (double s : {0.01, 0.02, 0.5, 100.0}) m.observe_inter_token_latency(s);
  m.observe_inter_token_latency(-1.0);  // a clock step back counts as 0
  const std::string text = m.render();
  for (const std::string h : {"vllm:inter_token_latency_seconds",
                              "vllm:time_per_output_token_seconds"}) {
    EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.01\""), 2.0) << h;
    EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.025\""), 3.0) << h;
    EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.5\""), 4.0) << h;
    EXPECT_EQ(value_of(text, h + "_bucket", "le=\"80.0\""), 4.0) << h;
    EXPECT_EQ(value_of(text, h + "_bucket", "le=\"+Inf\""), 5.0) << h;
    EXPECT_EQ(value_of(text, h + "_count"), 5.0) << h;
    EXPECT_DOUBLE_EQ(value_of(text, h + "_sum"), 100.53) << h;
  }
}

TEST(ServerMetrics, FinishedRequestsFillTheRequestHistograms) {
  auto m = make_metrics();
  m.on_request_finished(sample::stopped());
  m.on_request_finished(sample::aborted_in_queue());  // no TTFT; max_tokens 0: not observed

  ServerMetrics::FinishedRequest odd;  // an unknown reason counts as abort
  odd.finished_reason = "cancelled";
  odd.generation_tokens = 1;
  odd.max_tokens = 1;
  m.on_request_finished(odd);

  const std::string text = m.render();
  EXPECT_EQ(value_of(text, "vllm:request_success_total", "finished_reason=\"stop\""), 1.0);
  EXPECT_EQ(value_of(text, "vllm:request_success_total", "finished_reason=\"length\""), 0.0);
  EXPECT_EQ(value_of(text, "vllm:request_success_total", "finished_reason=\"abort\""), 2.0);

  EXPECT_EQ(value_of(text, "vllm:time_to_first_token_seconds_count"), 2.0);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:time_to_first_token_seconds_sum"), 0.05);
  EXPECT_EQ(value_of(text, "vllm:time_to_first_token_seconds_bucket", "le=\"0.04\""), 1.0);
  EXPECT_EQ(value_of(text, "vllm:time_to_first_token_seconds_bucket", "le=\"0.06\""), 2.0);
  EXPECT_EQ(value_of(text, "vllm:e2e_request_latency_seconds_count"), 3.0);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:e2e_request_latency_seconds_sum"), 3.55);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:request_queue_time_seconds_sum"), 3.01);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:request_prefill_time_seconds_sum"), 0.04);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:request_decode_time_seconds_sum"), 0.5);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:request_inference_time_seconds_sum"), 0.54);
  // 0.5 s of decode over the 4 tokens after the first; 0 for requests with fewer than 2 tokens.
  EXPECT_EQ(value_of(text, "vllm:request_time_per_output_token_seconds_count"), 3.0);
  EXPECT_DOUBLE_EQ(value_of(text, "vllm:request_time_per_output_token_seconds_sum"), 0.125);
  EXPECT_EQ(value_of(text, "vllm:request_time_per_output_token_seconds_bucket", "le=\"0.01\""),
            2.0);
  EXPECT_EQ(value_of(text, "vllm:request_prompt_tokens_count"), 3.0);
  EXPECT_EQ(value_of(text, "vllm:request_prompt_tokens_sum"), 17.0);
  EXPECT_EQ(value_of(text, "vllm:request_prompt_tokens_bucket", "le=\"5.0\""), 1.0);
  EXPECT_EQ(value_of(text, "vllm:request_prompt_tokens_bucket", "le=\"10.0\""), 3.0);
  EXPECT_EQ(value_of(text, "vllm:request_generation_tokens_sum"), 6.0);
  EXPECT_EQ(value_of(text, "vllm:request_params_max_tokens_count"), 2.0);
  EXPECT_EQ(value_of(text, "vllm:request_params_max_tokens_sum"), 17.0);
}

TEST(ServerMetrics, BucketLayoutsAreVllms) {
  const std::string text = make_metrics(8192).render();
  const std::vector<std::string> ttft = {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06",
                                         "0.08",  "0.1",   "0.25", "0.5",  "0.75", "1.0",
                                         "2.5",   "5.0",   "7.5",  "10.0", "20.0", "40.0",
                                         "80.0",  "160.0", "640.0", "2560.0", "+Inf"};
  EXPECT_EQ(les_of(text, "vllm:time_to_first_token_seconds"), ttft);
  const std::vector<std::string> itl = {"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2",
                                        "0.3",  "0.4",   "0.5",  "0.75",  "1.0", "2.5",  "5.0",
                                        "7.5",  "10.0",  "20.0", "40.0",  "80.0", "+Inf"};
  for (const char* h : {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
                        "vllm:request_time_per_output_token_seconds"}) {
    EXPECT_EQ(les_of(text, h), itl) << h;
  }
  const std::vector<std::string> request = {
      "0.3",  "0.5",  "0.8",  "1.0",  "1.5",   "2.0",   "2.5",   "5.0",   "10.0",   "15.0", "20.0",
      "30.0", "40.0", "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0", "+Inf"};
  for (const char* h : {"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
                        "vllm:request_inference_time_seconds", "vllm:request_prefill_time_seconds",
                        "vllm:request_decode_time_seconds"}) {
    EXPECT_EQ(les_of(text, h), request) << h;
  }
  const std::vector<std::string> iteration = {"1.0",    "8.0",    "16.0",   "32.0",   "64.0",
                                              "128.0",  "256.0",  "512.0",  "1024.0", "2048.0",
                                              "4096.0", "8192.0", "16384.0", "+Inf"};
  EXPECT_EQ(les_of(text, "vllm:iteration_tokens_total"), iteration);
  const std::vector<std::string> sizes = {"1.0",    "2.0",    "5.0",    "10.0",   "20.0",
                                          "50.0",   "100.0",  "200.0",  "500.0",  "1000.0",
                                          "2000.0", "5000.0", "+Inf"};
  for (const char* h : {"vllm:request_prompt_tokens", "vllm:request_generation_tokens",
                        "vllm:request_params_max_tokens"}) {
    EXPECT_EQ(les_of(text, h), sizes) << h;
  }
}

TEST(ServerMetrics, OneToTwoToFiveBucketsMatchVllm) {
  EXPECT_EQ(build_1_2_5_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(build_1_2_5_buckets(1), (std::vector<double>{1}));
  EXPECT_EQ(build_1_2_5_buckets(4), (std::vector<double>{1, 2}));
  EXPECT_TRUE(build_1_2_5_buckets(0).empty());
  EXPECT_EQ(build_1_2_5_buckets(131072).back(), 100000.0);
  // With no finite buckets a histogram still has +Inf.
  const std::string text = make_metrics(0).render();
  EXPECT_EQ(les_of(text, "vllm:request_prompt_tokens"), (std::vector<std::string>{"+Inf"}));
}

TEST(ServerMetrics, EveryFamilyHasHelpAndTypeAndEverySampleBothLabels) {
  auto m = make_metrics();
  m.set_gpu_power(1, 1);
  const std::string text = m.render();
  std::map<std::string, std::string> types;
  std::set<std::string> helps;
  int samples = 0;
  for (const auto& line : lines_of(text)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# TYPE ", 0) == 0) {
      const auto rest = line.substr(7);
      const auto space = rest.find(' ');
      EXPECT_TRUE(types.emplace(rest.substr(0, space), rest.substr(space + 1)).second) << line;
    } else if (line.rfind("# HELP ", 0) == 0) {
      const auto rest = line.substr(7);
      EXPECT_TRUE(helps.insert(rest.substr(0, rest.find(' '))).second) << line;
    } else {
      ++samples;
      EXPECT_NE(line.find("engine=\"0\""), std::string::npos) << line;
      EXPECT_NE(line.find("model_name=\"m\""), std::string::npos) << line;
    }
  }
  EXPECT_EQ(types.size(), helps.size());
  for (const auto& [name, type] : types) {
    EXPECT_TRUE(helps.count(name)) << name;
    if (type == "counter") {
      EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
    }
  }
  EXPECT_EQ(types.at("vllm:num_requests_running"), "gauge");
  EXPECT_EQ(types.at("vllm:cache_config_info"), "gauge");
  EXPECT_EQ(types.at("vllm:request_success_total"), "counter");
  EXPECT_EQ(types.at("vllm:iteration_tokens_total"), "histogram");
  EXPECT_EQ(types.at("vllm:e2e_request_latency_seconds"), "histogram");
  EXPECT_EQ(types.size(), 26u);
  EXPECT_GT(samples, 200);
}

TEST(ServerMetrics, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value("plain-model/7b"), "plain-model/7b");
  EXPECT_EQ(escape_label_value("a\"b"), "a\\\"b");
  EXPECT_EQ(escape_label_value("a\\b"), "a\\\\b");
  EXPECT_EQ(escape_label_value("a\nb"), "a\\nb");
  ServerMetrics m({"x\"y\\z\nw"}, 100, 16, 10);
  const std::string text = m.render();
  EXPECT_NE(text.find("vllm:num_requests_running{engine=\"0\",model_name=\"x\\\"y\\\\z\\nw\"} 0.0\n"),
            std::string::npos)
      << text;
  // The raw newline never reaches the output: every line is a comment or a whole sample.
  for (const auto& line : lines_of(text)) {
    EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.rfind("vllm:", 0) == 0) << line;
  }
}

TEST(ServerMetrics, ValuesAreWrittenLikePrometheusClient) {
  EXPECT_EQ(format_prometheus_value(0.0), "0.0");
  EXPECT_EQ(format_prometheus_value(1.0), "1.0");
  EXPECT_EQ(format_prometheus_value(5.0), "5.0");
  EXPECT_EQ(format_prometheus_value(0.001), "0.001");
  EXPECT_EQ(format_prometheus_value(0.75), "0.75");
  EXPECT_EQ(format_prometheus_value(2560.0), "2560.0");
  EXPECT_EQ(format_prometheus_value(100000.0), "100000.0");
  EXPECT_EQ(format_prometheus_value(1000000.0), "1e+06");
  EXPECT_EQ(format_prometheus_value(1234567.0), "1.234567e+06");
  EXPECT_EQ(format_prometheus_value(1e-5), "1e-05");
  EXPECT_EQ(format_prometheus_value(1e20), "1e+20");
  EXPECT_EQ(format_prometheus_value(-2.5), "-2.5");
  EXPECT_EQ(format_prometheus_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_prometheus_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_prometheus_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(ServerMetrics, ContentTypeIsTextFormat004) {
  EXPECT_STREQ(ServerMetrics::kContentType, "text/plain; version=0.0.4; charset=utf-8");
}

// Several threads hammer the hot-path updates while another renders; totals must be exact and
// every snapshot self-consistent (cumulative buckets, +Inf == _count).
TEST(ServerMetrics, ConcurrentUpdatesAreExact) {
  auto m = make_metrics();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40000;
  const double values[] = {0.005, 0.02, 0.3, 1.5};  // whole nanoseconds: exact sums
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0};
  // The renderer takes one snapshot before the workers start, then goes on while they run (on a
  // loaded machine it may not be scheduled before they finish: the first snapshot is certain).
  std::thread renderer([&] {
    do {
      const std::string text = m.render();
      snapshots.fetch_add(1);
      const auto b = buckets_of(text, "vllm:inter_token_latency_seconds");
      for (std::size_t i = 1; i < b.size(); ++i) ASSERT_LE(b[i - 1].second, b[i].second);
      ASSERT_EQ(b.back().second, value_of(text, "vllm:inter_token_latency_seconds_count"));
    } while (!done.load());
  });
  while (snapshots.load() == 0) std::this_thread::yield();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        m.observe_inter_token_latency(values[(i + t) % 4]);
        m.add_generation_tokens(1);
        if (i % 100 == 0) {
          ServerMetrics::FinishedRequest r;
          r.finished_reason = (i / 100) % 2 == 0 ? "stop" : "length";
          r.generation_tokens = 2;
          r.e2e_s = 0.5;
          m.on_request_finished(r);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  done.store(true);
  renderer.join();
  EXPECT_GT(snapshots.load(), 0);

  const std::string text = m.render();
  constexpr double kTotal = double{kThreads} * kPerThread;
  const std::string h = "vllm:inter_token_latency_seconds";
  EXPECT_EQ(value_of(text, h + "_count"), kTotal);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.01\""), kTotal / 4);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.025\""), kTotal / 2);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"0.3\""), kTotal * 3 / 4);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"1.0\""), kTotal * 3 / 4);
  EXPECT_EQ(value_of(text, h + "_bucket", "le=\"2.5\""), kTotal);
  EXPECT_DOUBLE_EQ(value_of(text, h + "_sum"), 146000.0);  // 80000 x 1.825 s
  EXPECT_EQ(value_of(text, "vllm:generation_tokens_total"), kTotal);
  constexpr double kFinished = double{kThreads} * kPerThread / 100;
  EXPECT_EQ(value_of(text, "vllm:request_success_total", "finished_reason=\"stop\"") +
                value_of(text, "vllm:request_success_total", "finished_reason=\"length\""),
            kFinished);
  EXPECT_EQ(value_of(text, "vllm:e2e_request_latency_seconds_count"), kFinished);
  EXPECT_EQ(value_of(text, "vllm:e2e_request_latency_seconds_sum"), kFinished * 0.5);
}

TEST(ServerMetrics, TtftObservedAtTheFirstTokenIsNotCountedAgainAtTheEnd) {
  ServerMetrics m = make_metrics();
  m.observe_time_to_first_token(0.03);
  EXPECT_EQ(value_of(m.render(), "vllm:time_to_first_token_seconds_count"), 1.0) << "visible while in flight";
  ServerMetrics::FinishedRequest r;
  r.ttft_s = 0.03;
  r.ttft_observed = true;
  m.on_request_finished(r);
  ServerMetrics::FinishedRequest other;  // a non-streaming request: observed when it finishes
  other.ttft_s = 0.5;
  m.on_request_finished(other);
  const std::string text = m.render();
  EXPECT_EQ(value_of(text, "vllm:time_to_first_token_seconds_count"), 2.0);
  EXPECT_NEAR(value_of(text, "vllm:time_to_first_token_seconds_sum"), 0.53, 1e-9);
}

}  // namespace
}  // namespace llmload::server
