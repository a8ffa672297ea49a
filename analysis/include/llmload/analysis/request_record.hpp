#pragma once
// The per-request record: timestamps (METRICS.md), tokens and outcome of one request.
// Plain data, produced by the load generator's recorder, consumed by analysis.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace llmload::analysis {

using Nanos = std::chrono::nanoseconds;

/// Why a request did not succeed. Each class is counted separately in the results.
enum class ErrorClass {
  kNone,         // succeeded
  kConnect,      // could not connect (refused, unreachable, DNS, TLS handshake or certificate)
  kHttpStatus,   // the server answered with a non-2xx status
  kStreamError,  // the server sent {"error":...} inside a 200 stream
  kProtocol,     // the response could not be understood (bad SSE/JSON, bad HTTP)
  kTimeout,      // the whole request exceeded --timeout
  kIdleTimeout,  // no bytes for longer than --idle-timeout
  kIncomplete,   // the connection ended before the response was complete (no [DONE], reset)
  kNoOutput,     // a complete response with no generated output at all
  kCanceled,     // canceled by the client (interrupted run)
  kConnectTimeout,     // connecting (TCP and TLS) took longer than --connect-timeout
  kFirstTokenTimeout,  // no generated token within --first-token-timeout of the send
  kInterTokenTimeout,  // a gap between generated tokens longer than --inter-token-timeout
  kStoppedEarly,       // canceled because the run was stopped early (RunController::stop_early, e.g. a
                       // sweep point found over-loaded): not a failure of the server; not in `failed`
                       // nor in the error rate, counted as `stopped_early_requests`
  kOutputOverflow      // the server sent far more output than max_tokens (a stream that would not end):
                       // cut there, so a stream's memory stays bounded
};
std::string_view to_string(ErrorClass e);

/// A graded request's verdict (issue 18, docs/metrics.md "Accuracy"): the dataset row's grader
/// judged the generated text against the row's reference.
enum class Grade : std::uint8_t {
  kNone,       // not graded (no reference, or the request failed)
  kCorrect,    // an answer was extracted and matches the reference
  kIncorrect,  // an answer was extracted and does not match
  kUnparsed    // no answer could be extracted from the text
};
std::string_view to_string(Grade g);

/// One request. All times are offsets from the run's start on the monotonic clock.
struct RequestRecord {
  std::uint64_t index = 0;
  bool warmup = false;     // released during warmup: never in statistics
  bool in_window = false;  // t_intended inside the measurement window

  Nanos t_intended{0};               // when the schedule said it should start
  std::optional<Nanos> t_send;       // request written to the socket
  std::optional<Nanos> t_headers;    // status line and headers received
  std::optional<Nanos> t_first;      // first event carrying output of any kind (answer, reasoning, tool call)
  /// The first event carrying output that is not reasoning (answer text or tool-call arguments):
  /// TTFO (issue 19, docs/metrics.md). Equals t_first when no reasoning came first; unset when
  /// the response carried reasoning only.
  std::optional<Nanos> t_first_output;
  std::optional<Nanos> t_last;       // last event carrying output
  std::optional<Nanos> t_done;       // end of response or error

  std::int64_t requested_input_tokens = 0;
  std::int64_t requested_output_tokens = 0;
  std::int64_t input_tokens = 0;     // n_in: from usage, else the requested count
  std::int64_t output_tokens = 0;    // n_out: from usage, else counted from output events
  bool tokens_from_usage = false;    // false: n_in/n_out are estimates (or n_out from the tokenizer)
  bool tokens_from_tokenizer = false;  // no usage: n_out counted from the generated text with --tokenizer
  /// With --tokenizer and usage: the tokenizer's count of the generated text, beside the server's
  /// n_out (a mismatch: a wrong tokenizer, or a server not honouring max_tokens).
  std::optional<std::int64_t> client_output_tokens;
  std::int64_t output_events = 0;    // events that carried output
  std::optional<std::int64_t> cached_tokens;
  /// Reasoning tokens among output_tokens (usage.completion_tokens_details.reasoning_tokens, else
  /// counted by --tokenizer or from reasoning events); `reasoning_tokens_source` says which
  /// ("usage", "tokenizer", "events"; "" when the response carried no reasoning).
  std::int64_t reasoning_tokens = 0;
  std::string reasoning_tokens_source;
  /// The model (or adapter) this request was sent to; "" when the run has one model.
  std::string model;
  std::optional<std::string> finish_reason;
  bool ended_early = false;          // succeeded with fewer output tokens than requested

