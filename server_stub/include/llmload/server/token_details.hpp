#pragma once
// Per-token information a /v1/* request asks for (docs/server.md, "Per-token information"), so a
// client can compare outputs token by token:
//   - completions `logprobs: N` (0..20): the choice's "logprobs" is
//     {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{token: logprob, ..}, ..],"text_offset":[..]}
//     with max(N, 1) entries per top_logprobs dict, the sampled token first (vLLM's shape: the
//     sampled token plus the top N, which holds it, since the mock's tokens are greedy);
//   - chat `logprobs: true` (+ `top_logprobs: N`, 0..20): {"content":[{"token","logprob","bytes",
//     "top_logprobs":[{"token","logprob","bytes"}, .. N entries]}, ..]} (OpenAI's chat shape);
//   - `return_token_ids: true` (vLLM's extension): "token_ids":[ids] on each choice and the
//     prompt's ids ("prompt_token_ids") once: on a completions choice, at the top of chat's body.
// The tokens are the output's own (OutputSequence): their strings are the chunk texts, so they
// join to the generated text, and their ids are the tokenizer's.
//
// Log probabilities are made up but deterministic and consistent: the sampled token at position
// k has -(1 + h mod 1000) / 1000 in [-1, -0.001], h a hash of (output seed, k, token id); the
// alternatives are other generator tokens whose probabilities take halves of what is left
// (1 - p, (1 - p) / 2, ...: log((1 - p) / 2^j)), so each is below the sampled one, all are finite
// and the probabilities sum to less than 1.
//
// Built once per request (only when the request asks for something: the encoder's fast path
// stays as it was); read-only afterwards except a lock-free memo of the text offset, so chunks
// asked for in order cost O(1) each. Thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/server/generation_request.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/server_tokenizer.hpp"

namespace llmload::server {

/// The most tokens a top_logprobs entry may hold (vLLM's default --max-logprobs).
inline constexpr std::int64_t kMaxTopLogprobs = 20;

/// The log probability the mock gives token `id` at `position` of an output seeded by
/// `output_seed` (GenerationRequest::output_seed): -(1 + h mod 1000) / 1000.
double token_logprob(std::uint64_t output_seed, std::int64_t position, std::uint32_t id);

struct TopLogprob {
  std::string_view text;  ///< the token's text (into the output or the tokenizer)
  double logprob = 0;
};

/// The `count` most likely tokens at `position`: the sampled token (`id`, `text`) first, then up
/// to count - 1 other generator tokens (distinct texts), each less likely than the one before.
/// Fewer when the generator's vocabulary is smaller.
std::vector<TopLogprob> top_logprobs(std::uint64_t output_seed, std::int64_t position, std::uint32_t id,
                                     std::string_view text, const ServerTokenizer& tokenizer, std::int64_t count);

/// The length of UTF-8 `text` in characters (code points), as Python's len() counts a str:
/// the unit of completions' text_offset in vLLM.
std::int64_t utf8_length(std::string_view text);

class TokenDetails {
 public:
  /// Null when the job asks for neither logprobs nor token ids.
  static std::shared_ptr<const TokenDetails> for_job(const GenerationJob& job);

  explicit TokenDetails(const GenerationJob& job);

  bool logprobs() const { return top_ >= 0; }
  bool token_ids() const { return token_ids_; }

  /// Appends the value of a choice's "logprobs" for tokens [begin, end) of `output` (produced):
  /// `null` when not asked for, else the endpoint's object (see above). Completions' text_offset
  /// counts from the start of the generated text.
  void append_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin, std::int64_t end) const;

  /// Appends `[id, ..]` of tokens [begin, end).
  static void append_ids(std::string& out, const OutputSequence& output, std::int64_t begin, std::int64_t end);

  /// The prompt's ids (only kept when token ids were asked for), and appends them as `[id, ..]`.
  const std::vector<std::uint32_t>& prompt_ids() const { return prompt_ids_; }
  void append_prompt_ids(std::string& out) const;

 private:
  void append_completion_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin,
                                  std::int64_t end) const;
  void append_chat_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin,
                            std::int64_t end) const;
  /// Characters of the text of tokens [0, k); remembers where [begin, end) ends for the next call.
  std::int64_t text_offset(const OutputSequence& output, std::int64_t k) const;

  Endpoint endpoint_;
  std::int64_t top_ = -1;  ///< N (completions' logprobs, chat's top_logprobs); -1: no logprobs
  bool token_ids_ = false;
  std::uint64_t output_seed_;
  std::shared_ptr<const ServerTokenizer> tokenizer_holder_;
  const ServerTokenizer* tokenizer_;
  std::vector<std::uint32_t> prompt_ids_;  ///< only with token_ids_
  /// (token index << 32 | characters before it) of the last chunk's end; 0: nothing yet.
  mutable std::atomic<std::uint64_t> offset_memo_{0};
};

}  // namespace llmload::server
