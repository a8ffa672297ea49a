// `llmload merge`: the shards of one run into the artifact one process would have written. The
// shards are checked to be one run's; histograms added exactly; counts, throughput and SLO
// verdicts recomputed with the single-run rules over every shard's records (read one at a time:
// records_from_jsonl.cpp); stragglers flagged in a per-shard breakdown.
#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/client_cpu.hpp"
#include "json_path.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "llmload/analysis/report.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

using nlohmann::json;


// Conditions every shard of one run shares: a difference is an error.
constexpr const char* kMustMatch[] = {
    "conditions.scenario",          "conditions.seeds",         "conditions.endpoint",
    "conditions.model",             "conditions.workload",      "conditions.prompts.method",
    "conditions.prompts.overhead_tokens", "conditions.prompts.vocabulary_words", "conditions.tool.name",
    "conditions.tool.version",      "conditions.definitions",   "conditions.shard.count",
    "conditions.shard.start_at",    "conditions.shard.rule",    "validity.checked",
    "slo.spec",                     "slo.view",                 "validity.max_error_rate",
    "minimums.percentiles",         "minimums.min_duration_s",  "minimums.min_requests",
    "minimums.max_duration_s",
};

std::string brief(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

// The first path at which a and b differ, with both values there; nullopt when equal.
struct Difference {
  std::string path;
  json a;
  json b;
};
std::optional<Difference> first_difference(const json& a, const json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      const json va = a.contains(k) ? a[k] : json("(missing)");
      const json vb = b.contains(k) ? b[k] : json("(missing)");
      if (auto d = first_difference(va, vb, path + "." + k)) return d;
    }
    return std::nullopt;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (auto d = first_difference(a[i], b[i], fmt::format("{}[{}]", path, i))) return d;
    }
    return std::nullopt;
  }
  // Numbers compare by value (a JSON round trip may turn 10.0 into 10).
  if (a.is_number() && b.is_number() && a.get<double>() == b.get<double>()) return std::nullopt;
  if (a == b) return std::nullopt;
  return Difference{path, a, b};
}

double number_or(const json& j, double fallback) { return j.is_number() ? j.get<double>() : fallback; }


// Where each metric's summary lives in result.json.
const json& stats_of(const json& result, Metric m) {
  switch (m) {
    case Metric::kTtftRt: return json_path::at_path(result, "response_time.ttft");
    case Metric::kE2eRt: return json_path::at_path(result, "response_time.e2e");
    case Metric::kTtfoRt: return json_path::at_path(result, "response_time.ttfo");
    case Metric::kScheduleLag: return json_path::at_path(result, "schedule_lag");
    default: return json_path::at_path(result, "latency." + std::string(metric_name(m)));
  }
}


struct Shard {
  const ShardArtifact* artifact = nullptr;
  std::int64_t index = 0;
  std::size_t count = 0;  // its records
  bool measured = false;  // issued at least one measured request (its window is meaningful)
};

