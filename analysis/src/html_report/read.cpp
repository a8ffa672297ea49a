// Reading an artifact directory (a run, a trials artifact, a sweep) into RunArtifact / ReportInput;
// partial artifacts get notes, corrupt files a ReportError naming the file.
#include "html_report/internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/capacity.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

// ---------------------------------------------------------------------------------------------
// Reading

static std::optional<std::string> read_if_exists(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  if (fs::is_directory(p, ec)) throw ReportError(fmt::format("{}: is a directory, expected a file", p.string()));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot be read ({})", p.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ReportError(fmt::format("{}: read error", p.string()));
  return ss.str();
}

// Whether a file is there to be read (the same checks as read_if_exists), without reading it:
// requests.jsonl is read a record at a time (JsonlRecordSource), never whole.
static bool readable_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return false;
  if (fs::is_directory(p, ec)) throw ReportError(fmt::format("{}: is a directory, expected a file", p.string()));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot be read ({})", p.string(), std::strerror(errno)));
  return true;
}

static json parse_json_text(const fs::path& p, const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ReportError(fmt::format("{}: is empty (the run did not finish writing it?)", p.string()));
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      what = what.substr(pos + 2);
    }
    throw ReportError(fmt::format("{}: not valid JSON: {}", p.string(), what));
  }
}

std::string name_of(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  std::string n = p.filename().string();
  if (n.empty() || n == ".") n = p.parent_path().filename().string();
  if (n.empty() || n == "." || n == "..") n = fs::absolute(dir).lexically_normal().filename().string();
  if (n.empty()) n = dir.string();
  return n;
}

static bool holds_artifact(const fs::path& d) {
  std::error_code ec;
  return fs::exists(d / "result.json", ec) || fs::exists(d / "requests.jsonl", ec) || fs::exists(d / "latency.hlog", ec);
}

static void histograms_from_records(RunArtifact& a) {
  auto fill = [&](bool only_window) {
    std::size_t n = 0;
    auto rec = [&](const char* tag, const std::optional<Nanos>& v) {
      if (!v || v->count() < 0) return;
      auto it = a.histograms.try_emplace(tag).first;
      it->second.record(std::llround(static_cast<double>(v->count()) / 1e3));
    };
    for (const auto& r : a.records()) {
      if (r.warmup || !r.ok() || (only_window && !r.in_window)) continue;
      ++n;
      rec("ttft", r.ttft());
      rec("tpot", r.tpot());
      rec("e2e", r.e2e());
      rec("ttft_rt", r.ttft_rt());
      rec("ttfo", r.ttfo());
      rec("ttfo_rt", r.ttfo_rt());
      rec("e2e_rt", r.e2e_rt());
      rec("schedule_lag", r.schedule_lag());
    }
    return n;
  };
  if (fill(true) == 0 && fill(false) > 0) {
    a.notes.push_back("no request is marked in the measurement window: the distributions use every successful "
                      "request after warmup");
  }
}

}  // namespace llmload::analysis::report_html

