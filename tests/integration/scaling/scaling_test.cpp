// `llmload scaling` with the real binaries on loopback. A deployment of K replicas is stood in for
// by one llmload-server whose engine runs K times as many requests at once (--max-num-seqs 2K)
// with a profile whose step time does not depend on the batch (memory-bound, ~5 ms per step):
// its capacity is K times the K = 1 server's, as K ideal replicas behind a router would be.
// Closed-loop runs that saturate them (run at the same time, so that a busy machine slows them
// alike) then give S(K) ~ K, E(K) ~ 1 (strong scaling, request throughput), and runs whose
// concurrency grows with K the same under weak scaling (goodput under an SLO); capacity sweeps
// scale by their capacity points. Also: the refusal of runs whose conditions differ,
// --allow-different-conditions, cost per 1M output tokens, energy not reported by the server, K
// from `llmload run --devices`, and bad input (exit codes, messages).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "measured_twice.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Steps of weights / bandwidth = 4 ms + 1 ms overhead whatever the batch (compute and KV reads are
// negligible): a server with max_num_seqs = s finishes s requests of n output tokens every ~n
// steps.
constexpr const char* kProfile = R"(name: scaling-test
description: memory-bound steps of about 5 ms whatever the batch, for the scaling test
model:
  parameters: 1e6
  weight_bytes: 800MB
  layers: 1
  hidden_size: 64
  kv_heads: 1
  head_dim: 16
  kv_dtype_bytes: 2
device:
  name: scaling-test-device
  count: 1
  memory_bytes: 8GiB
  memory_bandwidth: 200e9
  peak_flops: 1e18
efficiency:
  bandwidth: 1.0
  compute: 1.0
  roofline_sharpness: 1.5
  step_overhead: 1ms
engine:
  gpu_memory_utilization: 0.9
  memory_reserve_bytes: 0
  kv_cache_tokens: 65536
  max_num_seqs: 2
  max_num_batched_tokens: 2048
  block_size: 16
  max_model_len: 2048
  enable_prefix_caching: false
)";

class Scaling : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = profile_dir_.file("scaling-test.yaml");
    std::ofstream(profile_) << kProfile;
  }
  // A server with K times the capacity of K = 1.
  ServerHandle server(int k) const {
    return start_server({"--profile", profile_, "--device", "cpu", "--max-num-seqs", std::to_string(2 * k)});
  }
  // One closed-loop run of about 3 s: 8 output tokens per request (~40 ms at 5 ms a step), so that
  // even K = 1 measures over 100 requests (fewer make the run INVALID for its p99).
  struct Job {
    const TempDir* out;
    const ServerHandle* server;
    int concurrency;
    std::vector<std::string> extra = {};
    int output_tokens = 8;
  };
  // The runs of one comparison, all at once, each against its own server: a busy machine (other
  // builds and tests) then slows them alike, instead of whichever happened to run during a burst.
  static std::vector<json> measure(const std::vector<Job>& jobs) {
    std::vector<std::unique_ptr<Subprocess>> procs;
    for (const Job& j : jobs) {
      std::vector<std::string> argv = {binary_path("llmload"), "run", "--output", j.out->path(),
                                       "--base-url", j.server->base_url, "--concurrency", std::to_string(j.concurrency),
                                       "--duration", "3s", "--input-tokens", "16",
                                       "--output-tokens", std::to_string(j.output_tokens), "--seed", "7"};
      argv.insert(argv.end(), j.extra.begin(), j.extra.end());
      procs.push_back(std::make_unique<Subprocess>(argv));
    }
    std::vector<json> results;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const int rc = procs[i]->wait(60s);
      EXPECT_EQ(rc, 0) << procs[i]->err();
      const std::string path = jobs[i].out->file("result.json");
      results.push_back(std::filesystem::exists(path) ? json::parse(read_file(path)) : json());
      EXPECT_FALSE(results.back().is_null()) << "no result.json: " << procs[i]->err();
    }
    return results;
  }
  static RunResult scaling(std::vector<std::string> args) {
    std::vector<std::string> argv = {binary_path("llmload"), "scaling"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 60s);
  }

  TempDir profile_dir_;
  std::string profile_;
};

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A file's JSON, or null when the run wrote none.
json read_json_if_there(const std::string& path) {
  return std::filesystem::exists(path) ? json::parse(read_file(path)) : json();
}

