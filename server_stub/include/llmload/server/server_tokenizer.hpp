#pragma once
// The server's tokenizer: how prompts are counted (usage, context-length checks, the prefix
// cache's token ids), what POST /tokenize and /detokenize answer, and which tokens are generated.
// Chosen once at start-up and read-only afterwards; every member is const and thread-safe.
//   - MockServerTokenizer (mock_server_tokenizer.hpp): the default, one token per whitespace
//     word (mock_tokenizer.hpp).
//   - ModelServerTokenizer (model_server_tokenizer.hpp): `--tokenizer PATH`, a model's real
//     tokenizer (llmload_tokenizer) with real token boundaries and ids (docs/server.md).
//
// Generated text (completion.hpp decides which tokens): filler tokens come from the generator's
// vocabulary (generator_size() tokens: generator_id(i), generator_text(i, first)); an answer's
// tokens from encode_answer(). A chunk's text is what the token adds to the text before it, so
// the concatenation of an output's chunk texts is the decode of its ids, and re-encoding that
// text with the same tokenizer gives back exactly the generated ids. The texts may need JSON
// escaping.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

class ServerTokenizer {
 public:
  virtual ~ServerTokenizer() = default;

  /// One line for the start-up log, e.g. "mock (one token per whitespace word)".
  virtual std::string description() const = 0;

  /// Ids are in [0, vocab_size()).
  virtual std::uint64_t vocab_size() const = 0;

  /// Appends the ids of a prompt's text (completions, /generate, /tokenize's `prompt`).
  /// `add_special`: the tokenizer's post-processor adds its special tokens (e.g. BOS).
  virtual void append_prompt_ids(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids) const = 0;

  /// Appends the ids of one text part of a chat message (never special tokens, no template).
  virtual void append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const = 0;

  /// POST /tokenize of one text: appends its ids (as append_prompt_ids) and, when `strs` is
  /// given, each token's text. May remember the text so that detokenize() can spell it.
  virtual void tokenize(std::string_view text, bool add_special, std::vector<std::uint32_t>& ids,
                        std::vector<std::string>* strs) const = 0;

  /// POST /detokenize: the text of `ids` (each < vocab_size()).
  virtual std::string detokenize(const std::vector<std::uint32_t>& ids) const = 0;

  /// The number of tokens in the generator's vocabulary (>= 1).
  virtual std::size_t generator_size() const = 0;

  /// The id of generator token i (i < generator_size()).
  virtual std::uint32_t generator_id(std::size_t i) const = 0;

  /// The text a stream chunk carries for generator token i: as an output's first token
  /// (`first`), or after any earlier token.
  virtual std::string_view generator_text(std::size_t i, bool first) const = 0;

  /// The tokens of an answer (words separated by single spaces, arithmetic_answer.hpp) at the
  /// start of an output: appends their ids and their chunk texts. The mock remembers the words,
  /// so that detokenize() spells them in this process.
  virtual void encode_answer(std::string_view text, std::vector<std::uint32_t>& ids,
                             std::vector<std::string>& texts) const = 0;

  /// The tokens of a structured output's JSON text (structured_output.hpp) at the start of an
  /// output: appends their ids and chunk texts, whose concatenation is exactly `text`. The
  /// default is the mock's rule: each token one whitespace-separated word with the whitespace
  /// before it (ids as prompt words).
  virtual void encode_text(std::string_view text, std::vector<std::uint32_t>& ids, std::vector<std::string>& texts) const;

  /// The message of a 400 for a token id outside [0, vocab_size()).
  virtual std::string out_of_vocabulary_message(std::string_view id) const = 0;
};

/// The tokenizer a request uses: `tokenizer` when set, else a process-wide mock.
const ServerTokenizer& server_tokenizer_or_mock(const std::shared_ptr<const ServerTokenizer>& tokenizer);

}  // namespace llmload::server
