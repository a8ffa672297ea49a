#include "llmload/loadgen/schedule.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"

namespace llmload {

namespace {
constexpr std::int64_t kMaxScheduledRequests = 50'000'000;

Nanos seconds_to_nanos(double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); }

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Applies the warmup rule to a sorted list of offsets: the first N, or those before T.
std::int64_t count_warmup(const std::vector<Nanos>& arrivals, const WarmupSpec& warmup) {
  if (warmup.by_time()) {
    std::int64_t n = 0;
    for (auto t : arrivals) {
      if (t >= warmup.duration) break;
      ++n;
    }
    return n;
  }
  return std::min<std::int64_t>(warmup.requests, static_cast<std::int64_t>(arrivals.size()));
}
}  // namespace

Nanos exponential_gap(double u, double mean_seconds) {
  const double s = -mean_seconds * std::log1p(-u);
  return seconds_to_nanos(s);
}

ArrivalProcess parse_arrival_process(std::string_view s) {
  if (s == "poisson") return ArrivalProcess::kPoisson;
  if (s == "gamma") return ArrivalProcess::kGamma;
  if (s == "constant") return ArrivalProcess::kConstant;
  throw ConfigError(fmt::format(
      "bad --arrival-process '{}': use poisson, gamma or constant, e.g. --arrival-process gamma --burstiness 0.5", s));
}

RampKind parse_ramp(std::string_view s) {
  if (s.empty() || s == "none") return RampKind::kNone;
  if (s == "linear") return RampKind::kLinear;
  if (s == "exponential") return RampKind::kExponential;
  throw ConfigError(
      fmt::format("bad --ramp '{}': use none, linear or exponential, e.g. --ramp linear --ramp-duration 60s", s));
}

std::vector<ArrivalConfig::Stage> parse_stages(std::string_view s) {
  constexpr std::string_view kExample = "e.g. --stages rate:5@30s,rate:10@30s,concurrency:16@60s";
  std::vector<ArrivalConfig::Stage> out;
  if (trim_blanks(s).empty()) {
    throw ConfigError(fmt::format("bad --stages '': give KIND:VALUE@DURATION parts, {}", kExample));
  }
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string_view part = trim_blanks(s.substr(pos, comma - pos));
    pos = comma + 1;
    const auto bad = [&](std::string_view why) {
      return ConfigError(fmt::format("bad --stages part '{}' (stage {}): {}; {}", part, out.size() + 1, why, kExample));
    };
    const std::size_t colon = part.find(':');
    const std::size_t at = part.find('@');
    if (colon == std::string_view::npos || at == std::string_view::npos || at < colon) {
      throw bad("give KIND:VALUE@DURATION with KIND rate or concurrency");
    }
    const std::string_view kind = trim_blanks(part.substr(0, colon));
    const std::string_view value = trim_blanks(part.substr(colon + 1, at - colon - 1));
    const std::string_view dur = trim_blanks(part.substr(at + 1));
    ArrivalConfig::Stage st;
    if (kind == "rate") {
      st.concurrency = false;
    } else if (kind == "concurrency") {
      st.concurrency = true;
    } else {
      throw bad(fmt::format("unknown kind '{}', use rate or concurrency", kind));
    }
    const auto v = parse_number(value);
    if (!v || *v <= 0) {
      throw bad(st.concurrency ? "the concurrency must be a whole number of at least 1"
                               : "the rate must be a number of requests per second above 0");
    }
    if (st.concurrency && *v != std::floor(*v)) {
      throw bad("the concurrency must be a whole number of at least 1");
    }
    st.value = *v;
    try {
      st.duration = parse_duration(dur);
    } catch (const DurationParseError& e) {
      throw bad(e.what());
    }
    if (st.duration.count() <= 0) throw bad("the duration must be positive");
    out.push_back(st);
  }
  return out;
}

double ramp_start_rate(const ArrivalConfig& a, double target) {
  return a.ramp_start_rate > 0 ? a.ramp_start_rate : target / 10.0;
}

// ---- random numbers ----

double ArrivalRng::exponential() { return -std::log1p(-uniform()); }

