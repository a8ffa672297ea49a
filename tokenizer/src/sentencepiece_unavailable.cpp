// Compiled instead of sentencepiece_tokenizer.cpp when CMake did not find libsentencepiece.
#include "sentencepiece_tokenizer.hpp"

namespace llmload::tokenizer {

std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::filesystem::path& file) {
  throw TokenizerError(file.string() +
                       ": SentencePiece .model files are not supported by this build of llmload (libsentencepiece "
                       "was not found when it was configured); install libsentencepiece-dev and rebuild, or use the "
                       "model's tokenizer.json instead");
}

bool sentencepiece_available() { return false; }

}  // namespace llmload::tokenizer
