#pragma once
// The default ServerTokenizer: the mock's one-token-per-word rule (mock_tokenizer.hpp). Ids of
// hashed words seen by /tokenize (and the words of generated answers) are remembered in a
// TokenVocabulary so /detokenize can spell them; add_special is ignored (the mock has no special
// tokens). The generator's vocabulary is the 32 words (" the", " of", ...), ids 0..31; an
// answer's tokens are its words, each with a leading space, with their ids as prompt words.

#include <memory>

#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/server_tokenizer.hpp"

namespace llmload::server {

class MockServerTokenizer final : public ServerTokenizer {
 public:
  /// `vocabulary`: where /tokenize remembers words (shared, thread-safe); null: a private one.
  explicit MockServerTokenizer(std::shared_ptr<TokenVocabulary> vocabulary = nullptr);

  std::string description() const override;
  std::uint64_t vocab_size() const override { return kVocabSize; }
  void append_prompt_ids(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids) const override;
  void append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const override;
  void tokenize(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids,
                std::vector<std::string>* strs) const override;
  std::string detokenize(const std::vector<std::uint32_t>& ids) const override;
  std::size_t generator_size() const override { return kGeneratorWords; }
  std::uint32_t generator_id(std::size_t i) const override;
  std::string_view generator_text(std::size_t i, bool first) const override;
  void encode_answer(std::string_view text, std::vector<std::uint32_t>& ids,
                     std::vector<std::string>& texts) const override;
  void encode_text(std::string_view text, std::vector<std::uint32_t>& ids,
                   std::vector<std::string>& texts) const override;
  std::string out_of_vocabulary_message(std::string_view id) const override;

 private:
  std::shared_ptr<TokenVocabulary> vocabulary_;
};

}  // namespace llmload::server
