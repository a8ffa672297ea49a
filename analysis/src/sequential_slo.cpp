#include "llmload/analysis/sequential_slo.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

constexpr double kAlpha = 0.01;  // the verdict's 1 - 0.99, spent over the looks
constexpr std::uint8_t kDone = 1;
constexpr std::array<std::uint8_t, 4> kOver = {2, 4, 8, 16};  // ttft, ttfo, tpot, e2e
constexpr int kMaxLooks = 40;                            // n_k doubles: far past any run's size

double look_alpha(int k) { return kAlpha * std::ldexp(1.0, -(k + 1)); }

}  // namespace

SequentialSlo::SequentialSlo(SloSpec slo, LatencyView view) : slo_(std::move(slo)), view_(view) {
  if (slo_.empty()) throw std::invalid_argument("sequential stopping needs an SLO with at least one bound");
  look_n_ = first_look_size(slo_);
}

std::int64_t SequentialSlo::first_look_size(const SloSpec& slo) {
  // At least the sample whose p99 is not low-confidence: the run's percentiles are reported too.
  return std::max(kConfidentP99Samples, early_stopping_min_requests(0, slo.percentile / 100.0, 1.0 - look_alpha(0)));
}

bool SequentialSlo::on_complete(std::int64_t ordinal, const RequestRecord& r) {
  if (ordinal < 0 || conclusive_) return false;
  const auto i = static_cast<std::size_t>(ordinal);
  if (flags_.size() <= i) flags_.resize(i + 1, 0);
  if ((flags_[i] & kDone) != 0) return false;  // counted once
  const SloExceedance x = judge_request(r, slo_, view_).over;  // a canceled request: only bounds passed
  flags_[i] = static_cast<std::uint8_t>(kDone | (x.ttft ? kOver[0] : 0) | (x.ttfo ? kOver[1] : 0) |
                                        (x.tpot ? kOver[2] : 0) | (x.e2e ? kOver[3] : 0));
  if (ordinal < look_n_) ++done_in_look_;
  while (!conclusive_ && done_in_look_ == look_n_ && k_ < kMaxLooks) look();
  return conclusive_;
}

void SequentialSlo::look() {
  const double alpha = look_alpha(k_);
  const double p = slo_.percentile / 100.0;
  const std::array<bool, 4> bounded = {slo_.ttft.has_value(), slo_.ttfo.has_value(), slo_.tpot.has_value(),
                                       slo_.e2e.has_value()};
  const std::array<const char*, 4> names = {"ttft", "ttfo", "tpot", "e2e"};
  std::array<std::int64_t, 4> over = {0, 0, 0, 0};
  for (std::int64_t i = 0; i < look_n_; ++i) {
    for (std::size_t m = 0; m < 4; ++m) over[m] += (flags_[static_cast<std::size_t>(i)] & kOver[m]) != 0 ? 1 : 0;
  }
  bool all_pass = true;
  bool any_fail = false;
  std::string detail;
  for (std::size_t m = 0; m < 4; ++m) {
    if (!bounded[m]) continue;
    const bool pass = look_n_ >= early_stopping_min_requests(over[m], p, 1.0 - alpha);
    // P[X >= over] for X ~ Binomial(n, 1 - p): so many exceedances are unlikely from a server
    // that meets the percentile.
    const bool fail = over[m] > 0 && 1.0 - binomial_cdf(over[m] - 1, look_n_, 1.0 - p) <= alpha;
    all_pass = all_pass && pass;
    any_fail = any_fail || fail;
    detail += fmt::format("{}{} {}/{} over", detail.empty() ? "" : ", ", names[m], over[m], look_n_);
  }
  SequentialLook l;
  l.n = look_n_;
  l.confidence = 1.0 - alpha;
  l.detail = std::move(detail);
  conclusive_ = any_fail || all_pass;
  l.decision = any_fail ? "FAIL" : (all_pass ? "PASS" : "continue");
  looks_.push_back(std::move(l));
  if (conclusive_) return;
  // The next look: twice the sample; count what of it has already completed.
  const std::int64_t next = look_n_ * 2;
  for (std::int64_t i = look_n_; i < next && i < static_cast<std::int64_t>(flags_.size()); ++i) {
    done_in_look_ += (flags_[static_cast<std::size_t>(i)] & kDone) != 0 ? 1 : 0;
  }
  look_n_ = next;
  ++k_;
}

std::string SequentialSlo::summary() const {
  if (looks_.empty()) return fmt::format("no look yet: the first needs {} measured requests", look_n_);
  const auto& l = looks_.back();
  if (conclusive_) {
    return fmt::format("conclusive ({}) at look {} of the first {} measured requests, {:.4g}% confidence ({})",
                       l.decision, looks_.size(), l.n, 100.0 * l.confidence, l.detail);
  }
  return fmt::format("not conclusive after {} look(s), the last of {} measured requests ({}); the next needed {}",
                     looks_.size(), l.n, l.detail, look_n_);
}

}  // namespace llmload::analysis
