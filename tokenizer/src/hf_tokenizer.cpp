#include "hf_tokenizer.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "added_tokens.hpp"
#include "bpe_model.hpp"
#include "decoder.hpp"
#include "normalizer.hpp"
#include "post_processor.hpp"
#include "pre_tokenizer.hpp"

namespace llmload::tokenizer {
namespace {

constexpr std::string_view kSupportedModels = "model type BPE";
// Ids index a dense table of vocab_size() entries, so they are bounded: 2^24 is far above the
// largest vocabularies (a few hundred thousand tokens), and an id near INT32_MAX in a malformed
// file would otherwise ask for 32 GiB.
constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 24) - 1;

// Whether `id` is a token id this library accepts: an integer from 0 to kMaxTokenId.
bool is_token_id(const hf::Json& id) {
  if (id.is_number_unsigned()) return id.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxTokenId);
  return id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() <= kMaxTokenId;
}

// root[key], or null when absent.
const hf::Json& member(const hf::Json& root, const char* key) {
  static const hf::Json kNull;
  const auto it = root.find(key);
  return it == root.end() ? kNull : *it;
}

std::vector<std::pair<std::string, std::string>> read_merges(const hf::Json& model, const std::string& origin) {
  std::vector<std::pair<std::string, std::string>> merges;
  const auto it = model.find("merges");
  if (it == model.end() || !it->is_array()) hf::malformed(origin, "model.merges is missing");
  merges.reserve(it->size());
  for (const auto& m : *it) {
    if (m.is_string()) {
      const auto& s = m.get_ref<const std::string&>();
      const auto space = s.find(' ');
      if (space == std::string::npos) hf::malformed(origin, "model.merges entry \"" + s + "\" has no space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      hf::malformed(origin, "a model.merges entry is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return merges;
}

StringMap<TokenId> read_vocab(const hf::Json& model, const std::string& origin) {
  const auto it = model.find("vocab");
  if (it == model.end() || !it->is_object()) hf::malformed(origin, "model.vocab is missing");
  StringMap<TokenId> vocab;
  vocab.reserve(it->size());
  for (const auto& [token, id] : it->items()) {
    if (!is_token_id(id)) {
      hf::malformed(origin, "model.vocab[\"" + token + "\"] is not a token id (an integer from 0 to " +
                                std::to_string(kMaxTokenId) + ")");
    }
    vocab.emplace(token, id.get<TokenId>());
  }
  return vocab;
}

void check_model(const hf::Json& model, const std::string& origin) {
  const std::string type = hf::type_of(model);
  if (type != "BPE" && !(type.empty() && model.contains("merges"))) {
    hf::refuse(origin, "the model type \"" + type + "\" (WordPiece, Unigram and WordLevel models are not implemented)",
               kSupportedModels);
  }
  if (const auto d = model.find("dropout"); d != model.end() && d->is_number() && d->get<double>() > 0) {
    hf::refuse(origin, "BPE dropout (random segmentation)", "dropout null", "set \"dropout\": null in a copy of the file");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!hf::string_field(model, key, origin).empty()) {
      hf::refuse(origin, std::string("a BPE model with ") + key, "BPE without subword prefixes or suffixes");
    }
  }
}

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const hf::Json& root, std::filesystem::path origin);

  std::vector<TokenId> encode(std::string_view text, bool add_special) const override;
  std::string decode(std::span<const TokenId> ids, bool skip_special) const override;
  std::string_view kind() const override { return byte_level_ ? "hf-bpe-byte-level" : "hf-bpe-sentencepiece"; }
  std::optional<TokenId> token_id(std::string_view token) const override;
  std::size_t vocab_size() const override { return id_to_token_.size(); }
  const std::filesystem::path& source() const override { return origin_; }

 private:
  void read_added_tokens(const hf::Json& root, const std::string& origin);
  void encode_section(std::string_view text, bool first_section, std::vector<TokenId>& ids) const;
  void encode_normalized(std::string_view text, bool first_section, std::vector<TokenId>& ids) const;

  std::filesystem::path origin_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<PostProcessor> post_processor_;
  bool byte_level_ = false;
  std::vector<AddedToken> added_;
  std::unordered_map<TokenId, const AddedToken*> added_by_id_;
  std::unique_ptr<AddedTokenMatcher> raw_matcher_;         // tokens matched in the input
  std::unique_ptr<AddedTokenMatcher> normalized_matcher_;  // tokens matched after normalization
  std::vector<AddedToken> normalized_forms_;               // their normalized spellings
  std::vector<std::string_view> id_to_token_;              // "" where an id has no token
};

