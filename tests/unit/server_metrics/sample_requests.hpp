#pragma once
// Finished requests with known values, shared by the unit tests (metrics_test.cpp) and the sample
// that the Prometheus Python client parses (metrics_sample.cpp, check_prometheus.py).

#include "llmload/server/metrics.hpp"

namespace llmload::server::sample {

/// Stopped after 5 of 16 tokens: TTFT 50 ms, e2e 550 ms, queue 10 ms, prefill 40 ms, decode 500 ms.
inline ServerMetrics::FinishedRequest stopped() {
  ServerMetrics::FinishedRequest r;
  r.prompt_tokens = 10;
  r.generation_tokens = 5;
  r.max_tokens = 16;
  r.finished_reason = "stop";
  r.ttft_s = 0.05;
  r.e2e_s = 0.55;
  r.queue_s = 0.01;
  r.prefill_s = 0.04;
  r.decode_s = 0.5;
  r.inference_s = 0.54;
  return r;
}

/// Aborted after 3 s in the queue without a token; max_tokens not given.
inline ServerMetrics::FinishedRequest aborted_in_queue() {
  ServerMetrics::FinishedRequest r;
  r.prompt_tokens = 7;
  r.finished_reason = "abort";
  r.produced_first_token = false;
  r.e2e_s = 3.0;
  r.queue_s = 3.0;
  return r;
}

}  // namespace llmload::server::sample
