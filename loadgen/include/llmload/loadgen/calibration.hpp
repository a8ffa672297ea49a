#pragma once
// Prompt token calibration: finds, with the server's own tokenizer (/tokenize), which words of the
// built-in vocabulary are single tokens and how many tokens the server adds to every prompt, so
// that synthesized prompts have exactly the requested token count. Pure logic: the counting is
// a callback (the net layer calls /tokenize).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/workload.hpp"

namespace llmload {

/// Counts the tokens of a prompt as the server would (nullopt: the server cannot tell).
using TokenCounter = std::function<std::optional<std::int64_t>(const std::string& prompt)>;

struct CalibrationResult {
  TokenModel model;
  nlohmann::json report;  // for the artifact: method, overhead, vocabulary, verification
};

/// Calibrates the built-in vocabulary with `count`. Returns nullopt when `count` answers nothing
/// (no /tokenize). `verify_tokens` is a prompt length to verify with (synthesized and counted).
/// Throws ConfigError when fewer than 16 single-token words remain (an unusual tokenizer).
std::optional<CalibrationResult> calibrate_token_model(const TokenCounter& count, std::int64_t verify_tokens,
                                                      std::uint64_t seed);

/// The report for the built-in estimate (no calibration).
nlohmann::json estimate_report(const std::string& why);

}  // namespace llmload
