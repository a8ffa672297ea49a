#pragma once
// The result.json of one run, and how it reaches the user: what was run and under which
// conditions, the metrics of its load beside what the client and the server said of it, the
// console report, and the artifact's files written so that they agree (docs/artifact.md).
// run_once (run_command.cpp) prepares and drives the load and hands what it measured here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/stage_metrics.hpp"
#include "llmload/loadgen/calibration.hpp"
#include "llmload/loadgen/net/driver.hpp"
#include "llmload/loadgen/net/metrics_scraper.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/shard_plan.hpp"
#include "llmload/loadgen/url.hpp"
#include "llmload/loadgen/workload.hpp"
#include "run_command.hpp"

namespace llmload::app {

/// result.json `non_streaming_note` of a run without streaming (null with it).
inline constexpr const char* kNonStreamingNote = "non-streaming: TTFT equals E2E, and TPOT and ITL are not measured";

/// What the load cost the client: the whole process's CPU (the event loop, and the metrics
/// scraper's thread when there is one) over the load's wall time.
struct ClientCost {
  double user_s = 0;
  double system_s = 0;
  double wall_s = 0;
  /// Its share of one core, when the load lasted long enough to say.
  std::optional<double> core_share() const {
    return wall_s > 0 ? std::optional<double>((user_s + system_s) / wall_s) : std::nullopt;
  }
};

/// result.json `conditions`: what was run, against what, on what, with which prompts.
nlohmann::json run_conditions(const ScenarioConfig& cfg, const ScenarioConfig& local, const BaseUrl& url,
                              const RequestBuilder& builder, const net::ModelsInfo& models,
                              const std::vector<std::string>& argv, const nlohmann::json& env_settings,
                              const CalibrationResult& calibration, const Workload& workload, WallTime wall_start);

/// result.json `load.offered_*`: the load asked for (null where the scenario has none).
nlohmann::json offered_load(const ScenarioConfig& cfg);

/// The per-stage results of a stage plan (empty for other scenarios).
std::vector<analysis::StageMetrics> run_stages(const ScenarioConfig& cfg, const ScenarioConfig& local,
                                               const RunController& controller, const analysis::RunMetrics& metrics);

/// result.json of one finished load (docs/artifact.md): the metrics and verdicts, the conditions,
/// tokens, stages, the client's cost and connections, the server's metrics and the cross-checks
/// against them, over-load and cost. --verbose prints the cross-checks.
nlohmann::json run_result(const ScenarioConfig& cfg, const RunController& controller,
                          const analysis::RunMetrics& metrics, const nlohmann::json& conditions,
                          const nlohmann::json& tokens, const std::vector<analysis::StageMetrics>& stages,
                          const ClientCost& cost, std::int64_t connections_opened, const net::MetricsScraper* scraper);

/// The console report after the load: the metrics table, the stages, and the notes on what may
/// have limited the run.
void print_console_report(const ScenarioConfig& cfg, const analysis::RunMetrics& metrics, const nlohmann::json& tokens,
                          const std::vector<analysis::StageMetrics>& stages, const std::string& shard_label,
                          double cpu_busy_s, double load_wall_s, bool interrupted,
                          const analysis::SequentialSlo* sequential);

/// Writes result.json, requests.jsonl and latency.hlog into cfg.output_dir, then the report.
/// `requests_written`: requests.jsonl already holds every record's final line (the journal's,
/// RunJournal::whole), so it is kept rather than written again. false when a file could not be
/// written (the message is printed).
bool write_artifact(const ScenarioConfig& cfg, const ScenarioConfig& local, const ShardPlan& plan,
                    analysis::RecordRange records, bool requests_written, const analysis::RunMetrics& metrics,
                    const nlohmann::json& result, WallTime wall_start, const RunHooks& hooks);

}  // namespace llmload::app
