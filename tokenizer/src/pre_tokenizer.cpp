#include "pre_tokenizer.hpp"

#include <optional>

#include "regex.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

constexpr std::string_view kSupportedPreTokenizers = "null, ByteLevel, Split, Digits, Metaspace, Sequence";
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct Segment {
  std::size_t begin, end;
  bool delimiter;
};

// Splits `word` at the segments a matcher marks as delimiters, per HF's SplitDelimiterBehavior.
void split_segments(std::string_view word, const std::vector<Segment>& segs, Behavior behavior,
                    std::vector<std::string_view>& out) {
  auto piece = [&](std::size_t b, std::size_t e) {
    if (e > b) out.push_back(word.substr(b, e - b));
  };
  switch (behavior) {
    case Behavior::Removed:
      for (const auto& s : segs) {
        if (!s.delimiter) piece(s.begin, s.end);
      }
      return;
    case Behavior::Isolated:
      for (const auto& s : segs) piece(s.begin, s.end);
      return;
    case Behavior::MergedWithPrevious: {
      std::size_t start = 0;
      for (const auto& s : segs) {
        if (s.delimiter) piece(start, s.end), start = s.end;
      }
      piece(start, word.size());
      return;
    }
    case Behavior::MergedWithNext: {
      std::size_t start = 0;
      for (const auto& s : segs) {
        if (s.delimiter) piece(start, s.begin), start = s.begin;
      }
      piece(start, word.size());
      return;
    }
    case Behavior::Contiguous:
      for (std::size_t i = 0; i < segs.size();) {
        std::size_t j = i + 1;
        while (segs[i].delimiter && j < segs.size() && segs[j].delimiter) ++j;
        piece(segs[i].begin, segs[j - 1].end);
        i = j;
      }
      return;
  }
}

// Segments of `word` from a list of delimiter matches.
std::vector<Segment> segments_from(std::string_view word, const std::vector<RegexMatch>& matches, bool invert) {
  std::vector<Segment> segs;
  std::size_t last = 0;
  for (const auto& m : matches) {
    if (m.end == m.begin) continue;
    if (m.begin > last) segs.push_back({last, m.begin, invert});
    segs.push_back({m.begin, m.end, !invert});
    last = m.end;
  }
  if (last < word.size()) segs.push_back({last, word.size(), invert});
  return segs;
}

