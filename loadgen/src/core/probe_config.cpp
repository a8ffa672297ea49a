#include "llmload/loadgen/probe_config.hpp"

#include <cmath>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/scenario.hpp"

namespace llmload {

void validate_probe(const ScenarioConfig& cfg) {
  const ProbeConfig& p = cfg.probe;
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
  };
  if (!p.enabled()) {
    need(!p.sizes_given, "--probe-input-tokens, --probe-output-tokens and --probe-baseline go with --probe-rate R "
                         "(probes per second), e.g. --probe-rate 0.5");
    return;
  }
  need(std::isfinite(p.rate) && p.rate <= kMaxProbeRate,
       fmt::format("bad --probe-rate {:g}: above {:g} probes per second the probes are load of their own, not a "
                   "measurement of it; give at most {:g} (e.g. --probe-rate 1), or add that traffic to the load",
                   p.rate, kMaxProbeRate, kMaxProbeRate));
  constexpr std::int64_t kMaxProbeTokens = 100'000;
  need(p.input_tokens >= 1 && p.input_tokens <= kMaxProbeTokens,
       fmt::format("bad --probe-input-tokens {}: between 1 and {} (a probe is a small request; default 32)",
                   p.input_tokens, kMaxProbeTokens));
  need(p.output_tokens >= 1 && p.output_tokens <= kMaxProbeTokens,
       fmt::format("bad --probe-output-tokens {}: between 1 and {} (a probe is a small request; default 16)",
                   p.output_tokens, kMaxProbeTokens));
  need(p.baseline >= 0 && p.baseline <= 100,
       fmt::format("bad --probe-baseline {}: between 0 (no unloaded reference) and 100 (default 3)", p.baseline));
  if (cfg.kind == ScenarioKind::kServer && !cfg.timed_arrivals && cfg.request_rate > 0) {
    need(p.rate <= cfg.request_rate / 2,
         fmt::format("--probe-rate {:g} is above half the load's --request-rate {:g}: the probes would be a third or "
                     "more of the traffic they measure; give --probe-rate {:g} or less (e.g. {:g})",
                     p.rate, cfg.request_rate, cfg.request_rate / 2, cfg.request_rate / 10));
  }
  if (cfg.duration) {
    const double window_s = std::chrono::duration<double>(*cfg.duration).count();
    need(p.rate * window_s >= 1,
         fmt::format("--probe-rate {:g} sends fewer than one probe on average in the --duration of {:g} s: give "
                     "--probe-rate {:g} or more, or a longer --duration",
                     p.rate, window_s, 1.0 / window_s));
  }
}

ScenarioConfig probe_scenario(const ScenarioConfig& cfg) {
  ScenarioConfig p;
  p.kind = ScenarioKind::kSingleStream;
  p.base_url = cfg.base_url;
  p.endpoint = cfg.endpoint;
  p.backend = cfg.backend;
  p.backend_explicit = cfg.backend_explicit;
  p.endpoint_path = cfg.endpoint_path;
  p.model = cfg.model;  // the first model of --model a,b,c
  p.api_key = cfg.api_key;
  p.headers = cfg.headers;
  p.extra_body = cfg.extra_body;
  p.stream = cfg.stream;
  p.ignore_eos = cfg.ignore_eos;
  p.continuous_usage = cfg.continuous_usage;
  p.seed = cfg.seed;
  p.timeout = cfg.timeout;
  p.idle_timeout = cfg.idle_timeout;
  p.connect_timeout = cfg.connect_timeout;
  p.first_token_timeout = cfg.first_token_timeout;
  p.inter_token_timeout = cfg.inter_token_timeout;
  p.ca_cert = cfg.ca_cert;
  p.insecure = cfg.insecure;
  p.quiet = true;
  p.server_metrics_interval.reset();
  p.input_tokens = cfg.probe.input_tokens;
  p.output_tokens = cfg.probe.output_tokens;
  p.prompt_calibration = "estimate";
  return p;
}

std::uint64_t probe_seed(std::uint64_t base) { return mix_seed(base ^ 0x70726f6265737472ULL); }  // "probestr"

}  // namespace llmload
