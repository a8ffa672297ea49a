#pragma once
// A DOM-free scan of the common OpenAI stream chunk (internal to the stream decoder): one pass
// over the JSON text that validates its shape and pulls out only what the recorder needs: whether
// choices[].delta.content / reasoning_content / reasoning (chat) or choices[].text (completions)
// is a non-empty string (and whether it is answer text, not reasoning), the first choices[].finish_reason, and usage's prompt_tokens /
// completion_tokens, and llmload-server's "llmload" ground truth times. Anything it does not
// expect ("error", "message", an escape, a control or non-ASCII byte in any string, prompt_tokens_details, a non-integer or absurd count,
// trailing bytes, nesting deeper than 64) makes it return nullopt, and the decoder takes the
// exact nlohmann path: the scan can only skip work, never change a result (a unit test compares
// both paths on generated chunks). Prototyped in bench/ (docs/benchmarks.md).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload::detail {

struct FastChunk {
  bool output = false;
  bool answer = false;  // output that is not reasoning (content / text)
  bool has_error = false;
  bool has_choices = false;
  std::string_view finish_reason;  // empty: none
  bool has_usage = false;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  // llmload-server's ground truth ("llmload": {...}), as read_server_timing reads it.
  bool has_timing = false;
  std::optional<double> queue_s;
  std::optional<double> first_token_s;
  std::optional<double> last_token_s;
};

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  bool ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
    return i_ < s_.size();
  }
  bool eat(char c) {
    if (!ws() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool peek(char c) { return ws() && s_[i_] == c; }
  // A string without escapes (else nullopt: the caller falls back). One pass: the closing quote
  // ends it; an escape, a control byte (invalid JSON) or a non-ASCII one (which needs UTF-8
  // validation) before it sends the chunk to the full parser, which does both.
  std::optional<std::string_view> str() {
    if (!eat('"')) return std::nullopt;
    const std::size_t b = i_;
    for (std::size_t k = b; k < s_.size(); ++k) {
      const auto ch = static_cast<unsigned char>(s_[k]);
      if (ch == '"') {
        i_ = k + 1;
        return s_.substr(b, k - b);
      }
      if (ch == '\\' || ch < 0x20 || ch >= 0x80) return std::nullopt;
    }
    return std::nullopt;
  }
  std::optional<std::int64_t> integer() {
    ws();
    // JSON integers only: no sign, no leading zero (nlohmann rejects "05"), no fraction/exponent.
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return std::nullopt;
    if (s_[i_] == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') return std::nullopt;
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
    if (ec != std::errc()) return std::nullopt;
    i_ = static_cast<std::size_t>(p - s_.data());
    if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) return std::nullopt;
    return v;
  }
  // Skips any value, validating it as strictly as the full parser would; a string with an escape
  // (whose validity needs a real decoder) is not skipped: the caller falls back.
  bool skip(int depth = 0) {
    if (depth > 64 || !ws()) return false;
    const char c = s_[i_];
    if (c == '"') return str().has_value();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      if (eat(close)) return true;
      while (true) {
        if (c == '{') {
          if (!str() || !eat(':')) return false;
        }
        if (!skip(depth + 1)) return false;
        if (eat(',')) continue;
        return eat(close);
      }
    }
    for (std::string_view lit : {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
      if (s_.substr(i_, lit.size()) == lit) {
        i_ += lit.size();
        return i_ >= s_.size() || !std::isalnum(static_cast<unsigned char>(s_[i_]));
      }
    }
    return number();
  }
  // A JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and within double's range
  // (nlohmann rejects the whole document for one that overflows, e.g. 1e999).
  bool number() {
    const std::size_t b = i_;
    if (!number_syntax()) return false;
    // An integer of up to 300 characters (sign included) is within double's range: no conversion
    // needed to know.
    if (i_ - b <= 300 && std::all_of(s_.begin() + static_cast<std::ptrdiff_t>(b), s_.begin() + static_cast<std::ptrdiff_t>(i_),
                                     [](char c) { return c == '-' || (c >= '0' && c <= '9'); })) {
      return true;
    }
    double v = 0;
    auto [p, ec] = std::from_chars(s_.data() + b, s_.data() + i_, v);
    return ec == std::errc() && p == s_.data() + i_;
  }
  bool number_syntax() {
    auto digits = [&] {
      const std::size_t b = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - b;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (digits() == 0) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return false;
    }
    return i_ >= s_.size() || !std::isalnum(static_cast<unsigned char>(s_[i_]));
  }
  // A JSON number as a double (finite; else nullopt).
  std::optional<double> real() {
    if (!ws()) return std::nullopt;
    const std::size_t b = i_;
    if (!number()) return std::nullopt;
    double v = 0;
    auto [p, ec] = std::from_chars(s_.data() + b, s_.data() + i_, v);
    if (ec != std::errc() || p != s_.data() + i_ || !std::isfinite(v)) return std::nullopt;
    return v;
  }
  bool at_end() { return !ws(); }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

// Parses {"k": v, ...}, calling on_key(key) which must consume the value; false on anything odd.
template <typename F>
inline bool object(Scanner& s, F&& on_key) {
  if (!s.eat('{')) return false;
  if (s.eat('}')) return true;
  while (true) {
    auto k = s.str();
    if (!k || !s.eat(':')) return false;
    if (!on_key(*k)) return false;
    if (s.eat(',')) continue;
    return s.eat('}');
  }
}

inline std::optional<FastChunk> scan_chunk(std::string_view data, ApiKind api) {
  Scanner s(data);
  FastChunk f;
  auto on_choice = [&](Scanner& sc) {
    return object(sc, [&](std::string_view k) {
      if (api != ApiKind::kCompletions && (k == "delta" || k == "message")) {
        if (k == "message") return false;  // rare in streams: the exact path decides delta vs message
        if (sc.peek('n')) return sc.skip();
        return object(sc, [&](std::string_view dk) {
          if (dk == "content" || dk == "reasoning_content" || dk == "reasoning") {
            if (sc.peek('n')) return sc.skip();
            auto v = sc.str();
            if (!v) return false;
            f.output = f.output || !v->empty();
            if (dk == "content") f.answer = f.answer || !v->empty();
            return true;
          }
          if (dk == "tool_calls") return false;  // tool-call deltas: the exact path
          return sc.skip();
        });
      }
      if (api == ApiKind::kCompletions && k == "text") {
        if (sc.peek('n')) return sc.skip();
        auto v = sc.str();
        if (!v) return false;
        f.output = f.output || !v->empty();
        f.answer = f.output;
        return true;
      }
      if (k == "finish_reason") {
        if (sc.peek('n')) return sc.skip();
        auto v = sc.str();
        if (!v) return false;
        if (f.finish_reason.empty()) f.finish_reason = *v;
        return true;
      }
      return sc.skip();
    });
  };
  const bool ok = object(s, [&](std::string_view k) {
    if (k == "error") {
      f.has_error = true;
      return false;  // errors take the exact path
    }
    if (k == "llmload") {
      // The ground truth: numbers, each kept when finite and >= 0 (else absent, as the exact
      // path does); any other value for these three makes the exact path decide.
      if (f.has_timing) return false;  // a duplicate key: the exact path decides
      f.has_timing = true;
      return object(s, [&](std::string_view tk) {
        std::optional<double>* slot = tk == "queue_s"         ? &f.queue_s
                                      : tk == "first_token_s" ? &f.first_token_s
                                      : tk == "last_token_s"  ? &f.last_token_s
                                                              : nullptr;
        if (slot == nullptr) return s.skip();
        if (slot->has_value()) return false;
        auto v = s.real();
        if (!v) return false;
        if (*v >= 0) *slot = *v;
        return true;
      });
    }
    if (k == "choices") {
      f.has_choices = true;
      if (!s.eat('[')) return false;
      if (s.eat(']')) return true;
      while (true) {
        if (!s.peek('{')) return false;
        if (!on_choice(s)) return false;
        if (s.eat(',')) continue;
        return s.eat(']');
      }
    }
    if (k == "usage") {
      f.has_usage = true;
      return object(s, [&](std::string_view uk) {
        if (uk == "prompt_tokens" || uk == "completion_tokens") {
          auto v = s.integer();
          if (!v || *v < 0 || *v > (std::int64_t{1} << 40)) return false;
          (uk == "prompt_tokens" ? f.prompt_tokens : f.completion_tokens) = *v;
          return true;
        }
        if (uk == "prompt_tokens_details" || uk == "completion_tokens_details") return false;  // rare: exact path
        return s.skip();
      });
    }
    return s.skip();
  });
  if (!ok || !s.at_end() || !f.has_choices) return std::nullopt;
  return f;
}

}  // namespace llmload::detail
