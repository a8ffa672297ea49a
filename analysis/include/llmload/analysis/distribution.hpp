#pragma once
// A latency distribution kept in an HDR histogram (microseconds, 3 significant digits, as the run's
// own histograms) with its exact mean: for the breakdowns of a run (reasoning phases, per model)
// whose values are taken from the records, not from the run's latency.hlog.

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// count, the exact mean and the p50, p90 and p99 of the histogram (HdrHistogram's percentile
/// rule, as every percentile of a run).
struct DistributionSummary {
  std::int64_t count = 0;
  double mean_us = 0;
  std::int64_t p50_us = 0;
  std::int64_t p90_us = 0;
  std::int64_t p99_us = 0;
};

class Distribution {
 public:
  Distribution();
  /// Records the value (negative values as 0); nothing for nullopt.
  void add(std::optional<Nanos> v);
  std::int64_t count() const { return n_; }
  DistributionSummary summary() const;

 private:
  HdrHistogram h_;
  std::int64_t n_ = 0;
  double sum_us_ = 0;
};

/// {"count", "mean_ms", "p50_ms", "p90_ms", "p99_ms"}; null when the distribution is empty.
nlohmann::json to_json(const DistributionSummary& d);

}  // namespace llmload::analysis