// Checks that the artifacts are the complete, consistent set of one run; returns them by index.
std::vector<Shard> check_shards(const std::vector<ShardArtifact>& artifacts) {
  if (artifacts.empty()) throw MergeError("nothing to merge: give the directories of every shard of one run");
  std::vector<Shard> shards;
  std::int64_t count = -1;
  std::string count_from;
  std::map<std::int64_t, std::string> seen;
  for (const auto& a : artifacts) {
    if (!a.result.is_object()) throw MergeError(fmt::format("'{}': result.json is not a JSON object", a.name));
    const json& sh = json_path::at_path(a.result, "conditions.shard");
    if (!sh.is_object() || !sh.value("index", json()).is_number_integer() ||
        !sh.value("count", json()).is_number_integer()) {
      throw MergeError(fmt::format("'{}' is not a shard artifact: its result.json has no conditions.shard (it was not "
                                   "run with --shard-count N); merge the directories written by the shards of one run",
                                   a.name));
    }
    const auto idx = sh["index"].get<std::int64_t>();
    const auto n = sh["count"].get<std::int64_t>();
    if (count < 0) {
      count = n;
      count_from = a.name;
    } else if (n != count) {
      throw MergeError(fmt::format("'{}' is a shard of {} but '{}' a shard of {}: merge only the shards of one run",
                                   a.name, n, count_from, count));
    }
    if (n < 1 || idx < 0 || idx >= n) {
      throw MergeError(fmt::format("'{}': conditions.shard says shard {} of {}, which does not exist", a.name, idx, n));
    }
    if (auto it = seen.find(idx); it != seen.end()) {
      throw MergeError(fmt::format("'{}' and '{}' are both shard {} of {}: give each shard's directory once",
                                   it->second, a.name, idx, n));
    }
    seen.emplace(idx, a.name);
    shards.push_back(Shard{&a, idx, 0, false});
  }
  std::vector<std::string> missing;
  for (std::int64_t i = 0; i < count; ++i) {
    if (!seen.count(i)) missing.push_back(std::to_string(i));
  }
  if (!missing.empty()) {
    throw MergeError(
        fmt::format("shard{} {} of {} {} missing: pass the directory of every shard of the run (each shard "
                    "writes its own; a shard that failed must be run again)",
                    missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), count, missing.size() > 1 ? "are" : "is"));
  }
  std::sort(shards.begin(), shards.end(), [](const Shard& x, const Shard& y) { return x.index < y.index; });
  const json& ref = shards.front().artifact->result;
  for (const auto& s : shards) {
    for (const char* field : kMustMatch) {
      if (auto d =
              first_difference(json_path::at_path(ref, field), json_path::at_path(s.artifact->result, field), field)) {
        throw MergeError(
            fmt::format("shards disagree on {}: shard {} ('{}') has {}, shard {} ('{}') has {}; merge only "
                        "the shards of one run (the same flags with --shard-index 0..{} and one "
                        "--start-at)",
                        d->path, shards.front().index, shards.front().artifact->name, brief(d->a), s.index,
                        s.artifact->name, brief(d->b), count - 1));
      }
    }
  }
  return shards;
}

// Reads the records of a shard.
// Reads the records of a shard once: counts them and checks every line.
void load_records(Shard& s) {
  const MergedRecords one(std::vector<const ShardArtifact*>{s.artifact});
  for (const auto& r : RecordRange(one)) {
    ++s.count;
    if (!r.warmup) s.measured = true;
  }
  const json& issued = json_path::at_path(s.artifact->result, "requests.issued");
  if (issued.is_number_integer() && issued.get<std::int64_t>() != static_cast<std::int64_t>(s.count)) {
    throw MergeError(fmt::format("'{}': requests.jsonl has {} records but result.json counts {} requests: the artifact "
                                 "is incomplete (was it copied while being written?)",
                                 s.artifact->name, s.count, issued.get<std::int64_t>()));
  }
}

// TTFO (issue 19) came after the other tags: a shard written before it has none, which is an
// empty histogram (its records have no t_first_output either).
bool optional_tag(Metric m) { return m == Metric::kTtfo || m == Metric::kTtfoRt; }

const HdrHistogram& shard_histogram(const Shard& s, Metric m) {
  for (const auto& in : s.artifact->hlog.intervals) {
    if (in.tag && *in.tag == metric_name(m)) return in.histogram;
  }
  static const HdrHistogram kEmpty(1, kHighestUs, 3);
  if (optional_tag(m)) return kEmpty;
  throw MergeError(fmt::format("'{}': latency.hlog has no '{}' histogram: the artifact is incomplete or from another "
                               "version of llmload",
                               s.artifact->name, metric_name(m)));
}

std::int64_t int_at(const json& j, std::string_view path) {
  const json& v = json_path::at_path(j, path);
  return v.is_number() ? v.get<std::int64_t>() : 0;
}

}  // namespace

