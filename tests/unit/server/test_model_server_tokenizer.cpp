// llmload-server --tokenizer: the model's tokenizer behind ServerTokenizer (prompt counts,
// /tokenize, /detokenize, generated tokens and their JSON escaping), on hand-made tokenizers.
#include "llmload/server/model_server_tokenizer.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/cli.hpp"
#include "llmload/server/generation_request.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/mock_server_tokenizer.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"
#include "tiny_server_tokenizers.hpp"

// A named namespace: these helpers' names cannot clash with other tests' in a unity build.
namespace llmload::server::model_tokenizer_test {
namespace {

using nlohmann::json;
using tiny_tokenizers::byte_level_json;
using tiny_tokenizers::load_json;
using tiny_tokenizers::sentencepiece_style_json;
using tokenizer::TokenId;

std::shared_ptr<const ModelServerTokenizer> byte_level() {
  return std::make_shared<const ModelServerTokenizer>(load_json(byte_level_json()));
}

std::vector<TokenId> as_token_ids(const std::vector<std::uint32_t>& ids) { return {ids.begin(), ids.end()}; }

ServerConfig tok_config(std::shared_ptr<const ServerTokenizer> tok, std::int64_t max_model_len = 1000) {
  ServerConfig c;
  c.models = {"m"};
  c.max_model_len = max_model_len;
  c.tokenizer = std::move(tok);
  return c;
}

HttpReply immediate(const Router& router, std::string_view target, std::string_view body) {
  const RouteResult r = router.route("POST", target, body, RequestContext{1, 1700000000});
  const auto* reply = std::get_if<HttpReply>(&r);
  EXPECT_NE(reply, nullptr);
  return reply != nullptr ? *reply : HttpReply{};
}

/// A generated output of n tokens over `tok` for a prompt seed.
std::shared_ptr<OutputSequence> output_of(const std::shared_ptr<const ModelServerTokenizer>& tok, std::int64_t n,
                                          std::uint64_t output_seed) {
  GenerationJob job;
  job.request.max_tokens = n;
  job.request.output_seed = output_seed;
  job.tokenizer = tok;
  auto out = std::make_shared<OutputSequence>(job, 0);
  out->play_alone();
  return out;
}

/// The generated-token property for `tok`: for n tokens, the chunk texts concatenate to the
/// output's text, which decodes from and re-encodes to exactly the n generated ids.
void expect_round_trip(const std::shared_ptr<const ModelServerTokenizer>& tok, std::int64_t n,
                       std::uint64_t output_seed = 1) {
  const auto out = output_of(tok, n, output_seed);
  std::vector<std::uint32_t> ids;
  std::string chunks;
  for (std::int64_t k = 0; k < n; ++k) {
    ids.push_back(out->token_id(k));
    chunks += out->token_text(k);
  }
  std::string text;
  out->append_text(text, n);
  EXPECT_EQ(chunks, text);
  const ModelServerTokenizer& tok_ref = *tok;
  const auto& model = tok_ref.model_tokenizer();
  EXPECT_EQ(model.decode(as_token_ids(ids), false), text);
  EXPECT_EQ(model.encode(text, false), as_token_ids(ids)) << text.substr(0, 200);
  EXPECT_EQ(static_cast<std::int64_t>(model.count(text)), n);
}

TEST(ModelServerTokenizer, ByteLevelGeneratorTokensAreSingleWordTokensInListOrder) {
  const auto tok = byte_level();
  // " the", " of", " and", " a", " an" are single tokens; the other words of the list are not.
  EXPECT_EQ(tok->generator_ids(), (std::vector<std::uint32_t>{14, 16, 19, 17, 18}));
  ASSERT_EQ(tok->generator_size(), 5u);
  EXPECT_EQ(tok->generator_id(0), 14u);
  EXPECT_EQ(tok->generator_id(1), 16u);
  EXPECT_EQ(tok->generator_text(0, true), " the");
  EXPECT_EQ(tok->generator_text(0, false), " the");
  EXPECT_EQ(tok->generator_text(2, false), " and");
  EXPECT_EQ(tok->vocab_size(), 22u);
}

TEST(ModelServerTokenizer, ByteLevelGeneratedTextReEncodesToTheGeneratedIds) {
  const auto tok = byte_level();
  expect_round_trip(tok, 1000);
  for (std::int64_t n = 1; n <= 12; ++n) {
    for (std::uint64_t prompt = 0; prompt < 8; ++prompt) expect_round_trip(tok, n, prompt);
  }
}

TEST(ModelServerTokenizer, SentencePieceStyleFirstTokenHasNoLeadingSpaceAndTheTextRoundTrips) {
  const auto tok = std::make_shared<const ModelServerTokenizer>(load_json(sentencepiece_style_json()));
  EXPECT_EQ(tok->generator_ids(), (std::vector<std::uint32_t>{10, 12}));
  EXPECT_EQ(tok->generator_text(0, true), "the");  // the Strip decoder drops the first space
  EXPECT_EQ(tok->generator_text(1, true), "of");
  EXPECT_EQ(tok->generator_text(1, false), " of");
  EXPECT_EQ(tok->generator_text(0, false), " the");
  expect_round_trip(tok, 1000);
  for (std::int64_t n = 1; n <= 6; ++n) {
    for (std::uint64_t prompt = 0; prompt < 8; ++prompt) expect_round_trip(tok, n, prompt);
  }
}

TEST(ModelServerTokenizer, AVocabularyWithoutSingleTokenWordsIsRefusedNamingTheFile) {
  // Only bytes: no word of the list is one token.
  json doc = json::parse(byte_level_json());
  doc["model"]["vocab"] = {{"<s>", 0}, {"Ġ", 1}, {"t", 2}, {"h", 3}, {"e", 4}};
  doc["model"]["merges"] = json::array();
  try {
    ModelServerTokenizer tok(load_json(doc.dump()));
    FAIL() << "expected TokenizerError";
  } catch (const tokenizer::TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny/tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--tokenizer"), std::string::npos) << e.what();
  }
}

TEST(ModelServerTokenizer, CompletionPromptsAreEncodedWithSpecialTokensChatMessagesWithout) {
  const auto tok = byte_level();
  const ServerConfig c = tok_config(tok);
  // Completions: BOS + " the" ... ("the" at the start is "the" (21), no space).
  GenerationRequest r = parse_completion_request(json{{"model", "m"}, {"prompt", "the of and"}}, c);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{0, 21, 16, 19}));
  EXPECT_EQ(r.prompt_tokens, 4);
  // Chat: each message's content alone, no BOS, no template; summed.
  r = parse_chat_request(json{{"model", "m"},
                              {"messages", {{{"role", "system"}, {"content", " the of"}},
                                            {{"role", "user"}, {"content", {{{"type", "text"}, {"text", " and"}}}}}}}},
                         c);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{14, 16, 19}));
  EXPECT_EQ(r.prompt_tokens, 3);
  // SGLang /generate text: with special tokens, like completions.
  r = parse_generate_request(json{{"text", " a"}}, c);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{0, 17}));
}

