// Merging shard artifacts: N shards of a run, each simulated on its own clock against a scripted
// server, merge into exactly the metrics of the same run done by one process.
#include "llmload/analysis/artifact_merge.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_server.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/shard_plan.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using analysis::MergeError;
using analysis::Metric;
using nlohmann::json;
using testing::FakeServer;
using testing::Script;

// The server's answer depends only on when the request is sent (its intended time here), never on
// which process sends it or in what order: so a request behaves the same in a shard as in the
// single run.
Script by_time(std::uint64_t, TimePoint now) {
  const auto us = now.time_since_epoch().count() / 1000;
  Script s;
  s.ttft = 20ms + std::chrono::microseconds(us % 30'011);
  s.itl = 5ms + std::chrono::microseconds((us / 7) % 3'001);
  s.tokens = 3 + static_cast<int>(us % 5);
  return s;
}

struct SimRun {
  analysis::ShardArtifact artifact;
  analysis::RunMetrics metrics;
};

json conditions_for(const ScenarioConfig& global, const ScenarioConfig& local) {
  json c = {
      {"tool", {{"name", "llmload"}, {"version", "test"}, {"build", "sim"}}},
      {"scenario",
       {{"scenario", std::string(to_string(global.kind))},
        {"request_rate", global.request_rate},
        {"concurrency", global.concurrency},
        {"num_requests", global.num_requests ? json(*global.num_requests) : json(nullptr)}}},
      {"seeds", {{"base", global.seed}}},
      {"endpoint", {{"base_url", "http://fake"}, {"path", "/v1/completions"}}},
      {"model", "m"},
      {"workload", {{"source", "random"}}},
      {"prompts", {{"method", "estimate"}}},
      {"definitions", {{"document", "docs/metrics.md"}}},
      {"machine", {{"hostname", "sim"}}},
      {"command_line", json::array({"llmload", "run"})},
      {"start_time", "2025-06-01T12:00:00.000Z"},
      {"start_epoch_s", 1748779200.0},
  };
  if (global.shard.count_given) {
    c["shard"] = describe_shard(global, local);
    c["shard"]["start_skew_ms"] = 0.0;
  }
  return c;
}

// One run (a shard when cfg.shard says so) simulated to completion, with its artifact.
SimRun simulate_run(ScenarioConfig cfg, FakeServer::ScriptFn script = by_time, const std::string& name = "run") {
  cfg.model = "m";
  cfg.validate();
  const ScenarioConfig local = shard_config(cfg);
  ShardPlan plan = plan_shard(local);
  RequestBuilder builder(local, "", "h");
  ManualClock clock;
  FakeServer server(clock, std::move(script));
  RunController ctl(local, clock, *plan.pacer, server, builder);
  server.run(ctl);
  EXPECT_TRUE(ctl.finished());
  SimRun out;
  out.metrics = ctl.metrics();
  out.artifact.name = name;
  out.artifact.result = analysis::metrics_json(out.metrics);
  out.artifact.result["conditions"] = conditions_for(cfg, local);
  out.artifact.result["interrupted"] = false;
  for (const auto& r : ctl.records()) {
    json line = analysis::record_json(r);
    if (local.shard.sharded()) {
      line["shard"] = local.shard.index;
      line["global_index"] = plan.global(r.index);
    }
    out.artifact.records.push_back(line);
  }
  std::stringstream hlog;
  analysis::write_latency_hlog(hlog, out.metrics, 1748779200.0, "test");
  out.artifact.hlog = analysis::read_hlog(hlog);
  return out;
}

std::vector<analysis::ShardArtifact> shards_of(const ScenarioConfig& cfg, std::int64_t n,
                                               FakeServer::ScriptFn script = by_time) {
  std::vector<analysis::ShardArtifact> out;
  for (std::int64_t i = 0; i < n; ++i) {
    ScenarioConfig c = cfg;
    c.shard.index = i;
    c.shard.count = n;
    c.shard.index_given = c.shard.count_given = true;
    c.shard.start_at = parse_start_at("2025-06-01T12:00:00Z");
    out.push_back(simulate_run(c, script, "dir/shard-" + std::to_string(i)).artifact);
  }
  return out;
}

void expect_same_metrics(const analysis::RunMetrics& merged, const analysis::RunMetrics& single) {
  EXPECT_EQ(merged.requests, single.requests);
  EXPECT_EQ(merged.warmup, single.warmup);
  EXPECT_EQ(merged.in_window, single.in_window);
  EXPECT_EQ(merged.completed, single.completed);
  EXPECT_EQ(merged.failed, single.failed);
  EXPECT_EQ(merged.total_input_tokens, single.total_input_tokens);
  EXPECT_EQ(merged.total_output_tokens, single.total_output_tokens);
  EXPECT_EQ(merged.window.start, single.window.start);
  EXPECT_EQ(merged.window.end, single.window.end);
  EXPECT_NEAR(merged.request_throughput, single.request_throughput, 1e-9 * single.request_throughput);
  EXPECT_NEAR(merged.output_tokens_in_window, single.output_tokens_in_window, 1e-6);
  EXPECT_NEAR(merged.output_throughput, single.output_throughput, 1e-9 * single.output_throughput);
  EXPECT_NEAR(merged.total_token_throughput, single.total_token_throughput, 1e-9 * single.total_token_throughput);
  EXPECT_NEAR(merged.achieved_send_rate, single.achieved_send_rate, 1e-9 * single.achieved_send_rate);
  EXPECT_NEAR(merged.realized_interarrival_cv, single.realized_interarrival_cv, 1e-9);
  EXPECT_EQ(merged.late_over_1ms, single.late_over_1ms);
  for (Metric m : analysis::kAllMetrics) {
    SCOPED_TRACE(std::string(analysis::metric_name(m)));
    EXPECT_TRUE(merged.histograms.at(m) == single.histograms.at(m)) << "histograms must merge exactly";
    const auto& a = merged.latency.at(m);
    const auto& b = single.latency.at(m);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.percentiles, b.percentiles);
    EXPECT_EQ(a.min_us, b.min_us);
    EXPECT_EQ(a.max_us, b.max_us);
    EXPECT_EQ(a.p99_ci_us, b.p99_ci_us);
    EXPECT_NEAR(a.mean_us, b.mean_us, 1e-6 * std::max(1.0, b.mean_us));
    EXPECT_NEAR(a.stddev_us, b.stddev_us, 1e-6 * std::max(1.0, b.stddev_us));
  }
  // The same verdict, for the same reasons, with the same messages.
  EXPECT_EQ(merged.invalid, single.invalid);
  EXPECT_EQ(merged.validity_checks, single.validity_checks);
  ASSERT_EQ(merged.validity_reasons.size(), single.validity_reasons.size());
  for (std::size_t i = 0; i < single.validity_reasons.size(); ++i) {
    EXPECT_EQ(merged.validity_reasons[i].code, single.validity_reasons[i].code);
    EXPECT_EQ(merged.validity_reasons[i].message, single.validity_reasons[i].message);
  }
  EXPECT_EQ(merged.minimums.required_samples, single.minimums.required_samples);
  EXPECT_EQ(merged.minimums.percentiles, single.minimums.percentiles);
  EXPECT_TRUE(merged.minimums.checked);
  ASSERT_EQ(merged.slo.has_value(), single.slo.has_value());
  if (single.slo) {
    EXPECT_EQ(merged.slo->request_goodput, single.slo->request_goodput);
    EXPECT_EQ(merged.slo->good, single.slo->good);
    EXPECT_EQ(merged.slo->verdict, single.slo->verdict);
    ASSERT_EQ(merged.slo->metrics.size(), single.slo->metrics.size());
    for (std::size_t i = 0; i < single.slo->metrics.size(); ++i) {
      EXPECT_EQ(merged.slo->metrics[i].exceedances, single.slo->metrics[i].exceedances);
      EXPECT_EQ(merged.slo->metrics[i].observed_us, single.slo->metrics[i].observed_us);
      EXPECT_EQ(merged.slo->metrics[i].explanation, single.slo->metrics[i].explanation);
    }
  }
}

ScenarioConfig poisson(double rate, std::int64_t n) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = rate;
  c.num_requests = n;
  c.seed = 21;
  c.warmup.requests = 10;
  c.slo = analysis::parse_slo("ttft:40ms,tpot:7ms");
  return c;
}