double ArrivalRng::normal() {
  while (true) {
    const double x = 2.0 * uniform() - 1.0;
    const double y = 2.0 * uniform() - 1.0;
    const double s = x * x + y * y;
    if (s > 0.0 && s < 1.0) return x * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double ArrivalRng::gamma(double shape) {
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) * U^(1/k), U in (0, 1].
    const double g = gamma(shape + 1.0);
    const double u = 1.0 - uniform();
    return g * std::pow(u, 1.0 / shape);
  }
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = 0;
    double v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// ---- rate curve ----

RateCurve::RateCurve(double rate) : r0_(rate), r1_(rate) {}

RateCurve::RateCurve(const ArrivalConfig& a, double target)
    : kind_(parse_ramp(a.ramp)), r0_(target), r1_(target), d_(std::chrono::duration<double>(a.ramp_duration).count()) {
  if (kind_ != RampKind::kNone && d_ > 0) {
    r0_ = ramp_start_rate(a, target);
  } else {
    kind_ = RampKind::kNone;
    d_ = 0;
  }
}

double RateCurve::rate_at(double t) const {
  if (kind_ == RampKind::kNone || t >= d_) return r1_;
  if (t <= 0) return r0_;
  if (kind_ == RampKind::kLinear) return r0_ + (r1_ - r0_) * t / d_;
  return r0_ * std::pow(r1_ / r0_, t / d_);
}

double RateCurve::cumulative(double t) const {
  if (t <= 0) return 0;
  if (kind_ == RampKind::kNone) return r1_ * t;
  const double tr = std::min(t, d_);
  double lam = 0;
  if (kind_ == RampKind::kLinear) {
    lam = r0_ * tr + (r1_ - r0_) * tr * tr / (2.0 * d_);
  } else {
    const double c = std::log(r1_ / r0_) / d_;
    lam = c == 0 ? r0_ * tr : r0_ * std::expm1(c * tr) / c;
  }
  return t > d_ ? lam + r1_ * (t - d_) : lam;
}

double RateCurve::inverse(double tau) const {
  if (tau <= 0) return 0;
  if (kind_ == RampKind::kNone) return tau / r1_;
  const double ramp_total = cumulative(d_);
  if (tau >= ramp_total) return d_ + (tau - ramp_total) / r1_;
  if (kind_ == RampKind::kLinear) {
    // r0 t + a t^2 = tau with a = (r1 - r0) / 2d; the stable root form (valid for a of either sign).
    const double a = (r1_ - r0_) / (2.0 * d_);
    const double disc = std::max(0.0, r0_ * r0_ + 4.0 * a * tau);
    return 2.0 * tau / (r0_ + std::sqrt(disc));
  }
  const double c = std::log(r1_ / r0_) / d_;
  if (c == 0) return tau / r0_;
  return std::log1p(c * tau / r0_) / c;
}

// ---- arrival stream ----

ArrivalStream::ArrivalStream(const ArrivalConfig& a, double rate, std::uint64_t seed)
    : process_(parse_arrival_process(a.process)), shape_(a.burstiness), curve_(a, rate), rng_(seed) {}

double ArrivalStream::unit_gap() {
  switch (process_) {
    case ArrivalProcess::kPoisson: return rng_.exponential();
    case ArrivalProcess::kGamma: return shape_ == 1.0 ? rng_.exponential() : rng_.gamma(shape_) / shape_;
    case ArrivalProcess::kConstant: return 1.0;
  }
  return 1.0;
}

Nanos ArrivalStream::next() {
  tau_ += unit_gap();
  return seconds_to_nanos(curve_.inverse(tau_));
}

// ---- schedules ----

Schedule schedule_from_arrivals(std::vector<Nanos> arrivals, const WarmupSpec& warmup) {
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    if (arrivals[i].count() < 0) {
      throw ConfigError(fmt::format("timed arrivals: request {} has a negative arrival offset ({})", i,
                                    format_duration(arrivals[i])));
    }
    if (i > 0 && arrivals[i] < arrivals[i - 1]) {
      throw ConfigError(fmt::format(
          "timed arrivals are not in time order: request {} arrives at {}, before request {} at {}; sort the "
          "trace by timestamp",
          i, format_duration(arrivals[i]), i - 1, format_duration(arrivals[i - 1])));
    }
  }
  Schedule s;
  s.warmup_requests = count_warmup(arrivals, warmup);
  s.arrivals = std::move(arrivals);
  return s;
}

Schedule build_schedule(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_arrivals) {
  Schedule s;
  if (cfg.kind == ScenarioKind::kOffline) {
    const std::int64_t n = cfg.warmup.requests + cfg.num_requests.value_or(0);
    s.arrivals.assign(static_cast<std::size_t>(n), Nanos(0));
    s.warmup_requests = cfg.warmup.requests;
    return s;
  }
  if (cfg.kind != ScenarioKind::kServer) return s;

  if (timed_arrivals != nullptr || cfg.timed_arrivals) {
    if (timed_arrivals == nullptr) {
      throw ConfigError("the scenario replays timed arrivals, but the workload gave none (internal error)");
    }
    s = schedule_from_arrivals(*timed_arrivals, cfg.warmup);
    // Keep the measured part within --num-requests and the window, as for generated arrivals.
    std::size_t keep = static_cast<std::size_t>(s.warmup_requests);
    std::int64_t measured = 0;
    std::optional<Nanos> window_start;
    for (std::size_t i = keep; i < s.arrivals.size(); ++i) {
      const Nanos t = s.arrivals[i];
      if (!window_start) window_start = cfg.warmup.by_time() ? cfg.warmup.duration : t;
      if (cfg.duration && t > *window_start + *cfg.duration) break;
      if (cfg.num_requests && measured >= *cfg.num_requests) break;
      ++measured;
      keep = i + 1;
    }
    s.arrivals.resize(keep);
    return s;
  }

  // Server: the configured process at request_rate, with its ramp.
  ArrivalStream stream(cfg.arrivals, cfg.request_rate, arrival_seed(cfg.seed));
  std::int64_t measured = 0;
  std::optional<Nanos> window_start;
  while (true) {
    const Nanos t = stream.next();
    const auto i = static_cast<std::int64_t>(s.arrivals.size());
    if (i >= kMaxScheduledRequests) {
      throw ConfigError(fmt::format("the schedule would exceed {} requests: lower --request-rate, --duration or "
                                    "--num-requests", kMaxScheduledRequests));
    }
    const bool warm = cfg.warmup.by_time() ? t < cfg.warmup.duration : i < cfg.warmup.requests;
    if (warm) {
      s.arrivals.push_back(t);
      ++s.warmup_requests;
      continue;
    }
    if (!window_start) window_start = cfg.warmup.by_time() ? cfg.warmup.duration : t;
    if (cfg.duration && t > *window_start + *cfg.duration) break;
    s.arrivals.push_back(t);
    ++measured;
    if (cfg.num_requests && measured >= *cfg.num_requests) break;
  }
  return s;
}

}  // namespace llmload
