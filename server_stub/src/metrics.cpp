#include "llmload/server/metrics.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <system_error>
#include <utility>

namespace llmload::server {

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// vLLM V1 bucket boundaries (vllm/v1/metrics/loggers.py).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenLatencyBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                  0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                  7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kRequestLatencyBuckets = {0.3,  0.5,  0.8,   1.0,   1.5,   2.0,  2.5,
                                                    5.0,  10.0, 15.0,  20.0,  30.0,  40.0, 50.0,
                                                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kIterationTokenBuckets = {1,   8,    16,   32,   64,   128,  256,
                                                    512, 1024, 2048, 4096, 8192, 16384};

// Histogram sums are kept as integers so that concurrent additions are exact and independent
// of their order: seconds in nanoseconds, token counts as they are.
constexpr double kNanosPerSecond = 1e9;
// Clamp for one observation in seconds, so that llround cannot overflow (about 31 years).
constexpr double kMaxSeconds = 1e9;

// A fixed-bucket histogram: one atomic count per bucket (the last is +Inf) and a fixed-point sum.
// _count is the sum of the bucket counts, so a render always has +Inf == _count.
class AtomicHistogram {
 public:
  AtomicHistogram(std::vector<double> bounds, double sum_scale)
      : bounds_(std::move(bounds)),
        counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)),
        sum_scale_(sum_scale) {}

  /// Seconds (or any real value): NaN is dropped, negatives count as 0.
  void observe_seconds(double v) {
    if (std::isnan(v)) return;
    v = std::clamp(v, 0.0, kMaxSeconds);
    count_bucket(v);
    sum_.fetch_add(std::llround(v * kNanosPerSecond), kRelaxed);
  }

  /// Integer values (token counts): negatives count as 0.
  void observe_count(std::int64_t v) {
    v = std::max<std::int64_t>(v, 0);
    count_bucket(static_cast<double>(v));
    sum_.fetch_add(v, kRelaxed);
  }

  const std::vector<double>& bounds() const { return bounds_; }
  std::uint64_t bucket(std::size_t i) const { return counts_[i].load(kRelaxed); }
  double sum() const { return static_cast<double>(sum_.load(kRelaxed)) / sum_scale_; }

 private:
  void count_bucket(double v) {
    // Bucket i holds bounds_[i-1] < v <= bounds_[i]: the first bound not below v.
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
    counts_[static_cast<std::size_t>(it - bounds_.begin())].fetch_add(1, kRelaxed);
  }

  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<std::int64_t> sum_{0};
  double sum_scale_;  // stored integer units per rendered unit
};

AtomicHistogram seconds_histogram(const std::vector<double>& bounds) {
  return AtomicHistogram(bounds, kNanosPerSecond);
}
AtomicHistogram count_histogram(std::vector<double> bounds) {
  return AtomicHistogram(std::move(bounds), 1.0);
}

void add_positive(std::atomic<std::uint64_t>& counter, std::int64_t n) {
  if (n > 0) counter.fetch_add(static_cast<std::uint64_t>(n), kRelaxed);
}

constexpr std::array<std::string_view, 3> kFinishedReasons = {"stop", "length", "abort"};
// The fault kinds (fault.hpp's spec names) llmload:faults_injected_total counts.
constexpr std::array<std::string_view, 7> kFaultKindNames = {
    "error", "reset", "stall", "malformed", "slow-first-byte", "stream-error", "invalid-output"};

std::size_t finished_reason_index(std::string_view reason) {
  for (std::size_t i = 0; i < kFinishedReasons.size(); ++i) {
    if (kFinishedReasons[i] == reason) return i;
  }
  return 2;  // unknown reasons are counted as "abort"
}

