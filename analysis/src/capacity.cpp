#include "llmload/analysis/capacity.hpp"
#include "numeric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {



double median_or_nan(std::vector<double> v) { return median(std::move(v)).value_or(kNaN); }

bool is_integral(double v) { return std::isfinite(v) && v == std::floor(v); }

void recount(CapacityPoint& p) {
  p.passes = p.fails = p.inconclusive = 0;
  bool all_near_bound = true;
  std::vector<double> goodput;
  std::vector<double> throughput;
  std::size_t counted = 0;
  for (const auto& t : p.trials) {
    if (t.superseded) continue;
    ++counted;
    if (t.saturated || t.verdict == Verdict::kFail) {
      ++p.fails;
    } else if (t.verdict == Verdict::kPass && t.valid) {
      ++p.passes;
    } else {
      ++p.inconclusive;
      all_near_bound = all_near_bound && t.near_bound;
    }
    goodput.push_back(t.goodput);
    throughput.push_back(t.throughput);
  }
  if (2 * p.passes > counted) {
    p.verdict = Verdict::kPass;
  } else if (p.inconclusive > 0 && 2 * (p.passes + p.inconclusive) > counted) {
    p.verdict = Verdict::kInconclusive;  // resolving the inconclusive trials could still make it pass
  } else {
    p.verdict = Verdict::kFail;
  }
  p.near_bound = p.verdict == Verdict::kInconclusive && all_near_bound;
  p.goodput = median_or_nan(std::move(goodput));
  p.throughput = median_or_nan(std::move(throughput));
}

