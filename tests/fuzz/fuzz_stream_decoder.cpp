// Fuzz target: OpenAiStreamDecoder and the whole-body decoders (JSON from the server).
//
// The input is used three ways: as the data of one SSE event, as an SSE stream whose events are
// decoded in order by one decoder per ApiKind (decoders are stateful: running usage), and as a
// whole response / error body. Checks the documented contracts of the results.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace {

using llmload::ApiKind;
using llmload::OpenAiStreamDecoder;
using llmload::SseEvent;
using llmload::StreamUpdate;

void check_update(const StreamUpdate& u) {
  switch (u.kind) {
    case StreamUpdate::Kind::kOutput:
      FUZZ_CHECK(u.tokens >= 1);
      break;
    case StreamUpdate::Kind::kMalformed:
      FUZZ_CHECK(!u.message.empty());
      FUZZ_CHECK(u.tokens == 0);
      break;
    default:
      FUZZ_CHECK(u.tokens == 0);
      break;
  }
}

// Byte length bound of error_message_from_body: the excerpt plus "...".
void check_excerpt(std::string_view body, std::size_t max_len) {
  const std::string m = llmload::error_message_from_body(body, max_len);
  FUZZ_CHECK(m.size() <= max_len + 3);
  for (char c : m) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  OpenAiStreamDecoder chat(ApiKind::kChat);
  OpenAiStreamDecoder completions(ApiKind::kCompletions);
  SseEvent whole;
  whole.data = std::string(input);
  check_update(chat.decode(whole));
  check_update(completions.decode(whole));

  llmload::SseParser parser;
  parser.feed(input, [&](SseEvent&& ev) {
    check_update(chat.decode(ev));
    check_update(completions.decode(ev));
  });

  for (ApiKind api : {ApiKind::kChat, ApiKind::kCompletions}) {
    const auto r = llmload::decode_whole_response(input, api);
    if (!r.ok) FUZZ_CHECK(!r.message.empty() && !r.has_output);
  }
  check_excerpt(input, 300);
  check_excerpt(input, size % 17);
  return 0;
}