// Writes one exposition. Label sets are written in sorted label-name order (engine <
// finished_reason < le < model_name), as prometheus_client does.
class Writer {
 public:
  explicit Writer(std::string model_label) : model_(std::move(model_label)) {
    out_.reserve(24 * 1024);
  }

  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    for (char c : help) {
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  /// name{engine="0",<extra>,model_name="..."} value, where `extra` (already formatted, sorted
  /// between "engine" and "model_name") may be empty.
  void sample(std::string_view name, std::string_view extra, double value) {
    out_ += name;
    out_ += "{engine=\"0\",";
    if (!extra.empty()) {
      out_ += extra;
      out_ += ',';
    }
    out_ += "model_name=\"";
    out_ += model_;
    out_ += "\"} ";
    out_ += format_prometheus_value(value);
    out_ += '\n';
  }

  void gauge(std::string_view name, std::string_view help, double value) {
    header(name, "gauge", help);
    sample(name, {}, value);
  }

  void counter(std::string_view name, std::string_view help, double value) {
    header(name, "counter", help);
    sample(name, {}, value);
  }

  void histogram(std::string_view name, std::string_view help, const AtomicHistogram& h) {
    header(name, "histogram", help);
    const std::string bucket_name = std::string(name) + "_bucket";
    const auto& bounds = h.bounds();
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.bucket(i);
      const double le = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
      sample(bucket_name, "le=\"" + format_prometheus_value(le) + "\"",
             static_cast<double>(cumulative));
    }
    sample(std::string(name) + "_count", {}, static_cast<double>(cumulative));
    sample(std::string(name) + "_sum", {}, h.sum());
  }

  void raw(std::string_view text) { out_ += text; }
  const std::string& model() const { return model_; }
  std::string take() { return std::move(out_); }

 private:
  std::string model_;  // escaped
  std::string out_;
};

}  // namespace

struct ServerMetrics::State {
  State(MetricsLabels l, std::int64_t max_model_len, std::int64_t block_size_,
        std::int64_t num_gpu_blocks_)
      : model_label(escape_label_value(l.model_name)),
        block_size(block_size_),
        num_gpu_blocks(num_gpu_blocks_),
        iteration_tokens(count_histogram(kIterationTokenBuckets)),
        inter_token_latency(seconds_histogram(kTokenLatencyBuckets)),
        time_to_first_token(seconds_histogram(kTtftBuckets)),
        request_time_per_output_token(seconds_histogram(kTokenLatencyBuckets)),
        e2e_latency(seconds_histogram(kRequestLatencyBuckets)),
        queue_time(seconds_histogram(kRequestLatencyBuckets)),
        inference_time(seconds_histogram(kRequestLatencyBuckets)),
        prefill_time(seconds_histogram(kRequestLatencyBuckets)),
        decode_time(seconds_histogram(kRequestLatencyBuckets)),
        request_prompt_tokens(count_histogram(build_1_2_5_buckets(max_model_len))),
        request_generation_tokens(count_histogram(build_1_2_5_buckets(max_model_len))),
        request_max_tokens(count_histogram(build_1_2_5_buckets(max_model_len))) {}

  const std::string model_label;
  const std::int64_t block_size;
  const std::int64_t num_gpu_blocks;

  std::atomic<std::int64_t> running{0};
  std::atomic<std::int64_t> waiting{0};
  std::atomic<double> kv_cache_usage{0.0};

  std::atomic<std::uint64_t> preemptions{0};
  std::atomic<std::uint64_t> prompt_tokens{0};
  std::atomic<std::uint64_t> generation_tokens{0};
  std::atomic<std::uint64_t> prefix_cache_queries{0};
  std::atomic<std::uint64_t> prefix_cache_hits{0};
  std::array<std::atomic<std::uint64_t>, kFinishedReasons.size()> request_success{};

  std::atomic<bool> output_metrics{false};
  std::atomic<std::uint64_t> answers{0};
  std::atomic<std::uint64_t> wrong_answers{0};
  std::atomic<std::uint64_t> divergences{0};

  std::atomic<bool> faults_counted{false};
  std::array<std::atomic<std::uint64_t>, kFaultKindNames.size()> faults{};

  std::atomic<bool> lora_enabled{false};
  std::int64_t max_lora = 0;  // set before serving, read-only afterwards
  std::atomic<std::uint64_t> lora_loads{0};
  std::atomic<std::uint64_t> lora_disk_loads{0};
  mutable std::mutex lora_mutex;
  /// vllm:lora_requests_info's label sets (running, waiting) and their last times; back: newest.
  std::vector<std::pair<std::pair<std::string, std::string>, double>> lora_info;  // guarded by lora_mutex

  std::atomic<bool> gpu_power_set{false};
  std::atomic<double> gpu_power_watts{0.0};
  std::atomic<double> gpu_energy_joules{0.0};
  std::atomic<bool> gpu_rates_set{false};
  std::atomic<double> gpu_joules_per_step{0.0};
  std::atomic<double> gpu_joules_per_token{0.0};

