// Backends (request bodies, SGLang decoding), ground truth, timeouts of the tracker, prompt
// calibration and the vLLM-compatible settings.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "chunk_scan.hpp"  // the decoder's own scan (loadgen/src/core)
#include "llmload/loadgen/calibration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "decode_event.hpp"
#include "llmload/loadgen/stream_decoder.hpp"
#include "settings.hpp"

namespace llmload {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using K = StreamUpdate::Kind;

using testing::dec;

json body_of(const HttpRequest& r) { return json::parse(r.body); }

std::string header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<none>";
}

TEST(Backend, ParsesNamesAndAliases) {
  EXPECT_EQ(parse_backend("vllm").api, ApiKind::kCompletions);
  EXPECT_EQ(parse_backend("openai").name, "openai-completions");
  EXPECT_EQ(parse_backend("openai-chat").default_path, "/v1/chat/completions");
  EXPECT_EQ(parse_backend("sglang").default_path, "/generate");
  try {
    parse_backend("tgi");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("openai-chat"), std::string::npos) << e.what();
  }
}

TEST(RequestBuilder, CompletionsBodyAsksForExactLengthAndPerChunkUsage) {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.input_tokens = 7;
  cfg.output_tokens = 9;
  RequestBuilder b(cfg, "/proxy", "h:1");
  const HttpRequest r = b.build(3);
  EXPECT_EQ(r.target, "/proxy/v1/completions");
  const json j = body_of(r);
  EXPECT_EQ(j["max_tokens"], 9);
  EXPECT_EQ(j["min_tokens"], 9);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["stream_options"]["continuous_usage_stats"], true);
  const std::string prompt = j["prompt"].get<std::string>();
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), ' '), 6);
  EXPECT_EQ(b.build(3).body, r.body) << "deterministic";
  EXPECT_NE(b.build(4).body, r.body);
}

TEST(RequestBuilder, NoIgnoreEosNoContinuousUsageExtraBodyAndHeaders) {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.ignore_eos = false;
  cfg.continuous_usage = false;
  cfg.extra_body = R"({"top_p": 0.5, "temperature": 0.7})";
  cfg.headers = {{"X-Team", "perf"}};
  cfg.api_key = "sk-1";
  RequestBuilder b(cfg, "", "h");
  const HttpRequest r = b.build(0);
  const json j = body_of(r);
  EXPECT_FALSE(j.contains("ignore_eos"));
  EXPECT_FALSE(j.contains("min_tokens"));
  EXPECT_FALSE(j["stream_options"].contains("continuous_usage_stats"));
  EXPECT_EQ(j["top_p"], 0.5);
  EXPECT_EQ(j["temperature"], 0.7) << "extra body overrides the defaults";
  EXPECT_EQ(header(r, "X-Team"), "perf");
  EXPECT_EQ(header(r, "Authorization"), "Bearer sk-1");
}

// Issue 16: a --header named like one of llmload's own fields was sent beside it (two fields of
// one name); now it replaces llmload's, in any case.
TEST(RequestBuilder, AHeaderOfTheSameNameReplacesLlmloadsOwn) {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.api_key = "sk-1";
  cfg.headers = {{"user-agent", "my-bench/2"}, {"Authorization", "Basic abc"}};
  RequestBuilder b(cfg, "", "h");
  const HttpRequest r = b.build(0);
  int agents = 0, auths = 0;
  for (const auto& [k, v] : r.headers) {
    agents += k == "User-Agent" || k == "user-agent";
    auths += k == "Authorization";
  }
  EXPECT_EQ(agents, 1);
  EXPECT_EQ(auths, 1);
  EXPECT_EQ(header(r, "user-agent"), "my-bench/2");
  EXPECT_EQ(header(r, "Authorization"), "Basic abc");
  EXPECT_EQ(header(r, "Content-Type"), "application/json");
  EXPECT_EQ(r.headers.front().first, "Host");
}

