// The probe stream (--probe-rate) with the real binaries against llmload-server on loopback: its
// section, its separation from the load, a sweep where the probes' TTFT grows with the load, and
// the validation of bad values.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::probe_test {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::ServerHandle;
using testing::TempDir;

// A fixed-latency server of 4 slots: requests beyond them wait in arrival order, so a heavy load
// queues a probe behind it and a light one does not.
class ProbeStream : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerHandle(
        testing::start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "2ms", "--max-num-seqs", "4"}));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::vector<std::string> base(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--base-url", server_->base_url, "--input-tokens", "16", "--output-tokens", "20",
                                  "--seed", "3"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static ServerHandle* server_;
};
ServerHandle* ProbeStream::server_ = nullptr;

std::vector<json> jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(testing::read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

TEST_F(ProbeStream, ProbesAreReportedApartAndNotCountedInTheLoad) {
  TempDir dir;
  auto r = testing::run_llmload(dir, base({"--concurrency", "2", "--num-requests", "60", "--probe-rate", "5"}));
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  const json& res = r.result;
  // The load's counts are the load's own.
  EXPECT_EQ(res["completed"], 60);
  EXPECT_EQ(res["requests"]["issued"], 60);
  EXPECT_EQ(r.records.size(), 60u);
  for (const auto& rec : r.records) {
    EXPECT_FALSE(rec.contains("probe"));
    EXPECT_EQ(rec["requested_output_tokens"], 20);
  }
  EXPECT_EQ(res["max_in_flight"], 2);
  // The probe section, its settings in the conditions, and the probes' own file.
  const json& p = res["probe"];
  ASSERT_TRUE(p.is_object()) << res.dump();
  EXPECT_GT(p["measured"].get<int>(), 0);
  EXPECT_EQ(p["failed"], 0);
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    ASSERT_TRUE(p[m].is_object()) << m;
    for (const char* k : {"count", "mean_ms", "p50_ms", "p90_ms", "p99_ms"}) EXPECT_TRUE(p[m].contains(k)) << m << k;
  }
  EXPECT_EQ(p["baseline"]["completed"], 3);
  EXPECT_EQ(res["conditions"]["scenario"]["probe"]["rate_per_s"], 5.0);
  EXPECT_EQ(res["conditions"]["scenario"]["probe"]["output_tokens"], 16);
  const auto probes = jsonl(dir.file("probes.jsonl"));
  ASSERT_EQ(probes.size(), p["sent"].get<std::size_t>() + 3);
  for (const auto& x : probes) {
    EXPECT_TRUE(x["probe"].get<bool>());
    EXPECT_EQ(x["requested_output_tokens"], 16);
    EXPECT_EQ(x["output_tokens"], 16);
  }
  EXPECT_NE(r.proc.out.find("Probe stream"), std::string::npos) << r.proc.out;
  EXPECT_NE(testing::read_file(dir.file("report.html")).find("Probe stream"), std::string::npos);
  EXPECT_NE(testing::read_file(dir.file("summary.csv")).find("probe_ttft_p50_ms"), std::string::npos);
}

TEST_F(ProbeStream, ASweepShowsTheProbesTtftGrowingWithTheLoad) {
  TempDir dir;
  std::vector<std::string> args = {testing::binary_path("llmload"), "sweep"};
  for (const auto& a : base({"--concurrency", "1,16", "--duration", "3s", "--probe-rate", "5", "--output", dir.path()})) {
    args.push_back(a);
  }
  auto r = testing::run(args, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(testing::read_file(dir.file("sweep.json")));
  ASSERT_EQ(s["points"].size(), 2u);
  const json& light = s["points"][0]["probe"];
  const json& heavy = s["points"][1]["probe"];
  ASSERT_TRUE(light.is_object() && heavy.is_object()) << s.dump();
  // 16 requests on 4 slots queue each probe behind about three rounds of the load: relative values only.
  EXPECT_GT(heavy["ttft_p50_ms"].get<double>(), 2 * light["ttft_p50_ms"].get<double>());
  EXPECT_GE(heavy["ttft_p99_ms"].get<double>(), heavy["ttft_p50_ms"].get<double>());
  EXPECT_NE(r.out.find("Probe stream"), std::string::npos) << r.out;
}

TEST_F(ProbeStream, BadValuesAreConfigurationErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--concurrency", "1", "--num-requests", "5", "--probe-rate", "0"}, "--probe-rate"},
      {{"--concurrency", "1", "--num-requests", "5", "--probe-rate", "-2"}, "--probe-rate"},
      {{"--concurrency", "1", "--num-requests", "5", "--probe-rate", "50"}, "at most 10"},
      {{"--request-rate", "2", "--num-requests", "5", "--probe-rate", "5"}, "--probe-rate 1 or less"},
      {{"--concurrency", "1", "--duration", "2s", "--probe-rate", "0.1"}, "fewer than one probe"},
      {{"--concurrency", "1", "--num-requests", "5", "--probe-output-tokens", "8"}, "go with --probe-rate"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    auto r = testing::run_llmload(dir, base(c.args), {}, 30s);
    EXPECT_EQ(r.proc.exit_code, 2) << c.says << ": " << r.proc.err;
    EXPECT_NE(r.proc.err.find(c.says), std::string::npos) << r.proc.err;
  }
}

}  // namespace llmload::probe_test
