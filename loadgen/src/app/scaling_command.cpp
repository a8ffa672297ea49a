// `llmload scaling`: see scaling_command.hpp. Reads the artifacts (run, trials, sweep) and hands
// them to analysis::build_scaling_report.
#include "scaling_command.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/scaling_report.hpp"

namespace llmload::app {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// An artifact that cannot be read, or a bad option: exit 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw InputError(fmt::format("cannot read '{}'", p.string()));
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw InputError(fmt::format("'{}' is not a JSON object: is it an llmload artifact?", p.string()));
  }
  return j;
}

std::optional<double> parse_number(const std::string& s) {
  double v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  while (b < e && *b == ' ') ++b;
  while (e > b && e[-1] == ' ') --e;
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e || b == e || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_trials(const json& result) {
  if (result.value("artifact", std::string()) == "trials") return true;
  const auto it = result.find("trials");
  return it != result.end() && it->is_array() && !it->empty() && (*it)[0].is_object() && (*it)[0].contains("dir");
}

// A run or trials artifact's result.json (and, for trials, each trial's that can be read).
void read_result(const fs::path& dir, const std::string& shown, analysis::ScalingInput& in) {
  const fs::path result = dir / "result.json";
  if (!fs::is_regular_file(result)) {
    throw InputError(fmt::format("'{}' holds no result.json (nor sweep.json): give a directory written by `llmload run "
                                 "--output` or `llmload sweep --output`",
                                 shown));
  }
  in.result = read_json(result);
  if (!in.result.contains("conditions") || !in.result["conditions"].is_object()) {
    throw InputError(fmt::format("'{}' has no \"conditions\": it is not an llmload run artifact", result.string()));
  }
  if (!is_trials(in.result)) return;
  if (in.type == analysis::ArtifactType::kRun) in.type = analysis::ArtifactType::kTrials;
  for (const auto& t : in.result["trials"]) {
    if (!t.is_object() || !t.contains("dir") || !t["dir"].is_string()) continue;
    fs::path td = t["dir"].get<std::string>();
    if (td.is_relative()) td = dir / td;
    std::ifstream f(td / "result.json");
    if (!f) continue;
    json j = json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.is_object()) in.trial_results.push_back(std::move(j));
  }
}

analysis::ScalingInput load(const std::string& given) {
  analysis::ScalingInput in;
  in.name = given;
  fs::path dir = given;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    throw InputError(fmt::format("'{}' does not exist: give the directory that `llmload run --output` or `llmload "
                                 "sweep --output` wrote",
                                 given));
  }
  if (fs::is_regular_file(dir, ec)) {
    if (dir.filename() != "result.json" && dir.filename() != "sweep.json") {
      throw InputError(fmt::format("'{}' is a file but neither result.json nor sweep.json: give an artifact directory",
                                   given));
    }
    dir = dir.parent_path();
    if (dir.empty()) dir = ".";
  }
  const fs::path sweep = dir / "sweep.json";
  if (!fs::is_regular_file(sweep, ec) || fs::path(given).filename() == "result.json") {
    read_result(dir, given, in);
    return in;
  }
  // A sweep: its capacity point's artifact gives the conditions (and the cost and energy).
  in.type = analysis::ArtifactType::kSweep;
  in.sweep = read_json(sweep);
  const json& points = in.sweep.contains("points") ? in.sweep["points"] : json();
  if (!points.is_array()) {
    throw InputError(fmt::format("'{}' has no \"points\" array: is it an llmload sweep.json?", sweep.string()));
  }
  const json cap = in.sweep.value("capacity", json());
  if (!cap.is_object() || !cap.contains("highest_pass") || !cap["highest_pass"].is_number()) {
    std::string stop;
    if (cap.is_object() && cap.contains("stop") && cap["stop"].is_string()) stop = ", stop: " + cap["stop"].get<std::string>();
    throw InputError(fmt::format("'{}': the sweep has no capacity point (capacity{} is null{}): scaling compares the "
                                 "throughput at the same SLO; run `llmload sweep --find-capacity --slo ...` until a "
                                 "load passes, or pass one point's run directory",
                                 given, cap.is_object() ? ".highest_pass" : "", stop));
  }
  const double load = cap["highest_pass"].get<double>();
  for (const auto& p : points) {
    if (!p.is_object() || !p.contains("dir") || !p["dir"].is_string()) continue;
    if (!p.contains("offered") || !p["offered"].is_number()) continue;
    const double offered = p["offered"].get<double>();
    if (std::fabs(offered - load) > 1e-9 * std::max(1.0, std::fabs(load))) continue;
    fs::path pd = p["dir"].get<std::string>();
    if (pd.is_relative()) pd = dir / pd;
    if (!fs::is_regular_file(pd / "result.json", ec)) continue;
    read_result(pd, pd.string(), in);
    return in;
  }
  throw InputError(fmt::format("'{}': no point of the sweep at its capacity load {:g} holds a result.json (points[].dir "
                               "with offered = {:g}): is the sweep complete?",
                               given, load, load));
}

