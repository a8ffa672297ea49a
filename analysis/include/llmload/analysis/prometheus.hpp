#pragma once
// The Prometheus text exposition format 0.0.4 (what vLLM, SGLang and llmload-server serve on
// GET /metrics): a parser, the arithmetic a load generator needs on it (sums over label sets,
// histogram deltas between two scrapes, histogram_quantile, means), the mapping of vLLM's and
// SGLang's metric names to a standard set of server series, and the recording of a run's scrapes
// as the "server_metrics" part of the result artifact (docs/server-metrics.md).
//
// Pure code: no I/O, no clock. The scraper (loadgen net/metrics_scraper.hpp) feeds it.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmload::analysis::prom {

// ---------------------------------------------------------------------------------------------
// The exposition

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };
std::string_view to_string(MetricType t);

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  std::string name;  // the sample's own name: "x_bucket", "x_sum", "x_total", ...
  Labels labels;     // in the order written, escapes resolved
  double value = 0;  // NaN, +Inf and -Inf are kept as such
  std::optional<std::int64_t> timestamp_ms;
  /// The value of label `key`, or nullptr.
  const std::string* label(std::string_view key) const;
};

/// A metric family: the samples under one "# TYPE" (or, without one, under one sample name).
/// A histogram family "x" holds the samples x_bucket{le=...}, x_sum and x_count; a summary "x"
/// holds x{quantile=...}, x_sum and x_count.
struct Family {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;  // escapes resolved
  std::vector<Sample> samples;
};

struct Exposition {
  std::vector<Family> families;  // in order of first appearance
  const Family* family(std::string_view name) const;
  std::size_t sample_count() const;
};

/// A malformed exposition: `line` (1-based) and what is wrong there. what() says both.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::size_t line, const std::string& message);
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

/// Parses text format 0.0.4 (lines end with '\n'; a '\r' before it is tolerated). Accepts what
/// Prometheus' own parser accepts: HELP/TYPE comments (other comments are ignored), label values
/// with the escapes \\ \" \n, an optional trailing comma in a label set, values such as 1,
/// -2.5e-3, NaN, +Inf, -Inf, an optional integer timestamp (milliseconds), blank lines. Throws
/// ParseError for anything else (an invalid name, an unterminated label value, an unknown escape,
/// a duplicate label, a missing or non-numeric value, text after the timestamp, an unknown or a
/// second TYPE for one family, a histogram bucket without a numeric `le`). Never crashes on any
/// input; linear in its size.
Exposition parse_exposition(std::string_view text);
/// The same; nullopt (and the message in *error when given) instead of the exception.
std::optional<Exposition> try_parse_exposition(std::string_view text, std::string* error = nullptr);

// ---------------------------------------------------------------------------------------------
// Arithmetic

/// Labels a sample must carry (all of them, with these values) to be counted.
using LabelMatch = std::vector<std::pair<std::string, std::string>>;

/// Sum of the values of the samples named `sample_name` (over all their label sets) that match;
/// NaN values are skipped. nullopt when no sample matches (the metric is absent).
std::optional<double> sum_samples(const Exposition& e, std::string_view sample_name, const LabelMatch& match = {});
/// Mean of the same values (for ratios such as a KV-cache usage reported per engine).
std::optional<double> mean_samples(const Exposition& e, std::string_view sample_name, const LabelMatch& match = {});

/// A histogram summed over its label sets (all but `le`): cumulative bucket counts by upper bound,
/// ascending, the last one +Inf.
struct Histogram {
  std::vector<double> le;
  std::vector<double> cumulative;
  double sum = 0;
  double count = 0;
};

/// The histogram `name` (samples name_bucket, name_sum, name_count), summed over the label sets
/// that match. nullopt when it has no bucket samples. A histogram without a +Inf bucket gets one
/// equal to _count (or to its largest bucket when _count is absent).
std::optional<Histogram> histogram(const Exposition& e, std::string_view name, const LabelMatch& match = {});

struct HistogramDelta {
  Histogram hist;      // after - before, bucket by bucket
  bool reset = false;  // a count went down (the server restarted): `hist` is `after` alone
};
/// The observations made between two scrapes. nullopt when the bucket boundaries differ.
std::optional<HistogramDelta> histogram_delta(const Histogram& before, const Histogram& after);

/// Prometheus' histogram_quantile(q, h): the bucket holding rank q×count, with linear
/// interpolation inside it (the first bucket starts at 0 when its bound is positive); a rank in
/// the +Inf bucket gives the largest finite bound. NaN for an empty histogram or one without
/// +Inf; -Inf for q < 0, +Inf for q > 1.
double histogram_quantile(double q, const Histogram& h);

/// sum / count (for a delta: Δsum / Δcount, the exact mean of the observations); nullopt when
/// count is 0.
std::optional<double> histogram_mean(const Histogram& h);

// ---------------------------------------------------------------------------------------------
// Server metrics: known names -> standard series

enum class ServerFlavor { kUnknown, kVllm, kSglang, kLlmloadServer };
std::string_view to_string(ServerFlavor f);

/// vLLM if a family starts with "vllm:", SGLang with "sglang:", else unknown. llmload-server
/// serves vLLM's names: it is recognised by its own "llmload:" families (GPU power) or by `hint`,
/// the owned_by of the server's /v1/models ("llmload"; "vllm" and "sglang" are accepted too).
ServerFlavor detect_flavor(const Exposition& e, std::string_view hint = {});