// Whether the runs' `metric` grows with K as set up (within +-20%); a run without a result does not.
bool scales_as_set_up(const std::vector<json>& r, const std::vector<double>& ks, const char* metric) {
  for (const json& ri : r) {
    if (ri.is_null() || !ri.contains(metric) || !ri[metric].is_number()) return false;
  }
  const double x1 = r[0][metric].get<double>();
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double speedup = x1 > 0 ? r[i][metric].get<double>() / x1 : 0;
    if (std::abs(speedup - ks[i]) > 0.2 * ks[i]) return false;
  }
  return true;
}

TEST_F(Scaling, StrongScalingFollowsTheServersCapacity) {
  const ServerHandle s1 = server(1);
  const ServerHandle s2 = server(2);
  const ServerHandle s4 = server(4);
  TempDir dirs[2][3];  // each attempt's K = 1, 2, 4 runs
  TempDir out;
  // The same total load at every K: 16 in flight saturates even the K = 4 server (8 at once).
  // No SLO, so X is the request throughput (the goodput case is in the weak-scaling test).
  // Three runs share the 2 cores: a stall in one of them (the machine's other work) lowers its
  // throughput alone, so runs that do not scale as set up are measured once more
  // (measured_twice.hpp).
  int judged = 0;
  const std::vector<json> r = measured_twice(
      "the strong-scaling runs",
      [&](int attempt) {
        judged = attempt;
        TempDir(&d)[3] = dirs[attempt];
        return measure({{&d[0], &s1, 16}, {&d[1], &s2, 16}, {&d[2], &s4, 16}});
      },
      [](const std::vector<json>& runs) { return scales_as_set_up(runs, {1, 2, 4}, "request_throughput"); });
  const json& r1 = r[0];
  const json& r2 = r[1];
  const json& r4 = r[2];
  ASSERT_FALSE(r1.is_null() || r2.is_null() || r4.is_null());
  const TempDir& k1 = dirs[judged][0];
  const TempDir& k2 = dirs[judged][1];
  const TempDir& k4 = dirs[judged][2];

  const std::string json_path = out.file("scaling.json");
  // Given out of order: the table is by K.
  const RunResult res = scaling({k2.path(), k1.path(), k4.path(), "--k", "2,1,4", "--price-per-hour", "2.5", "--json", json_path});
  ASSERT_EQ(res.exit_code, 0) << res.out << res.err;
  EXPECT_TRUE(contains(res.out, "strong scaling")) << res.out;
  EXPECT_TRUE(contains(res.out, "X(K) = request throughput")) << res.out;
  EXPECT_TRUE(contains(res.out, "not reported by the server")) << res.out;  // llmload-server on a CPU reports no power
  const json j = json::parse(read_file(json_path));
  EXPECT_EQ(j["kind"], "strong");
  EXPECT_EQ(j["quantity"]["metric"], "request_throughput");
  EXPECT_TRUE(j["same_conditions"].get<bool>());
  ASSERT_EQ(j["rows"].size(), 3u);
  const json* results[] = {&r1, &r2, &r4};
  const double ks[] = {1, 2, 4};
  const double x1 = r1["request_throughput"].get<double>();
  ASSERT_GT(x1, 0);
  for (std::size_t i = 0; i < 3; ++i) {
    const json& row = j["rows"][i];
    const json& ri = *results[i];
    EXPECT_EQ(row["k"].get<double>(), ks[i]);
    // X is the artifact's throughput; S and E are exactly the ratios of the artifacts' numbers.
    const double x = ri["request_throughput"].get<double>();
    EXPECT_DOUBLE_EQ(row["x"].get<double>(), x);
    EXPECT_NEAR(row["speedup"].get<double>(), x / x1, 1e-9);
    EXPECT_NEAR(row["efficiency"].get<double>(), x / x1 / ks[i], 1e-9);
    // What was set up: K times the capacity gives S ~ K, E ~ 1 (measured 2.00 and 4.00 on an idle
    // machine). The ramp at the start and the tail of the window are the same fraction at every
    // K; the tolerance leaves room for a busy machine stretching the 5 ms steps unevenly.
    EXPECT_NEAR(row["speedup"].get<double>(), ks[i], 0.2 * ks[i]) << "K = " << ks[i];
    EXPECT_GT(row["efficiency"].get<double>(), 0.8) << "K = " << ks[i];
    EXPECT_LT(row["efficiency"].get<double>(), 1.2) << "K = " << ks[i];
    // Cost: 2.5 per device-hour, devices = K (the runs record none).
    const double tok = ri["output_throughput"].get<double>();
    EXPECT_NEAR(row["cost_per_million_output_tokens"].get<double>(), 2.5 * ks[i] / (3600 * tok) * 1e6, 1e-9);
    EXPECT_TRUE(row["energy_j_per_output_token"].is_null());
    EXPECT_TRUE(contains(row["energy_source"].get<std::string>(), "not reported by the server"));
    EXPECT_TRUE(row["valid"].get<bool>()) << row["validity_reason"];
  }
  // The endpoint URLs differ (three servers), and that is not a material difference.
  bool url = false;
  for (const auto& c : j["conditions"]) {
    for (const auto& d : c["differences"]) {
      if (d["key"] == "endpoint.base_url") url = true;
      EXPECT_FALSE(d["material"].get<bool>()) << d.dump();
    }
  }
  EXPECT_TRUE(url);

  // The same load at every K is strong scaling, not weak: --kind weak refuses it.
  const RunResult weak = scaling({k1.path(), k2.path(), "--k", "1,2", "--kind", "weak"});
  EXPECT_EQ(weak.exit_code, 2) << weak.out << weak.err;
  EXPECT_TRUE(contains(weak.err, "scenario.concurrency")) << weak.err;
}