std::vector<RegexMatch> find_string(std::string_view word, std::string_view needle) {
  std::vector<RegexMatch> out;
  if (needle.empty()) return out;
  for (std::size_t at = word.find(needle); at != std::string_view::npos; at = word.find(needle, at + needle.size())) {
    out.push_back({at, at + needle.size()});
  }
  return out;
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(hf::Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {
    if (pattern_.is_regex) regex_.emplace(pattern_.text);
  }
  void apply(Words& words, bool) const override {
    std::vector<std::string_view> out;
    out.reserve(words.views.size() * 4);
    for (const auto w : words.views) {
      const auto matches = regex_ ? regex_->find_all(w) : find_string(w, pattern_.text);
      split_segments(w, segments_from(w, matches, invert_), behavior_, out);
    }
    words.views = std::move(out);
  }

 private:
  hf::Pattern pattern_;
  std::optional<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) split_.emplace(hf::Pattern{true, std::string(kGpt2Pattern)}, Behavior::Isolated, false);
  }
  void apply(Words& words, bool first_section) const override {
    if (add_prefix_space_) {
      for (auto& w : words.views) {
        if (w.empty() || w.front() != ' ') w = words.own(" " + std::string(w));
      }
    }
    if (split_) split_->apply(words, first_section);
  }

 private:
  bool add_prefix_space_;
  std::optional<SplitPreTokenizer> split_;
};

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void apply(Words& words, bool) const override {
    std::vector<std::string_view> out;
    for (const auto w : words.views) {
      std::vector<Segment> segs;
      for (std::size_t i = 0; i < w.size(); ++i) segs.push_back({i, i + 1, w[i] >= '0' && w[i] <= '9'});
      // Merge runs of non-digits first: they are never split.
      std::vector<Segment> merged;
      for (const auto& s : segs) {
        if (!merged.empty() && !s.delimiter && !merged.back().delimiter) merged.back().end = s.end;
        else merged.push_back(s);
      }
      split_segments(w, merged, individual_ ? Behavior::Isolated : Behavior::Contiguous, out);
    }
    words.views = std::move(out);
  }

 private:
  bool individual_;
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void apply(Words& words, bool first_section) const override {
    std::vector<std::string_view> out;
    for (const auto w : words.views) {
      std::string s = replace_spaces(w);
      const bool prepend = prepend_ == Prepend::Always || (prepend_ == Prepend::First && first_section);
      if (prepend && s.compare(0, replacement_.size(), replacement_) != 0) s.insert(0, replacement_);
      const std::string_view owned = words.own(std::move(s));
      if (!split_) {
        out.push_back(owned);
        continue;
      }
      split_segments(owned, segments_from(owned, find_string(owned, replacement_), false), Behavior::MergedWithNext, out);
    }
    words.views = std::move(out);
  }

 private:
  std::string replace_spaces(std::string_view w) const {
    std::string s;
    for (const char c : w) {
      if (c == ' ') s += replacement_;
      else s.push_back(c);
    }
    return s;
  }
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void apply(Words& words, bool first_section) const override {
    for (const auto& s : steps_) s->apply(words, first_section);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Behavior behavior_of(const std::string& name, const std::string& origin) {
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  if (name == "Contiguous") return Behavior::Contiguous;
  hf::refuse(origin, "the Split behavior \"" + name + "\"",
             "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

std::unique_ptr<PreTokenizer> make_metaspace(const hf::Json& config, const std::string& origin) {
  using P = MetaspacePreTokenizer::Prepend;
  P prepend = hf::bool_field(config, "add_prefix_space", origin, true) ? P::Always : P::Never;
  const std::string scheme = hf::string_field(config, "prepend_scheme", origin);
  if (scheme == "always") prepend = P::Always;
  else if (scheme == "first") prepend = P::First;
  else if (scheme == "never") prepend = P::Never;
  else if (!scheme.empty()) hf::refuse(origin, "the Metaspace prepend_scheme \"" + scheme + "\"", "always, first, never");
  // One character, as the tokenizers library requires: a longer one holding a space would grow
  // the text exponentially through a Sequence of Metaspace steps.
  std::string replacement = hf::string_field(config, "replacement", origin, "\u2581");
  std::size_t one = 0;
  if (!replacement.empty()) unicode::next_code_point(replacement, one);
  if (replacement.empty() || one != replacement.size()) {
    hf::malformed(origin, "the pre_tokenizer Metaspace replacement \"" + replacement + "\" is not one character");
  }
  return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), prepend,
                                                 hf::bool_field(config, "split", origin, true));
}

std::unique_ptr<PreTokenizer> make_sequence(const hf::Json& config, const std::string& origin, PreTokenizerInfo& info) {
  const auto it = config.find("pretokenizers");
  if (it == config.end() || !it->is_array()) hf::malformed(origin, "pre_tokenizer Sequence has no \"pretokenizers\" list");
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (const auto& step : *it) {
    if (info.byte_level) {
      hf::refuse(origin, "a pre-tokenizer after ByteLevel in a Sequence", "ByteLevel as the last step");
    }
    if (auto p = make_pre_tokenizer(step, origin, info)) steps.push_back(std::move(p));
  }
  if (steps.empty()) return nullptr;
  if (steps.size() == 1) return std::move(steps[0]);
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const hf::Json& config, const std::string& origin,
                                                 PreTokenizerInfo& info) {
  if (config.is_null()) return nullptr;
  const std::string type = hf::type_of(config);
  try {
    if (type == "Sequence") return make_sequence(config, origin, info);
    if (type == "ByteLevel") {
      info.byte_level = true;
      return std::make_unique<ByteLevelPreTokenizer>(hf::bool_field(config, "add_prefix_space", origin, false),
                                                     hf::bool_field(config, "use_regex", origin, true));
    }
    if (type == "Split") {
      return std::make_unique<SplitPreTokenizer>(hf::pattern_field(config, origin, "pre_tokenizer Split"),
                                                 behavior_of(hf::string_field(config, "behavior", origin), origin),
                                                 hf::bool_field(config, "invert", origin, false));
    }
    if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(hf::bool_field(config, "individual_digits", origin, false));
    if (type == "Metaspace") return make_metaspace(config, origin);
  } catch (const RegexError& e) {
    hf::refuse_regex(origin, "pre_tokenizer " + type, e);
  }
  hf::refuse(origin, "the pre_tokenizer type \"" + type + "\"", kSupportedPreTokenizers);
}

}  // namespace llmload::tokenizer
