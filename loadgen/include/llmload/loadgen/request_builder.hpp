#pragma once
// Builds the HTTP request of each scheduled request: endpoint path, headers and JSON body, for
// the backend of the run (OpenAI completions, chat or Responses, Anthropic Messages, SGLang
// /generate).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/transport.hpp"
#include "llmload/loadgen/workload.hpp"

namespace llmload {

/// A parsed --backend.
struct BackendInfo {
  ApiKind api = ApiKind::kCompletions;
  std::string name;          // openai-completions, openai-chat, openai-responses, anthropic, sglang
  std::string default_path;  // /v1/completions, /v1/chat/completions, /v1/responses, /v1/messages, /generate
};

/// The Anthropic API version llmload speaks (the `anthropic-version` header).
inline constexpr const char* kAnthropicVersion = "2023-06-01";

/// How the API key travels for a backend: `Authorization: Bearer KEY` (OpenAI-compatible
/// servers; `bearer`, for HttpRequest::set_headers) or Anthropic's `x-api-key: KEY` with
/// `anthropic-version` (`fields`, added to llmload's own). The one rule, for every request a run
/// sends (generation, /v1/models, /tokenize).
struct KeyFields {
  std::vector<std::pair<std::string, std::string>> fields;
  std::string bearer;
};
KeyFields key_fields(const BackendInfo& backend, const std::string& api_key);

/// Parses a backend name; "openai" and "vllm" mean openai-completions, "completions"/"chat"
/// are accepted too. Throws ConfigError listing the choices.
BackendInfo parse_backend(std::string_view name);

/// One earlier turn of a multi-turn session: the user prompt and the assistant's answer. An
/// agent turn (issue 19) also carries the assistant's tool calls: each gets a result message
/// after it (tool_result_text), and the next turn then sends no new user prompt (its new input is
/// those results), as an agent loop does.
struct Turn {
  std::string user;  // "" when this turn continued after tool results
  std::string assistant;
  std::vector<ToolCall> tool_calls = {};
  std::string response_id = {};  // Responses API: the response's id (--conversation-state server)
};

/// The result an agent session sends back for a tool call: a small JSON object naming the tool,
/// deterministic for the call.
std::string tool_result_text(const ToolCall& call);
/// The id a tool call is answered with: its own, else one made from its position.
std::string tool_call_id(const ToolCall& call, std::size_t turn, std::size_t position);
/// True when the last turn ended in tool calls: the next request's new input is their results.
inline bool continues_tool_calls(const std::vector<Turn>& history) {
  return !history.empty() && !history.back().tool_calls.empty();
}

/// Contract: build() is deterministic for (config, item, history). The config is read when the
/// builder is made (the body template): it must not change while the builder is in use.
class RequestBuilder {
 public:
  /// `base_path` is the path prefix of the base URL (e.g. "" or "/proxy"); `host_header` is the
  /// value of the Host header. `workload` supplies the content of request i (nullptr: prompts of
  /// cfg.input_tokens synthesized words, cfg.output_tokens out). Throws ConfigError when
  /// cfg.extra_body is not a JSON object or the backend is unknown.
  RequestBuilder(const ScenarioConfig& cfg, std::string base_path, std::string host_header,
                 const Workload* workload = nullptr);
  /// The content of request `index` (finite workloads wrap around).
  WorkItem item(std::uint64_t index) const;
  /// The request for `item`, with the conversation so far (multi-turn sessions) before it.
  /// `model`: the request's model (--model a,b,c); empty: the run's one model.
  HttpRequest build(const WorkItem& item, const std::vector<Turn>& history = {}, std::string_view model = {}) const;
  HttpRequest build(std::uint64_t index) const { return build(item(index)); }
  std::string path() const;  // e.g. "/v1/completions"
  /// True when bodies without history come from the pre-serialized template (the fast path).
  bool templated() const { return !body_template_.empty(); }
  /// The body as the DOM path makes it (the template's reference; for tests).
  std::string dom_body(const WorkItem& item, const std::vector<Turn>& history = {}, std::string_view model = {}) const;
  const BackendInfo& backend() const { return backend_; }

 private:
  const ScenarioConfig& cfg_;
  std::string base_path_;
  std::string host_header_;
  const Workload* workload_;
  BackendInfo backend_;
  nlohmann::json extra_body_;
  std::uint64_t data_seed_;
  TokenModel builtin_;
  std::string path_;
  struct BodyPiece {
    std::string text;
    enum Kind { kText, kPrompt, kOutputTokens, kModel } kind;
  };
  std::vector<BodyPiece> body_template_;  // empty: every body through the DOM

  nlohmann::json make_body(const WorkItem& item, const std::vector<Turn>& history, const std::string& model) const;
  nlohmann::json responses_body(const WorkItem& item, const std::vector<Turn>& history, const std::string& model) const;
  nlohmann::json anthropic_body(const WorkItem& item, const std::vector<Turn>& history, const std::string& model) const;
  void make_template();
};

}  // namespace llmload