TEST_F(Scaling, WeakScalingGrowsTheLoadWithK) {
  const ServerHandle s1 = server(1);
  const ServerHandle s2 = server(2);
  TempDir dirs[2][2];  // each attempt's K = 1, 2 runs
  TempDir out;
  // The per-replica load is fixed: 2 in flight per replica (what one replica runs at once). With
  // an SLO every run has, X is the goodput under it. Measured once more if the pair does not
  // scale as set up (a stall in one run; see the strong-scaling test).
  const std::vector<std::string> slo = {"--slo", "ttft:30s,tpot:2s"};
  int judged = 0;
  const std::vector<json> r = measured_twice(
      "the weak-scaling pair",
      [&](int attempt) {
        judged = attempt;
        return measure({{&dirs[attempt][0], &s1, 2, slo}, {&dirs[attempt][1], &s2, 4, slo}});
      },
      [](const std::vector<json>& runs) { return scales_as_set_up(runs, {1, 2}, "request_goodput"); });
  const json& r1 = r[0];
  const json& r2 = r[1];
  ASSERT_FALSE(r1.is_null() || r2.is_null());
  const TempDir& k1 = dirs[judged][0];
  const TempDir& k2 = dirs[judged][1];
  const std::string json_path = out.file("weak.json");
  const RunResult res = scaling({k1.path(), k2.path(), "--k", "1,2", "--kind", "weak", "--json", json_path});
  ASSERT_EQ(res.exit_code, 0) << res.out << res.err;
  EXPECT_TRUE(contains(res.out, "weak scaling")) << res.out;
  EXPECT_TRUE(contains(res.out, "goodput under the SLO ttft:30")) << res.out;
  const json j = json::parse(read_file(json_path));
  EXPECT_EQ(j["quantity"]["metric"], "request_goodput");
  const double x1 = r1["request_goodput"].get<double>();
  const double x2 = r2["request_goodput"].get<double>();
  EXPECT_DOUBLE_EQ(j["rows"][1]["x"].get<double>(), x2);
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(), x2 / x1, 1e-9);
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(), 2.0, 0.4);
  EXPECT_NEAR(j["rows"][1]["efficiency"].get<double>(), 1.0, 0.2);
  // The concurrency differs x2, as weak scaling expects: listed, not material.
  bool listed = false;
  for (const auto& d : j["conditions"][0]["differences"]) {
    if (d["key"] == "scenario.concurrency") {
      listed = true;
      EXPECT_FALSE(d["material"].get<bool>());
    }
  }
  EXPECT_TRUE(listed);
  // The same artifacts as strong scaling: the load differs, refused.
  const RunResult strong = scaling({k1.path(), k2.path(), "--k", "1,2"});
  EXPECT_EQ(strong.exit_code, 2) << strong.out << strong.err;
  EXPECT_TRUE(contains(strong.err, "scenario.concurrency")) << strong.err;
  EXPECT_TRUE(strong.out.empty()) << strong.out;  // no table
}