namespace llmload::analysis {

using namespace report_html;

namespace {

enum class ReadMode { kTop, kTrialWithRecords, kTrialHistogramsOnly };

RunArtifact read_artifact(const std::string& dir, ReadMode mode, const RecordSource* records, const RecordKeeperFactory& keep);

/// The trials of a trials artifact: result.json "trials"[].dir (default trial-<n>), else the
/// directories trial-1, trial-2, ... that exist.
void read_trials(RunArtifact& a, const fs::path& root, const RecordKeeperFactory& keep) {
  const std::string rp = (root / "result.json").string();
  std::vector<std::pair<int, std::string>> dirs;
  const json* tr = find_path(a.result, {"trials"});
  if (tr != nullptr && !tr->is_null()) {
    if (!tr->is_array()) {
      throw ReportError(fmt::format("{}: \"trials\" is not an array (a trials artifact lists its trials: "
                                    "[{{\"trial\": 1, \"dir\": \"trial-1\", ...}}, ...])",
                                    rp));
    }
    for (std::size_t i = 0; i < tr->size(); ++i) {
      const json& t = (*tr)[i];
      if (!t.is_object()) throw ReportError(fmt::format("{}: trials[{}] is not an object", rp, i));
      const int num = static_cast<int>(num_at(t, {"trial"}).value_or(static_cast<double>(i + 1)));
      std::string d = str_at(t, {"dir"});
      if (d.empty()) d = fmt::format("trial-{}", num);
      dirs.emplace_back(num, d);
    }
  } else {
    std::error_code ec;
    for (int k = 1; fs::is_directory(root / fmt::format("trial-{}", k), ec); ++k) dirs.emplace_back(k, fmt::format("trial-{}", k));
  }
  for (const auto& [num, d] : dirs) {
    fs::path pd(d);
    if (pd.is_relative()) pd = root / pd;
    std::error_code ec;
    if (!fs::is_directory(pd, ec) || !holds_artifact(pd)) {
      a.notes.push_back(fmt::format("trial {} ('{}'): no artifact there (not run yet, or interrupted); it is left out", num, d));
      continue;
    }
    RunArtifact t = read_artifact(pd.string(), a.trials.empty() ? ReadMode::kTrialWithRecords : ReadMode::kTrialHistogramsOnly,
                                  nullptr, keep);
    t.name = d;
    for (const auto& n : t.notes) a.notes.push_back(fmt::format("trial {}: {}", num, n));
    a.trials.push_back(std::move(t));
    a.trial_numbers.push_back(num);
  }
  if (a.trials.empty()) {
    a.notes.push_back("no trial directory holds an artifact: no distributions or time series, only result.json's numbers");
  }
}

// requests.jsonl, read a record at a time (JsonlRecordSource): counted and checked here, and kept
// where `keep` says (parsed once).
static void read_records_file(RunArtifact& a, const fs::path& path, const RecordKeeperFactory& keep) {
  try {
    auto source = std::make_shared<const JsonlRecordSource>(path.string(), keep);
    if (source->cut_line()) {
      a.notes.push_back(fmt::format("requests.jsonl: the last line ({}) is cut off (the run was stopped while "
                                    "writing?); it is left out",
                                    *source->cut_line()));
    }
    a.set_records(std::move(source));
  } catch (const MergeError& e) {
    throw ReportError(fmt::format("{}: {}", path.string(), e.what()));
  } catch (const RecordFileError& e) {
    throw ReportError(e.what());  // "PATH: cannot be read (...)"
  }
}

RunArtifact read_artifact(const std::string& dir, ReadMode mode, const RecordSource* records, const RecordKeeperFactory& keep) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) throw ReportError(fmt::format("'{}' does not exist", dir));
  if (!fs::is_directory(root, ec)) {
    throw ReportError(fmt::format("'{}' is not a directory: give the directory that `llmload run --output` wrote", dir));
  }
  RunArtifact a;
  a.dir = dir;
  a.name = name_of(root);
  const auto result_text = read_if_exists(root / "result.json");
  // The run that has just written requests.jsonl hands its own records: the file is not opened.
  const bool records_there = records != nullptr || readable_file(root / "requests.jsonl");
  const auto hlog_text = read_if_exists(root / "latency.hlog");
  if (!result_text && !records_there && !hlog_text) {
    throw ReportError(fmt::format("'{}' holds no llmload artifact: no result.json, requests.jsonl or latency.hlog", dir));
  }
  if (result_text) {
    a.result = parse_json_text(root / "result.json", *result_text);
    if (!a.result.is_object()) throw ReportError(fmt::format("{}: expected a JSON object", (root / "result.json").string()));
    if (flag(a.result, "interrupted", false)) {
      a.notes.push_back("the run was interrupted: results cover only what was measured before the signal");
    }
  } else {
    a.result = nullptr;
    a.notes.push_back("no result.json (an interrupted or unfinished run?): no verdicts, window or headline throughput; "
                      "what is shown is computed from the other files");
  }
  if (mode == ReadMode::kTop && a.result.is_object() &&
      (str_at(a.result, {"artifact"}) == "trials" || (a.result.contains("trial_summary") && a.result["trial_summary"].is_object()))) {
    // A trials artifact: its requests and histograms are in its trials' directories.
    a.kind = "trials";
    read_trials(a, root, keep);
    return a;
  }
  const bool skip_records = mode == ReadMode::kTrialHistogramsOnly && hlog_text.has_value();
  if (records_there && !skip_records) {
    a.has_records = true;
    if (records != nullptr) {
      // The run that has just written requests.jsonl gives its own record file: the same records
      // (the file is written from it), not owned here.
      a.set_records(std::shared_ptr<const RecordSource>(std::shared_ptr<const RecordSource>(), records));
    } else {
      read_records_file(a, root / "requests.jsonl", keep);
    }
    if (a.records().empty()) a.notes.push_back("requests.jsonl holds no request");
  } else if (!records_there) {
    a.notes.push_back("no requests.jsonl: no time series");
  }
  if (hlog_text) {
    std::istringstream in(*hlog_text);
    try {
      HlogFile f = read_hlog(in);
      for (auto& iv : f.intervals) {
        const std::string tag = iv.tag.value_or("untagged");
        auto [it, inserted] = a.histograms.try_emplace(tag, iv.histogram);
        if (!inserted) it->second.add(iv.histogram);
      }
    } catch (const std::exception& e) {
      throw ReportError(fmt::format("{}: {}", (root / "latency.hlog").string(), e.what()));
    }
    a.histogram_source = "latency.hlog";
    if (a.histograms.empty()) a.notes.push_back("latency.hlog holds no histogram");
  }
  if (a.histograms.empty() && !a.records().empty()) {
    histograms_from_records(a);
    if (!a.histograms.empty()) {
      a.histogram_source = "requests.jsonl";
      if (!hlog_text) {
        a.notes.push_back("no latency.hlog: the percentile distributions are recomputed from requests.jsonl (without ITL, "
                          "which needs the per-event gaps)");
      }
    }
  } else if (!hlog_text) {
    a.notes.push_back("no latency.hlog: no percentile distributions");
  }
  return a;
}

