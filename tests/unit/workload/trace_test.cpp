// Trace replay: the public Azure and Mooncake samples, synthetic traces of the same formats,
// windowing, shared-prefix text, malformed input.

#include <time.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "subprocess.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using wltest::config_error;
using wltest::split_words;

const std::string kTraces = LLMLOAD_TRACES_DIR;
const std::string kAzure = kTraces + "/azure_llm_2023_code.csv";
const std::string kMooncake = kTraces + "/mooncake_conversation.jsonl";

// A missing sample fails its test with this message (gtest reports the exception), never a crash.
std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("test data file " + path +
                             " cannot be read: the trace samples live in data/traces/ of the repository (see its README)");
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// The test's own reading of an Azure row, independent of the library: timegm + fraction.
struct AzureRow {
  std::int64_t ts_ns;
  std::int64_t context;
  std::int64_t generated;
};

AzureRow read_azure_row(const std::string& line) {
  std::tm tm{};
  char frac[32] = {0};
  long long ctx = 0, gen = 0;
  const int n = std::sscanf(line.c_str(), "%d-%d-%d %d:%d:%d.%31[0-9],%lld,%lld", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac, &ctx, &gen);
  EXPECT_EQ(n, 9) << line;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::string digits = std::string(frac) + "000000000";
  const std::int64_t ns = std::stoll(digits.substr(0, 9));
  return {static_cast<std::int64_t>(timegm(&tm)) * 1'000'000'000 + ns, ctx, gen};
}

std::vector<AzureRow> read_azure(const std::string& path) {
  auto lines = file_lines(path);
  EXPECT_EQ(lines.front().rfind("TIMESTAMP", 0), 0U);
  std::vector<AzureRow> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) rows.push_back(read_azure_row(lines[i]));
  return rows;
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> rows;
  for (const auto& line : file_lines(path)) rows.push_back(json::parse(line));
  return rows;
}

WorkloadConfig trace_cfg(const std::string& path, double scale = 1.0) {
  WorkloadConfig cfg;
  cfg.dataset = "trace";
  cfg.trace_path = path;
  cfg.time_scale = scale;
  return cfg;
}

std::unique_ptr<Workload> load(const WorkloadConfig& cfg, std::optional<std::uint64_t> max = std::nullopt,
                               const TokenModel& tokens = TokenModel::builtin()) {
  return make_workload(cfg, 0, 0, max, 17, tokens);
}

Nanos scaled(std::int64_t ns, double scale) {
  return Nanos(std::llround(static_cast<double>(ns) / scale));
}

// --- timestamps and detection -------------------------------------------------------------------

