#include "probe_settings.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload::app {
namespace {

double parse_rate(const std::string& v, const std::string& origin) {
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(d) || d <= 0) {
    throw ConfigError(fmt::format("bad {} '{}': give the probes per second, a number above 0 (e.g. 0.5 or 2); leave "
                                  "it out for no probe stream",
                                  origin, v));
  }
  return d;
}

std::int64_t parse_count(const std::string& v, const std::string& origin, std::int64_t min) {
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < min) {
    throw ConfigError(fmt::format("bad {} '{}': expected an integer >= {}", origin, v, min));
  }
  return n;
}

}  // namespace

bool apply_probe_setting(const std::string& name, const std::string& value, const std::string& origin,
                         ScenarioConfig& cfg) {
  if (name == "probe-rate") {
    cfg.probe.rate = parse_rate(value, origin);
  } else if (name == "probe-input-tokens") {
    cfg.probe.input_tokens = parse_count(value, origin, 1);
    cfg.probe.sizes_given = true;
  } else if (name == "probe-output-tokens") {
    cfg.probe.output_tokens = parse_count(value, origin, 1);
    cfg.probe.sizes_given = true;
  } else if (name == "probe-baseline") {
    cfg.probe.baseline = parse_count(value, origin, 0);
    cfg.probe.sizes_given = true;
  } else {
    return false;
  }
  return true;
}

}  // namespace llmload::app
