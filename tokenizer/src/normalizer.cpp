#include "normalizer.hpp"

#include <algorithm>
#include <vector>

#include "regex.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

constexpr std::string_view kSupportedNormalizers = "null, NFC, Replace, Prepend, Strip, Sequence";

class NfcNormalizer final : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override { return unicode::nfc(text); }
  std::size_t growth() const override { return 3; }  // UTF-8 NFC grows text at most 3-fold (UAX #15)
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(hf::Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {
    if (pattern_.is_regex) regex_ = std::make_unique<Regex>(pattern_.text);
  }
  std::string normalize(std::string_view text) const override {
    return replace_all(text, pattern_, content_, regex_.get());
  }
  std::size_t growth() const override { return replace_growth(pattern_, content_); }

 private:
  hf::Pattern pattern_;
  std::string content_;
  std::unique_ptr<Regex> regex_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override {
    if (text.empty()) return {};
    return prefix_ + std::string(text);
  }
  std::size_t growth() const override { return combine_growth(1, 1 + prefix_.size()); }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view text) const override {
    std::size_t begin = 0, end = text.size();
    while (left_ && begin < end) {
      std::size_t next = begin;
      if (!unicode::is_white_space(unicode::next_code_point(text, next))) break;
      begin = next;
    }
    while (right_ && end > begin) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      std::size_t probe = start;
      if (!unicode::is_white_space(unicode::next_code_point(text, probe))) break;
      end = start;
    }
    return std::string(text.substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& step : steps_) s = step->normalize(s);
    return s;
  }
  std::size_t growth() const override {
    std::size_t g = 1;
    for (const auto& step : steps_) g = combine_growth(g, step->growth());
    return g;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::size_t combine_growth(std::size_t a, std::size_t b) {
  return a > (kMaxTextGrowth + 1) / b ? kMaxTextGrowth + 1 : std::min(a * b, kMaxTextGrowth + 1);
}

std::size_t replace_growth(const hf::Pattern& pattern, std::string_view content) {
  // A string pattern: each match of |pattern| bytes becomes |content| bytes. A regex: one match
  // per code point at most, maybe empty, so n bytes become at most n + (n + 1) * |content|.
  if (!pattern.is_regex) {
    if (pattern.text.empty()) return 1;  // nothing is replaced
    return std::max<std::size_t>(1, (content.size() + pattern.text.size() - 1) / pattern.text.size());
  }
  return combine_growth(1, std::min(content.size(), kMaxTextGrowth) * 2 + 1);
}

std::string replace_all(std::string_view text, const hf::Pattern& pattern, std::string_view content, const Regex* regex) {
  std::string out;
  out.reserve(text.size());
  std::size_t last = 0;
  if (regex != nullptr) {
    for (const auto& m : regex->find_all(text)) {
      out.append(text.substr(last, m.begin - last)).append(content);
      last = m.end;
    }
  } else if (!pattern.text.empty()) {
    for (std::size_t at = text.find(pattern.text); at != std::string_view::npos; at = text.find(pattern.text, last)) {
      out.append(text.substr(last, at - last)).append(content);
      last = at + pattern.text.size();
    }
  }
  out.append(text.substr(last));
  return out;
}

namespace {

std::unique_ptr<Normalizer> make_known_normalizer(const hf::Json& config, const std::string& origin) {
  if (config.is_null()) return nullptr;
  const std::string type = hf::type_of(config);
  if (type == "NFC") return std::make_unique<NfcNormalizer>();
  if (type == "Replace") {
    auto pattern = hf::pattern_field(config, origin, "normalizer Replace");
    try {
      return std::make_unique<ReplaceNormalizer>(std::move(pattern), hf::string_field(config, "content", origin));
    } catch (const RegexError& e) {
      hf::refuse_regex(origin, "normalizer Replace", e);
    }
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(hf::string_field(config, "prepend", origin));
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(hf::bool_field(config, "strip_left", origin, true),
                                             hf::bool_field(config, "strip_right", origin, true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    const auto it = config.find("normalizers");
    if (it == config.end() || !it->is_array()) hf::malformed(origin, "normalizer Sequence has no \"normalizers\" list");
    for (const auto& step : *it) {
      if (auto n = make_normalizer(step, origin)) steps.push_back(std::move(n));
    }
    if (steps.empty()) return nullptr;
    if (steps.size() == 1) return std::move(steps[0]);
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  hf::refuse(origin, "the normalizer type \"" + type + "\"", kSupportedNormalizers);
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const hf::Json& config, const std::string& origin) {
  auto n = make_known_normalizer(config, origin);
  if (n != nullptr && n->growth() > kMaxTextGrowth) {
    hf::refuse(origin,
               "a normalizer that can make the text more than " + std::to_string(kMaxTextGrowth) +
                   " times longer (its steps multiply: NFC by 3, Prepend by 1 + its length, Replace by its "
                   "content's length over its pattern's, or 2 * content + 1 for a regex)",
               "normalizers that grow the text at most " + std::to_string(kMaxTextGrowth) + "-fold");
  }
  return n;
}

}  // namespace llmload::tokenizer
