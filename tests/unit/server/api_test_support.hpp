#pragma once
// Helpers of the Responses / Messages / reasoning unit tests: named SSE events, jobs, a router.

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/json.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"

namespace llmload::server::test {

struct NamedEvent {
  std::string name;  ///< empty for a bare "data:" event
  nlohmann::json data;
};

/// The events of unframed SSE text ("event: X\ndata: Y\n\n" or "data: Y\n\n"); data parsed as
/// JSON ([DONE] becomes the string "[DONE]").
inline std::vector<NamedEvent> parse_events(const std::string& sse) {
  std::vector<NamedEvent> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const auto end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    std::string block = sse.substr(pos, end - pos);
    pos = end + 2;
    NamedEvent e;
    if (block.rfind("event: ", 0) == 0) {
      const auto nl = block.find('\n');
      e.name = block.substr(7, nl - 7);
      block = block.substr(nl + 1);
    }
    EXPECT_EQ(block.rfind("data: ", 0), 0u) << block;
    const std::string data = block.substr(6);
    e.data = data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data);
    out.push_back(std::move(e));
  }
  return out;
}

inline std::shared_ptr<const OutputSequence> played(const GenerationJob& job) {
  auto out = std::make_shared<OutputSequence>(job, 0);
  out->play_alone();
  return out;
}

/// Every event of a stream: the start events, then each token's.
inline std::vector<NamedEvent> whole_stream(const GenerationJob& job, const RequestOutcome* outcome = nullptr) {
  const auto output = played(job);
  const ResponseEncoder enc(job, output);
  std::string sse;
  enc.append_start_events(sse, Framing::kNone);
  for (std::int64_t k = 0; k < output->length(); ++k) {
    enc.append_token_events(k, sse, Framing::kNone, k + 1 == output->length() ? outcome : nullptr);
  }
  return parse_events(sse);
}

inline ServerConfig test_config(std::int64_t reasoning_tokens = 0) {
  ServerConfig config;
  config.models = {"llmload-mock"};
  config.max_model_len = 4096;
  config.output.answers = true;
  config.reasoning.tokens = reasoning_tokens;
  return config;
}

inline HttpReply reply_of(const RouteResult& r) {
  const auto* reply = std::get_if<HttpReply>(&r);
  EXPECT_NE(reply, nullptr) << "expected an immediate reply, got a job";
  return reply != nullptr ? *reply : HttpReply{};
}

inline GenerationJob job_of(const RouteResult& r) {
  const auto* job = std::get_if<GenerationJob>(&r);
  if (job == nullptr) {
    ADD_FAILURE() << "expected a job, got " << std::get<HttpReply>(r).status << " " << std::get<HttpReply>(r).body;
    return GenerationJob{};
  }
  return *job;
}

}  // namespace llmload::server::test