TEST(AzureTimestamp, ParsesToNanosecondsSinceEpoch) {
  EXPECT_EQ(parse_azure_timestamp("1970-01-01 00:00:01.5"), 1'500'000'000);
  EXPECT_EQ(parse_azure_timestamp("1970-01-02T00:00:00"), 86'400'000'000'000);
  EXPECT_EQ(parse_azure_timestamp("2023-11-16 18:17:03.9799600"),
            read_azure_row("2023-11-16 18:17:03.9799600,1,1").ts_ns);
  EXPECT_EQ(parse_azure_timestamp("2000-03-01 00:00:00.123456789123"),
            read_azure_row("2000-03-01 00:00:00.123456789,1,1").ts_ns)
      << "digits past the ninth are dropped";
  for (const char* bad : {"", "2023-13-01 00:00:00", "2023-11-16 18:17", "2023-11-16 18:17:03.",
                          "2023-11-16 18:17:03.12x", "2023/11/16 18:17:03", "2023-11-16 25:00:00", "abc"}) {
    EXPECT_FALSE(parse_azure_timestamp(bad).has_value()) << bad;
  }
}

TEST(TraceDetection, FromTheFirstNonBlankLine) {
  EXPECT_EQ(detect_trace_format("\n\nTIMESTAMP,ContextTokens,GeneratedTokens\n", "f"), TraceFormat::kAzure);
  EXPECT_EQ(detect_trace_format("2023-11-16 18:17:03.9,10,2\n", "f"), TraceFormat::kAzure);
  EXPECT_EQ(detect_trace_format("  {\"timestamp\": 0}\n", "f"), TraceFormat::kMooncake);
  const std::string msg = config_error([] { detect_trace_format("time;in;out\n", "odd.txt"); });
  EXPECT_NE(msg.find("odd.txt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--trace-format"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Azure"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Mooncake"), std::string::npos) << msg;
  EXPECT_NE(config_error([] { detect_trace_format("\n  \n", "empty.csv"); }).find("empty"), std::string::npos);
}

// --- the public samples -------------------------------------------------------------------------

TEST(AzureSample, EveryRowWithItsLengthsAndArrival) {
  const auto rows = read_azure(kAzure);
  ASSERT_GT(rows.size(), 1000U);
  for (const double scale : {1.0, 2.5}) {
    const auto w = load(trace_cfg(kAzure, scale));
    ASSERT_EQ(w->size(), std::optional<std::uint64_t>(rows.size()));
    EXPECT_TRUE(w->timed());
    EXPECT_EQ(w->describe()["format"], "azure");
    Nanos prev(0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const WorkItem it = w->item(i);
      ASSERT_EQ(it.input_tokens, rows[i].context) << i;
      ASSERT_EQ(it.output_tokens, rows[i].generated) << i;
      ASSERT_EQ(it.arrival, scaled(rows[i].ts_ns - rows[0].ts_ns, scale)) << i;
      ASSERT_GE(*it.arrival, prev) << i;
      prev = *it.arrival;
      if (i % 50 == 0) {
        ASSERT_EQ(static_cast<std::int64_t>(split_words(it.prompt).size()), rows[i].context) << i;
      }
    }
  }
}

TEST(AzureSample, WindowAndMaxItems) {
  const auto rows = read_azure(kAzure);
  WorkloadConfig cfg = trace_cfg(kAzure);
  cfg.trace_start = 180s;  // the sample has no requests between ~1 and 3 minutes
  cfg.trace_duration = 300s;
  std::vector<std::size_t> expected;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int64_t off = rows[i].ts_ns - rows[0].ts_ns;
    if (off >= 180'000'000'000 && off < 480'000'000'000) expected.push_back(i);
  }
  ASSERT_GT(expected.size(), 100U);
  const auto w = load(cfg);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(expected.size()));
  const std::int64_t t0 = rows[expected.front()].ts_ns;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const WorkItem it = w->item(k);
    ASSERT_EQ(it.input_tokens, rows[expected[k]].context);
    ASSERT_EQ(it.arrival, Nanos(rows[expected[k]].ts_ns - t0)) << "relative to the first kept request";
  }
  const auto capped = load(cfg, 100);
  ASSERT_EQ(capped->size(), std::optional<std::uint64_t>(100));
  for (std::uint64_t k = 0; k < 100; ++k) ASSERT_EQ(capped->item(k).prompt, w->item(k).prompt);
  const json d = w->describe();
  EXPECT_EQ(d["requests"], expected.size());
  EXPECT_DOUBLE_EQ(d["window"]["start_s"].get<double>(), 180.0);
}

TEST(MooncakeSample, EveryRowWithItsLengthsAndArrival) {
  const auto rows = read_jsonl(kMooncake);
  ASSERT_GT(rows.size(), 1000U);
  for (const double scale : {1.0, 2.0}) {
    const auto w = load(trace_cfg(kMooncake, scale));
    ASSERT_EQ(w->size(), std::optional<std::uint64_t>(rows.size()));
    EXPECT_EQ(w->describe()["format"], "mooncake");
    const std::int64_t t0 = rows[0]["timestamp"].get<std::int64_t>();
    Nanos prev(0);
    // Every row at scale 1; every 10th at scale 2 (prompts average 12k words: keep the test quick).
    const std::size_t stride = scale == 1.0 ? 1 : 10;
    for (std::size_t i = 0; i < rows.size(); i += stride) {
      const WorkItem it = w->item(i);
      ASSERT_EQ(it.input_tokens, rows[i]["input_length"].get<std::int64_t>()) << i;
      ASSERT_EQ(it.output_tokens, rows[i]["output_length"].get<std::int64_t>()) << i;
      ASSERT_EQ(it.arrival, scaled((rows[i]["timestamp"].get<std::int64_t>() - t0) * 1'000'000, scale)) << i;
      ASSERT_GE(*it.arrival, prev);
      prev = *it.arrival;
      ASSERT_EQ(it.prefix_group, rows[i]["hash_ids"][0].get<std::int64_t>());
      if (scale == 1.0 && i % 25 == 0) {
        ASSERT_EQ(static_cast<std::int64_t>(split_words(it.prompt).size()), rows[i]["input_length"].get<std::int64_t>())
            << i;
      }
    }
  }
}

