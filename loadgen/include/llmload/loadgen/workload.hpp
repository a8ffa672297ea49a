#pragma once
// What each request asks for: prompt text, requested prompt and output lengths, and (for traces
// and timestamped datasets) its own arrival time. Pure logic: files are read, nothing is sent.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/clock.hpp"

namespace llmload {

/// How synthesized prompts map to tokens: a vocabulary of words that are each exactly one token
/// for the target tokenizer (with the separating space), and the tokens the server adds to every
/// prompt (BOS, chat template). With it, a text of k words counts as `overhead + k` tokens.
struct TokenModel {
  std::vector<std::string> words;
  std::int64_t overhead = 0;
  /// "tokenize" (calibrated with the server's /tokenize) or "estimate" (built-in vocabulary,
  /// one word per token: exact for llmload-server, close for BPE tokenizers).
  std::string method = "estimate";

  /// The built-in vocabulary (common English words) with overhead 0.
  static TokenModel builtin();
  /// A text whose token count under this model is `tokens` (words = tokens - overhead, at least
  /// 1), chosen by a PRNG from `seed`: the same seed gives the same text.
  std::string synthesize(std::int64_t tokens, std::uint64_t seed) const;
  /// Exactly `words` words (no overhead subtracted): for blocks that are parts of one prompt.
  std::string words_text(std::int64_t words, std::uint64_t seed) const;
};

struct StructuredSpec;  // structured_request.hpp

/// One message of a chat conversation given by a dataset row (custom JSONL "messages").
struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

/// One request's content before it becomes HTTP.
struct WorkItem {
  std::string prompt;               // the user prompt text
  std::int64_t input_tokens = 0;    // requested prompt tokens (what the prompt was made to count)
  std::int64_t output_tokens = 0;   // requested output tokens (max_tokens)
  std::optional<Nanos> arrival;     // timed workloads: intended offset from the run's start
  std::optional<std::int64_t> prefix_group;  // shared-prefix workloads: the group of the prefix
  std::size_t prefix_chars = 0;              // ... the prefix's characters at the prompt's start (its space included)
  std::int64_t prefix_tokens = 0;            // ... and its tokens
  /// A row given as chat messages (custom JSONL "messages"): sent as they are to a chat endpoint;
  /// `prompt` is then their contents joined by newlines (what a completions endpoint gets).
  std::vector<ChatMessage> messages;
  /// Graded datasets (issue 18: gsm8k, mmlu, custom rows with "reference"): the expected answer
  /// and the grader that judges the output against it (analysis/grading.hpp; "" = not graded).
  std::string reference;
  std::string grader;
  std::string subset;  // the row's subset, e.g. an MMLU subject ("" none)
  /// Tool calls and structured output (issue 19): the tools and response schema the request
  /// carries (a dataset row's own, or --tools/--json-schema by their ratios); nullptr: text only.
  std::shared_ptr<const StructuredSpec> structured;
};

/// Where request contents come from and how their lengths are drawn.
struct WorkloadConfig {
  /// random (synthesized, lengths from the distributions), sharegpt, custom (JSONL), trace, gsm8k
  /// (GSM8K JSONL, graded), mmlu (MMLU CSV, graded).
  std::string dataset = "random";
  std::string dataset_path;  // sharegpt/custom: the file

  /// Length distributions: "fixed:N", "uniform:MIN,MAX", "normal:MEAN,SD", "lognormal:MEAN,SD"
  /// (mean and sd of the lengths themselves), "empirical:FILE" (one length per line, or a
  /// "length,weight" per line). Empty: fixed at ScenarioConfig::input_tokens / output_tokens,
  /// widened by random_range_ratio as vLLM does (uniform [L*(1-r), L*(1+r)]).
  std::string input_dist;
  std::string output_dist;
  /// A genai-bench scenario string for both lengths: "D(in,out)", "N(mu,sd)/(mu,sd)",
  /// "U(min,max)/(min,max)"; overrides input_dist/output_dist.
  std::string genai_scenario;
  double random_range_ratio = 0.0;

  /// Shared prefixes: `prefix_groups` distinct prefixes of `prefix_tokens` tokens each; request i
  /// starts with the prefix of group (i mod groups) [or drawn by the seed], followed by its own
  /// suffix of input length tokens. 0 groups: no shared prefix.
  std::int64_t prefix_groups = 0;
  std::int64_t prefix_tokens = 0;

  /// ShareGPT: override every output length (vLLM's --sharegpt-output-len); 0 = from the data.
  std::int64_t sharegpt_output_len = 0;

  /// Trace replay.
  std::string trace_path;
  std::string trace_format;  // "", "azure", "mooncake" (empty: detected from the content)
  double time_scale = 1.0;   // 2 = twice as fast
  std::optional<Nanos> trace_start;     // skip the trace's first part (offset from its first request)
  std::optional<Nanos> trace_duration;  // keep only this much of it
  std::int64_t trace_block_tokens = 512;  // Mooncake: tokens per hash_id block
};

/// A source of request contents. Contract: item(i) is deterministic for (config, seed, i).
class Workload {
 public:
  virtual ~Workload() = default;
  /// Number of items for finite workloads (datasets, traces); nullopt when unbounded.
  virtual std::optional<std::uint64_t> size() const = 0;
  /// Item `index`; for finite workloads index < size().
  virtual WorkItem item(std::uint64_t index) const = 0;
  /// True when items carry their own arrival times (traces, timestamped custom JSONL).
  virtual bool timed() const { return false; }
  /// For the artifact: the source, its parameters, filters applied and counts.
  virtual nlohmann::json describe() const = 0;
};

/// Builds the workload. `input_tokens`/`output_tokens` are the fixed defaults, `max_items` bounds
/// how many items a finite source keeps (e.g. --num-requests; nullopt: all), `seed` is the data
/// seed. Throws ConfigError naming the file, line and fix on bad input.
std::unique_ptr<Workload> make_workload(const WorkloadConfig& cfg, std::int64_t input_tokens,
                                        std::int64_t output_tokens, std::optional<std::uint64_t> max_items,
                                        std::uint64_t seed, const TokenModel& tokens);

}  // namespace llmload