// One point of a sweep or of a directory of runs, before they are put in load order.
struct ReadPoint {
  RunArtifact a;
  double offered;
  json entry;
};

// sweep.json's points (each its directory's artifact) and its capacity.
void read_sweep(const fs::path& root, const std::string& dir, const fs::path& sweep_path, const std::string& text,
                ReportInput& in, std::vector<ReadPoint>& points, std::vector<std::string>& kinds,
                const RecordKeeperFactory& keep) {
  std::error_code ec;
  in.sweep = true;
  const json sj = parse_json_text(sweep_path, text);
  in.sweep_json = sj;
  const std::string sp = sweep_path.string();
  if (!sj.is_object()) throw ReportError(fmt::format("{}: expected an object {{\"points\": [...]}}", sp));
  const json* pts = find_path(sj, {"points"});
  if (pts == nullptr || !pts->is_array()) {
    throw ReportError(fmt::format("{}: missing \"points\" (an array of {{\"dir\": ..., \"offered\": ...}})", sp));
  }
  for (std::size_t i = 0; i < pts->size(); ++i) {
    const json& p = (*pts)[i];
    const json* d = find_path(p, {"dir"});
    if (d == nullptr || !d->is_string() || d->get<std::string>().empty()) {
      throw ReportError(fmt::format("{}: points[{}] needs \"dir\" (a directory, relative to {})", sp, i, dir));
    }
    double offered = kNaN;
    if (const json* o = find_path(p, {"offered"}); o != nullptr && !o->is_null()) {
      if (!o->is_number()) throw ReportError(fmt::format("{}: points[{}].offered is not a number", sp, i));
      offered = o->get<double>();
    }
    fs::path pd(d->get<std::string>());
    if (pd.is_relative()) pd = root / pd;
    if (!fs::is_directory(pd, ec) || !holds_artifact(pd)) {
      in.notes.push_back(fmt::format("sweep.json points[{}] ('{}'): no artifact there (not run yet, or an interrupted "
                                     "sweep); left out",
                                     i, d->get<std::string>()));
      continue;
    }
    RunArtifact a = read_run_artifact(pd.string(), nullptr, keep);
    a.name = d->get<std::string>();
    const Load l = offered_of_artifact(a);
    if (!std::isfinite(offered)) offered = l.value;
    if (!l.kind.empty()) kinds.push_back(l.kind);
    points.push_back({std::move(a), offered, p});
  }
  if (const json* cap = find_path(sj, {"capacity"}); cap != nullptr && !cap->is_null()) {
    if (!cap->is_object()) throw ReportError(fmt::format("{}: \"capacity\" is not an object", sp));
    for (const char* k : {"highest_pass", "lowest_fail"}) {
      const json* v = find_path(*cap, {k});
      if (v == nullptr || v->is_null()) continue;
      if (!v->is_number()) throw ReportError(fmt::format("{}: capacity.{} is not a number", sp, k));
      (std::string_view(k) == "highest_pass" ? in.highest_pass : in.lowest_fail) = v->get<double>();
    }
    if (in.highest_pass || in.lowest_fail) in.capacity_source = "sweep.json";
  }
  for (const char* k : {"load_kind", "load"}) {
    if (auto s = str_at(sj, {k}); s == "rate" || s == "concurrency") kinds.insert(kinds.begin(), s);
  }
  if (points.empty()) throw ReportError(fmt::format("{}: none of its points has an artifact yet", sp));
}