TEST(Merge, PoissonShardsMergeIntoExactlyTheSingleRun) {
  const ScenarioConfig cfg = poisson(40, 400);
  const SimRun single = simulate_run(cfg);
  ASSERT_EQ(single.metrics.completed, 400);
  ASSERT_GT(single.metrics.slo->metrics[0].exceedances, 0);  // the SLO part is exercised
  for (std::int64_t n : {2, 3}) {
    SCOPED_TRACE(n);
    const auto merged = analysis::merge_artifacts(shards_of(cfg, n));
    expect_same_metrics(merged.metrics, single.metrics);
    EXPECT_EQ(merged.result["shards"].size(), static_cast<std::size_t>(n));
    EXPECT_EQ(merged.result["conditions"]["shard"]["count"], n);
    EXPECT_EQ(merged.result["completed"], 400);
    EXPECT_EQ(merged.record_count, 410);
    EXPECT_TRUE(merged.notes.empty()) << merged.notes.front();
    EXPECT_NE(merged.console.find("merged " + std::to_string(n) + " shards"), std::string::npos);
    EXPECT_NE(merged.console.find(" Shards "), std::string::npos);
  }
}

TEST(Merge, ClosedLoopShardsMergeIntoExactlyTheSingleRun) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 6;
  cfg.num_requests = 90;
  const SimRun single = simulate_run(cfg);
  const auto merged = analysis::merge_artifacts(shards_of(cfg, 3));
  expect_same_metrics(merged.metrics, single.metrics);
}

