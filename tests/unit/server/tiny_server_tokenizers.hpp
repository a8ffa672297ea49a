// Hand-made tokenizer.json files for the server's --tokenizer tests, small enough to reason
// about by hand (the idea of tests/tokenizer/tiny_tokenizers.hpp).
#pragma once

#include <memory>
#include <string>

#include "llmload/server/json.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::server::tiny_tokenizers {

// Byte-level BPE (GPT-2 style) with a BOS <s> (id 0) that the post-processor prepends. Single
// tokens: " the" (14), " of" (16), " and" (19), " a" (17), " an" (18); also '"' (10) and "\n" (11, "Ċ").
// Letters outside {t,h,e,o,f,a,n,d} are not in the vocabulary (dropped: no unknown token).
inline std::string byte_level_json() {
  using nlohmann::json;
  json vocab = {{"<s>", 0},   {"Ġ", 1},    {"t", 2},     {"h", 3},    {"e", 4},    {"o", 5},    {"f", 6},
                {"a", 7},     {"n", 8},    {"d", 9},     {"\"", 10},  {"Ċ", 11},   {"Ġt", 12},  {"Ġth", 13},
                {"Ġthe", 14}, {"Ġo", 15},  {"Ġof", 16},  {"Ġa", 17},  {"Ġan", 18}, {"Ġand", 19}, {"th", 20},
                {"the", 21}};
  json merges = {"Ġ t", "Ġt h", "Ġth e", "Ġ o", "Ġo f", "Ġ a", "Ġa n", "Ġan d", "t h", "th e"};
  json doc = {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 0}, {"content", "<s>"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
         {"normalized", false}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", merges}}},
  };
  return doc.dump();
}

// SentencePiece-style BPE (Llama 2 style): "▁" for spaces, a Strip decoder that drops the
// leading space, BOS <s> (id 1). Single tokens: "▁the" (10), "▁of" (12).
inline std::string sentencepiece_style_json() {
  using nlohmann::json;
  json doc = {
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", false}, {"fuse_unk", true},
        {"vocab", {{"<unk>", 0}, {"<s>", 1}, {"▁", 2}, {"t", 3}, {"h", 4}, {"e", 5}, {"o", 6}, {"f", 7},
                   {"▁t", 8}, {"▁th", 9}, {"▁the", 10}, {"▁o", 11}, {"▁of", 12}}},
        {"merges", {"▁ t", "▁t h", "▁th e", "▁ o", "▁o f"}}}},
  };
  return doc.dump();
}

inline std::unique_ptr<tokenizer::Tokenizer> load_json(const std::string& text) {
  return tokenizer::load_hf_tokenizer_json(text, "tiny/tokenizer.json");
}

}  // namespace llmload::server::tiny_tokenizers
