#pragma once
// The probe stream's settings (--probe-rate, --probe-input-tokens, --probe-output-tokens,
// --probe-baseline; docs/metrics.md "Probe stream").

#include <cstdint>

namespace llmload {

struct ScenarioConfig;

/// Single small requests sent beside the load at a seeded Poisson rate, measured apart from it:
/// what the load does to an unrelated user's latency.
struct ProbeConfig {
  double rate = 0;                  // probes per second; 0: no probe stream
  std::int64_t input_tokens = 32;   // each probe's prompt
  std::int64_t output_tokens = 16;  // each probe's max_tokens
  std::int64_t baseline = 3;        // probes sent one at a time before the load (the unloaded reference)
  bool sizes_given = false;         // --probe-input-tokens/--probe-output-tokens/--probe-baseline given
  bool enabled() const { return rate > 0; }
};

/// The most probes per second: beyond it the probes are load of their own, not a measurement of it.
inline constexpr double kMaxProbeRate = 10.0;

/// Checks cfg.probe against the run (ScenarioConfig::validate calls it); throws ConfigError naming
/// the flag and the fix: a rate above kMaxProbeRate, above half an open-loop run's --request-rate,
/// or too low to send one probe in a --duration; sizes out of range; probe flags without
/// --probe-rate.
void validate_probe(const ScenarioConfig& cfg);

/// The settings a probe request is built with: the run's endpoint, backend, first model, key,
/// headers, extra body, streaming and timeouts, with the probe's lengths; no workload, tools,
/// structured output, sessions or kept outputs.
ScenarioConfig probe_scenario(const ScenarioConfig& cfg);

/// The seed of the probe schedule and prompts, apart from the load's arrival and data seeds.
std::uint64_t probe_seed(std::uint64_t base);

}  // namespace llmload
