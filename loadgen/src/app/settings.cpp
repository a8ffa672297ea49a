#include "settings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cmath>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"

namespace llmload::app {
namespace {

std::int64_t parse_int(const std::string& v, const std::string& origin, std::int64_t min) {
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < min) {
    throw ConfigError(fmt::format("bad {} '{}': expected an integer >= {}", origin, v, min));
  }
  return n;
}

double parse_double(const std::string& v, const std::string& origin) {
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(d) || d < 0) {
    throw ConfigError(fmt::format("bad {} '{}': expected a non-negative number", origin, v));
  }
  return d;
}

Nanos parse_dur(const std::string& v, const std::string& origin) {
  try {
    return parse_duration(v);
  } catch (const DurationParseError& e) {
    throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
  }
}

bool parse_bool(const std::string& v, const std::string& origin) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw ConfigError(fmt::format("bad {} '{}': expected true or false", origin, v));
}

std::string normalize(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

}  // namespace

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> kSettings = {
      {"scenario", "single-stream | server | offline | concurrency"},
      {"base-url", "server URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is accepted)"},
      {"endpoint", "completions (/v1/completions) | chat (/v1/chat/completions)"},
      {"model", "model name (default: the first model of GET /v1/models)"},
      {"api-key", "API key sent as 'Authorization: Bearer' (default: $OPENAI_API_KEY); never written out", false},
      {"input-tokens", "prompt length in tokens (synthesized prompts)"},
      {"output-tokens", "output length in tokens (max_tokens, with ignore_eos and min_tokens)"},
      {"seed", "base seed; arrival and data seeds are derived from it"},
      {"num-requests", "measured requests (warmup not included); default 100 when no --duration"},
      {"duration", "length of the measurement window, e.g. 60s"},
      {"warmup", "discarded warmup: a number of requests (e.g. 20) or a time (e.g. 5s)"},
      {"slo", "SLO bounds and percentile, e.g. ttft:2000ms,tpot:200ms (p99 by default)"},
      {"request-rate", "server scenario: Poisson arrival rate in requests per second"},
      {"max-inflight", "offline scenario: cap on requests in flight"},
      {"concurrency", "concurrency scenario: requests kept in flight"},
      {"output", "directory for result.json, requests.jsonl and latency.hlog"},
      {"timeout", "bound on each whole request (default 10m)"},
      {"idle-timeout", "bound on the silence between bytes of a response (default 60s)"},
      {"stream", "true: SSE streaming (default); false: non-streaming (then TTFT equals E2E)"},
      {"drain-timeout", "after SIGINT/SIGTERM, how long requests in flight may finish (default 30s)"},
      {"api-key-file", "read the API key from this file (first line); never written out"},
  };
  return kSettings;
}

void apply_setting(const std::string& raw_name, const std::string& value, const std::string& origin,
                   ScenarioConfig& cfg) {
  const std::string name = normalize(raw_name);
  if (name == "scenario") {
    try {
      cfg.kind = parse_scenario_kind(value);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
    }
  } else if (name == "base-url") {
    cfg.base_url = value;
  } else if (name == "endpoint") {
    if (value == "completions") {
      cfg.endpoint = ApiKind::kCompletions;
    } else if (value == "chat") {
      cfg.endpoint = ApiKind::kChat;
    } else {
      throw ConfigError(fmt::format("bad {} '{}': use completions or chat", origin, value));
    }
  } else if (name == "model") {
    cfg.model = value;
  } else if (name == "api-key") {
    cfg.api_key = value;
  } else if (name == "input-tokens") {
    cfg.input_tokens = parse_int(value, origin, 1);
  } else if (name == "output-tokens") {
    cfg.output_tokens = parse_int(value, origin, 1);
  } else if (name == "seed") {
    cfg.seed = static_cast<std::uint64_t>(parse_int(value, origin, 0));
  } else if (name == "num-requests") {
    cfg.num_requests = parse_int(value, origin, 1);
  } else if (name == "duration") {
    cfg.duration = parse_dur(value, origin);
  } else if (name == "warmup") {
    try {
      cfg.warmup = parse_warmup(value);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", origin, e.what()));
    }
  } else if (name == "slo") {
    try {
      cfg.slo = analysis::parse_slo(value);
    } catch (const analysis::SloParseError& e) {
      throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
    }
  } else if (name == "request-rate") {
    cfg.request_rate = parse_double(value, origin);
  } else if (name == "max-inflight") {
    cfg.max_inflight = parse_int(value, origin, 1);
  } else if (name == "concurrency") {
    cfg.concurrency = parse_int(value, origin, 1);
  } else if (name == "output") {
    cfg.output_dir = value;
  } else if (name == "timeout") {
    cfg.timeout = parse_dur(value, origin);
  } else if (name == "idle-timeout") {
    cfg.idle_timeout = parse_dur(value, origin);
  } else if (name == "drain-timeout") {
    cfg.drain_timeout = parse_dur(value, origin);
  } else if (name == "api-key-file") {
    std::ifstream f(value);
    std::string key;
    if (!f || !std::getline(f, key)) {
      throw ConfigError(fmt::format("bad {}: cannot read an API key from '{}'", origin, value));
    }
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) key.erase(key.begin());
    if (key.empty()) throw ConfigError(fmt::format("bad {}: the file '{}' holds no API key", origin, value));
    cfg.api_key = key;
  } else if (name == "stream") {
    cfg.stream = parse_bool(value, origin);
  } else {
    std::string names;
    for (const auto& s : settings()) names += (names.empty() ? "" : ", ") + s.name;
    throw ConfigError(fmt::format("unknown setting '{}' ({}); known settings: {}", raw_name, origin, names));
  }
}

