#pragma once
// JSON helpers shared by the stream decoders (internal to loadgen/src/core): bounded parsing,
// typed field access, the message of an error body in every shape servers use, excerpts.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload::detail {

/// Largest token count believed (2^40): a count outside [0, kMaxUsageCount] (negative, a huge
/// unsigned, or absurd) is not a token count, and would overflow the token arithmetic downstream.
inline constexpr std::int64_t kMaxUsageCount = std::int64_t{1} << 40;

/// Parses a JSON payload; discarded (as on a syntax error) when nested deeper than 64 levels.
nlohmann::json parse_payload(std::string_view text);
/// A finite, non-negative number member, or nullopt.
std::optional<double> number_field(const nlohmann::json& obj, const char* key);
/// llmload-server's ground truth: {"llmload": {"queue_s", "first_token_s", "last_token_s"}}.
std::optional<ServerTiming> read_server_timing(const nlohmann::json& j);
/// A token count member: nullopt when absent or not an integer; sets `valid` false when it is an
/// integer outside [0, kMaxUsageCount] (the whole usage object is then not believed).
std::optional<std::int64_t> count_field(const nlohmann::json& obj, const char* key, bool& valid);
/// A string member, or nullptr.
const std::string* string_field(const nlohmann::json& obj, const char* key);
/// True when the member is a non-empty string.
bool nonempty_string(const nlohmann::json& obj, const char* key);
/// The message of an error value (an object's "message", a string, else its dump).
std::string error_text(const nlohmann::json& err);
/// A string member of `j`, or "".
std::string string_member(const nlohmann::json& j, const char* key);
/// The message of an error body that is a JSON object; "" when it has none of the known members.
std::string error_body_text(const nlohmann::json& j);
/// `s` cut at `max_len` bytes ("..." after), line breaks as spaces, other control bytes as '?'.
std::string excerpt(std::string_view s, std::size_t max_len);

/// Non-streamed bodies of the OpenAI Responses API and the Anthropic Messages API (200 OK, already
/// parsed, not an error): their output text, reasoning, usage and finish reason into `r`.
WholeResponse whole_responses_body(WholeResponse r, const nlohmann::json& j);  // responses_decoder.cpp
WholeResponse whole_anthropic_body(WholeResponse r, const nlohmann::json& j);  // anthropic_decoder.cpp

}  // namespace llmload::detail
