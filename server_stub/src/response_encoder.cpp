#include "llmload/server/response_encoder.hpp"

#include <iterator>

#include <fmt/format.h>
#include "llmload/server/json.hpp"

#include "llmload/server/mock_tokenizer.hpp"

namespace llmload::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

/// A generated token as a JSON string literal (tokens never need escaping; see mock_tokenizer).
void append_quoted_token(std::string& out, std::int64_t k) {
  out += '"';
  out += generated_token(k);
  out += '"';
}

ojson usage_json(std::int64_t prompt, std::int64_t completion) {
  ojson u;
  u["prompt_tokens"] = prompt;
  u["completion_tokens"] = completion;
  u["total_tokens"] = prompt + completion;
  return u;
}

std::string full_text(std::int64_t tokens) {
  std::string text;
  text.reserve(static_cast<std::size_t>(tokens) * 6);
  for (std::int64_t k = 0; k < tokens; ++k) text += generated_token(k);
  return text;
}

}  // namespace

void append_sse_event(std::string& out, std::string_view payload, Framing framing) {
  constexpr std::string_view kData = "data: ";
  constexpr std::string_view kEnd = "\n\n";
  if (framing == Framing::kChunked) {
    fmt::format_to(std::back_inserter(out), "{:x}\r\n", kData.size() + payload.size() + kEnd.size());
  }
  out += kData;
  out += payload;
  out += kEnd;
  if (framing == Framing::kChunked) out += "\r\n";
}

ResponseEncoder::ResponseEncoder(const GenerationJob& job) : job_(job) {
  const bool chat = job_.request.endpoint == Endpoint::kChat;
  chunk_prefix_ = fmt::format(R"({{"id":{},"object":"{}","created":{},"model":{},"choices":[)", dump(ojson(job_.id)),
                              chat ? "chat.completion.chunk" : "text_completion", job_.created_unix,
                              dump(ojson(job_.request.model)));
}

void ResponseEncoder::append_usage(std::string& out, std::int64_t completion_tokens) const {
  const std::int64_t prompt = job_.request.prompt_tokens;
  fmt::format_to(std::back_inserter(out), R"("usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}})",
                 prompt, completion_tokens, prompt + completion_tokens);
}

void ResponseEncoder::append_chat_chunk(std::string& out, std::string_view delta_json, std::int64_t completion_tokens,
                                        bool last, Framing framing) const {
  std::string payload = chunk_prefix_;
  payload += R"({"index":0,"delta":)";
  payload += delta_json;
  payload += last ? R"(,"logprobs":null,"finish_reason":"length","stop_reason":null}])"
                  : R"(,"logprobs":null,"finish_reason":null}])";
  if (job_.request.continuous_usage) {
    payload += ',';
    append_usage(payload, completion_tokens);
  }
  payload += '}';
  append_sse_event(out, payload, framing);
}

void ResponseEncoder::append_token_events(std::int64_t k, std::string& out, Framing framing) const {
  const GenerationRequest& req = job_.request;
  const bool last = k + 1 >= req.max_tokens;
  if (req.endpoint == Endpoint::kChat) {
    // vLLM sends the role with the first engine output, so it travels with token 0.
    if (k == 0) append_chat_chunk(out, R"({"role":"assistant","content":""})", 0, false, framing);
    std::string delta = R"({"content":)";
    append_quoted_token(delta, k);
    delta += '}';
    append_chat_chunk(out, delta, k + 1, last, framing);
  } else {
    std::string payload = chunk_prefix_;
    payload += R"({"index":0,"text":)";
    append_quoted_token(payload, k);
    payload += last ? R"(,"logprobs":null,"finish_reason":"length","stop_reason":null}])"
                    : R"(,"logprobs":null,"finish_reason":null,"stop_reason":null}])";
    if (req.continuous_usage) {
      payload += ',';
      append_usage(payload, k + 1);
    }
    payload += '}';
    append_sse_event(out, payload, framing);
  }
  if (!last) return;
  if (req.include_usage) {
    std::string payload = chunk_prefix_;
    payload += "],";
    append_usage(payload, req.max_tokens);
    payload += '}';
    append_sse_event(out, payload, framing);
  }
  append_sse_event(out, "[DONE]", framing);
}

std::string ResponseEncoder::full_body() const {
  const GenerationRequest& req = job_.request;
  const bool chat = req.endpoint == Endpoint::kChat;
  ojson choice;
  choice["index"] = 0;
  if (chat) {
    ojson message;
    message["role"] = "assistant";
    message["content"] = full_text(req.max_tokens);
    choice["message"] = std::move(message);
  } else {
    choice["text"] = full_text(req.max_tokens);
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = "length";
  choice["stop_reason"] = nullptr;
  ojson body;
  body["id"] = job_.id;
  body["object"] = chat ? "chat.completion" : "text_completion";
  body["created"] = job_.created_unix;
  body["model"] = req.model;
  body["choices"] = ojson::array({std::move(choice)});
  body["usage"] = usage_json(req.prompt_tokens, req.max_tokens);
  return dump(body);
}

}  // namespace llmload::server