TEST_F(Scaling, RunsWhoseConditionsDifferAreRefusedUnlessAllowed) {
  const ServerHandle s1 = server(1);
  const ServerHandle s2 = server(2);
  TempDir k1, k2, out;
  const std::vector<json> r = measure({{&k1, &s1, 16}, {&k2, &s2, 16, {}, 32}});
  const json& r1 = r[0];
  const json& r2 = r[1];
  ASSERT_FALSE(r1.is_null() || r2.is_null());
  ASSERT_EQ(r2["conditions"]["scenario"]["output_tokens"], 32);
  const std::string json_path = out.file("refused.json");
  const RunResult res = scaling({k1.path(), k2.path(), "--k", "1,2", "--json", json_path});
  EXPECT_EQ(res.exit_code, 2) << res.out << res.err;
  EXPECT_TRUE(contains(res.err, "scenario.output_tokens")) << res.err;
  EXPECT_TRUE(contains(res.err, k1.path())) << res.err;
  EXPECT_TRUE(contains(res.err, k2.path())) << res.err;
  EXPECT_TRUE(contains(res.err, "--allow-different-conditions")) << res.err;
  EXPECT_FALSE(std::filesystem::exists(json_path));

  const RunResult allowed = scaling({k1.path(), k2.path(), "--k", "1,2", "--allow-different-conditions", "--json", json_path});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
  EXPECT_TRUE(contains(allowed.out, "ACROSS DIFFERENT CONDITIONS")) << allowed.out;
  EXPECT_TRUE(contains(allowed.out, "scenario.output_tokens")) << allowed.out;
  const json j = json::parse(read_file(json_path));
  EXPECT_FALSE(j["same_conditions"].get<bool>());
  EXPECT_EQ(j["label"], "strong scaling across different conditions");
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(),
              r2["request_throughput"].get<double>() / r1["request_throughput"].get<double>(), 1e-9);
}

