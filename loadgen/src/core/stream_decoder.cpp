#include "llmload/loadgen/stream_decoder.hpp"

#include <cmath>

#include "chunk_scan.hpp"
#include "decode_json.hpp"

#include <nlohmann/json.hpp>

namespace llmload {
namespace {

using nlohmann::json;
using namespace detail;


// A usage object with an invalid count is ignored as a whole (tokens are then counted from events).
std::optional<Usage> read_usage(const json& j) {
  auto it = j.find("usage");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  bool valid = true;
  Usage u;
  u.prompt_tokens = count_field(*it, "prompt_tokens", valid).value_or(0);
  u.completion_tokens = count_field(*it, "completion_tokens", valid).value_or(0);
  if (auto d = it->find("prompt_tokens_details"); d != it->end() && d->is_object()) {
    u.cached_tokens = count_field(*d, "cached_tokens", valid);
  }
  if (auto d = it->find("completion_tokens_details"); d != it->end() && d->is_object()) {
    u.reasoning_tokens = count_field(*d, "reasoning_tokens", valid);
  }
  if (!valid) return std::nullopt;
  return u;
}

// The generated text of a choice (completions: text; chat: delta/message content).
void append_choice_text(const json& choice, ApiKind api, std::string& out) {
  if (!choice.is_object()) return;
  if (api == ApiKind::kCompletions) {
    if (const auto* t = string_field(choice, "text")) out += *t;
    return;
  }
  auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) d = choice.find("message");
  if (d == choice.end() || !d->is_object()) return;
  if (const auto* t = string_field(*d, "content")) out += *t;
}

// The reasoning text of a chat choice: `reasoning_content` (DeepSeek, vLLM, SGLang) or
// `reasoning` (vLLM's newer name). Generated tokens like the answer's, but not part of it.
void append_choice_reasoning(const json& choice, ApiKind api, std::string& out) {
  if (!choice.is_object() || api == ApiKind::kCompletions) return;
  auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) d = choice.find("message");
  if (d == choice.end() || !d->is_object()) return;
  if (const auto* t = string_field(*d, "reasoning_content")) {
    out += *t;
  } else if (const auto* r = string_field(*d, "reasoning")) {
    out += *r;
  }
}

// The server's tokens of a choice: its "token_ids" (vLLM's return_token_ids), else the token
// strings of its "logprobs" (completions: {"tokens": [..]}; chat: {"content": [{"token"}]}).
// An element of an unexpected type makes the whole list unusable (From::kNone).
void append_choice_tokens(const json& choice, ApiKind api, ServerTokens& out) {
  if (!choice.is_object()) return;
  const auto unusable = [&] {
    out.from = ServerTokens::From::kNone;
    out.tokens.clear();
  };
  if (auto ids = choice.find("token_ids"); ids != choice.end() && ids->is_array()) {
    if (out.from == ServerTokens::From::kLogprobs) return unusable();
    out.from = ServerTokens::From::kTokenIds;
    for (const auto& id : *ids) {
      if (!id.is_number_integer()) return unusable();
      out.tokens.push_back(id.dump());
    }
    return;
  }
  auto lp = choice.find("logprobs");
  if (lp == choice.end() || !lp->is_object()) return;
  const json* list = nullptr;
  if (auto t = lp->find(api == ApiKind::kCompletions ? "tokens" : "content"); t != lp->end() && t->is_array()) list = &*t;
  if (list == nullptr) return;
  if (out.from == ServerTokens::From::kTokenIds) return unusable();
  out.from = ServerTokens::From::kLogprobs;
  for (const auto& t : *list) {
    const json* token = &t;
    if (api != ApiKind::kCompletions) {
      if (!t.is_object() || !t.contains("token")) return unusable();
      token = &t["token"];
    }
    if (!token->is_string()) return unusable();
    out.tokens.push_back(token->get<std::string>());
  }
}


// The tool-call pieces of a chat choice's delta (or whole message): each element of
// "tool_calls" with its index (else its position), id, function name and argument text.
void append_choice_tool_calls(const json& choice, std::vector<ToolCallPiece>& out) {
  if (!choice.is_object()) return;
  auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) d = choice.find("message");
  if (d == choice.end() || !d->is_object()) return;
  auto calls = d->find("tool_calls");
  if (calls == d->end() || !calls->is_array()) return;
  std::int64_t position = 0;
  for (const auto& c : *calls) {
    if (!c.is_object()) continue;
    ToolCallPiece p;
    p.index = position++;
    if (auto i = c.find("index"); i != c.end() && i->is_number_integer()) p.index = i->get<std::int64_t>();
    if (const auto* id = string_field(c, "id")) p.id = *id;
    if (auto f = c.find("function"); f != c.end() && f->is_object()) {
      if (const auto* n = string_field(*f, "name")) p.name = *n;
      if (const auto* a = string_field(*f, "arguments")) p.arguments = *a;
    }
    out.push_back(std::move(p));
  }
}

