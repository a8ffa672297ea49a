#include "llmload/server/response_encoder.hpp"

#include <iterator>

#include <fmt/format.h>
#include "llmload/server/json.hpp"

#include "llmload/server/server_tokenizer.hpp"
#include "llmload/server/structured_output.hpp"

namespace llmload::server {
namespace {

constexpr std::uint64_t kChatCallIdSalt = 0x63616c6c2d696431ULL;  // "call-id1"

/// The ids of generated tokens [0, n) as a JSON array.
void append_output_ids(std::string& out, std::int64_t n, const OutputSequence& output) {
  out += '[';
  for (std::int64_t k = 0; k < n; ++k) {
    if (k > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", output.token_id(k));
  }
  out += ']';
}

std::string full_text(std::int64_t tokens, const OutputSequence& output) {
  std::string text;
  output.append_text(text, tokens);
  return text;
}

/// A sequence for an encoder that was given none: produced here, every token at batch 1.
std::shared_ptr<const OutputSequence> played_alone(const GenerationJob& job) {
  auto output = std::make_shared<OutputSequence>(job, 0);
  output->play_alone();
  return output;
}

ojson usage_json(std::int64_t prompt, std::int64_t completion, std::int64_t cached, std::int64_t reasoning) {
  ojson u;
  u["prompt_tokens"] = prompt;
  u["completion_tokens"] = completion;
  u["total_tokens"] = prompt + completion;
  if (cached > 0) u["prompt_tokens_details"]["cached_tokens"] = cached;
  if (reasoning > 0) u["completion_tokens_details"]["reasoning_tokens"] = reasoning;
  return u;
}

ojson llmload_object(const RequestOutcome& o) {
  ojson j;
  j["arrival_unix_ns"] = o.timing.arrival_unix_ns;
  j["queue_s"] = o.timing.queue_s;  // nlohmann writes a non-finite double as null
  j["first_token_s"] = o.timing.first_token_s;
  j["first_output_token_s"] = o.timing.first_output_token_s;
  j["last_token_s"] = o.timing.last_token_s;
  j["preemptions"] = o.preemptions;
  j["cached_tokens"] = o.cached_tokens;
  if (o.wrong_answer) j["wrong_answer"] = *o.wrong_answer;
  if (o.diverged_at) j["diverged_at"] = *o.diverged_at;
  if (o.invalid_output) j["invalid_output"] = *o.invalid_output;
  return j;
}

}  // namespace

std::string llmload_json(const RequestOutcome& outcome) { return dump(llmload_object(outcome)); }

ojson llmload_json_object(const RequestOutcome& outcome) { return llmload_object(outcome); }

void append_sse_named_event(std::string& out, std::string_view name, std::string_view payload, Framing framing) {
  constexpr std::string_view kEvent = "event: ";
  constexpr std::string_view kData = "\ndata: ";
  constexpr std::string_view kEnd = "\n\n";
  if (framing == Framing::kChunked) {
    fmt::format_to(std::back_inserter(out), "{:x}\r\n",
                   kEvent.size() + name.size() + kData.size() + payload.size() + kEnd.size());
  }
  out += kEvent;
  out += name;
  out += kData;
  out += payload;
  out += kEnd;
  if (framing == Framing::kChunked) out += "\r\n";
}

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

ResponseEncoder::ResponseEncoder(const GenerationJob& job, std::shared_ptr<const OutputSequence> output)
    : endpoint_(job.request.endpoint),
      id_(job.id),
      model_(job.request.model),
      created_unix_(job.created_unix),
      prompt_tokens_(job.request.prompt_tokens),
      max_tokens_(job.request.max_tokens),
      include_usage_(job.request.include_usage),
      continuous_usage_(job.request.continuous_usage),
      output_(output ? std::move(output) : played_alone(job)),
      details_(TokenDetails::for_job(job)),
      reasoning_(output_->reasoning_tokens()),
      reasoning_key_(job.reasoning_field == ReasoningField::kReasoning ? "reasoning" : "reasoning_content") {
  if (endpoint_ == Endpoint::kResponses) {
    api_ = make_responses_encoder(job, output_);
    return;
  }
  if (endpoint_ == Endpoint::kMessages) {
    api_ = make_messages_encoder(job, output_);
    return;
  }
  if (endpoint_ == Endpoint::kGenerate) {
    chunk_prefix_ = fmt::format(R"("meta_info":{{"id":{},"finish_reason":)", dump(ojson(id_)));
    return;
  }
  if (endpoint_ == Endpoint::kChat && job.request.structured && job.request.structured->kind == StructuredKind::kToolCall) {
    tool_call_ = true;
    tool_name_ = job.request.structured->tool_name;
    call_id_ = "call_" + tool_call_id_suffix(job.seed, id_, kChatCallIdSalt);
  }
  chunk_prefix_ = fmt::format(R"({{"id":{},"object":"{}","created":{},"model":{},"choices":[)", dump(ojson(id_)),
                              endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion",
                              created_unix_, dump(ojson(model_)));
}

std::string_view ResponseEncoder::finish_reason() const {
  if (!output_->stopped()) return "length";
  return tool_call_ ? "tool_calls" : "stop";
}

std::string ResponseEncoder::chat_delta(std::int64_t k) const {
  std::string delta;
  if (k == kToolCallHead) {
    delta = R"({"tool_calls":[{"index":0,"id":)";
    append_json_string(delta, call_id_);
    delta += R"(,"type":"function","function":{"name":)";
    append_json_string(delta, tool_name_);
    delta += R"(,"arguments":""}}]})";
    return delta;
  }
  if (tool_call_ && k >= reasoning_) {
    delta = R"({"tool_calls":[{"index":0,"function":{"arguments":)";
    append_json_string(delta, output_->token_text(k));
    delta += "}}]}";
    return delta;
  }
  delta = k < reasoning_ ? reasoning_delta_open() : std::string(R"({"content":)");
  append_json_string(delta, output_->token_text(k));
  delta += '}';
  return delta;
}

void ResponseEncoder::append_choice_end(std::string& payload, std::int64_t k, bool last, bool open_stop_reason) const {
  if (!details_) {  // the common case: constant text
    if (last) {
      payload += R"(,"logprobs":null,"finish_reason":")";
      payload += finish_reason();
      payload += R"(","stop_reason":null}])";
    } else {
      payload += open_stop_reason ? R"(,"logprobs":null,"finish_reason":null,"stop_reason":null}])"
                                  : R"(,"logprobs":null,"finish_reason":null}])";
    }
    return;
  }
  payload += R"(,"logprobs":)";
  if (k >= 0) {
    details_->append_logprobs(payload, *output_, k, k + 1);
  } else {
    payload += "null";
  }
  if (last) {
    payload += R"(,"finish_reason":")";
    payload += finish_reason();
    payload += R"(","stop_reason":null)";
  } else {
    payload += open_stop_reason ? R"(,"finish_reason":null,"stop_reason":null)" : R"(,"finish_reason":null)";
  }
  if (k >= 0 && details_->token_ids()) {
    // vLLM: a completions stream's first choice carries the prompt's ids (chat's: its role chunk).
    if (k == 0 && endpoint_ == Endpoint::kCompletions) {
      payload += R"(,"prompt_token_ids":)";
      details_->append_prompt_ids(payload);
    }
    payload += R"(,"token_ids":)";
    TokenDetails::append_ids(payload, *output_, k, k + 1);
  }
  payload += "}]";
}

