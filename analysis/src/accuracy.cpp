#include "llmload/analysis/accuracy.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "llmload/analysis/stats.hpp"
#include "numeric.hpp"

namespace llmload::analysis {
namespace accuracy_impl {
namespace {

struct Tally {
  std::int64_t correct = 0;
  std::int64_t incorrect = 0;
  std::int64_t unparsed = 0;

  std::int64_t graded() const { return correct + incorrect + unparsed; }
  void add(Grade g) {
    if (g == Grade::kCorrect) ++correct;
    else if (g == Grade::kIncorrect) ++incorrect;
    else if (g == Grade::kUnparsed) ++unparsed;
  }
};

nlohmann::json tally_json(const Tally& t, double confidence) {
  const std::int64_t n = t.graded();
  const ProportionInterval ci = wilson_interval(t.correct, n, confidence);
  const double nd = static_cast<double>(n);
  return {{"graded", n},
          {"correct", t.correct},
          {"incorrect", t.incorrect},
          {"unparsed", t.unparsed},
          {"accuracy", n > 0 ? nlohmann::json(static_cast<double>(t.correct) / nd) : nlohmann::json(nullptr)},
          {"accuracy_ci95", {ci.lo, ci.hi}},
          {"unparsed_rate", n > 0 ? nlohmann::json(static_cast<double>(t.unparsed) / nd) : nlohmann::json(nullptr)}};
}

nlohmann::json tallies_json(const std::map<std::string, Tally>& m, double confidence) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, t] : m) out[name] = tally_json(t, confidence);
  return out;
}

}  // namespace
}  // namespace accuracy_impl

ProportionInterval wilson_interval(std::int64_t successes, std::int64_t n, double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0))
    throw std::invalid_argument("wilson_interval: confidence must be in (0, 1), got " + std::to_string(confidence));
  if (n < 0 || successes < 0 || successes > n)
    throw std::invalid_argument("wilson_interval: need 0 <= successes <= n, got " + std::to_string(successes) +
                                " of " + std::to_string(n));
  if (n == 0) return {0.0, 1.0};
  // The normal quantile z = Phi^-1(1 - (1 - confidence) / 2): Student-t with infinite degrees of
  // freedom is the normal distribution (stats.hpp computes it from erfc there).
  const double z = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, std::numeric_limits<double>::infinity());
  const double nd = static_cast<double>(n);
  const double p = static_cast<double>(successes) / nd;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / nd;
  const double center = (p + z2 / (2.0 * nd)) / denom;
  const double half = z / denom * std::sqrt(p * (1.0 - p) / nd + z2 / (4.0 * nd * nd));
  // At 0 or n successes the bound on that side is exactly 0 or 1 (rounding can leave 1e-17).
  const double lo = successes == 0 ? 0.0 : std::max(0.0, center - half);
  const double hi = successes == n ? 1.0 : std::min(1.0, center + half);
  return {lo, hi};
}

nlohmann::json accuracy_summary(RecordRange records,
                                const std::function<bool(const RequestRecord&)>& meets_slo, double window_s,
                                double confidence) {
  namespace ai = accuracy_impl;
  ai::Tally all;
  std::map<std::string, ai::Tally> by_grader;
  std::map<std::string, ai::Tally> by_subset;
  std::int64_t failed = 0;
  std::int64_t correct_good = 0;
  for (const RequestRecord& r : records) {
    if (r.warmup || !r.in_window) continue;
    if (!r.ok()) {
      // A failed request of a graded row (the recorder names its grader before the outcome); one
      // stopped by a sweep's early stop is not a failure (docs/metrics.md).
      if (!r.grader.empty() && r.error != ErrorClass::kStoppedEarly) ++failed;
      continue;
    }
    if (r.grade == Grade::kNone) continue;
    all.add(r.grade);
    by_grader[r.grader].add(r.grade);
    if (!r.subset.empty()) by_subset[r.subset].add(r.grade);
    if (r.grade == Grade::kCorrect && (!meets_slo || meets_slo(r))) ++correct_good;
  }
  if (all.graded() == 0) return nullptr;

  nlohmann::json out = ai::tally_json(all, confidence);
  out["confidence"] = confidence;
  out["failed_requests"] = failed;
  out["by_grader"] = ai::tallies_json(by_grader, confidence);
  if (!by_subset.empty()) out["by_subset"] = ai::tallies_json(by_subset, confidence);
  out["correct_goodput"] = {
      {"requests", correct_good},
      {"rate_per_s", window_s > 0 ? number_or_null(static_cast<double>(correct_good) / window_s) : nlohmann::json(nullptr)},
      {"meaning", "measured requests that met the SLO (every request without one) and were graded correct, "
                  "per second of the measured window"}};
  return out;
}

}  // namespace llmload::analysis

namespace llmload::analysis {

nlohmann::json compare_proportions(std::int64_t k_a, std::int64_t n_a, std::int64_t k_b, std::int64_t n_b,
                                   double confidence) {
  if (n_a <= 0 || n_b <= 0) return nullptr;
  const double pa = static_cast<double>(k_a) / static_cast<double>(n_a);
  const double pb = static_cast<double>(k_b) / static_cast<double>(n_b);
  const ProportionInterval ia = wilson_interval(k_a, n_a, confidence);
  const ProportionInterval ib = wilson_interval(k_b, n_b, confidence);
  // Newcombe (1998), method 10, for B - A.
  const double d = pb - pa;
  const double lo = d - std::sqrt((pb - ib.lo) * (pb - ib.lo) + (ia.hi - pa) * (ia.hi - pa));
  const double hi = d + std::sqrt((ib.hi - pb) * (ib.hi - pb) + (pa - ia.lo) * (pa - ia.lo));
  return {{"a", pa},           {"a_ci95", {ia.lo, ia.hi}}, {"n_a", n_a},
          {"b", pb},           {"b_ci95", {ib.lo, ib.hi}}, {"n_b", n_b},
          {"difference", d},   {"difference_ci95", {lo, hi}}, {"significant", lo > 0 || hi < 0}};
}

}  // namespace llmload::analysis
