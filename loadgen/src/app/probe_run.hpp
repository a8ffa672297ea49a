#pragma once
// The probe stream around one run (--probe-rate; docs/metrics.md "Probe stream"): the unloaded
// reference sent before the load, result.json's `probe` section and probes.jsonl after it.

#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/probe_stream.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/transport.hpp"
#include "llmload/loadgen/url.hpp"

namespace llmload::app {

/// The most the unloaded reference may take: it stops there (a stalled server).
inline constexpr Nanos kProbeBaselineLimit = std::chrono::seconds(60);

/// The unloaded reference: cfg.probe.baseline probes, one at a time, on the transport before the
/// load (the server idle, as far as this client knows). Their records (empty with 0). A signal
/// stops it (the caller checks stop_signal()).
std::vector<analysis::RequestRecord> run_probe_baseline(boost::asio::io_context& ioc, const Clock& clock,
                                                        Transport& transport, const ProbeStream& probes,
                                                        const BaseUrl& url, std::int64_t count);

/// conditions.scenario.probe: the probe settings (null without --probe-rate). Sharded runs: the
/// probe stream is shard 0's, at the whole rate.
nlohmann::json probe_conditions(const ScenarioConfig& cfg);

/// result.json `probe`: the settings, the probes of the measurement window (counts, errors, TTFT,
/// TPOT, ITL, E2E), the unloaded reference and the ratio of the p50 TTFTs.
nlohmann::json probe_section(const ScenarioConfig& cfg, const ProbeStream& probes, const analysis::Window& window,
                             const std::vector<analysis::RequestRecord>& baseline);

/// probes.jsonl in `dir`: every probe's record as requests.jsonl writes one, with "probe": true
/// and "phase" ("baseline" or "load"). An error message, or "" once written.
std::string write_probes_file(const std::string& dir, const ProbeStream& probes,
                              const std::vector<analysis::RequestRecord>& baseline);

}  // namespace llmload::app
