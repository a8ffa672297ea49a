#pragma once
// What the server knows about a finished (or finishing) generation beyond its tokens: the
// server's own timings (ground truth a load generator can compare its measurements with) and the
// engine's facts (cached prompt tokens, preemptions). The response encoder writes them into the
// final events / the non-streaming body under the key "llmload" (a field OpenAI clients ignore):
//   "llmload":{"arrival_unix_ns":..,"queue_s":..,"first_token_s":..,"first_output_token_s":..,"last_token_s":..,
//              "preemptions":..,"cached_tokens":..[,"wrong_answer":true|false][,"diverged_at":k]
//              [,"invalid_output":"json"|"schema"]}
// "wrong_answer" is present when the output began with an answer, "diverged_at" (the index of
// the first diverged token) when the output diverged (output_sequence.hpp).
// All *_s durations are from the arrival (the request body fully read), in seconds, measured on
// the server's monotonic clock when the bytes were handed to the socket.

#include <cstdint>
#include <optional>
#include <string>

namespace llmload::server {

struct ServerTiming {
  std::int64_t arrival_unix_ns = 0;  ///< wall clock at arrival (for humans; durations below are monotonic)
  double queue_s = 0;                ///< arrival -> first scheduled by the engine
  double first_token_s = 0;          ///< arrival -> first token written (of any kind, reasoning included)
  /// arrival -> first non-reasoning token written (== first_token_s without reasoning); NaN (null
  /// on the wire) when the output is all reasoning.
  double first_output_token_s = 0;
  double last_token_s = 0;           ///< arrival -> last token written
};

struct RequestOutcome {
  ServerTiming timing;
  std::int64_t cached_tokens = 0;  ///< prompt tokens served from the prefix cache (usage.prompt_tokens_details)
  std::int64_t preemptions = 0;    ///< times the engine preempted this request (recomputed)
  std::optional<bool> wrong_answer;         ///< with an answer: whether the error model made it wrong
  std::optional<std::int64_t> diverged_at;  ///< the first diverged token's index, if it diverged
  /// The invalid-output fault's variant ("json" or "schema") when it broke this request's
  /// structured output (invalid_output.hpp).
  std::optional<std::string> invalid_output;
};

}  // namespace llmload::server
