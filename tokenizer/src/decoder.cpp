#include "decoder.hpp"

#include <optional>

#include "byte_level.hpp"
#include "normalizer.hpp"
#include "regex.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

constexpr std::string_view kSupportedDecoders = "null, ByteLevel, ByteFallback, Fuse, Replace, Strip, Metaspace, Sequence";

// The bytes a byte-level token spells; a token with a character outside the alphabet (an added
// token's text) stands for its own UTF-8 bytes.
void append_token_bytes(std::string_view token, std::string& bytes) {
  const std::size_t mark = bytes.size();
  for (std::size_t pos = 0; pos < token.size();) {
    const int b = byte_level::byte_for_char(unicode::next_code_point(token, pos));
    if (b < 0) {
      bytes.resize(mark);
      bytes.append(token);
      return;
    }
    bytes.push_back(static_cast<char>(b));
  }
}

class ByteLevelDecoder final : public Decoder {
 public:
  void apply(std::vector<DecodePiece>& pieces) const override {
    std::vector<DecodePiece> out;
    std::string run;
    bool in_run = false;
    for (auto& p : pieces) {
      if (p.added) {
        if (in_run) out.push_back({unicode::decode_utf8_lossy(run), false}), run.clear(), in_run = false;
        out.push_back(std::move(p));
        continue;
      }
      append_token_bytes(p.text, run);
      in_run = true;
    }
    if (in_run) out.push_back({unicode::decode_utf8_lossy(run), false});
    pieces = std::move(out);
  }
  std::size_t growth() const override { return 3; }  // a character, one byte, at worst U+FFFD
};

// <0xXX> tokens become bytes; each run of them becomes its text, or one U+FFFD per byte when the
// run is not valid UTF-8 (as the Rust tokenizers do).
class ByteFallbackDecoder final : public Decoder {
 public:
  void apply(std::vector<DecodePiece>& pieces) const override {
    std::vector<DecodePiece> out;
    std::string bytes;
    std::size_t count = 0;
    auto flush = [&] {
      if (count == 0) return;
      if (unicode::is_valid_utf8(bytes)) out.push_back({bytes, false});
      else
        for (std::size_t i = 0; i < count; ++i) out.push_back({"\xEF\xBF\xBD", false});
      bytes.clear(), count = 0;
    };
    for (auto& p : pieces) {
      int value = -1;
      if (p.text.size() == 6 && p.text.compare(0, 3, "<0x") == 0 && p.text[5] == '>') value = parse_hex(p.text[3], p.text[4]);
      if (value >= 0) {
        bytes.push_back(static_cast<char>(value)), ++count;
        continue;
      }
      flush();
      out.push_back(std::move(p));
    }
    flush();
    pieces = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int parse_hex(char a, char b) { return hex(a) < 0 || hex(b) < 0 ? -1 : hex(a) * 16 + hex(b); }
};

class FuseDecoder final : public Decoder {
 public:
  void apply(std::vector<DecodePiece>& pieces) const override {
    std::string all;
    for (const auto& p : pieces) all += p.text;
    pieces.assign(1, DecodePiece{std::move(all), false});
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(hf::Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {
    if (pattern_.is_regex) regex_.emplace(pattern_.text);
  }
  void apply(std::vector<DecodePiece>& pieces) const override {
    for (auto& p : pieces) {
      if (!regex_ && p.text.find(pattern_.text) == std::string::npos) continue;  // nothing to replace
      p.text = replace_all(p.text, pattern_, content_, regex_ ? &*regex_ : nullptr);
    }
  }
  std::size_t growth() const override { return replace_growth(pattern_, content_); }

 private:
  hf::Pattern pattern_;
  std::string content_;
  std::optional<Regex> regex_;
};

// Removes up to `start` leading and `stop` trailing copies of one character from each piece.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void apply(std::vector<DecodePiece>& pieces) const override {
    if (content_.empty()) return;
    for (auto& p : pieces) {
      std::string_view t = p.text;
      std::size_t front = 0;
      for (std::size_t i = 0; i < start_ && t.substr(0, content_.size()) == content_; ++i) {
        t.remove_prefix(content_.size());
        front += content_.size();
      }
      for (std::size_t i = 0; i < stop_ && t.size() >= content_.size() && t.substr(t.size() - content_.size()) == content_; ++i) {
        t.remove_suffix(content_.size());
      }
      const std::size_t length = t.size();
      if (length != p.text.size()) p.text = p.text.substr(front, length);
    }
  }

 private:
  std::string content_;
  std::size_t start_, stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void apply(std::vector<DecodePiece>& pieces) const override {
    const hf::Pattern pattern{false, replacement_};
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      auto& t = pieces[i].text;
      t = replace_all(t, pattern, " ", nullptr);
      if (i == 0 && strip_first_ && !t.empty() && t.front() == ' ') t.erase(0, 1);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<DecodePiece>& pieces) const override {
    for (const auto& s : steps_) s->apply(pieces);
  }
  std::size_t growth() const override {
    std::size_t g = 1;
    for (const auto& s : steps_) g = combine_growth(g, s->growth());
    return g;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::size_t count_field(const hf::Json& config, const char* key) {
  const auto it = config.find(key);
  return it != config.end() && it->is_number_unsigned() ? it->get<std::size_t>() : 0;
}

std::unique_ptr<Decoder> make_known_decoder(const hf::Json& config, const std::string& origin, const std::string& type) {
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(hf::pattern_field(config, origin, "decoder Replace"),
                                            hf::string_field(config, "content", origin));
  }
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(hf::string_field(config, "content", origin, " "), count_field(config, "start"),
                                          count_field(config, "stop"));
  }
  if (type == "Metaspace") {
    const std::string scheme = hf::string_field(config, "prepend_scheme", origin, "always");
    const bool prefix = hf::bool_field(config, "add_prefix_space", origin, true) && scheme != "never";
    return std::make_unique<MetaspaceDecoder>(hf::string_field(config, "replacement", origin, "\u2581"), prefix);
  }
  if (type == "Sequence") {
    const auto it = config.find("decoders");
    if (it == config.end() || !it->is_array()) hf::malformed(origin, "decoder Sequence has no \"decoders\" list");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& step : *it) {
      if (auto d = make_decoder(step, origin)) steps.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  hf::refuse(origin, "the decoder type \"" + type + "\"", kSupportedDecoders);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const hf::Json& config, const std::string& origin) {
  if (config.is_null()) return nullptr;
  const std::string type = hf::type_of(config);
  std::unique_ptr<Decoder> decoder;
  try {
    decoder = make_known_decoder(config, origin, type);
  } catch (const RegexError& e) {
    hf::refuse_regex(origin, "decoder " + type, e);
  }
  if (decoder != nullptr && decoder->growth() > kMaxTextGrowth) {
    hf::refuse(origin,
               "a decoder that can make the text more than " + std::to_string(kMaxTextGrowth) +
                   " times longer (its steps multiply: ByteLevel by 3, Replace by its content's length over its "
                   "pattern's, or 2 * content + 1 for a regex)",
               "decoders that grow the text at most " + std::to_string(kMaxTextGrowth) + "-fold");
  }
  return decoder;
}

std::string run_decoder(const Decoder* decoder, std::vector<DecodePiece> pieces) {
  // Without a decoder the reference implementations join the tokens with spaces.
  const std::string_view separator = decoder == nullptr ? " " : "";
  if (decoder != nullptr) decoder->apply(pieces);
  std::string out;
  for (std::size_t i = 0; i < pieces.size(); ++i) out.append(i == 0 ? "" : separator).append(pieces[i].text);
  return out;
}

}  // namespace llmload::tokenizer
