// Prints the /metrics exposition of a registry filled with fixed values, for
// check_prometheus.py (which parses it with the Prometheus Python client and knows these values).
#include <iostream>

#include "llmload/server/metrics.hpp"
#include "sample_requests.hpp"

int main() {
  using llmload::server::ServerMetrics;
  // A model name that needs every escape of the text format.
  ServerMetrics m({"mock \"q\" \\ x\nline2"}, /*max_model_len=*/8192, /*block_size=*/16,
                  /*num_gpu_blocks=*/1000);

  m.set_scheduler_state(3, 2, 0.25);
  m.add_preemptions(4);
  m.add_prefix_cache(100, 40);
  m.add_prompt_tokens(300);
  m.add_generation_tokens(50);
  for (long n : {1L, 8L, 9L, 20000L}) m.observe_iteration_tokens(n);
  for (double s : {0.01, 0.02, 0.5, 100.0}) m.observe_inter_token_latency(s);

  m.on_request_finished(llmload::server::sample::stopped());

  ServerMetrics::FinishedRequest length;
  length.prompt_tokens = 100;
  length.generation_tokens = 1;
  length.max_tokens = 1;
  length.finished_reason = "length";
  length.ttft_s = 0.2;
  length.e2e_s = 0.2;
  length.prefill_s = 0.2;
  length.inference_s = 0.2;
  m.on_request_finished(length);

  m.on_request_finished(llmload::server::sample::aborted_in_queue());

  m.set_gpu_power(350.5, 12345.25);

  std::cout << m.render();
  return 0;
}
