// summary.csv: one row per run (sweep point).
#include "html_report/internal.hpp"
#include "html_report/probe.hpp"

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
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis {

using namespace report_html;

std::vector<std::string> summary_csv_columns() {
  std::vector<std::string> cols = {"run", "offered_load", "load_kind", "request_throughput", "output_throughput",
                                   "request_goodput", "token_goodput", "attainment"};
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (const char* p : {"p50", "p90", "p99"}) cols.push_back(fmt::format("{}_{}_ms", m, p));
  }
  for (const char* c : {"completed", "failed", "errors", "validity", "slo_verdict", "interrupted", "validity_reasons",
                        "stopped_early", "trials", "noisy", "cost_per_million_output_tokens"}) {
    cols.emplace_back(c);
  }
  for (const char* c : {"accuracy", "accuracy_ci_lo", "accuracy_ci_hi", "graded", "unparsed_rate", "correct_goodput",
                        "accuracy_slo_verdict", "exact_match_rate", "exact_match_ci_lo", "exact_match_ci_hi", "compared",
                        "first_divergence_p50", "error_rate", "energy_per_output_token_j"}) {
    cols.emplace_back(c);
  }
  // Issue 19: TTFO (empty unless the run reasoned first), reasoning, the prefix cache, structured-output validity.
  for (const char* c : {"ttfo_p50_ms", "ttfo_p90_ms", "ttfo_p99_ms", "reasoning_tokens", "reasoning_share",
                        "reasoning_duration_p50_ms", "answer_tpot_p50_ms", "prefix_cache_hit_rate",
                        "prefix_cache_server_hit_rate", "structured_invalid_rate", "structured_judged"}) {
    cols.emplace_back(c);
  }
  // The probe stream (--probe-rate; empty without one).
  for (const auto& c : probe_csv_columns()) cols.push_back(c);
  return cols;
}

std::string render_csv(const ReportInput& in) {
  const std::vector<RunSummary> sums = summaries(in);
  std::string o;
  const auto cols = summary_csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) o += (i ? "," : "") + cols[i];
  o += "\n";
  for (std::size_t row = 0; row < sums.size(); ++row) {
    const RunSummary& s = sums[row];
    std::vector<std::string> f = {s.name,
                                  csv_number(s.offered),
                                  s.load_kind,
                                  csv_number(s.request_throughput),
                                  csv_number(s.output_throughput),
                                  csv_number(s.request_goodput),
                                  csv_number(s.token_goodput),
                                  csv_number(s.attainment)};
    for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
      f.push_back(csv_number(s.p(m, &LatRow::p50)));
      f.push_back(csv_number(s.p(m, &LatRow::p90)));
      f.push_back(csv_number(s.p(m, &LatRow::p99)));
    }
    f.push_back(csv_number(s.completed));
    f.push_back(csv_number(s.failed));
    f.push_back(s.errors_text());
    f.push_back(s.validity);
    f.push_back(s.slo_verdict);
    f.push_back(s.interrupted ? "true" : "false");
    f.push_back(s.validity == "INVALID" ? s.reasons_text() : std::string());
    f.push_back(s.stopped_early.value_or(""));
    f.push_back(s.trials ? std::to_string(s.n_trials) : std::string());
    f.push_back(s.trials ? (s.noisy ? "true" : "false") : std::string());
    f.push_back(csv_number(s.cost));
    const RateCI& acc = s.accuracy.all.accuracy;
    const RateCI& em = s.consistency.exact_match;
    for (double v : {acc.rate, acc.lo, acc.hi, s.accuracy.all.graded, s.accuracy.all.unparsed_rate,
                     s.accuracy.correct_goodput_rate}) {
      f.push_back(csv_number(v));
    }
    f.push_back(s.accuracy.slo_verdict);
    for (double v : {em.rate, em.lo, em.hi, em.n, s.consistency.div_p50, s.scorecard.error_rate, s.scorecard.energy_per_token_j}) {
      f.push_back(csv_number(v));
    }
    const json& r = in.runs[row].result;
    for (double v : {s.p("ttfo", &LatRow::p50), s.p("ttfo", &LatRow::p90), s.p("ttfo", &LatRow::p99),
                     nan_at(r, {"reasoning", "reasoning_tokens"}), nan_at(r, {"reasoning", "share_of_output_tokens"}),
                     nan_at(r, {"reasoning", "duration", "p50_ms"}), nan_at(r, {"reasoning", "answer_tpot", "p50_ms"}),
                     nan_at(r, {"prefix_cache", "hit_rate"}), nan_at(r, {"prefix_cache", "server_hit_rate"}),
                     nan_at(r, {"structured_output", "invalid_rate"}), nan_at(r, {"structured_output", "judged"})}) {
      f.push_back(csv_number(v));
    }
    for (double v : probe_csv_values(r)) f.push_back(csv_number(v));
    for (std::size_t i = 0; i < f.size(); ++i) o += (i ? "," : "") + csv_field(f[i]);
    o += "\n";
  }
  return o;
}

}  // namespace llmload::analysis
