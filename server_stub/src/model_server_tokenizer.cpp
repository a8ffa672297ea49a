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

/// The text `id` adds after `ref`: what decode([ref, id]) has after decode([ref]); nullopt when
/// decode([ref, id]) does not start with decode([ref]) or adds nothing.
std::optional<std::string> text_after(const tokenizer::Tokenizer& tok, TokenId ref, TokenId id) {
  const std::string alone = tok.decode(std::span<const TokenId>(&ref, 1), false);
  const TokenId pair[2] = {ref, id};
  const std::string both = tok.decode(pair, false);
  if (both.size() <= alone.size() || both.compare(0, alone.size(), alone) != 0) return std::nullopt;
  return both.substr(alone.size());
}

/// Whether `seq` round-trips: its chunk texts (decode([seq[0]]), then each token's text after
/// `ref`) concatenate to decode(seq), which re-encodes to seq; for every prefix when
/// `every_prefix`, else for the whole sequence.
bool sequence_round_trips(const tokenizer::Tokenizer& tok, const std::vector<TokenId>& seq, TokenId ref,
                          bool every_prefix) {
  std::string text = tok.decode(std::span<const TokenId>(seq.data(), 1), false);
  for (std::size_t k = 1; k <= seq.size(); ++k) {
    if (k > 1) {
      const auto piece = text_after(tok, ref, seq[k - 1]);
      if (!piece) return false;
      text += *piece;
    }
    if (every_prefix || k == seq.size()) {
      const std::span<const TokenId> prefix(seq.data(), k);
      if (tok.decode(prefix, false) != text) return false;
      const auto again = tok.encode(text, false);
      if (!std::equal(again.begin(), again.end(), prefix.begin(), prefix.end())) return false;
    }
  }
  return true;
}

/// Whether `id` may join the generator tokens `chosen`: every pair of it with itself and with
/// each chosen token, in both orders, round-trips (generated text draws tokens in any order).
bool joins(const tokenizer::Tokenizer& tok, const std::vector<TokenId>& chosen, TokenId id) {
  const TokenId ref = chosen.empty() ? id : chosen.front();
  if (!sequence_round_trips(tok, {id, id}, ref, true)) return false;
  for (TokenId other : chosen) {
    if (!sequence_round_trips(tok, {other, id}, ref, true) || !sequence_round_trips(tok, {id, other}, ref, true)) {
      return false;
    }
  }
  return true;
}

/// A check of the whole set: a scrambled sequence of 4 x size + 4 generator tokens.
std::vector<TokenId> scrambled(const std::vector<TokenId>& ids) {
  std::vector<TokenId> out;
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (std::size_t k = 0; k < 4 * ids.size() + 4; ++k) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // an LCG is enough to mix the order
    out.push_back(ids[static_cast<std::size_t>((x >> 33) % ids.size())]);
  }
  return out;
}

struct Candidate {
  TokenId id = 0;
  bool spaced = false;  ///< the word with its leading space is the token (byte-level vocabularies)
};

/// A generator candidate for `word` (" the"): the id of " the" when it is one token, else the
/// id of "the" when that is one token (SentencePiece-style: "▁the" once the space is prepended).
/// The token must also decode to the word (with or without its space), so a vocabulary that
/// lacks a letter (dropped when there is no unknown token) does not yield a bare space.
std::optional<Candidate> candidate(const tokenizer::Tokenizer& tok, std::string_view word) {
  for (std::string_view text : {word, word.substr(1)}) {
    const auto ids = tok.encode(text, false);
    if (ids.size() != 1) continue;
    const std::string back = tok.decode(ids, false);
    if (back == word || back == word.substr(1)) return Candidate{ids[0], text.size() == word.size()};
  }
  return std::nullopt;
}

}  // namespace

