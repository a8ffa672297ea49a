#include "score_command.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "correctness.hpp"
#include "file_write.hpp"
#include "llmload/analysis/accuracy.hpp"
#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/grading.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "run_command.hpp"

namespace llmload::app {

using nlohmann::json;

namespace {

std::string read_whole(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw ConfigError(fmt::format("cannot read {}: give the output directory of an llmload run", p.string()));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The run's latency SLO and the view it was judged in, so the correct goodput counts the same
// requests as good as the run did.
std::optional<std::pair<analysis::SloSpec, analysis::LatencyView>> run_slo(const json& result) {
  const json& s = result.value("slo", json());
  if (!s.is_object() || !s.contains("spec") || !s["spec"].is_string()) return std::nullopt;
  try {
    analysis::SloSpec spec = analysis::parse_slo(s["spec"].get<std::string>());
    const auto view = s.value("view", std::string("service")) == "response" ? analysis::LatencyView::kResponse
                                                                          : analysis::LatencyView::kService;
    return std::make_pair(spec, view);
  } catch (const analysis::SloParseError&) {
    return std::nullopt;
  }
}

}  // namespace

void add_score_options(CLI::App& sub, ScoreOptions& o) {
  sub.add_option("dir", o.dir, "a run's output directory, run with --save-outputs")->required();
  sub.add_option("--grader", o.grader,
                 "grade every answer with this grader instead of its own: exact | normalized | regex:PATTERN | choice "
                 "| number[:TOL] | json");
  sub.add_option("--output", o.output, "where the accuracy goes (default: DIR/score.json)");
  sub.footer(R"(Re-grades the answers a run kept with --save-outputs, each against its reference, with the run's
graders or --grader, and prints the accuracy with its 95% interval, the unparsed rate, per grader
and per subset; result.json is left as it was.
      llmload score results/gsm8k --grader number:0.01
Exit codes: 0 scored, 1 the output could not be written, 2 the run cannot be read, has no saved
outputs, or a bad --grader. See docs/metrics.md ("Accuracy").)");
}

int score_command(const ScoreOptions& o) {
  std::optional<analysis::GraderSpec> forced;
  if (!o.grader.empty()) {
    try {
      forced = analysis::GraderSpec::parse(o.grader);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("bad --grader: {}", e.what()));
    }
  }
  const std::filesystem::path dir(o.dir);
  std::vector<analysis::RequestRecord> records;
  try {
    records = analysis::parse_records_jsonl(read_whole(dir / "requests.jsonl")).records;
  } catch (const analysis::MergeError& e) {
    throw ConfigError(fmt::format("{}: not an llmload requests.jsonl: {}", (dir / "requests.jsonl").string(), e.what()));
  }
  const json result = json::parse(read_whole(dir / "result.json"), nullptr, false);
  std::int64_t saved = 0;
  for (auto& r : records) {
    if (!r.ok() || !r.output_text) continue;
    ++saved;
    const std::string name = forced ? forced->name() : r.grader;
    if (name.empty()) continue;
    analysis::GraderSpec spec;
    try {
      spec = forced ? *forced : analysis::GraderSpec::parse(name);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("{}: request {} names grader '{}': {}; give --grader to grade it with another",
                                    o.dir, r.index, name, e.what()));
    }
    const analysis::GradeResult g = analysis::grade_output(spec, *r.output_text, r.reference);
    r.grader = name;
    r.grade = g.grade;
    r.extracted = g.extracted;
  }
  if (saved == 0) {
    throw ConfigError(fmt::format("{}: no saved answers: run it with --save-outputs to keep each answer (and its "
                                  "reference) in requests.jsonl",
                                  o.dir));
  }
  const auto slo = result.is_object() ? run_slo(result) : std::nullopt;
  const auto meets = [&](const analysis::RequestRecord& r) {
    return r.ok() && (!slo || slo->first.empty() || analysis::meets_slo(r, slo->first, slo->second));
  };
  double window_s = 0;
  if (result.is_object()) window_s = result.value("duration", 0.0);
  json out = {{"dir", o.dir}, {"grader", forced ? json(forced->name()) : json("each request's own")},
              {"accuracy", analysis::accuracy_summary(records, meets, window_s)}};
  if (out["accuracy"].is_null()) {
    throw ConfigError(fmt::format("{}: no answer has a grader and a reference: give --grader (json grades without a "
                                  "reference) or score a run of a graded dataset",
                                  o.dir));
  }
  fmt::print("{}", correctness_report(out));
  const std::string path = o.output.empty() ? (dir / "score.json").string() : o.output;
  if (const auto err = write_file_atomically(path, out.dump(2) + "\n")) {
    fmt::print(stderr, "llmload score: error: {}\n", *err);
    return kExitFailure;
  }
  fmt::print(stderr, "llmload: accuracy written to {}\n", path);
  return kExitOk;
}

}  // namespace llmload::app