// A shard leaves the sample checks to the merged run, which applies them with the shards'
// settings: 60 requests cannot support p99 (100 needed) nor the requested p99.9 (1,000).
TEST(Merge, TheMergedRunIsJudgedAsOneRunWithTheShardsSettings) {
  ScenarioConfig cfg = poisson(40, 60);
  cfg.metric_percentiles = {50, 99.9};
  cfg.max_error_rate = 0.2;
  const SimRun single = simulate_run(cfg);
  ASSERT_TRUE(single.metrics.invalid);
  ASSERT_EQ(single.metrics.validity_reasons.front().code, "too_few_samples");
  const auto shards = shards_of(cfg, 3);
  for (const auto& s : shards) {
    EXPECT_EQ(s.result["validity"]["valid"], true) << "a shard does not judge its own sample size";
    EXPECT_EQ(s.result["minimums"]["checked"], false);
  }
  const auto merged = analysis::merge_artifacts(shards);
  expect_same_metrics(merged.metrics, single.metrics);
  EXPECT_EQ(merged.metrics.minimums.required_samples, 1000);
  EXPECT_DOUBLE_EQ(merged.metrics.max_error_rate, 0.2);
  EXPECT_EQ(merged.result["validity"]["verdict"], "INVALID");
  EXPECT_NE(merged.result["validity"]["reason"].get<std::string>().find("p99.9 needs at least 1000"), std::string::npos)
      << merged.result["validity"]["reason"];
}

TEST(Merge, OneArtifactMergesIntoItself) {
  ScenarioConfig cfg = poisson(30, 120);
  cfg.shard.count_given = true;  // a "sharded" run of one shard
  const SimRun one = simulate_run(cfg);
  const auto merged = analysis::merge_artifacts({one.artifact});
  expect_same_metrics(merged.metrics, one.metrics);
  EXPECT_EQ(merged.result["request_throughput"], one.artifact.result["request_throughput"]);
}