// The first `words` words of a prompt, as text.
std::string first_words(const std::string& prompt, std::size_t words) {
  std::size_t pos = 0;
  for (std::size_t k = 0; k < words; ++k) {
    pos = prompt.find(' ', pos);
    if (pos == std::string::npos) return prompt;
    ++pos;
  }
  return prompt.substr(0, pos - 1);
}

TEST(MooncakeSample, EqualLeadingHashIdsShareByteIdenticalPrefixes) {
  const auto rows = read_jsonl(kMooncake);
  const auto w = load(trace_cfg(kMooncake));
  constexpr std::size_t kBlock = 512;
  int shared_pairs = 0;
  int diverging_pairs = 0;
  const std::size_t n = std::min<std::size_t>(rows.size(), 120);
  std::vector<std::string> prompts;
  for (std::size_t i = 0; i < n; ++i) prompts.push_back(w->item(i).prompt);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      const auto& ha = rows[a]["hash_ids"];
      const auto& hb = rows[b]["hash_ids"];
      std::size_t k = 0;
      while (k < ha.size() && k < hb.size() && ha[k] == hb[k]) ++k;
      const auto wa = static_cast<std::size_t>(rows[a]["input_length"].get<std::int64_t>());
      const auto wb = static_cast<std::size_t>(rows[b]["input_length"].get<std::int64_t>());
      // Only whole shared blocks, and a next block that both requests have in full.
      if (k == 0 || k >= ha.size() || k >= hb.size() || wa < (k + 1) * kBlock || wb < (k + 1) * kBlock) continue;
      ASSERT_EQ(first_words(prompts[a], k * kBlock), first_words(prompts[b], k * kBlock)) << a << " " << b;
      ASSERT_EQ(prompts[a].compare(0, first_words(prompts[a], k * kBlock).size() + 1, prompts[b], 0,
                                   first_words(prompts[b], k * kBlock).size() + 1),
                0)
          << "the separating space is shared too";
      ++shared_pairs;
      const auto block_a = split_words(first_words(prompts[a], (k + 1) * kBlock));
      const auto block_b = split_words(first_words(prompts[b], (k + 1) * kBlock));
      if (!std::equal(block_a.begin() + static_cast<std::ptrdiff_t>(k * kBlock), block_a.end(),
                      block_b.begin() + static_cast<std::ptrdiff_t>(k * kBlock))) {
        ++diverging_pairs;
      }
    }
  }
  EXPECT_GT(shared_pairs, 10);
  EXPECT_EQ(diverging_pairs, shared_pairs) << "different hash ids give different blocks";
  const json d = w->describe()["shared_prefix"];
  EXPECT_GT(d["reused_block_fraction"].get<double>(), 0.0);
  EXPECT_LT(d["distinct_hash_blocks"].get<std::int64_t>(), d["hash_block_refs"].get<std::int64_t>());
}

// --- synthetic traces ---------------------------------------------------------------------------

class SyntheticTrace : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& content) {
    const std::string p = dir_.file(name);
    wltest::write_text(p, content);
    return p;
  }
  std::string error(const std::string& name, const std::string& content, const std::string& format = "") {
    WorkloadConfig cfg = trace_cfg(write(name, content));
    cfg.trace_format = format;
    return config_error([&] { load(cfg); });
  }
  testing::TempDir dir_;
};

