#pragma once
// Prometheus metrics of llmload-server, under vLLM V1's names, buckets and help strings, so
// that dashboards and tools written for vLLM's GET /metrics read the mock unchanged.
// Rendered in the Prometheus text exposition format 0.0.4. The metric list is in docs/server.md
// ("Metrics and fault injection").
//
// Threading: every method may be called from any thread at any time, render() included. The
// update methods are lock-free (relaxed atomics: one bucket increment plus one sum addition per
// histogram observation) because io threads call them per token. render() reads the atomics one
// by one, so a scrape taken during updates may see one metric a step ahead of another, as with
// any Prometheus client; within one histogram, the +Inf bucket always equals _count.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

struct MetricsLabels {
  /// Value of the `model_name` label on every sample: the first served model.
  std::string model_name;
};

class ServerMetrics {
 public:
  /// `max_model_len` sets the 1-2-5 buckets of the token-count histograms (as vLLM does);
  /// `block_size` and `num_gpu_blocks` are shown by vllm:cache_config_info.
  ServerMetrics(MetricsLabels labels, std::int64_t max_model_len, std::int64_t block_size,
                std::int64_t num_gpu_blocks);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // --- engine thread, once per step ----------------------------------------------------------
  /// Gauges vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc
  /// (and its deprecated alias vllm:gpu_cache_usage_perc). `kv_cache_usage` is a fraction, 0..1.
  void set_scheduler_state(std::int64_t running, std::int64_t waiting, double kv_cache_usage);
  /// vllm:num_preemptions_total += n.
  void add_preemptions(std::int64_t n);
  /// vllm:prefix_cache_queries_total += queried_tokens; vllm:prefix_cache_hits_total += hit_tokens.
  void add_prefix_cache(std::int64_t queried_tokens, std::int64_t hit_tokens);
  /// vllm:prompt_tokens_total += n (prefill tokens computed this step).
  void add_prompt_tokens(std::int64_t n);
  /// vllm:generation_tokens_total += n (tokens generated this step).
  void add_generation_tokens(std::int64_t n);
  /// One observation of vllm:iteration_tokens_total: prompt + generation tokens of one step.
  void observe_iteration_tokens(std::int64_t n);
  /// Gauge llmload:gpu_power_watts and counter llmload:gpu_energy_joules_total (the running
  /// total, set, not added). Neither is rendered until the first call (no GPU, no lines).
  void set_gpu_power(double watts, double energy_joules_total);
  /// Gauges llmload:gpu_energy_per_step_joules and llmload:gpu_energy_per_token_joules: the
  /// energy of the last sampling window over the steps and the generated tokens in it. Not
  /// rendered until the first call.
  void set_gpu_energy_rates(double joules_per_step, double joules_per_token);

  // --- LoRA adapters (engine thread; lora_cache.hpp) ------------------------------------------
  /// Turns the LoRA families on: vllm:lora_requests_info (label max_lora = `max_lora`),
  /// llmload:lora_loads_total and llmload:lora_disk_loads_total. Call before serving.
  void enable_lora(std::int64_t max_lora);
  /// vllm:lora_requests_info{max_lora,running_lora_adapters,waiting_lora_adapters} = `unix_seconds`
  /// for these comma-separated adapter names. As vLLM's prometheus gauge, every label set seen
  /// keeps its last time (the newest is the current state); the 64 most recent are kept.
  void set_lora_requests(const std::string& running, const std::string& waiting, double unix_seconds);
  /// llmload:lora_loads_total += loads (adapters loaded into a GPU slot), and
  /// llmload:lora_disk_loads_total += disk_loads (of which read from disk first).
  void add_lora_loads(std::int64_t loads, std::int64_t disk_loads);

  // --- the output model (output_sequence.hpp) -------------------------------------------------
  /// One finished request's output: an answer (wrong or not) and whether it diverged:
  /// llmload:answers_total, llmload:wrong_answers_total, llmload:divergences_total. The three are
  /// rendered together from the first request counted that had an answer or diverged (as the
  /// GPU's families, a server that never answers shows none: scrapers take llmload:* families
  /// as the sign of llmload-server).
  void count_output(bool answered, bool wrong_answer, bool diverged);

  // --- fault injection (fault.hpp) -------------------------------------------------------------
  /// llmload:faults_injected_total{kind=<spec name>} += 1: a fault chosen for a generation
  /// request (by --fault or X-Llmload-Fault; invalid-output only when the request had a
  /// structured output to break). Rendered from the first fault counted, every kind then.
  void count_fault(std::string_view kind);

  // --- io threads ----------------------------------------------------------------------------
  /// One gap between two consecutive tokens of a stream: vllm:inter_token_latency_seconds and
  /// the deprecated vllm:time_per_output_token_seconds (same buckets, same data, one update).
  void observe_inter_token_latency(double seconds);
  /// vllm:time_to_first_token_seconds, when a request's first token is written (vLLM observes
  /// it then, not when the request finishes). Set FinishedRequest::ttft_observed afterwards.
  void observe_time_to_first_token(double seconds);

  struct FinishedRequest {
    std::int64_t prompt_tokens = 0;
    std::int64_t generation_tokens = 0;
    std::int64_t max_tokens = 0;  ///< the request's max_tokens; 0 = not given (not observed)
    /// "stop", "length" or "abort"; anything else is counted as "abort".
    std::string_view finished_reason = "length";
    double ttft_s = 0;       ///< arrival -> first token
    double e2e_s = 0;        ///< arrival -> last token (or abort)
    double queue_s = 0;      ///< arrival (queued) -> first scheduled
    double prefill_s = 0;    ///< first scheduled -> first token
    double decode_s = 0;     ///< first token -> last token
    double inference_s = 0;  ///< first scheduled -> last token
    bool produced_first_token = true;  ///< false: TTFT is not observed
    /// true: TTFT was observed already at the first token (observe_time_to_first_token), as
    /// vLLM does; it is not observed again here.
    bool ttft_observed = false;
  };
  /// Per finished request (including aborted ones): vllm:request_success_total{finished_reason}
  /// += 1; observes vllm:time_to_first_token_seconds (only if produced_first_token),
  /// e2e_request_latency, request_queue_time, request_prefill_time, request_decode_time,
  /// request_inference_time, request_time_per_output_token (decode_s / (generation_tokens - 1),
  /// 0 with fewer than two tokens, as vLLM), request_prompt_tokens, request_generation_tokens and
  /// request_params_max_tokens (only when max_tokens > 0, as vLLM).
  void on_request_finished(const FinishedRequest& r);

  /// The whole exposition, every line ending in '\n'. Labels `model_name` and `engine="0"` are on
  /// every sample. Values are written the way Python's prometheus_client writes them ("5.0").
  std::string render() const;

  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to and including `max_value`.
std::vector<double> build_1_2_5_buckets(std::int64_t max_value);

/// A label value escaped for the text format: backslash, double quote and newline.
std::string escape_label_value(std::string_view value);

/// A sample value or `le` bound as Python's prometheus_client writes it (floatToGoString):
/// "1.0", "0.005", "+Inf", "1e+06".
std::string format_prometheus_value(double value);

}  // namespace llmload::server
