#pragma once
// Service-level objectives: bounds on per-request latencies plus the percentile they apply to.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// Thrown by parse_slo for a bad specification; the message names the part and the fix.
class SloParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Which measurement point latencies are taken from (METRICS.md "Response-time views").
enum class LatencyView {
  kService,   // from t_send (what the server did once it got the request)
  kResponse   // from t_intended (what a user of an open-loop workload saw; CO-safe)
};
std::string_view to_string(LatencyView v);

struct SloSpec {
  std::optional<Nanos> ttft;
  /// "ttfo:500ms": time to the first output token (the first one that is not reasoning; issue 19).
  std::optional<Nanos> ttfo;
  std::optional<Nanos> tpot;
  std::optional<Nanos> e2e;
  double percentile = 99.0;  // in (0, 100)
  /// "accuracy:0.95": the graded accuracy's lower bound (issue 18). Judged on the Wilson interval,
  /// not the point estimate: PASS when the interval lies at or above it, FAIL when below.
  std::optional<double> min_accuracy;

  /// No latency bound (an SLO of accuracy only is "empty" for the latency verdicts).
  bool empty() const { return !ttft && !ttfo && !tpot && !e2e; }
  /// Canonical text form, e.g. "ttft:2000ms,ttfo:3000ms,tpot:200ms,p99".
  std::string to_string() const;
};

/// Parses "ttft:2000ms,tpot:200ms" (separators: comma or space; metrics: ttft, ttfo, tpot, e2e
/// (alias e2el), accuracy; optional percentile item "p99", "p99.9" or "p:99"). Throws SloParseError.
SloSpec parse_slo(std::string_view text);

/// Which bounds of an SLO a request exceeds in `view`: the one rule behind attainment, the
/// verdicts and sequential stopping. A failed request exceeds every bound; a request without a
/// first token exceeds TTFT and E2E bounds, one without a first output token (reasoning only) a
/// TTFO bound; one with fewer than 2 output tokens meets a TPOT bound.
struct SloExceedance {
  bool ttft = false;
  bool ttfo = false;
  bool tpot = false;
  bool e2e = false;
  bool any() const { return ttft || ttfo || tpot || e2e; }
};
SloExceedance slo_exceedance(const RequestRecord& r, const SloSpec& slo, LatencyView view);

/// A request's verdict on each bound, as the SLO verdicts count it: `over` (exceeded), or
/// `unknown` (left out of that bound's population). Only a request canceled by a stop of the
/// client's (error class stopped_early: an early stop, --max-duration, a second signal) has
/// unknown bounds: it exceeded a bound it had already passed when it was canceled (no first
/// token by the TTFT or TTFO bound, still running at the E2E bound); of the others, and of TPOT,
/// it has no outcome. Any other request is as slo_exceedance says, every bound known.
struct SloJudgement {
  SloExceedance over;
  SloExceedance unknown;
};
SloJudgement judge_request(const RequestRecord& r, const SloSpec& slo, LatencyView view);

/// Per-request attainment: true iff the request succeeded and each bounded metric is within its
/// bound in the given view. A request with fewer than 2 output tokens passes a TPOT bound.
bool meets_slo(const RequestRecord& r, const SloSpec& slo, LatencyView view);

}  // namespace llmload::analysis
