#include "llmload/analysis/capacity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace llmload::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool is_integral(double v) { return std::isfinite(v) && v == std::floor(v); }

void recount(CapacityPoint& p) {
  p.passes = p.fails = p.inconclusive = 0;
  std::vector<double> goodput;
  std::vector<double> throughput;
  for (const auto& t : p.trials) {
    if (t.saturated || t.verdict == Verdict::kFail) {
      ++p.fails;
    } else if (t.verdict == Verdict::kPass) {
      ++p.passes;
    } else {
      ++p.inconclusive;
    }
    goodput.push_back(t.goodput);
    throughput.push_back(t.throughput);
  }
  if (2 * p.passes > p.trials.size()) {
    p.verdict = Verdict::kPass;
  } else {
    p.verdict = p.fails >= p.inconclusive ? Verdict::kFail : Verdict::kInconclusive;
  }
  p.goodput = median(std::move(goodput));
  p.throughput = median(std::move(throughput));
}

std::string load_text(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

std::string_view to_string(CapacityStop s) {
  switch (s) {
    case CapacityStop::kRunning: return "running";
    case CapacityStop::kToleranceReached: return "tolerance_reached";
    case CapacityStop::kMaxPoints: return "max_points";
    case CapacityStop::kMaxLoadPasses: return "max_load_passes";
    case CapacityStop::kStartFails: return "start_fails";
  }
  return "unknown";
}

CapacitySearch::CapacitySearch(CapacityOptions options) : opt_(options) {
  if (!(std::isfinite(opt_.start) && opt_.start > 0)) throw std::invalid_argument("capacity search: start must be > 0");
  if (!(std::isfinite(opt_.max_load) && opt_.max_load >= opt_.start))
    throw std::invalid_argument("capacity search: max_load must be >= start");
  if (!(std::isfinite(opt_.growth) && opt_.growth > 1)) throw std::invalid_argument("capacity search: growth must be > 1");
  if (!(std::isfinite(opt_.tolerance) && opt_.tolerance >= 0) || (!opt_.integer_loads && opt_.tolerance == 0)) {
    throw std::invalid_argument("capacity search: tolerance must be > 0 (or >= 0 with integer loads)");
  }
  if (opt_.max_points == 0 || opt_.trials == 0 || opt_.trials_near_boundary == 0)
    throw std::invalid_argument("capacity search: max_points, trials and trials_near_boundary must be >= 1");
  if (opt_.integer_loads) {
    if (!is_integral(opt_.start)) throw std::invalid_argument("capacity search: integer loads need an integer start");
    opt_.max_load = std::floor(opt_.max_load);
  }
  pending_ = decide();
}

double CapacitySearch::round_load(double v) const { return opt_.integer_loads ? std::round(v) : v; }

CapacitySearch::Bracket CapacitySearch::bracket() const {
  Bracket b;
  for (const auto& p : points_) {
    if (p.verdict != Verdict::kPass) {
      b.fail = &p;
      break;
    }
    b.pass = &p;
  }
  return b;
}

bool CapacitySearch::within(const Bracket& b, double factor) const {
  const double width = b.fail->load - b.pass->load;
  if (opt_.integer_loads && width <= factor) return true;  // factor 1: adjacent; 2: one load left between
  return width <= factor * opt_.tolerance * b.pass->load;
}

std::optional<Probe> CapacitySearch::decide() {
  if (stop_ != CapacityStop::kRunning) return std::nullopt;
  const Bracket b = bracket();
  std::optional<Probe> probe;
  if (points_.empty()) {
    probe = Probe{opt_.start, opt_.trials, false, "ramp"};
  } else if (!b.fail) {
    const double highest = b.pass->load;
    if (highest >= opt_.max_load) {
      stop_ = CapacityStop::kMaxLoadPasses;
      explanation_ = fmt::format("the maximum load {} passes: the capacity is at least that (raise the maximum to find it)",
                                 load_text(highest));
      return std::nullopt;
    }
    double next = round_load(highest * opt_.growth);
    if (opt_.integer_loads) next = std::max(next, highest + 1);
    probe = Probe{std::min(next, opt_.max_load), opt_.trials, false, "ramp"};
  } else if (!b.pass) {
    stop_ = CapacityStop::kStartFails;
    explanation_ = fmt::format("even the lowest load {} does not pass ({}): the capacity is below it",
                               load_text(b.fail->load), to_string(b.fail->verdict));
    return std::nullopt;
  } else if (within(b, 1.0)) {
    const std::size_t need = opt_.trials_near_boundary;
    if (b.pass->trials.size() < need) {
      probe = Probe{b.pass->load, need - b.pass->trials.size(), true, "confirm highest pass"};
    } else if (b.fail->trials.size() < need) {
      probe = Probe{b.fail->load, need - b.fail->trials.size(), true, "confirm lowest fail"};
    } else {
      stop_ = CapacityStop::kToleranceReached;
      explanation_ = fmt::format("bracket [{}, {}] is within the tolerance ({:.2f}% wide, tolerance {:.2f}%{})",
                                 load_text(b.pass->load), load_text(b.fail->load),
                                 100 * (b.fail->load - b.pass->load) / b.pass->load, 100 * opt_.tolerance,
                                 opt_.integer_loads ? ", or adjacent integer loads" : "");
      return std::nullopt;
    }
  } else {
    const double mid = opt_.integer_loads ? std::floor((b.pass->load + b.fail->load) / 2)
                                          : b.pass->load + (b.fail->load - b.pass->load) / 2;
    const bool near = within(b, 2.0);
    probe = Probe{mid, near ? std::max(opt_.trials, opt_.trials_near_boundary) : opt_.trials, near, "bisect"};
  }
  if (history_.size() >= opt_.max_points) {
    stop_ = CapacityStop::kMaxPoints;
    explanation_ = fmt::format("stopped after the maximum of {} probes", opt_.max_points);
    if (b.pass && b.fail) {
      explanation_ += fmt::format(" with the bracket [{}, {}] still {:.2f}% wide (tolerance {:.2f}%)",
                                  load_text(b.pass->load), load_text(b.fail->load),
                                  100 * (b.fail->load - b.pass->load) / b.pass->load, 100 * opt_.tolerance);
    } else if (b.pass) {
      explanation_ += fmt::format(" before any load failed (highest pass {})", load_text(b.pass->load));
    }
    return std::nullopt;
  }
  return probe;
}

std::optional<Probe> CapacitySearch::next() { return pending_; }

void CapacitySearch::report(double load, const PointOutcome& outcome) {
  if (!pending_) throw std::logic_error("capacity search: report() without a pending probe");
  if (load != pending_->load) {
    throw std::logic_error(fmt::format("capacity search: reported load {} but the pending probe is {}", load_text(load),
                                       load_text(pending_->load)));
  }
  if (outcome.trials.empty()) throw std::invalid_argument("capacity search: an outcome needs at least one trial");
  for (const auto& t : outcome.trials) {
    if (t.verdict == Verdict::kNone)
      throw std::invalid_argument("capacity search: a trial verdict must be PASS, FAIL or INCONCLUSIVE (no SLO?)");
  }
  auto it = std::lower_bound(points_.begin(), points_.end(), load,
                             [](const CapacityPoint& p, double l) { return p.load < l; });
  if (it == points_.end() || it->load != load) {
    CapacityPoint fresh;
    fresh.load = load;
    it = points_.insert(it, std::move(fresh));
  }
  it->trials.insert(it->trials.end(), outcome.trials.begin(), outcome.trials.end());
  recount(*it);
  ProbeRecord rec;
  rec.index = history_.size();
  rec.probe = *pending_;
  rec.trials_reported = outcome.trials.size();
  rec.point_verdict = it->verdict;
  history_.push_back(std::move(rec));
  pending_ = decide();
}

CapacityResult CapacitySearch::result() const {
  CapacityResult r;
  r.stop = stop_;
  r.explanation = stop_ == CapacityStop::kRunning ? "search in progress" : explanation_;
  r.points = points_;
  r.history = history_;
  const Bracket b = bracket();
  r.goodput_at_capacity = r.throughput_at_capacity = r.relative_width = kNaN;
  if (b.pass) {
    r.highest_pass = b.pass->load;
    r.goodput_at_capacity = b.pass->goodput;
    r.throughput_at_capacity = b.pass->throughput;
  }
  if (b.fail) {
    r.lowest_fail = b.fail->load;
  }
  if (b.pass && b.fail) r.relative_width = (b.fail->load - b.pass->load) / b.pass->load;
  return r;
}

nlohmann::json to_json(const CapacityResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& t : p.trials) {
      trials.push_back({{"verdict", to_string(t.verdict)},
                        {"goodput", number_or_null(t.goodput)},
                        {"throughput", number_or_null(t.throughput)},
                        {"saturated", t.saturated}});
    }
    points.push_back({{"load", p.load},
                      {"verdict", to_string(p.verdict)},
                      {"passes", p.passes},
                      {"fails", p.fails},
                      {"inconclusive", p.inconclusive},
                      {"goodput", number_or_null(p.goodput)},
                      {"throughput", number_or_null(p.throughput)},
                      {"trials", std::move(trials)}});
  }
  nlohmann::json history = nlohmann::json::array();
  for (const auto& h : r.history) {
    history.push_back({{"index", h.index},
                       {"load", h.probe.load},
                       {"why", h.probe.why},
                       {"trials_requested", h.probe.trials},
                       {"trials_reported", h.trials_reported},
                       {"near_boundary", h.probe.near_boundary},
                       {"point_verdict", to_string(h.point_verdict)}});
  }
  return {{"stop", to_string(r.stop)},
          {"explanation", r.explanation},
          {"highest_pass", r.highest_pass ? nlohmann::json(*r.highest_pass) : nlohmann::json(nullptr)},
          {"lowest_fail", r.lowest_fail ? nlohmann::json(*r.lowest_fail) : nlohmann::json(nullptr)},
          {"goodput_at_capacity", number_or_null(r.goodput_at_capacity)},
          {"throughput_at_capacity", number_or_null(r.throughput_at_capacity)},
          {"relative_width", number_or_null(r.relative_width)},
          {"points", std::move(points)},
          {"history", std::move(history)}};
}

}  // namespace llmload::analysis
