// The tokenizer of a Hugging Face tokenizer.json: added tokens, normalizer, pre-tokenizer, BPE
// model, post-processor and decoder, each built from its part of the file.
#pragma once

#include <filesystem>
#include <memory>

#include "hf_json.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer {

// Throws TokenizerError naming `origin` for anything unsupported or malformed.
std::unique_ptr<Tokenizer> make_hf_tokenizer(const hf::Json& root, const std::filesystem::path& origin);

}  // namespace llmload::tokenizer
