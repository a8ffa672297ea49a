// llmload_tokenizer: a model's own tokenizer, loaded from the model's files, to count and make
// tokens exactly as the server under test does (docs/tokenizers.md).
//
// Supported: Hugging Face tokenizer.json with a BPE model, byte-level (GPT-2, Llama 3, Qwen 2/3,
// DeepSeek V3) or SentencePiece-style (byte_fallback, "▁" for spaces: Llama 2, Mistral, Gemma),
// and SentencePiece tokenizer.model files through libsentencepiece when the build found it.
// Anything else is refused at load time with a TokenizerError that names the file, the
// unsupported part and the fix; nothing is downloaded, ever.
//
// Threading: a loaded Tokenizer is immutable apart from an internal, mutex-guarded cache; every
// const member function may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::tokenizer {

using TokenId = std::int32_t;

// A tokenizer file that cannot be read or is not supported. The message names the file, what
// is wrong or unsupported, and what to do about it.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` (UTF-8). Added tokens (e.g. "<|im_start|>") in the text are recognized as
  // such, as the server's tokenizer does. With add_special, the tokenizer's post-processor adds
  // what it declares (e.g. a BOS token); without it, nothing is added.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special = false) const = 0;

  // The text of `ids`; with skip_special, special tokens are left out. Ids outside the
  // vocabulary are skipped. Byte sequences that are not valid UTF-8 become U+FFFD.
  virtual std::string decode(std::span<const TokenId> ids, bool skip_special = true) const = 0;

  // encode(text).size(), without special tokens.
  std::size_t count(std::string_view text) const { return encode(text).size(); }

  // What was loaded: "hf-bpe-byte-level", "hf-bpe-sentencepiece" or "sentencepiece".
  virtual std::string_view kind() const = 0;

  // The id of a token given as the vocabulary spells it (e.g. "<|endoftext|>", "Ġthe").
  virtual std::optional<TokenId> token_id(std::string_view token) const = 0;

  // One more than the largest id (added tokens included).
  virtual std::size_t vocab_size() const = 0;

  // The file it was loaded from.
  virtual const std::filesystem::path& source() const = 0;
};

// Loads the tokenizer at `path`: a model directory (its tokenizer.json, else its
// tokenizer.model) or either file itself. Throws TokenizerError.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

// Builds a tokenizer from the text of a tokenizer.json; `origin` names it in error messages.
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(std::string_view json_text,
                                                  const std::filesystem::path& origin = "tokenizer.json");

// Whether this build can read SentencePiece .model files (libsentencepiece was found).
bool sentencepiece_available();

// The Unicode version of the built-in character tables (categories, NFC), e.g. "14.0.0".
const char* unicode_version();

}  // namespace llmload::tokenizer