TEST(ModelServerTokenizer, ContextLengthIsCheckedInRealTokensAndIdsAgainstTheVocabulary) {
  const ServerConfig c = tok_config(byte_level(), 5);
  // 4 words, but "thethethe" is 3 tokens + BOS = 4 prompt tokens: room for 1.
  try {
    (void)parse_completion_request(json{{"model", "m"}, {"prompt", "thethethe"}, {"max_tokens", 2}}, c);
    FAIL() << "expected a context-length error";
  } catch (const ApiException& e) {
    EXPECT_NE(e.error().message.find("your request has 4 input tokens"), std::string::npos) << e.error().message;
  }
  EXPECT_EQ(parse_completion_request(json{{"model", "m"}, {"prompt", "thethethe"}, {"max_tokens", 1}}, c).prompt_tokens, 4);
  // Token-id prompts: ids must be in the tokenizer's vocabulary.
  EXPECT_EQ(parse_completion_request(json{{"model", "m"}, {"prompt", {21, 16}}, {"max_tokens", 1}}, c).prompt_tokens, 2);
  try {
    (void)parse_completion_request(json{{"model", "m"}, {"prompt", {22}}, {"max_tokens", 1}}, c);
    FAIL() << "expected an out-of-vocabulary error";
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().status, 400);
    EXPECT_EQ(e.error().message, "Token id 22 is out of vocabulary: the tokenizer's (tokenizer.json) ids are in [0, 21]");
  }
}