// True when a chat choice's delta carries a tool call with a name or argument text.
bool has_tool_call_output(const json& delta) {
  auto calls = delta.find("tool_calls");
  if (calls == delta.end() || !calls->is_array()) return false;
  for (const auto& c : *calls) {
    if (!c.is_object()) continue;
    auto f = c.find("function");
    if (f != c.end() && f->is_object() && (nonempty_string(*f, "arguments") || nonempty_string(*f, "name"))) return true;
  }
  return false;
}

// What a choice carries for this API: generated output of any kind, and output that is not
// reasoning (answer text or tool-call arguments; docs/metrics.md "The first token").
struct ChoiceOutput {
  bool output = false;
  bool answer = false;
};
ChoiceOutput choice_output(const json& choice, ApiKind api) {
  if (!choice.is_object()) return {};
  if (api == ApiKind::kCompletions) {
    const bool text = nonempty_string(choice, "text");
    return {text, text};
  }
  auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) {
    d = choice.find("message");  // tolerate servers that stream "message"
    if (d == choice.end() || !d->is_object()) return {};
  }
  const bool answer = nonempty_string(*d, "content") || has_tool_call_output(*d);
  const bool reasoning = nonempty_string(*d, "reasoning_content") || nonempty_string(*d, "reasoning");
  return {answer || reasoning, answer};
}

std::optional<std::string> finish_reason_of(const json& choices) {
  for (const auto& c : choices) {
    if (!c.is_object()) continue;
    auto f = c.find("finish_reason");
    if (f != c.end() && f->is_string()) return f->get<std::string>();
  }
  return std::nullopt;
}


}  // namespace

const char* to_string(ServerTokens::From from) {
  switch (from) {
    case ServerTokens::From::kTokenIds:
      return "token_ids";
    case ServerTokens::From::kLogprobs:
      return "logprobs";
    case ServerTokens::From::kNone:
      break;
  }
  return "none";
}

StreamUpdate OpenAiStreamDecoder::decode(const SseEvent& event) {
  StreamUpdate u;
  std::string_view data = event.data;
  while (!data.empty() && (data.back() == ' ' || data.back() == '\t')) data.remove_suffix(1);
  if (data == "[DONE]") {
    u.kind = StreamUpdate::Kind::kDone;
    return u;
  }
  // The common token chunk: a targeted scan instead of a full parse (falls back on anything else).
  if ((api_ == ApiKind::kCompletions || api_ == ApiKind::kChat) && !capture_text_) {
    if (auto f = detail::scan_chunk(data, api_)) {
      if (f->has_usage) {
        Usage us;
        us.prompt_tokens = f->prompt_tokens;
        us.completion_tokens = f->completion_tokens;
        u.usage = us;
      }
      if (!f->finish_reason.empty()) u.finish_reason = std::string(f->finish_reason);
      if (f->has_timing && f->first_token_s) {
        u.server_timing = ServerTiming{f->queue_s, f->first_token_s, f->last_token_s};
      }
      u.answer = f->answer;
      count_output(u, f->output);
      return u;
    }
  }
  json j = parse_payload(data);
  if (j.is_discarded() || !j.is_object()) {
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "SSE event is not a JSON object: " + excerpt(data, 120);
    return u;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    u.kind = StreamUpdate::Kind::kError;
    u.message = error_body_text(j);
    return u;
  }
  u.server_timing = read_server_timing(j);
  if (api_ == ApiKind::kSglang) return decode_sglang(std::move(u), j);
  if (api_ == ApiKind::kResponses) return decode_responses(std::move(u), j);
  if (api_ == ApiKind::kAnthropic) return decode_anthropic(std::move(u), j);
  u.usage = read_usage(j);
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) {
    if (u.usage) return u;  // a usage-only chunk without "choices" at all: tolerate
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "SSE event has no \"choices\" array: " + excerpt(data, 120);
    return u;
  }
  bool output = false;
  for (const auto& c : *choices) {
    const ChoiceOutput o = choice_output(c, api_);
    output = output || o.output;
    u.answer = u.answer || o.answer;
  }
  u.finish_reason = finish_reason_of(*choices);
  if (output && capture_text_) {
    for (const auto& c : *choices) {
      append_choice_text(c, api_, u.text);
      append_choice_reasoning(c, api_, u.reasoning_text);
      append_choice_tokens(c, api_, u.server_tokens);
      append_choice_tool_calls(c, u.tool_calls);
    }
  }
  count_output(u, output);
  return u;
}

void OpenAiStreamDecoder::count_output(StreamUpdate& u, bool output) {
  if (output) {
    u.kind = StreamUpdate::Kind::kOutput;
    u.tokens = 1;
    if (u.usage) {
      // Per-chunk usage (continuous usage stats): the growth of completion_tokens is n_k.
      const std::int64_t growth = u.usage->completion_tokens - last_completion_tokens_;
      if (have_running_usage_ || u.usage->completion_tokens > 0) u.tokens = std::max<std::int64_t>(1, growth);
    }
  }
  if (u.usage) {
    last_completion_tokens_ = u.usage->completion_tokens;
    have_running_usage_ = true;
  }
}

