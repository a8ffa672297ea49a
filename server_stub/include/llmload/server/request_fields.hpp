#pragma once
// Reading the fields of a request body, the way every generation endpoint checks them: null means
// unset (as in vLLM's models), types are checked strictly (no "10" for 10), and a bad field is a
// 400 ApiException naming it in `param`. Pure; shared by generation_request.cpp (completions, chat,
// /generate), responses_request.cpp and messages_request.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace llmload::server {

struct GenerationRequest;

/// A JSON value's type as a client would name it: "null", "boolean", "integer", "number",
/// "string", "array", "object".
std::string_view type_name(const nlohmann::json& v);

/// The field, or nullptr when absent or null.
const nlohmann::json* field(const nlohmann::json& obj, const char* name);

/// Throws 400 "`name` must be <expected>, got <type>" with param `name`.
[[noreturn]] void wrong_type(const char* name, std::string_view expected, const nlohmann::json& got);

std::optional<bool> get_bool(const nlohmann::json& obj, const char* name);
/// Integers only (no "10", no 10.5). Values beyond int64 saturate (they fail range checks later).
std::optional<std::int64_t> get_int(const nlohmann::json& obj, const char* name);
std::optional<double> get_number(const nlohmann::json& obj, const char* name);
std::optional<std::string> get_string(const nlohmann::json& obj, const char* name);
/// A requested output length: an integer >= 1, as vLLM's SamplingParams require.
std::optional<std::int64_t> get_max_tokens(const nlohmann::json& body, const char* name);

/// Context-length and min_tokens checks once the prompt size and output length are known, with
/// vLLM's texts. `prompt_field` / `max_field` name the fields for `param`.
void check_lengths(GenerationRequest& req, std::int64_t max_model_len, const char* prompt_field,
                   const char* max_field);

}  // namespace llmload::server
