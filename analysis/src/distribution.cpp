#include "llmload/analysis/distribution.hpp"
#include "numeric.hpp"

namespace llmload::analysis {

Distribution::Distribution() : h_(1, kHighestUs, 3) {}

void Distribution::add(std::optional<Nanos> v) {
  if (!v) return;
  const std::int64_t us = to_us(*v);
  h_.record(us);
  ++n_;
  sum_us_ += static_cast<double>(std::max<std::int64_t>(0, v->count())) / 1e3;
}

DistributionSummary Distribution::summary() const {
  DistributionSummary d;
  d.count = n_;
  if (n_ == 0) return d;
  d.mean_us = sum_us_ / static_cast<double>(n_);
  d.p50_us = h_.value_at_percentile(50);
  d.p90_us = h_.value_at_percentile(90);
  d.p99_us = h_.value_at_percentile(99);
  return d;
}

nlohmann::json to_json(const DistributionSummary& d) {
  if (d.count == 0) return nullptr;
  auto ms = [](std::int64_t us) { return static_cast<double>(us) / 1e3; };
  return {{"count", d.count}, {"mean_ms", d.mean_us / 1e3}, {"p50_ms", ms(d.p50_us)}, {"p90_ms", ms(d.p90_us)},
          {"p99_ms", ms(d.p99_us)}};
}

}  // namespace llmload::analysis
