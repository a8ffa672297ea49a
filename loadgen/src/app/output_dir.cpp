// Where a run's artifact goes: see output_dir.hpp.
#include "output_dir.hpp"

#include "file_write.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload::app {

namespace {

// A number as a name part: 8, 2.5, 0.125.
std::string number_part(double v) {
  if (std::isinf(v)) return "inf";
  return fmt::format("{:g}", v);
}

// Letters, digits, '.', '-' and '_' only: a model id like "org/Model 7B" becomes "Model_7B".
std::string name_part(std::string s) {
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  for (char& c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_';
    if (!keep) c = '_';
  }
  return s;
}

std::string load_part(const ScenarioConfig& cfg) {
  if (cfg.timed_arrivals || !cfg.workload.trace_path.empty()) return "trace";
  switch (cfg.kind) {
    case ScenarioKind::kServer: return "rate" + number_part(cfg.request_rate);
    case ScenarioKind::kConcurrency: return fmt::format("c{}", cfg.concurrency);
    case ScenarioKind::kOffline: return cfg.max_inflight ? fmt::format("max{}", *cfg.max_inflight) : "all";
    default: return "";
  }
}

}  // namespace

std::string local_stamp(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string default_run_dir(const ScenarioConfig& cfg, std::time_t now) {
  const std::string load = load_part(cfg);
  return fmt::format("llmload-runs/{}-{}{}{}", local_stamp(now), to_string(cfg.kind), load.empty() ? "" : "-", load);
}

std::string vllm_result_name(const ScenarioConfig& cfg, std::time_t now) {
  const double rate = cfg.kind == ScenarioKind::kServer ? cfg.request_rate : INFINITY;
  const std::string model = cfg.model.empty() ? "model" : name_part(cfg.model);
  return fmt::format("{}-{}qps-{}-{}", name_part(cfg.backend), number_part(rate), model, local_stamp(now));
}

void resolve_output_dir(ScenarioConfig& cfg, std::time_t now) {
  if (cfg.save_result) {
    const std::filesystem::path parent = cfg.output_dir.empty() ? "." : cfg.output_dir;
    cfg.vllm_result_file = (parent / (vllm_result_name(cfg, now) + ".json")).string();
    cfg.output_dir = (parent / vllm_result_name(cfg, now)).string();
  } else if (cfg.output_dir.empty()) {
    cfg.output_dir = default_run_dir(cfg, now);
  }
}

namespace {

constexpr const char* kWriteProbe = ".llmload-write-test";

// A directory holding anything but a leftover write probe.
bool holds_files(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename() != kWriteProbe) return true;
  }
  return false;
}

}  // namespace

void check_output_dir_unused(const std::string& dir, bool overwrite) {
  if (!overwrite && !dir.empty() && holds_files(dir)) {
    throw ConfigError(fmt::format("--output directory '{}' is not empty (it may hold another run's results): give a "
                                  "new directory, or add --overwrite to replace what is there",
                                  dir));
  }
}

void remove_earlier_workers(const std::string& dir) {
  const auto workers = std::filesystem::path(dir) / "workers";
  std::error_code ec;
  if (std::filesystem::exists(workers / "worker-0", ec) || std::filesystem::exists(workers / "worker-0.log", ec)) {
    std::filesystem::remove_all(workers, ec);
  }
}

void claim_output_dir(const std::string& dir, bool overwrite) {
  if (dir.empty()) return;
  check_output_dir_unused(dir, overwrite);
  std::error_code ec;
  if (overwrite) remove_earlier_workers(dir);
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("cannot create --output directory '{}': {}", dir, ec.message()));
  const auto probe = std::filesystem::path(dir) / kWriteProbe;
  if (auto e = write_file(probe, std::string(4096, 'x'))) {
    throw ConfigError(fmt::format("--output directory '{}' cannot be written: {}", dir, *e));
  }
  std::filesystem::remove(probe, ec);
}

}  // namespace llmload::app
