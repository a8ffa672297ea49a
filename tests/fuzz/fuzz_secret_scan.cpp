// Fuzz target: the secret scan (issue 16) over random secrets, random echo shapes (the secret
// whole, cut at its start or end, repeated, split by an ellipsis, beside other text, inside a JSON
// string) and random truncation lengths, as a server's error body reaches llmload's outputs. After
// Secrets::for_output, no run of kMinSecretFragment or more of a secret's characters may remain,
// and a secret shorter than that may not remain whole; no control character may remain either.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_check.hpp"
#include "llmload/loadgen/redact.hpp"

namespace {

// Keys are made of letters, digits, '-' and '_' (sk-..., Bearer tokens, hex, base64url).
std::string key_chars(const std::string& raw) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (unsigned char c : raw) out += kAlphabet[c % (sizeof kAlphabet - 1)];
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string secret = key_chars(in.ConsumeRandomLengthString(80));
  if (secret.empty()) return 0;
  const bool header_value = in.ConsumeBool();  // a --header value (only long ones are secrets)
  llmload::Secrets secrets;
  if (header_value) {
    secrets.add_header_value(secret);
  } else {
    secrets.add(secret);
  }
  const bool is_secret = !header_value || secret.size() >= llmload::kMinSecretFragment;

  // The echo: pieces of text and of the secret, in an order the input picks.
  std::string echo;
  const int pieces = in.ConsumeIntegralInRange(1, 8);
  for (int i = 0; i < pieces; ++i) {
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0:
        echo += secret;
        break;
      case 1: {  // a cut-off start or end of it
        const std::size_t n = in.ConsumeIntegralInRange<std::size_t>(0, secret.size());
        echo += in.ConsumeBool() ? secret.substr(0, n) : secret.substr(secret.size() - n);
        break;
      }
      case 2: {  // a middle part
        const std::size_t a = in.ConsumeIntegralInRange<std::size_t>(0, secret.size());
        echo += secret.substr(a, in.ConsumeIntegralInRange<std::size_t>(0, secret.size() - a));
        break;
      }
      case 3:
        echo += "...";
        break;
      case 4:
        echo += "\"Authorization: Bearer ";
        break;
      default:
        echo += in.ConsumeRandomLengthString(24);
        break;
    }
  }
  // The truncation a message path applies (at the start, at the end, or both).
  const std::size_t from = in.ConsumeIntegralInRange<std::size_t>(0, echo.size());
  const std::size_t len = in.ConsumeIntegralInRange<std::size_t>(0, echo.size() - from);
  const std::string cut = echo.substr(from, len);

  for (const std::string& shown : {secrets.for_output(cut), secrets.for_output(echo)}) {
    if (is_secret && secret.size() >= llmload::kMinSecretFragment) {
      if (llmload::longest_secret_fragment(shown, secret) >= llmload::kMinSecretFragment) {
        std::fprintf(stderr, "secret: %s\necho: %s\nshown: %s\n", secret.c_str(), echo.c_str(), shown.c_str());
      }
      FUZZ_CHECK(llmload::longest_secret_fragment(shown, secret) < llmload::kMinSecretFragment);
    } else if (is_secret) {
      FUZZ_CHECK(shown.find(secret) == std::string::npos);
    }
    for (unsigned char c : shown) FUZZ_CHECK(c >= 0x20 && c != 0x7f);
  }
  return 0;
}