TEST_F(Scaling, BadInputIsAnErrorNamingWhatIsWrong) {
  const ServerHandle s = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir a, b, out;
  const LlmloadRun r = run_llmload(a, {"--base-url", s.base_url, "--concurrency", "2", "--num-requests", "20",
                                       "--input-tokens", "8", "--output-tokens", "4"},
                                   {}, 60s);
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  // A second artifact of the same conditions: a copy.
  std::filesystem::copy(a.path(), b.path(), std::filesystem::copy_options::recursive |
                                                std::filesystem::copy_options::overwrite_existing);

  const RunResult ok = scaling({a.path(), b.path(), "--k", "1,2", "--json", out.file("ok.json")});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const json j = json::parse(read_file(out.file("ok.json")));
  EXPECT_EQ(j["rows"][1]["speedup"], 1.0);  // the same artifact twice: S(2) = 1, E(2) = 0.5
  EXPECT_EQ(j["rows"][1]["efficiency"], 0.5);

  const std::string missing = out.file("no-such-run");
  const RunResult m = scaling({a.path(), missing, "--k", "1,2"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_TRUE(contains(m.err, missing)) << m.err;
  EXPECT_TRUE(contains(m.err, "does not exist")) << m.err;

  const RunResult len = scaling({a.path(), b.path(), "--k", "1,2,4"});
  EXPECT_EQ(len.exit_code, 2);
  EXPECT_TRUE(contains(len.err, "one K per directory")) << len.err;

  const RunResult nok = scaling({a.path(), b.path()});  // no --k, and the runs record no devices
  EXPECT_EQ(nok.exit_code, 2);
  EXPECT_TRUE(contains(nok.err, "--k")) << nok.err;

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--k", "1,x"}, {"--k", "1,1"}, {"--k", "1,1.5"}, {"--k", "0,1"}, {"--k", "1,2", "--kind", "sideways"},
           {"--k", "1,2", "--metric", "vibes"}, {"--k", "1,2", "--price-per-hour", "-3"}}) {
    std::vector<std::string> args = {a.path(), b.path()};
    args.insert(args.end(), bad.begin(), bad.end());
    const RunResult e = scaling(args);
    EXPECT_EQ(e.exit_code, 2) << bad.back() << ": " << e.out << e.err;
    EXPECT_TRUE(contains(e.err, "llmload scaling: error:")) << e.err;
  }

  const RunResult one = scaling({a.path(), "--k", "1"});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_TRUE(contains(one.err, "two or more")) << one.err;

  // Not an artifact: a directory without result.json, a corrupt result.json.
  const RunResult empty = scaling({a.path(), out.path(), "--k", "1,2"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_TRUE(contains(empty.err, "result.json")) << empty.err;
  std::ofstream(b.file("result.json")) << "{not json";
  const RunResult corrupt = scaling({a.path(), b.path(), "--k", "1,2"});
  EXPECT_EQ(corrupt.exit_code, 2);
  EXPECT_TRUE(contains(corrupt.err, b.file("result.json"))) << corrupt.err;

  // The JSON cannot be written: exit 1, the table still printed.
  std::filesystem::copy_file(a.file("result.json"), b.file("result.json"),
                             std::filesystem::copy_options::overwrite_existing);
  const RunResult unwritable = scaling({a.path(), b.path(), "--k", "1,2", "--json", out.file("no/such/dir/s.json")});
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.err;
  EXPECT_TRUE(contains(unwritable.err, "cannot write")) << unwritable.err;
  EXPECT_TRUE(contains(unwritable.out, "S(K)")) << unwritable.out;
}

TEST_F(Scaling, SweepsScaleByTheirCapacityPoint) {
  const ServerHandle s1 = server(1);
  const ServerHandle s2 = server(2);
  TempDir dirs[2][2];  // each attempt's K = 1, 2 searches
  TempDir out;
  // A short capacity search over concurrency 4..8: 460 requests a probe (a p99 PASS with no
  // exceedance needs 459: --capacity-margin 0), no 20 s minimum window, and an INCONCLUSIVE probe
  // run again once at most, so that a loaded machine cannot grow the search past the wait below
  // (with the defaults a probe is 838 requests and ~20 s, and an extension doubles it).
  // Both servers are saturated from concurrency 4 on, so the goodput at the capacity point is the
  // server's capacity whichever load the search settles on: ~50 req/s at K = 1, ~100 at K = 2.
  // Both at once, as the runs above.
  auto sweep = [](const TempDir& dir, const ServerHandle& s) {
    return std::make_unique<Subprocess>(std::vector<std::string>{
        binary_path("llmload"), "sweep", "--base-url", s.base_url, "--find-capacity", "--capacity-load", "concurrency",
        "--capacity-start", "4", "--capacity-max", "8", "--capacity-tolerance", "0.5", "--trials-near-boundary", "1",
        "--capacity-margin", "0", "--capacity-min-window", "2s", "--capacity-max-extensions", "1",
        "--slo", "ttft:100ms", "--num-requests", "460", "--input-tokens", "16", "--output-tokens", "8", "--seed", "7",
        "--quiet", "--output", dir.path()});
  };
  // The two capacities are measured on one busy machine: a CI run once found 1.34x (a stall in
  // the K = 2 search). A pair outside 2 +- 0.4 is measured once more, and the second pair judged:
  // a scaling that is wrong (not 2x) is wrong twice.
  struct SweepPair {
    json k1, k2;
  };
  int judged = 0;
  const SweepPair p = measured_twice(
      "the capacity sweeps",
      [&](int attempt) {
        judged = attempt;
        const auto w1 = sweep(dirs[attempt][0], s1);
        const auto w2 = sweep(dirs[attempt][1], s2);
        EXPECT_EQ(w1->wait(150s), 0) << w1->err();
        EXPECT_EQ(w2->wait(150s), 0) << w2->err();
        return SweepPair{read_json_if_there(dirs[attempt][0].file("sweep.json")),
                         read_json_if_there(dirs[attempt][1].file("sweep.json"))};
      },
      [](const SweepPair& q) {
        auto goodput = [](const json& sweep_json) {
          const json none;
          if (!sweep_json.is_object() || !sweep_json.contains("capacity")) return none;
          return sweep_json["capacity"].is_object() ? sweep_json["capacity"].value("goodput_at_capacity", none) : none;
        };
        const json g1 = goodput(q.k1);
        const json g2 = goodput(q.k2);
        if (!g1.is_number() || !g2.is_number() || g1.get<double>() <= 0) return false;
        const double ratio = g2.get<double>() / g1.get<double>();
        std::cerr << "capacity goodput K=2 / K=1 = " << ratio << "\n";
        return std::fabs(ratio - 2.0) <= 0.4;
      });
  json sw1 = p.k1;  // not const: operator[] below may meet a missing key
  json sw2 = p.k2;
  ASSERT_TRUE(sw1["capacity"]["highest_pass"].is_number()) << sw1.dump();
  ASSERT_TRUE(sw2["capacity"]["highest_pass"].is_number()) << sw2.dump();
  const TempDir* c1 = &dirs[judged][0];
  const TempDir* c2 = &dirs[judged][1];

  const std::string json_path = out.file("sweeps.json");
  const RunResult res = scaling({c1->path(), c2->path(), "--k", "1,2", "--json", json_path});
  ASSERT_EQ(res.exit_code, 0) << res.out << res.err;
  EXPECT_TRUE(contains(res.out, "capacity point")) << res.out;
  const json j = json::parse(read_file(json_path));
  EXPECT_EQ(j["quantity"]["metric"], "capacity_goodput");
  EXPECT_EQ(j["quantity"]["slo"], sw1["slo"]);
  const double x1 = sw1["capacity"]["goodput_at_capacity"].get<double>();
  const double x2 = sw2["capacity"]["goodput_at_capacity"].get<double>();
  EXPECT_DOUBLE_EQ(j["rows"][0]["x"].get<double>(), x1);
  EXPECT_DOUBLE_EQ(j["rows"][1]["x"].get<double>(), x2);
  EXPECT_EQ(j["rows"][1]["capacity_load"], sw2["capacity"]["highest_pass"]);
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(), x2 / x1, 1e-9);
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(), 2.0, 0.4);
}

