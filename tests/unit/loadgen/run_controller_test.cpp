// The RunController (loadgen/run_controller.hpp) on a manual clock against the scripted FakeServer:
// latencies from scripted events, scenarios, SLOs and verdicts, warmup, errors, token accounting,
// --trace-http and the tokenizer. Its phases (warmup auto, minimums, stopping, validity) are in
// run_controller_phases_test.cpp.
#include "llmload/loadgen/run_controller.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fake_server.hpp"
#include "run_controller_harness.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/token_accounting.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using analysis::Metric;
using testing::FakeServer;
using testing::Script;
using namespace run_controller_test;

TEST(RunController, LatenciesComputedFromScriptedEvents) {
  Harness h(concurrency(2, 10), [](std::uint64_t, TimePoint) {
    Script s;
    s.ttft = 50ms;
    s.itl = 10ms;
    s.tokens = 5;
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.completed, 10);
  EXPECT_EQ(m.failed, 0);
  const auto& ttft = m.latency.at(Metric::kTtft);
  EXPECT_EQ(ttft.count, 10);
  EXPECT_NEAR(ttft.mean_us, 50'000, 1);
  EXPECT_NEAR(ms(ttft.percentile(99)), 50.0, 0.05);
  EXPECT_NEAR(m.latency.at(Metric::kTpot).mean_us, 10'000, 1);
  EXPECT_NEAR(m.latency.at(Metric::kItl).mean_us, 10'000, 1);
  EXPECT_EQ(m.latency.at(Metric::kItl).count, 40);  // 4 gaps per request
  EXPECT_NEAR(m.latency.at(Metric::kE2e).mean_us, 90'000, 1);  // 50 + 4*10
  EXPECT_EQ(m.total_output_tokens, 50);
  EXPECT_EQ(m.total_input_tokens, 70);  // 7 per request, from usage
  EXPECT_FALSE(m.tokens_estimated);
  EXPECT_EQ(h.server.max_in_flight, 2);
  // 10 requests, 2 at a time, 90 ms each: the window is 450 ms.
  EXPECT_EQ(m.window.length(), 450ms);
  EXPECT_NEAR(m.request_throughput, 10 / 0.45, 1e-6);
  EXPECT_NEAR(m.output_throughput, 50 / 0.45, 1e-6);
  // Sent over their sending span: two at a time at 0, 90, ..., 360 ms: 9 gaps over 360 ms.
  EXPECT_NEAR(m.achieved_send_rate, 9 / 0.36, 1e-6);
}

TEST(RunController, MultiTokenEventsAreTokenWeightedInItl) {
  Harness h(concurrency(1, 1), [](std::uint64_t, TimePoint) {
    Script s;
    s.ttft = 40ms;
    s.itl = 30ms;
    s.tokens = 7;
    s.tokens_per_event = 3;  // events of 3, 3, 1 tokens
    return s;
  });
  auto m = h.run();
  ASSERT_EQ(m.completed, 1);
  // Gaps: 30 ms before the 2nd event (3 tokens) -> 3 x 10 ms; 30 ms before the 3rd (1 token).
  const auto& itl = m.latency.at(Metric::kItl);
  EXPECT_EQ(itl.count, 4);
  EXPECT_NEAR(itl.mean_us, (3 * 10'000 + 30'000) / 4.0, 1);
  EXPECT_EQ(m.latency.at(Metric::kItlEvent).count, 2);
  // TPOT uses n_out from usage: (E2E - TTFT) / (7 - 1) = 60 / 6 ms.
  EXPECT_NEAR(m.latency.at(Metric::kTpot).mean_us, 10'000, 1);
}

TEST(RunController, SingleStreamNeverHasTwoRequestsInFlight) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kSingleStream;
  cfg.num_requests = 20;
  Harness h(cfg, [](std::uint64_t n, TimePoint) {
    Script s;
    s.ttft = std::chrono::milliseconds(10 + static_cast<int>(n % 7) * 13);
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.completed, 20);
  EXPECT_EQ(h.server.max_in_flight, 1);
  EXPECT_EQ(h.ctl->max_in_flight(), 1u);
  // Closed loop: each request's intended time is when the previous completed.
  const auto recs = analysis::to_vector(h.ctl->records());
  for (std::size_t i = 1; i < recs.size(); ++i) EXPECT_EQ(recs[i].t_intended, *recs[i - 1].t_done);
}

TEST(RunController, ServerStallShowsInResponseTimeViewAndScheduleLag) {
  // Open loop at 100 req/s. Between 1 s and 2 s the client cannot send (a stalled socket or
  // server not accepting): requests due then are written only at 2 s. The service-time view
  // stays at 50 ms; the response-time view and the schedule lag show the stall.
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 100;
  cfg.num_requests = 300;
  cfg.seed = 3;
  ManualClock* clock_ptr = nullptr;
  TimePoint start{};
  Harness h(cfg, [&](std::uint64_t, TimePoint now) {
    Script s;
    s.ttft = 50ms;
    s.tokens = 2;
    const auto rel = now - start;
    if (rel >= 1s && rel < 2s) s.send_delay = Nanos(2s) - rel;
    return s;
  });
  clock_ptr = &h.clock;
  start = clock_ptr->now();
  auto m = h.run();
  EXPECT_EQ(m.completed, 300);
  EXPECT_NEAR(ms(m.latency.at(Metric::kTtft).max_us), 50.0, 0.1);
  EXPECT_GT(ms(m.latency.at(Metric::kTtftRt).max_us), 900.0);
  EXPECT_GT(ms(m.latency.at(Metric::kTtftRt).percentile(99)), 500.0);
  EXPECT_GT(ms(m.latency.at(Metric::kScheduleLag).max_us), 900.0);
  EXPECT_GT(m.late_over_1ms, 50);
  EXPECT_TRUE(m.invalid);
  EXPECT_NE(m.invalid_reason.find("late enough to change the results"), std::string::npos) << m.invalid_reason;
}

TEST(RunController, OpenLoopWithoutStallIsValid) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 50;
  cfg.num_requests = 100;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.completed, 100);
  EXPECT_FALSE(m.invalid);
  EXPECT_EQ(m.latency.at(Metric::kScheduleLag).max_us, 0);
  EXPECT_EQ(m.latency.at(Metric::kTtftRt).max_us, m.latency.at(Metric::kTtft).max_us);
  // Sent exactly on schedule: the realized gaps are the Poisson gaps (CV near 1).
  EXPECT_GT(m.realized_interarrival_cv, 0.7);
  EXPECT_LT(m.realized_interarrival_cv, 1.3);
  EXPECT_GT(m.achieved_send_rate, 0.0);
}

TEST(RunController, SloAttainmentGoodputAndVerdict) {
  auto cfg = concurrency(4, 200);
  cfg.slo = analysis::parse_slo("ttft:100ms");
  Harness h(cfg, [](std::uint64_t n, TimePoint) {
    Script s;
    s.ttft = (n % 4 == 0) ? 300ms : 50ms;  // a quarter of the requests miss the TTFT bound
    return s;
  });
  auto m = h.run();
  ASSERT_TRUE(m.slo);
  EXPECT_EQ(m.slo->good, 150);
  EXPECT_DOUBLE_EQ(m.slo->attainment, 0.75);
  const double secs = std::chrono::duration<double>(m.window.length()).count();
  EXPECT_NEAR(m.slo->request_goodput, 150 / secs, 1e-9);
  EXPECT_NEAR(m.slo->token_goodput, 150 * 4 / secs, 1e-9);
  EXPECT_EQ(m.slo->verdict, analysis::Verdict::kFail);
  ASSERT_EQ(m.slo->metrics.size(), 1u);
  EXPECT_EQ(m.slo->metrics[0].exceedances, 50);
}

TEST(RunController, VerdictIsInconclusiveWithTooFewRequestsAndPassesWithEnough) {
  auto few = concurrency(4, 100);
  few.slo = analysis::parse_slo("ttft:100ms,tpot:50ms");
  Harness a(few, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = a.run();
  EXPECT_EQ(m.slo->verdict, analysis::Verdict::kInconclusive);
  EXPECT_EQ(m.slo->metrics[0].required, 459);
  EXPECT_NE(m.slo->metrics[0].explanation.find("359 more"), std::string::npos);

  auto many = concurrency(8, 459);
  many.slo = analysis::parse_slo("ttft:100ms,tpot:50ms");
  Harness b(many, [](std::uint64_t, TimePoint) { return Script{}; });
  auto n = b.run();
  EXPECT_EQ(n.slo->verdict, analysis::Verdict::kPass);
  EXPECT_DOUBLE_EQ(n.slo->attainment, 1.0);
}

TEST(RunController, WarmupRequestsAreExcluded) {
  auto cfg = concurrency(1, 10);
  cfg.warmup = parse_warmup("3");
  Harness h(cfg, [](std::uint64_t n, TimePoint) {
    Script s;
    s.ttft = n < 3 ? 2s : 50ms;  // a cold start: the first requests are slow
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.warmup, 3);
  EXPECT_EQ(m.completed, 10);
  EXPECT_NEAR(ms(m.latency.at(Metric::kTtft).max_us), 50.0, 0.1);
  EXPECT_EQ(h.ctl->records().size(), 13u);
}

TEST(RunController, ErrorsAreClassifiedAndTheRunContinues) {
  Harness h(concurrency(1, 6), [](std::uint64_t n, TimePoint) {
    Script s;
    if (n == 1) {
      s.status = 503;
      s.error_body = R"({"error":{"message":"overloaded","type":"InternalServerError","param":null,"code":503}})";
    }
    if (n == 2) s.send_done = false;
    if (n == 3) {
      s.status = 429;
      s.error_body = "slow down";
    }
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 3);
  EXPECT_EQ(m.errors_by_status.at(503).count, 1);
  EXPECT_EQ(m.errors_by_status.at(503).example, "HTTP 503: overloaded (InternalServerError)");
  EXPECT_EQ(m.errors_by_status.at(429).example, "HTTP 429: slow down");
  EXPECT_EQ(m.errors_by_class.at("incomplete").count, 1);
  EXPECT_EQ(m.errors_by_class.at("http_status").count, 2);
}

TEST(RunController, MissingUsageMarksTokensEstimated) {
  auto cfg = concurrency(1, 2);
  cfg.endpoint = ApiKind::kChat;
  Harness h(cfg, [](std::uint64_t, TimePoint) {
    Script s;
    s.send_usage = false;
    s.chat = true;
    s.tokens = 6;
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.completed, 2);
  EXPECT_TRUE(m.tokens_estimated);
  EXPECT_EQ(m.total_output_tokens, 12);  // counted from output events (role chunk excluded)
}

TEST(RunController, DurationRunEndsAndWindowHasThatLength) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 2;
  cfg.duration = 2s;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.window.length(), 2s);
  // 80 ms per request, 2 in flight: about 50 requests in 2 s.
  EXPECT_GE(m.completed, 48);
  EXPECT_LE(m.completed, 52);
}

TEST(RunController, RequestBodiesAreDeterministicForASeed) {
  auto cfg = concurrency(1, 3);
  cfg.seed = 9;
  Harness a(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  Harness b(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  a.run();
  b.run();
  ASSERT_EQ(a.server.requests.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(a.server.requests[i].body, b.server.requests[i].body);
  EXPECT_NE(a.server.requests[0].body, a.server.requests[1].body);
}

}  // namespace
}  // namespace llmload

namespace llmload {
namespace {

// --trace-http N: the first N exchanges, request and response as they went, each body read with
// its receive time; the API key and anything echoing it never reach the file.
TEST(RunController, TheFirstExchangesAreTracedWithoutSecrets) {
  const std::string key = "sk-trace-secret-0123456789";
  auto cfg = concurrency(1, 4);
  cfg.api_key = key;
  Harness h(cfg, [key](std::uint64_t n, TimePoint) {
    Script s;
    s.tokens = 3;
    if (n == 1) {
      s.status = 401;
      s.error_body = R"({"error":{"message":"bad key )" + key + R"("}})";
    }
    return s;
  });
  const auto dir = std::filesystem::temp_directory_path() / ("llmload-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    HttpTraceLog log(dir / "http-trace.jsonl", 2, h.cfg.secrets());
    h.ctl->set_http_trace(&log);
    h.run();
    log.close();
    EXPECT_EQ(log.written(), 2u);
    EXPECT_FALSE(log.error());
  }
  std::ifstream in(dir / "http-trace.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    EXPECT_LT(longest_secret_fragment(line, key), kMinSecretFragment) << line;
    lines.push_back(nlohmann::json::parse(line));
  }
  std::filesystem::remove_all(dir);
  ASSERT_EQ(lines.size(), 2u);
  const auto& ok = lines[0];
  EXPECT_EQ(ok["request_index"], 0);
  EXPECT_EQ(ok["request"]["method"], "POST");
  EXPECT_NE(ok["request"]["body"].get<std::string>().find("\"model\""), std::string::npos);
  bool auth = false;
  for (const auto& f : ok["request"]["headers"]) {
    if (f[0] == "Authorization") auth = f[1] == "[redacted]";
  }
  EXPECT_TRUE(auth);
  EXPECT_EQ(ok["response"]["status"], 200);
  const auto& pieces = ok["response"]["body_pieces"];
  ASSERT_GE(pieces.size(), 3u);  // one read per token event, then the tail
  EXPECT_DOUBLE_EQ(pieces[0]["t_s"].get<double>(), 0.05);  // the first token, 50 ms after the send at 0
  for (std::size_t i = 1; i < pieces.size(); ++i) EXPECT_GE(pieces[i]["t_s"], pieces[i - 1]["t_s"]);
  EXPECT_NE(pieces[0]["bytes"].get<std::string>().find("data: "), std::string::npos);
  EXPECT_GE(ok["response"]["complete_s"].get<double>(), pieces.back()["t_s"].get<double>());
  const auto& refused = lines[1];
  EXPECT_EQ(refused["response"]["status"], 401);
  EXPECT_NE(refused["response"]["body_pieces"][0]["bytes"].get<std::string>().find("bad key ***"), std::string::npos);
}

}  // namespace
}  // namespace llmload

namespace llmload {
namespace {

// A byte-level BPE that spells the fake server's words: " wK" is "Ġw" + "K", two tokens.
std::unique_ptr<tokenizer::Tokenizer> fake_words_tokenizer() {
  nlohmann::json vocab = {{"Ġ", 0}, {"w", 1}, {"Ġw", 12}};
  for (int d = 0; d < 10; ++d) vocab[std::to_string(d)] = 2 + d;
  const nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false},
                 {"byte_fallback", false}, {"vocab", vocab}, {"merges", {"Ġ w"}}}}};
  return tokenizer::load_hf_tokenizer_json(j.dump());
}

// --tokenizer: a response without usage is counted from its text; with usage, the tokenizer's
// count goes beside the server's, and the difference is reported.
TEST(RunController, TheTokenizerCountsResponsesWithoutUsage) {
  const auto tok = fake_words_tokenizer();
  ASSERT_EQ(tok->count(" w0 w1"), 4u);
  for (const bool usage : {false, true}) {
    auto cfg = concurrency(1, 3);
    cfg.endpoint = ApiKind::kChat;
    Harness h(cfg, [usage](std::uint64_t, TimePoint) {
      Script s;
      s.send_usage = usage;
      s.chat = true;
      s.tokens = 6;  // " w0" ... " w5": 12 tokens for the tokenizer, 6 for the fake server
      return s;
    });
    h.ctl->set_tokenizer(tok.get());
    const auto m = h.run();
    EXPECT_FALSE(m.tokens_estimated);
    const auto records = h.ctl->records();
    ASSERT_EQ(records.size(), 3u);
    for (const auto& r : records) {
      EXPECT_EQ(r.tokens_from_usage, usage);
      EXPECT_EQ(r.tokens_from_tokenizer, !usage);
      EXPECT_EQ(r.output_tokens, usage ? 6 : 12);
      EXPECT_EQ(r.client_output_tokens, usage ? std::optional<std::int64_t>(12) : std::nullopt);
    }
    const auto acc = analysis::token_accounting(records);
    if (usage) {
      EXPECT_EQ(acc["client_vs_server"]["requests_differing"], 3);
      EXPECT_DOUBLE_EQ(acc["client_vs_server"]["relative_difference"].get<double>(), 1.0);
    } else {
      EXPECT_TRUE(acc["client_vs_server"].is_null());
      EXPECT_EQ(acc["requests_counted_by_tokenizer"], 3);
      EXPECT_FALSE(acc["estimated"].get<bool>());
    }
  }
}

}  // namespace
}  // namespace llmload
