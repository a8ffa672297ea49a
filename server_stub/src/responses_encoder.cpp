// The OpenAI Responses API's stream and body (docs/server-apis.md, "POST /v1/responses").
// Event order and sequence numbers (R reasoning tokens, A = N - R answer tokens):
//   0 response.created, 1 response.in_progress                      (with the response head)
//   R > 0: 2 output_item.added (reasoning, output 0), 3 content_part.added (reasoning_text),
//          4 + k response.reasoning_text.delta for k < R,
//          then reasoning_text.done, content_part.done, output_item.done (with token R, or after
//          the last token when A = 0)
//   A > 0: M = 2 (R = 0) or R + 7: M output_item.added (message, output 0 or 1),
//          M + 1 content_part.added (output_text), M + 2 + (k - R) response.output_text.delta,
//          then output_text.done, content_part.done, output_item.done
//          A tool call (GenerationRequest::structured) is a function_call item instead, without
//          content parts: M output_item.added (arguments ""), M + 1 + (k - R)
//          response.function_call_arguments.delta, then function_call_arguments.done and
//          output_item.done
//   last:  response.completed (the whole response, usage, and the "llmload" ground truth), or
//          response.incomplete when max_output_tokens cut the output (status "incomplete",
//          incomplete_details {"reason":"max_output_tokens"}; the item cut short has status
//          "incomplete"), as OpenAI sends them
// Each event is "event: <type>\ndata: <json>\n\n". Per-token events are written by hand (no JSON
// library on the per-token path); the bigger structural ones with ojson.
#include <iterator>

#include <fmt/format.h>

#include "llmload/server/json.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"
#include "llmload/server/structured_output.hpp"
#include "llmload/server/tool_request_fields.hpp"

namespace llmload::server {
namespace {

constexpr std::uint64_t kMessageIdSalt = 0x6d73672d69642d31ULL;    // "msg-id-1"
constexpr std::uint64_t kReasoningIdSalt = 0x72732d69642d2d31ULL;  // "rs-id--1"
constexpr std::uint64_t kFunctionCallIdSalt = 0x66632d69642d2d31ULL;  // "fc-id--1"
constexpr std::uint64_t kCallIdSalt = 0x63616c6c2d696432ULL;          // "call-id2"

class ResponsesEncoder final : public ApiEncoder {
 public:
  ResponsesEncoder(const GenerationJob& job, std::shared_ptr<const OutputSequence> output)
      : id_(job.id),
        message_id_("msg_" + hex_id(job.seed ^ kMessageIdSalt, job.id)),
        reasoning_id_("rs_" + hex_id(job.seed ^ kReasoningIdSalt, job.id)),
        model_(job.request.model),
        created_(job.created_unix),
        prompt_tokens_(job.request.prompt_tokens),
        fields_(job.request.responses ? job.request.responses : std::make_shared<const ResponsesFields>()),
        output_(std::move(output)),
        reasoning_(output_->reasoning_tokens()),
        echo_(fields_->tool_echo ? fields_->tool_echo : std::make_shared<const ResponsesToolEcho>()) {
    const auto& structured = job.request.structured;
    if (structured && structured->kind == StructuredKind::kToolCall) {
      function_call_ = true;
      tool_name_ = structured->tool_name;
      message_id_ = "fc_" + tool_call_id_suffix(job.seed ^ kFunctionCallIdSalt, job.id, 0);
      call_id_ = "call_" + tool_call_id_suffix(job.seed ^ kCallIdSalt, job.id, 0);
    }
  }

  void append_start_events(std::string& out, Framing framing) const override {
    const ojson in_progress = response_object("in_progress", false, nullptr);
    ojson created;
    created["type"] = "response.created";
    created["response"] = in_progress;
    created["sequence_number"] = 0;
    append_sse_named_event(out, "response.created", dump(created), framing);
    ojson progress;
    progress["type"] = "response.in_progress";
    progress["response"] = in_progress;
    progress["sequence_number"] = 1;
    append_sse_named_event(out, "response.in_progress", dump(progress), framing);
  }

  void append_token_events(std::int64_t k, std::string& out, Framing framing,
                           const RequestOutcome* outcome) const override {
    const std::int64_t n = output_->length();
    const bool last = k + 1 >= n;
    const std::int64_t r = reasoning_;
    if (k < r) {
      if (k == 0) append_item_start(out, framing, true);
      append_delta(out, framing, true, k);
      if (last) {
        append_item_end(out, framing, true, n);
        append_completed(out, framing, n, outcome);
      }
      return;
    }
    if (k == r) {
      if (r > 0) append_item_end(out, framing, true, n);
      append_item_start(out, framing, false);
    }
    append_delta(out, framing, false, k);
    if (last) {
      append_item_end(out, framing, false, n);
      append_completed(out, framing, n, outcome);
    }
  }

