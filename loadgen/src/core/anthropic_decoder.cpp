// The Anthropic Messages API (POST /v1/messages; --backend anthropic): its stream of typed
// events and its non-streamed message. Which events carry output (docs/metrics.md, "The first
// token"): content_block_delta with a text_delta (answer), an input_json_delta (a tool call's
// input: answer, not text) or a thinking_delta (reasoning). message_start, content_block_start,
// content_block_stop, signature_delta, ping and message_delta are structural and never count;
// message_delta carries the stop reason and the output token count, message_stop ends the
// stream, and an error event is an in-stream error.
#include <string>

#include "decode_json.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {
namespace anthropic_impl {
namespace {

using nlohmann::json;
using namespace detail;

// usage: {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
// "output_tokens", "output_tokens_details": {"thinking_tokens"}}. The prompt is all three input counts (input_tokens excludes the cached part);
// the cache reads are its cached tokens. `valid` false: a count was out of range.
void read_counts(const json& usage, Usage& u, bool& have_input, bool& valid) {
  const auto input = count_field(usage, "input_tokens", valid);
  const auto created = count_field(usage, "cache_creation_input_tokens", valid);
  const auto read = count_field(usage, "cache_read_input_tokens", valid);
  if (input || created || read) {
    u.prompt_tokens = input.value_or(0) + created.value_or(0) + read.value_or(0);
    if (read) u.cached_tokens = read;
    have_input = true;
  }
  if (auto out = count_field(usage, "output_tokens", valid)) u.completion_tokens = *out;
  // The thinking tokens among output_tokens (output_tokens_details.thinking_tokens; newer API
  // versions): the reasoning count, which thinking_delta events cannot give (a delta carries
  // many tokens).
  if (auto d = usage.find("output_tokens_details"); d != usage.end() && d->is_object()) {
    if (auto t = count_field(*d, "thinking_tokens", valid)) u.reasoning_tokens = t;
  }
}

// The content block an event belongs to: its "index", 0 when absent.
std::int64_t block_index(const json& j) {
  auto i = j.find("index");
  return i != j.end() && i->is_number_integer() ? i->get<std::int64_t>() : 0;
}

// Anthropic's stop reasons as OpenAI's finish reasons (the one vocabulary of result.json).
std::string finish_of(const std::string& stop_reason) {
  if (stop_reason == "end_turn" || stop_reason == "stop_sequence") return "stop";
  if (stop_reason == "max_tokens") return "length";
  if (stop_reason == "tool_use") return "tool_calls";
  return stop_reason;
}

}  // namespace
}  // namespace anthropic_impl

StreamUpdate OpenAiStreamDecoder::decode_anthropic(StreamUpdate u, const nlohmann::json& j) {
  using namespace anthropic_impl;
  using nlohmann::json;
  const std::string type = string_member(j, "type");
  if (type.empty()) {
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "a Messages API event without \"type\": " + excerpt(j.dump(), 120);
    return u;
  }
  if (type == "content_block_delta") {
    auto d = j.find("delta");
    if (d == j.end() || !d->is_object()) {
      u.kind = StreamUpdate::Kind::kMalformed;
      u.message = "content_block_delta without a \"delta\" object";
      return u;
    }
    const std::string dt = string_member(*d, "type");
    const char* field = dt == "text_delta" ? "text" : dt == "thinking_delta" ? "thinking"
                                           : dt == "input_json_delta"      ? "partial_json"
                                                                            : nullptr;
    const std::string* piece = field != nullptr ? string_field(*d, field) : nullptr;
    const bool output = piece != nullptr && !piece->empty();
    if (output && capture_text_) {
      if (dt == "text_delta") u.text = *piece;
      if (dt == "thinking_delta") u.reasoning_text = *piece;
      if (dt == "input_json_delta") u.tool_calls.push_back(ToolCallPiece{block_index(j), {}, {}, *piece});
    }
    u.answer = output && dt != "thinking_delta";
    count_output(u, output);
    return u;
  }
  if (type == "message_start") {
    auto m = j.find("message");
    if (m != j.end() && m->is_object()) {
      if (!u.server_timing) u.server_timing = read_server_timing(*m);
      if (auto us = m->find("usage"); us != m->end() && us->is_object()) {
        Usage start;
        bool have_input = false, valid = true;
        read_counts(*us, start, have_input, valid);
        if (valid && have_input) message_start_usage_ = start;
      }
    }
    return u;
  }
  if (type == "message_delta") {
    if (auto d = j.find("delta"); d != j.end() && d->is_object()) {
      if (const std::string* r = string_field(*d, "stop_reason")) u.finish_reason = finish_of(*r);
    }
    if (auto us = j.find("usage"); us != j.end() && us->is_object()) {
      // output_tokens here is the total so far; the input side is message_start's unless given again.
      Usage total = message_start_usage_.value_or(Usage{});
      bool have_input = false, valid = true;
      read_counts(*us, total, have_input, valid);
      if (valid) u.usage = total;
    }
    return u;
  }
  if (type == "message_stop") {
    u.kind = StreamUpdate::Kind::kDone;
    return u;
  }
  if (type == "error") {  // {"type": "error", "error": null}: the message is all there is
    u.kind = StreamUpdate::Kind::kError;
    u.message = error_body_text(j).empty() ? std::string("error event") : error_body_text(j);
    return u;
  }
  if (type == "content_block_start" && capture_text_) {
    // A tool_use block opens with its id and name (its input arrives as input_json_delta pieces).
    auto b = j.find("content_block");
    if (b != j.end() && b->is_object() && string_member(*b, "type") == "tool_use") {
      u.tool_calls.push_back(ToolCallPiece{block_index(j), string_member(*b, "id"), string_member(*b, "name"), {}});
    }
  }
  return u;  // structural: content_block_start/stop, ping, unknown future events
}

namespace detail {

WholeResponse whole_anthropic_body(WholeResponse r, const nlohmann::json& j) {
  using namespace anthropic_impl;
  auto content = j.find("content");
  if (content == j.end() || !content->is_array()) {
    r.message = "a Messages API body without a \"content\" array: " + excerpt(j.dump(), 120);
    return r;
  }
  r.ok = true;
  if (auto us = j.find("usage"); us != j.end() && us->is_object()) {
    Usage u;
    bool have_input = false, valid = true;
    read_counts(*us, u, have_input, valid);
    if (valid) r.usage = u;
  }
  if (const std::string* s = string_field(j, "stop_reason")) r.finish_reason = finish_of(*s);
  for (const auto& block : *content) {
    if (!block.is_object()) continue;
    const std::string type = string_member(block, "type");
    if (type == "text" && nonempty_string(block, "text")) {
      r.text += *string_field(block, "text");
      r.has_output = r.has_answer = true;
    } else if (type == "thinking" && nonempty_string(block, "thinking")) {
      r.reasoning_text += *string_field(block, "thinking");
      r.has_output = true;
    } else if (type == "tool_use" && block.contains("input")) {
      r.has_output = r.has_answer = true;
      r.tool_calls.push_back(ToolCall{string_member(block, "id"), string_member(block, "name"), block["input"].dump()});
    }
  }
  return r;
}

}  // namespace detail
}  // namespace llmload