namespace {

// Each metric's histogram (the shards' added exactly) and its summary, the mean and SD pooled from
// each shard's exact moments.
struct MergedLatency {
  std::map<Metric, HdrHistogram> hist;
  std::map<Metric, LatencyStats> latency;
};

MergedLatency merge_latency(const std::vector<Shard>& shards) {
  MergedLatency out;
  for (Metric m : kAllMetrics) {
    HdrHistogram h(1, kHighestUs, 3);
    double n = 0;
    double sum = 0;
    for (const auto& s : shards) {
      const HdrHistogram& part = shard_histogram(s, m);
      if (h.add(part) != 0) {
        throw MergeError(
            fmt::format("'{}': the '{}' histogram holds values above one hour, beyond llmload's histograms",
                        s.artifact->name, metric_name(m)));
      }
      const json& st = stats_of(s.artifact->result, m);
      const double c = number_or(json_path::at_path(st, "count"), 0);
      n += c;
      sum += c * number_or(json_path::at_path(st, "mean_ms"), 0) * 1e3;
    }
    const double mean = n > 0 ? sum / n : 0;
    double m2 = 0;
    for (const auto& s : shards) {
      const json& st = stats_of(s.artifact->result, m);
      const double c = number_or(json_path::at_path(st, "count"), 0);
      const double mu = number_or(json_path::at_path(st, "mean_ms"), 0) * 1e3;
      const double sd = number_or(json_path::at_path(st, "std_ms"), 0) * 1e3;
      m2 += c * (sd * sd + (mu - mean) * (mu - mean));
    }
    out.latency.emplace(m, summarize_latency(h, mean, n > 0 ? std::sqrt(m2 / n) : 0, n));
    out.hist.emplace(m, std::move(h));
  }
  return out;
}

// The window: every shard's, as offsets from the common start.
Window merged_window(const std::vector<Shard>& shards) {
  Window window;
  bool any_window = false;
  for (const auto& s : shards) {
    if (!s.measured) continue;
    const Nanos ws = json_path::from_s(number_or(json_path::at_path(s.artifact->result, "window.start_s"), 0));
    const Nanos we = json_path::from_s(number_or(json_path::at_path(s.artifact->result, "window.end_s"), 0));
    window.start = any_window ? std::min(window.start, ws) : ws;
    window.end = any_window ? std::max(window.end, we) : we;
    any_window = true;
  }
  window.method = any_window ? "the shards' windows together: from the earliest shard's window start to the latest "
                               "shard's end (offsets from the common start)"
                             : "no measured request was issued";
  if (window.end < window.start) window.end = window.start;
  return window;
}

// The merged run is judged as one run: the validity settings the shards ran with (the same in
// every shard: one command line), now with the sample checks and minimums a shard leaves to it.
ValidityOptions merged_validity(const json& ref, const std::vector<Shard>& shards) {
  ValidityOptions validity;
  validity.max_error_rate = number_or(json_path::at_path(ref, "validity.max_error_rate"), validity.max_error_rate);
  if (const json& ps = json_path::at_path(ref, "minimums.percentiles"); ps.is_array()) {
    for (const auto& p : ps) {
      if (p.is_number()) validity.percentiles.push_back(p.get<double>());
    }
  }
  if (const json& v = json_path::at_path(ref, "minimums.min_duration_s"); v.is_number())
    validity.min_duration = json_path::from_s(v.get<double>());
  if (const json& v = json_path::at_path(ref, "minimums.min_requests"); v.is_number_integer()) {
    validity.min_requests = v.get<std::int64_t>();
  }
  if (const json& v = json_path::at_path(ref, "minimums.max_duration_s"); v.is_number())
    validity.max_duration = json_path::from_s(v.get<double>());
  for (const auto& s : shards) {
    if (json_path::at_path(s.artifact->result, "minimums.max_duration_reached") == true)
      validity.max_duration_reached = true;
  }
  validity.check_samples = true;
  return validity;
}

// The SLO's verdicts judged again with the merged histograms (a shard's verdict judged its part).
void rejudge_slo(RunMetrics& m) {
  if (!m.slo) return;
  const bool rt = m.slo->view == LatencyView::kResponse;
  for (auto& v : m.slo->metrics) {
    const Metric hm = v.metric == "tpot"   ? Metric::kTpot
                      : v.metric == "ttft" ? (rt ? Metric::kTtftRt : Metric::kTtft)
                      : v.metric == "ttfo" ? (rt ? Metric::kTtfoRt : Metric::kTtfo)
                                           : (rt ? Metric::kE2eRt : Metric::kE2e);
    decide_verdict(v, m.histograms.at(hm), m.slo->spec.percentile);
  }
  bool any_fail = false;
  bool all_pass = !m.slo->metrics.empty();
  for (const auto& v : m.slo->metrics) {
    any_fail = any_fail || v.verdict == Verdict::kFail;
    all_pass = all_pass && v.verdict == Verdict::kPass;
  }
  m.slo->verdict = any_fail ? Verdict::kFail : (all_pass ? Verdict::kPass : Verdict::kInconclusive);
}

// Counts, errors, throughput, achieved load and SLO attainment: the single-run rules over all
// records (an accumulator without samples: its latency parts are replaced below).
RunMetrics merged_metrics(const std::vector<Shard>& shards, const Window& window, MergedLatency latency) {
  const json& ref = shards.front().artifact->result;
  std::vector<const ShardArtifact*> in_order;
  for (const auto& s : shards) in_order.push_back(s.artifact);
  const MergedRecords all(in_order);
  const bool open_loop = json_path::at_path(ref, "validity.checked").is_boolean() &&
                         json_path::at_path(ref, "validity.checked").get<bool>();
  std::optional<SloSpec> slo;
  LatencyView view = LatencyView::kService;
  if (const json& spec = json_path::at_path(ref, "slo.spec"); spec.is_string()) {
    try {
      slo = parse_slo(spec.get<std::string>());
    } catch (const SloParseError& e) {
      throw MergeError(fmt::format("'{}': slo.spec '{}' cannot be read: {}", shards.front().artifact->name,
                                   spec.get<std::string>(), e.what()));
    }
    view = json_path::at_path(ref, "slo.view") == "response" ? LatencyView::kResponse : LatencyView::kService;
  }
  const ValidityOptions validity = merged_validity(ref, shards);
  RunMetrics m = MetricsAccumulator().finalize(window, open_loop, slo, view, RecordRange(all), validity);
  m.latency = std::move(latency.latency);
  m.histograms = std::move(latency.hist);
  // Output tokens: each shard counted those arriving in its own window (which lies in the merged one).
  m.output_tokens_in_window = 0;
  for (const auto& s : shards) {
    m.output_tokens_in_window +=
        number_or(json_path::at_path(s.artifact->result, "tokens.output_tokens_arriving_in_window"), 0);
  }
  const double len = to_seconds(window.length());
  if (len > 0) {
    m.output_throughput = m.output_tokens_in_window / len;
    m.total_token_throughput += m.output_tokens_in_window / len;  // finalize() counted the input tokens only
  }
  rejudge_slo(m);
  return m;
}

// The per-shard breakdown, with stragglers flagged. A shard's drain is the time from its last
// measured intended start to its last measured completion: unlike the completion time itself it
// does not depend on which shard the partition dealt the run's last requests to.
json shard_breakdown(const std::vector<Shard>& shards, double len, std::vector<std::string>& notes) {
  const auto n_shards = static_cast<std::int64_t>(shards.size());
  std::vector<double> last_done(shards.size(), 0);
  std::vector<double> drain(shards.size(), 0);
  std::vector<double> measured_drains;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    std::optional<Nanos> last;
    std::optional<Nanos> last_intended;
    const MergedRecords one(std::vector<const ShardArtifact*>{shards[i].artifact});
    for (const auto& r : RecordRange(one)) {
      if (r.warmup) continue;
      if (r.t_done && (!last || *r.t_done > *last)) last = r.t_done;
      if (!last_intended || r.t_intended > *last_intended) last_intended = r.t_intended;
    }
    last_done[i] = last ? to_seconds(*last) : 0;
    drain[i] = last && last_intended ? to_seconds(*last - *last_intended) : 0;
    if (shards[i].measured) measured_drains.push_back(drain[i]);
  }
  std::sort(measured_drains.begin(), measured_drains.end());
  const double median_drain = measured_drains.empty() ? 0 : measured_drains[measured_drains.size() / 2];
  const double late_margin = std::max(0.1 * len, 0.1);
  json breakdown = json::array();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto& s = shards[i];
    const json& r = s.artifact->result;
    std::vector<std::string> flags;
    const json& skew = json_path::at_path(r, "conditions.shard.start_skew_ms");
    if (skew.is_number() && std::fabs(skew.get<double>()) > 10.0) {
      flags.push_back(fmt::format("started {:.1f} ms {} --start-at (on its own system clock)",
                                  std::fabs(skew.get<double>()), skew.get<double>() > 0 ? "after" : "before"));
    }
    if (s.measured && n_shards > 1 && drain[i] > median_drain + late_margin) {
      flags.push_back(fmt::format("finished {:.2f} s after its last scheduled request, {:.2f} s later than the median "
                                  "shard (last measured request done at {:.2f} s)",
                                  drain[i], drain[i] - median_drain, last_done[i]));
    }
    if (json_path::at_path(r, "validity.valid") == false) {
      flags.push_back(
          fmt::format("INVALID on its own: {}", json_path::at_path(r, "validity.reason").is_string()
                                                    ? json_path::at_path(r, "validity.reason").get<std::string>()
                                                    : std::string("marked invalid")));
    }
    if (json_path::at_path(r, "interrupted") == true) flags.push_back("interrupted before the end of its run");
    if (!s.measured) flags.push_back("issued no measured request");
    for (const auto& f : flags) notes.push_back(fmt::format("shard {} ('{}'): {}", s.index, s.artifact->name, f));
    breakdown.push_back({
        {"shard", s.index},
        {"directory", s.artifact->name},
        {"hostname", json_path::at_path(r, "conditions.machine.hostname")},
        {"start_time", json_path::at_path(r, "conditions.start_time")},
        {"start_skew_ms", skew},
        {"window", r.value("window", json())},
        {"requests", r.value("requests", json())},
        {"completed", r.value("completed", json())},
        {"failed", r.value("failed", json())},
        {"request_throughput", r.value("request_throughput", json())},
        {"output_throughput", r.value("output_throughput", json())},
        {"achieved_send_rate", json_path::at_path(r, "load.achieved_send_rate")},
        {"ttft_p50_ms", json_path::at_path(r, "latency.ttft.p50_ms")},
        {"ttft_p99_ms", json_path::at_path(r, "latency.ttft.p99_ms")},
        {"e2e_p99_ms", json_path::at_path(r, "latency.e2e.p99_ms")},
        {"ttft_rt_p99_ms", json_path::at_path(r, "response_time.ttft.p99_ms")},
        {"ttfo_p99_ms", json_path::at_path(r, "latency.ttfo.p99_ms")},
        {"schedule_lag_p99_ms", json_path::at_path(r, "schedule_lag.p99_ms")},
        {"late_fraction", json_path::at_path(r, "schedule_lag.late_fraction")},
        {"valid", json_path::at_path(r, "validity.valid")},
        {"interrupted", r.value("interrupted", json())},
        {"client_core_share", json_path::at_path(r, "client_cpu.core_share")},
        {"last_completion_s", s.measured ? json(last_done[i]) : json(nullptr)},
        {"drain_s", s.measured ? json(drain[i]) : json(nullptr)},
        {"straggler", !flags.empty()},
        {"flags", flags},
    });
  }
  return breakdown;
}

