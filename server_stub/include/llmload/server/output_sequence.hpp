#pragma once
// What one request generates (docs/server.md, "Generated text"), decided token by token as the
// engine (or the fixed model's timer) produces the tokens:
//   - Filler: output token p is generator token H(output_seed, p) mod m (m = the tokenizer's
//     generator_size()): a deterministic function of the prompt and the request's `seed`
//     (GenerationRequest::output_seed), the same at any load.
//   - The answer (a question in the prompt, --answers on): its tokens come first. Without
//     ignore_eos the output then ends (EOS, finish_reason "stop") after max(answer, min_tokens)
//     tokens; with ignore_eos the filler goes on. max_tokens cuts everything ("length").
//   - Structured output (a tool call's arguments, a JSON answer: structured_output.hpp): its
//     tokens take the answer's place, and the output ends at EOS after them whatever ignore_eos
//     and min_tokens say; max_tokens cuts them ("length").
//   - The error model: when token 0 is produced, the answer is wrong with probability
//     min(1, P + S x (batch - 1)), or Q when the request was preempted before (OutputModelConfig);
//     the draws come from (--seed, arrival order), independent of the prompt.
//   - The divergence model: each token after the answer (every token without one) diverges
//     with probability min(1, P0 + S x (batch - 1)), batch = sequences in the step producing it,
//     until one does. From that token on the filler comes from another stream (one per prompt
//     and divergence position), and that token differs from the one the undiverged output has
//     there.
// Threading: one producer calls on_token() in token order (the engine thread, or the fixed
// model's connection). Readers (the connection, ResponseEncoder) read token k only after it was
// handed to them (the engine's hand-off is synchronised); the decisions are published with
// atomics, so reads never race the producer.

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/server/engine/scheduler.hpp"
#include "llmload/server/generation_request.hpp"

namespace llmload::server {

/// min(1, base + slope x (batch - 1)), batch taken as at least 1.
double batch_probability(double base, double slope, std::int64_t batch);

/// One line for the start-up log: the answering mode and both models with their parameters.
std::string describe_output_model(const OutputModelConfig& config);

class OutputSequence final : public OutputDecider {
 public:
  /// `arrival`: the request's place in the server's arrival order of generation requests (the
  /// error and divergence draws are taken from (job.seed, arrival)).
  OutputSequence(const GenerationJob& job, std::uint64_t arrival);

  /// Producer: token `index` is produced (see OutputDecider). Returns whether it is the last.
  bool on_token(std::int64_t index, std::int64_t batch, std::int64_t preemptions) override;
  /// Producer: produces every token at batch 1 without preemption (tests; encoders without an
  /// engine).
  void play_alone();

  /// Whether token 0 has been produced (the answer and the length are decided).
  bool started() const { return started_.load(std::memory_order_acquire); }
  /// The number of tokens the output has: max_tokens until token 0 is produced, then fewer when
  /// it stops at EOS.
  std::int64_t length() const {
    if (!started()) return max_tokens_;
    return length_.load(std::memory_order_relaxed);
  }
  /// Whether it ends at EOS (finish_reason "stop") rather than at max_tokens. Once started.
  bool stopped() const { return started() && stopped_.load(std::memory_order_relaxed); }

  /// Token k's id and its chunk text. Only for tokens already produced.
  std::uint32_t token_id(std::int64_t k) const;
  std::string_view token_text(std::int64_t k) const;
  /// Appends the text of tokens [0, n) (produced).
  void append_text(std::string& out, std::int64_t n) const;
  /// Appends the text of tokens [begin, end) (produced).
  void append_text(std::string& out, std::int64_t begin, std::int64_t end) const;

  /// The reasoning tokens at the start of the output: min(R, max_tokens), fixed from the start.
  /// Tokens [0, reasoning_tokens()) are reasoning, the rest the output proper (the answer).
  std::int64_t reasoning_tokens() const { return reasoning_; }
  /// Whether token k is a reasoning token.
  bool is_reasoning(std::int64_t k) const { return k < reasoning_; }

  /// With an answer, once started: whether the error model made it wrong.
  std::optional<bool> wrong_answer() const;
  /// The index of the first diverged token, if one diverged.
  std::optional<std::int64_t> diverged_at() const;
  /// The answer's tokens at the start of the output (0 without an answer; once started).
  std::int64_t answer_tokens() const { return started() ? answer_count_.load(std::memory_order_relaxed) : 0; }

 private:
  void decide_answer(std::int64_t batch, std::int64_t preemptions);
  /// The generator index of answer-phase token j (output token reasoning_ + j).
  std::size_t filler_index(std::int64_t j) const;
  std::size_t reasoning_index(std::int64_t k) const;

  std::shared_ptr<const ServerTokenizer> tokenizer_holder_;
  const ServerTokenizer* tokenizer_;
  std::optional<ArithmeticQuestion> question_;
  OutputModelConfig model_;
  std::int64_t max_tokens_;
  std::int64_t min_tokens_;
  bool ignore_eos_;
  std::uint64_t filler_seed_;     ///< the prompt's stream
  std::uint64_t diverged_seed_;   ///< seeds the streams after a divergence
  std::uint64_t wrong_seed_;      ///< the error model's draws
  std::uint64_t divergence_seed_; ///< the divergence model's draws
  std::uint64_t reasoning_seed_;  ///< the reasoning tokens' stream (of the prompt)
  std::int64_t reasoning_;        ///< min(reasoning_tokens, max_tokens)
  std::size_t generator_size_;
  bool structured_ = false;       ///< the answer is the request's structured output (its JSON tokens)

  // Written by the producer before started_ is set; read-only afterwards.
  std::vector<std::uint32_t> answer_ids_;
  std::vector<std::string> answer_texts_;
  bool wrong_ = false;
  // Atomics, though ordered by started_: a consumer's length() must not read them before token 0
  // is produced, and the compiler may load both sides of a `started() ? a : b` (TSan saw it).
  std::atomic<std::int64_t> length_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<std::int64_t> answer_count_{0};
  std::atomic<bool> started_{false};
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  std::atomic<std::int64_t> diverged_at_{kNever};  ///< an output index (>= reasoning_)
};

}  // namespace llmload::server
