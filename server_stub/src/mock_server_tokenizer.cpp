#include "llmload/server/mock_server_tokenizer.hpp"

#include <fmt/format.h>

namespace llmload::server {

MockServerTokenizer::MockServerTokenizer(std::shared_ptr<TokenVocabulary> vocabulary)
    : vocabulary_(vocabulary ? std::move(vocabulary) : std::make_shared<TokenVocabulary>()) {}

std::string MockServerTokenizer::description() const {
  return "mock (one token per whitespace-separated word; --tokenizer PATH for a model's real tokenizer)";
}

void MockServerTokenizer::append_prompt_ids(std::string_view text, bool /*add_special*/,
                                            std::vector<std::uint32_t>& ids) const {
  append_token_ids(text, ids);
}

void MockServerTokenizer::append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const {
  append_token_ids(text, ids);
}

void MockServerTokenizer::tokenize(std::string_view text, bool /*add_special*/, std::vector<std::uint32_t>& ids,
                                   std::vector<std::string>* strs) const {
  vocabulary_->remember_words(text);
  for (auto word : split_words(text)) {
    ids.push_back(token_id(word));
    if (strs != nullptr) strs->emplace_back(word);
  }
}

std::string MockServerTokenizer::detokenize(const std::vector<std::uint32_t>& ids) const {
  return vocabulary_->detokenize(ids);
}

std::uint32_t MockServerTokenizer::generator_id(std::size_t i) const {
  return ::llmload::server::generated_token_id(static_cast<std::int64_t>(i));
}

std::string_view MockServerTokenizer::generator_text(std::size_t i, bool /*first*/) const {
  return generated_token(static_cast<std::int64_t>(i));
}

void MockServerTokenizer::encode_answer(std::string_view text, std::vector<std::uint32_t>& ids,
                                        std::vector<std::string>& texts) const {
  vocabulary_->remember_words(text);
  for (auto word : split_words(text)) {
    ids.push_back(token_id(word));
    texts.push_back(" " + std::string(word));
  }
}

void ServerTokenizer::encode_text(std::string_view text, std::vector<std::uint32_t>& ids,
                                  std::vector<std::string>& texts) const {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t word = pos;
    while (word < text.size() && is_space(text[word])) ++word;
    std::size_t end = word;
    while (end < text.size() && !is_space(text[end])) ++end;
    if (end == word && !texts.empty()) {  // trailing whitespace: part of the last token
      texts.back() += text.substr(pos);
      break;
    }
    ids.push_back(end > word ? token_id(text.substr(word, end - word)) : 0);
    texts.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
}

void MockServerTokenizer::encode_text(std::string_view text, std::vector<std::uint32_t>& ids,
                                      std::vector<std::string>& texts) const {
  vocabulary_->remember_words(text);
  ServerTokenizer::encode_text(text, ids, texts);
}

std::string MockServerTokenizer::out_of_vocabulary_message(std::string_view id) const {
  return fmt::format("Token id {} is out of vocabulary: the mock's token ids are in [0, {}]", id, kVocabSize - 1);
}

const ServerTokenizer& server_tokenizer_or_mock(const std::shared_ptr<const ServerTokenizer>& tokenizer) {
  if (tokenizer) return *tokenizer;
  static const MockServerTokenizer mock;
  return mock;
}

}  // namespace llmload::server
