// The OpenAI Responses API (POST /v1/responses; --backend openai-responses): its stream of typed
// events and its non-streamed response object. Which events carry output (docs/metrics.md, "The
// first token"): response.output_text.delta and response.refusal.delta (answer),
// response.function_call_arguments.delta (a tool call's arguments: answer, not text),
// response.reasoning_text.delta and response.reasoning_summary_text.delta (reasoning). Every
// other event is structural (response.created, response.in_progress, response.output_item.added,
// response.content_part.added, the .done events) and never counts. response.completed and
// response.incomplete end the stream with the usage; response.failed and error are errors.
#include <string>

#include "decode_json.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {
namespace responses_impl {
namespace {

using nlohmann::json;
using namespace detail;

// usage: {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
// "output_tokens_details": {"reasoning_tokens"}, "total_tokens"}; nullopt when absent or invalid.
std::optional<Usage> read_responses_usage(const json& response) {
  auto it = response.find("usage");
  if (it == response.end() || !it->is_object()) return std::nullopt;
  bool valid = true;
  Usage u;
  u.prompt_tokens = count_field(*it, "input_tokens", valid).value_or(0);
  u.completion_tokens = count_field(*it, "output_tokens", valid).value_or(0);
  if (auto d = it->find("input_tokens_details"); d != it->end() && d->is_object()) {
    u.cached_tokens = count_field(*d, "cached_tokens", valid);
  }
  if (auto d = it->find("output_tokens_details"); d != it->end() && d->is_object()) {
    u.reasoning_tokens = count_field(*d, "reasoning_tokens", valid);
  }
  if (!valid) return std::nullopt;
  return u;
}

// A response's status as a finish reason: completed -> stop (tool_calls when its output has a
// function call); incomplete -> length when it ran out of max_output_tokens, else the reason given.
std::optional<std::string> finish_of(const json& response) {
  const std::string status = string_member(response, "status");
  if (status == "completed") {
    // A response that ended in a function call: chat's "tool_calls", one vocabulary in result.json.
    if (auto out = response.find("output"); out != response.end() && out->is_array()) {
      for (const auto& item : *out) {
        if (item.is_object() && string_member(item, "type") == "function_call") return std::string("tool_calls");
      }
    }
    return std::string("stop");
  }
  if (status == "incomplete") {
    auto d = response.find("incomplete_details");
    const std::string reason = d != response.end() && d->is_object() ? string_member(*d, "reason") : std::string();
    return reason == "max_output_tokens" ? std::string("length") : (reason.empty() ? status : reason);
  }
  if (status.empty()) return std::nullopt;
  return status;
}

// The output item an event belongs to (response.output_item.added,
// response.function_call_arguments.delta): its "output_index", 0 when absent.
std::int64_t output_index(const json& j) {
  auto i = j.find("output_index");
  return i != j.end() && i->is_number_integer() ? i->get<std::int64_t>() : 0;
}

// What structural events tell a multi-turn or structured-output request: the response's id
// (response.created, and again in response.completed) and a function call's call_id and name
// (response.output_item.added).
void capture_structure(StreamUpdate& u, const std::string& type, const json& j) {
  auto r = j.find("response");
  if (r != j.end() && r->is_object()) {
    if (const std::string* id = string_field(*r, "id")) u.response_id = *id;
  }
  if (type != "response.output_item.added") return;
  auto item = j.find("item");
  if (item == j.end() || !item->is_object() || string_member(*item, "type") != "function_call") return;
  ToolCallPiece p;
  p.index = output_index(j);
  p.id = string_member(*item, "call_id");
  if (p.id.empty()) p.id = string_member(*item, "id");
  p.name = string_member(*item, "name");
  p.arguments = string_member(*item, "arguments");
  u.tool_calls.push_back(std::move(p));
}

std::string failure_message(const json& j) {
  auto r = j.find("response");
  if (r != j.end() && r->is_object()) {
    if (auto e = r->find("error"); e != r->end() && !e->is_null()) return error_text(*e);
  }
  const std::string m = error_body_text(j);
  return m.empty() ? std::string("the response failed") : m;
}

}  // namespace
}  // namespace responses_impl

