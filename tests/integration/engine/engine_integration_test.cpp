// The engine simulator end to end: llmload drives the real llmload-server (default latency model
// "engine") over loopback, and what a vLLM user would see must show up in the client's numbers,
// in the server's /metrics and in the ground truth the server sends back.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "poll.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

/// llmload run against `base_url`.
LlmloadRun run_llmload(const TempDir& dir, const std::string& base_url, std::vector<std::string> args) {
  args.insert(args.begin(), {"--base-url", base_url});
  return testing::run_llmload(dir, args);
}

std::string http_get(const std::string& url) {
  const RunResult r = run({"curl", "-sS", "--max-time", "10", url}, 20s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

/// The value of a Prometheus sample line that starts with `name_and_labels` (exact), or -1.
double metric(const std::string& text, const std::string& name_and_labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name_and_labels + " ", 0) == 0) return std::stod(line.substr(name_and_labels.size() + 1));
  }
  return -1;
}

const std::string kLabels = "{engine=\"0\",model_name=\"llmload-mock\"}";

/// The server's /metrics once `name_and_labels` reads `value`, polled up to 10 s (a loaded
/// machine may take longer than a fixed sleep); the last scrape if it never did.
std::string metrics_once(const std::string& base_url, const std::string& name_and_labels, double value) {
  std::string m;
  poll_until(
      [&] {
        m = http_get(base_url + "/metrics");
        return metric(m, name_and_labels) == value;
      },
      20ms, 10s);
  return m;
}

TEST(Engine, TpotGrowsWithConcurrencyThroughTheRealServer) {
  auto server = start_server({"--profile", "llama-3-8b-h100"});
  TempDir one;
  TempDir many;
  auto a = run_llmload(one, server.base_url,
                       {"--scenario", "concurrency", "--concurrency", "1", "--num-requests", "8", "--input-tokens",
                        "512", "--output-tokens", "24", "--seed", "1"});
  auto b = run_llmload(many, server.base_url,
                       {"--scenario", "concurrency", "--concurrency", "48", "--num-requests", "96", "--input-tokens",
                        "512", "--output-tokens", "24", "--seed", "2"});
  ASSERT_EQ(a.proc.exit_code, 0) << a.proc.err;
  ASSERT_EQ(b.proc.exit_code, 0) << b.proc.err;
  const double tpot1 = a.result["median_tpot_ms"];
  const double tpot48 = b.result["median_tpot_ms"];
  // One request decodes at the weight-read floor: 16 GB / (0.7 x 3.35 TB/s) + 1 ms = 7.8 ms.
  EXPECT_GE(tpot1, 7.5);
  EXPECT_LE(tpot1, 7.85 * 1.5);
  // 48 in flight share steps with each other's 512-token prefills: clearly slower per token.
  EXPECT_GT(tpot48, 1.5 * tpot1) << "tpot at 1: " << tpot1 << " ms, at 48: " << tpot48 << " ms";
  // Throughput still rises with batching (the point of continuous batching).
  EXPECT_GT(b.result["output_throughput"].get<double>(), 5 * a.result["output_throughput"].get<double>());
}

