#include "llmload/server/model_server_tokenizer.hpp"

#include <algorithm>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "llmload/server/mock_tokenizer.hpp"

namespace llmload::server {
namespace {

using tokenizer::TokenId;

std::vector<TokenId> to_token_ids(const std::vector<std::uint32_t>& ids) {
  return std::vector<TokenId>(ids.begin(), ids.end());  // ids are < vocab_size <= 2^31: no overflow
}

void append_ids(const std::vector<TokenId>& in, std::vector<std::uint32_t>& out) {
  out.reserve(out.size() + in.size());
  for (TokenId id : in) out.push_back(static_cast<std::uint32_t>(id));
}

/// The sequence of `n` generator tokens cycling through `ids`.
std::vector<TokenId> cycle_of(const std::vector<TokenId>& ids, std::size_t n) {
  std::vector<TokenId> out;
  out.reserve(n);
  for (std::size_t k = 0; k < n; ++k) out.push_back(ids[k % ids.size()]);
  return out;
}

/// Whether every prefix (up to 2 cycles and 2 more tokens) of the cycle of `ids` re-encodes to
/// itself, and the incremental chunk texts add up to the decode of the whole sequence.
bool round_trips(const tokenizer::Tokenizer& tok, const std::vector<TokenId>& ids, bool every_prefix) {
  const std::size_t n = 2 * ids.size() + 2;
  const std::vector<TokenId> seq = cycle_of(ids, n);
  const std::string first = tok.decode(std::span<const TokenId>(seq.data(), 1), false);
  std::string text = first;
  for (std::size_t k = 1; k < n; ++k) {
    const TokenId pair[2] = {seq[0], seq[k]};
    const std::string both = tok.decode(pair, false);
    if (both.size() <= first.size() || both.compare(0, first.size(), first) != 0) return false;
    text.append(both, first.size());
    if (every_prefix || k + 1 == n) {
      const std::span<const TokenId> prefix(seq.data(), k + 1);
      if (tok.decode(prefix, false) != text) return false;
      const auto again = tok.encode(text, false);
      if (!std::equal(again.begin(), again.end(), prefix.begin(), prefix.end())) return false;
    }
  }
  return true;
}

/// A generator candidate for `word` (" the"): the id of " the" when it is one token, else the
/// id of "the" when that is one token (SentencePiece-style: "▁the" once the space is prepended).
/// The token must also decode to the word (with or without its space), so a vocabulary that
/// lacks a letter (dropped when there is no unknown token) does not yield a bare space.
std::optional<TokenId> candidate(const tokenizer::Tokenizer& tok, std::string_view word) {
  for (std::string_view text : {word, word.substr(1)}) {
    const auto ids = tok.encode(text, false);
    if (ids.size() != 1) continue;
    const std::string back = tok.decode(ids, false);
    if (back == word || back == word.substr(1)) return ids[0];
  }
  return std::nullopt;
}

}  // namespace

ModelServerTokenizer::ModelServerTokenizer(std::unique_ptr<tokenizer::Tokenizer> tok) : tokenizer_(std::move(tok)) {
  vocab_size_ = std::min<std::uint64_t>(tokenizer_->vocab_size(), kVocabSize);
  std::vector<TokenId> chosen;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(kGeneratorWords); ++i) {
    const auto id = candidate(*tokenizer_, generated_token(i));
    if (!id || std::find(chosen.begin(), chosen.end(), *id) != chosen.end()) continue;
    chosen.push_back(*id);
    if (!round_trips(*tokenizer_, chosen, /*every_prefix=*/false)) chosen.pop_back();
  }
  if (chosen.empty() || !round_trips(*tokenizer_, chosen, /*every_prefix=*/true)) {
    throw tokenizer::TokenizerError(fmt::format(
        "{}: no common English word (\" the\", \" of\", ...) is a single token that decodes and re-encodes to "
        "itself, so llmload-server cannot generate text with it; give the tokenizer of a text model, or leave "
        "--tokenizer out to use the mock's word tokens",
        tokenizer_->source().string()));
  }
  const TokenId first = chosen.front();
  first_text_ = tokenizer_->decode(std::span<const TokenId>(&first, 1), false);
  for (TokenId id : chosen) {
    generator_ids_.push_back(static_cast<std::uint32_t>(id));
    const TokenId pair[2] = {first, id};
    cont_text_.push_back(tokenizer_->decode(pair, false).substr(first_text_.size()));
  }
}

std::string ModelServerTokenizer::description() const {
  return fmt::format("{} ({}, {} ids; {} generator tokens)", tokenizer_->source().string(), tokenizer_->kind(),
                     vocab_size_, generator_ids_.size());
}

void ModelServerTokenizer::append_prompt_ids(std::string_view text, bool add_special,
                                             std::vector<std::uint32_t>& ids) const {
  append_ids(tokenizer_->encode(text, add_special), ids);
}

void ModelServerTokenizer::append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const {
  append_ids(tokenizer_->encode(text, false), ids);
}

void ModelServerTokenizer::tokenize(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids,
                                    std::vector<std::string>* strs) const {
  const auto encoded = tokenizer_->encode(text, add_special);
  append_ids(encoded, ids);
  if (strs == nullptr) return;
  for (const TokenId& id : encoded) strs->push_back(tokenizer_->decode(std::span<const TokenId>(&id, 1), false));
}

std::string ModelServerTokenizer::detokenize(const std::vector<std::uint32_t>& ids) const {
  return tokenizer_->decode(to_token_ids(ids), false);
}

std::uint32_t ModelServerTokenizer::generated_token_id(std::int64_t k) const {
  const auto n = static_cast<std::int64_t>(generator_ids_.size());
  return generator_ids_[static_cast<std::size_t>(((k % n) + n) % n)];
}

std::string_view ModelServerTokenizer::generated_token_text(std::int64_t k) const {
  if (k == 0) return first_text_;
  const auto n = static_cast<std::int64_t>(cont_text_.size());
  return cont_text_[static_cast<std::size_t>(((k % n) + n) % n)];
}

void ModelServerTokenizer::append_generated_text(std::string& out, std::int64_t n) const {
  for (std::int64_t k = 0; k < n; ++k) out += generated_token_text(k);
}

std::string ModelServerTokenizer::out_of_vocabulary_message(std::string_view id) const {
  return fmt::format("Token id {} is out of vocabulary: the tokenizer's ({}) ids are in [0, {}]", id,
                     tokenizer_->source().filename().string(), vocab_size_ - 1);
}

std::shared_ptr<const ModelServerTokenizer> load_server_tokenizer(const std::filesystem::path& path) {
  return std::make_shared<const ModelServerTokenizer>(tokenizer::load_tokenizer(path));
}

}  // namespace llmload::server