ModelServerTokenizer::ModelServerTokenizer(std::unique_ptr<tokenizer::Tokenizer> tok) : tokenizer_(std::move(tok)) {
  vocab_size_ = std::min<std::uint64_t>(tokenizer_->vocab_size(), kVocabSize);
  std::vector<TokenId> chosen;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(kGeneratorWords); ++i) {
    const auto c = candidate(*tokenizer_, generated_token(i));
    if (!c || std::find(chosen.begin(), chosen.end(), c->id) != chosen.end()) continue;
    if (!joins(*tokenizer_, chosen, c->id)) continue;
    if (chosen.empty()) spaced_ = c->spaced;
    chosen.push_back(c->id);
  }
  if (chosen.empty() || !sequence_round_trips(*tokenizer_, scrambled(chosen), chosen.front(), true)) {
    throw tokenizer::TokenizerError(fmt::format(
        "{}: no common English word (\" the\", \" of\", ...) is a single token that decodes and re-encodes to "
        "itself, so llmload-server cannot generate text with it; give the tokenizer of a text model, or leave "
        "--tokenizer out to use the mock's word tokens",
        tokenizer_->source().string()));
  }
  for (TokenId id : chosen) {
    generator_ids_.push_back(static_cast<std::uint32_t>(id));
    first_text_.push_back(tokenizer_->decode(std::span<const TokenId>(&id, 1), false));
    cont_text_.push_back(*text_after(*tokenizer_, chosen.front(), id));  // joins() checked it
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

std::uint32_t ModelServerTokenizer::generator_id(std::size_t i) const { return generator_ids_[i]; }

std::string_view ModelServerTokenizer::generator_text(std::size_t i, bool first) const {
  return first ? first_text_[i] : cont_text_[i];
}

void ModelServerTokenizer::encode_answer(std::string_view text, std::vector<std::uint32_t>& ids,
                                         std::vector<std::string>& texts) const {
  const auto encoded = tokenizer_->encode((spaced_ ? " " : "") + std::string(text), false);
  std::string before;
  for (std::size_t k = 1; k <= encoded.size(); ++k) {
    std::string now = tokenizer_->decode(std::span<const TokenId>(encoded.data(), k), false);
    // Each token's text is what it adds to the decode of the tokens before it (ASCII answers
    // always extend it; otherwise the token's own text).
    if (now.size() >= before.size() && now.compare(0, before.size(), before) == 0) {
      texts.push_back(now.substr(before.size()));
    } else {
      texts.push_back(tokenizer_->decode(std::span<const TokenId>(&encoded[k - 1], 1), false));
    }
    ids.push_back(static_cast<std::uint32_t>(encoded[k - 1]));
    before = std::move(now);
  }
}

void ModelServerTokenizer::encode_text(std::string_view text, std::vector<std::uint32_t>& ids,
                                       std::vector<std::string>& texts) const {
  const auto encoded = tokenizer_->encode(text, false);
  std::vector<std::string> pieces;
  std::string before;
  for (std::size_t k = 1; k <= encoded.size(); ++k) {
    std::string now = tokenizer_->decode(std::span<const TokenId>(encoded.data(), k), false);
    if (now.size() < before.size() || now.compare(0, before.size(), before) != 0) break;
    pieces.push_back(now.substr(before.size()));
    before = std::move(now);
  }
  if (pieces.size() == encoded.size() && before == text) {
    append_ids(encoded, ids);
    for (auto& p : pieces) texts.push_back(std::move(p));
    return;
  }
  // A tokenizer that does not give the text back piece by piece (normalization, a dropped
  // space): the mock's word pieces, each the id of its first real token, so the text is exact.
  std::vector<std::uint32_t> word_ids;
  std::vector<std::string> word_texts;
  ServerTokenizer::encode_text(text, word_ids, word_texts);
  for (auto& piece : word_texts) {
    const auto piece_ids = tokenizer_->encode(piece, false);
    ids.push_back(piece_ids.empty() ? generator_ids_.front() : static_cast<std::uint32_t>(piece_ids.front()));
    texts.push_back(std::move(piece));
  }
}

std::string ModelServerTokenizer::out_of_vocabulary_message(std::string_view id) const {
  return fmt::format("Token id {} is out of vocabulary: the tokenizer's ({}) ids are in [0, {}]", id,
                     tokenizer_->source().filename().string(), vocab_size_ - 1);
}

std::shared_ptr<const ModelServerTokenizer> load_server_tokenizer(const std::filesystem::path& path) {
  return std::make_shared<const ModelServerTokenizer>(tokenizer::load_tokenizer(path));
}

}  // namespace llmload::server