TEST_F(SyntheticTrace, AzureUnsortedRowsAreOrderedStably) {
  const std::string p = write("a.csv",
                              "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                              "2024-05-10 00:00:02.0000000,20,2\n"
                              "2024-05-10 00:00:01.0000000,10,1\n"
                              "2024-05-10 00:00:02.0000000,21,3\n"
                              "2024-05-10 00:00:01.5,15,0\n");
  const auto w = load(trace_cfg(p));
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(4));
  const std::vector<std::int64_t> inputs = {10, 15, 20, 21};
  const std::vector<Nanos> arrivals = {0ms, 500ms, 1000ms, 1000ms};
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(w->item(i).input_tokens, inputs[i]) << i;
    EXPECT_EQ(w->item(i).arrival, arrivals[i]) << i;
  }
  EXPECT_EQ(w->item(1).output_tokens, 1) << "a length of 0 is sent as 1";
  const json d = w->describe();
  EXPECT_EQ(d["rows_were_in_time_order"], false);
  EXPECT_EQ(d["lengths_raised_to_1"], 1);
}

TEST_F(SyntheticTrace, AzureWithoutHeaderAndExplicitFormat) {
  const std::string p = write("noheader.csv", "2024-05-10 00:00:00,5,6\n2024-05-10 00:00:03,7,8\n");
  const auto w = load(trace_cfg(p));
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(2));
  EXPECT_EQ(w->item(1).arrival, Nanos(3s));
  WorkloadConfig cfg = trace_cfg(p);
  cfg.trace_format = "azure";
  EXPECT_EQ(load(cfg)->size(), std::optional<std::uint64_t>(2));
  WorkloadConfig via_dataset_path = trace_cfg("");
  via_dataset_path.dataset_path = p;
  EXPECT_EQ(load(via_dataset_path)->size(), std::optional<std::uint64_t>(2)) << "--dataset-name trace --dataset-path";
  EXPECT_NE(config_error([] { load(trace_cfg("")); }).find("--trace"), std::string::npos);
  cfg.trace_format = "csv";
  const std::string msg = config_error([&] { load(cfg); });
  EXPECT_NE(msg.find("\"csv\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("mooncake"), std::string::npos) << msg;
}

TEST_F(SyntheticTrace, MooncakeWithLateStartAndFractionalMilliseconds) {
  const std::string p = write("m.jsonl",
                              "{\"timestamp\": 5000, \"input_length\": 6, \"output_length\": 2, \"hash_ids\": [9]}\n"
                              "{\"timestamp\": 5000.5, \"input_length\": 3, \"output_length\": 4}\n"
                              "\n"
                              "{\"timestamp\": 7000, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": []}\n");
  const auto w = load(trace_cfg(p, 0.5));
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(3));
  EXPECT_EQ(w->item(0).arrival, Nanos(0));
  EXPECT_EQ(w->item(1).arrival, Nanos(1ms));  // 0.5 ms at half speed
  EXPECT_EQ(w->item(2).arrival, Nanos(4s));
  EXPECT_EQ(w->item(0).prefix_group, 9);
  EXPECT_FALSE(w->item(1).prefix_group.has_value()) << "no hash_ids: no shared prefix";
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(static_cast<std::int64_t>(split_words(w->item(i).prompt).size()), w->item(i).input_tokens);
  }
}

// Issue 16: a key given twice in a trace row (last wins in JSON readers) is refused, naming the row.
TEST_F(SyntheticTrace, MooncakeRowWithAKeyGivenTwiceIsRefused) {
  const std::string p = write("dup.jsonl",
                              "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 1}\n"
                              "{\"timestamp\": 1, \"input_length\": 6, \"input_length\": 60, \"output_length\": 1}\n");
  const std::string msg = config_error([&] { load(trace_cfg(p)); });
  EXPECT_NE(msg.find("dup.jsonl:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"input_length\" is given twice"), std::string::npos) << msg;
}

