#include "llmload/server/output_sequence.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "llmload/server/rng.hpp"
#include "llmload/server/structured_output.hpp"

namespace llmload::server {
namespace {

// Salts that keep the streams drawn from one seed apart (fault injection, jitter and the ids use
// the same --seed).
constexpr std::uint64_t kWrongAnswerSalt = 0x77726f6e67616e73ULL;  // "wrongans"
constexpr std::uint64_t kDivergenceSalt = 0x6469766572676521ULL;   // "diverge!"
constexpr std::uint64_t kDivergedStreamSalt = 0x616c747374726d31ULL;
constexpr std::uint64_t kReasoningSalt = 0x7265617330303031ULL;  // "reas0001"

/// Draw number `index` of the stream `seed`: random access, so any token can be spelled again.
std::uint64_t stream_draw(std::uint64_t seed, std::int64_t index) {
  return Rng::for_stream(seed, static_cast<std::uint64_t>(index)).next_u64();
}

double stream_uniform(std::uint64_t seed, std::int64_t index) {
  return static_cast<double>(stream_draw(seed, index) >> 11) * 0x1.0p-53;
}

}  // namespace

double batch_probability(double base, double slope, std::int64_t batch) {
  const double p = base + slope * static_cast<double>(std::max<std::int64_t>(batch, 1) - 1);
  return std::clamp(p, 0.0, 1.0);
}

std::string describe_output_model(const OutputModelConfig& c) {
  std::string out = "text drawn from a generator seeded by the prompt (and the request's seed); ";
  if (!c.answers) {
    out += "answers off";
  } else {
    out += fmt::format("answers on (arithmetic questions), wrong with p = min(1, {} + {} x (batch - 1))",
                       c.wrong_answer_rate, c.wrong_answer_batch_slope);
    if (c.wrong_answer_preempted) out += fmt::format(", {} when preempted first", *c.wrong_answer_preempted);
  }
  if (c.divergence_rate > 0 || c.divergence_batch_slope > 0) {
    out += fmt::format("; divergence per step p = min(1, {} + {} x (batch - 1))", c.divergence_rate,
                       c.divergence_batch_slope);
  } else {
    out += "; no divergence";
  }
  return out;
}

OutputSequence::OutputSequence(const GenerationJob& job, std::uint64_t arrival)
    : tokenizer_holder_(job.tokenizer),
      tokenizer_(&server_tokenizer_or_mock(job.tokenizer)),
      question_(job.output_model.answers ? job.request.question : std::nullopt),
      model_(job.output_model),
      max_tokens_(job.request.max_tokens),
      min_tokens_(job.request.min_tokens),
      ignore_eos_(job.request.ignore_eos),
      filler_seed_(job.request.output_seed),
      diverged_seed_(stream_draw(job.request.output_seed ^ kDivergedStreamSalt, 0)),
      wrong_seed_(stream_draw(job.seed ^ kWrongAnswerSalt, static_cast<std::int64_t>(arrival))),
      divergence_seed_(stream_draw(job.seed ^ kDivergenceSalt, static_cast<std::int64_t>(arrival))),
      reasoning_seed_(stream_draw(job.request.output_seed ^ kReasoningSalt, 0)),
      reasoning_(std::clamp<std::int64_t>(job.request.reasoning_tokens, 0, job.request.max_tokens)),
      generator_size_(tokenizer_->generator_size()) {
  if (job.request.structured) {
    // A tool call's arguments or a JSON answer: its tokens are the answer, and there is no
    // arithmetic answer (nor a wrong one) in it.
    question_.reset();
    structured_ = true;
    tokenizer_->encode_text(job.request.structured->text, answer_ids_, answer_texts_);
  }
}

void OutputSequence::decide_answer(std::int64_t batch, std::int64_t preemptions) {
  length_.store(max_tokens_, std::memory_order_relaxed);
  if (structured_) {
    // EOS right after the JSON (ignore_eos and min_tokens do not pad structured output), unless
    // max_tokens leaves no room for it, as for an answer.
    const std::int64_t eos_after = reasoning_ + static_cast<std::int64_t>(answer_ids_.size());
    if (eos_after < max_tokens_) {
      length_.store(eos_after, std::memory_order_relaxed);
      stopped_.store(true, std::memory_order_relaxed);
    }
  } else if (question_) {
    double p = batch_probability(model_.wrong_answer_rate, model_.wrong_answer_batch_slope, batch);
    if (preemptions > 0 && model_.wrong_answer_preempted) p = *model_.wrong_answer_preempted;
    Rng draws(wrong_seed_);
    wrong_ = draws.uniform01() < p;
    const std::uint64_t which = draws.next_u64();
    tokenizer_->encode_answer(answer_text(*question_, wrong_, which), answer_ids_, answer_texts_);
    const std::int64_t eos_after =
        std::max({reasoning_ + static_cast<std::int64_t>(answer_ids_.size()), min_tokens_, reasoning_ + 1});
    if (!ignore_eos_ && eos_after < max_tokens_) {
      length_.store(eos_after, std::memory_order_relaxed);
      stopped_.store(true, std::memory_order_relaxed);
    }
  }
  answer_count_.store(static_cast<std::int64_t>(answer_ids_.size()), std::memory_order_relaxed);
  started_.store(true, std::memory_order_release);
}

bool OutputSequence::on_token(std::int64_t index, std::int64_t batch, std::int64_t preemptions) {
  if (index == 0 && !started()) decide_answer(batch, preemptions);
  const bool undiverged = diverged_at_.load(std::memory_order_relaxed) == kNever;
  if (undiverged && index >= reasoning_ + static_cast<std::int64_t>(answer_ids_.size()) && generator_size_ >= 2) {
    const double p = batch_probability(model_.divergence_rate, model_.divergence_batch_slope, batch);
    if (p > 0 && stream_uniform(divergence_seed_, index) < p) diverged_at_.store(index, std::memory_order_relaxed);
  }
  return index + 1 >= length_.load(std::memory_order_relaxed);
}

void OutputSequence::play_alone() {
  for (std::int64_t k = 0; !on_token(k, 1, 0); ++k) {
  }
}

std::size_t OutputSequence::filler_index(std::int64_t j) const {
  const std::int64_t diverged = diverged_at_.load(std::memory_order_relaxed);
  const std::int64_t d = diverged == kNever ? kNever : diverged - reasoning_;
  const std::uint64_t m = generator_size_;
  const std::uint64_t undiverged = stream_draw(filler_seed_, j) % m;
  if (j < d) return static_cast<std::size_t>(undiverged);
  // After a divergence at d the tokens come from a stream of (prompt, d): another continuation
  // for each place it can diverge at. At d itself: any token but the undiverged one.
  const std::uint64_t other = stream_draw(stream_draw(diverged_seed_, d), j);
  return static_cast<std::size_t>(j == d ? (undiverged + 1 + other % (m - 1)) % m : other % m);
}

std::size_t OutputSequence::reasoning_index(std::int64_t k) const {
  return static_cast<std::size_t>(stream_draw(reasoning_seed_, k) % generator_size_);
}

std::uint32_t OutputSequence::token_id(std::int64_t k) const {
  if (k < reasoning_) return tokenizer_->generator_id(reasoning_index(k));
  const std::int64_t j = k - reasoning_;
  if (j < static_cast<std::int64_t>(answer_ids_.size())) return answer_ids_[static_cast<std::size_t>(j)];
  return tokenizer_->generator_id(filler_index(j));
}

std::string_view OutputSequence::token_text(std::int64_t k) const {
  if (k < reasoning_) return tokenizer_->generator_text(reasoning_index(k), k == 0);
  const std::int64_t j = k - reasoning_;
  if (j < static_cast<std::int64_t>(answer_texts_.size())) return answer_texts_[static_cast<std::size_t>(j)];
  return tokenizer_->generator_text(filler_index(j), j == 0);
}

void OutputSequence::append_text(std::string& out, std::int64_t n) const { append_text(out, 0, n); }

void OutputSequence::append_text(std::string& out, std::int64_t begin, std::int64_t end) const {
  for (std::int64_t k = begin; k < end; ++k) out += token_text(k);
}

std::optional<bool> OutputSequence::wrong_answer() const {
  // An output that is all reasoning (max_tokens reached first) never shows its answer.
  if (!question_ || !started() || length() <= reasoning_) return std::nullopt;
  return wrong_;
}

std::optional<std::int64_t> OutputSequence::diverged_at() const {
  const std::int64_t d = diverged_at_.load(std::memory_order_relaxed);
  return d == kNever ? std::nullopt : std::optional<std::int64_t>(d);
}

}  // namespace llmload::server
