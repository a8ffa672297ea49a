// Streaming behaviour of the real llmload-server: event sequences, timing, disconnects, load.
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string completion_body(int max_tokens, bool usage, const std::string& prompt = "one two three") {
  json b = {{"model", "llmload-mock"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"stream", true}};
  if (usage) b["stream_options"] = {{"include_usage", true}};
  return b.dump();
}

std::string chat_body(int max_tokens, bool usage, bool continuous = false) {
  json b = {{"model", "llmload-mock"},
            {"messages", json::array({{{"role", "system"}, {"content", "you are terse"}},
                                      {{"role", "user"},
                                       {"content", json::array({{{"type", "text"}, {"text", "hello there"}},
                                                                {{"type", "text"}, {"text", "friend"}}})}}})},
            {"max_tokens", max_tokens},
            {"ignore_eos", true},
            {"stream", true}};
  if (usage) b["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", continuous}};
  return b.dump();
}

void expect_stream_headers(const HttpResponse& r) {
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  EXPECT_EQ(r.header("cache-control"), "no-cache");
  EXPECT_TRUE(r.chunked);
}

TEST(ServerStreaming, CompletionEventSequence) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "1ms"});
  const int n = 25;
  const HttpResponse r = http_request(server.port, "POST", "/v1/completions", completion_body(n, true));
  expect_stream_headers(r);
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), static_cast<std::size_t>(n) + 2);
  EXPECT_EQ(r.chunks.size(), events.size()) << "each event is its own HTTP chunk";
  std::string id;
  std::string text;
  for (int k = 0; k < n; ++k) {
    const json c = json::parse(events[static_cast<std::size_t>(k)]);
    if (k == 0) id = c.at("id");
    EXPECT_EQ(c.at("id"), id);
    EXPECT_EQ(c.at("object"), "text_completion");
    ASSERT_EQ(c.at("choices").size(), 1u);
    const json& choice = c["choices"][0];
    text += choice.at("text").get<std::string>();
    EXPECT_TRUE(choice.at("logprobs").is_null());
    if (k + 1 < n) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(choice.at("finish_reason"), "length");
    }
    EXPECT_FALSE(c.contains("usage"));
  }
  EXPECT_EQ(id.rfind("cmpl-", 0), 0u);
  const json usage = json::parse(events[static_cast<std::size_t>(n)]);
  EXPECT_EQ(usage.at("choices"), json::array());
  EXPECT_EQ(usage.at("usage"), json::parse(R"({"prompt_tokens":3,"completion_tokens":25,"total_tokens":28})"));
  EXPECT_EQ(events.back(), "[DONE]");
  // Exactly n words of output.
  std::size_t words = 0;
  for (std::size_t i = 0; i < text.size(); ++i) words += text[i] == ' ' ? 1 : 0;
  EXPECT_EQ(words, static_cast<std::size_t>(n));
}

TEST(ServerStreaming, ChatEventSequence) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "1ms"});
  const int n = 20;
  const HttpResponse r = http_request(server.port, "POST", "/v1/chat/completions", chat_body(n, true, true));
  expect_stream_headers(r);
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), 1u + n + 2u);
  const json role = json::parse(events[0]);
  EXPECT_EQ(role.at("object"), "chat.completion.chunk");
  EXPECT_EQ(role.at("id").get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(role["choices"][0].at("delta"), json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_EQ(role.at("usage").at("completion_tokens"), 0);
  int content_events = 0;
  for (int k = 0; k < n; ++k) {
    const json c = json::parse(events[static_cast<std::size_t>(k) + 1]);
    const json& choice = c["choices"][0];
    EXPECT_FALSE(choice.at("delta").at("content").get<std::string>().empty());
    ++content_events;
    EXPECT_EQ(c.at("usage").at("prompt_tokens"), 6);
    EXPECT_EQ(c.at("usage").at("completion_tokens"), k + 1);
    if (k + 1 < n) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(choice.at("finish_reason"), "length");
    }
  }
  EXPECT_EQ(content_events, n);
  const json usage = json::parse(events[static_cast<std::size_t>(n) + 1]);
  EXPECT_EQ(usage.at("choices"), json::array());
  EXPECT_EQ(usage.at("usage"), json::parse(R"({"prompt_tokens":6,"completion_tokens":20,"total_tokens":26})"));
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST(ServerStreaming, WithoutUsageThereIsNoUsageChunk) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "0ms"});
  const auto events = sse_payloads(http_request(server.port, "POST", "/v1/chat/completions", chat_body(3, false)).body);
  ASSERT_EQ(events.size(), 1u + 3u + 1u);
  for (std::size_t i = 0; i + 1 < events.size(); ++i) EXPECT_FALSE(json::parse(events[i]).contains("usage"));
}

