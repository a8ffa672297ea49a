// tokenizer.json "post_processor": what encode(text, add_special=true) puts around the ids.
// Supported: TemplateProcessing (its "single" template), RobertaProcessing, BertProcessing,
// ByteLevel (adds nothing), Sequence; null adds nothing.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hf_json.hpp"

namespace llmload::tokenizer {

class PostProcessor {
 public:
  // Template items: a special token id, or the sequence itself (nullopt).
  using Item = std::optional<TokenId>;
  using Lookup = std::function<std::optional<TokenId>(std::string_view)>;

  // Throws TokenizerError for an unsupported type or a template naming an unknown token.
  PostProcessor(const hf::Json& config, const std::string& origin, const Lookup& token_id);

  void apply(std::vector<TokenId>& ids) const;

 private:
  void add(const hf::Json& config, const std::string& origin, const Lookup& token_id);
  std::vector<Item> single_;  // empty: the ids as they are
};

}  // namespace llmload::tokenizer
