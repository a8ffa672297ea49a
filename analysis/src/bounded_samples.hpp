#pragma once
// Latencies of one interval of a time series (the report's chart, --warmup auto's detection),
// private to analysis: kept exactly while they are few, in an HdrHistogram (microseconds, 3
// significant digits) once there are more than kExact, so that memory per interval stays bounded
// however long the run (issue 20, flat memory).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis {

class BoundedSamples {
 public:
  static constexpr std::size_t kExact = 4096;

  void add(double ms) {
    if (hist_) return record(ms);
    exact_.push_back(ms);
    sorted_ = false;
    if (exact_.size() <= kExact) return;
    hist_ = std::make_unique<HdrHistogram>();
    for (double v : exact_) record(v);
    std::vector<double>().swap(exact_);
  }
  bool empty() const { return hist_ ? hist_->total_count() == 0 : exact_.empty(); }

  /// The value at percentile p by nearest rank (the histogram's highest equivalent value beyond
  /// kExact samples).
  double percentile(double p) {
    if (hist_) return static_cast<double>(hist_->value_at_percentile(p)) / 1e3;
    sort();
    const auto n = static_cast<double>(exact_.size());
    const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(p / 100 * n - 1e-9)));
    return exact_[std::min(rank, exact_.size()) - 1];
  }
  /// The median: of an even count, the mean of the middle two (the histogram's p50 beyond kExact).
  double median() {
    if (hist_) return percentile(50);
    sort();
    const std::size_t m = exact_.size() / 2;
    return exact_.size() % 2 == 1 ? exact_[m] : (exact_[m - 1] + exact_[m]) / 2.0;
  }

 private:
  void sort() {
    if (!sorted_) std::sort(exact_.begin(), exact_.end());
    sorted_ = true;
  }
  void record(double ms) {
    const auto us = static_cast<std::int64_t>(std::llround(ms * 1e3));
    hist_->record(std::clamp<std::int64_t>(us, 0, hist_->highest_trackable()));
  }
  std::vector<double> exact_;
  bool sorted_ = false;
  std::unique_ptr<HdrHistogram> hist_;
};

}  // namespace llmload::analysis
