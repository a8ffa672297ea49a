// The Anthropic Messages API's stream and body (docs/server-apis.md, "POST /v1/messages").
// Stream (R thinking tokens, A = N - R text tokens), each event "event: <type>\ndata: <json>\n\n":
//   with the response head: message_start (the message with empty content, usage.input_tokens), ping
//   R > 0: token 0 opens content block 0 {"type":"thinking","thinking":"","signature":""}; each
//          thinking token is a content_block_delta {"type":"thinking_delta"}; the block ends with a
//          signature_delta and content_block_stop (with token R, or after the last when A = 0)
//   A > 0: token R opens the text block (index 0, or 1 after thinking); text_delta per token;
//          content_block_stop after the last. A tool call (GenerationRequest::structured) is a
//          tool_use block instead: content_block_start {"type":"tool_use","id":"toolu_…","name",
//          "input":{}}, one input_json_delta {"partial_json"} per token; stop_reason "tool_use"
//   last:  message_delta {"delta":{"stop_reason":"end_turn"|"max_tokens","stop_sequence":null},
//          "usage":{..},"llmload":{..}}, message_stop
// Usage as Anthropic counts it: input_tokens are the prompt tokens not read from the prefix cache,
// cache_read_input_tokens those that were (message_start, sent before the engine has looked, says
// input_tokens = all of them and 0 read); output_tokens include the thinking tokens, also given as
// output_tokens_details.thinking_tokens when thinking is on.
#include <iterator>

#include <fmt/format.h>

#include "llmload/server/json.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/rng.hpp"
#include "llmload/server/structured_output.hpp"

namespace llmload::server {
namespace {

constexpr std::uint64_t kSignatureSalt = 0x7369676e61747572ULL;  // "signatur"
constexpr std::uint64_t kToolUseIdSalt = 0x746f6f6c752d6964ULL;  // "toolu-id"

class MessagesEncoder final : public ApiEncoder {
 public:
  MessagesEncoder(const GenerationJob& job, std::shared_ptr<const OutputSequence> output)
      : id_(job.id),
        model_(job.request.model),
        prompt_tokens_(job.request.prompt_tokens),
        thinking_on_(job.request.reasoning_tokens > 0),
        output_(std::move(output)),
        reasoning_(output_->reasoning_tokens()),
        signature_(signature(job.request.output_seed)) {
    const auto& structured = job.request.structured;
    if (structured && structured->kind == StructuredKind::kToolCall) {
      tool_use_ = true;
      tool_name_ = structured->tool_name;
      tool_use_id_ = "toolu_" + tool_call_id_suffix(job.seed ^ kToolUseIdSalt, job.id, 0);
    }
  }

  void append_start_events(std::string& out, Framing framing) const override {
    ojson start;
    start["type"] = "message_start";
    start["message"] = message_object(false, nullptr);
    append_sse_named_event(out, "message_start", dump(start), framing);
    append_sse_named_event(out, "ping", R"({"type":"ping"})", framing);
  }

  void append_token_events(std::int64_t k, std::string& out, Framing framing,
                           const RequestOutcome* outcome) const override {
    const std::int64_t n = output_->length();
    const bool last = k + 1 >= n;
    if (k < reasoning_) {
      if (k == 0) {
        append_sse_named_event(
            out, "content_block_start",
            R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})",
            framing);
      }
      append_delta(out, framing, 0, "thinking_delta", "thinking", k);
      if (last) {
        append_thinking_end(out, framing);
        append_message_end(out, framing, n, outcome);
      }
      return;
    }
    const int index = reasoning_ > 0 ? 1 : 0;
    if (k == reasoning_) {
      if (reasoning_ > 0) append_thinking_end(out, framing);
      append_sse_named_event(out, "content_block_start", block_start(index), framing);
    }
    if (tool_use_) {
      append_delta(out, framing, index, "input_json_delta", "partial_json", k);
    } else {
      append_delta(out, framing, index, "text_delta", "text", k);
    }
    if (last) {
      append_sse_named_event(out, "content_block_stop",
                             fmt::format(R"({{"type":"content_block_stop","index":{}}})", index), framing);
      append_message_end(out, framing, n, outcome);
    }
  }

  std::string block_start(int index) const {
    std::string payload = fmt::format(R"({{"type":"content_block_start","index":{},"content_block":)", index);
    if (!tool_use_) return payload + R"({"type":"text","text":""}})";
    ojson block;
    block["type"] = "tool_use";
    block["id"] = tool_use_id_;
    block["name"] = tool_name_;
    block["input"] = ojson::object();
    return payload + dump(block) + "}";
  }

  void append_error_event(std::string& out, const ApiError& error, Framing framing,
                          std::int64_t /*before_token*/) const override {
    append_sse_named_event(out, "error", anthropic_error_body(error), framing);
  }

  void append_malformed_event(std::string& out, std::string_view payload, Framing framing) const override {
    append_sse_named_event(out, "content_block_delta", payload, framing);
  }

  std::string body(const RequestOutcome* outcome) const override { return dump(message_object(true, outcome)); }