// The pre-serialized body template gives exactly the bytes of the DOM path, for every backend
// and option, and prompts that need escaping or replacement (invalid UTF-8).
TEST(RequestBuilder, TemplatedBodyIsByteIdenticalToTheDomBody) {
  const std::vector<std::string> prompts = {"plain words here", "say \"hi\" \\ now", "tab\there\nnew line",
                                            "caf\xc3\xa9 \xe2\x82\xac", "bad \xc3\x28 utf8", "", "\x7f del",
                                            std::string(3000, 'w')};
  int templated = 0;
  int compared = 0;
  for (const char* backend : {"openai-completions", "openai-chat", "sglang"}) {
    for (int variant = 0; variant < 8; ++variant) {
      ScenarioConfig cfg;
      cfg.backend = backend;
      cfg.model = variant % 2 == 0 ? "m" : "org/Model \"q\"";
      cfg.stream = (variant & 2) == 0;
      cfg.ignore_eos = (variant & 4) == 0;
      cfg.continuous_usage = variant != 3;
      if (variant == 5) cfg.extra_body = R"({"top_p": 0.5, "temperature": 0.7})";
      if (variant == 7) cfg.extra_body = R"({"prompt": "override", "messages": [], "text": "x"})";
      RequestBuilder b(cfg, "", "h");
      templated += b.templated() ? 1 : 0;
      if (variant == 7) {
        EXPECT_FALSE(b.templated()) << backend << ": an override of the prompt disables the template";
      }
      for (const auto& p : prompts) {
        for (std::int64_t out : {std::int64_t{1}, std::int64_t{256}, std::int64_t{1234567}}) {
          WorkItem item;
          item.prompt = p;
          item.output_tokens = out;
          EXPECT_EQ(b.build(item).body, b.dom_body(item)) << backend << " variant " << variant << " prompt " << p;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(templated, 3 * 7);
  EXPECT_EQ(compared, 3 * 8 * 8 * 3);
}

TEST(RequestBuilder, BadExtraBodyIsAClearError) {
  ScenarioConfig cfg;
  cfg.extra_body = "[1,2]";
  try {
    RequestBuilder b(cfg, "", "h");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--extra-body"), std::string::npos) << e.what();
  }
}

TEST(RequestBuilder, ChatCarriesTheConversationSoFar) {
  ScenarioConfig cfg;
  cfg.backend = "openai-chat";
  cfg.model = "m";
  RequestBuilder b(cfg, "", "h");
  WorkItem item;
  item.prompt = "third";
  item.output_tokens = 4;
  const HttpRequest r = b.build(item, {Turn{"first", " answer one"}, Turn{"second", " answer two"}});
  EXPECT_EQ(r.target, "/v1/chat/completions");
  const json j = body_of(r);
  ASSERT_EQ(j["messages"].size(), 5u);
  EXPECT_EQ(j["messages"][0]["content"], "first");
  EXPECT_EQ(j["messages"][1]["role"], "assistant");
  EXPECT_EQ(j["messages"][3]["content"], " answer two");
  EXPECT_EQ(j["messages"][4]["content"], "third");
  EXPECT_EQ(j["max_completion_tokens"], 4);
}

TEST(RequestBuilder, CompletionsFlattensTheConversationWordForWord) {
  ScenarioConfig cfg;
  cfg.model = "m";
  RequestBuilder b(cfg, "", "h");
  WorkItem item;
  item.prompt = "c d";
  item.output_tokens = 2;
  const json j = body_of(b.build(item, {Turn{"a", " x y"}, Turn{"b", "z"}}));
  EXPECT_EQ(j["prompt"], "a x y b z c d");
}

TEST(RequestBuilder, SglangNativeBodyAndEndpointOverride) {
  ScenarioConfig cfg;
  cfg.backend = "sglang";
  cfg.output_tokens = 5;
  RequestBuilder b(cfg, "", "h");
  const json j = body_of(b.build(0));
  EXPECT_EQ(b.path(), "/generate");
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_EQ(j["sampling_params"]["max_new_tokens"], 5);
  EXPECT_EQ(j["sampling_params"]["min_new_tokens"], 5);
  EXPECT_EQ(j["sampling_params"]["ignore_eos"], true);
  EXPECT_FALSE(j.contains("model"));
  cfg.endpoint_path = "/custom/generate";
  RequestBuilder b2(cfg, "/p", "h");
  EXPECT_EQ(b2.path(), "/p/custom/generate");
}

TEST(StreamDecoder, SglangCumulativeTextCountsTheGrowth) {
  OpenAiStreamDecoder d(ApiKind::kSglang, /*capture_text=*/true);
  auto a = dec(d, R"({"text":" a","output_ids":[1],"meta_info":{"id":"x","finish_reason":null,"prompt_tokens":3,"completion_tokens":1}})");
  EXPECT_EQ(a.kind, K::kOutput);
  EXPECT_EQ(a.tokens, 1);
  EXPECT_EQ(a.text, " a");
  // Speculative decoding: three tokens in one event.
  auto b = dec(d, R"({"text":" a b c d","output_ids":[1,2,3,4],"meta_info":{"id":"x","finish_reason":{"type":"length","length":4},"prompt_tokens":3,"completion_tokens":4,"llmload":{"queue_s":0.001,"first_token_s":0.01,"last_token_s":0.02}}})");
  EXPECT_EQ(b.kind, K::kOutput);
  EXPECT_EQ(b.tokens, 3);
  EXPECT_EQ(b.text, " b c d");
  EXPECT_EQ(b.finish_reason, "length");
  ASSERT_TRUE(b.usage);
  EXPECT_EQ(b.usage->prompt_tokens, 3);
  EXPECT_EQ(b.usage->completion_tokens, 4);
  ASSERT_TRUE(b.server_timing);
  EXPECT_DOUBLE_EQ(*b.server_timing->first_token_s, 0.01);
  EXPECT_EQ(dec(d, "[DONE]").kind, K::kDone);
  auto shrink = dec(d, R"({"text":" a","meta_info":{"completion_tokens":5}})");
  EXPECT_EQ(shrink.kind, K::kMalformed);
  OpenAiStreamDecoder d2(ApiKind::kSglang);
  EXPECT_EQ(dec(d2, R"({"choices":[]})").kind, K::kMalformed);
}

TEST(StreamDecoder, GroundTruthAndTextOfOpenAiChunks) {
  OpenAiStreamDecoder d(ApiKind::kChat, true);
  auto u = dec(d, R"({"choices":[{"delta":{"content":" hi"}}],"llmload":{"arrival_unix_ns":1,"queue_s":0.5,"first_token_s":0.75,"last_token_s":1.5}})");
  EXPECT_EQ(u.text, " hi");
  ASSERT_TRUE(u.server_timing);
  EXPECT_DOUBLE_EQ(*u.server_timing->queue_s, 0.5);
  EXPECT_DOUBLE_EQ(*u.server_timing->last_token_s, 1.5);
  OpenAiStreamDecoder plain(ApiKind::kChat);
  EXPECT_TRUE(dec(plain, R"({"choices":[{"delta":{"content":" hi"}}]})").text.empty()) << "text only when asked";
}

TEST(WholeResponse, SglangAndGroundTruth) {
  auto w = decode_whole_response(
      R"({"text":" x y","output_ids":[1,2],"meta_info":{"finish_reason":{"type":"length"},"prompt_tokens":2,"completion_tokens":2,"llmload":{"first_token_s":0.1,"last_token_s":0.2}}})",
      ApiKind::kSglang);
  ASSERT_TRUE(w.ok) << w.message;
  EXPECT_TRUE(w.has_output);
  EXPECT_EQ(w.usage->completion_tokens, 2);
  ASSERT_TRUE(w.server_timing);
  EXPECT_EQ(w.text, " x y");
  EXPECT_FALSE(decode_whole_response(R"({"text":1})", ApiKind::kSglang).ok);
}

// The tracker's deadlines: first token, then the gap between tokens.
TEST(RequestTracker, FirstTokenThenInterTokenDeadlines) {
  const TimePoint start(10s);
  analysis::RequestRecord rec;
  rec.requested_output_tokens = 3;
  TrackerOptions o;
  o.first_token_timeout = 2s;
  o.inter_token_timeout = 500ms;
  RequestTracker t(rec, start, o);
  EXPECT_FALSE(t.deadline()) << "nothing sent yet";
  t.on_sent(start + 1s);
  EXPECT_EQ(t.deadline(), start + 3s);
  EXPECT_EQ(t.on_deadline(start + 3s).cls, analysis::ErrorClass::kFirstTokenTimeout);
  t.on_headers(start + 1100ms, 200, "text/event-stream");
  t.on_body(start + 1200ms, "data: {\"choices\":[{\"text\":\" a\"}]}\n\n");
  EXPECT_EQ(t.deadline(), start + 1700ms);
  t.on_body(start + 1600ms, "data: {\"choices\":[{\"text\":\" b\"}]}\n\n");
  EXPECT_EQ(t.deadline(), start + 2100ms);
  const TransportError e = t.on_deadline(start + 2100ms);
  EXPECT_EQ(e.cls, analysis::ErrorClass::kInterTokenTimeout);
  EXPECT_NE(e.message.find("--inter-token-timeout"), std::string::npos);
  t.on_complete(start + 2100ms, e);
  EXPECT_EQ(t.record().error, analysis::ErrorClass::kInterTokenTimeout);
  EXPECT_FALSE(t.deadline());
}

TEST(RequestTracker, EndedEarlyAndEstimatedTokens) {
  analysis::RequestRecord rec;
  rec.requested_input_tokens = 11;
  rec.requested_output_tokens = 5;
  RequestTracker t(rec, TimePoint(0s), ApiKind::kCompletions, true);
  t.on_sent(TimePoint(1s));
  t.on_headers(TimePoint(2s), 200, "text/event-stream");
  t.on_body(TimePoint(3s), "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
  t.on_complete(TimePoint(4s), TransportError{});
  const auto& r = t.record();
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.tokens_from_usage) << "no usage: estimated";
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.input_tokens, 11);
  EXPECT_TRUE(r.ended_early);
}

TEST(Calibration, FindsOverheadAndSingleTokenWords) {
  // A fake tokenizer: one BOS token, every word one token except "stone" (two tokens).
  int calls = 0;
  TokenCounter count = [&](const std::string& text) -> std::optional<std::int64_t> {
    ++calls;
    std::int64_t n = 1;
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto next = text.find(' ', pos);
      if (next == std::string::npos) next = text.size();
      const std::string w = text.substr(pos, next - pos);
      if (!w.empty()) n += w == "stone" ? 2 : 1;
      pos = next + 1;
    }
    return n;
  };
  auto r = calibrate_token_model(count, 200, 7);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->model.method, "tokenize");
  EXPECT_EQ(r->model.overhead, 1);
  EXPECT_EQ(r->model.words.size(), TokenModel::builtin().words.size() - 1);
  EXPECT_EQ(std::find(r->model.words.begin(), r->model.words.end(), "stone"), r->model.words.end());
  EXPECT_EQ(*count(r->model.synthesize(200, 99)), 200) << "synthesized prompts count exactly";
  EXPECT_EQ(r->report["verification"]["server_counted"], 200);
  TokenCounter none = [](const std::string&) -> std::optional<std::int64_t> { return std::nullopt; };
  EXPECT_FALSE(calibrate_token_model(none, 10, 1));
  TokenCounter weird = [](const std::string& s) -> std::optional<std::int64_t> {
    return static_cast<std::int64_t>(s.size());  // a byte tokenizer: words are never one token
  };
  EXPECT_THROW(calibrate_token_model(weird, 10, 1), ConfigError);
}

ScenarioConfig from_flags(const std::vector<std::pair<std::string, std::string>>& flags) {
  ScenarioConfig cfg;
  for (const auto& [k, v] : flags) app::apply_setting(k, v, "--" + k, cfg);
  return cfg;
}

TEST(VllmFlags, MeanWhatTheyMeanInVllm) {
  auto cfg = from_flags({{"backend", "vllm"},
                         {"num-prompts", "50"},
                         {"request-rate", "4"},
                         {"burstiness", "0.5"},
                         {"max-concurrency", "8"},
                         {"random-input-len", "300"},
                         {"random-output-len", "30"},
                         {"random-range-ratio", "0.25"},
                         {"goodput", "ttft:500 tpot:50 e2el:4000"},
                         {"metric-percentiles", "50,90,99"},
                         {"percentile-metrics", "ttft,tpot,e2el"},
                         {"save-result", "true"},
                         {"result-dir", "out"}});
  EXPECT_EQ(cfg.kind, ScenarioKind::kServer) << "a finite --request-rate selects the server scenario";
  EXPECT_EQ(cfg.num_requests, 50);
  EXPECT_EQ(cfg.arrivals.process, "gamma");
  EXPECT_DOUBLE_EQ(cfg.arrivals.burstiness, 0.5);
  EXPECT_EQ(cfg.max_inflight, 8);
  EXPECT_EQ(cfg.input_tokens, 300);
  EXPECT_EQ(cfg.output_tokens, 30);
  EXPECT_DOUBLE_EQ(cfg.workload.random_range_ratio, 0.25);
  ASSERT_TRUE(cfg.slo);
  EXPECT_EQ(cfg.slo->to_string().find("e2el"), std::string::npos);
  EXPECT_NE(cfg.slo->to_string().find("ttft"), std::string::npos);
  EXPECT_EQ(cfg.metric_percentiles, (std::vector<double>{50, 90, 99}));
  EXPECT_EQ(cfg.output_dir, "out");
  EXPECT_EQ(from_flags({{"request-rate", "inf"}}).kind, ScenarioKind::kOffline) << "vLLM's default rate";
  EXPECT_EQ(from_flags({{"scenario", "concurrency"}, {"request-rate", "inf"}}).kind, ScenarioKind::kConcurrency);
  EXPECT_TRUE(from_flags({{"save-result", "true"}}).save_result);
  EXPECT_EQ(from_flags({{"save-result", "true"}}).output_dir, "") << "named at the run (app/output_dir.hpp)";
}

TEST(VllmFlags, EndpointPathPicksTheBackendUnlessGiven) {
  EXPECT_EQ(from_flags({{"endpoint", "/v1/chat/completions"}}).backend, "openai-chat");
  EXPECT_EQ(from_flags({{"endpoint", "/generate"}}).backend, "sglang");
  auto cfg = from_flags({{"backend", "openai-completions"}, {"endpoint", "/v1/chat/completions"}});
  EXPECT_EQ(cfg.backend, "openai-completions");
  EXPECT_EQ(cfg.endpoint_path, "/v1/chat/completions");
  EXPECT_EQ(from_flags({{"endpoint", "chat"}}).backend, "openai-chat");
}

TEST(Settings, HeadersAndErrorsNameTheFlag) {
  auto cfg = from_flags({{"header", "X-A: 1"}, {"header", "X-B:two"}});
  ASSERT_EQ(cfg.headers.size(), 2u);
  EXPECT_EQ(cfg.headers[1].second, "two");
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"header", "no colon"},
                                                                              {"goodput", "ttft"},
                                                                              {"random-range-ratio", "1.5"},
                                                                              {"percentile-metrics", "ttft,nope"},
                                                                              {"metric-percentiles", "0"},
                                                                              {"dataset-name", "hf"},
                                                                              {"time-scale", "0"}}) {
    try {
      from_flags({{k, v}});
      ADD_FAILURE() << "expected an error for --" << k << " " << v;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--" + k), std::string::npos) << e.what();
    }
  }
}

