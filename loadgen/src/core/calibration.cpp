#include "llmload/loadgen/calibration.hpp"

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload {

namespace {
std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    if (!s.empty()) s.push_back(' ');
    s += w;
  }
  return s;
}
}  // namespace

std::optional<CalibrationResult> calibrate_token_model(const TokenCounter& count, std::int64_t verify_tokens,
                                                      std::uint64_t seed) {
  const TokenModel builtin = TokenModel::builtin();
  const std::string& anchor = builtin.words.front();  // "the"
  // Overhead: a one-word prompt of a word that is one token in every common vocabulary.
  const auto one = count(anchor);
  if (!one) return std::nullopt;
  const auto two = count(anchor + " " + anchor);
  if (!two || *two - *one != 1) {
    throw ConfigError(fmt::format("prompt calibration: the server's /tokenize counts '{0}' as {1} and '{0} {0}' as {2} "
                                  "tokens; synthesized prompts cannot be made exact with this tokenizer. Use "
                                  "--prompt-calibration estimate",
                                  anchor, *one, two.value_or(-1)));
  }
  TokenModel m;
  m.method = "tokenize";
  m.overhead = *one - 1;
  // The whole vocabulary at once: when it counts one token per word, every word is a single
  // token (after a space) and nothing merges across words. Otherwise test the words one by one.
  std::vector<std::string> kept;
  const auto all = count(anchor + " " + join(builtin.words));
  if (all && *all == *one + static_cast<std::int64_t>(builtin.words.size())) {
    kept = builtin.words;
  } else {
    for (const auto& w : builtin.words) {
      const auto c = count(anchor + " " + w);
      if (c && *c == *one + 1) kept.push_back(w);
    }
  }
  if (kept.size() < 16) {
    throw ConfigError(fmt::format("prompt calibration: only {} of the {} built-in words are single tokens for this "
                                  "server's tokenizer; use --prompt-calibration estimate",
                                  kept.size(), builtin.words.size()));
  }
  m.words = std::move(kept);
  CalibrationResult r;
  r.report = {{"method", "tokenize"},
              {"description", "synthesized prompts of single-token words, calibrated with the server's /tokenize: "
                              "a prompt of k words counts overhead + k tokens"},
              {"overhead_tokens", m.overhead},
              {"vocabulary_words", m.words.size()},
              {"vocabulary_builtin", builtin.words.size()}};
  if (verify_tokens > m.overhead) {
    const std::string text = m.synthesize(verify_tokens, seed);
    const auto c = count(text);
    r.report["verification"] = {{"requested_tokens", verify_tokens}, {"server_counted", c ? nlohmann::json(*c) : nullptr}};
    if (c && *c != verify_tokens) {
      throw ConfigError(fmt::format("prompt calibration failed verification: a prompt made to count {} tokens counts {} "
                                    "at the server; use --prompt-calibration estimate",
                                    verify_tokens, *c));
    }
  }
  r.model = std::move(m);
  return r;
}

nlohmann::json estimate_report(const std::string& why) {
  return {{"method", "estimate"},
          {"description", "synthesized prompts of common English words, one word counted as one token: exact for "
                          "llmload-server, an estimate for BPE tokenizers (compare requested and server-counted "
                          "prompt tokens in the results)"},
          {"why", why}};
}

}  // namespace llmload