TEST_F(Scaling, KAndDevicesFromTheRunsOwnConditions) {
  const RunResult help = run({binary_path("llmload"), "run", "--help"}, 30s);
  if (!contains(help.out, "--devices")) GTEST_SKIP() << "this build's `llmload run` has no --devices yet";
  const ServerHandle s1 = server(1);
  const ServerHandle s2 = server(2);
  TempDir k1, k2, out;
  const std::vector<json> r = measure({{&k1, &s1, 8, {"--devices", "1"}}, {&k2, &s2, 8, {"--devices", "2"}}});
  const json& r1 = r[0];
  const json& r2 = r[1];
  ASSERT_FALSE(r1.is_null() || r2.is_null());
  ASSERT_EQ(r2["conditions"]["devices"], 2);
  const std::string json_path = out.file("devices.json");
  const RunResult res = scaling({k1.path(), k2.path(), "--price-per-hour", "4", "--json", json_path});
  ASSERT_EQ(res.exit_code, 0) << res.out << res.err;
  const json j = json::parse(read_file(json_path));
  EXPECT_EQ(j["rows"][1]["k"], 2.0);
  EXPECT_EQ(j["rows"][1]["k_source"], "conditions.devices");
  EXPECT_EQ(j["rows"][1]["devices_source"], "conditions.devices");
  EXPECT_NEAR(j["rows"][1]["speedup"].get<double>(), 2.0, 0.4);
  EXPECT_NEAR(j["rows"][1]["cost_per_million_output_tokens"].get<double>(),
              4.0 * 2 / (3600 * r2["output_throughput"].get<double>()) * 1e6, 1e-9);
}

}  // namespace
}  // namespace llmload::testing