void ResponseEncoder::append_usage(std::string& out, std::int64_t completion_tokens, std::int64_t cached_tokens,
                                   bool details) const {
  fmt::format_to(std::back_inserter(out), R"("usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{})",
                 prompt_tokens_, completion_tokens, prompt_tokens_ + completion_tokens);
  if (details && cached_tokens > 0) {
    fmt::format_to(std::back_inserter(out), R"(,"prompt_tokens_details":{{"cached_tokens":{}}})", cached_tokens);
  }
  if (details && reasoning_ > 0) {
    fmt::format_to(std::back_inserter(out), R"(,"completion_tokens_details":{{"reasoning_tokens":{}}})", reasoning_);
  }
  out += '}';
}

void ResponseEncoder::append_chat_chunk(std::string& out, std::string_view delta_json, std::int64_t token,
                                        std::int64_t completion_tokens, bool last, const RequestOutcome* outcome,
                                        Framing framing) const {
  std::string payload = chunk_prefix_;
  payload += R"({"index":0,"delta":)";
  payload += delta_json;
  append_choice_end(payload, token, last, /*open_stop_reason=*/false);
  if (continuous_usage_) {
    payload += ',';
    append_usage(payload, completion_tokens, 0, false);  // vLLM's per-chunk usage has no details
  }
  if (token == kRoleChunk && details_ && details_->token_ids()) {
    payload += R"(,"prompt_token_ids":)";
    details_->append_prompt_ids(payload);
  }
  if (last && outcome != nullptr) {
    payload += R"(,"llmload":)";
    payload += llmload_json(*outcome);
  }
  payload += '}';
  append_sse_event(out, payload, framing);
}