void apply_scenario_file(const std::string& path, ScenarioConfig& cfg) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot read scenario file '{}': check the path", path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  apply_scenario_text(text, path, cfg);
}

void apply_scenario_text(const std::string& text, const std::string& path, ScenarioConfig& cfg) {
  // A NUL would cut every message that echoes a key or value (what() is a C string), and means
  // this is not a text file anyway.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw ConfigError(fmt::format("scenario file '{}' is not a text file: it contains a NUL byte (line {})", path, line));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("scenario file '{}' is not valid YAML/JSON: line {}, column {}: {}", path,
                                  e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) {
    throw ConfigError(fmt::format("scenario file '{}' must be a mapping of settings (e.g. 'scenario: server'), "
                                  "not a {}",
                                  path, root.IsSequence() ? "list" : (root.IsNull() ? "empty document" : "scalar")));
  }
  try {
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) {
        throw ConfigError(fmt::format("scenario file '{}' (line {}): keys must be plain names", path,
                                      kv.first.Mark().line + 1));
      }
      const std::string key = kv.first.as<std::string>();
      const std::string origin =
          fmt::format("scenario file '{}', key '{}' (line {})", path, key, kv.first.Mark().line + 1);
      const std::string name = normalize(key);
      if (name == "api-key") {
        throw ConfigError(fmt::format("{}: API keys do not belong in scenario files; set OPENAI_API_KEY or pass "
                                      "--api-key-file",
                                      origin));
      }
      const YAML::Node& v = kv.second;
      if (name == "slo" && v.IsMap()) {
        // slo: {ttft: 2000ms, tpot: 200ms, percentile: 99}
        std::string spec;
        for (const auto& b : v) {
          if (!b.first.IsScalar() || !b.second.IsScalar()) {
            throw ConfigError(fmt::format("{}: each SLO entry must be 'metric: bound'", origin));
          }
          const std::string k = b.first.as<std::string>();
          spec += (spec.empty() ? "" : ",") +
                  (k == "percentile" ? "p" + b.second.as<std::string>() : k + ":" + b.second.as<std::string>());
        }
        apply_setting(name, spec, origin, cfg);
        continue;
      }
      if (!v.IsScalar()) {
        throw ConfigError(fmt::format("{}: expected a single value, got {}", origin,
                                      v.IsMap() ? "a mapping" : (v.IsSequence() ? "a list" : "nothing")));
      }
      apply_setting(name, v.as<std::string>(), origin, cfg);
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("scenario file '{}': line {}: {}", path, e.mark.line + 1, e.msg));
  }
}

std::string scenario_summary(const ScenarioConfig& cfg) {
  return fmt::format("{} {}{}", to_string(cfg.kind),
                     cfg.kind == ScenarioKind::kServer        ? fmt::format("rate={}/s", cfg.request_rate)
                     : cfg.kind == ScenarioKind::kConcurrency ? fmt::format("concurrency={}", cfg.concurrency)
                     : cfg.kind == ScenarioKind::kOffline && cfg.max_inflight
                         ? fmt::format("max-inflight={}", *cfg.max_inflight)
                         : std::string(),
                     fmt::format(" in={} out={}", cfg.input_tokens, cfg.output_tokens));
}

}  // namespace llmload::app
