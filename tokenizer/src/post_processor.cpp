#include "post_processor.hpp"

namespace llmload::tokenizer {
namespace {

constexpr std::string_view kSupportedPostProcessors =
    "null, TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence";

TokenId special_id(const hf::Json& config, const std::string& name, const std::string& origin,
                   const PostProcessor::Lookup& token_id) {
  if (const auto sp = config.find("special_tokens"); sp != config.end() && sp->is_object()) {
    if (const auto e = sp->find(name); e != sp->end()) {
      const auto ids = e->find("ids");
      if (ids != e->end() && ids->is_array() && ids->size() == 1 && (*ids)[0].is_number_integer()) {
        return (*ids)[0].get<TokenId>();
      }
    }
  }
  if (const auto id = token_id(name)) return *id;
  hf::malformed(origin, "post_processor names the special token \"" + name + "\", which is not in the vocabulary");
}

// RobertaProcessing / BertProcessing: {"cls": ["<s>", 0], "sep": ["</s>", 2]}.
TokenId pair_id(const hf::Json& config, const char* key, const std::string& origin) {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
    hf::malformed(origin, std::string("post_processor has no [token, id] \"") + key + "\"");
  }
  return (*it)[1].get<TokenId>();
}

}  // namespace

PostProcessor::PostProcessor(const hf::Json& config, const std::string& origin, const Lookup& token_id) {
  add(config, origin, token_id);
}

void PostProcessor::add(const hf::Json& config, const std::string& origin, const Lookup& token_id) {
  if (config.is_null()) return;
  const std::string type = hf::type_of(config);
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const auto it = config.find("processors");
    if (it == config.end() || !it->is_array()) hf::malformed(origin, "post_processor Sequence has no \"processors\" list");
    for (const auto& p : *it) add(p, origin, token_id);
    return;
  }
  if (!single_.empty()) hf::refuse(origin, "a post_processor Sequence with two templates", kSupportedPostProcessors);
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    single_ = {pair_id(config, "cls", origin), std::nullopt, pair_id(config, "sep", origin)};
    return;
  }
  if (type != "TemplateProcessing") hf::refuse(origin, "the post_processor type \"" + type + "\"", kSupportedPostProcessors);
  const auto single = config.find("single");
  if (single == config.end() || !single->is_array()) hf::malformed(origin, "post_processor TemplateProcessing has no \"single\"");
  for (const auto& item : *single) {
    if (const auto s = item.find("SpecialToken"); s != item.end()) {
      single_.emplace_back(special_id(config, hf::string_field(*s, "id", origin), origin, token_id));
    } else if (item.contains("Sequence")) {
      single_.emplace_back(std::nullopt);
    } else {
      hf::malformed(origin, "post_processor template item is neither SpecialToken nor Sequence");
    }
  }
}

void PostProcessor::apply(std::vector<TokenId>& ids) const {
  if (single_.empty()) return;
  std::vector<TokenId> out;
  out.reserve(ids.size() + single_.size());
  for (const auto& item : single_) {
    if (item) out.push_back(*item);
    else out.insert(out.end(), ids.begin(), ids.end());
  }
  ids = std::move(out);
}

}  // namespace llmload::tokenizer