TEST(Merge, OrderOfTheDirectoriesDoesNotMatter) {
  const auto shards = shards_of(poisson(40, 150), 3);
  const auto a = analysis::merge_artifacts(shards);
  const auto b = analysis::merge_artifacts({shards[2], shards[0], shards[1]});
  EXPECT_EQ(a.result, b.result);
}

std::string merge_error(const std::vector<analysis::ShardArtifact>& shards) {
  try {
    analysis::merge_artifacts(shards);
  } catch (const MergeError& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, InconsistentShardsAreErrorsNamingTheFieldAndTheShards) {
  const ScenarioConfig cfg = poisson(40, 60);
  auto shards = shards_of(cfg, 3);

  auto other_seed = shards;
  other_seed[2].result["conditions"]["seeds"]["base"] = 22;
  std::string e = merge_error(other_seed);
  EXPECT_NE(e.find("conditions.seeds.base"), std::string::npos) << e;
  EXPECT_NE(e.find("dir/shard-2"), std::string::npos) << e;
  EXPECT_NE(e.find("21"), std::string::npos) << e;

  auto other_rate = shards;
  other_rate[1].result["conditions"]["scenario"]["request_rate"] = 50.0;
  e = merge_error(other_rate);
  EXPECT_NE(e.find("conditions.scenario.request_rate"), std::string::npos) << e;

  auto other_endpoint = shards;
  other_endpoint[1].result["conditions"]["endpoint"]["base_url"] = "http://elsewhere";
  e = merge_error(other_endpoint);
  EXPECT_NE(e.find("conditions.endpoint.base_url"), std::string::npos) << e;

  // The validity settings the merged run is judged with (a single command line gives every shard
  // the same).
  auto other_error_rate = shards;
  other_error_rate[1].result["validity"]["max_error_rate"] = 0.5;
  e = merge_error(other_error_rate);
  EXPECT_NE(e.find("validity.max_error_rate"), std::string::npos) << e;
  auto other_percentiles = shards;
  other_percentiles[2].result["minimums"]["percentiles"] = json::array({50.0, 99.9});
  e = merge_error(other_percentiles);
  EXPECT_NE(e.find("minimums.percentiles"), std::string::npos) << e;

  auto other_start = shards;
  other_start[0].result["conditions"]["shard"]["start_at"] = "2025-06-01T12:05:00.000Z";
  e = merge_error(other_start);
  EXPECT_NE(e.find("conditions.shard.start_at"), std::string::npos) << e;

  e = merge_error({shards[0], shards[2]});
  EXPECT_NE(e.find("shard 1 of 3 is missing"), std::string::npos) << e;

  e = merge_error({shards[0], shards[1], shards[1], shards[2]});
  EXPECT_NE(e.find("are both shard 1 of 3"), std::string::npos) << e;

  auto unsharded = shards;
  unsharded[1].result["conditions"].erase("shard");
  e = merge_error(unsharded);
  EXPECT_NE(e.find("'dir/shard-1' is not a shard artifact"), std::string::npos) << e;
  EXPECT_NE(e.find("--shard-count"), std::string::npos) << e;

  auto other_count = shards;
  other_count[2].result["conditions"]["shard"]["count"] = 4;
  e = merge_error(other_count);
  EXPECT_NE(e.find("merge only the shards of one run"), std::string::npos) << e;

  auto truncated = shards;
  truncated[0].records.pop_back();
  e = merge_error(truncated);
  EXPECT_NE(e.find("incomplete"), std::string::npos) << e;

  auto bad_record = shards;
  bad_record[0].records[3].erase("t_intended_ms");
  e = merge_error(bad_record);
  EXPECT_NE(e.find("requests.jsonl line 4"), std::string::npos) << e;
  EXPECT_NE(e.find("t_intended_ms"), std::string::npos) << e;

  auto no_hist = shards;
  no_hist[1].hlog.intervals.clear();
  e = merge_error(no_hist);
  EXPECT_NE(e.find("latency.hlog has no 'ttft' histogram"), std::string::npos) << e;

  EXPECT_NE(merge_error({}).find("nothing to merge"), std::string::npos);
}

// Issue 20: shards whose requests.jsonl is on disk are read a line at a time, pass after pass,
// and give the same merge as the same lines in memory; the merged file lists every shard's lines
// in shard order with "shard" added; a line that is not JSON names the shard and the line.
TEST(Merge, RecordsReadFromTheShardsFilesMergeAsFromMemory) {
  const ScenarioConfig cfg = poisson(40, 300);
  const auto in_memory = shards_of(cfg, 3);
  const std::string dir = ::testing::TempDir() + "merge_from_files";
  std::filesystem::create_directories(dir);
  std::vector<analysis::ShardArtifact> on_disk = in_memory;
  for (std::size_t i = 0; i < on_disk.size(); ++i) {
    const std::string path = dir + "/requests-" + std::to_string(i) + ".jsonl";
    std::ofstream f(path);
    for (const auto& line : on_disk[i].records) f << line.dump() << "\n\n";  // blank lines are skipped
    on_disk[i].records.clear();
    on_disk[i].records_file = path;
  }
  const auto a = analysis::merge_artifacts(in_memory);
  const auto b = analysis::merge_artifacts({on_disk[2], on_disk[0], on_disk[1]});
  EXPECT_EQ(a.result["completed"], b.result["completed"]);
  EXPECT_EQ(a.result["request_throughput"], b.result["request_throughput"]);
  EXPECT_EQ(a.result["latency"], b.result["latency"]);
  EXPECT_EQ(a.record_count, b.record_count);
  std::ostringstream merged;
  analysis::MergedRecords(on_disk).write_jsonl(merged);
  std::istringstream lines(merged.str());
  std::string line;
  std::int64_t n = 0;
  std::int64_t last_shard = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_GE(j["shard"].get<std::int64_t>(), last_shard);
    last_shard = j["shard"].get<std::int64_t>();
    ++n;
  }
  EXPECT_EQ(n, b.record_count);
  EXPECT_EQ(last_shard, 2);
  { std::ofstream(on_disk[1].records_file, std::ios::app) << "{\"index\": 1, cut\n"; }
  EXPECT_NE(merge_error(on_disk).find("requests.jsonl line"), std::string::npos);
  EXPECT_NE(merge_error(on_disk).find("is not valid JSON"), std::string::npos) << merge_error(on_disk);
  std::filesystem::remove_all(dir);
}