// A directory without sweep.json whose subdirectories hold runs (an unfinished sweep or trials).
void read_subdirectories(const fs::path& root, const std::string& dir, ReportInput& in, std::vector<ReadPoint>& points,
                         std::vector<std::string>& kinds, const RecordKeeperFactory& keep) {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::error_code ec2;
    if (!e.is_directory(ec2)) continue;
    if (fs::exists(e.path() / "result.json", ec2) || fs::exists(e.path() / "requests.jsonl", ec2)) subdirs.push_back(e.path());
  }
  if (ec) throw ReportError(fmt::format("'{}': cannot list the directory: {}", dir, ec.message()));
  if (subdirs.empty()) {
    // `llmload run --workers` whose parent ended before it merged (killed outright): the workers'
    // artifacts are there, to be merged.
    std::error_code ec2;
    if (fs::exists(root / "workers" / "worker-0", ec2)) {
      throw ReportError(fmt::format("'{}' holds the workers of a `llmload run --workers` that did not merge them (it "
                                    "was stopped before): merge them first with `llmload merge {}/workers/worker-* "
                                    "--output {}` (a worker that did not finish: `llmload report` its directory "
                                    "first), then report",
                                    dir, dir, dir));
    }
    throw ReportError(fmt::format("'{}' holds no llmload artifact: no result.json or requests.jsonl, no sweep.json, and no "
                                  "subdirectory holding a result.json",
                                  dir));
  }
  std::sort(subdirs.begin(), subdirs.end());
  in.sweep = true;
  if (std::all_of(subdirs.begin(), subdirs.end(), [](const fs::path& d) { return d.filename().string().rfind("trial-", 0) == 0; })) {
    in.notes.push_back("these look like the trials of an unfinished `llmload run --trials` (no result.json at the top, "
                       "which holds their medians): each trial is shown as a point");
  }
  for (const auto& d : subdirs) {
    RunArtifact a = read_run_artifact(d.string(), nullptr, keep);
    const Load l = offered_of_artifact(a);
    if (!l.kind.empty()) kinds.push_back(l.kind);
    points.push_back({std::move(a), l.value, nullptr});
  }
}

// A sweep without a capacity in sweep.json: the bracket from its points' SLO verdicts.
void capacity_from_verdicts(ReportInput& in) {
  std::vector<std::string> verdicts;
  for (std::size_t i = 0; i < in.runs.size(); ++i) verdicts.push_back(point_verdict(in.runs[i].result, in.point_entries[i]));
  const bool conclusive =
      std::any_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return v == "PASS" || v == "FAIL"; });
  if (in.sweep && !in.highest_pass && !in.lowest_fail && !conclusive &&
      std::any_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return !v.empty(); })) {
    in.notes.push_back("no point has a conclusive SLO verdict (PASS or FAIL): the capacity is unknown; give each point "
                       "more requests (a p99 verdict needs at least 459 in the window)");
  }
  if (in.sweep && !in.highest_pass && !in.lowest_fail && conclusive) {
    const VerdictBracket b = bracket_from_verdicts(in.offered, verdicts);
    in.highest_pass = b.highest_pass;
    in.lowest_fail = b.lowest_fail;
    if (b.highest_pass || b.lowest_fail) in.capacity_source = "slo verdicts";
  }
}

}  // namespace

RunArtifact read_run_artifact(const std::string& dir, const RecordSource* records, const RecordKeeperFactory& keep) {
  return read_artifact(dir, ReadMode::kTop, records, keep);
}

ReportInput read_report_input(const std::string& dir, const RecordSource* run_records, const RecordKeeperFactory& keep) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) throw ReportError(fmt::format("'{}' does not exist", dir));
  if (!fs::is_directory(root, ec)) {
    throw ReportError(fmt::format("'{}' is not a directory: give the directory that `llmload run --output` wrote", dir));
  }
  ReportInput in;
  in.dir = dir;
  std::vector<ReadPoint> points;
  std::vector<std::string> kinds;
  const fs::path sweep_path = root / "sweep.json";
  if (auto text = read_if_exists(sweep_path)) {
    read_sweep(root, dir, sweep_path, *text, in, points, kinds, keep);
  } else if (holds_artifact(root)) {
    RunArtifact a = read_run_artifact(dir, run_records, keep);
    const Load l = offered_of_artifact(a);
    if (!l.kind.empty()) kinds.push_back(l.kind);
    points.push_back({std::move(a), l.value, nullptr});
  } else {
    read_subdirectories(root, dir, in, points, kinds, keep);
  }
  if (!kinds.empty()) {
    in.load_kind = kinds.front();
    if (std::any_of(kinds.begin(), kinds.end(), [&](const std::string& k) { return k != in.load_kind; })) {
      in.notes.push_back("the points mix request rates and concurrencies: the offered-load axis is not one quantity");
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const ReadPoint& x, const ReadPoint& y) {
    if (std::isfinite(x.offered) != std::isfinite(y.offered)) return std::isfinite(x.offered);
    return std::isfinite(x.offered) && x.offered < y.offered;
  });
  for (auto& p : points) {
    in.runs.push_back(std::move(p.a));
    in.offered.push_back(p.offered);
    in.point_entries.push_back(std::move(p.entry));
  }
  capacity_from_verdicts(in);
  return in;
}

}  // namespace llmload::analysis
