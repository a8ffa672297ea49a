// Endpoints, error statuses and connection handling of the real llmload-server.
#include <regex>
#include <string>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

class ServerEndpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerHandle(start_server({"--latency-model", "fixed", "--model", "mock-a", "--model", "mock-b", "--max-model-len", "64",
                                             "--ttft", "5ms", "--itl", "1ms"}));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port; }
  static ServerHandle* server_;
};
ServerHandle* ServerEndpoints::server_ = nullptr;

TEST_F(ServerEndpoints, PortZeroPrintsTheRealPort) {
  EXPECT_GT(port(), 0);
  EXPECT_EQ(server_->base_url, "http://127.0.0.1:" + std::to_string(port()));
}

TEST_F(ServerEndpoints, Health) {
  const HttpResponse r = http_request(port(), "GET", "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.header("content-length"), "0");
}

TEST_F(ServerEndpoints, Models) {
  const HttpResponse r = http_request(port(), "GET", "/v1/models");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json body = json::parse(r.body);
  EXPECT_EQ(body.at("object"), "list");
  ASSERT_EQ(body.at("data").size(), 2u);
  EXPECT_EQ(body["data"][0].at("id"), "mock-a");
  EXPECT_EQ(body["data"][1].at("id"), "mock-b");
  EXPECT_EQ(body["data"][0].at("max_model_len"), 64);
  EXPECT_EQ(body["data"][0].at("owned_by"), "llmload");
  EXPECT_TRUE(body["data"][0].at("created").is_number_integer());
}

TEST_F(ServerEndpoints, Tokenize) {
  HttpResponse r = http_request(port(), "POST", "/tokenize", R"({"model":"mock-a","prompt":"one two three four"})");
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body.at("count"), 4);
  EXPECT_EQ(body.at("max_model_len"), 64);
  EXPECT_EQ(body.at("tokens").size(), 4u);
  r = http_request(port(), "POST", "/tokenize",
                   R"({"messages":[{"role":"user","content":[{"type":"text","text":"a b"}]},{"role":"assistant","content":"c"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("count"), 3);
}

TEST_F(ServerEndpoints, NonStreamingCompletion) {
  const HttpResponse r = http_request(port(), "POST", "/v1/completions",
                                      R"({"model":"mock-b","prompt":"count these five words please","max_tokens":6})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json body = json::parse(r.body);
  EXPECT_EQ(body.at("object"), "text_completion");
  EXPECT_EQ(body.at("model"), "mock-b");
  EXPECT_EQ(body.at("id").get<std::string>().rfind("cmpl-", 0), 0u);
  // Six of the mock's words (lower-case letters), each with its leading space (the words depend
  // on the prompt: test_server_output.cpp).
  EXPECT_TRUE(std::regex_match(body["choices"][0].at("text").get<std::string>(), std::regex("( [a-z]+){6}")))
      << body["choices"][0].at("text");
  EXPECT_EQ(body["choices"][0].at("finish_reason"), "length");
  EXPECT_EQ(body.at("usage"), json::parse(R"({"prompt_tokens":5,"completion_tokens":6,"total_tokens":11})"));
}

TEST_F(ServerEndpoints, NonStreamingChat) {
  const HttpResponse r =
      http_request(port(), "POST", "/v1/chat/completions",
                   R"({"model":"mock-a","max_completion_tokens":3,"ignore_eos":true,"temperature":0,
                       "messages":[{"role":"system","content":"be nice"},{"role":"user","content":"hi there"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body.at("object"), "chat.completion");
  EXPECT_EQ(body.at("id").get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(body["choices"][0].at("message").at("role"), "assistant");
  EXPECT_TRUE(std::regex_match(body["choices"][0]["message"].at("content").get<std::string>(),
                               std::regex("( [a-z]+){3}")))
      << body["choices"][0].at("message");
  EXPECT_EQ(body["choices"][0].at("finish_reason"), "length");
  EXPECT_EQ(body.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":3,"total_tokens":7})"));
}

TEST_F(ServerEndpoints, ChatDefaultOutputFillsTheContext) {
  const HttpResponse r = http_request(port(), "POST", "/v1/chat/completions",
                                      R"({"model":"mock-a","messages":[{"role":"user","content":"a b c d"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("usage").at("completion_tokens"), 60);
}

TEST_F(ServerEndpoints, ErrorStatuses) {
  expect_api_error(http_request(port(), "POST", "/v1/completions", "{not json"), 400, "BadRequestError");
  const json nf = expect_api_error(http_request(port(), "POST", "/v1/completions", R"({"model":"nope","prompt":"a"})"),
                                   404, "NotFoundError");
  EXPECT_EQ(nf.value("message", ""), "The model `nope` does not exist.");
  expect_api_error(http_request(port(), "GET", "/v1/nothing"), 404, "NotFoundError");
  const HttpResponse wrong = http_request(port(), "GET", "/v1/chat/completions");
  expect_api_error(wrong, 405, "MethodNotAllowedError");
  EXPECT_EQ(wrong.header("allow"), "POST");
  const json bad = expect_api_error(
      http_request(port(), "POST", "/v1/completions", R"({"model":"mock-a","prompt":"a","max_tokens":"10"})"), 400,
      "BadRequestError");
  EXPECT_EQ(bad.value("param", ""), "max_tokens");
  const json so = expect_api_error(
      http_request(port(), "POST", "/v1/completions",
                   R"({"model":"mock-a","prompt":"a","stream_options":{"include_usage":true}})"),
      400, "BadRequestError");
  EXPECT_EQ(so.value("message", ""), "Stream options can only be defined when `stream=True`.");
  const json ctx = expect_api_error(
      http_request(port(), "POST", "/v1/completions", R"({"model":"mock-a","prompt":"a b c d","max_tokens":61})"), 400,
      "BadRequestError");
  EXPECT_EQ(ctx.value("message", ""),
            "'max_tokens' or 'max_completion_tokens' is too large: 61. This model's maximum context length is 64 "
            "tokens and your request has 4 input tokens (61 > 64 - 4).");
}

TEST_F(ServerEndpoints, OversizedBodyIs413) {
  HttpConnection c(port());
  // Announce 17 MiB but send none of it: the server answers from the headers alone.
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(17 * 1024 * 1024) + "\r\n\r\n");
  expect_api_error(c.read_response(), 413, "RequestEntityTooLargeError");
  EXPECT_TRUE(c.wait_closed(std::chrono::seconds(5)));
}

TEST_F(ServerEndpoints, OversizedBodySentInFullStillGets413) {
  HttpConnection c(port());
  const std::string body(17 * 1024 * 1024, 'x');
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n");
  try {
    c.send_raw(body);  // the server drains it before closing
  } catch (const std::exception&) {
  }
  expect_api_error(c.read_response(), 413, "RequestEntityTooLargeError");
}

TEST_F(ServerEndpoints, OversizedHeaderIs431) {
  HttpConnection c(port());
  c.send_raw("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 * 1024, 'a') + "\r\n\r\n");
  expect_api_error(c.read_response(), 431, "RequestHeaderFieldsTooLargeError");
}

TEST_F(ServerEndpoints, MalformedRequestIs400AndServerSurvives) {
  {
    HttpConnection c(port());
    c.send_raw("THIS IS NOT HTTP\r\n\r\n");
    expect_api_error(c.read_response(), 400, "BadRequestError");
  }
  {
    HttpConnection c(port());
    c.send_raw(std::string("\x00\xff\x13garbage", 10) + "\r\n\r\n");
    EXPECT_EQ(c.read_response().status, 400);
  }
  {
    HttpConnection c(port());
    c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Len");  // then hang up mid-header
  }
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_api_error(http_request(port(), "POST", "/v1/chat/completions", deep), 400, "BadRequestError");
  EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
}

TEST_F(ServerEndpoints, KeepAliveServesSeveralRequestsOnOneConnection) {
  HttpConnection c(port());
  c.send_request("GET", "/health");
  EXPECT_EQ(c.read_response().status, 200);
  c.send_request("POST", "/v1/completions", R"({"model":"mock-a","prompt":"x","max_tokens":2,"stream":true})");
  const HttpResponse streamed = c.read_response();
  EXPECT_EQ(streamed.status, 200);
  EXPECT_EQ(sse_payloads(streamed.body).back(), "[DONE]");
  c.send_request("POST", "/v1/completions", R"({"model":"mock-a","prompt":"x","max_tokens":2})");
  EXPECT_EQ(c.read_response().status, 200);
  // An error reply keeps the connection too.
  c.send_request("POST", "/v1/completions", R"({"model":"zzz","prompt":"x"})");
  EXPECT_EQ(c.read_response().status, 404);
  c.send_request("GET", "/health");
  EXPECT_EQ(c.read_response().status, 200);
}

TEST_F(ServerEndpoints, PipelinedRequestsAreAnsweredInOrder) {
  HttpConnection c(port());
  const std::string a = R"({"model":"mock-a","prompt":"x","max_tokens":3,"stream":true})";
  const std::string b = R"({"model":"mock-a","prompt":"x y","max_tokens":1})";
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(a.size()) + "\r\n\r\n" +
             a + "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(b.size()) +
             "\r\n\r\n" + b);
  const HttpResponse first = c.read_response();
  EXPECT_TRUE(first.chunked);
  const HttpResponse second = c.read_response();
  EXPECT_EQ(json::parse(second.body).at("usage").at("prompt_tokens"), 2);
}

TEST_F(ServerEndpoints, ConnectionCloseIsHonoured) {
  HttpConnection c(port());
  c.send_request("GET", "/health", "", "Connection: close\r\n");
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.wait_closed(std::chrono::seconds(5)));
}

TEST_F(ServerEndpoints, ExpectContinueGetsA100) {
  HttpConnection c(port());
  const std::string body = R"({"model":"mock-a","prompt":"x","max_tokens":1})";
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 100);
  c.send_raw(body);
  EXPECT_EQ(c.read_response().status, 200);
}

}  // namespace
}  // namespace llmload::testing