// Issue 20: `llmload merge` parses each shard's lines once into a store (ShardArtifact::loaded)
// and every pass reads the store: the merge is the one the lines give (also once the files are
// gone); the merged requests.jsonl copies the lines of a shard that all name it byte for byte, and
// adds "shard" to the lines of one that does not.
TEST(Merge, ShardsLoadedOnceIntoAStoreMergeAsTheirLines) {
  const ScenarioConfig cfg = poisson(40, 300);
  const auto in_memory = shards_of(cfg, 3);
  const std::string dir = ::testing::TempDir() + "merge_loaded";
  std::filesystem::create_directories(dir);
  std::vector<analysis::ShardArtifact> loaded = in_memory;
  std::vector<std::string> shard0_lines;  // as written: spaced unlike json::dump would write them
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    analysis::ShardArtifact& a = loaded[i];
    a.records_file = dir + "/requests-" + std::to_string(i) + ".jsonl";
    {
      std::ofstream f(a.records_file);
      for (json line : a.records) {
        if (i == 2) line.erase("shard");  // an artifact whose lines do not name their shard
        std::string text = line.dump();
        text.insert(1, " ");
        f << text << "\n";
        if (i == 0) shard0_lines.push_back(text);
      }
    }
    a.records.clear();
    auto store = std::make_shared<RecordStore>(/*keep_chunks=*/false, /*batch=*/16);  // mostly spilled
    bool named = true;
    analysis::for_each_shard_record(a, [&](const analysis::RequestRecord& r, bool names_shard) {
      store->append(r, {});
      named = named && names_shard;
    });
    EXPECT_EQ(named, i != 2) << i;
    a.loaded = std::move(store);
    a.lines_name_shard = named;
  }
  const auto expected = analysis::merge_artifacts(in_memory);
  const auto merged = analysis::merge_artifacts(loaded);
  EXPECT_EQ(merged.result, expected.result);
  EXPECT_EQ(merged.record_count, expected.record_count);

  std::ostringstream out;
  analysis::MergedRecords(loaded).write_jsonl(out);
  std::istringstream in(out.str());
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(static_cast<std::int64_t>(lines.size()), expected.record_count);
  ASSERT_FALSE(shard0_lines.empty());
  for (std::size_t k = 0; k < shard0_lines.size(); ++k) EXPECT_EQ(lines[k], shard0_lines[k]) << k;
  EXPECT_EQ(json::parse(lines.back())["shard"], 2);
  EXPECT_NE(lines.back().rfind("{\"", 0), std::string::npos) << lines.back();  // re-written by the JSON writer

  for (const auto& a : loaded) std::ofstream(a.records_file, std::ios::trunc);
  EXPECT_EQ(analysis::merge_artifacts(loaded).result, expected.result);
  EXPECT_EQ(static_cast<std::int64_t>(analysis::MergedRecords(loaded).size()), expected.record_count);
  std::filesystem::remove_all(dir);
}