std::string load_text(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

std::string_view to_string(CapacityStop s) {
  switch (s) {
    case CapacityStop::kRunning: return "running";
    case CapacityStop::kToleranceReached: return "tolerance_reached";
    case CapacityStop::kMaxPoints: return "max_points";
    case CapacityStop::kMaxLoadPasses: return "max_load_passes";
    case CapacityStop::kMinLoadFails: return "min_load_fails";
    case CapacityStop::kInconclusive: return "inconclusive";
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
  if (!(std::isfinite(opt_.min_load) && opt_.min_load >= 0 && opt_.min_load <= opt_.start))
    throw std::invalid_argument("capacity search: min_load must be in [0, start]");
  if (opt_.min_load == 0) opt_.min_load = opt_.start / std::pow(opt_.growth, 6);
  if (opt_.integer_loads) {
    if (!is_integral(opt_.start)) throw std::invalid_argument("capacity search: integer loads need an integer start");
    opt_.max_load = std::floor(opt_.max_load);
    opt_.min_load = std::max(1.0, std::ceil(opt_.min_load));
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

std::optional<double> CapacitySearch::just_under(const Bracket& b) const {
  if (!b.fail || !b.fail->near_bound || (b.pass && within(b, 1.0))) return std::nullopt;
  double under = round_load(b.fail->load / (1 + opt_.tolerance));
  if (opt_.integer_loads) under = std::min(under, b.fail->load - 1);
  const double floor = b.pass ? b.pass->load : opt_.min_load;
  const bool probed = std::any_of(points_.begin(), points_.end(), [&](const CapacityPoint& p) { return p.load == under; });
  if (probed || under >= b.fail->load || under < floor || (b.pass && under <= floor)) return std::nullopt;
  return under;
}

bool CapacitySearch::within(const Bracket& b, double factor) const {
  const double width = b.fail->load - b.pass->load;
  if (opt_.integer_loads && width <= factor) return true;  // factor 1: adjacent; 2: one load left between
  return width <= factor * opt_.tolerance * b.pass->load * (1 + 1e-9);  // a step of load / (1 + tolerance) is within
}

std::optional<Probe> CapacitySearch::decide() {
  if (stop_ != CapacityStop::kRunning) return std::nullopt;
  const Bracket b = bracket();
  std::optional<Probe> probe;
  if (points_.empty()) {
    probe = Probe{opt_.start, opt_.trials, false, 0, "ramp"};
  } else if (b.fail && b.fail->verdict == Verdict::kInconclusive && b.fail->extensions < opt_.max_extensions &&
             (!b.fail->near_bound || (!b.pass && b.fail->load <= opt_.min_load))) {
    // Not a FAIL: probe it again bigger (its inconclusive trials are replaced), up to the bound.
    // A point whose percentile sits at the bound is not (a bigger probe would hardly decide it)
    // unless nothing lies below it to probe instead.
    probe = Probe{b.fail->load, std::max<std::size_t>(b.fail->inconclusive, 1),
                  b.fail->trials.size() >= opt_.trials_near_boundary, b.fail->extensions + 1, "extend inconclusive"};
  } else if (auto under = just_under(b)) {
    // The capacity is at that point within a probe's resolution: a PASS just under it brackets it
    // within the tolerance.
    probe = Probe{*under, std::max(opt_.trials, opt_.trials_near_boundary), true, 0, "just under a near-bound load"};
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
    probe = Probe{std::min(next, opt_.max_load), opt_.trials, false, 0, "ramp"};
  } else if (!b.pass) {
    const double lowest = b.fail->load;
    if (lowest <= opt_.min_load) {
      stop_ = CapacityStop::kMinLoadFails;
      explanation_ = fmt::format("even the lowest load {} does not pass ({}): the capacity is below it",
                                 load_text(lowest), to_string(b.fail->verdict));
      return std::nullopt;
    }
    double next = std::max(round_load(lowest / opt_.growth), opt_.min_load);
    if (opt_.integer_loads) next = std::min(next, lowest - 1);
    probe = Probe{next, opt_.trials, false, 0, "ramp down"};
  } else if (within(b, 1.0)) {
    const std::size_t need = opt_.trials_near_boundary;
    const auto counted = [](const CapacityPoint* p) { return p->passes + p->fails + p->inconclusive; };
    if (counted(b.pass) < need) {
      probe = Probe{b.pass->load, need - counted(b.pass), true, 0, "confirm highest pass"};
    } else if (counted(b.fail) < need) {
      probe = Probe{b.fail->load, need - counted(b.fail), true, 0, "confirm lowest fail"};
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
    probe = Probe{mid, near ? std::max(opt_.trials, opt_.trials_near_boundary) : opt_.trials, near, 0, "bisect"};
  }
  if (history_.size() >= opt_.max_points) {
    stop_ = CapacityStop::kMaxPoints;
    explanation_ = fmt::format("stopped after the maximum of {} probes", opt_.max_points);
    if (b.pass && b.fail && within(b, 1.0) && probe) {
      // Narrow enough, but an end lacks its confirming trials (it read "still 2.63% wide
      // (tolerance 5.00%)", as if too wide).
      explanation_ += fmt::format(
          " with the bracket [{}, {}] within the tolerance ({:.2f}% wide, tolerance {:.2f}%{}) but not confirmed: "
          "the next probe was to {} at {} ({} more trial(s); each end needs {}); raise --max-points",
          load_text(b.pass->load), load_text(b.fail->load), 100 * (b.fail->load - b.pass->load) / b.pass->load,
          100 * opt_.tolerance, opt_.integer_loads ? ", or adjacent integer loads" : "", probe->why,
          load_text(probe->load), probe->trials, opt_.trials_near_boundary);
    } else if (b.pass && b.fail) {
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
  if (pending_->extension > 0) {
    for (auto& t : it->trials) {
      if (!t.superseded && !t.saturated && !(t.verdict == Verdict::kFail) && !(t.verdict == Verdict::kPass && t.valid)) {
        t.superseded = true;
      }
    }
    it->extensions = std::max(it->extensions, pending_->extension);
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
  describe_answer(r, b);
  return r;
}

void CapacitySearch::describe_answer(CapacityResult& r, const Bracket& b) const {
  const auto counted = [](const CapacityPoint* p) { return p->passes + p->fails + p->inconclusive; };
  if (b.pass && b.fail) {
    r.bounded_by = fmt::format(
        "bracket [{}, {}] ({:.1f}% wide; tolerance {:.1f}%{}): {} passed {} of {} trials, {} {} {} of {}",
        load_text(b.pass->load), load_text(b.fail->load), 100 * r.relative_width, 100 * opt_.tolerance,
        opt_.integer_loads ? " or adjacent integers" : "", load_text(b.pass->load), b.pass->passes, counted(b.pass),
        load_text(b.fail->load), b.fail->verdict == Verdict::kFail ? "failed" : "was inconclusive in",
        b.fail->verdict == Verdict::kFail ? b.fail->fails : b.fail->inconclusive, counted(b.fail));
  } else if (b.pass) {
    r.bounded_by = fmt::format("only from below: {} passed {} of {} trials, no load above it failed",
                               load_text(b.pass->load), b.pass->passes, counted(b.pass));
  } else if (b.fail) {
    r.bounded_by = fmt::format("only from above: the lowest load probed, {}, did not pass", load_text(b.fail->load));
  }
  r.valid = false;
  r.confidence = "none";
  switch (stop_) {
    case CapacityStop::kRunning: r.invalid_reasons.push_back("the search has not finished"); break;
    case CapacityStop::kMaxLoadPasses:
      r.invalid_reasons.push_back("no load failed up to the maximum: only a lower bound");
      break;
    case CapacityStop::kMinLoadFails: r.invalid_reasons.push_back("no load passed: only an upper bound"); break;
    case CapacityStop::kInconclusive:
      r.invalid_reasons.push_back("the lowest non-passing load stayed INCONCLUSIVE: the upper bound is unknown");
      break;
    case CapacityStop::kMaxPoints:
    case CapacityStop::kToleranceReached:
      if (!b.pass || !b.fail) {
        r.invalid_reasons.push_back("the probe budget ran out before a bracket [pass, fail] was found");
      } else if (b.fail->verdict != Verdict::kFail) {
        // INCONCLUSIVE: the SLO could not be shown to hold there, so the highest PASS is the
        // capacity that can be shown. At the bound, the capacity is there within what a probe
        // resolves (medium when the pass end is unanimous); otherwise the bracket is uncertain.
        r.valid = true;
        const bool unanimous = b.pass->passes == counted(b.pass);
        r.confidence = stop_ == CapacityStop::kToleranceReached && b.fail->near_bound && unanimous ? "medium" : "low";
        if (b.fail->near_bound) {
          r.notes.push_back(fmt::format(
              "the lowest non-passing load, {}, was INCONCLUSIVE in {} of {} trials{}: its SLO percentile sits at "
              "the bound there (over half the allowed requests over it), so the capacity is between {} and {}; "
              "the highest load shown to pass is the answer, not a FAIL",
              load_text(b.fail->load), b.fail->inconclusive, counted(b.fail),
              b.fail->extensions > 0 ? fmt::format(" after {} bigger probes", b.fail->extensions) : std::string(),
              load_text(b.pass->load), load_text(b.fail->load)));
        } else {
          r.notes.push_back(fmt::format("the lowest non-passing load, {}, stayed INCONCLUSIVE after {} bigger probes "
                                        "(an INVALID run or a window too short for its latency), not a FAIL",
                                        load_text(b.fail->load), b.fail->extensions));
        }
      } else {
        r.valid = true;
        const bool unanimous = b.pass->passes == counted(b.pass) && b.fail->fails == counted(b.fail);
        r.confidence = stop_ == CapacityStop::kMaxPoints ? "low" : (unanimous ? "high" : "medium");
      }
      break;
  }
}

nlohmann::json to_json(const CapacityResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& t : p.trials) {
      trials.push_back({{"verdict", to_string(t.verdict)},
                        {"goodput", number_or_null(t.goodput)},
                        {"throughput", number_or_null(t.throughput)},
                        {"saturated", t.saturated},
                        {"valid", t.valid},
                        {"superseded", t.superseded},
                        {"near_bound", t.near_bound},
                        {"note", t.note}});
    }
    points.push_back({{"load", p.load},
                      {"verdict", to_string(p.verdict)},
                      {"passes", p.passes},
                      {"fails", p.fails},
                      {"inconclusive", p.inconclusive},
                      {"extensions", p.extensions},
                      {"near_bound", p.near_bound},
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
                       {"extension", h.probe.extension},
                       {"point_verdict", to_string(h.point_verdict)}});
  }
  return {{"stop", to_string(r.stop)},
          {"explanation", r.explanation},
          {"highest_pass", r.highest_pass ? nlohmann::json(*r.highest_pass) : nlohmann::json(nullptr)},
          {"lowest_fail", r.lowest_fail ? nlohmann::json(*r.lowest_fail) : nlohmann::json(nullptr)},
          {"goodput_at_capacity", number_or_null(r.goodput_at_capacity)},
          {"throughput_at_capacity", number_or_null(r.throughput_at_capacity)},
          {"relative_width", number_or_null(r.relative_width)},
          {"valid", r.valid},
          {"invalid_reasons", r.invalid_reasons},
          {"notes", r.notes},
          {"confidence", r.confidence},
          {"bounded_by", r.bounded_by},
          {"points", std::move(points)},
          {"history", std::move(history)}};
}

ProbeSize size_probe(const ProbeSizing& z, double e2e_s, std::size_t extension) {
  if (!(z.percentile > 0 && z.percentile < 100) || z.margin_exceedances < 0 || !(z.min_window_s >= 0) ||
      !(z.window_e2e >= 0) || !(z.warmup_e2e >= 0) || !(z.min_warmup_s >= 0)) {
    throw std::invalid_argument("probe sizing: percentile in (0, 100), the rest >= 0");
  }
  const double e2e = std::isfinite(e2e_s) && e2e_s > 0 ? e2e_s : 0.0;
  const double scale = std::ldexp(1.0, static_cast<int>(std::min<std::size_t>(extension, 16)));
  ProbeSize p;
  p.min_requests = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(early_stopping_min_requests(z.margin_exceedances, z.percentile / 100)) * scale));
  // A run's validity also needs the samples of its headline p99 (run_metrics: samples_needed).
  p.min_requests = std::max({p.min_requests, samples_needed(99.0), samples_needed(z.percentile)});
  p.min_window_s = std::max(z.min_window_s, z.window_e2e * e2e) * scale;
  p.warmup_s = std::max(z.min_warmup_s, z.warmup_e2e * e2e);
  return p;
}

TrialOutcome judge_trial(const TrialEvidence& e, const ProbeSizing& z) {
  TrialOutcome o;
  o.verdict = e.verdict;
  o.goodput = e.goodput;
  o.throughput = e.throughput;
  o.valid = e.valid;
  const auto has = [&](std::string_view code) {
    return std::find(e.invalid_codes.begin(), e.invalid_codes.end(), code) != e.invalid_codes.end();
  };
  if (e.stopped_early || e.overloaded) {
    o.saturated = true;
    o.verdict = Verdict::kFail;
    o.note = e.stopped_early ? "FAIL: stopped early, over-saturated" : "FAIL: " + e.overload_reason;
  } else if (!e.valid && (has("server_errors") || has("error_rate"))) {
    o.verdict = Verdict::kFail;
    o.note = "FAIL: the server failed requests at this load (INVALID run)";
  } else if (!e.valid && (has("schedule_lag") || e.verdict != Verdict::kFail)) {
    o.verdict = Verdict::kInconclusive;
    o.note = fmt::format("INCONCLUSIVE: INVALID run ({}) is never a PASS",
                         e.invalid_codes.empty() ? std::string("invalid") : e.invalid_codes.front());
  } else if (e.verdict == Verdict::kPass && std::isfinite(e.e2e_p99_s) && e.window_s < z.window_e2e * e.e2e_p99_s) {
    o.verdict = Verdict::kInconclusive;
    o.note = fmt::format("INCONCLUSIVE: the {:.1f} s window is shorter than {:g} x the p99 E2E ({:.2f} s) at this load",
                         e.window_s, z.window_e2e, e.e2e_p99_s);
  } else if (e.verdict == Verdict::kInconclusive && std::isfinite(e.exceedance_fraction) &&
             e.exceedance_fraction > (1 - z.percentile / 100) / 2) {
    o.near_bound = true;
    o.note = fmt::format("INCONCLUSIVE: at the bound ({:.2f}% of requests over it; the p{:g} allows {:.2g}%)",
                         100 * e.exceedance_fraction, z.percentile, 100 - z.percentile);
  } else {
    o.note = std::string(to_string(e.verdict));
  }
  return o;
}

VerdictBracket bracket_from_verdicts(const std::vector<double>& loads, const std::vector<std::string>& verdicts) {
  VerdictBracket b;
  const std::size_t n = std::min(loads.size(), verdicts.size());
  bool conclusive = false;
  for (std::size_t i = 0; i < n; ++i) conclusive = conclusive || verdicts[i] == "PASS" || verdicts[i] == "FAIL";
  if (!conclusive) return b;
  for (std::size_t i = 0; i < n; ++i) {
    if ((verdicts[i] == "FAIL" || verdicts[i] == "INCONCLUSIVE") && std::isfinite(loads[i]) &&
        (!b.lowest_fail || loads[i] < *b.lowest_fail)) {
      b.lowest_fail = loads[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (verdicts[i] != "PASS" || !std::isfinite(loads[i])) continue;
    if (b.lowest_fail && loads[i] >= *b.lowest_fail) continue;
    if (!b.highest_pass || loads[i] > *b.highest_pass) {
      b.highest_pass = loads[i];
      b.pass_index = i;
    }
  }
  return b;
}

}  // namespace llmload::analysis