  void append_error_event(std::string& out, const ApiError& error, Framing framing,
                          std::int64_t before_token) const override {
    ojson e;
    e["type"] = "error";
    e["code"] = error.status == 429 ? "rate_limit_exceeded" : error.status >= 500 ? "server_error" : "invalid_request_error";
    e["message"] = error.message;
    e["param"] = error.param ? ojson(*error.param) : ojson(nullptr);
    e["sequence_number"] = first_seq_of_token(before_token);
    append_sse_named_event(out, "error", dump(e), framing);
  }

  void append_malformed_event(std::string& out, std::string_view payload, Framing framing) const override {
    append_sse_named_event(out, function_call_ ? "response.function_call_arguments.delta" : "response.output_text.delta",
                           payload, framing);
  }

  std::string body(const RequestOutcome* outcome) const override {
    return dump(response_object(final_status(), true, outcome));
  }

 private:
  static std::string hex_id(std::uint64_t seed, const std::string& id) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return make_response_id(Endpoint::kGenerate, seed, h);
  }

  /// max_output_tokens cut the output (it did not end at EOS): OpenAI's "incomplete".
  bool incomplete() const { return !output_->stopped(); }
  std::string_view final_status() const { return incomplete() ? "incomplete" : "completed"; }
  /// The events before an answer item's first delta, and after its last one.
  std::int64_t head_events() const { return function_call_ ? 1 : 2; }
  std::int64_t tail_events() const { return function_call_ ? 2 : 3; }

  /// The sequence number of the first event token k would have written.
  std::int64_t first_seq_of_token(std::int64_t k) const {
    if (k <= 0) return 2;
    if (k < reasoning_) return 4 + k;
    if (k == reasoning_) return 4 + reasoning_;
    return message_start_seq() + head_events() + (k - reasoning_);
  }

  /// The message's output index: after the reasoning item when there is one.
  std::int64_t message_index() const { return reasoning_ > 0 ? 1 : 0; }
  /// The sequence number of the message's output_item.added.
  std::int64_t message_start_seq() const { return reasoning_ > 0 ? reasoning_ + 7 : 2; }
  /// The sequence number after the last content event (before response.completed's).
  std::int64_t end_seq(std::int64_t n) const {
    if (n > reasoning_) return message_start_seq() + head_events() + (n - reasoning_) + tail_events();
    return reasoning_ + 7;
  }

  std::string text(bool reasoning, std::int64_t n) const {
    std::string t;
    if (reasoning) {
      output_->append_text(t, 0, reasoning_);
    } else {
      output_->append_text(t, reasoning_, n);
    }
    return t;
  }

  ojson part_json(bool reasoning, std::string t) const {
    ojson part;
    if (reasoning) {
      part["type"] = "reasoning_text";
      part["text"] = std::move(t);
    } else {
      part["type"] = "output_text";
      part["annotations"] = ojson::array();
      part["logprobs"] = ojson::array();
      part["text"] = std::move(t);
    }
    return part;
  }

  /// A finished item's status: "incomplete" for the one max_output_tokens cut (the last).
  std::string_view done_status(bool reasoning) const {
    const bool last_item = reasoning ? output_->length() <= reasoning_ : true;
    return incomplete() && last_item ? "incomplete" : "completed";
  }

  /// A reasoning or message item; `content` null: in progress (content []).
  ojson item_json(bool reasoning, const ojson* content) const {
    ojson item;
    if (reasoning) {
      item["id"] = reasoning_id_;
      item["type"] = "reasoning";
      item["summary"] = ojson::array();
      item["content"] = content != nullptr ? ojson::array({*content}) : ojson::array();
      item["status"] = content != nullptr ? done_status(true) : "in_progress";
    } else {
      item["id"] = message_id_;
      item["type"] = "message";
      item["status"] = content != nullptr ? done_status(false) : "in_progress";
      item["content"] = content != nullptr ? ojson::array({*content}) : ojson::array();
      item["role"] = "assistant";
    }
    return item;
  }

  /// The function_call item; `arguments` null: in progress (arguments "").
  ojson function_call_json(const std::string* arguments) const {
    ojson item;
    item["type"] = "function_call";
    item["id"] = message_id_;
    item["call_id"] = call_id_;
    item["name"] = tool_name_;
    item["arguments"] = arguments != nullptr ? *arguments : std::string();
    item["status"] = arguments != nullptr ? done_status(false) : "in_progress";
    return item;
  }