TEST(Merge, AStragglingShardIsFlagged) {
  const ScenarioConfig cfg = poisson(40, 300);
  // Shard 1's requests take 3 s each (its network path, say): it finishes well after the others.
  std::vector<analysis::ShardArtifact> shards;
  for (std::int64_t i = 0; i < 3; ++i) {
    ScenarioConfig c = cfg;
    c.shard.index = i;
    c.shard.count = 3;
    c.shard.index_given = c.shard.count_given = true;
    c.shard.start_at = parse_start_at("2025-06-01T12:00:00Z");
    FakeServer::ScriptFn fn = i == 1 ? FakeServer::ScriptFn([](std::uint64_t n, TimePoint t) {
      Script s = by_time(n, t);
      s.ttft = 3s;
      return s;
    })
                                     : FakeServer::ScriptFn(by_time);
    shards.push_back(simulate_run(c, fn, "dir/shard-" + std::to_string(i)).artifact);
  }
  shards[2].result["conditions"]["shard"]["start_skew_ms"] = 42.5;
  const auto merged = analysis::merge_artifacts(shards);
  ASSERT_EQ(merged.notes.size(), 2u);
  EXPECT_NE(merged.notes[0].find("shard 1 ('dir/shard-1'): finished"), std::string::npos) << merged.notes[0];
  EXPECT_NE(merged.notes[1].find("shard 2 ('dir/shard-2'): started 42.5 ms after --start-at"), std::string::npos)
      << merged.notes[1];
  EXPECT_TRUE(merged.result["shards"][1]["straggler"].get<bool>());
  EXPECT_FALSE(merged.result["shards"][0]["straggler"].get<bool>());
  EXPECT_NE(merged.console.find("NOTE: shard 1"), std::string::npos);
  EXPECT_NE(merged.console.find("<- see NOTE"), std::string::npos);
}

// Issue 19: every third request (by its index in the whole run) reasons first, its first output
// token a share of the way from its first token to its last; the others answer at once.
void add_reasoning(json& line) {
  const auto i = line.value("global_index", line["index"].get<std::int64_t>());
  if (line["t_first_ms"].is_null() || line["t_last_ms"].is_null()) return;
  const double first = line["t_first_ms"].get<double>();
  const double last = line["t_last_ms"].get<double>();
  line["t_first_output_ms"] = i % 3 == 0 ? first + (last - first) * static_cast<double>(i % 5 + 1) / 6.0 : first;
  if (i % 3 == 0) {
    line["reasoning_tokens"] = 1;
    line["reasoning_tokens_source"] = "usage";
  }
}

