// Http1ResponseParser: the plain-TCP client's response reading (framing, fields, limits, EOF),
// fed whole and byte by byte, which must give the same result.
#include "llmload/loadgen/net/http1_parser.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using llmload::net::Http1ResponseParser;

struct Outcome {
  bool headers = false;
  bool done = false;
  std::string error;
  std::string body;
  std::size_t leftover = 0;  // bytes after the end of the message
};

// Feeds `wire` in pieces of `piece` bytes (0 = all at once), then EOF when `eof`.
Outcome parse(Http1ResponseParser& p, std::string wire, std::size_t piece = 0, bool eof = false) {
  Outcome o;
  std::size_t pos = 0;
  while (pos < wire.size()) {
    const std::size_t n = piece == 0 ? wire.size() - pos : std::min(piece, wire.size() - pos);
    std::string buf = wire.substr(pos, n);
    const auto r = p.feed(buf.data(), n);
    pos += n;
    o.headers = o.headers || r.headers;
    o.body.append(r.body);
    if (r.error != nullptr) {
      o.error = r.error;
      return o;
    }
    if (r.done) {
      o.done = true;
      o.leftover = (n - r.consumed) + (wire.size() - pos);
      return o;
    }
    EXPECT_EQ(r.consumed, n);
  }
  if (eof) {
    const auto r = p.eof();
    o.done = r.done;
    if (r.error != nullptr) o.error = r.error;
  }
  return o;
}

Outcome parse(std::string wire, std::size_t piece = 0, bool eof = false) {
  Http1ResponseParser p;
  return parse(p, std::move(wire), piece, eof);
}

const std::string kSse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    "f\r\ndata: {\"a\":1}\n\n\r\n"
    "E;ext=1\r\ndata: [DONE]\n\n\r\n"
    "0\r\nX-Trailer: yes\r\n\r\n";

TEST(Http1Parser, ChunkedSseBodyIsDeChunkedInPlaceWholeOrByteByByte) {
  for (std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}}) {
    Http1ResponseParser p;
    const Outcome o = parse(p, kSse, piece);
    ASSERT_TRUE(o.error.empty()) << "piece " << piece << ": " << o.error;
    EXPECT_TRUE(o.headers);
    EXPECT_TRUE(o.done) << piece;
    EXPECT_EQ(o.body, "data: {\"a\":1}\n\ndata: [DONE]\n\n") << piece;
    EXPECT_EQ(p.status(), 200);
    EXPECT_EQ(p.content_type(), "text/event-stream");
    EXPECT_TRUE(p.keep_alive());
    EXPECT_EQ(o.leftover, 0u);
  }
}

TEST(Http1Parser, ContentLengthBodyEndsAtItsLengthAndLeavesWhatFollows) {
  const Outcome o = parse("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 5\r\n\r\nhelloEXTRA");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "hello");
  EXPECT_EQ(o.leftover, 5u);
  Http1ResponseParser p;
  parse(p, "HTTP/1.1 429 x\r\nretry-after:  7 \r\ncontent-length: 0\r\n\r\n", 3);
  EXPECT_EQ(p.status(), 429);
  EXPECT_EQ(p.retry_after(), "7");
  EXPECT_TRUE(p.done());
}

TEST(Http1Parser, BodyWithoutLengthRunsToTheEndOfTheConnection) {
  Http1ResponseParser p;
  Outcome o = parse(p, "HTTP/1.0 200 OK\r\n\r\nsome bytes", 4, /*eof=*/true);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "some bytes");
  EXPECT_FALSE(p.keep_alive());
}

TEST(Http1Parser, KeepAliveFollowsVersionAndConnectionField) {
  struct Case {
    const char* head;
    bool keep;
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
      {"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 0\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true},
      // Both framings: Transfer-Encoding wins, and the connection is not reused.
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
  };
  for (const auto& c : cases) {
    Http1ResponseParser p;
    const Outcome o = parse(p, c.head);
    EXPECT_TRUE(o.done) << c.head;
    EXPECT_EQ(p.keep_alive(), c.keep) << c.head;
  }
}

TEST(Http1Parser, InformationalResponsesAreSkippedAndBodilessStatusesEndAtTheHead) {
  Http1ResponseParser p;
  Outcome o = parse(p, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 5);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(p.status(), 200);
  EXPECT_EQ(o.body, "ok");
  Http1ResponseParser q;
  o = parse(q, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n");
  EXPECT_TRUE(o.done);
  EXPECT_TRUE(o.body.empty());
  EXPECT_EQ(parse("HTTP/1.1 101 Switching Protocols\r\n\r\n").error, "unexpected 101 Switching Protocols");
}

TEST(Http1Parser, MalformedResponsesAreErrorsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"HTTP/2 200 OK\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "malformed status code"},
      {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "malformed header field (no name)"},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "malformed header field name"},
      {"HTTP/1.1 200 OK\r\n folded\r\n\r\n", "obsolete header line folding"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\x9f\r\n\r\n", "malformed Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "conflicting Content-Length fields"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1234567890abcdef0\r\n", "chunk size too large"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX", "missing CRLF after chunk data"},
  };
  for (const auto& [wire, error] : cases) {
    for (std::size_t piece : {std::size_t{0}, std::size_t{1}}) {
      const Outcome o = parse(wire, piece);
      EXPECT_EQ(o.error.substr(0, error.size()), error) << wire << " piece " << piece;
      EXPECT_FALSE(o.done);
    }
  }
}

TEST(Http1Parser, HeadAndTrailerSizesAreBounded) {
  std::string big = "HTTP/1.1 200 OK\r\nX: " + std::string(Http1ResponseParser::kHeaderLimit, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse(big, 4096).error, "the response head is larger than 64 KiB");
  std::string chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" +
                      std::string(Http1ResponseParser::kChunkLineLimit, 'e') + "\r\n";
  EXPECT_EQ(parse(chunk, 1000).error, "chunk size line too long");
  std::string trailer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " +
                        std::string(Http1ResponseParser::kHeaderLimit, 't') + "\r\n\r\n";
  EXPECT_EQ(parse(trailer, 4096).error, "the chunked body's trailer is larger than 64 KiB");
}

TEST(Http1Parser, EndOfConnectionBeforeTheEndIsAnErrorSayingWhere) {
  Http1ResponseParser fresh;
  EXPECT_TRUE(fresh.nothing_received());
  EXPECT_EQ(fresh.eof().error, std::string("the server closed the connection before responding"));
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-", 0, true).error, "the connection closed inside the response head");
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, true).error,
            "the connection closed before the end of the body (Content-Length)");
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 0, true).error,
            "the connection closed before the end of the chunked body");
  // A coding other than chunked last: the body runs to the end of the connection.
  Http1ResponseParser p;
  const Outcome o = parse(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzz", 0, true);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "zzz");
  EXPECT_FALSE(p.keep_alive());
}

TEST(Http1Parser, BareLineFeedsAndLeadingEmptyLinesAreTolerated) {
  Http1ResponseParser p;
  const Outcome o = parse(p, "\r\nHTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", 1);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "abc");
  EXPECT_EQ(p.status(), 200);
}

}  // namespace