  void append_item_added(std::string& out, Framing framing, std::int64_t index, ojson item, std::int64_t seq) const {
    ojson added;
    added["type"] = "response.output_item.added";
    added["output_index"] = index;
    added["item"] = std::move(item);
    added["sequence_number"] = seq;
    append_sse_named_event(out, "response.output_item.added", dump(added), framing);
  }

  void append_item_done(std::string& out, Framing framing, std::int64_t index, ojson item, std::int64_t seq) const {
    ojson item_done;
    item_done["type"] = "response.output_item.done";
    item_done["output_index"] = index;
    item_done["item"] = std::move(item);
    item_done["sequence_number"] = seq;
    append_sse_named_event(out, "response.output_item.done", dump(item_done), framing);
  }

  void append_item_start(std::string& out, Framing framing, bool reasoning) const {
    const std::int64_t seq = reasoning ? 2 : message_start_seq();
    const std::int64_t index = reasoning ? 0 : message_index();
    if (!reasoning && function_call_) {
      append_item_added(out, framing, index, function_call_json(nullptr), seq);
      return;
    }
    append_item_added(out, framing, index, item_json(reasoning, nullptr), seq);
    ojson part;
    part["type"] = "response.content_part.added";
    part["item_id"] = reasoning ? reasoning_id_ : message_id_;
    part["output_index"] = index;
    part["content_index"] = 0;
    part["part"] = part_json(reasoning, "");
    part["sequence_number"] = seq + 1;
    append_sse_named_event(out, "response.content_part.added", dump(part), framing);
  }