// The metrics of a run (or shard) again from its records with reasoning added, judged by the same
// window and SLO; the artifact rewritten from them (result.json, requests.jsonl, latency.hlog).
analysis::RunMetrics with_reasoning(analysis::ShardArtifact& a) {
  std::vector<analysis::RequestRecord> rs;
  for (auto& line : a.records) {
    add_reasoning(line);
    rs.push_back(analysis::record_from_json(line));
  }
  const json& r = a.result;
  analysis::Window w;
  w.start = Nanos(std::llround(r["window"]["start_s"].get<double>() * 1e9));
  w.end = Nanos(std::llround(r["window"]["end_s"].get<double>() * 1e9));
  w.method = r["window"]["method"].get<std::string>();
  analysis::MetricsAccumulator acc;
  for (const auto& rec : rs) acc.add(rec, {}, /*itl=*/false);
  analysis::ValidityOptions v;
  v.check_samples = !r["conditions"].contains("shard");
  const auto view = r["slo"]["view"] == "response" ? analysis::LatencyView::kResponse : analysis::LatencyView::kService;
  analysis::RunMetrics m =
      acc.finalize(w, r["validity"]["checked"].get<bool>(), analysis::parse_slo(r["slo"]["spec"].get<std::string>()), view, rs, v);
  json result = analysis::metrics_json(m);
  result["conditions"] = r["conditions"];
  result["interrupted"] = false;
  a.result = std::move(result);
  std::stringstream hlog;
  analysis::write_latency_hlog(hlog, m, 1748779200.0, "test");
  a.hlog = analysis::read_hlog(hlog);
  return m;
}

TEST(Merge, TtfoHistogramsAndReasoningMergeExactly) {
  ScenarioConfig cfg = poisson(40, 400);
  cfg.slo = analysis::parse_slo("ttft:40ms,ttfo:45ms");
  SimRun single = simulate_run(cfg);
  const analysis::RunMetrics one = with_reasoning(single.artifact);
  ASSERT_GT(one.latency.at(Metric::kTtfo).count, 300);
  ASSERT_GT(one.reasoning_first_requests, 100);
  ASSERT_EQ(one.slo->metrics.size(), 2u);
  ASSERT_GT(one.slo->metrics[1].exceedances, 0);  // the TTFO bound is exercised
  auto shards = shards_of(cfg, 3);
  for (auto& s : shards) with_reasoning(s);
  const auto merged = analysis::merge_artifacts(shards);
  for (Metric m : {Metric::kTtfo, Metric::kTtfoRt}) {
    SCOPED_TRACE(std::string(analysis::metric_name(m)));
    EXPECT_TRUE(merged.metrics.histograms.at(m) == one.histograms.at(m)) << "histograms must merge exactly";
    EXPECT_EQ(merged.metrics.latency.at(m).count, one.latency.at(m).count);
    EXPECT_EQ(merged.metrics.latency.at(m).percentiles, one.latency.at(m).percentiles);
    EXPECT_NEAR(merged.metrics.latency.at(m).mean_us, one.latency.at(m).mean_us, 1e-6 * one.latency.at(m).mean_us);
  }
  const json single_json = analysis::metrics_json(one);
  EXPECT_EQ(merged.result["p99_ttfo_ms"], single_json["p99_ttfo_ms"]);
  EXPECT_EQ(merged.result["response_time"]["ttfo"]["p99_ms"], single_json["response_time"]["ttfo"]["p99_ms"]);
  EXPECT_EQ(merged.result["requests"]["reasoning_first"], single_json["requests"]["reasoning_first"]);
  // The reasoning section from every shard's records: the same, up to the order of the means' sums.
  json mr = merged.result["reasoning"];
  json sr = single_json["reasoning"];
  for (const char* d : {"duration", "answer_tpot"}) {
    EXPECT_NEAR(mr[d]["mean_ms"].get<double>(), sr[d]["mean_ms"].get<double>(), 1e-9);
    mr[d].erase("mean_ms");
    sr[d].erase("mean_ms");
  }
  EXPECT_EQ(mr, sr);
  ASSERT_EQ(merged.metrics.slo->metrics.size(), 2u);
  EXPECT_EQ(merged.metrics.slo->metrics[1].metric, "ttfo");
  EXPECT_EQ(merged.metrics.slo->metrics[1].exceedances, one.slo->metrics[1].exceedances);
  EXPECT_EQ(merged.metrics.slo->metrics[1].observed_us, one.slo->metrics[1].observed_us);
  EXPECT_EQ(merged.metrics.slo->verdict, one.slo->verdict);
  EXPECT_NE(merged.console.find("\nTTFO "), std::string::npos) << merged.console;

  // A shard written before TTFO (no ttfo tags in its latency.hlog) merges as one without samples.
  auto old = shards;
  auto& intervals = old[0].hlog.intervals;
  intervals.erase(std::remove_if(intervals.begin(), intervals.end(),
                                 [](const auto& in) { return in.tag && in.tag->rfind("ttfo", 0) == 0; }),
                  intervals.end());
  const auto partial = analysis::merge_artifacts(old);
  EXPECT_EQ(partial.metrics.latency.at(Metric::kTtfo).count,
            one.latency.at(Metric::kTtfo).count - old[0].result["latency"]["ttfo"]["count"].get<std::int64_t>());
}

