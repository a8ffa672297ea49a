#include "score_command.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "correctness.hpp"
#include "file_write.hpp"
#include "llmload/analysis/accuracy.hpp"
#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/grading.hpp"
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/record_store.hpp"
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

// The run's records, each re-graded as it is read (with its own grader or --grader): one record
// in memory at a time, whatever the run's length. Counts the saved answers of the last pass.
class RegradedRecords final : public analysis::RecordSource {
 public:
  RegradedRecords(const analysis::RecordSource& file, std::optional<analysis::GraderSpec> forced, std::string dir)
      : file_(file), forced_(std::move(forced)), dir_(std::move(dir)) {}
  std::size_t size() const override { return file_.size(); }
  std::unique_ptr<analysis::RecordCursor> open() const override {
    saved_ = 0;
    return std::make_unique<Cursor>(*this, file_.open());
  }
  std::int64_t saved() const { return saved_; }

 private:
  class Cursor final : public analysis::RecordCursor {
   public:
    Cursor(const RegradedRecords& owner, std::unique_ptr<analysis::RecordCursor> file)
        : owner_(owner), file_(std::move(file)) {}
    bool next(analysis::RequestRecord& r) override {
      if (!file_->next(r)) return false;
      owner_.regrade(r);
      return true;
    }

   private:
    const RegradedRecords& owner_;
    std::unique_ptr<analysis::RecordCursor> file_;
  };

  void regrade(analysis::RequestRecord& r) const {
    if (!r.ok() || !r.output_text) return;
    ++saved_;
    const std::string name = forced_ ? forced_->name() : r.grader;
    if (name.empty()) return;
    const analysis::GradeResult g = analysis::grade_output(spec(name, r.index), *r.output_text, r.reference);
    r.grader = name;
    r.grade = g.grade;
    r.extracted = g.extracted;
  }

  // A grader named by the records, parsed once.
  const analysis::GraderSpec& spec(const std::string& name, std::uint64_t index) const {
    if (forced_) return *forced_;
    if (auto it = specs_.find(name); it != specs_.end()) return it->second;
    try {
      return specs_.emplace(name, analysis::GraderSpec::parse(name)).first->second;
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("{}: request {} names grader '{}': {}; give --grader to grade it with another",
                                    dir_, index, name, e.what()));
    }
  }

  const analysis::RecordSource& file_;
  std::optional<analysis::GraderSpec> forced_;
  std::string dir_;
  mutable std::map<std::string, analysis::GraderSpec> specs_;
  mutable std::int64_t saved_ = 0;
};

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
  const std::string records_path = (dir / "requests.jsonl").string();
  std::optional<analysis::JsonlRecordSource> file;  // never whole in memory
  try {
    file.emplace(records_path, compact_record_keeper());  // parsed once, kept compact (not in memory)
  } catch (const analysis::RecordFileError&) {
    throw ConfigError(fmt::format("cannot read {}: give the output directory of an llmload run", records_path));
  } catch (const analysis::MergeError& e) {
    throw ConfigError(fmt::format("{}: not an llmload requests.jsonl: {}", records_path, e.what()));
  }
  if (file->cut_line()) {
    fmt::print(stderr, "llmload score: note: {}: the last line ({}) is cut off (the run was stopped while writing it): "
               "left out\n", records_path, *file->cut_line());
  }
  const json result = json::parse(read_whole(dir / "result.json"), nullptr, false);
  const auto slo = result.is_object() ? run_slo(result) : std::nullopt;
  const auto meets = [&](const analysis::RequestRecord& r) {
    return r.ok() && (!slo || slo->first.empty() || analysis::meets_slo(r, slo->first, slo->second));
  };
  double window_s = 0;
  if (result.is_object()) window_s = result.value("duration", 0.0);
  json out = {{"dir", o.dir}, {"grader", forced ? json(forced->name()) : json("each request's own")}};
  if (result.is_object() && result.value("slo", json()).is_object()) out["slo"] = result["slo"];  // what it was judged by
  std::int64_t saved = 0;
  try {
    const RegradedRecords regraded(*file, forced, o.dir);
    out["accuracy"] = analysis::accuracy_summary(analysis::RecordRange(regraded), meets, window_s);
    saved = regraded.saved();
  } catch (const analysis::RecordFileError& e) {  // gone or changed since read, or kept records unreadable
    throw ConfigError(e.what());  // it names the file
  }
  if (saved == 0) {
    throw ConfigError(fmt::format("{}: no saved answers: run it with --save-outputs to keep each answer (and its "
                                  "reference) in requests.jsonl",
                                  o.dir));
  }
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