void ResponseEncoder::append_generate_event(std::int64_t k, std::string& out, Framing framing,
                                            const RequestOutcome* outcome) const {
  const bool last = k + 1 >= output_->length();
  std::string payload = R"({"text":)";
  append_json_string(payload, full_text(k + 1, *output_));  // SGLang's text is cumulative, not a delta
  payload += R"(,"output_ids":)";
  append_output_ids(payload, k + 1, *output_);
  payload += ',';
  payload += chunk_prefix_;
  if (last && output_->stopped()) {
    payload += R"({"type":"stop","matched":null})";
  } else if (last) {
    fmt::format_to(std::back_inserter(payload), R"({{"type":"length","length":{}}})", max_tokens_);
  } else {
    payload += "null";
  }
  fmt::format_to(std::back_inserter(payload), R"(,"prompt_tokens":{},"completion_tokens":{},"cached_tokens":{})",
                 prompt_tokens_, k + 1, outcome != nullptr ? outcome->cached_tokens : 0);
  if (last && outcome != nullptr) {
    payload += R"(,"e2e_latency":)";
    payload += dump(ojson(outcome->timing.last_token_s));
    payload += R"(,"llmload":)";
    payload += llmload_json(*outcome);
  }
  payload += "}}";
  append_sse_event(out, payload, framing);
  if (last) append_sse_event(out, "[DONE]", framing);
}

void ResponseEncoder::append_start_events(std::string& out, Framing framing) const {
  if (api_) api_->append_start_events(out, framing);
}

void ResponseEncoder::append_malformed_event(std::string& out, std::string_view payload, Framing framing) const {
  if (api_) {
    api_->append_malformed_event(out, payload, framing);
  } else {
    append_sse_event(out, payload, framing);
  }
}

void ResponseEncoder::append_token_events(std::int64_t k, std::string& out, Framing framing,
                                          const RequestOutcome* outcome) const {
  if (api_) {
    api_->append_token_events(k, out, framing, outcome);
    return;
  }
  if (endpoint_ == Endpoint::kGenerate) {
    append_generate_event(k, out, framing, outcome);
    return;
  }
  const bool last = k + 1 >= output_->length();
  if (endpoint_ == Endpoint::kChat) {
    // vLLM sends the role with the first engine output, so it travels with token 0.
    if (k == 0) append_chat_chunk(out, R"({"role":"assistant","content":""})", kRoleChunk, 0, false, nullptr, framing);
    // A tool call opens (id, name: structural) just before its first argument token.
    if (tool_call_ && k == reasoning_) {
      append_chat_chunk(out, chat_delta(kToolCallHead), kToolCallHead, k, false, nullptr, framing);
    }
    append_chat_chunk(out, chat_delta(k), k, k + 1, last, outcome, framing);
  } else {
    std::string payload = chunk_prefix_;
    payload += R"({"index":0,"text":)";
    append_json_string(payload, output_->token_text(k));
    append_choice_end(payload, k, last, /*open_stop_reason=*/true);
    if (continuous_usage_) {
      payload += ',';
      append_usage(payload, k + 1, 0, false);
    }
    if (last && outcome != nullptr) {
      payload += R"(,"llmload":)";
      payload += llmload_json(*outcome);
    }
    payload += '}';
    append_sse_event(out, payload, framing);
  }
  if (!last) return;
  if (include_usage_) {
    std::string payload = chunk_prefix_;
    payload += "],";
    append_usage(payload, output_->length(), outcome != nullptr ? outcome->cached_tokens : 0, true);
    payload += '}';
    append_sse_event(out, payload, framing);
  }
  append_sse_event(out, "[DONE]", framing);
}