// SGLang's native /generate stream: {"text": cumulative text, "output_ids": [...], "meta_info":
// {"id", "finish_reason": null | {"type": ...}, "prompt_tokens", "completion_tokens" (cumulative),
// "cached_tokens", ...}}. Output is the growth of the text; its tokens the growth of
// completion_tokens.
StreamUpdate OpenAiStreamDecoder::decode_sglang(StreamUpdate u, const json& j) {
  auto meta = j.find("meta_info");
  const std::string* text = string_field(j, "text");
  if (text == nullptr || meta == j.end() || !meta->is_object()) {
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "SGLang event lacks \"text\" or \"meta_info\"";
    return u;
  }
  if (!u.server_timing) u.server_timing = read_server_timing(*meta);
  if (auto f = meta->find("finish_reason"); f != meta->end() && f->is_object()) {
    if (const auto* type = string_field(*f, "type")) u.finish_reason = *type;
  }
  Usage usage;
  bool have_usage = false;
  if (auto p = number_field(*meta, "prompt_tokens")) usage.prompt_tokens = static_cast<std::int64_t>(*p), have_usage = true;
  if (auto c = number_field(*meta, "completion_tokens")) usage.completion_tokens = static_cast<std::int64_t>(*c), have_usage = true;
  if (auto c = number_field(*meta, "cached_tokens")) usage.cached_tokens = static_cast<std::int64_t>(*c);
  if (usage.prompt_tokens > kMaxUsageCount || usage.completion_tokens > kMaxUsageCount) have_usage = false;
  if (have_usage) u.usage = usage;
  if (text->size() > sglang_text_len_) {
    u.kind = StreamUpdate::Kind::kOutput;
    if (capture_text_) u.text = text->substr(sglang_text_len_);
    sglang_text_len_ = text->size();
    u.tokens = 1;
    if (have_usage) u.tokens = std::max<std::int64_t>(1, usage.completion_tokens - last_completion_tokens_);
  } else if (text->size() < sglang_text_len_) {
    u.kind = StreamUpdate::Kind::kMalformed;
    u.message = "SGLang's cumulative \"text\" got shorter between events";
    return u;
  }
  if (have_usage) last_completion_tokens_ = usage.completion_tokens;
  return u;
}

WholeResponse decode_whole_response(std::string_view body, ApiKind api) {
  WholeResponse r;
  json j = parse_payload(body);
  if (j.is_discarded() || !j.is_object()) {
    r.message = "response body is not a JSON object: " + excerpt(body, 120);
    return r;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    r.message = error_text(*e);
    return r;
  }
  r.server_timing = read_server_timing(j);
  if (api == ApiKind::kSglang) {
    OpenAiStreamDecoder d(api, /*capture_text=*/true);
    SseEvent whole;
    whole.data.assign(body);
    StreamUpdate u = d.decode(whole);
    if (u.kind == StreamUpdate::Kind::kMalformed || u.kind == StreamUpdate::Kind::kError) {
      r.message = u.message.empty() ? "response is not an SGLang /generate body" : u.message;
      return r;
    }
    r.ok = true;
    r.usage = u.usage;
    r.finish_reason = u.finish_reason;
    r.server_timing = u.server_timing;
    r.has_output = u.kind == StreamUpdate::Kind::kOutput;
    r.text = std::move(u.text);
    return r;
  }
  if (api == ApiKind::kResponses) return detail::whole_responses_body(std::move(r), j);
  if (api == ApiKind::kAnthropic) return detail::whole_anthropic_body(std::move(r), j);
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) {
    r.message = "response has no \"choices\" array: " + excerpt(body, 120);
    return r;
  }
  r.ok = true;
  r.usage = read_usage(j);
  r.finish_reason = finish_reason_of(*choices);
  for (const auto& c : *choices) {
    const ChoiceOutput o = choice_output(c, api);
    r.has_output = r.has_output || o.output;
    r.has_answer = r.has_answer || o.answer;
  }
  if (!choices->empty()) {
    append_choice_text(choices->front(), api, r.text);
    append_choice_reasoning(choices->front(), api, r.reasoning_text);
    append_choice_tokens(choices->front(), api, r.server_tokens);
    std::vector<ToolCallPiece> pieces;
    append_choice_tool_calls(choices->front(), pieces);
    for (auto& p : pieces) r.tool_calls.push_back(ToolCall{std::move(p.id), std::move(p.name), std::move(p.arguments)});
  }
  return r;
}

std::string body_excerpt(std::string_view s, std::size_t max_len) { return excerpt(s, max_len); }

std::string error_message_from_body(std::string_view body, std::size_t max_len) {
  json j = parse_payload(body);
  if (!j.is_discarded() && j.is_object()) {
    std::string text = error_body_text(j);
    if (!text.empty()) return excerpt(text, max_len);
  }
  return excerpt(body, max_len);
}

}  // namespace llmload
