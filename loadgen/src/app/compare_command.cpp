#include "compare_command.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/run_compare.hpp"

namespace llmload::app {

double parse_min_effect(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v) || v < 0 || v >= 100) {
    throw std::invalid_argument(fmt::format(
        "--min-effect '{}' is not a percentage in [0, 100): give e.g. 5 or 5% (a change smaller than 5% of A is "
        "never significant), or 0 to leave only the measurement's resolution",
        text));
  }
  return v / 100.0;
}

namespace {

const char* kind_text(analysis::CompareArtifactKind k) {
  return k == analysis::CompareArtifactKind::kSweep ? "a sweep (it holds sweep.json)" : "a run (it holds result.json)";
}

}  // namespace

int compare_command(const CompareCommandOptions& options) {
  analysis::CompareSettings settings;
  nlohmann::json out;
  std::string text;
  try {
    settings.min_effect = parse_min_effect(options.min_effect);
    const auto ka = analysis::detect_compare_artifact(options.a);
    const auto kb = analysis::detect_compare_artifact(options.b);
    if (ka != kb) {
      fmt::print(stderr,
                 "llmload compare: error: A ('{}') is {} but B ('{}') is {}: compare a run with a run, or a sweep with "
                 "a sweep (a sweep's point is a run: give its directory, e.g. SWEEP/rate-10)\n",
                 options.a, kind_text(ka), options.b, kind_text(kb));
      return 2;
    }
    if (ka == analysis::CompareArtifactKind::kSweep) {
      const auto c = analysis::compare_sweeps(analysis::load_compare_sweep(options.a),
                                              analysis::load_compare_sweep(options.b), settings);
      text = analysis::format_sweep_comparison(c, options.a, options.b);
      out = analysis::to_json(c);
    } else {
      const auto c = analysis::compare_runs(analysis::load_compare_run(options.a), analysis::load_compare_run(options.b),
                                            settings);
      text = analysis::format_comparison(c, options.a, options.b);
      out = analysis::to_json(c);
    }
  } catch (const analysis::CompareInputError& e) {
    fmt::print(stderr, "llmload compare: error: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "llmload compare: error: {}\n", e.what());
    return 2;
  }
  fmt::print("{}", text);
  if (!options.json_out.empty()) {
    std::ofstream f(options.json_out);
    f << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    if (!f) {
      fmt::print(stderr, "llmload compare: error: cannot write '{}'\n", options.json_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace llmload::app
