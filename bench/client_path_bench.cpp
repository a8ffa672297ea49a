// Micro-benchmarks of the client's per-token and per-request paths (issue 5), with prototypes of
// the proposed fixes, so that each fix's gain can be estimated before it is made in loadgen/.
// End-to-end numbers (the whole llmload process): bench/client_cpu.sh. Results and commands:
// docs/benchmarks.md, "Client cost (issue 5)".
//
//   ./build/bin/llmload_client_path_bench --benchmark_min_time=0.5
//
// Payloads are the exact bytes llmload-server sends (fixed model, chat, include_usage).
#include <benchmark/benchmark.h>

#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

#include "chunk_scan.hpp"  // the decoder's own scan (loadgen/src/core)

namespace {

using llmload::ApiKind;
using llmload::detail::scan_chunk;
using llmload::SseEvent;
using llmload::SseParser;

const std::string kRole =
    R"({"id":"chatcmpl-a706dd2f4d197e6fb382a305f4414f5e","object":"chat.completion.chunk","created":1795380330,)"
    R"("model":"llmload-mock","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
    R"("finish_reason":null}]})";
const std::string kToken =
    R"({"id":"chatcmpl-a706dd2f4d197e6fb382a305f4414f5e","object":"chat.completion.chunk","created":1795380330,)"
    R"("model":"llmload-mock","choices":[{"index":0,"delta":{"content":" of"},"logprobs":null,"finish_reason":null}]})";
const std::string kLastToken =
    R"({"id":"chatcmpl-a706dd2f4d197e6fb382a305f4414f5e","object":"chat.completion.chunk","created":1795380330,)"
    R"("model":"llmload-mock","choices":[{"index":0,"delta":{"content":" and"},"logprobs":null,)"
    R"("finish_reason":"length","stop_reason":null}],"llmload":{"arrival_unix_ns":1795380330891918700,)"
    R"("queue_s":0.0,"first_token_s":0.00014163,"last_token_s":0.000227468,"preemptions":0,"cached_tokens":0}})";
const std::string kUsage =
    R"({"id":"chatcmpl-a706dd2f4d197e6fb382a305f4414f5e","object":"chat.completion.chunk","created":1795380330,)"
    R"("model":"llmload-mock","choices":[],"usage":{"prompt_tokens":16,"completion_tokens":1,"total_tokens":17}})";

std::string sse(const std::string& payload) { return "data: " + payload + "\n\n"; }

// ---------------------------------------------------------------------------------------------
// Per token: one SSE event, as the paced case delivers it (one event per read).

// The decoder alone (nlohmann DOM parse of the chunk): what every output event costs today.
void BM_DecodeTokenChunk_Nlohmann(benchmark::State& state) {
  llmload::OpenAiStreamDecoder d(ApiKind::kChat);
  SseEvent ev{"", kToken, ""};
  for (auto _ : state) benchmark::DoNotOptimize(d.decode(ev));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeTokenChunk_Nlohmann);

// SSE framing of one event per feed (the parser's std::function, the moved-out data string).
void BM_SseFrameOneEvent(benchmark::State& state) {
  const std::string bytes = sse(kToken);
  SseParser p;
  for (auto _ : state) {
    p.feed(bytes, [](SseEvent&& e) { benchmark::DoNotOptimize(e.data.data()); });
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SseFrameOneEvent);

// The whole recorder path for one token: RequestTracker::on_body with one event (framing, decode,
// ChunkArrival push). 10,000 tokens per tracker, one on_body per token.
void BM_TrackerTokenPerRead(benchmark::State& state) {
  const std::string bytes = sse(kToken);
  const llmload::TimePoint t0{std::chrono::seconds(1)};
  std::int64_t tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    llmload::analysis::RequestRecord rec;
    llmload::RequestTracker tr(std::move(rec), t0, ApiKind::kChat, true);
    tr.on_sent(t0);
    tr.on_headers(t0, 200, "text/event-stream");
    state.ResumeTiming();
    for (int i = 0; i < 10000; ++i) tr.on_body(t0 + std::chrono::microseconds(i), bytes);
    tokens += 10000;
    benchmark::DoNotOptimize(tr.chunks().data());
  }
  state.SetItemsProcessed(tokens);
}
BENCHMARK(BM_TrackerTokenPerRead)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Prototype fix 1: decode OpenAI chunks without building a DOM (loadgen/src/core/chunk_scan.hpp, now used by llmload).

void BM_DecodeTokenChunk_FastScan(benchmark::State& state) {
  for (auto _ : state) {
    auto f = scan_chunk(kToken, ApiKind::kChat);
    if (!f || !f->output) state.SkipWithError("fast path declined a plain token chunk");
    benchmark::DoNotOptimize(f);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeTokenChunk_FastScan);

void BM_DecodeUsageChunk_FastScan(benchmark::State& state) {
  for (auto _ : state) {
    auto f = scan_chunk(kUsage, ApiKind::kChat);
    if (!f || !f->has_usage || f->completion_tokens != 1) state.SkipWithError("fast path declined a usage chunk");
    benchmark::DoNotOptimize(f);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeUsageChunk_FastScan);

// Prototype fix 1b (smaller change): keep nlohmann, but parse with a SAX handler that builds no
// DOM (no maps, no string nodes); it still lexes every string into nlohmann's token buffer.
struct ChunkSax : nlohmann::json_sax<nlohmann::json> {
  int depth = 0;
  bool output = false;
  std::string last_key;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& v) override {
    if (depth == 4 && last_key == "content" && !v.empty()) output = true;
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth;
    return true;
  }
  bool key(string_t& k) override {
    last_key = k;
    return true;
  }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth;
    return true;
  }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

void BM_DecodeTokenChunk_NlohmannSax(benchmark::State& state) {
  for (auto _ : state) {
    ChunkSax sax;
    bool ok = nlohmann::json::sax_parse(kToken, &sax);
    if (!ok || !sax.output) state.SkipWithError("sax did not see the output");
    benchmark::DoNotOptimize(sax.output);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeTokenChunk_NlohmannSax);

// ---------------------------------------------------------------------------------------------
// Per request.

llmload::ScenarioConfig chat_config(std::int64_t input_tokens) {
  llmload::ScenarioConfig cfg;
  cfg.endpoint = ApiKind::kChat;
  cfg.model = "llmload-mock";
  cfg.input_tokens = input_tokens;
  cfg.output_tokens = 1;
  cfg.stream = true;
  return cfg;
}

// RequestBuilder::build: prompt synthesis + nlohmann body + headers (today, per request).
void BM_RequestBuild(benchmark::State& state) {
  const auto cfg = chat_config(state.range(0));
  const llmload::RequestBuilder b(cfg, "", "127.0.0.1:8000");
  std::uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(b.build(i++));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestBuild)->Arg(16)->Arg(1024);

// The whole recorder for a 1-token response (what bench/client_cpu.sh's per-request run receives):
// tracker construction, headers, the 4 events (role+token in one read, usage, [DONE]), completion.
void BM_TrackerOneTokenRequest(benchmark::State& state) {
  const std::string first = sse(kRole) + sse(kLastToken);
  const std::string rest = sse(kUsage) + "data: [DONE]\n\n";
  const llmload::TimePoint t0{std::chrono::seconds(1)};
  for (auto _ : state) {
    llmload::analysis::RequestRecord rec;
    rec.requested_output_tokens = 1;
    llmload::RequestTracker tr(std::move(rec), t0, ApiKind::kChat, true);
    tr.on_sent(t0);
    tr.on_headers(t0, 200, "text/event-stream");
    tr.on_body(t0, first);
    tr.on_body(t0, rest);
    tr.on_complete(t0, llmload::TransportError{});
    benchmark::DoNotOptimize(tr.record().t_first);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrackerOneTokenRequest);

// Prototype fix 3: the body from a template. Everything but the prompt and the per-request fields
// is constant for a run, so it can be pre-serialized once and the prompt appended (escaped when it
// needs it; synthesized prompts are plain words). The body alone, today vs appended:
void BM_JsonBody_Nlohmann(benchmark::State& state) {
  const std::string prompt(static_cast<std::size_t>(state.range(0)) * 5, 'a');
  for (auto _ : state) {
    nlohmann::json body;
    body["model"] = "llmload-mock";
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
    body["max_tokens"] = 1;
    body["ignore_eos"] = true;
    body["min_tokens"] = 1;
    body["temperature"] = 0.0;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    std::string s = body.dump();
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JsonBody_Nlohmann)->Arg(16)->Arg(1024);

void BM_JsonBody_Append(benchmark::State& state) {
  const std::string prompt(static_cast<std::size_t>(state.range(0)) * 5, 'a');
  const std::string head = R"({"ignore_eos":true,"max_tokens":1,"messages":[{"content":")";
  const std::string tail =
      R"(","role":"user"}],"min_tokens":1,"model":"llmload-mock","stream":true,"stream_options":{"include_usage":true},"temperature":0.0})";
  for (auto _ : state) {
    std::string s;
    s.reserve(head.size() + prompt.size() + tail.size());
    s.append(head).append(prompt).append(tail);  // a real fix escapes the prompt (a scan when clean)
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JsonBody_Append)->Arg(16)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
