#include "llmload/server/reasoning.hpp"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

struct EffortRow {
  std::string_view name;
  std::int64_t divisor;   ///< N / divisor (0: none); with multiplier for high
  std::int64_t multiplier;
  std::int64_t fixed;     ///< with N = 0
};
constexpr std::array<EffortRow, 5> kEfforts = {{{"none", 0, 0, 0},
                                                {"minimal", 4, 1, 8},
                                                {"low", 2, 1, 16},
                                                {"medium", 1, 1, 64},
                                                {"high", 1, 2, 256}}};

constexpr std::string_view kEffortNames = "one of \"none\", \"minimal\", \"low\", \"medium\", \"high\"";

std::int64_t effort_or_throw(const json& value, const char* param, std::int64_t configured) {
  if (!value.is_string()) wrong_type(param, kEffortNames.data(), value);
  const auto& name = value.get_ref<const std::string&>();
  const auto tokens = effort_tokens(name, configured);
  if (!tokens) throw_bad_request(fmt::format("`{}` must be {}, got \"{}\"", param, kEffortNames, name), param);
  return *tokens;
}

}  // namespace

std::optional<std::int64_t> effort_tokens(std::string_view effort, std::int64_t configured) {
  for (const auto& row : kEfforts) {
    if (row.name != effort) continue;
    if (row.divisor == 0) return 0;
    if (configured <= 0) return row.fixed;
    return std::max<std::int64_t>(1, configured / row.divisor * row.multiplier);
  }
  return std::nullopt;
}

std::int64_t chat_reasoning_tokens(const json& body, std::int64_t configured) {
  std::optional<std::int64_t> tokens;
  if (const json* effort = field(body, "reasoning_effort")) tokens = effort_or_throw(*effort, "reasoning_effort", configured);
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) wrong_type("chat_template_kwargs", "an object", *kwargs);
    const json* thinking = field(*kwargs, "enable_thinking");
    if (thinking != nullptr && !thinking->is_boolean()) {
      throw_bad_request(fmt::format("`chat_template_kwargs.enable_thinking` must be a boolean, got {}",
                                    type_name(*thinking)),
                        "chat_template_kwargs");
    }
    if (thinking != nullptr && !thinking->get<bool>()) return 0;
    if (thinking != nullptr && !tokens) tokens = effort_tokens("medium", configured);
  }
  return tokens.value_or(configured);
}

std::int64_t responses_reasoning_tokens(const json& body, std::int64_t configured, std::optional<std::string>& effort_out,
                                        std::optional<std::string>& summary_out) {
  const json* reasoning = field(body, "reasoning");
  if (reasoning == nullptr) return configured;
  if (!reasoning->is_object()) wrong_type("reasoning", "an object", *reasoning);
  if (const json* summary = field(*reasoning, "summary")) {
    if (!summary->is_string()) wrong_type("reasoning.summary", "a string", *summary);
    summary_out = summary->get<std::string>();
  }
  if (const json* effort = field(*reasoning, "effort")) {
    const std::int64_t tokens = effort_or_throw(*effort, "reasoning.effort", configured);
    effort_out = effort->get<std::string>();
    return tokens;
  }
  return *effort_tokens("medium", configured);
}

std::int64_t messages_thinking_tokens(const json& body, std::int64_t max_tokens, std::int64_t configured) {
  const json* thinking = field(body, "thinking");
  if (thinking == nullptr) return 0;
  if (!thinking->is_object()) wrong_type("thinking", "an object", *thinking);
  const json* type = field(*thinking, "type");
  if (type == nullptr || !type->is_string()) {
    throw_bad_request("thinking.type: Field required (\"enabled\", \"adaptive\" or \"disabled\")", "thinking");
  }
  const auto& kind = type->get_ref<const std::string&>();
  const std::int64_t medium = *effort_tokens("medium", configured);
  if (kind == "disabled") return 0;
  if (kind == "adaptive") return medium;
  if (kind != "enabled") {
    throw_bad_request(fmt::format("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled', got '{}'", kind),
                      "thinking");
  }
  const json* budget = field(*thinking, "budget_tokens");
  if (budget == nullptr) throw_bad_request("thinking.enabled.budget_tokens: Field required", "thinking");
  if (!budget->is_number_integer()) {
    throw_bad_request(fmt::format("thinking.enabled.budget_tokens: Input should be a valid integer, got {}",
                                  type_name(*budget)),
                      "thinking");
  }
  const std::int64_t b = budget->is_number_unsigned() && budget->get<std::uint64_t>() > 1ULL << 62
                             ? std::int64_t{1} << 62
                             : budget->get<std::int64_t>();
  if (b < 1) {
    throw_bad_request(fmt::format("thinking.enabled.budget_tokens: Input should be greater than or equal to 1, got {}", b),
                      "thinking");
  }
  if (b >= max_tokens) {
    throw_bad_request(fmt::format("`max_tokens` must be greater than `thinking.budget_tokens` (got max_tokens {}, "
                                  "budget_tokens {})",
                                  max_tokens, b),
                      "thinking");
  }
  return std::min(medium, b);
}

}  // namespace llmload::server