  AtomicHistogram iteration_tokens;
  AtomicHistogram inter_token_latency;  // also rendered as vllm:time_per_output_token_seconds
  AtomicHistogram time_to_first_token;
  AtomicHistogram request_time_per_output_token;
  AtomicHistogram e2e_latency;
  AtomicHistogram queue_time;
  AtomicHistogram inference_time;
  AtomicHistogram prefill_time;
  AtomicHistogram decode_time;
  AtomicHistogram request_prompt_tokens;
  AtomicHistogram request_generation_tokens;
  AtomicHistogram request_max_tokens;
};

ServerMetrics::ServerMetrics(MetricsLabels labels, std::int64_t max_model_len,
                             std::int64_t block_size, std::int64_t num_gpu_blocks)
    : state_(std::make_unique<State>(std::move(labels), max_model_len, block_size,
                                     num_gpu_blocks)) {}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::set_scheduler_state(std::int64_t running, std::int64_t waiting,
                                        double kv_cache_usage) {
  state_->running.store(running, kRelaxed);
  state_->waiting.store(waiting, kRelaxed);
  state_->kv_cache_usage.store(kv_cache_usage, kRelaxed);
}

void ServerMetrics::add_preemptions(std::int64_t n) { add_positive(state_->preemptions, n); }

void ServerMetrics::add_prefix_cache(std::int64_t queried_tokens, std::int64_t hit_tokens) {
  add_positive(state_->prefix_cache_queries, queried_tokens);
  add_positive(state_->prefix_cache_hits, hit_tokens);
}

void ServerMetrics::add_prompt_tokens(std::int64_t n) { add_positive(state_->prompt_tokens, n); }

void ServerMetrics::add_generation_tokens(std::int64_t n) {
  add_positive(state_->generation_tokens, n);
}

void ServerMetrics::observe_iteration_tokens(std::int64_t n) {
  state_->iteration_tokens.observe_count(n);
}

void ServerMetrics::set_gpu_power(double watts, double energy_joules_total) {
  state_->gpu_power_watts.store(watts, kRelaxed);
  state_->gpu_energy_joules.store(energy_joules_total, kRelaxed);
  state_->gpu_power_set.store(true, std::memory_order_release);
}

void ServerMetrics::set_gpu_energy_rates(double joules_per_step, double joules_per_token) {
  state_->gpu_joules_per_step.store(joules_per_step, kRelaxed);
  state_->gpu_joules_per_token.store(joules_per_token, kRelaxed);
  state_->gpu_rates_set.store(true, std::memory_order_release);
}

void ServerMetrics::enable_lora(std::int64_t max_lora) {
  state_->max_lora = max_lora;
  state_->lora_enabled.store(true, std::memory_order_release);
}

void ServerMetrics::set_lora_requests(const std::string& running, const std::string& waiting, double unix_seconds) {
  constexpr std::size_t kMaxLabelSets = 64;
  State& s = *state_;
  std::lock_guard lock(s.lora_mutex);
  auto& sets = s.lora_info;
  const auto key = std::make_pair(running, waiting);
  sets.erase(std::remove_if(sets.begin(), sets.end(), [&](const auto& e) { return e.first == key; }), sets.end());
  sets.emplace_back(key, unix_seconds);
  if (sets.size() > kMaxLabelSets) sets.erase(sets.begin());
}

void ServerMetrics::add_lora_loads(std::int64_t loads, std::int64_t disk_loads) {
  add_positive(state_->lora_loads, loads);
  add_positive(state_->lora_disk_loads, disk_loads);
}

void ServerMetrics::count_output(bool answered, bool wrong_answer, bool diverged) {
  State& s = *state_;
  if (!answered && !diverged) return;
  if (answered) s.answers.fetch_add(1, kRelaxed);
  if (answered && wrong_answer) s.wrong_answers.fetch_add(1, kRelaxed);
  if (diverged) s.divergences.fetch_add(1, kRelaxed);
  s.output_metrics.store(true, std::memory_order_release);
}

void ServerMetrics::count_fault(std::string_view kind) {
  State& s = *state_;
  for (std::size_t i = 0; i < kFaultKindNames.size(); ++i) {
    if (kFaultKindNames[i] != kind) continue;
    s.faults[i].fetch_add(1, kRelaxed);
    s.faults_counted.store(true, std::memory_order_release);
  }
}

void ServerMetrics::observe_time_to_first_token(double seconds) {
  state_->time_to_first_token.observe_seconds(seconds);
}

void ServerMetrics::observe_inter_token_latency(double seconds) {
  state_->inter_token_latency.observe_seconds(seconds);
}