// Harmless differences worth knowing.
void note_harmless_differences(const std::vector<Shard>& shards, const json& ref, std::vector<std::string>& notes) {
  const auto n_shards = static_cast<std::int64_t>(shards.size());
  std::set<std::string> builds;
  for (const auto& s : shards) builds.insert(brief(json_path::at_path(s.artifact->result, "conditions.tool")));
  if (builds.size() > 1) {
    notes.push_back(fmt::format("the shards ran different builds of llmload {} (build type or compiler differ)",
                                brief(json_path::at_path(ref, "conditions.tool.version"))));
  }
  if (json_path::at_path(ref, "conditions.shard.start_at").is_null() && n_shards > 1) {
    notes.push_back("the shards had no common --start-at: their windows line up only as well as they happened to "
                    "start together");
  }
}

// Start time: the common --start-at, else the earliest shard start.
double merged_start_epoch(const std::vector<Shard>& shards, const json& ref) {
  double start = number_or(json_path::at_path(ref, "conditions.shard.start_at_epoch_s"), 0);
  if (start == 0) {
    bool first = true;
    for (const auto& s : shards) {
      const json& e = json_path::at_path(s.artifact->result, "conditions.start_epoch_s");
      if (e.is_number() && (first || e.get<double>() < start)) {
        start = e.get<double>();
        first = false;
      }
    }
  }
  return start;
}

