#pragma once
// Sequential stopping for a run sized by its SLO: `llmload run --slo ...` with no size given runs
// until the SLO verdict is conclusive (docs/statistics.md, "Sequential stopping").
//
// The rule, one place: the run looks at its first n_k measured requests in release order (a
// fixed sample, so slow requests still in flight cannot bias a look), n_k = first_look * 2^k, once
// all of them have completed. Look k spends alpha_k = 0.01 * 2^-(k+1) of the 1% error budget, so
// all looks together keep the 99% confidence of the verdict:
//   - a metric PASSes at look k when n_k >= early_stopping_min_requests(exceedances, p, 1 - alpha_k);
//   - it clearly FAILs when P[Binomial(n_k, 1 - p) >= exceedances] <= alpha_k;
//   - the run stops when any metric clearly FAILs or every metric PASSes.
// Pure logic: the run controller feeds completions; nothing here reads a clock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/slo.hpp"

namespace llmload::analysis {

/// One look: its sample, the confidence it was judged at, and what it decided.
struct SequentialLook {
  std::int64_t n = 0;
  double confidence = 0;
  std::string decision;  // "PASS", "FAIL" (stop) or "continue"
  std::string detail;    // per metric: "ttft 3/527 over"
};

class SequentialSlo {
 public:
  /// `slo`: non-empty, judged in `view` (the run's verdict view).
  SequentialSlo(SloSpec slo, LatencyView view);

  /// The first look's sample: the fewest requests a PASS can have at look 0 (no exceedance), and
  /// at least kConfidentP99Samples (the run's reported p99 is not low-confidence).
  static std::int64_t first_look_size(const SloSpec& slo);

  /// Measured request number `ordinal` (0-based, in release order) completed with record `r`.
  /// Returns true when this completion made the verdict conclusive (the run may stop issuing).
  bool on_complete(std::int64_t ordinal, const RequestRecord& r);

  bool conclusive() const { return conclusive_; }
  /// The sample size the next look waits for (the last look's once conclusive).
  std::int64_t next_look() const { return look_n_; }
  const std::vector<SequentialLook>& looks() const { return looks_; }
  /// One line for the console and the window's method, e.g. "conclusive (PASS) at look 2 of the
  /// first 1,054 measured requests".
  std::string summary() const;

 private:
  void look();
  // Request `ordinal`'s outcome: bit 0 completed, bits 1-4 over the TTFT, TTFO, TPOT, E2E bound.
  std::vector<std::uint8_t> flags_;
  SloSpec slo_;
  LatencyView view_;
  int k_ = 0;
  std::int64_t look_n_ = 0;
  std::int64_t done_in_look_ = 0;  // completed requests with ordinal < look_n_
  bool conclusive_ = false;
  std::vector<SequentialLook> looks_;
};

}  // namespace llmload::analysis
