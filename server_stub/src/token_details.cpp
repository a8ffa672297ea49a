#include "llmload/server/token_details.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "llmload/server/json.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {
namespace {

constexpr std::uint64_t kLogprobSalt = 0x6c6f6770726f6273ULL;  // "logprobs"

/// A hash of (output seed, position, token id): SplitMix64 draws, portable.
std::uint64_t position_hash(std::uint64_t output_seed, std::int64_t position, std::uint32_t id) {
  Rng rng = Rng::for_stream(output_seed ^ kLogprobSalt, static_cast<std::uint64_t>(position));
  return Rng(rng.next_u64() ^ id).next_u64();
}

void append_number(std::string& out, double v) { fmt::format_to(std::back_inserter(out), "{}", v); }

/// `[b, ..]`: the UTF-8 bytes of `text` (OpenAI's chat "bytes").
void append_bytes(std::string& out, std::string_view text) {
  out += '[';
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", static_cast<unsigned>(static_cast<unsigned char>(text[i])));
  }
  out += ']';
}

/// {"token":..,"logprob":..,"bytes":[..]} without the closing brace (chat's content entries add
/// their top_logprobs).
void append_chat_entry_open(std::string& out, std::string_view text, double logprob) {
  out += R"({"token":)";
  append_json_string(out, text);
  out += R"(,"logprob":)";
  append_number(out, logprob);
  out += R"(,"bytes":)";
  append_bytes(out, text);
}

}  // namespace

double token_logprob(std::uint64_t output_seed, std::int64_t position, std::uint32_t id) {
  return -static_cast<double>(1 + position_hash(output_seed, position, id) % 1000) / 1000.0;
}

std::vector<TopLogprob> top_logprobs(std::uint64_t output_seed, std::int64_t position, std::uint32_t id,
                                     std::string_view text, const ServerTokenizer& tokenizer, std::int64_t count) {
  std::vector<TopLogprob> out;
  if (count <= 0) return out;
  const double sampled = token_logprob(output_seed, position, id);
  out.push_back({text, sampled});
  // What the sampled token leaves: >= 1 - e^-0.001 > 0, so every log below is finite. The j-th
  // alternative takes rest / 2^j: below the sampled one (rest / 2 < 1 - e^-1 / 2 < e^-1 <= p).
  const double rest_log = std::log(-std::expm1(sampled));
  const std::size_t m = tokenizer.generator_size();
  const std::size_t start = static_cast<std::size_t>((position_hash(output_seed, position, id) >> 20) % m);
  for (std::size_t step = 0; step < m && static_cast<std::int64_t>(out.size()) < count; ++step) {
    const std::size_t i = (start + step) % m;
    if (tokenizer.generator_id(i) == id) continue;
    const std::string_view alt = tokenizer.generator_text(i, position == 0);
    if (std::any_of(out.begin(), out.end(), [&](const TopLogprob& t) { return t.text == alt; })) continue;
    out.push_back({alt, rest_log - static_cast<double>(out.size()) * std::numbers::ln2});
  }
  return out;
}

std::int64_t utf8_length(std::string_view text) {
  std::int64_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0U) != 0x80U ? 1 : 0;
  return n;
}

std::shared_ptr<const TokenDetails> TokenDetails::for_job(const GenerationJob& job) {
  if (job.request.logprobs < 0 && !job.request.return_token_ids) return nullptr;
  return std::make_shared<const TokenDetails>(job);
}

TokenDetails::TokenDetails(const GenerationJob& job)
    : endpoint_(job.request.endpoint),
      top_(std::min(job.request.logprobs, kMaxTopLogprobs)),
      token_ids_(job.request.return_token_ids),
      output_seed_(job.request.output_seed),
      tokenizer_holder_(job.tokenizer),
      tokenizer_(&server_tokenizer_or_mock(job.tokenizer)) {
  if (token_ids_) prompt_ids_ = job.request.prompt_token_ids;
}

void TokenDetails::append_ids(std::string& out, const OutputSequence& output, std::int64_t begin, std::int64_t end) {
  out += '[';
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", output.token_id(k));
  }
  out += ']';
}

void TokenDetails::append_prompt_ids(std::string& out) const {
  out += '[';
  for (std::size_t i = 0; i < prompt_ids_.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", prompt_ids_[i]);
  }
  out += ']';
}

void TokenDetails::append_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin,
                                   std::int64_t end) const {
  if (!logprobs()) {
    out += "null";
  } else if (endpoint_ == Endpoint::kChat) {
    append_chat_logprobs(out, output, begin, end);
  } else {
    append_completion_logprobs(out, output, begin, end);
  }
}

std::int64_t TokenDetails::text_offset(const OutputSequence& output, std::int64_t k) const {
  if (k <= 0) return 0;
  const std::uint64_t memo = offset_memo_.load(std::memory_order_relaxed);
  std::int64_t from = static_cast<std::int64_t>(memo >> 32);
  std::int64_t offset = static_cast<std::int64_t>(memo & 0xFFFFFFFFULL);
  if (memo == 0 || from > k) {
    from = 0;
    offset = 0;
  }
  for (std::int64_t j = from; j < k; ++j) offset += utf8_length(output.token_text(j));
  return offset;
}

void TokenDetails::append_completion_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin,
                                              std::int64_t end) const {
  out += R"({"tokens":[)";
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    append_json_string(out, output.token_text(k));
  }
  out += R"(],"token_logprobs":[)";
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    append_number(out, token_logprob(output_seed_, k, output.token_id(k)));
  }
  // vLLM: the sampled token and the top N (which holds it: greedy), so max(N, 1) entries.
  out += R"(],"top_logprobs":[)";
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    out += '{';
    const auto top = top_logprobs(output_seed_, k, output.token_id(k), output.token_text(k), *tokenizer_,
                                  std::max<std::int64_t>(top_, 1));
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, top[i].text);
      out += ':';
      append_number(out, top[i].logprob);
    }
    out += '}';
  }
  out += R"(],"text_offset":[)";
  std::int64_t offset = text_offset(output, begin);
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", offset);
    offset += utf8_length(output.token_text(k));
  }
  out += "]}";
  constexpr std::int64_t kMemoMax = std::numeric_limits<std::uint32_t>::max();
  if (end > 0 && end <= kMemoMax && offset <= kMemoMax) {
    offset_memo_.store(static_cast<std::uint64_t>(end) << 32 | static_cast<std::uint64_t>(offset),
                       std::memory_order_relaxed);
  }
}

void TokenDetails::append_chat_logprobs(std::string& out, const OutputSequence& output, std::int64_t begin,
                                        std::int64_t end) const {
  out += R"({"content":[)";
  for (std::int64_t k = begin; k < end; ++k) {
    if (k > begin) out += ',';
    const std::uint32_t id = output.token_id(k);
    const std::string_view text = output.token_text(k);
    append_chat_entry_open(out, text, token_logprob(output_seed_, k, id));
    out += R"(,"top_logprobs":[)";
    const auto top = top_logprobs(output_seed_, k, id, text, *tokenizer_, top_);
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (i > 0) out += ',';
      append_chat_entry_open(out, top[i].text, top[i].logprob);
      out += '}';
    }
    out += "]}";
  }
  out += "]}";
}

}  // namespace llmload::server
