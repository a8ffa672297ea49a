#pragma once
// `llmload-server --tokenizer PATH`: a model's real tokenizer (llmload_tokenizer) behind the
// ServerTokenizer interface, so a load test rehearses with the model's real token boundaries.
//   - prompts: completions and /generate text = encode(text, add_special = true); chat = each
//     message's text part encoded on its own without special tokens, concatenated (no template).
//   - /tokenize: encode (add_special_tokens, default true; messages as chat); token_strs are the
//     decode of each id alone. /detokenize: decode(ids), special tokens kept.
//   - generator tokens: at start-up, common English words (the mock's list, " the", " of", ...)
//     that are one token each are looked up; a word is kept only if every pair of it with the
//     kept tokens (and itself), in both orders, re-encodes to itself (encode(decode(ids)) == ids,
//     no merge across boundaries), so text drawn from them in any order does. Chunk texts are
//     incremental: an output's first token's text is decode([id]), a later one's the text
//     decode([kept0, id]) adds after decode([kept0]) (so SentencePiece's stripped leading space is
//     right), and their concatenation equals decode of the ids.
//   - answers: encode(text) (with a leading space when the generator words are spaced tokens, as
//     " the" is in byte-level vocabularies), each token's text what it adds to the decode before.
// Thread-safe: a loaded Tokenizer's const methods are; the rest is immutable after construction.

#include <filesystem>
#include <memory>

#include "llmload/server/server_tokenizer.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::server {

class ModelServerTokenizer final : public ServerTokenizer {
 public:
  /// Throws tokenizer::TokenizerError when no generator tokens can be found in the vocabulary.
  explicit ModelServerTokenizer(std::unique_ptr<tokenizer::Tokenizer> tokenizer);

  std::string description() const override;
  std::uint64_t vocab_size() const override { return vocab_size_; }
  void append_prompt_ids(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids) const override;
  void append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const override;
  void tokenize(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids,
                std::vector<std::string>* strs) const override;
  std::string detokenize(const std::vector<std::uint32_t>& ids) const override;
  std::size_t generator_size() const override { return generator_ids_.size(); }
  std::uint32_t generator_id(std::size_t i) const override;
  std::string_view generator_text(std::size_t i, bool first) const override;
  void encode_answer(std::string_view text, std::vector<std::uint32_t>& ids,
                     std::vector<std::string>& texts) const override;
  void encode_text(std::string_view text, std::vector<std::uint32_t>& ids,
                   std::vector<std::string>& texts) const override;
  std::string out_of_vocabulary_message(std::string_view id) const override;

  /// The generator's token ids, in generation order.
  const std::vector<std::uint32_t>& generator_ids() const { return generator_ids_; }
  const tokenizer::Tokenizer& model_tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::uint64_t vocab_size_ = 0;
  std::vector<std::uint32_t> generator_ids_;
  std::vector<std::string> first_text_;  ///< generator i's text as an output's first token: decode([id])
  std::vector<std::string> cont_text_;   ///< generator i's text after any earlier token
  bool spaced_ = false;                  ///< generator tokens are words with their leading space
};

/// Loads the tokenizer at `path` (a model directory, tokenizer.json or tokenizer.model).
/// Throws tokenizer::TokenizerError naming the file and the fix.
std::shared_ptr<const ModelServerTokenizer> load_server_tokenizer(const std::filesystem::path& path);

}  // namespace llmload::server
