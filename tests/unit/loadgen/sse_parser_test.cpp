#include "llmload/loadgen/sse_parser.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace llmload {
namespace {

std::vector<SseEvent> parse_all(const std::vector<std::string>& pieces, SseParser* p_out = nullptr) {
  SseParser local;
  SseParser& p = p_out != nullptr ? *p_out : local;
  std::vector<SseEvent> out;
  for (const auto& piece : pieces) {
    EXPECT_EQ(p.feed(piece, [&](SseEvent&& e) { out.push_back(std::move(e)); }), SseParser::Status::kOk);
  }
  return out;
}

// A recorded vLLM-style chat stream with CRLF and LF endings, a comment, multi-line data.
const std::string kStream =
    ": keep-alive comment\r\n"
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\" h\\u00e9llo\"}}]}\n\n"
    "event: message\nid: 7\ndata: line one\ndata: line two\n\n"
    "data:no-space\r\r"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

TEST(SseParser, ParsesRecordedStream) {
  auto ev = parse_all({kStream});
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].data, "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}");
  EXPECT_EQ(ev[2].event, "message");
  EXPECT_EQ(ev[2].id, "7");
  EXPECT_EQ(ev[2].data, "line one\nline two");
  EXPECT_EQ(ev[3].data, "no-space");
  EXPECT_EQ(ev[5].data, "[DONE]");
}

TEST(SseParser, SameEventsAtEverySplitPoint) {
  const auto whole = parse_all({kStream});
  for (std::size_t i = 0; i <= kStream.size(); ++i) {
    auto ev = parse_all({kStream.substr(0, i), kStream.substr(i)});
    ASSERT_EQ(ev.size(), whole.size()) << "split at " << i;
    for (std::size_t k = 0; k < ev.size(); ++k) {
      EXPECT_EQ(ev[k].data, whole[k].data) << "split at " << i;
      EXPECT_EQ(ev[k].event, whole[k].event) << "split at " << i;
    }
  }
}

TEST(SseParser, SameEventsAtEveryPairOfSplitPoints) {
  const std::string s = kStream.substr(0, 120);
  const auto whole = parse_all({s});
  for (std::size_t i = 0; i <= s.size(); ++i) {
    for (std::size_t j = i; j <= s.size(); ++j) {
      auto ev = parse_all({s.substr(0, i), s.substr(i, j - i), s.substr(j)});
      ASSERT_EQ(ev.size(), whole.size()) << i << "," << j;
      for (std::size_t k = 0; k < ev.size(); ++k) EXPECT_EQ(ev[k].data, whole[k].data);
    }
  }
}

TEST(SseParser, ByteAtATime) {
  std::vector<std::string> bytes;
  for (char c : kStream) bytes.emplace_back(1, c);
  auto ev = parse_all(bytes);
  EXPECT_EQ(ev.size(), 6u);
}

TEST(SseParser, BomAtStartIsSkippedEvenWhenSplit) {
  const std::string s = "\xEF\xBB\xBF" "data: x\n\n";
  for (std::size_t i = 0; i <= s.size(); ++i) {
    auto ev = parse_all({s.substr(0, i), s.substr(i)});
    ASSERT_EQ(ev.size(), 1u) << i;
    EXPECT_EQ(ev[0].data, "x");
  }
}

TEST(SseParser, SizeCapIsTheSameHoweverTheStreamIsSplitAroundTheBomCheck) {
  // Found by fuzzing: bytes held back while checking for a BOM escaped the event-size cap.
  const std::string s = "da" "ta: " + std::string(40, 'x') + "\n\n";
  for (std::size_t i = 0; i <= 3; ++i) {
    SseParser p(32);
    int n = 0;
    auto a = p.feed(s.substr(0, i), [&](SseEvent&&) { ++n; });
    auto b = a == SseParser::Status::kOk ? p.feed(s.substr(i), [&](SseEvent&&) { ++n; }) : a;
    EXPECT_EQ(b, SseParser::Status::kEventTooLarge) << "split at " << i;
    EXPECT_EQ(n, 0);
  }
}

TEST(SseParser, EventWithoutDataIsNotDispatched) {
  auto ev = parse_all({"event: ping\n\n: comment\n\nretry: 10\n\n"});
  EXPECT_TRUE(ev.empty());
}

TEST(SseParser, TruncatedEventIsReportedAsPartial) {
  SseParser p;
  auto ev = parse_all({"data: a\n\ndata: {\"choi"}, &p);
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_TRUE(p.has_partial_event());
  SseParser q;
  parse_all({"data: a\n\n"}, &q);
  EXPECT_FALSE(q.has_partial_event());
}

TEST(SseParser, OversizedEventIsAnErrorNotUnboundedMemory) {
  SseParser p(1024);
  std::string big = "data: " + std::string(2000, 'x');
  int n = 0;
  EXPECT_EQ(p.feed(big, [&](SseEvent&&) { ++n; }), SseParser::Status::kEventTooLarge);
  EXPECT_EQ(p.feed("\n\n", [&](SseEvent&&) { ++n; }), SseParser::Status::kEventTooLarge);
  EXPECT_EQ(n, 0);
  // Many data lines adding up past the cap also count.
  SseParser q(1024);
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += "data: 0123456789abcdef\n";
  EXPECT_EQ(q.feed(lines, [&](SseEvent&&) { ++n; }), SseParser::Status::kEventTooLarge);
}

TEST(SseParser, MalformedBytesNeverCrash) {
  const std::string junk("\0\xff\r\n:\r\r\ndata\ndata:\n\n\xc3\x28\n\n", 20);
  auto ev = parse_all({junk});
  ASSERT_GE(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "\n");  // "data" and "data:" are two empty data lines
}

}  // namespace
}  // namespace llmload
