#pragma once
// The workload sources behind make_workload(), and the parsing pieces they share, exposed for
// tests and tools. Each factory validates everything at construction and throws ConfigError
// naming the file, the line and the fix.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/lengths.hpp"

namespace llmload {

/// Prompt tokens of a text without the model's tokenizer: ceil(UTF-8 bytes / 4), the usual "about
/// four characters per token" rule for English BPE vocabularies. Bytes rather than words so that
/// text without spaces (code, CJK, where one character is 3 bytes and about one token) is not
/// undercounted. An estimate: the artifact says so, and the server's usage gives the real count.
std::int64_t estimate_text_tokens(std::string_view text);

/// The length distributions of a "random" workload: genai_scenario when set, else input_dist /
/// output_dist, else the fixed defaults widened by random_range_ratio (vLLM's rule).
LengthPair resolve_lengths(const WorkloadConfig& cfg, std::int64_t input_tokens, std::int64_t output_tokens);

/// Synthesized prompts, lengths from the distributions; unbounded.
///
/// Item i: lengths L_in, L_out drawn from engines seeded by mix_seed(seed + i) (so an item does not
/// depend on which others were drawn); without shared prefixes the prompt is
/// tokens.synthesize(L_in, ...), i.e. max(1, L_in - overhead) words, and input_tokens = overhead +
/// words (= L_in when L_in > overhead). With prefix_groups > 0 the prompt is the prefix of group
/// g = i mod prefix_groups (prefix_tokens words, the same text for every request of the group) + " " +
/// a suffix of max(1, L_in - overhead) words: L_in is the request's own part (the server's overhead
/// counts towards it), and input_tokens = overhead + prefix_tokens + suffix words = prefix_tokens +
/// L_in, as vLLM's --random-prefix-len adds the prefix to the sampled input length.
std::unique_ptr<Workload> make_random_workload(const WorkloadConfig& cfg, std::int64_t input_tokens,
                                               std::int64_t output_tokens, std::uint64_t seed,
                                               const TokenModel& tokens);

/// vLLM's ShareGPT sampling (vllm/benchmarks/datasets.py ShareGPTDataset + is_valid_sequence):
/// entries with a "conversations" array of at least 2 turns are shuffled with the seed; in that
/// order, turn 0's "value" is the prompt and turn 1's length the output length (or
/// cfg.sharegpt_output_len); a conversation is kept unless prompt < 4 or output < 4 tokens (the
/// output check is skipped when sharegpt_output_len is set, as vLLM does), prompt > 1024 or
/// prompt + output > 2048; up to max_items are kept (no oversampling). Token counts are
/// estimate_text_tokens() (+ the model's overhead for prompts). The file is streamed (SAX): only the
/// kept prompts stay in memory.
std::unique_ptr<Workload> make_sharegpt_workload(const WorkloadConfig& cfg, std::optional<std::uint64_t> max_items,
                                                 std::uint64_t seed, const TokenModel& tokens);

/// Custom JSONL: one object a line, {"prompt": "...", "output_tokens": N?, "timestamp": seconds?}.
/// File order; the first max_items lines. Timestamps: on every line or on none; timed when present,
/// arrival = (timestamp - earliest timestamp) / time_scale. Graded rows (issue 18): "messages"
/// ([{"role", "content"}, ...], instead of "prompt": the prompt is the contents joined by "\n"),
/// "reference" (a string; a JSON object or array with the json grader, kept as its dump), "grader"
/// (graded.hpp's forms; "normalized" when a reference is given without one; only "json" may go
/// without a reference) and "subset".
std::unique_ptr<Workload> make_custom_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                               std::optional<std::uint64_t> max_items, const TokenModel& tokens);

/// GSM8K JSONL as published: {"question": "...", "answer": "... #### <number>"} per line. File order,
/// the first max_items rows (every row is validated). Prompt gsm8k_prompt(question), reference
/// gsm8k_reference(answer), grader "number", output length `output_tokens`.
std::unique_ptr<Workload> make_gsm8k_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                              std::optional<std::uint64_t> max_items, const TokenModel& tokens);

/// MMLU CSV as published by hendrycks/test (parse_csv; rows question,A,B,C,D,answer letter, no
/// header): cfg.dataset_path is one file or a directory whose *.csv files are read in name order.
/// Prompt mmlu_prompt(), reference the letter, grader "choice", subset the file's subject
/// (mmlu_subject), output length `output_tokens`; the first max_items rows (every row validated).
std::unique_ptr<Workload> make_mmlu_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                             std::optional<std::uint64_t> max_items, const TokenModel& tokens);

enum class TraceFormat { kAzure, kMooncake };
std::string_view to_string(TraceFormat f);

/// The trace format of a file's content: a first non-blank line that starts with "TIMESTAMP" or is
/// a 3-column CSV line is Azure, one that starts with '{' is Mooncake. Throws ConfigError naming
/// `path`, the formats and --trace-format otherwise.
TraceFormat detect_trace_format(std::string_view content, const std::string& path);

/// An Azure trace timestamp, "YYYY-MM-DD HH:MM:SS[.fraction]" (or 'T' between date and time; any
/// number of fractional digits, the first 9 used), as nanoseconds since 1970-01-01 00:00:00 (the
/// trace's own clock; no time zone). nullopt when malformed.
std::optional<std::int64_t> parse_azure_timestamp(std::string_view text);

/// Trace replay of cfg.trace_path (or cfg.dataset_path when that is empty), an Azure LLM inference
/// CSV or Mooncake JSONL (cfg.trace_format, or detected from the content). Rows
/// are ordered by timestamp (stable: equal timestamps keep file order); the window keeps offsets
/// (from the earliest row) in [trace_start, trace_start + trace_duration); arrivals are offsets
/// from the first kept row divided by time_scale; then the first max_items. Azure prompts are
/// synthesized per request; Mooncake prompts are built from blocks of trace_block_tokens words,
/// one per hash_id, from mix_seed(seed ^ hash_id), so equal hash_ids give byte-identical blocks.
std::unique_ptr<Workload> make_trace_workload(const WorkloadConfig& cfg, std::optional<std::uint64_t> max_items,
                                              std::uint64_t seed, const TokenModel& tokens);

}  // namespace llmload