TEST_F(SyntheticTrace, MooncakeBlocksAreSharedAndCutBlocksArePrefixes) {
  const std::string p = write("blocks.jsonl",
                              "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                              "{\"timestamp\": 1, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [1, 3]}\n"
                              "{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                              "{\"timestamp\": 3, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n");
  WorkloadConfig cfg = trace_cfg(p);
  cfg.trace_block_tokens = 4;
  const auto w = load(cfg);
  const std::string a = w->item(0).prompt, b = w->item(1).prompt, c = w->item(2).prompt, d = w->item(3).prompt;
  EXPECT_EQ(split_words(a).size(), 8U);
  EXPECT_EQ(split_words(b).size(), 6U);
  EXPECT_EQ(first_words(a, 4), first_words(b, 4));
  EXPECT_NE(first_words(a, 5), first_words(b, 5)) << "hash 2 and hash 3 differ";
  EXPECT_EQ(a.rfind(c + " ", 0), 0U) << "a cut block is a prefix of the full block";
  EXPECT_EQ(first_words(d, 4), first_words(a, 4));
  EXPECT_EQ(split_words(d).size(), 10U) << "words past the listed blocks are the request's own";

  // Overhead comes off the end: the shared blocks stay whole.
  TokenModel with_overhead = TokenModel::builtin();
  with_overhead.overhead = 2;
  const auto w2 = load(cfg, std::nullopt, with_overhead);
  EXPECT_EQ(w2->item(0).input_tokens, 8);
  EXPECT_EQ(split_words(w2->item(0).prompt).size(), 6U);
  EXPECT_EQ(a.rfind(w2->item(0).prompt + " ", 0), 0U);
}

TEST_F(SyntheticTrace, MalformedLinesNameFileAndLine) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string row = "2024-05-10 00:00:00.1,5,6\n";
  struct Case {
    std::string content;
    std::string format;
    std::string line;
  };
  const std::vector<Case> cases = {
      {header + row + "2024-05-10 00:00:01,abc,6\n", "", ":3:"},
      {header + row + row + "2024-05-10 00:00:01,5\n", "", ":4:"},
      {header + row + "2024-05-10 00:00:01,5,6,7\n", "", ":3:"},
      {header + row + "yesterday,5,6\n", "", ":3:"},
      {header + row + "2024-05-10 00:00:01,-5,6\n", "", ":3:"},
      {"TIMESTAMP,Tokens,Other\n" + row, "", ":1:"},
      {"{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{not json\n", "", ":2:"},
      {"{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1, \"output_length\": 1}\n",
       "", ":2:"},
      {"{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, -2]}\n", "", ":1:"},
      {"{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 1}\n", "", ":1:"},
      {"{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 1}\n", "", ":1:"},
      {row + "{\"timestamp\": 0}\n", "", ":2:"},
      {row, "mooncake", ":1:"},
  };
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const std::string name = "bad" + std::to_string(k) + ".txt";
    const std::string msg = error(name, cases[k].content, cases[k].format);
    EXPECT_NE(msg.find(name + cases[k].line), std::string::npos) << cases[k].content << " → " << msg;
    EXPECT_NE(msg.find("expected"), std::string::npos) << "shows the format: " << msg;
  }
}

TEST_F(SyntheticTrace, EmptyTracesAndWindowsAreErrors) {
  EXPECT_NE(error("h.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n").find("no requests"), std::string::npos);
  EXPECT_NE(error("e.csv", "").find("empty"), std::string::npos);

  WorkloadConfig cfg = trace_cfg(write("w.csv", "2024-05-10 00:00:00,5,6\n2024-05-10 00:00:10,7,8\n"));
  cfg.trace_start = 20s;
  const std::string msg = config_error([&] { load(cfg); });
  EXPECT_NE(msg.find("no requests in the window"), std::string::npos) << msg;
  cfg.trace_start = 5s;
  const auto w = load(cfg);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(1));
  EXPECT_EQ(w->item(0).input_tokens, 7);
  EXPECT_EQ(w->item(0).arrival, Nanos(0));
  cfg.trace_start = 0s;
  cfg.trace_duration = 10s;
  EXPECT_EQ(load(cfg)->size(), std::optional<std::uint64_t>(1)) << "the window is half-open";

  WorkloadConfig missing = trace_cfg(dir_.file("absent.csv"));
  EXPECT_NE(config_error([&] { load(missing); }).find("absent.csv"), std::string::npos);
  WorkloadConfig bad_block = cfg;
  bad_block.trace_block_tokens = 0;
  EXPECT_NE(config_error([&] { load(bad_block); }).find("trace_block_tokens"), std::string::npos);
}

}  // namespace
}  // namespace llmload