 private:
  static std::string signature(std::uint64_t seed) {
    // Opaque, like Anthropic's: reproducible for the prompt, never checked.
    Rng rng = Rng::for_stream(seed ^ kSignatureSalt, 0);
    std::string s;
    for (int i = 0; i < 4; ++i) fmt::format_to(std::back_inserter(s), "{:016x}", rng.next_u64());
    return s;
  }

  void append_delta(std::string& out, Framing framing, int index, std::string_view type, std::string_view key,
                    std::int64_t k) const {
    std::string payload = R"({"type":"content_block_delta","index":)";
    fmt::format_to(std::back_inserter(payload), R"({},"delta":{{"type":"{}","{}":)", index, type, key);
    append_json_string(payload, output_->token_text(k));
    payload += "}}";
    append_sse_named_event(out, "content_block_delta", payload, framing);
  }

  void append_thinking_end(std::string& out, Framing framing) const {
    append_sse_named_event(
        out, "content_block_delta",
        fmt::format(R"({{"type":"content_block_delta","index":0,"delta":{{"type":"signature_delta","signature":"{}"}}}})",
                    signature_),
        framing);
    append_sse_named_event(out, "content_block_stop", R"({"type":"content_block_stop","index":0})", framing);
  }

  void append_message_end(std::string& out, Framing framing, std::int64_t n, const RequestOutcome* outcome) const {
    ojson delta;
    delta["type"] = "message_delta";
    delta["delta"] = {{"stop_reason", stop_reason()}, {"stop_sequence", nullptr}};
    delta["usage"] = usage(n, outcome);
    if (outcome != nullptr) delta["llmload"] = llmload_json_object(*outcome);
    append_sse_named_event(out, "message_delta", dump(delta), framing);
    append_sse_named_event(out, "message_stop", R"({"type":"message_stop"})", framing);
  }

  std::string_view stop_reason() const {
    if (!output_->stopped()) return "max_tokens";
    return tool_use_ ? "tool_use" : "end_turn";
  }

  /// A tool_use block's input: the arguments parsed; {} when max_tokens (or the invalid-output
  /// fault) left them unparseable, since `input` must be an object.
  static ojson tool_input(const std::string& arguments) {
    ojson input = ojson::parse(arguments, nullptr, /*allow_exceptions=*/false);
    return input.is_object() ? input : ojson::object();
  }

  ojson usage(std::int64_t n, const RequestOutcome* outcome) const {
    const std::int64_t cached = outcome != nullptr ? outcome->cached_tokens : 0;
    ojson u;
    u["input_tokens"] = prompt_tokens_ - cached;
    u["cache_creation_input_tokens"] = 0;
    u["cache_read_input_tokens"] = cached;
    u["output_tokens"] = n;
    if (thinking_on_) u["output_tokens_details"] = {{"thinking_tokens", reasoning_}};
    return u;
  }

  /// The message: at message_start (`done` false: no content, output_tokens 0) or whole.
  ojson message_object(bool done, const RequestOutcome* outcome) const {
    ojson m;
    m["id"] = id_;
    m["type"] = "message";
    m["role"] = "assistant";
    m["model"] = model_;
    ojson content = ojson::array();
    const std::int64_t n = done ? output_->length() : 0;
    if (done && reasoning_ > 0) {
      std::string thinking;
      output_->append_text(thinking, 0, reasoning_);
      content.push_back({{"type", "thinking"}, {"thinking", std::move(thinking)}, {"signature", signature_}});
    }
    if (done && n > reasoning_) {
      std::string text;
      output_->append_text(text, reasoning_, n);
      if (tool_use_) {
        ojson block;
        block["type"] = "tool_use";
        block["id"] = tool_use_id_;
        block["name"] = tool_name_;
        block["input"] = tool_input(text);
        content.push_back(std::move(block));
      } else {
        content.push_back({{"type", "text"}, {"text", std::move(text)}});
      }
    }
    m["content"] = std::move(content);
    m["stop_reason"] = done ? ojson(stop_reason()) : ojson(nullptr);
    m["stop_sequence"] = nullptr;
    if (done) {
      m["usage"] = usage(n, outcome);
    } else {
      m["usage"] = {{"input_tokens", prompt_tokens_},
                    {"cache_creation_input_tokens", 0},
                    {"cache_read_input_tokens", 0},
                    {"output_tokens", 0}};
    }
    if (outcome != nullptr) m["llmload"] = llmload_json_object(*outcome);
    return m;
  }

  std::string id_;
  std::string model_;
  std::int64_t prompt_tokens_;
  bool thinking_on_;
  std::shared_ptr<const OutputSequence> output_;
  std::int64_t reasoning_;
  std::string signature_;
  bool tool_use_ = false;  ///< the answer block is a tool_use (its tokens the input's JSON)
  std::string tool_name_;
  std::string tool_use_id_;  ///< "toolu_…"
};

}  // namespace

std::unique_ptr<const ApiEncoder> make_messages_encoder(const GenerationJob& job,
                                                        std::shared_ptr<const OutputSequence> output) {
  return std::make_unique<const MessagesEncoder>(job, std::move(output));
}

}  // namespace llmload::server
