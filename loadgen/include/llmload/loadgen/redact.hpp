#pragma once
// Keeping secrets out of everything llmload writes, and a server's control characters off the
// user's terminal: the one rule, applied to every message that can carry text from the server
// (error bodies, /v1/models answers) before it reaches any output.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llmload {

/// A fragment of a secret this long (or the whole secret, when shorter) is redacted wherever it
/// appears: a message cut at any length can leave no more of a secret than 7 characters.
inline constexpr std::size_t kMinSecretFragment = 8;

/// The secrets of a run: the API key and the --header values (credentials often travel in
/// custom headers). Header values shorter than kMinSecretFragment are not taken for secrets.
class Secrets {
 public:
  Secrets() = default;
  /// Adds a secret (an empty one is ignored).
  void add(std::string_view secret);
  /// Adds a header value when it is long enough to be a credential.
  void add_header_value(std::string_view value);
  bool empty() const { return values_.empty(); }
  /// Replaces every occurrence of a secret, and every run of at least kMinSecretFragment
  /// consecutive characters of one (as a cut leaves it: at the end, at the start, before "..."),
  /// with "***".
  std::string redact(std::string text) const;
  /// printable(), then redact(): a message from the server as any output may show it.
  std::string for_output(std::string text) const;

 private:
  std::vector<std::string> values_;
};

/// The longest run of `secret`'s consecutive characters found anywhere in `text`: what the tests
/// hold every output to (below kMinSecretFragment).
inline std::size_t longest_secret_fragment(std::string_view text, std::string_view secret) {
  std::size_t best = 0;
  for (std::size_t i = 0; i + best < text.size(); ++i) {
    for (std::size_t j = 0; j < secret.size(); ++j) {
      std::size_t k = 0;
      while (i + k < text.size() && j + k < secret.size() && text[i + k] == secret[j + k]) ++k;
      if (k > best) best = k;
    }
  }
  return best;
}

/// `text` with every control character (C0, DEL, and the C1 range U+0080-U+009F, such as the
/// escape that starts a terminal sequence) written as an escape (\x1b, \u009b): a server's text
/// can neither move the cursor, recolour nor retitle the terminal it is printed on. Other bytes,
/// UTF-8 included, are kept.
std::string printable(std::string_view text);

/// One secret: Secrets with that secret only.
std::string redact(std::string text, std::string_view secret);

}  // namespace llmload