StreamUpdate OpenAiStreamDecoder::decode_responses(StreamUpdate u, const nlohmann::json& j) {
  using namespace responses_impl;
  const std::string type = string_member(j, "type");
  if (type.empty()) {
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "a Responses API event without \"type\": " + excerpt(j.dump(), 120);
    return u;
  }
  const bool answer_text = type == "response.output_text.delta" || type == "response.refusal.delta";
  const bool reasoning = type == "response.reasoning_text.delta" || type == "response.reasoning_summary_text.delta";
  const bool tool_args = type == "response.function_call_arguments.delta";
  if (answer_text || reasoning || tool_args) {
    const std::string* delta = string_field(j, "delta");
    const bool output = delta != nullptr && !delta->empty();
    if (output && capture_text_) {
      if (answer_text) u.text = *delta;
      if (reasoning) u.reasoning_text = *delta;
      if (tool_args) u.tool_calls.push_back(ToolCallPiece{output_index(j), {}, {}, *delta});
    }
    u.answer = output && !reasoning;
    count_output(u, output);
    return u;
  }
  if (capture_text_) capture_structure(u, type, j);
  if (type == "response.completed" || type == "response.incomplete") {
    const json& response = j.contains("response") && j["response"].is_object() ? j["response"] : j;
    u.usage = read_responses_usage(response);
    u.finish_reason = finish_of(response);
    if (!u.server_timing) u.server_timing = read_server_timing(response);
    u.kind = StreamUpdate::Kind::kDone;
    return u;
  }
  if (type == "response.failed" || type == "error") {
    u.kind = StreamUpdate::Kind::kError;
    u.message = failure_message(j);
    return u;
  }
  return u;  // structural: response.created, .in_progress, .output_item.added, .content_part.added, .done events
}

namespace detail {

WholeResponse whole_responses_body(WholeResponse r, const nlohmann::json& j) {
  using nlohmann::json;
  auto output = j.find("output");
  if (output == j.end() || !output->is_array()) {
    r.message = "a Responses API body without an \"output\" array: " + excerpt(j.dump(), 120);
    return r;
  }
  r.ok = true;
  r.response_id = string_member(j, "id");
  r.usage = responses_impl::read_responses_usage(j);
  r.finish_reason = responses_impl::finish_of(j);
  for (const auto& item : *output) {
    if (!item.is_object()) continue;
    const std::string type = string_member(item, "type");
    if (type == "message") {
      if (auto c = item.find("content"); c != item.end() && c->is_array()) {
        for (const auto& part : *c) {
          if (!part.is_object()) continue;
          const std::string* t = string_field(part, string_member(part, "type") == "refusal" ? "refusal" : "text");
          if (t != nullptr && !t->empty()) {
            r.text += *t;
            r.has_output = r.has_answer = true;
          }
        }
      }
    } else if (type == "reasoning") {
      for (const char* list : {"content", "summary"}) {
        auto c = item.find(list);
        if (c == item.end() || !c->is_array()) continue;
        for (const auto& part : *c) {
          const std::string* t = part.is_object() ? string_field(part, "text") : nullptr;
          if (t != nullptr && !t->empty()) {
            r.reasoning_text += *t;
            r.has_output = true;
          }
        }
      }
    } else if (type == "function_call") {
      if (nonempty_string(item, "arguments")) r.has_output = r.has_answer = true;
      std::string id = string_member(item, "call_id");
      if (id.empty()) id = string_member(item, "id");
      r.tool_calls.push_back(ToolCall{std::move(id), string_member(item, "name"), string_member(item, "arguments")});
    }
  }
  return r;
}

}  // namespace detail
}  // namespace llmload
