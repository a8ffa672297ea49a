#pragma once
// `llmload report DIR` on the directory of a run that never finished (SIGKILL, a crash, a lost
// machine): result.json and latency.hlog rebuilt from the requests.jsonl the run streamed and the
// run-in-progress.json it left (run_journal.hpp), judged by the run's own rules (its validity
// checks, SLO, latency view and warmup). What requests.jsonl cannot give is left null and named
// in result.json `rebuilt.not_rebuilt` (docs/artifact.md, "A run that did not finish").

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/loadgen/scenario.hpp"

namespace llmload::app {

/// The `judging` section of run-in-progress.json: what a rebuild needs to judge the run as the
/// run itself would have.
nlohmann::json judging_json(const analysis::ValidityOptions& validity, analysis::LatencyView view,
                            const std::optional<analysis::SloSpec>& slo, const WarmupSpec& warmup,
                            std::optional<Nanos> duration);

struct RebuildOutcome {
  std::size_t requests = 0;              // records read from requests.jsonl
  std::optional<std::size_t> cut_line;   // its last line, cut off and left out
  std::string window;                    // how the window was taken
};

/// When `dir` holds run-in-progress.json and no result.json: rebuilds result.json and
/// latency.hlog (each written atomically), then removes run-in-progress.json. nullopt when there
/// is nothing to rebuild. Throws analysis::ReportError for files that cannot be read, and
/// analysis::ReportWriteError when the results cannot be written.
std::optional<RebuildOutcome> rebuild_unfinished_run(const std::string& dir);

}  // namespace llmload::app