TEST(ModelServerTokenizer, TokenizeAndDetokenizeUseTheModelTokenizer) {
  const Router router(tok_config(byte_level()), 1600000000);
  json body = json::parse(immediate(router, "/tokenize", R"({"prompt":"the of\n\""})").body);
  EXPECT_EQ(body["tokens"], json({0, 21, 16, 11, 10}));  // BOS by default (add_special_tokens: true)
  EXPECT_EQ(body["count"], 5);
  body = json::parse(
      immediate(router, "/tokenize", R"({"prompt":"the of\n\"","add_special_tokens":false,"return_token_strs":true})").body);
  EXPECT_EQ(body["tokens"], json({21, 16, 11, 10}));
  EXPECT_EQ(body["token_strs"], json({"the", " of", "\n", "\""}));
  // Messages: as chat counts them (no special tokens).
  body = json::parse(immediate(router, "/tokenize", R"({"messages":[{"role":"user","content":" the"}]})").body);
  EXPECT_EQ(body["tokens"], json({14}));
  // /detokenize decodes, special tokens kept; quotes and newlines come back escaped in JSON.
  const HttpReply d = immediate(router, "/detokenize", R"({"tokens":[0,21,16,11,10]})");
  EXPECT_EQ(json::parse(d.body)["prompt"], "<s>the of\n\"");
  const HttpReply bad = immediate(router, "/detokenize", R"({"tokens":[22]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("out of vocabulary"), std::string::npos) << bad.body;
}

TEST(ModelServerTokenizer, WithoutTokenizerTheRouterKeepsTheMockWords) {
  ServerConfig c = tok_config(nullptr);
  const Router router(c, 1600000000);
  const json body = json::parse(immediate(router, "/tokenize", R"({"prompt":"the of zebra"})").body);
  EXPECT_EQ(body["tokens"][0], 0);
  EXPECT_EQ(body["tokens"][1], 1);
  EXPECT_EQ(body["count"], 3);
  EXPECT_NE(router.tokenizer().description().find("mock"), std::string::npos);
}

/// The text of a stream: the concatenated "text" (completions) or "delta.content" (chat).
std::string streamed_text(const std::string& sse, std::int64_t* usage_completion) {
  std::string text;
  std::size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const std::size_t end = sse.find("\n\n", pos);
    const std::string payload = sse.substr(pos + 6, end - pos - 6);
    pos = end;
    if (payload == "[DONE]") continue;
    const json j = json::parse(payload);  // throws if a token's text were not escaped
    if (j.contains("usage") && usage_completion != nullptr) *usage_completion = j["usage"]["completion_tokens"];
    for (const auto& choice : j["choices"]) {
      if (choice.contains("text")) text += choice["text"].get<std::string>();
      if (choice.contains("delta") && choice["delta"].contains("content")) {
        text += choice["delta"]["content"].get<std::string>();
      }
    }
  }
  return text;
}

