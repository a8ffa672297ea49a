#include "llmload/analysis/token_accounting.hpp"

namespace llmload::analysis {

using nlohmann::json;

json token_accounting(RecordRange records) {
  std::int64_t n = 0, from_usage = 0, from_tokenizer = 0, req_in = 0, got_in = 0, req_out = 0, got_out = 0, early = 0;
  std::int64_t usage_n = 0, usage_req_in = 0, usage_got_in = 0;
  // Where both counted the output: the server's usage against the client's tokenizer.
  std::int64_t both = 0, server_out = 0, client_out = 0, differing = 0;
  for (const auto& r : records) {
    if (r.warmup || !r.ok()) continue;
    ++n;
    req_in += r.requested_input_tokens;
    got_in += r.input_tokens;
    req_out += r.requested_output_tokens;
    got_out += r.output_tokens;
    if (r.ended_early) ++early;
    if (r.tokens_from_tokenizer) ++from_tokenizer;
    if (r.tokens_from_usage) {
      ++from_usage;
      ++usage_n;
      usage_req_in += r.requested_input_tokens;
      usage_got_in += r.input_tokens;
      if (r.client_output_tokens) {
        ++both;
        server_out += r.output_tokens;
        client_out += *r.client_output_tokens;
        if (*r.client_output_tokens != r.output_tokens) ++differing;
      }
    }
  }
  json discrepancy = nullptr;
  if (both > 0) {
    discrepancy = {{"requests", both},
                   {"server_output_tokens", server_out},
                   {"client_output_tokens", client_out},
                   {"relative_difference",
                    server_out > 0 ? json(static_cast<double>(client_out - server_out) / static_cast<double>(server_out))
                                   : json(nullptr)},
                   {"requests_differing", differing},
                   {"meaning", "the client's tokenizer (--tokenizer) re-counted the generated text of requests the "
                               "server reported usage for; a difference points at a tokenizer that is not the "
                               "server's, or text the server did not count (a server not honouring max_tokens)"}};
  }
  const bool estimated = from_usage + from_tokenizer < n;
  return {
      {"requests", n},
      {"requests_with_server_usage", from_usage},
      {"requests_counted_by_tokenizer", from_tokenizer},
      {"estimated", estimated},
      {"estimate_method", "without usage: prompt tokens = the requested count; output tokens = the generated text "
                          "counted with --tokenizer when given, else output events (one per SSE chunk, an "
                          "estimate: give the model's tokenizer with --tokenizer PATH to count them exactly)"},
      {"requested_input_tokens", req_in},
      {"input_tokens", got_in},
      {"server_counted_input_tokens", usage_n > 0 ? json(usage_got_in) : json(nullptr)},
      {"requested_input_tokens_of_those", usage_n > 0 ? json(usage_req_in) : json(nullptr)},
      {"requested_output_tokens", req_out},
      {"output_tokens", got_out},
      {"ended_early", early},
      {"client_vs_server", std::move(discrepancy)},
  };
}

}  // namespace llmload::analysis
