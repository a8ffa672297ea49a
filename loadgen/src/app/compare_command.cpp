#include "compare_command.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/accuracy.hpp"
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

using nlohmann::json;

// Accuracy and exact-match rate of A and B (result.json or a sweep point's entry), compared:
// {"accuracy": ..., "consistency": ...} (analysis::compare_proportions; null where a side lacks it).
json correctness_of(const json& a, const json& b) {
  const auto counts = [](const json& r, const char* section, const char* k, const char* n) -> std::pair<long, long> {
    const json& s = r.value(section, json());
    if (!s.is_object()) return {0, 0};
    if (s.contains(k) && s.contains(n)) return {s[k].get<long>(), s[n].get<long>()};
    // A sweep point: {"rate", "n"}.
    if (s.value("rate", json()).is_number() && s.value("n", json()).is_number_integer()) {
      const long total = s["n"].get<long>();
      return {std::lround(s["rate"].get<double>() * static_cast<double>(total)), total};
    }
    return {0, 0};
  };
  const auto [ka, na] = counts(a, "accuracy", "correct", "graded");
  const auto [kb, nb] = counts(b, "accuracy", "correct", "graded");
  const auto [ia, ma] = counts(a, "consistency", "identical", "compared");
  const auto [ib, mb] = counts(b, "consistency", "identical", "compared");
  return {{"accuracy", analysis::compare_proportions(ka, na, kb, nb)},
          {"consistency", analysis::compare_proportions(ia, ma, ib, mb)}};
}

std::string correctness_text(const json& c, const std::string& where) {
  std::string o;
  for (const auto& [key, label] : {std::pair<const char*, const char*>{"accuracy", "accuracy"},
                                   {"consistency", "identical outputs"}}) {
    const json& x = c[key];
    if (!x.is_object()) continue;
    o += fmt::format("{}{}: A {:.1f}% (n {}), B {:.1f}% (n {}), B - A {:+.1f} points [{:+.1f}, {:+.1f}] {}\n", where, label,
                     100 * x["a"].get<double>(), x["n_a"].get<long>(), 100 * x["b"].get<double>(), x["n_b"].get<long>(),
                     100 * x["difference"].get<double>(), 100 * x["difference_ci95"][0].get<double>(),
                     100 * x["difference_ci95"][1].get<double>(),
                     x["significant"].get<bool>() ? "significant" : "not significant (95%, Newcombe)");
  }
  return o;
}

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
      const auto sa = analysis::load_compare_sweep(options.a);
      const auto sb = analysis::load_compare_sweep(options.b);
      if (!sa.load_kind.empty() && !sb.load_kind.empty() && sa.load_kind != sb.load_kind) {
        // A concurrency of 4 is no rate of 4 req/s: every line would pair or label loads wrongly.
        fmt::print(stderr,
                   "llmload compare: error: A ('{}') sweeps {} and B ('{}') sweeps {}: no offered load of one is a "
                   "load of the other; compare sweeps of the same kind, or two points as runs (their directories, "
                   "e.g. SWEEP/rate-10)\n",
                   options.a, sa.load_kind, options.b, sb.load_kind);
        return 2;
      }
      const auto c = analysis::compare_sweeps(sa, sb, settings);
      text = analysis::format_sweep_comparison(c, options.a, options.b);
      out = analysis::to_json(c);
      // Correctness per offered load both sweeps have.
      json points = json::array();
      for (const auto& pa : sa.points) {
        for (const auto& pb : sb.points) {
          if (pa.offered != pb.offered) continue;
          json cc = correctness_of(pa.entry, pb.entry);
          if (cc["accuracy"].is_null() && cc["consistency"].is_null()) continue;
          text += correctness_text(cc, fmt::format("at {:g}: ", pa.offered));
          cc["offered"] = pa.offered;
          points.push_back(std::move(cc));
        }
      }
      out["correctness"] = points.empty() ? json(nullptr) : json(points);
    } else {
      const auto ra = analysis::load_compare_run(options.a);
      const auto rb = analysis::load_compare_run(options.b);
      const auto c = analysis::compare_runs(ra, rb, settings);
      text = analysis::format_comparison(c, options.a, options.b);
      out = analysis::to_json(c);
      const json cc = correctness_of(ra.result, rb.result);
      text += correctness_text(cc, "");
      out["correctness"] = cc["accuracy"].is_null() && cc["consistency"].is_null() ? json(nullptr) : cc;
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