TEST(Engine, QueueingOnceMaxNumSeqsIsReachedRaisesTtft) {
  auto server = start_server({"--profile", "tiny", "--max-num-seqs", "2"});
  TempDir dir;
  auto out = run_llmload(dir, server.base_url,
                         {"--scenario", "offline", "--num-requests", "12", "--input-tokens", "32", "--output-tokens",
                          "40", "--seed", "3"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  std::vector<double> ttfts;
  for (const auto& r : out.records) {
    if (r["ok"].get<bool>()) ttfts.push_back(r["ttft_ms"].get<double>());
  }
  ASSERT_EQ(ttfts.size(), 12u);
  std::sort(ttfts.begin(), ttfts.end());
  // Two run at once; the last pair waits for five pairs of 40 steps ahead of it.
  EXPECT_GT(ttfts.back(), 4 * ttfts.front()) << "fastest " << ttfts.front() << " ms, slowest " << ttfts.back();
  const std::string m = http_get(server.base_url + "/metrics");
  EXPECT_GT(metric(m, "vllm:request_queue_time_seconds_sum" + kLabels), 0.0);
  EXPECT_EQ(metric(m, "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"llmload-mock\"}"),
            12.0);
}

TEST(Engine, PreemptionsAppearWhenTheKvCacheIsExceededAndTokensStayExact) {
  auto server = start_server({"--profile", "tiny", "--kv-cache-tokens", "2048", "--max-model-len", "1024"});
  TempDir dir;
  // 16 x (100 + 300) tokens = 6400 > 2048: running requests outgrow the cache and are preempted.
  auto out = run_llmload(dir, server.base_url,
                         {"--scenario", "concurrency", "--concurrency", "16", "--num-requests", "32",
                          "--input-tokens", "100", "--output-tokens", "300", "--seed", "4"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  EXPECT_EQ(out.result["failed"], 0);
  EXPECT_EQ(out.result["total_output_tokens"], 32 * 300) << "recomputed tokens must not be sent twice";
  const std::string m = http_get(server.base_url + "/metrics");
  EXPECT_GT(metric(m, "vllm:num_preemptions_total" + kLabels), 0.0) << m;
  EXPECT_EQ(metric(m, "vllm:generation_tokens_total" + kLabels), 32.0 * 300 /*+ warmup 0*/)
      << "generation counts tokens once, also across recomputes";
  EXPECT_GE(metric(m, "vllm:prompt_tokens_total" + kLabels), 32.0 * 100);
}

TEST(Engine, MaxWaitingAnswers429AndTheClientCarriesOn) {
  auto server = start_server({"--profile", "tiny", "--max-num-seqs", "1", "--max-waiting", "2"});
  TempDir dir;
  auto out = run_llmload(dir, server.base_url,
                         {"--scenario", "offline", "--num-requests", "20", "--input-tokens", "16", "--output-tokens",
                          "50", "--seed", "5"});
  EXPECT_TRUE(std::filesystem::exists(dir.file("result.json"))) << out.proc.err;
  const json& errors = out.result["errors"];
  ASSERT_TRUE(errors["by_http_status"].contains("429")) << errors.dump();
  EXPECT_GE(errors["by_http_status"]["429"]["count"].get<int>(), 10);
  EXPECT_GE(out.result["completed"].get<int>(), 1);
  EXPECT_EQ(out.result["completed"].get<int>() + out.result["failed"].get<int>(), 20);
  // Refused requests never reached the engine: they stay out of its request metrics.
  const std::string m = http_get(server.base_url + "/metrics");
  EXPECT_EQ(metric(m, "vllm:e2e_request_latency_seconds_count" + kLabels), out.result["completed"].get<double>());
}

TEST(Engine, EveryInjectedFaultIsRecordedAsItsErrorClassAndTheRunCarriesOn) {
  auto server = start_server({"--profile", "tiny", "--fault", "0.1:error=503", "--fault", "0.1:reset@3", "--fault",
                              "0.1:malformed@2", "--fault", "0.1:stall=3s@1", "--fault", "0.1:slow-first-byte=3s",
                              "--seed", "9"});
  TempDir dir;
  auto out = run_llmload(dir, server.base_url,
                         {"--scenario", "concurrency", "--concurrency", "16", "--num-requests", "200",
                          "--input-tokens", "16", "--output-tokens", "6", "--idle-timeout", "1s", "--seed", "6"});
  ASSERT_TRUE(std::filesystem::exists(dir.file("result.json"))) << out.proc.err;
  std::map<std::string, int> classes;
  for (const auto& r : out.records) classes[r["error_class"].get<std::string>()]++;
  // Each fault has its own class: 503 -> http_status, RST mid-stream -> incomplete, a data line
  // that is not JSON -> protocol, silence past --idle-timeout (stall, slow first byte) -> idle_timeout.
  for (const char* c : {"none", "http_status", "incomplete", "protocol", "idle_timeout"}) {
    EXPECT_GT(classes[c], 0) << c << "; classes seen: " << json(classes).dump();
  }
  const int total = static_cast<int>(out.records.size());
  EXPECT_GE(total, 200);
  // About half the requests are faulted (five rules at 10%, first that fires wins: 1 - 0.9^5).
  EXPECT_GT(classes["none"], total / 4);
  EXPECT_LT(classes["none"], total * 3 / 4);
  EXPECT_EQ(out.result["errors"]["by_http_status"]["503"]["count"].get<int>(), classes["http_status"]);
}

TEST(Engine, FaultHeaderIsValidated) {
  auto server = start_server({"--profile", "tiny"});
  const RunResult r = run({"curl", "-sS", "-H", "X-Llmload-Fault: explode@2", "-H", "Content-Type: application/json",
                           "-d", R"({"model":"llmload-mock","prompt":"a b","max_tokens":2})", "-w", "\n%{http_code}",
                           server.base_url + "/v1/completions"},
                          20s);
  EXPECT_NE(r.out.find("\n400"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("X-Llmload-Fault"), std::string::npos) << r.out;
}

TEST(Engine, ResponsesCarryTheServersGroundTruthTimings) {
  auto server = start_server({"--profile", "tiny"});
  const RunResult r = run({"curl", "-sS", "-H", "Content-Type: application/json", "-d",
                           R"({"model":"llmload-mock","prompt":"a b c","max_tokens":4})",
                           server.base_url + "/v1/completions"},
                          20s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json body = json::parse(r.out);
  ASSERT_TRUE(body.contains("llmload")) << r.out;
  const json& t = body["llmload"];
  EXPECT_GT(t["arrival_unix_ns"].get<std::int64_t>(), 0);
  EXPECT_GE(t["queue_s"].get<double>(), 0.0);
  EXPECT_GT(t["first_token_s"].get<double>(), t["queue_s"].get<double>());
  // Four steps of the tiny model (~1.2 ms each) at least.
  EXPECT_GT(t["last_token_s"].get<double>(), 0.004);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST(Engine, PrefixCachingHitsAreReportedToTheClient) {
  auto server = start_server({"--profile", "tiny"});
  std::string prompt;
  for (int i = 0; i < 100; ++i) prompt += "word" + std::to_string(i) + " ";
  const json req = {{"model", "llmload-mock"}, {"prompt", prompt}, {"max_tokens", 2}};
  auto post = [&] {
    const RunResult r = run({"curl", "-sS", "-H", "Content-Type: application/json", "-d", req.dump(),
                             server.base_url + "/v1/completions"},
                            20s);
    return json::parse(r.out);
  };
  const json first = post();
  const json second = post();
  EXPECT_EQ(first["llmload"]["cached_tokens"], 0);
  EXPECT_EQ(second["llmload"]["cached_tokens"], 96) << "six full blocks of 16 of the 100-token prompt";
  EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"], 96) << second.dump();
  const std::string m = http_get(server.base_url + "/metrics");
  EXPECT_EQ(metric(m, "vllm:prefix_cache_hits_total" + kLabels), 96.0);
  EXPECT_EQ(metric(m, "vllm:prefix_cache_queries_total" + kLabels), 200.0);
}

TEST(Engine, MetricsParseWithThePrometheusPythonClient) {
  auto server = start_server({"--profile", "tiny"});
  TempDir dir;
  auto out = run_llmload(dir, server.base_url,
                         {"--scenario", "concurrency", "--concurrency", "4", "--num-requests", "8", "--input-tokens",
                          "20", "--output-tokens", "10"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  const std::string text = http_get(server.base_url + "/metrics");
  const std::string path = dir.file("metrics.txt");
  std::ofstream(path) << text;
  const std::string script =
      "import sys\n"
      "from prometheus_client.parser import text_string_to_metric_families\n"
      "fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}\n"
      "need = {'vllm:num_requests_running': 'gauge', 'vllm:num_requests_waiting': 'gauge',\n"
      "        'vllm:kv_cache_usage_perc': 'gauge', 'vllm:num_preemptions': 'counter',\n"
      "        'vllm:prompt_tokens': 'counter', 'vllm:generation_tokens': 'counter',\n"
      "        'vllm:request_success': 'counter', 'vllm:time_to_first_token_seconds': 'histogram',\n"
      "        'vllm:inter_token_latency_seconds': 'histogram', 'vllm:e2e_request_latency_seconds': 'histogram',\n"
      "        'vllm:request_queue_time_seconds': 'histogram'}\n"
      "for name, kind in need.items():\n"
      "    assert name in fams, name\n"
      "    assert fams[name].type == kind, (name, fams[name].type)\n"
      "ttft = fams['vllm:time_to_first_token_seconds']\n"
      "count = [s.value for s in ttft.samples if s.name.endswith('_count')][0]\n"
      "assert count == 8, count\n"
      "gen = [s.value for s in fams['vllm:generation_tokens'].samples if s.name.endswith('_total')][0]\n"
      "assert gen == 80, gen\n"
      "print('ok')\n";
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const RunResult r = run({python, "-c", script, path}, 30s);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err
                            << "\n(needs Debian's python3-prometheus-client: scripts/setup.sh installs it)";
}

TEST(Engine, AClientThatGivesUpWhileQueuedLeavesTheEngineAtOnce) {
  // One sequence at a time: A runs for ~2.4 s (2000 steps of ~1.2 ms); B waits behind it, and
  // its client gives up after 300 ms, long before B would be scheduled.
  auto server = start_server({"--profile", "tiny", "--max-num-seqs", "1"});
  const std::string url = server.base_url + "/v1/completions";
  Subprocess a({"curl", "-sS", "-o", "/dev/null", "-H", "Content-Type: application/json", "-d",
                R"({"model":"llmload-mock","prompt":"a b","max_tokens":2000})", url});
  // B only once A holds the one sequence (not after a fixed sleep: a slow curl start would let B in first).
  metrics_once(server.base_url, "vllm:num_requests_running" + kLabels, 1.0);
  const RunResult b = run({"curl", "-sS", "--max-time", "0.3", "-H", "Content-Type: application/json", "-d",
                           R"({"model":"llmload-mock","prompt":"c d","max_tokens":10})", url},
                          20s);
  EXPECT_NE(b.exit_code, 0) << "curl should have timed out";
  const std::string m = metrics_once(
      server.base_url, "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"llmload-mock\"}", 1.0);
  // A still runs; B has left the queue and counts as aborted, without waiting for A.
  EXPECT_EQ(metric(m, "vllm:num_requests_running" + kLabels), 1.0) << m;
  EXPECT_EQ(metric(m, "vllm:num_requests_waiting" + kLabels), 0.0);
  EXPECT_EQ(metric(m, "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"llmload-mock\"}"),
            1.0);
  EXPECT_EQ(a.wait(30s), 0);
  const std::string after = http_get(server.base_url + "/metrics");
  EXPECT_EQ(metric(after, "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"llmload-mock\"}"),
            1.0);
  EXPECT_EQ(metric(after, "vllm:generation_tokens_total" + kLabels), 2000.0) << "B never produced a token";
}

TEST(Engine, AClientThatGivesUpDuringAStallLeavesTheEngineAndTheGaugesShowIt) {
  auto server = start_server({"--profile", "tiny"});
  const RunResult r = run({"curl", "-sS", "-N", "--max-time", "0.5", "-H", "X-Llmload-Fault: stall=20s@1", "-H",
                           "Content-Type: application/json", "-d",
                           R"({"model":"llmload-mock","prompt":"a b","max_tokens":2000,"stream":true})",
                           server.base_url + "/v1/completions"},
                          20s);
  EXPECT_NE(r.exit_code, 0) << "curl should have timed out";
  const std::string m = metrics_once(server.base_url, "vllm:num_requests_running" + kLabels, 0.0);
  // The connection is still asleep in the stall, but the request left the engine, which is idle
  // now, and the gauges say so without waiting for another step.
  EXPECT_EQ(metric(m, "vllm:num_requests_running" + kLabels), 0.0) << m;
  EXPECT_EQ(metric(m, "vllm:kv_cache_usage_perc" + kLabels), 0.0);
  const double generated = metric(m, "vllm:generation_tokens_total" + kLabels);
  EXPECT_LT(generated, 1000.0);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(metric(http_get(server.base_url + "/metrics"), "vllm:generation_tokens_total" + kLabels), generated)
      << "nothing generated after the client left";
}

TEST(Engine, DeviceCudaWithoutAGpuIsAClearError) {
  const RunResult r = run({binary_path("llmload-server"), "--port", "0", "--device", "cuda"}, 20s);
  if (r.out.find("listening on") != std::string::npos) GTEST_SKIP() << "a GPU is usable on this machine";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--device cuda: no usable GPU"), std::string::npos) << r.err;
}

TEST(Engine, BadProfileIsAClearError) {
  const RunResult r = run({binary_path("llmload-server"), "--port", "0", "--profile", "/nonexistent/p.yaml"}, 20s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/p.yaml"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace llmload::testing