  // Multi-turn sessions (-1: not part of a session).
  std::int64_t session = -1;
  std::int64_t turn = 0;
  std::int32_t stage = -1;  // scenario stages: the stage the request was released in (-1: none)

  // The server's own ground truth, when it sends one (llmload-server's "llmload" object):
  // seconds from the server's arrival of the request to its first and last token writes.
  std::optional<double> server_queue_s;
  std::optional<double> server_first_token_s;
  std::optional<double> server_last_token_s;

  // Graded accuracy (issue 18): set when the workload item had a grader and the request succeeded.
  Grade grade = Grade::kNone;
  std::string grader;     // the grader's name as written ("number", "choice", "regex:...")
  std::string subset;     // the row's subset (e.g. an MMLU subject); "" none
  std::string extracted;  // the answer the grader extracted ("" when unparsed or not graded)
  std::string reference;  // the row's reference, kept with --save-outputs (for `llmload score`)
  // --save-outputs and consistency runs: the generated answer text (reasoning excluded).
  std::optional<std::string> output_text;
  // With output_text, the server's own tokens of it when it returned them (consistency compares
  // these first): "token_ids" (ids in decimal) or "logprobs" (token strings); "" none.
  std::string server_tokens_from;
  std::vector<std::string> server_tokens;
  std::uint64_t item = 0;  // the workload item the request was made from (consistency matches on it)

  // Tool calls and structured output (issue 19, docs/metrics.md "Tool calls and structured
  // output"): what the request asked for beyond text ("tools", "json_schema" or
  // "tools+json_schema"; "" plain text), and the verdict on what came back (StructuredVerdict's
  // names; "" when not judged: a plain or failed request) with the first reason it is invalid.
  std::string structured;
  std::string structured_verdict;
  std::string structured_error;
  // The tool calls returned, in order: names and their arguments as received (arguments cut at
  // 256 bytes unless --save-outputs).
  std::vector<std::string> tool_call_names;
  std::vector<std::string> tool_call_arguments;

  int http_status = 0;  // 0 when no response was received
  ErrorClass error = ErrorClass::kNone;
  std::string error_message;

  bool ok() const { return error == ErrorClass::kNone; }

  // Derived latencies (nullopt when the moments they need are missing).
  std::optional<Nanos> ttft() const;      // t_first - t_send
  std::optional<Nanos> e2e() const;       // t_last - t_send
  std::optional<Nanos> tpot() const;      // (E2E - TTFT) / (n_out - 1), n_out >= 2, over more than one event
  std::optional<Nanos> ttft_rt() const;   // t_first - t_intended
  std::optional<Nanos> e2e_rt() const;    // t_last - t_intended
  std::optional<Nanos> schedule_lag() const;  // t_send - t_intended
  // Issue 19 (docs/metrics.md "The first token", "Reasoning"): nullopt when t_first_output is unset
  // (a response of reasoning only, or a record from before the field).
  std::optional<Nanos> ttfo() const;      // t_first_output - t_send
  std::optional<Nanos> ttfo_rt() const;   // t_first_output - t_intended
  /// Reasoning came before the first output token, or the response carried reasoning only: the
  /// one rule behind "the run had reasoning" (TTFO shown beside TTFT) and the reasoning counts.
  bool reasoning_first() const;
  /// t_first_output - t_first when reasoning came first (t_first_output > t_first).
  std::optional<Nanos> reasoning_duration() const;
  /// (t_last - t_first_output) / (n_answer - 1), n_answer = output_tokens - reasoning_tokens >= 2:
  /// the TPOT of the answer phase alone (equals TPOT for a response without reasoning).
  std::optional<Nanos> answer_tpot() const;
};

/// An event that carried output: its arrival time and the tokens in it (n_k).
struct ChunkArrival {
  Nanos t;
  std::int64_t tokens;
};

}  // namespace llmload::analysis
