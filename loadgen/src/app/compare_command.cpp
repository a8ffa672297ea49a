#include "compare_command.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/run_compare.hpp"
#include "llmload/loadgen/config_error.hpp"

namespace llmload::app {

namespace fs = std::filesystem;

namespace {

analysis::CompareArtifact load(const std::string& given) {
  analysis::CompareArtifact r;
  r.name = given;
  fs::path dir = given;
  fs::path result = dir / "result.json";
  if (fs::is_regular_file(dir)) {
    result = dir;
    dir = dir.parent_path();
  } else if (!fs::is_directory(dir)) {
    throw ConfigError(fmt::format("'{}' is neither a run directory nor a result.json file", given));
  }
  std::ifstream in(result);
  if (!in) {
    throw ConfigError(fmt::format("cannot read '{}': give a directory written by llmload run --output (it holds "
                                  "result.json)",
                                  result.string()));
  }
  r.result = nlohmann::json::parse(in, nullptr, false);
  if (r.result.is_discarded() || !r.result.is_object()) {
    throw ConfigError(fmt::format("'{}' is not a JSON object: is it an llmload result.json?", result.string()));
  }
  if (!r.result.contains("conditions")) {
    throw ConfigError(fmt::format("'{}' has no \"conditions\": it is not an llmload run artifact", result.string()));
  }
  const fs::path hlog = dir / "latency.hlog";
  if (fs::exists(hlog)) {
    std::ifstream h(hlog);
    try {
      r.hlog = analysis::read_hlog(h);
    } catch (const std::exception& e) {
      throw ConfigError(fmt::format("'{}' cannot be read: {}", hlog.string(), e.what()));
    }
  }
  return r;
}

}  // namespace

int compare_command(const std::string& a, const std::string& b, const std::string& json_out) {
  analysis::CompareArtifact ra;
  analysis::CompareArtifact rb;
  try {
    ra = load(a);
    rb = load(b);
  } catch (const ConfigError& e) {
    fmt::print(stderr, "llmload compare: error: {}\n", e.what());
    return 2;
  }
  if (!ra.hlog || !rb.hlog) {
    fmt::print(stderr, "llmload compare: note: {} has no latency.hlog: latency percentiles are not compared\n",
               !ra.hlog ? a : b);
  }
  const analysis::RunComparison c = analysis::compare_runs(ra, rb);
  fmt::print("{}", analysis::format_comparison(c, a, b));
  if (!json_out.empty()) {
    std::ofstream f(json_out);
    f << analysis::to_json(c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    if (!f) {
      fmt::print(stderr, "llmload compare: error: cannot write '{}'\n", json_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace llmload::app
