#include "llmload/analysis/slo.hpp"

#include <cctype>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "llmload/common/duration.hpp"

namespace llmload::analysis {

std::string_view to_string(LatencyView v) { return v == LatencyView::kService ? "service" : "response"; }

std::string SloSpec::to_string() const {
  std::vector<std::string> parts;
  auto ms = [](Nanos d) { return fmt::format("{:g}ms", static_cast<double>(d.count()) / 1e6); };
  if (ttft) parts.push_back("ttft:" + ms(*ttft));
  if (ttfo) parts.push_back("ttfo:" + ms(*ttfo));
  if (tpot) parts.push_back("tpot:" + ms(*tpot));
  if (e2e) parts.push_back("e2e:" + ms(*e2e));
  if (min_accuracy) parts.push_back(fmt::format("accuracy:{:g}", *min_accuracy));
  if (!empty()) parts.push_back(fmt::format("p{:g}", percentile));
  return fmt::format("{}", fmt::join(parts, ","));
}

namespace {

// "0.95" or "95%": a fraction in (0, 1].
double parse_accuracy_bound(std::string_view value, std::string_view item) {
  const bool percent = !value.empty() && value.back() == '%';
  if (percent) value.remove_suffix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (percent) v /= 100.0;
  if (ec != std::errc() || ptr != value.data() + value.size() || !(v > 0 && v <= 1)) {
    throw SloParseError(fmt::format("bad accuracy bound in SLO item '{}': give the minimum accuracy as a fraction "
                                    "in (0, 1] or a percentage, e.g. accuracy:0.95 or accuracy:95%",
                                    item));
  }
  return v;
}

}  // namespace

SloSpec parse_slo(std::string_view text) {
  SloSpec slo;
  const std::string hint = "expected e.g. 'ttft:2000ms,tpot:200ms' or 'ttft:500ms,tpot:50ms,e2e:10s,p99'";
  std::vector<std::string_view> items;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ',' || text[i] == ' ')) ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ',' && text[j] != ' ') ++j;
    if (j > i) items.push_back(text.substr(i, j - i));
    i = j;
  }
  if (items.empty()) throw SloParseError("empty SLO: " + hint);
  bool any_bound = false;
  for (auto item : items) {
    auto colon = item.find(':');
    std::string_view key = item.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : item.substr(colon + 1);
    if (colon == std::string_view::npos && !key.empty() && key.front() == 'p') {
      value = key.substr(1);
      key = "p";
    }
    if (key == "p" || key == "percentile") {
      double p = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (ec != std::errc() || ptr != value.data() + value.size() || !(p > 0 && p < 100)) {
        throw SloParseError(fmt::format("bad SLO percentile '{}': give a number between 0 and 100, e.g. p99", item));
      }
      slo.percentile = p;
      continue;
    }
    if (value.empty()) throw SloParseError(fmt::format("SLO item '{}' has no bound: {}", item, hint));
    if (key == "accuracy") {
      slo.min_accuracy = parse_accuracy_bound(value, item);
      any_bound = true;
      continue;
    }
    Nanos bound;
    try {
      bound = parse_duration(value, "ms");
    } catch (const DurationParseError&) {
      throw SloParseError(fmt::format("bad bound '{}' in SLO item '{}': give a duration such as 200ms or 2s", value, item));
    }
    if (bound.count() <= 0) throw SloParseError(fmt::format("SLO bound in '{}' must be positive", item));
    if (key == "ttft") {
      slo.ttft = bound;
    } else if (key == "ttfo") {
      slo.ttfo = bound;
    } else if (key == "tpot") {
      slo.tpot = bound;
    } else if (key == "e2e" || key == "e2el") {
      slo.e2e = bound;
    } else {
      throw SloParseError(fmt::format("unknown SLO metric '{}': use ttft, tpot, e2e or accuracy, or ttfo (the first "
                                      "output token after any reasoning) ({})",
                                      key, hint));
    }
    any_bound = true;
  }
  if (!any_bound) throw SloParseError("SLO has a percentile but no bound: " + hint);
  return slo;
}

SloExceedance slo_exceedance(const RequestRecord& r, const SloSpec& slo, LatencyView view) {
  const bool rt = view == LatencyView::kResponse;
  const bool ok = r.ok();
  SloExceedance x;
  if (slo.ttft) {
    const auto v = rt ? r.ttft_rt() : r.ttft();
    x.ttft = !ok || !v || *v > *slo.ttft;
  }
  if (slo.ttfo) {
    const auto v = rt ? r.ttfo_rt() : r.ttfo();
    x.ttfo = !ok || !v || *v > *slo.ttfo;
  }
  if (slo.tpot) {
    const auto v = r.tpot();
    x.tpot = !ok || (v && *v > *slo.tpot);
  }
  if (slo.e2e) {
    const auto v = rt ? r.e2e_rt() : r.e2e();
    x.e2e = !ok || !v || *v > *slo.e2e;
  }
  return x;
}

SloJudgement judge_request(const RequestRecord& r, const SloSpec& slo, LatencyView view) {
  SloJudgement j;
  if (r.error != ErrorClass::kStoppedEarly) {
    j.over = slo_exceedance(r, slo, view);
    // An answer of several tokens whose time between them was not observed (they came at once,
    // through a buffering proxy): no TPOT to judge, so not in its population (it was a pass).
    if (slo.tpot && r.ok() && r.output_tokens >= 2 && !r.tpot()) j.unknown.tpot = true;
    return j;
  }
  const bool rt = view == LatencyView::kResponse;
  // How long it had been waiting when it was canceled, from the view's start.
  const std::optional<Nanos> start = rt ? std::optional<Nanos>(r.t_intended) : r.t_send;
  const std::optional<Nanos> waited =
      start && r.t_done ? std::optional<Nanos>(*r.t_done - *start) : std::nullopt;
  const auto passed = [&](Nanos bound) { return waited && *waited > bound; };
  // A first token (or output token) that came is judged as it is; else the bound is exceeded
  // once passed, unknown before.
  const auto first = [&](const std::optional<Nanos>& v, Nanos bound, bool& over, bool& unknown) {
    if (v) {
      over = *v > bound;
    } else {
      over = passed(bound);
      unknown = !over;
    }
  };
  if (slo.ttft) first(rt ? r.ttft_rt() : r.ttft(), *slo.ttft, j.over.ttft, j.unknown.ttft);
  if (slo.ttfo) first(rt ? r.ttfo_rt() : r.ttfo(), *slo.ttfo, j.over.ttfo, j.unknown.ttfo);
  if (slo.tpot) j.unknown.tpot = true;
  if (slo.e2e) {
    j.over.e2e = passed(*slo.e2e);
    j.unknown.e2e = !j.over.e2e;
  }
  return j;
}

bool meets_slo(const RequestRecord& r, const SloSpec& slo, LatencyView view) {
  return r.ok() && !slo_exceedance(r, slo, view).any();
}

}  // namespace llmload::analysis