/// The standard values of one scrape. Each is nullopt when the server exports no known name for
/// it. Counts of requests and counters are summed over label sets (engines, data-parallel ranks,
/// finish reasons); the KV-cache usage (a fraction, 0..1) is the mean over them.
struct StandardValues {
  std::optional<double> running;            // vllm:num_requests_running | sglang:num_running_reqs
  std::optional<double> waiting;            // vllm:num_requests_waiting | sglang:num_queue_reqs
  std::optional<double> kv_cache_usage;     // vllm:kv_cache_usage_perc | vllm:gpu_cache_usage_perc | sglang:token_usage
  std::optional<double> preemptions;        // vllm:num_preemptions_total | sglang:num_retracted_requests_total
  std::optional<double> prompt_tokens;      // vllm:prompt_tokens_total | sglang:prompt_tokens_total
  std::optional<double> generation_tokens;  // vllm:generation_tokens_total | sglang:generation_tokens_total
  std::optional<double> requests_finished;  // vllm:request_success_total | sglang:num_requests_total
  /// Board power of the server's GPUs, summed over them, in watts: llmload:gpu_power_watts |
  /// DCGM_FI_DEV_POWER_USAGE (NVIDIA's dcgm-exporter, per GPU).
  std::optional<double> power_watts;
  /// Energy counter of the server's GPUs, summed, in joules: llmload:gpu_energy_joules_total |
  /// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (millijoules in dcgm-exporter; converted).
  std::optional<double> energy_joules;
  /// Prompt tokens found in the prefix cache and looked up there (counters): vllm:prefix_cache_hits_total
  /// | vllm:gpu_prefix_cache_hits_total | sglang:cached_tokens_total, and vllm:prefix_cache_queries_total
  /// | vllm:gpu_prefix_cache_queries_total (SGLang: its prompt tokens, when its cached tokens are used).
  std::optional<double> prefix_cache_hits;
  std::optional<double> prefix_cache_queries;
  /// A hit-rate gauge (0..1), for servers without the counters: vllm:gpu_prefix_cache_hit_rate (vLLM V0)
  /// | sglang:cache_hit_rate.
  std::optional<double> prefix_cache_hit_rate;
};
StandardValues standard_values(const Exposition& e);
nlohmann::json to_json(const StandardValues& v);

/// The server's latency histograms, by what they measure.
enum class ServerHistogram { kTtft, kE2e, kQueue, kItl };
/// Known names, in order of preference (the first present is used).
const std::vector<std::string>& server_histogram_names(ServerHistogram which);
/// The first known histogram present in `e`, with its name.
std::optional<std::pair<std::string, Histogram>> find_server_histogram(const Exposition& e, ServerHistogram which);

/// {"metric", "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "reset", "buckets": {"le": [...,
/// "+Inf"], "cumulative": [...]}} for the observations between `before` and `after`; null when
/// the histogram is absent from `after` (or its boundaries changed). Quantiles interpolated inside
/// buckets; null when no observation.
nlohmann::json histogram_delta_json(const Exposition* before, const Exposition& after, ServerHistogram which);

// ---------------------------------------------------------------------------------------------
// A run's scrapes

/// Collects the scrapes of one run and renders them as the artifact's "server_metrics" object
/// (docs/server-metrics.md). Times are given in seconds on any monotonic scale; to_json(t0_s)
/// reports them as seconds from t0_s (the run's start). Not thread-safe.
class ServerMetricsRecording {
 public:
  explicit ServerMetricsRecording(std::size_t max_points = 100000) : max_points_(max_points) {}

  void set_endpoint(std::string url) { endpoint_ = std::move(url); }
  void set_interval(double seconds) { interval_s_ = seconds; }
  void set_hint(std::string hint) { hint_ = std::move(hint); }
  /// Marks /metrics as absent; `reason` is kept as "not available: <reason>".
  void set_unavailable(const std::string& reason);
  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }

  /// The snapshot taken before the run. Also the first point of the series.
  void set_before(Exposition e, double t_s);
  /// A scrape during the run.
  void add_point(const Exposition& e, double t_s);
  /// The snapshot taken after the run. Also a point of the series.
  void set_after(Exposition e, double t_s);
  /// A failed scrape (any phase): counted; the first few distinct messages are kept.
  void add_error(const std::string& message);

  const std::optional<Exposition>& before() const { return before_; }
  const std::optional<Exposition>& after() const { return after_; }
  std::size_t scrapes() const { return scrapes_; }
  std::size_t errors() const { return errors_; }

  /// {"available": false, "reason": ...} or the whole object (docs/server-metrics.md), with
  /// times as seconds from t0_s.
  nlohmann::json to_json(double t0_s = 0) const;

 private:
  void push_point(const Exposition& e, double t_s);

  std::size_t max_points_;
  std::string endpoint_;
  std::string hint_;
  double interval_s_ = 0;
  bool available_ = true;
  std::string reason_;
  std::optional<Exposition> before_;
  std::optional<Exposition> after_;
  double before_t_ = 0;
  double after_t_ = 0;
  std::size_t scrapes_ = 0;
  std::size_t errors_ = 0;
  std::vector<std::string> error_messages_;  // the first few distinct ones
  std::string last_error_;
  bool truncated_ = false;
  // The series, one entry per point.
  std::vector<double> t_s_;
  std::vector<StandardValues> values_;
};

/// Client-side vs server-side TTFT. `server_metrics` is ServerMetricsRecording::to_json() (or
/// the artifact's "server_metrics"). Returns {"available": true, "client_mean_ms",
/// "server_mean_ms", "mean_diff_ms" (client - server: network, HTTP/TLS and client overhead),
/// "client_p50_ms", "server_p50_ms", "p50_diff_ms", "server_count", "client_count" (when given),
/// "count_matches", "caveat"} or {"available": false, "reason": ...}.
nlohmann::json cross_check_ttft(double client_mean_ttft_ms, double client_p50_ms, const nlohmann::json& server_metrics,
                                std::optional<std::int64_t> client_count = std::nullopt);

}  // namespace llmload::analysis::prom
