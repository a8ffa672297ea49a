#include "llmload/analysis/token_accounting.hpp"

namespace llmload::analysis {

using nlohmann::json;

json token_accounting(const std::vector<RequestRecord>& records) {
  std::int64_t n = 0, from_usage = 0, req_in = 0, got_in = 0, req_out = 0, got_out = 0, early = 0;
  std::int64_t usage_n = 0, usage_req_in = 0, usage_got_in = 0;
  for (const auto& r : records) {
    if (r.warmup || !r.ok()) continue;
    ++n;
    req_in += r.requested_input_tokens;
    got_in += r.input_tokens;
    req_out += r.requested_output_tokens;
    got_out += r.output_tokens;
    if (r.ended_early) ++early;
    if (r.tokens_from_usage) {
      ++from_usage;
      ++usage_n;
      usage_req_in += r.requested_input_tokens;
      usage_got_in += r.input_tokens;
    }
  }
  return {
      {"requests", n},
      {"requests_with_server_usage", from_usage},
      {"estimated", from_usage < n},
      {"estimate_method", "without usage: prompt tokens = the requested count, output tokens = output events (one per "
                          "SSE chunk)"},
      {"requested_input_tokens", req_in},
      {"input_tokens", got_in},
      {"server_counted_input_tokens", usage_n > 0 ? json(usage_got_in) : json(nullptr)},
      {"requested_input_tokens_of_those", usage_n > 0 ? json(usage_req_in) : json(nullptr)},
      {"requested_output_tokens", req_out},
      {"output_tokens", got_out},
      {"ended_early", early},
  };
}

}  // namespace llmload::analysis
