// Hand-made tokenizer.json files for the unit tests, small enough to reason about by hand.
#pragma once

#include <nlohmann/json.hpp>

namespace llmload::tokenizer::testing {

// A byte-level BPE (GPT-2 style) that knows "hello" and " world" ("Ġworld"), one special token
// <|end|> (id 17) and a template that appends it.
inline nlohmann::json byte_level_json(bool array_merges = false, bool ignore_merges = false) {
  using nlohmann::json;
  json vocab = {{"h", 0},   {"e", 1},      {"l", 2},   {"o", 3},     {"Ġ", 4},      {"w", 5},
                {"r", 6},   {"d", 7},      {"he", 8},  {"ll", 9},    {"hell", 10},  {"hello", 11},
                {"Ġw", 12}, {"or", 13},    {"Ġwor", 14}, {"ld", 15}, {"Ġworld", 16}, {"Ġworl", 18}};
  const char* pairs[][2] = {{"h", "e"}, {"l", "l"},   {"he", "ll"},  {"hell", "o"}, {"Ġ", "w"},
                            {"o", "r"}, {"Ġw", "or"}, {"l", "d"},    {"Ġwor", "ld"}};
  json merges = json::array();
  for (const auto& p : pairs) {
    if (array_merges) merges.push_back(json::array({p[0], p[1]}));
    else merges.push_back(std::string(p[0]) + " " + p[1]);
  }
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 17}, {"content", "<|end|>"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
         {"normalized", false}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens", {{"<|end|>", {{"id", "<|end|>"}, {"ids", {17}}, {"tokens", {"<|end|>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
        {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", merges}}},
  };
}

// A SentencePiece-style BPE (Llama 2 style): "▁" for spaces, byte fallback for é.
inline nlohmann::json sentencepiece_style_json() {
  using nlohmann::json;
  return {
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
        {{"id", 8}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {8}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true},
        {"vocab", {{"<unk>", 0}, {"<0xC3>", 1}, {"<0xA9>", 2}, {"▁", 3}, {"h", 4}, {"i", 5}, {"▁h", 6}, {"▁hi", 7}, {"<s>", 8}}},
        {"merges", {"▁ h", "▁h i"}}}},
  };
}

}  // namespace llmload::tokenizer::testing