// Token accounting: sums over the shards (estimated when any shard's was).
json merged_tokens(json tokens, const std::vector<Shard>& shards, const json& ref) {
  const char* sums[] = {"requests",        "requests_with_server_usage", "requested_input_tokens",
                        "input_tokens",    "requested_output_tokens",    "output_tokens",
                        "ended_early"};
  for (const char* k : sums) {
    std::int64_t total = 0;
    for (const auto& s : shards) total += int_at(s.artifact->result, std::string("tokens.") + k);
    tokens[k] = total;
  }
  for (const char* k : {"server_counted_input_tokens", "requested_input_tokens_of_those"}) {
    bool any = false;
    std::int64_t total = 0;
    for (const auto& s : shards) {
      const json& v = json_path::at_path(s.artifact->result, std::string("tokens.") + k);
      if (v.is_number()) {
        any = true;
        total += v.get<std::int64_t>();
      }
    }
    tokens[k] = any ? json(total) : json(nullptr);
  }
  bool estimated = false;
  for (const auto& s : shards)
    estimated = estimated || json_path::at_path(s.artifact->result, "tokens.estimated") == true;
  tokens["estimated"] = estimated;
  if (const json& em = json_path::at_path(ref, "tokens.estimate_method"); !em.is_null()) tokens["estimate_method"] = em;
  return tokens;
}