  void append_delta(std::string& out, Framing framing, bool reasoning, std::int64_t k) const {
    if (!reasoning && function_call_) {
      std::string payload = R"({"type":"response.function_call_arguments.delta","item_id":")";
      payload += message_id_;
      fmt::format_to(std::back_inserter(payload), R"(","output_index":{},"delta":)", message_index());
      append_json_string(payload, output_->token_text(k));
      fmt::format_to(std::back_inserter(payload), R"(,"sequence_number":{}}})",
                     message_start_seq() + 1 + (k - reasoning_));
      append_sse_named_event(out, "response.function_call_arguments.delta", payload, framing);
      return;
    }
    std::string payload = reasoning ? R"({"type":"response.reasoning_text.delta","item_id":")"
                                    : R"({"type":"response.output_text.delta","item_id":")";
    payload += reasoning ? reasoning_id_ : message_id_;
    const std::int64_t seq = reasoning ? 4 + k : message_start_seq() + 2 + (k - reasoning_);
    fmt::format_to(std::back_inserter(payload), R"(","output_index":{},"content_index":0,"delta":)",
                   reasoning ? 0 : message_index());
    append_json_string(payload, output_->token_text(k));
    if (!reasoning) payload += R"(,"logprobs":[])";
    fmt::format_to(std::back_inserter(payload), R"(,"sequence_number":{}}})", seq);
    append_sse_named_event(out, reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", payload,
                           framing);
  }

  void append_function_call_end(std::string& out, Framing framing, std::int64_t n) const {
    const std::int64_t seq = message_start_seq() + 1 + (n - reasoning_);
    const std::string arguments = text(false, n);
    ojson done;
    done["type"] = "response.function_call_arguments.done";
    done["item_id"] = message_id_;
    done["output_index"] = message_index();
    done["arguments"] = arguments;
    done["sequence_number"] = seq;
    append_sse_named_event(out, "response.function_call_arguments.done", dump(done), framing);
    append_item_done(out, framing, message_index(), function_call_json(&arguments), seq + 1);
  }

  void append_item_end(std::string& out, Framing framing, bool reasoning, std::int64_t n) const {
    if (!reasoning && function_call_) {
      append_function_call_end(out, framing, n);
      return;
    }
    const std::int64_t seq = reasoning ? 4 + reasoning_ : message_start_seq() + 2 + (n - reasoning_);
    const std::int64_t index = reasoning ? 0 : message_index();
    const std::string& item_id = reasoning ? reasoning_id_ : message_id_;
    std::string t = text(reasoning, n);
    ojson done;
    done["type"] = reasoning ? "response.reasoning_text.done" : "response.output_text.done";
    done["item_id"] = item_id;
    done["output_index"] = index;
    done["content_index"] = 0;
    done["text"] = t;
    if (!reasoning) done["logprobs"] = ojson::array();
    done["sequence_number"] = seq;
    append_sse_named_event(out, reasoning ? "response.reasoning_text.done" : "response.output_text.done", dump(done),
                           framing);
    const ojson part = part_json(reasoning, std::move(t));
    ojson part_done;
    part_done["type"] = "response.content_part.done";
    part_done["item_id"] = item_id;
    part_done["output_index"] = index;
    part_done["content_index"] = 0;
    part_done["part"] = part;
    part_done["sequence_number"] = seq + 1;
    append_sse_named_event(out, "response.content_part.done", dump(part_done), framing);
    append_item_done(out, framing, index, item_json(reasoning, &part), seq + 2);
  }

  void append_completed(std::string& out, Framing framing, std::int64_t n, const RequestOutcome* outcome) const {
    const std::string type = incomplete() ? "response.incomplete" : "response.completed";
    ojson completed;
    completed["type"] = type;
    completed["response"] = response_object(final_status(), true, outcome);
    completed["sequence_number"] = end_seq(n);
    append_sse_named_event(out, type, dump(completed), framing);
  }

  /// The response object, in OpenAI's key order. `done`: with the output items and the usage.
  ojson response_object(std::string_view status, bool done, const RequestOutcome* outcome) const {
    const ResponsesFields& f = *fields_;
    ojson r;
    r["id"] = id_;
    r["object"] = "response";
    r["created_at"] = created_;
    r["status"] = status;
    r["background"] = false;
    r["error"] = nullptr;
    r["incomplete_details"] = status == "incomplete" ? ojson{{"reason", "max_output_tokens"}} : ojson(nullptr);
    r["instructions"] = f.instructions ? ojson(*f.instructions) : ojson(nullptr);
    r["max_output_tokens"] = f.max_output_tokens ? ojson(*f.max_output_tokens) : ojson(nullptr);
    r["max_tool_calls"] = nullptr;
    r["model"] = model_;
    ojson output = ojson::array();
    const std::int64_t n = done ? output_->length() : 0;
    if (done && reasoning_ > 0) {
      const ojson part = part_json(true, text(true, n));
      output.push_back(item_json(true, &part));
    }
    if (done && n > reasoning_ && function_call_) {
      const std::string arguments = text(false, n);
      output.push_back(function_call_json(&arguments));
    } else if (done && n > reasoning_) {
      const ojson part = part_json(false, text(false, n));
      output.push_back(item_json(false, &part));
    }
    r["output"] = std::move(output);
    r["parallel_tool_calls"] = echo_->parallel_tool_calls;
    r["previous_response_id"] = f.previous_response_id ? ojson(*f.previous_response_id) : ojson(nullptr);
    r["prompt_cache_key"] = nullptr;
    r["reasoning"] = {{"effort", f.effort ? ojson(*f.effort) : ojson(nullptr)},
                      {"summary", f.summary ? ojson(*f.summary) : ojson(nullptr)}};
    r["safety_identifier"] = nullptr;
    r["service_tier"] = "auto";
    r["store"] = f.store;
    r["temperature"] = f.temperature.value_or(1.0);
    r["text"] = {{"format", echo_->format}, {"verbosity", "medium"}};
    r["tool_choice"] = echo_->tool_choice;
    r["tools"] = echo_->tools;
    r["top_logprobs"] = 0;
    r["top_p"] = f.top_p.value_or(1.0);
    r["truncation"] = "disabled";
    if (done) {
      const std::int64_t cached = outcome != nullptr ? outcome->cached_tokens : 0;
      ojson usage;
      usage["input_tokens"] = prompt_tokens_;
      usage["input_tokens_details"] = {{"cached_tokens", cached}};
      usage["output_tokens"] = n;
      usage["output_tokens_details"] = {{"reasoning_tokens", reasoning_}};
      usage["total_tokens"] = prompt_tokens_ + n;
      r["usage"] = std::move(usage);
    } else {
      r["usage"] = nullptr;
    }
    r["user"] = nullptr;
    r["metadata"] = ojson::object();
    if (outcome != nullptr) r["llmload"] = llmload_json_object(*outcome);
    return r;
  }

  std::string id_;
  std::string message_id_;
  std::string reasoning_id_;
  std::string model_;
  std::int64_t created_;
  std::int64_t prompt_tokens_;
  std::shared_ptr<const ResponsesFields> fields_;
  std::shared_ptr<const OutputSequence> output_;
  std::int64_t reasoning_;
  std::shared_ptr<const ResponsesToolEcho> echo_;
  bool function_call_ = false;  ///< the answer item is a function_call (message_id_ is its "fc_" id)
  std::string tool_name_;
  std::string call_id_;         ///< "call_…"
};

}  // namespace

std::unique_ptr<const ApiEncoder> make_responses_encoder(const GenerationJob& job,
                                                         std::shared_ptr<const OutputSequence> output) {
  return std::make_unique<const ResponsesEncoder>(job, std::move(output));
}

}  // namespace llmload::server