TEST(Settings, ScenarioFileListsForHeadersAndGoodput) {
  ScenarioConfig cfg;
  app::apply_scenario_text("header: ['X-A: 1', 'X-B: 2']\ngoodput: ['ttft:100', 'tpot:10']\nbackend: sglang\n", "s.yaml",
                           cfg);
  EXPECT_EQ(cfg.headers.size(), 2u);
  ASSERT_TRUE(cfg.slo);
  EXPECT_EQ(cfg.backend, "sglang");
}

// The targeted scan of common chunks must agree with the full parse on everything it accepts:
// decode the same generated streams with text capture off (fast path) and on (always the full
// parse) and compare every field but the text.
TEST(StreamDecoder, FastChunkScanAgreesWithTheFullParse) {
  std::uint64_t state = 12345;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  const std::vector<std::string> texts = {R"("")",   R"(" a")", R"("x\"y")", R"("\u00e9")", "null", "7", R"(" usage ")",
                                          "\" \xc3\x28\"", "\" \xc3\xa9\"", "\"a\tb\"", "tru", "-0", "05", "1e",
                                          "1.5e+3"};
  const std::vector<std::string> finishes = {"null", R"("length")", R"("stop")", "3"};
  int compared = 0;
  int timed = 0;
  for (const ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
    for (int stream = 0; stream < 400; ++stream) {
      OpenAiStreamDecoder fast(api);
      OpenAiStreamDecoder full(api, /*capture_text=*/true);
      std::int64_t completion = 0;
      for (int k = 0; k < 6; ++k) {
        const std::string text = texts[next(texts.size())];
        std::string choice = api == ApiKind::kChat
                                 ? (next(5) == 0   ? R"({"index":0,"delta":null)"
                                    : next(3) == 0 ? R"({"index":0,"delta":{"reasoning_content":)" + text + "}"
                                                   : R"({"index":0,"delta":{"content":)" + text + "}")
                                 : R"({"index":0,"text":)" + text;
        choice += R"(,"logprobs":null,"finish_reason":)" + finishes[next(finishes.size())] + "}";
        // Integers of every length: 300 digits is within double's range, 309 nines and 400 digits
        // are past it (nlohmann refuses the whole chunk), -12 and 7 are ordinary.
        const std::vector<std::string> ids = {R"("c")",  R"("c\q")", R"("c\u12")", "\"\xff\"", "01", "true",
                                              "-12",     "7",        std::string(300, '9'), std::string(309, '9'),
                                              "1" + std::string(399, '0'), "-" + std::string(309, '9')};
        std::string payload = R"({"id":)" + ids[next(4) == 0 ? next(ids.size()) : 0] + R"(,"object":"x","choices":[)" +
                              (next(6) == 0 ? std::string() : choice) + "]";
        if (next(2) == 0) {
          completion += static_cast<std::int64_t>(next(3));
          payload += R"(,"usage":{"prompt_tokens":5,"completion_tokens":)" + std::to_string(completion) +
                     (next(8) == 0 ? R"(,"prompt_tokens_details":{"cached_tokens":2})" : "") + "}";
        }
        if (next(4) == 0) {
          // The server's ground truth: numbers in every JSON form, out-of-range and non-number
          // values, missing and duplicate fields.
          const std::vector<std::string> values = {"0.5", "0", "1e-3", "2.5E2", "-0.25", "12", "null", R"("1")",
                                                   "1e999", "-0", "0.1234567890123456789"};
          const std::vector<std::string> keys = {"queue_s", "first_token_s", "last_token_s", "cached_tokens"};
          std::string truth = "{";
          const std::uint64_t fields = next(5);
          for (std::uint64_t fi = 0; fi < fields; ++fi) {
            if (fi > 0) truth += ",";
            truth += "\"" + keys[next(keys.size())] + "\":" + values[next(values.size())];
          }
          truth += "}";
          payload += R"(,"llmload":)" + (next(12) == 0 ? std::string("[]") : truth);
        }
        if (next(15) == 0) payload += ",";  // malformed
        payload += "}";
        const StreamUpdate a = dec(fast, payload);
        const StreamUpdate b = dec(full, payload);
        ASSERT_EQ(a.kind, b.kind) << payload;
        EXPECT_EQ(a.tokens, b.tokens) << payload;
        EXPECT_EQ(a.answer, b.answer) << payload;
        EXPECT_EQ(a.finish_reason, b.finish_reason) << payload;
        ASSERT_EQ(a.usage.has_value(), b.usage.has_value()) << payload;
        if (a.usage) {
          EXPECT_EQ(a.usage->prompt_tokens, b.usage->prompt_tokens);
          EXPECT_EQ(a.usage->completion_tokens, b.usage->completion_tokens);
          EXPECT_EQ(a.usage->cached_tokens, b.usage->cached_tokens);
        }
        ASSERT_EQ(a.server_timing.has_value(), b.server_timing.has_value()) << payload;
        if (a.server_timing) {
          EXPECT_EQ(a.server_timing->queue_s, b.server_timing->queue_s) << payload;
          EXPECT_EQ(a.server_timing->first_token_s, b.server_timing->first_token_s) << payload;
          EXPECT_EQ(a.server_timing->last_token_s, b.server_timing->last_token_s) << payload;
          timed += 1;
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 4800);
  EXPECT_GT(timed, 100);  // the ground-truth cases were exercised, not all declined
}

// The scan itself takes llmload-server's last chunk, ground truth included (before, that chunk
// always fell back to the full parse), and declines what it must leave to it.
TEST(StreamDecoder, FastScanReadsTheServersGroundTruth) {
  const std::string last =
      R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" w"},"logprobs":null,)"
      R"("finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":8,"completion_tokens":4},)"
      R"("llmload":{"queue_s":0.001,"first_token_s":0.0205,"last_token_s":0.0261,"cached_tokens":0}})";
  const auto f = detail::scan_chunk(last, ApiKind::kChat);
  ASSERT_TRUE(f.has_value());
  ASSERT_TRUE(f->first_token_s.has_value());
  EXPECT_DOUBLE_EQ(*f->first_token_s, 0.0205);
  EXPECT_DOUBLE_EQ(*f->last_token_s, 0.0261);
  EXPECT_EQ(f->completion_tokens, 4);
  EXPECT_FALSE(detail::scan_chunk(R"({"choices":[],"llmload":{"first_token_s":"0.1"}})", ApiKind::kChat));
  EXPECT_FALSE(detail::scan_chunk(R"({"choices":[],"id":1e999})", ApiKind::kChat));
}

// Every shipped scenario file loads and validates (a trace replay as main.cpp treats it).
TEST(ScenarioFiles, EveryShippedScenarioIsValid) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(LLMLOAD_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    ScenarioConfig cfg;
    app::apply_scenario_file(entry.path().string(), cfg);
    if (cfg.workload.dataset == "trace") {
      cfg.timed_arrivals = true;
      if (!cfg.scenario_explicit) cfg.kind = ScenarioKind::kServer;
    }
    EXPECT_NO_THROW(cfg.validate());
    EXPECT_NO_THROW(RequestBuilder(cfg, "", "h"));
    ++n;
  }
  EXPECT_GE(n, 8);
}

}  // namespace
}  // namespace llmload