TEST(RecordFromJson, RoundTripsARecord) {
  analysis::RequestRecord r;
  r.index = 17;
  r.in_window = true;
  r.t_intended = Nanos(123'456'789);
  r.t_send = Nanos(123'500'001);
  r.t_first = Nanos(150'000'000);
  r.t_last = Nanos(170'123'457);
  r.t_done = Nanos(170'200'000);
  r.input_tokens = 10;
  r.output_tokens = 5;
  r.requested_input_tokens = 10;
  r.requested_output_tokens = 6;
  r.tokens_from_usage = true;
  r.output_events = 5;
  r.ended_early = true;
  r.http_status = 200;
  r.stage = 2;
  const auto back = analysis::record_from_json(analysis::record_json(r));
  EXPECT_EQ(back.t_intended, r.t_intended);
  EXPECT_EQ(back.t_send, r.t_send);
  EXPECT_EQ(back.t_first, r.t_first);
  EXPECT_EQ(back.t_last, r.t_last);
  EXPECT_EQ(back.t_headers, std::nullopt);
  EXPECT_EQ(back.tpot(), r.tpot());
  EXPECT_EQ(back.output_tokens, 5);
  EXPECT_TRUE(back.ended_early);
  EXPECT_EQ(back.stage, 2);
  EXPECT_TRUE(back.ok());
  r.error = analysis::ErrorClass::kInterTokenTimeout;
  r.error_message = "gap";
  const auto failed = analysis::record_from_json(analysis::record_json(r));
  EXPECT_EQ(failed.error, analysis::ErrorClass::kInterTokenTimeout);
  EXPECT_EQ(failed.error_message, "gap");
  json bad = analysis::record_json(r);
  bad["error_class"] = "cosmic_ray";
  EXPECT_THROW(analysis::record_from_json(bad), MergeError);

  // The server's ground truth comes back (a merged or rebuilt run keeps it), and a malformed one is an error.
  r.error = analysis::ErrorClass::kNone;
  r.server_first_token_s = 0.042;
  r.server_last_token_s = 0.25;
  const auto timed = analysis::record_from_json(analysis::record_json(r));
  EXPECT_EQ(timed.server_first_token_s, 0.042);
  EXPECT_EQ(timed.server_last_token_s, 0.25);
  EXPECT_EQ(timed.server_queue_s, std::nullopt);
  for (const json& server : {json(3), json{{"first_token_s", "soon"}}}) {
    json odd = analysis::record_json(r);
    odd["server"] = server;
    EXPECT_THROW(analysis::record_from_json(odd), MergeError) << server.dump();
  }
}

}  // namespace
}  // namespace llmload
