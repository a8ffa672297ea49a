// SentencePiece tokenizer.model files, through libsentencepiece (Debian's libsentencepiece-dev).
// Builds without the library compile sentencepiece_unavailable.cpp instead, whose loader
// refuses .model files with a TokenizerError saying how to get support.
#pragma once

#include <filesystem>
#include <memory>

#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer {

std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::filesystem::path& file);

}  // namespace llmload::tokenizer