// The conditions: the shards' (the same but for these), with every shard's command line and
// machine, and the common start.
json merged_conditions(const std::vector<Shard>& shards, const json& ref, double start_epoch_s) {
  const auto n_shards = static_cast<std::int64_t>(shards.size());
  json cond = json_path::at_path(ref, "conditions");
  json command_lines = json::array();
  json machines = json::array();
  for (const auto& s : shards) {
    command_lines.push_back(json_path::at_path(s.artifact->result, "conditions.command_line"));
    json mach = json_path::at_path(s.artifact->result, "conditions.machine");
    if (mach.is_object()) mach["shard"] = s.index;
    machines.push_back(mach);
  }
  cond["command_line"] = command_lines;
  cond["machine"] = machines;
  const json& start_at = json_path::at_path(ref, "conditions.shard.start_at");
  cond["start_time"] = start_at.is_string() ? start_at : json_path::at_path(ref, "conditions.start_time");
  cond["start_epoch_s"] = start_epoch_s;
  cond["shard"] = {{"merged", true},
                   {"count", n_shards},
                   {"start_at", start_at},
                   {"start_at_epoch_s", json_path::at_path(ref, "conditions.shard.start_at_epoch_s")},
                   {"rule", json_path::at_path(ref, "conditions.shard.rule")},
                   {"partition", json_path::at_path(ref, "conditions.shard.partition")}};
  return cond;
}

