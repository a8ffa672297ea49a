// LoRA adapters end to end: the real llmload deals a Zipf-skewed mix of a base model and two
// adapters to the real llmload-server with one adapter slot (--max-loras 1), and the adapter
// loads the engine charges show up in the client's per-model numbers and the server's /metrics.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing::lora_integration_test {

using nlohmann::json;
using namespace std::chrono_literals;

/// The value of the Prometheus sample `name_and_labels` (exact), or -1.
double lora_metric(const std::string& text, const std::string& name_and_labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name_and_labels + " ", 0) == 0) return std::stod(line.substr(name_and_labels.size() + 1));
  }
  return -1;
}

TEST(EngineLora, AdapterLoadsShowInTheClientsPerModelTtftAndTheServersMetrics) {
  // 20 ms per load from CPU memory (and, with one CPU slot for two adapters, each swap also reads
  // from disk): large beside the tiny profile's steps, so the comparison does not hang on noise.
  auto server = start_server({"--profile", "tiny", "--model", "base", "--lora-modules", "lora-a=/x", "lora-b=/y",
                              "--max-loras", "1", "--lora-load-time", "20ms"});
  TempDir dir;
  const LlmloadRun out =
      run_llmload(dir, {"--base-url", server.base_url, "--model", "base,lora-a,lora-b", "--model-weights", "zipf",
                        "--num-requests", "60", "--scenario", "concurrency", "--concurrency", "8", "--input-tokens",
                        "64", "--output-tokens", "16", "--seed", "7"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  ASSERT_EQ(out.result["failed"], 0);
  const json& by_model = out.result["by_model"];
  ASSERT_TRUE(by_model.is_object()) << out.result.dump();
  double adapter_ttft_sum = 0;
  int adapter_requests = 0;
  for (const char* model : {"base", "lora-a", "lora-b"}) {
    ASSERT_TRUE(by_model.contains(model)) << by_model.dump();
    const json& m = by_model[model];
    EXPECT_GT(m["completed"].get<int>(), 0) << model;
    if (std::string(model) != "base") {
      adapter_ttft_sum += m["latency"]["ttft"]["mean_ms"].get<double>() * m["completed"].get<double>();
      adapter_requests += m["completed"].get<int>();
    }
  }
  EXPECT_EQ(by_model["base"]["completed"].get<int>() + adapter_requests, 60);
  // The report's title names every model the requests were dealt over, not the first alone.
  EXPECT_NE(out.proc.out.find("llmload concurrency | base,lora-a,lora-b"), std::string::npos) << out.proc.out;
  // So do the report's header and its conditions (report.html, summary.md).
  const std::string summary = read_file(dir.file("summary.md"));
  EXPECT_NE(summary.find("- **models**: base,lora-a,lora-b"), std::string::npos) << summary;
  EXPECT_NE(read_file(dir.file("report.html")).find(" · models base,lora-a,lora-b</p>"), std::string::npos);

  const RunResult scrape = run({"curl", "-sS", "--max-time", "10", server.base_url + "/metrics"}, 20s);
  ASSERT_EQ(scrape.exit_code, 0) << scrape.err;
  EXPECT_GT(lora_metric(scrape.out, "llmload:lora_loads_total{engine=\"0\",model_name=\"base\"}"), 0.0) << scrape.out;
  EXPECT_NE(scrape.out.find("vllm:lora_requests_info{max_lora=\"1\","), std::string::npos);

  // Adapter requests wait for their adapter's turn in the one slot and for its loads; base
  // requests run beside either adapter.
  const double base_ttft = by_model["base"]["latency"]["ttft"]["mean_ms"].get<double>();
  const double adapter_ttft = adapter_ttft_sum / adapter_requests;
  EXPECT_GT(adapter_ttft, base_ttft) << "adapters " << adapter_ttft << " ms, base " << base_ttft << " ms";
}

TEST(EngineLora, ModelsListsTheAdaptersAndAnUnknownModelIs404) {
  auto server = start_server({"--profile", "tiny", "--model", "base", "--lora-modules", "lora-a=/adapters/a"});
  const RunResult models = run({"curl", "-sS", "--max-time", "10", server.base_url + "/v1/models"}, 20s);
  ASSERT_EQ(models.exit_code, 0) << models.err;
  const json data = json::parse(models.out)["data"];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[1]["id"], "lora-a");
  EXPECT_EQ(data[1]["root"], "/adapters/a");
  EXPECT_EQ(data[1]["parent"], "base");
  const RunResult unknown =
      run({"curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}", server.base_url + "/v1/completions", "-d",
           R"({"model":"lora-z","prompt":"a b","max_tokens":2})"},
          20s);
  EXPECT_NE(unknown.out.find("The model `lora-z` does not exist."), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("\n404"), std::string::npos) << unknown.out;
}

}  // namespace llmload::testing::lora_integration_test