std::vector<double> parse_k(const std::string& text, std::size_t dirs) {
  std::vector<double> ks;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const auto v = parse_number(part);
    if (!v) throw InputError(fmt::format("--k '{}': '{}' is not a number (expected e.g. --k 1,2,4)", text, part));
    ks.push_back(*v);
    pos = comma + 1;
  }
  if (ks.size() != dirs) {
    throw InputError(fmt::format("--k '{}' gives {} value{} for {} director{}: give one K per directory, in the same order",
                                 text, ks.size(), ks.size() == 1 ? "" : "s", dirs, dirs == 1 ? "y" : "ies"));
  }
  return ks;
}

}  // namespace

void add_scaling_options(CLI::App& sub, ScalingOptions& o) {
  sub.add_option("dirs", o.dirs,
                 "artifacts at K = 1, 2, 4, ...: run or trials directories (result.json), or sweep directories "
                 "(sweep.json with a capacity point)")
      ->required();
  sub.add_option("--k", o.k,
                 "K of each directory, in the same order, e.g. 1,2,4 (default: each artifact's conditions.devices, "
                 "from llmload run --devices N)");
  sub.add_option("--kind", o.kind,
                 "strong (default): the same total offered load at every K | weak: the offered load grows with K "
                 "(per-replica load fixed)");
  sub.add_option("--metric", o.metric,
                 "the throughput X: auto (default: a sweep's capacity goodput, else goodput under the SLO when every "
                 "run has one, else request throughput) | goodput | request_throughput | output_throughput");
  sub.add_option("--price-per-hour", o.price_per_hour,
                 "price of one device per hour (any currency) for the cost per 1M output tokens, with devices = "
                 "conditions.devices, else K (default: the artifacts' conditions.price_per_hour)");
  sub.add_option("--json", o.json, "also write the table as JSON to this file");
  sub.add_flag("--allow-different-conditions", o.allow_different_conditions,
               "compute it even when the artifacts' conditions differ materially (the output is labelled as such)");
  sub.footer(R"(S(K) = X(K)/X(1) and E(K) = S(K)/K for the throughput X at the same SLO (relative to the
smallest K when there is no K = 1). The artifacts' conditions are compared as `llmload compare`
does: any material difference (model, workload, scenario, SLO, tool version, ...) is refused,
naming every differing condition and both artifacts. Endpoint URLs, hosts, start times, seeds,
command lines and devices may differ; for --kind weak the offered load must scale with K.
      llmload scaling results/k1 results/k2 results/k4 --k 1,2,4 --price-per-hour 2.5 --json scaling.json
Exit codes: 0 computed, 1 the JSON could not be written, 2 an artifact cannot be read, the
conditions differ (without --allow-different-conditions), or bad K.
See docs/scaling.md.)");
}

int scaling_command(const ScalingOptions& o) {
  analysis::ScalingReportOptions ro;
  std::vector<analysis::ScalingInput> inputs;
  try {
    if (o.kind == "strong") {
      ro.kind = analysis::ScalingKind::kStrong;
    } else if (o.kind == "weak") {
      ro.kind = analysis::ScalingKind::kWeak;
    } else {
      throw InputError(fmt::format("--kind '{}': expected strong or weak", o.kind));
    }
    const auto metric = analysis::parse_scaling_metric(o.metric);
    if (!metric) {
      throw InputError(
          fmt::format("--metric '{}': expected auto, goodput, request_throughput or output_throughput", o.metric));
    }
    ro.metric = *metric;
    if (!o.price_per_hour.empty()) {
      const auto p = parse_number(o.price_per_hour);
      if (!p || *p < 0) {
        throw InputError(fmt::format("--price-per-hour '{}': expected a number >= 0 (the price of one device per hour)",
                                     o.price_per_hour));
      }
      ro.price_per_hour = *p;
    }
    ro.allow_different_conditions = o.allow_different_conditions;
    std::vector<double> ks;
    if (!o.k.empty()) ks = parse_k(o.k, o.dirs.size());
    for (std::size_t i = 0; i < o.dirs.size(); ++i) {
      inputs.push_back(load(o.dirs[i]));
      if (!ks.empty()) inputs.back().k = ks[i];
    }
  } catch (const InputError& e) {
    fmt::print(stderr, "llmload scaling: error: {}\n", e.what());
    return 2;
  }

  analysis::ScalingReport report;
  try {
    report = analysis::build_scaling_report(inputs, ro);
  } catch (const analysis::ScalingError& e) {
    fmt::print(stderr, "llmload scaling: error: {}\n", e.what());
    return 2;
  }
  if (report.refused) {
    fmt::print(stderr, "{}", analysis::format_scaling_report(report));
    return 2;
  }
  fmt::print("{}", analysis::format_scaling_report(report));
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << analysis::to_json(report).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    f.flush();
    if (!f) {
      fmt::print(stderr, "llmload scaling: error: cannot write '{}'\n", o.json);
      return 1;
    }
  }
  return 0;
}

}  // namespace llmload::app
