#include "report_command.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <fmt/format.h>

#include "llmload/analysis/html_report.hpp"
#include "llmload/common/process_limits.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "rebuild.hpp"
#include "run_command.hpp"

namespace llmload::app {

void add_report_options(CLI::App& sub, ReportOptions& o) {
  sub.add_option("dir", o.dir,
                 "a run's output directory (result.json, requests.jsonl, latency.hlog), or a sweep's: sweep.json, or one "
                 "subdirectory per point")
      ->required();
  sub.add_option("--output", o.output, "directory for report.html, summary.md and summary.csv (default: DIR)");
  sub.add_option("--interval", o.interval_s,
                 "time-series interval in seconds (default 0: chosen from the run's length, at most 60 intervals)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (v.empty() || end == v.c_str() || *end != '\0' || !std::isfinite(x) || x < 0) {
              return "'" + v + "' is not a number of seconds, 0 or more (e.g. --interval 5; 0 chooses it)";
            }
            return "";
          },
          "SECONDS"));
  sub.footer(R"(Writes report.html (one self-contained page: verdicts, conditions, key metrics, percentile
distributions, time series with the discarded warmup and drain shaded, and for a sweep the
latency-throughput, goodput and attainment curves with the SLO line and the capacity point),
summary.md and summary.csv (one row per run or sweep point). The page makes no network request.
      llmload report results/run1
      llmload report results/sweep --output /tmp/sweep-report
A partial artifact (an interrupted run, a missing file) still renders what it has, with a note.
A run that did not finish (killed outright: run-in-progress.json beside requests.jsonl and no
result.json) first gets result.json and latency.hlog rebuilt from requests.jsonl.
Exit codes: 0 written, 1 failure writing the report, 2 an artifact that cannot be read.
See docs/report.md.)");
}

int report_command(const std::string& dir, const ReportOptions& o) {
  raise_open_file_limit();  // each requests.jsonl read (a sweep's points) keeps a temporary file
  analysis::HtmlReportOptions options;
  options.output_dir = o.output;
  options.interval_s = o.interval_s;
  options.keep_records = compact_record_keeper();  // each requests.jsonl parsed once, not once per pass
  try {
    // A run that never finished (killed outright): its result.json rebuilt first (rebuild.hpp).
    if (const auto rebuilt = rebuild_unfinished_run(dir)) {
      fmt::print(stderr,
                 "llmload report: the run in '{}' did not finish: result.json and latency.hlog rebuilt from the {} "
                 "requests in requests.jsonl{} ({}; see `rebuilt` in result.json)\n",
                 dir, rebuilt->requests,
                 rebuilt->cut_line ? fmt::format(", its cut-off last line {} left out", *rebuilt->cut_line) : "",
                 rebuilt->window);
    }
    const analysis::ReportFiles files = analysis::write_report(dir, options);
    fmt::print("llmload report: wrote {}\n                    {}\n                    {}\n", files.html, files.markdown,
               files.csv);
    std::fflush(stdout);
    for (const auto& note : files.notes) fmt::print(stderr, "llmload report: note: {}\n", note);
    return kExitOk;
  } catch (const analysis::ReportWriteError& e) {
    fmt::print(stderr, "llmload report: error: {}\n", e.what());
    return kExitFailure;
  } catch (const analysis::ReportError& e) {
    fmt::print(stderr, "llmload report: error: {}\n", e.what());
    return kExitConfig;
  }
}

}  // namespace llmload::app