void ServerMetrics::on_request_finished(const FinishedRequest& r) {
  State& s = *state_;
  s.request_success[finished_reason_index(r.finished_reason)].fetch_add(1, kRelaxed);
  if (r.produced_first_token && !r.ttft_observed) s.time_to_first_token.observe_seconds(r.ttft_s);
  s.e2e_latency.observe_seconds(r.e2e_s);
  s.queue_time.observe_seconds(r.queue_s);
  s.prefill_time.observe_seconds(r.prefill_s);
  s.decode_time.observe_seconds(r.decode_s);
  s.inference_time.observe_seconds(r.inference_s);
  // vLLM does not count the token produced by prefill.
  const double tpot =
      r.generation_tokens > 1 ? r.decode_s / static_cast<double>(r.generation_tokens - 1) : 0.0;
  s.request_time_per_output_token.observe_seconds(tpot);
  s.request_prompt_tokens.observe_count(r.prompt_tokens);
  s.request_generation_tokens.observe_count(r.generation_tokens);
  if (r.max_tokens > 0) s.request_max_tokens.observe_count(r.max_tokens);
}

std::string ServerMetrics::render() const {
  const State& s = *state_;
  Writer w(s.model_label);

  // Scheduler state.
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          static_cast<double>(s.running.load(kRelaxed)));
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          static_cast<double>(s.waiting.load(kRelaxed)));
  const double kv = s.kv_cache_usage.load(kRelaxed);
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kv);
  w.gauge("vllm:gpu_cache_usage_perc",
          "GPU KV-cache usage. 1 means 100 percent usage. "
          "DEPRECATED: Use vllm:kv_cache_usage_perc instead.",
          kv);

  // Cache config info: a gauge fixed at 1 whose labels carry the configuration.
  w.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  w.raw("vllm:cache_config_info{block_size=\"" + std::to_string(s.block_size) +
        "\",engine=\"0\",model_name=\"" + w.model() + "\",num_gpu_blocks=\"" +
        std::to_string(s.num_gpu_blocks) + "\"} 1.0\n");

  // LoRA: vLLM's info gauge (labels only, no engine/model_name, as vLLM writes it) and the mock's
  // ground truth of adapter loads.
  if (s.lora_enabled.load(std::memory_order_acquire)) {
    w.header("vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
    {
      std::lock_guard lock(s.lora_mutex);
      for (const auto& [labels, at] : s.lora_info) {
        w.raw("vllm:lora_requests_info{max_lora=\"" + std::to_string(s.max_lora) + "\",running_lora_adapters=\"" +
              escape_label_value(labels.first) + "\",waiting_lora_adapters=\"" + escape_label_value(labels.second) +
              "\"} " + format_prometheus_value(at) + "\n");
      }
    }
    w.counter("llmload:lora_loads_total", "LoRA adapters loaded into a GPU slot (the mock's ground truth).",
              static_cast<double>(s.lora_loads.load(kRelaxed)));
    w.counter("llmload:lora_disk_loads_total", "LoRA adapter loads that read the adapter from disk first.",
              static_cast<double>(s.lora_disk_loads.load(kRelaxed)));
  }

  // Counters.
  w.counter("vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(s.prefix_cache_queries.load(kRelaxed)));
  w.counter("vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(s.prefix_cache_hits.load(kRelaxed)));
  w.counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
            static_cast<double>(s.preemptions.load(kRelaxed)));
  w.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
            static_cast<double>(s.prompt_tokens.load(kRelaxed)));
  w.counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
            static_cast<double>(s.generation_tokens.load(kRelaxed)));
  w.header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (std::size_t i = 0; i < kFinishedReasons.size(); ++i) {
    w.sample("vllm:request_success_total",
             "finished_reason=\"" + std::string(kFinishedReasons[i]) + "\"",
             static_cast<double>(s.request_success[i].load(kRelaxed)));
  }

  // Histograms of counts.
  w.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
              s.request_prompt_tokens);
  w.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
              s.request_generation_tokens);
  w.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
              s.iteration_tokens);
  w.histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
              s.request_max_tokens);

  // Histograms of timing intervals.
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              s.time_to_first_token);
  w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              s.inter_token_latency);
  w.histogram("vllm:time_per_output_token_seconds",
              "Histogram of time per output token in seconds. "
              "DEPRECATED: Use vllm:inter_token_latency_seconds instead.",
              s.inter_token_latency);
  w.histogram("vllm:request_time_per_output_token_seconds",
              "Histogram of time_per_output_token_seconds per request.",
              s.request_time_per_output_token);
  w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              s.e2e_latency);
  w.histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", s.queue_time);
  w.histogram("vllm:request_inference_time_seconds",
              "Histogram of time spent in RUNNING phase for request.", s.inference_time);
  w.histogram("vllm:request_prefill_time_seconds",
              "Histogram of time spent in PREFILL phase for request.", s.prefill_time);
  w.histogram("vllm:request_decode_time_seconds",
              "Histogram of time spent in DECODE phase for request.", s.decode_time);

  // The mock's output model (ground truth for accuracy and consistency), once it counted one.
  if (s.output_metrics.load(std::memory_order_acquire)) {
    w.counter("llmload:answers_total", "Requests whose output began with an answer to an arithmetic question.",
              static_cast<double>(s.answers.load(kRelaxed)));
    w.counter("llmload:wrong_answers_total", "Answers the error model made wrong.",
              static_cast<double>(s.wrong_answers.load(kRelaxed)));
    w.counter("llmload:divergences_total", "Requests whose output diverged (the divergence model).",
              static_cast<double>(s.divergences.load(kRelaxed)));
  }

  // Fault injection, once a fault was injected.
  if (s.faults_counted.load(std::memory_order_acquire)) {
    w.header("llmload:faults_injected_total", "counter",
             "Faults injected into generation requests (--fault, X-Llmload-Fault), by kind.");
    for (std::size_t i = 0; i < kFaultKindNames.size(); ++i) {
      w.sample("llmload:faults_injected_total", "kind=\"" + std::string(kFaultKindNames[i]) + "\"",
               static_cast<double>(s.faults[i].load(kRelaxed)));
    }
  }

  // The mock's own GPU readings, once the engine has any.
  if (s.gpu_power_set.load(std::memory_order_acquire)) {
    w.gauge("llmload:gpu_power_watts", "GPU board power draw in watts, as last sampled.",
            s.gpu_power_watts.load(kRelaxed));
    w.counter("llmload:gpu_energy_joules_total",
              "GPU energy consumed since the server started, in joules.",
              s.gpu_energy_joules.load(kRelaxed));
  }
  if (s.gpu_rates_set.load(std::memory_order_acquire)) {
    w.gauge("llmload:gpu_energy_per_step_joules",
            "GPU energy per engine step over the last sampling window, in joules.",
            s.gpu_joules_per_step.load(kRelaxed));
    w.gauge("llmload:gpu_energy_per_token_joules",
            "GPU energy per generated token over the last sampling window, in joules.",
            s.gpu_joules_per_token.load(kRelaxed));
  }
  return w.take();
}

