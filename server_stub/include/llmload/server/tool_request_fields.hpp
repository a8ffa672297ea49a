#pragma once
// The tool and output-format fields of each API, validated and turned into the request's
// structured output (structured_output.hpp; docs/server-apis.md, "Tool calls and structured
// output"). A bad shape is a 400 ApiException naming the field (`param`), in the API's wording.
//   chat:        tools [{"type":"function","function":{"name","description","parameters","strict"}}],
//                tool_choice "none" | "auto" | "required" | {"type":"function","function":{"name"}},
//                parallel_tool_calls (a boolean), response_format {"type":"text"} |
//                {"type":"json_object"} | {"type":"json_schema","json_schema":{"name","schema","strict"}}
//   completions: response_format only (tools are not a completions field: ignored, as vLLM does)
//   Responses:   tools [{"type":"function","name","description","parameters","strict"}],
//                tool_choice "none" | "auto" | "required" | {"type":"function","name"},
//                text.format {"type":"text"} | {"type":"json_object"} |
//                {"type":"json_schema","name","schema","strict","description"}
//   Messages:    tools [{"name","description","input_schema"}] (type absent or "custom"),
//                tool_choice {"type":"auto"|"any"|"tool"|"none","name"?,"disable_parallel_tool_use"?},
//                output_config {"format": {"type":"json_schema","schema"}, "effort"} (the SDK's
//                GA field) or the beta's output_format {"type":"json_schema","schema"}
// Server-side tools (web search, code execution, ...) are refused: the mock has none.

#include <cstdint>
#include <memory>
#include <string>

#include "llmload/server/json.hpp"
#include "llmload/server/structured_output.hpp"

namespace llmload::server {

/// Chat (`chat` true) or completions: the structured output, or null for plain text.
std::shared_ptr<const StructuredOutput> chat_structured_output(const nlohmann::json& body, std::uint64_t output_seed,
                                                               bool chat);

/// What a Responses response object echoes of these fields (OpenAI's shapes).
struct ResponsesToolEcho {
  ojson tools = ojson::array();
  ojson tool_choice = "auto";
  ojson format = {{"type", "text"}};
  bool parallel_tool_calls = true;
};

/// Responses: the structured output, or null; fills `echo`.
std::shared_ptr<const StructuredOutput> responses_structured_output(const nlohmann::json& body,
                                                                    std::uint64_t output_seed, ResponsesToolEcho& echo);

/// Messages: the structured output, or null.
std::shared_ptr<const StructuredOutput> messages_structured_output(const nlohmann::json& body,
                                                                   std::uint64_t output_seed);

}  // namespace llmload::server