void ResponseEncoder::append_error_event(std::string& out, const ApiError& error, Framing framing,
                                         std::int64_t before_token) const {
  if (api_) {
    api_->append_error_event(out, error, framing, before_token);
    return;
  }
  append_sse_event(out, endpoint_ == Endpoint::kGenerate ? sglang_error_body(error) : error_body(error), framing);
  append_sse_event(out, "[DONE]", framing);
}

std::string ResponseEncoder::full_body(const RequestOutcome& outcome) const { return body_impl(&outcome); }

std::string ResponseEncoder::full_body() const { return body_impl(nullptr); }

std::string ResponseEncoder::reasoning_delta_open() const {
  std::string open = "{\"";
  open += reasoning_key_;
  open += "\":";
  return open;
}

std::string ResponseEncoder::body_impl(const RequestOutcome* outcome) const {
  if (api_) return api_->body(outcome);
  const std::int64_t cached = outcome != nullptr ? outcome->cached_tokens : 0;
  const std::int64_t n = output_->length();
  if (endpoint_ == Endpoint::kGenerate) {
    ojson output_ids = ojson::array();
    for (std::int64_t k = 0; k < n; ++k) output_ids.push_back(output_->token_id(k));
    ojson meta;
    meta["id"] = id_;
    meta["finish_reason"] = output_->stopped() ? ojson{{"type", "stop"}, {"matched", nullptr}}
                                               : ojson{{"type", "length"}, {"length", max_tokens_}};
    meta["prompt_tokens"] = prompt_tokens_;
    meta["completion_tokens"] = n;
    meta["cached_tokens"] = cached;
    if (outcome != nullptr) {
      meta["e2e_latency"] = outcome->timing.last_token_s;
      meta["llmload"] = llmload_object(*outcome);
    }
    ojson body;
    body["text"] = full_text(n, *output_);
    body["output_ids"] = std::move(output_ids);
    body["meta_info"] = std::move(meta);
    return dump(body);
  }
  const bool chat = endpoint_ == Endpoint::kChat;
  ojson choice;
  choice["index"] = 0;
  if (chat) {
    ojson message;
    message["role"] = "assistant";
    if (reasoning_ > 0 || tool_call_) {
      // vLLM's reasoning parser: the answer as content (null when there is none or when it is a
      // tool call), the reasoning apart.
      std::string answer;
      output_->append_text(answer, reasoning_, n);
      message["content"] = n > reasoning_ && !tool_call_ ? ojson(answer) : ojson(nullptr);
      if (reasoning_ > 0) {
        std::string reasoning;
        output_->append_text(reasoning, 0, reasoning_);
        message[reasoning_key_] = std::move(reasoning);
      }
      if (tool_call_ && n > reasoning_) {
        ojson call;
        call["id"] = call_id_;
        call["type"] = "function";
        call["function"] = {{"name", tool_name_}, {"arguments", std::move(answer)}};
        message["tool_calls"] = ojson::array({std::move(call)});
      }
    } else {
      message["content"] = full_text(n, *output_);
    }
    choice["message"] = std::move(message);
  } else {
    choice["text"] = full_text(n, *output_);
  }
  choice["logprobs"] = nullptr;
  if (details_ && details_->logprobs()) {
    std::string logprobs;
    details_->append_logprobs(logprobs, *output_, 0, n);
    choice["logprobs"] = ojson::parse(logprobs);
  }
  choice["finish_reason"] = std::string(finish_reason());
  choice["stop_reason"] = nullptr;
  const bool token_ids = details_ && details_->token_ids();
  if (token_ids) {
    // vLLM's places: the prompt's ids on a completions choice, at the top of a chat body.
    if (!chat) choice["prompt_token_ids"] = details_->prompt_ids();
    ojson ids = ojson::array();
    for (std::int64_t k = 0; k < n; ++k) ids.push_back(output_->token_id(k));
    choice["token_ids"] = std::move(ids);
  }
  ojson body;
  body["id"] = id_;
  body["object"] = chat ? "chat.completion" : "text_completion";
  body["created"] = created_unix_;
  body["model"] = model_;
  body["choices"] = ojson::array({std::move(choice)});
  body["usage"] = usage_json(prompt_tokens_, n, cached, reasoning_);
  if (token_ids && chat) body["prompt_token_ids"] = details_->prompt_ids();
  if (outcome != nullptr) body["llmload"] = llmload_object(*outcome);
  return dump(body);
}

}  // namespace llmload::server
