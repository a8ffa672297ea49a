#pragma once
// Feeds one SSE event's data to a stream decoder: the decoder tests' shorthand.

#include <string>

#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload::testing {

inline StreamUpdate dec(OpenAiStreamDecoder& d, const std::string& data) { return d.decode(SseEvent{"", data, ""}); }

}  // namespace llmload::testing
