#pragma once
// The report people look at (docs/report.md): from a run's artifact directory (result.json,
// requests.jsonl, latency.hlog), a trials artifact's (`llmload run --trials N`: result.json and
// one run directory per trial) or a sweep's (one such directory per offered load, optionally
// listed by sweep.json), writes
//   report.html  one self-contained page: verdicts (SLO, validity with its reasons, early stop),
//                the scorecard (correctness, performance, cost, reliability), conditions, key
//                metrics, correctness (accuracy per grader and subset, consistency with the
//                first-divergence histogram and the diverged excerpts), how the window was
//                chosen, the server cross-checks (client vs server TTFT, Little's law), cost, and
//                inline SVG charts
//                (HdrHistogram-style percentile distributions, per-interval time series with the
//                discarded warmup and drain shaded, latency-throughput and goodput/attainment
//                curves of a sweep with the SLO line, the capacity point and min-max whiskers
//                across trials, per-trial spread, a sweep's accuracy and identical rate versus
//                load with their 95% intervals).
//                No network fetches: no external script, style sheet, font or image.
//   summary.md   the same headline numbers as Markdown;
//   summary.csv  one row per run (sweep point).
// A partial artifact (an interrupted run, a missing latency.hlog or result.json) still renders
// what it has, with a note saying what is missing; unreadable or corrupt files are an error
// (ReportError) naming the file and what is wrong.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// An artifact that cannot be reported: the message names the file (and line) and what is wrong.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The artifact was read, but an output file could not be written (the message names it).
class ReportWriteError : public ReportError {
 public:
  using ReportError::ReportError;
};

struct HtmlReportOptions {
  /// Where report.html, summary.md and summary.csv go; empty: the artifact directory itself.
  std::string output_dir;
  /// Width of the time-series intervals in seconds; 0: chosen from the run's length
  /// (choose_interval).
  double interval_s = 0;
  /// The records of DIR's requests.jsonl as the run that has just written it holds them (its
  /// record file): read instead of parsing the file's JSON on every pass. The same records, several
  /// times faster; null: requests.jsonl is read.
  const RecordSource* run_records = nullptr;
  /// Where each requests.jsonl read (a run's, each trial's, each sweep point's) keeps its records
  /// once parsed, so that the report's passes do not parse the JSON again (loadgen's
  /// compact_record_keeper()); empty: each pass parses the file.
  RecordKeeperFactory keep_records;
};

/// One run's artifact as read from its directory. Any of the three files may be missing (then
/// `notes` says so); at least one must be there.
///
/// A trials artifact (`llmload run --trials N`: result.json with "artifact": "trials", or with a
/// "trial_summary") holds no requests.jsonl or latency.hlog of its own: its trials are run
/// artifacts in subdirectories (result.json "trials"[].dir, else trial-1 ... trial-N), read into
/// `trials` (those that hold an artifact, in trial order).
struct RunArtifact {
  std::string dir;                          // as given (for messages)
  std::string name;                         // its last path component (sweep points, CSV rows)
  nlohmann::json result;                    // result.json; null when missing
  bool has_records = false;                 // requests.jsonl was there
  std::map<std::string, HdrHistogram> histograms;  // by .hlog tag: ttft, tpot, itl, e2e, ttft_rt, ...
  std::string histogram_source;             // "latency.hlog", "requests.jsonl" or "" (none)
  std::vector<std::string> notes;           // what is missing or partial, one line each
  std::string kind = "run";                 // "run" or "trials"
  std::vector<RunArtifact> trials;          // a trials artifact's trials (each kind "run")
  std::vector<int> trial_numbers;           // per entry of `trials`: its trial number (1-based)
  bool is_trials() const { return kind == "trials"; }
  /// requests.jsonl's records, read a record at a time by each pass (issue 20: a report's memory
  /// does not grow with the run). Set only through set_records, which keeps what the range reads
  /// alive in every copy of the artifact.
  const RecordRange& records() const { return records_; }
  /// Records held in memory (an artifact made by hand, tests).
  void set_records(std::vector<RequestRecord> in_memory) {
    auto owned = std::make_shared<const std::vector<RequestRecord>>(std::move(in_memory));
    records_ = RecordRange(*owned);
    records_owner_ = std::move(owned);
  }
  /// Records read from a source (JsonlRecordSource for a requests.jsonl).
  void set_records(std::shared_ptr<const RecordSource> source) {
    records_ = RecordRange(*source);
    records_owner_ = std::move(source);
  }

 private:
  RecordRange records_;
  std::shared_ptr<const void> records_owner_;
};