// The shards' client CPU: their processes' sums, the longest wall time, and as `core_share` the
// busiest shard's (near 1: that process was the bottleneck, as for a single run); `cores_used`
// is all of it over the wall time. Null unless every shard measured it.
json merged_client_cpu(const std::vector<Shard>& shards, std::int64_t requests) {
  double user = 0;
  double system = 0;
  double wall = 0;
  double busiest = 0;
  bool any = false;
  for (const auto& s : shards) {
    const json c = json_path::at_path(s.artifact->result, "client_cpu");
    // Only the whole of it: a shard without it (rebuilt after a kill) leaves the sum unknown.
    if (!c.is_object() || !c.value("user_s", json()).is_number() || !c.value("system_s", json()).is_number()) {
      return nullptr;
    }
    any = true;
    user += c["user_s"].get<double>();
    system += c["system_s"].get<double>();
    if (c.value("wall_s", json()).is_number()) wall = std::max(wall, c["wall_s"].get<double>());
    if (c.value("core_share", json()).is_number()) busiest = std::max(busiest, c["core_share"].get<double>());
  }
  if (!any) return nullptr;
  json c = client_cpu_json(user, system, wall, requests,
                           "the shards' processes (each from its first release to its last response): user_s and "
                           "system_s their sums, wall_s the longest, core_share the busiest shard's, cores_used all "
                           "of it over wall_s");
  c["cores_used"] = c["core_share"];  // the whole's share of one core
  c["core_share"] = busiest;          // what says whether a client process was the bottleneck
  return c;
}

// The merged result.json.
json merged_result(const RunMetrics& m, const std::vector<Shard>& shards, const json& ref, const Window& window,
                   const json& breakdown, double start_epoch_s, const std::vector<std::string>& notes) {
  const auto n_shards = static_cast<std::int64_t>(shards.size());
  json res = metrics_json(m);
  res["conditions"] = merged_conditions(shards, ref, start_epoch_s);
  res["tokens"] = merged_tokens(res["tokens"], shards, ref);
  res["load"]["offered_rate"] = json_path::at_path(ref, "load.offered_rate");
  res["load"]["offered_concurrency"] = json_path::at_path(ref, "load.offered_concurrency");
  res["load"]["measured_from"] = "t_send of the measured requests of every shard, as offsets from the common start";
  bool interrupted = false;
  std::int64_t max_in_flight = 0;
  std::int64_t connections = 0;
  for (const auto& s : shards) {
    interrupted = interrupted || json_path::at_path(s.artifact->result, "interrupted") == true;
    max_in_flight += int_at(s.artifact->result, "max_in_flight");
    connections += int_at(s.artifact->result, "connections_opened");
  }
  res["interrupted"] = interrupted;
  res["client_cpu"] = merged_client_cpu(shards, m.requests);
  res["max_in_flight"] = max_in_flight;
  res["max_in_flight_note"] = "the sum of the shards' maxima (an upper bound of the run's)";
  res["connections_opened"] = connections;
  res["non_streaming_note"] = json_path::at_path(ref, "non_streaming_note");
  res["shards"] = breakdown;
  res["merge"] = {
      {"shards", n_shards},
      {"histograms", "each metric's shard histograms added exactly (HdrHistogram, same layout): percentiles as from "
                     "one histogram of every request; means and SDs pooled exactly"},
      {"counts", "recomputed from every shard's requests.jsonl with the single-run rules"},
      {"window", window.method},
      {"output_tokens", "the sum of the output tokens each shard saw arrive in its own window"},
      {"clocks", "each shard measured on its own monotonic clock from its own start at the common start time; no "
                 "timestamps of different machines are subtracted"},
      {"notes", notes},
  };
  return res;
}

