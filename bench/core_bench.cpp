// Benchmarks of the load generator's hot paths: parsing a streamed response and recording
// latencies. Results and the command that reproduces them: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/record_line.hpp"
#include "llmload/analysis/stats.hpp"
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace {

std::string chat_stream(int tokens) {
  std::string s = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                  "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
  for (int i = 0; i < tokens; ++i) {
    s += fmt::format("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                     "\"model\":\"llmload-mock\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{}\"}},"
                     "\"finish_reason\":null}}]}}\n\n",
                     i);
  }
  s += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":256}}\n\ndata: [DONE]\n\n";
  return s;
}

// SSE framing only, fed in 1 KiB reads.
void BM_SseParse(benchmark::State& state) {
  const std::string s = chat_stream(256);
  std::size_t events = 0;
  for (auto _ : state) {
    llmload::SseParser p;
    for (std::size_t i = 0; i < s.size(); i += 1024) {
      p.feed(std::string_view(s).substr(i, 1024), [&](llmload::SseEvent&&) { ++events; });
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * s.size()));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SseParse);

// SSE framing plus JSON decoding of every event (what the recorder does per response).
void BM_SseParseAndDecode(benchmark::State& state) {
  const std::string s = chat_stream(256);
  std::size_t events = 0;
  for (auto _ : state) {
    llmload::SseParser p;
    llmload::OpenAiStreamDecoder d(llmload::ApiKind::kChat);
    for (std::size_t i = 0; i < s.size(); i += 1024) {
      p.feed(std::string_view(s).substr(i, 1024), [&](llmload::SseEvent&& e) {
        benchmark::DoNotOptimize(d.decode(e));
        ++events;
      });
    }
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SseParseAndDecode);

void BM_HdrRecord(benchmark::State& state) {
  llmload::analysis::HdrHistogram h(1, 3'600'000'000, 3);
  std::int64_t v = 1;
  for (auto _ : state) {
    h.record(v);
    v = (v * 1103515245 + 12345) & 0xFFFFFF;
  }
  benchmark::DoNotOptimize(h.total_count());
}
BENCHMARK(BM_HdrRecord);

// One requests.jsonl line of a finished streamed request, as the run journal writes it per
// request (a short request of 8 tokens against llmload-server, which reports its own times).
void BM_RecordLine(benchmark::State& state) {
  using llmload::analysis::Nanos;
  llmload::analysis::RequestRecord r;
  r.index = 12345;
  r.in_window = true;
  r.t_intended = Nanos(1'234'567'891);
  r.t_send = Nanos(1'234'601'234);
  r.t_headers = Nanos(1'234'912'345);
  r.t_first = Nanos(1'235'023'456);
  r.t_first_output = r.t_first;
  r.t_last = Nanos(1'235'634'567);
  r.t_done = Nanos(1'235'645'678);
  r.requested_input_tokens = r.input_tokens = 16;
  r.requested_output_tokens = r.output_tokens = 8;
  r.tokens_from_usage = true;
  r.client_output_tokens = 8;
  r.output_events = 8;
  r.model = "llmload-mock";
  r.finish_reason = "length";
  r.server_queue_s = 0.000012345;
  r.server_first_token_s = 0.000234567;
  r.server_last_token_s = 0.000834567;
  r.item = 4321;
  r.http_status = 200;
  std::string line;
  for (auto _ : state) {
    line.clear();
    llmload::analysis::append_record_line(line, r);
    benchmark::DoNotOptimize(line.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_RecordLine);

// The early-stopping bound for thousands of exceedances (a long run's p99 SLO check): target
// under 10 ms (it was a wall-clock assertion in stats_test.cpp until a loaded CI machine).
void BM_EarlyStoppingMinRequests(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(llmload::analysis::early_stopping_min_requests(state.range(0), 0.99, 0.99));
  }
}
BENCHMARK(BM_EarlyStoppingMinRequests)->Arg(10)->Arg(3000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