HfTokenizer::HfTokenizer(const hf::Json& root, std::filesystem::path origin_path) : origin_(std::move(origin_path)) {
  const std::string origin = origin_.string();
  if (!root.is_object()) hf::malformed(origin, "the top level is not a JSON object");
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) hf::malformed(origin, "it has no \"model\"");
  check_model(*model, origin);
  normalizer_ = make_normalizer(member(root, "normalizer"), origin);
  PreTokenizerInfo info;
  pre_tokenizer_ = make_pre_tokenizer(member(root, "pre_tokenizer"), origin, info);
  byte_level_ = info.byte_level;
  decoder_ = make_decoder(member(root, "decoder"), origin);

  auto vocab = read_vocab(*model, origin);
  BpeOptions options;
  options.byte_level = byte_level_;
  options.byte_fallback = hf::bool_field(*model, "byte_fallback", origin, false);
  options.ignore_merges = hf::bool_field(*model, "ignore_merges", origin, false);
  if (const auto unk = hf::string_field(*model, "unk_token", origin); !unk.empty()) {
    if (const auto it = vocab.find(unk); it != vocab.end()) options.unknown = it->second;
  }
  model_ = std::make_unique<BpeModel>(std::move(vocab), read_merges(*model, origin), options, origin);
  read_added_tokens(root, origin);
  post_processor_ = std::make_unique<PostProcessor>(member(root, "post_processor"), origin,
                                                    [this](std::string_view t) { return token_id(t); });
}

void HfTokenizer::read_added_tokens(const hf::Json& root, const std::string& origin) {
  const auto list = root.find("added_tokens");
  if (list != root.end() && list->is_array()) {
    added_.reserve(list->size());
    for (const auto& a : *list) {
      AddedToken t;
      t.content = hf::string_field(a, "content", origin);
      if (!a.contains("id") || !a["id"].is_number_integer()) hf::malformed(origin, "an added token has no id");
      if (!is_token_id(a["id"])) {
        hf::malformed(origin, "the added token \"" + t.content + "\" has id " + a["id"].dump() +
                                  ", not a token id (an integer from 0 to " + std::to_string(kMaxTokenId) + ")");
      }
      t.id = a["id"].get<TokenId>();
      t.special = hf::bool_field(a, "special", origin, false);
      t.lstrip = hf::bool_field(a, "lstrip", origin, false);
      t.rstrip = hf::bool_field(a, "rstrip", origin, false);
      t.normalized = hf::bool_field(a, "normalized", origin, !t.special) && normalizer_ != nullptr;
      added_.push_back(std::move(t));
    }
  }
  std::vector<const AddedToken*> raw, normalized;
  normalized_forms_.reserve(added_.size());
  for (const auto& t : added_) {
    added_by_id_[t.id] = &t;
    if (!t.normalized) {
      raw.push_back(&t);
      continue;
    }
    normalized_forms_.push_back(t);
    normalized_forms_.back().content = normalizer_->normalize(t.content);
  }
  for (const auto& t : normalized_forms_) normalized.push_back(&t);
  raw_matcher_ = std::make_unique<AddedTokenMatcher>(raw);
  normalized_matcher_ = std::make_unique<AddedTokenMatcher>(normalized);

  TokenId max_id = -1;
  for (const auto& [token, id] : model_->vocab()) max_id = std::max(max_id, id);
  for (const auto& t : added_) max_id = std::max(max_id, t.id);
  id_to_token_.assign(static_cast<std::size_t>(max_id + 1), std::string_view());
  for (const auto& [token, id] : model_->vocab()) id_to_token_[static_cast<std::size_t>(id)] = token;
  for (const auto& t : added_) id_to_token_[static_cast<std::size_t>(t.id)] = t.content;
}

std::optional<TokenId> HfTokenizer::token_id(std::string_view token) const {
  for (const auto& t : added_) {
    if (t.content == token) return t.id;
  }
  return model_->token_id(token);
}

void HfTokenizer::encode_normalized(std::string_view text, bool first_section, std::vector<TokenId>& ids) const {
  Words words;
  words.views.push_back(text);
  if (pre_tokenizer_) pre_tokenizer_->apply(words, first_section);
  for (const auto w : words.views) model_->encode_word(w, ids);
}

void HfTokenizer::encode_section(std::string_view text, bool first_section, std::vector<TokenId>& ids) const {
  if (normalizer_ == nullptr) return encode_normalized(text, first_section, ids);
  const std::string normalized = normalizer_->normalize(text);
  if (normalized_matcher_->empty()) return encode_normalized(normalized, first_section, ids);
  for (const auto& s : normalized_matcher_->split(normalized)) {
    if (s.token != nullptr) ids.push_back(s.token->id);
    else if (!s.text.empty()) encode_normalized(s.text, first_section, ids);
  }
}

std::vector<TokenId> HfTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  const auto sections = raw_matcher_->empty() ? std::vector<Section>{{text, nullptr}} : raw_matcher_->split(text);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].token != nullptr) ids.push_back(sections[i].token->id);
    else if (!sections[i].text.empty()) encode_section(sections[i].text, i == 0, ids);
  }
  if (add_special) post_processor_->apply(ids);
  return ids;
}

std::string HfTokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  std::vector<DecodePiece> pieces;
  pieces.reserve(ids.size());
  for (const TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size()) continue;
    if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) {
      if (!(skip_special && it->second->special)) pieces.push_back({it->second->content, true});
      continue;
    }
    const auto token = id_to_token_[static_cast<std::size_t>(id)];
    if (!token.empty()) pieces.push_back({std::string(token), false});
  }
  return run_decoder(decoder_.get(), std::move(pieces));
}

}  // namespace

std::unique_ptr<Tokenizer> make_hf_tokenizer(const hf::Json& root, const std::filesystem::path& origin) {
  return std::make_unique<HfTokenizer>(root, origin);
}

}  // namespace llmload::tokenizer