/// What `llmload report DIR` reports: one run, or the points of a sweep in increasing offered
/// load.
struct ReportInput {
  std::string dir;
  bool sweep = false;
  std::vector<RunArtifact> runs;
  std::vector<double> offered;    // per run: offered load (NaN when unknown)
  std::string load_kind;          // "rate" (requests/s) or "concurrency"; "" when unknown
  std::optional<double> highest_pass;  // the capacity (sweep.json, else derived from the verdicts)
  std::optional<double> lowest_fail;
  std::string capacity_source;    // "sweep.json", "slo verdicts" or ""
  std::vector<std::string> notes; // sweep-level notes (points listed but missing, ...)
  nlohmann::json sweep_json;      // sweep.json (null without one): its "slo", "capacity" details
  std::vector<nlohmann::json> point_entries;  // per run: its sweep.json points[] entry (null without one)
};

/// Reads one run directory (or a trials artifact with its trials). Throws ReportError when none of
/// the files is there, or one is unreadable or corrupt (a JSON error, a bad requests.jsonl line, a
/// malformed .hlog line, a trials artifact whose "trials" is not an array). A requests.jsonl whose
/// last line is cut off (a run killed while writing) is accepted with a note; so is a trial
/// directory that holds no artifact yet.
/// `records`, `keep`: see HtmlReportOptions::run_records and keep_records.
RunArtifact read_run_artifact(const std::string& dir, const RecordSource* records = nullptr,
                              const RecordKeeperFactory& keep = {});

/// Reads DIR: a run (DIR/result.json or DIR/requests.jsonl), or a sweep: DIR/sweep.json
/// (docs/report.md gives its shape), else every subdirectory holding a result.json or
/// requests.jsonl. Throws ReportError.
/// `run_records` (a run directory only), `keep`: see HtmlReportOptions::run_records and keep_records.
ReportInput read_report_input(const std::string& dir, const RecordSource* run_records = nullptr,
                              const RecordKeeperFactory& keep = {});

/// Per-interval series of one run, computed from its records (times in seconds from the run's
/// start; one value per interval, NaN where the interval has no sample).
struct TimeSeries {
  double interval_s = 1;
  double end_s = 0;                     // the last moment of the run (latest t_done)
  std::vector<double> start_s;          // each interval's start
  std::vector<double> sends_per_s;      // requests sent
  std::vector<double> completions_per_s;  // successful requests finishing (t_done)
  std::vector<double> errors_per_s;     // failed requests finishing
  std::vector<double> tokens_per_s;     // output tokens, each request's spread evenly over [t_first, t_last]
  std::vector<double> in_flight;        // time-averaged requests between t_send and t_done
  std::vector<double> ttft_p50_ms;      // of the requests whose first token arrived in the interval
  std::vector<double> ttft_p99_ms;
  std::optional<double> window_start_s;  // the measurement window, when known
  std::optional<double> window_end_s;
  bool clamped = false;                  // interval widened to keep the series at most kMaxIntervals long
};
inline constexpr std::size_t kMaxIntervals = 5000;

/// A "nice" interval (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60 s, ...) giving at most 60 intervals.
double choose_interval(double run_length_s);
/// interval_s 0: choose_interval. The window comes from `result` ("window": {start_s, end_s})
/// when given, else from the records (first measured t_intended, last measured t_done).
TimeSeries compute_time_series(RecordRange records, const nlohmann::json& result,
                               double interval_s);

/// Points of an HdrHistogram percentile-distribution plot: (percentile in %, value in ms) for
/// x = log10(1/(1-p)) from 0 to log10(count) in steps of 0.02 (at least up to 99%), then 100%
/// at the maximum.
std::vector<std::pair<double, double>> percentile_curve(const HdrHistogram& h);

/// How the report prints a number for people (HTML tables, summary.md): 3-4 significant digits
/// ("2554", "38.9", "9.87", "0.228"), whole numbers without decimals ("40"), thousands separated
/// from 10,000 on ("12,516"); "–" for NaN.
std::string format_number(double v);

/// The three outputs, as strings.
std::string render_html(const ReportInput& in, const HtmlReportOptions& options = {});
std::string render_markdown(const ReportInput& in);
std::string render_csv(const ReportInput& in);

/// The CSV header of summary.csv (its column names, in order).
std::vector<std::string> summary_csv_columns();

struct ReportFiles {
  std::string html;      // path of report.html
  std::string markdown;  // path of summary.md
  std::string csv;       // path of summary.csv
  std::vector<std::string> notes;  // every note (partial artifacts), for the console
};

/// Reads DIR and writes report.html, summary.md and summary.csv (into options.output_dir, else
/// DIR). For `llmload report` and the end of a run or sweep. Throws ReportError for an artifact
/// that cannot be read, ReportWriteError when writing fails.
ReportFiles write_report(const std::string& dir, const HtmlReportOptions& options = {});

}  // namespace llmload::analysis