std::vector<double> build_1_2_5_buckets(std::int64_t max_value) {
  std::vector<double> buckets;
  for (std::int64_t scale = 1; scale <= max_value; scale *= 10) {
    for (std::int64_t mantissa : {1, 2, 5}) {
      const std::int64_t value = mantissa * scale;
      if (value > max_value) return buckets;
      buckets.push_back(static_cast<double>(value));
    }
    if (scale > std::numeric_limits<std::int64_t>::max() / 10) break;
  }
  return buckets;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_prometheus_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Python's repr(): the shortest round-trip digits, fixed notation for decimal exponents in
  // [-4, 16), else scientific ("1e-05", "1e+16"); fixed always shows a fraction ("5.0").
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string s(buf, sci.ptr);
  const auto e = s.find('e');
  int exponent = 0;
  std::from_chars(s.data() + e + (s[e + 1] == '+' ? 2 : 1), s.data() + s.size(), exponent);
  if (exponent >= -4 && exponent < 16) {
    auto fixed = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
    s.assign(buf, fixed.ptr);
    if (s.find('.') == std::string::npos) s += ".0";
  }
  // prometheus_client's floatToGoString: Go switches to exponents sooner than Python.
  const auto dot = s.find('.');
  if (value > 0 && dot != std::string::npos && dot > 6) {
    // Python: f'{s[0]}.{s[1:dot]}{s[dot + 1:]}'.rstrip('0.'): the fraction's digits are kept.
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1) + s.substr(dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) {
      mantissa.pop_back();
    }
    return mantissa + "e+0" + std::to_string(dot - 1);
  }
  return s;
}

}  // namespace llmload::server