// The console report, with the shard table.
std::string merged_console(const RunMetrics& m, const json& ref, const std::vector<Shard>& shards,
                           const json& breakdown, const std::vector<std::string>& notes) {
  const auto n_shards = static_cast<std::int64_t>(shards.size());
  const std::string title = fmt::format("llmload {} | {} | merged {} shards",
                                        json_path::at_path(ref, "conditions.scenario.scenario").is_string()
                                            ? json_path::at_path(ref, "conditions.scenario.scenario").get<std::string>()
                                            : "run",
                                        json_path::at_path(ref, "conditions.model").is_string()
                                            ? json_path::at_path(ref, "conditions.model").get<std::string>()
                                            : "",
                                        n_shards);
  std::string o = console_report(m, title);
  o += fmt::format("{:-^78}\n", " Shards ");
  o += fmt::format("{:<6}{:>11}{:>8}{:>9}{:>9}{:>10}{:>10}{:>10}{:>12}{:>10}\n", "shard", "completed", "failed",
                   "req/s", "send/s", "TTFT p50", "TTFT p99", "E2E p99", "last done s", "skew ms");
  auto num = [](const json& v, const char* fmtstr) -> std::string {
    return v.is_number() ? fmt::format(fmt::runtime(fmtstr), v.get<double>()) : std::string("-");
  };
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const json& b = breakdown[i];
    o += fmt::format("{:<6}{:>11}{:>8}{:>9}{:>9}{:>10}{:>10}{:>10}{:>12}{:>10}{}\n", shards[i].index,
                     num(b["completed"], "{:.0f}"), num(b["failed"], "{:.0f}"), num(b["request_throughput"], "{:.2f}"),
                     num(b["achieved_send_rate"], "{:.2f}"), num(b["ttft_p50_ms"], "{:.2f}"),
                     num(b["ttft_p99_ms"], "{:.2f}"), num(b["e2e_p99_ms"], "{:.2f}"),
                     num(b["last_completion_s"], "{:.3f}"), num(b["start_skew_ms"], "{:.2f}"),
                     b["straggler"].get<bool>() ? "  <- see NOTE" : "");
  }
  for (const auto& note : notes) o += "NOTE: " + note + "\n";
  // The shards' note of a run without streaming (TPOT and ITL not measured), as a single run says.
  if (const json& ns = json_path::at_path(ref, "non_streaming_note"); ns.is_string()) {
    o += "NOTE: " + ns.get<std::string>() + "\n";
  }
  o += std::string(78, '=') + "\n";
  const bool interrupted = std::any_of(shards.begin(), shards.end(), [](const Shard& s) {
    return json_path::at_path(s.artifact->result, "interrupted") == true;
  });
  if (interrupted) o += kRunInterruptedLine;
  return o;
}

}  // namespace

void check_shard_set(const std::vector<ShardArtifact>& artifacts) { check_shards(artifacts); }

MergedArtifact merge_artifacts(const std::vector<ShardArtifact>& artifacts) {
  std::vector<Shard> shards = check_shards(artifacts);
  for (auto& s : shards) load_records(s);
  const json& ref = shards.front().artifact->result;
  const Window window = merged_window(shards);
  RunMetrics m = merged_metrics(shards, window, merge_latency(shards));
  // A shard stopped early (--max-duration, an early stop): so was the run, said as one run says it.
  for (const auto& s : shards) {
    const json stop = json_path::at_path(s.artifact->result, "stopped_early");
    if (!m.stopped_early && stop.is_object() && stop.value("reason", json()).is_string()) {
      m.stopped_early = fmt::format("shard {}: {}", s.index, stop["reason"].get<std::string>());
    }
  }
  MergedArtifact out;
  const json breakdown = shard_breakdown(shards, to_seconds(window.length()), out.notes);
  note_harmless_differences(shards, ref, out.notes);
  out.start_epoch_s = merged_start_epoch(shards, ref);
  out.result = merged_result(m, shards, ref, window, breakdown, out.start_epoch_s, out.notes);
  for (const auto& s : shards) out.record_count += static_cast<std::int64_t>(s.count);
  out.console = merged_console(m, ref, shards, breakdown, out.notes);
  out.metrics = std::move(m);
  return out;
}

}  // namespace llmload::analysis