TEST(ModelServerTokenizer, StreamsCarryTheRealTokensAndTheirTextReEncodesToCompletionTokens) {
  const auto tok = byte_level();
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChat}) {
    GenerationJob job;
    job.request.endpoint = endpoint;
    job.request.model = "m";
    job.request.prompt_tokens = 3;
    job.request.max_tokens = 9;
    job.request.stream = true;
    job.request.include_usage = true;
    job.id = "x";
    job.tokenizer = tok;
    const ResponseEncoder enc(job);
    std::string sse;
    for (std::int64_t k = 0; k < job.request.max_tokens; ++k) enc.append_token_events(k, sse, Framing::kNone);
    std::int64_t completion = -1;
    const std::string text = streamed_text(sse, &completion);
    EXPECT_EQ(completion, 9);
    std::string expected;
    output_of(tok, 9, job.request.output_seed)->append_text(expected, 9);
    EXPECT_EQ(text, expected);
    EXPECT_EQ(tok->model_tokenizer().count(text), 9u);
    // The non-streaming body has the same text.
    const json full = json::parse(enc.full_body());
    const json& choice = full["choices"][0];
    EXPECT_EQ(endpoint == Endpoint::kChat ? choice["message"]["content"] : choice["text"], text);
  }
  GenerationJob gen;
  gen.request.endpoint = Endpoint::kGenerate;
  gen.request.max_tokens = 3;
  gen.id = "r";
  gen.tokenizer = tok;
  const auto out = output_of(tok, 3, gen.request.output_seed);
  const json ids = {out->token_id(0), out->token_id(1), out->token_id(2)};
  std::string text;
  out->append_text(text, 3);
  const json body = json::parse(ResponseEncoder(gen).full_body());
  EXPECT_EQ(body["output_ids"], ids);
  EXPECT_EQ(body["text"], text);
  EXPECT_EQ(tok->model_tokenizer().encode(text, false), as_token_ids(ids.get<std::vector<std::uint32_t>>()));
  std::string sse;
  ResponseEncoder(gen).append_token_events(1, sse, Framing::kNone);
  const json event = json::parse(sse.substr(6, sse.find("\n\n") - 6));
  EXPECT_EQ(event["text"], text.substr(0, text.size() - out->token_text(2).size()));
  EXPECT_EQ(event["output_ids"], json({ids[0], ids[1]}));
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string nasty = std::string("a\"b\\c\nd\re\tf\bg\fh") + '\x01' + '\x1f' + "\xc3\xa9 \xe2\x96\x81 </>";
  std::string out = "x";
  append_json_string(out, nasty);
  EXPECT_EQ(out, "x\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001\\u001f\xc3\xa9 \xe2\x96\x81 </>\"");
  EXPECT_EQ(json::parse(out.substr(1)).get<std::string>(), nasty);
  std::string plain;
  append_json_string(plain, " the");
  EXPECT_EQ(plain, "\" the\"");
  std::string empty;
  append_json_string(empty, "");
  EXPECT_EQ(empty, "\"\"");
}

/// A file removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& text)
      : path(std::filesystem::temp_directory_path() /
             ("llmload-server-tok-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
              std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".json")) {
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::filesystem::path path;
};

TEST(ModelServerTokenizer, CliLoadsTheTokenizerOrExitsTwoNamingTheFileAndTheFix) {
  const TempFile good(byte_level_json());
  CliOutcome o = parse_command_line({"--tokenizer", good.path.string()});
  ASSERT_TRUE(o.config) << o.err;
  ASSERT_TRUE(o.config->tokenizer);
  EXPECT_EQ(o.config->tokenizer->generator_id(0), 14u);

  const TempFile bad("{\"model\": {\"type\": \"WordPiece\"}}");
  o = parse_command_line({"--tokenizer", bad.path.string()});
  EXPECT_FALSE(o.config);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--tokenizer " + bad.path.string()), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("leave --tokenizer out"), std::string::npos) << o.err;

  o = parse_command_line({"--tokenizer", "/nonexistent/llmload-model"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("/nonexistent/llmload-model"), std::string::npos) << o.err;

  o = parse_command_line({});
  ASSERT_TRUE(o.config);
  EXPECT_FALSE(o.config->tokenizer);  // the mock
}

}  // namespace
}  // namespace llmload::server::model_tokenizer_test
