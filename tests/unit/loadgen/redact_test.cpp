// Secrets never reach an output (redact.hpp): a server that echoes a key back, in an error body
// cut at any length, leaves no fragment of it longer than kMinSecretFragment - 1 characters.
#include "llmload/loadgen/redact.hpp"

#include <gtest/gtest.h>

#include <string>

#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {
namespace {

const std::string kKey = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";  // 40 characters

TEST(Redact, EveryOccurrenceOfTheWholeSecretIsReplaced) {
  EXPECT_EQ(redact("key " + kKey + " and again " + kKey, kKey), "key *** and again ***");
  EXPECT_EQ(redact("nothing secret here", kKey), "nothing secret here");
  EXPECT_EQ(redact("anything", ""), "anything");
}

TEST(Redact, AKeyCutAtAnyLengthLeavesNoFragmentOfEightCharacters) {
  // An error body that echoes the key, cut where the excerpt of any maximum length cuts it.
  const std::string body = R"({"error":{"message":"Incorrect API key provided: )" + kKey + R"(. Check it."}})";
  for (std::size_t max_len = 0; max_len < 120; ++max_len) {
    const std::string cut = error_message_from_body(body, max_len);
    const std::string out = redact(cut, kKey);
    EXPECT_LT(longest_secret_fragment(out, kKey), kMinSecretFragment) << "max_len " << max_len << ": " << out;
  }
  // The key's tail at the start of a text (a window that began inside it) too.
  for (std::size_t from = 0; from < kKey.size(); ++from) {
    const std::string out = redact(kKey.substr(from) + " rest", kKey);
    EXPECT_LT(longest_secret_fragment(out, kKey), kMinSecretFragment) << from << ": " << out;
  }
}

TEST(Redact, AShortSecretIsRedactedWholeOnly) {
  EXPECT_EQ(redact("the key k3y9 was wrong; k3y", "k3y9"), "the key *** was wrong; k3y");
}

TEST(Redact, HeaderValuesLongEnoughToBeCredentialsAreSecrets) {
  ScenarioConfig cfg;
  cfg.api_key = kKey;
  cfg.headers = {{"X-Api-Key", "tenant-secret-0123456789"}, {"X-Tenant", "acme"}};
  const Secrets s = cfg.secrets();
  EXPECT_EQ(s.redact("echo: tenant-secret-0123456789 / acme / " + kKey), "echo: *** / acme / ***");
  // Cut inside the header value.
  EXPECT_EQ(s.redact("echo: tenant-secret-01"), "echo: ***");
  EXPECT_TRUE(Secrets().empty());
  EXPECT_EQ(Secrets().redact("as is"), "as is");
}

// Issue 16: a server's text (a model id, an error body) printed raw could drive the terminal.
TEST(Printable, ControlCharactersAreWrittenAsEscapesAndTheRestIsKept) {
  EXPECT_EQ(printable("model\x1b[2J\x1b]0;pwned\x07"), "model\\x1b[2J\\x1b]0;pwned\\x07");
  EXPECT_EQ(printable("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(printable("csi \xc2\x9b" "31m"), "csi \\u009b31m");  // U+009B, the one-byte CSI
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xc2\xa0"), "caf\xc3\xa9 \xe2\x9c\x93 \xc2\xa0");  // UTF-8 kept
  Secrets s;
  s.add("sk-0123456789abcdef");
  EXPECT_EQ(s.for_output("key sk-0123456789abcdef\x1b[0m"), "key ***\\x1b[0m");
}

}  // namespace
}  // namespace llmload