TEST(ServerStreaming, TokensArriveOnSchedule) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "50ms", "--itl", "20ms"});
  HttpConnection c(server.port);
  const auto sent = Clock::now();
  c.send_request("POST", "/v1/completions", completion_body(6, false));
  const HttpResponse head = c.read_head();
  expect_stream_headers(head);
  std::vector<Clock::time_point> arrivals;
  for (;;) {
    TimedChunk chunk = c.next_chunk();
    if (chunk.data.empty()) break;
    if (chunk.data != "data: [DONE]\n\n") arrivals.push_back(chunk.arrived);
  }
  ASSERT_EQ(arrivals.size(), 6u);
  // Token k is due 50 + 20k ms after the server read the request, which is after `sent`: it
  // never arrives earlier. (Gaps between consecutive arrivals are not checked one by one: on a
  // loaded machine a late token is followed by an on-time one, as the schedule is absolute.)
  for (std::size_t k = 0; k < arrivals.size(); ++k) {
    EXPECT_GE(arrivals[k] - sent, milliseconds(50 + 20 * static_cast<int>(k) - 2)) << "token " << k << " early";
  }
  EXPECT_LT(arrivals.back() - sent, std::chrono::seconds(10));
}

TEST(ServerStreaming, NonStreamingWaitsForTheWholeGeneration) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "30ms", "--itl", "10ms"});
  const auto sent = Clock::now();
  const HttpResponse r = http_request(server.port, "POST", "/v1/completions",
                                      R"({"model":"llmload-mock","prompt":"x","max_tokens":8})");
  const auto elapsed = Clock::now() - sent;
  ASSERT_EQ(r.status, 200);
  EXPECT_GE(elapsed, milliseconds(30 + 7 * 10 - 10));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(ServerStreaming, ClientDisconnectStopsItsStreamOnly) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "5ms", "--log-level", "debug", "--max-model-len", "20000"});
  auto quitter = std::make_unique<HttpConnection>(server.port);
  quitter->send_request("POST", "/v1/completions", completion_body(10000, false));
  HttpConnection stayer(server.port);
  stayer.send_request("POST", "/v1/chat/completions", chat_body(60, true));
  // Read a few events of the long stream, then hang up.
  (void)quitter->read_head();
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(quitter->next_chunk().data.empty());
  quitter.reset();
  const HttpResponse r = stayer.read_response();
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), 1u + 60u + 2u);
  EXPECT_EQ(json::parse(events[61]).at("usage").at("completion_tokens"), 60);
  EXPECT_EQ(events.back(), "[DONE]");
  // The server noticed the hang-up long before the 10000th token (which is 50 s away).
  pump_output(*server.proc, 200);
  std::smatch m;
  const std::string err = server.proc->err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(client gone after (\d+)/10000 tokens)"))) << err;
  EXPECT_LT(std::stoi(m[1]), 1000);
  EXPECT_NE(err.find("connection closed (1 open)"), std::string::npos) << err;
}

TEST(ServerStreaming, FiveHundredConcurrentStreamsOnOneThread) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms", "--threads", "1"});
  constexpr int kStreams = 500;
  constexpr int kTokens = 20;
  const auto start = Clock::now();
  std::vector<std::unique_ptr<HttpConnection>> conns;
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(server.port));
    conns.back()->send_request("POST", i % 2 == 0 ? "/v1/completions" : "/v1/chat/completions",
                               i % 2 == 0 ? completion_body(kTokens, true) : chat_body(kTokens, true));
  }
  for (int i = 0; i < kStreams; ++i) {
    const HttpResponse r = conns[static_cast<std::size_t>(i)]->read_response();
    ASSERT_EQ(r.status, 200) << "stream " << i;
    const auto events = sse_payloads(r.body);
    const std::size_t expected = (i % 2 == 0 ? 0u : 1u) + kTokens + 2u;
    ASSERT_EQ(events.size(), expected) << "stream " << i;
    EXPECT_EQ(json::parse(events[expected - 2]).at("usage").at("completion_tokens"), kTokens);
    EXPECT_EQ(events.back(), "[DONE]");
  }
  // All ran concurrently: far less than 500 x (20 ms + 19 x 5 ms).
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST(ServerStreaming, SeveralIoThreads) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--threads", "4"});
  std::vector<std::unique_ptr<HttpConnection>> conns;
  for (int i = 0; i < 100; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(server.port));
    conns.back()->send_request("POST", "/v1/chat/completions", chat_body(30, true));
  }
  for (auto& c : conns) {
    const auto events = sse_payloads(c->read_response().body);
    ASSERT_EQ(events.size(), 1u + 30u + 2u);
    EXPECT_EQ(events.back(), "[DONE]");
  }
}

TEST(ServerStreaming, Http10StreamIsCloseDelimited) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms"});
  HttpConnection c(server.port);
  const std::string body = completion_body(4, false);
  c.send_raw("POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  const HttpResponse r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.chunked);
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST(ServerStreaming, SeededJitterStillDeliversEveryToken) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "2ms", "--jitter", "0.5", "--seed", "7"});
  const auto events = sse_payloads(http_request(server.port, "POST", "/v1/completions", completion_body(30, true)).body);
  ASSERT_EQ(events.size(), 32u);
  EXPECT_EQ(events.back(), "[DONE]");
}

}  // namespace
}  // namespace llmload::testing
