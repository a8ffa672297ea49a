// requests.jsonl lines written straight from a record (record_line.hpp, issue 20): each line reads
// exactly as nlohmann::json prints the same object (sorted keys, its number and string forms,
// invalid UTF-8 replaced), every field carries the record's value, and a line read back by the
// merge's reader is the same line again.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/record_line.hpp"
#include "llmload/analysis/report.hpp"

namespace record_line_test {
namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;
using nlohmann::json;

std::string canonical(const std::string& line) {
  return json::parse(line).dump(-1, ' ', false, json::error_handler_t::replace);
}

// A record with every optional part set or not by the bits of `shape`, times from `rng` (whole
// milliseconds, fractions, sub-microsecond and large values: the number forms vary).
RequestRecord varied(std::uint32_t shape, std::mt19937_64& rng) {
  auto time = [&]() {
    switch (rng() % 4) {
      case 0: return Nanos(static_cast<std::int64_t>(rng() % 1000) * 1'000'000);
      case 1: return Nanos(static_cast<std::int64_t>(rng() % 100'000'000'000ULL));
      case 2: return Nanos(static_cast<std::int64_t>(rng() % 1000));
      default: return Nanos(static_cast<std::int64_t>(rng() % 1000) + 86'400'000'000'000LL);
    }
  };
  RequestRecord r;
  r.index = rng() % 1'000'000;
  r.warmup = shape & 1;
  r.in_window = shape & 2;
  r.t_intended = time();
  if (shape & 4) {
    r.t_send = r.t_intended + time();
    r.t_headers = *r.t_send + time();
    r.t_first = *r.t_headers + time();
    if (shape & 8) r.t_first_output = *r.t_first + time();
    r.t_last = *r.t_first + time();
    r.t_done = *r.t_last + time();
  }
  r.requested_input_tokens = static_cast<std::int64_t>(rng() % 5000);
  r.requested_output_tokens = static_cast<std::int64_t>(rng() % 5000);
  r.input_tokens = r.requested_input_tokens;
  r.output_tokens = static_cast<std::int64_t>(rng() % 5000);
  r.tokens_from_usage = shape & 16;
  r.tokens_from_tokenizer = !(shape & 16) && (shape & 32);
  if (shape & 64) r.client_output_tokens = r.output_tokens - 1;
  r.output_events = r.output_tokens / 2;
  if (shape & 128) r.cached_tokens = 64;
  if (shape & 256) {
    r.reasoning_tokens = 12;
    r.reasoning_tokens_source = "usage";
  }
  if (shape & 512) r.model = "lora-a";
  if (shape & 1024) r.finish_reason = "length";
  r.ended_early = shape & 2048;
  if (shape & 4096) {
    r.session = 3;
    r.turn = 2;
    r.stage = 1;
  }
  if (shape & 8192) {
    r.server_first_token_s = 0.0123456789;
    if (shape & 1) r.server_queue_s = 1e-7;
    if (shape & 2) r.server_last_token_s = 1.5;
  }
  if (shape & 16384) {
    r.grader = "regex:\\d+ \"quoted\"";
    r.grade = (shape & 1) ? Grade::kCorrect : Grade::kUnparsed;
    r.extracted = "42";
    r.subset = "algebra";
    r.reference = "forty-two";
    r.output_text = std::string("line one\nline \"two\"\t\x01 caf\xc3\xa9 \xf0\x9f\x99\x82 bad \xff\xfe end");
    r.server_tokens_from = (shape & 2) ? "token_ids" : "logprobs";
    r.server_tokens = (shape & 2) ? std::vector<std::string>{"1", "22", "333"} : std::vector<std::string>{"a", "\n"};
  }
  if (shape & 32768) {
    r.structured = "tools+json_schema";
    if (shape & 1) r.structured_verdict = "valid";
    if (shape & 2) r.structured_error = "missing \"sku\"";
    r.tool_call_names = {"get_weather", "search"};
    r.tool_call_arguments = {"{\"city\":\"Paris\"}"};
  }
  if (shape & 65536) {
    r.error = ErrorClass::kHttpStatus;
    r.http_status = 503;
    r.error_message = "upstream: \"busy\"";
  } else {
    r.http_status = 200;
  }
  return r;
}

TEST(RecordLine, ReadsExactlyAsTheJsonLibraryPrintsIt) {
  std::mt19937_64 rng(20);
  for (std::uint32_t shape = 0; shape < 131072; shape += 97) {
    const RequestRecord r = varied(shape, rng);
    const std::string line = record_line(r);
    ASSERT_EQ(line, canonical(line)) << "shape " << shape;
    EXPECT_EQ(line.find('\n'), std::string::npos);
  }
}

TEST(RecordLine, EveryFieldCarriesTheRecordsValue) {
  std::mt19937_64 rng(7);
  RequestRecord r = varied(0xFFFF & ~1u, rng);  // everything set, not warmup, a failed request
  r.error = ErrorClass::kHttpStatus;
  const json j = json::parse(record_line(r));
  EXPECT_EQ(j["index"], r.index);
  EXPECT_EQ(j["warmup"], false);
  EXPECT_EQ(j["in_window"], true);
  EXPECT_EQ(j["ok"], false);
  EXPECT_DOUBLE_EQ(j["t_intended_ms"].get<double>(), static_cast<double>(r.t_intended.count()) / 1e6);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), static_cast<double>(r.ttft()->count()) / 1e6);
  EXPECT_DOUBLE_EQ(j["ttfo_ms"].get<double>(), static_cast<double>(r.ttfo()->count()) / 1e6);
  EXPECT_DOUBLE_EQ(j["schedule_lag_ms"].get<double>(), static_cast<double>(r.schedule_lag()->count()) / 1e6);
  EXPECT_EQ(j["output_tokens"], r.output_tokens);
  EXPECT_EQ(j["output_tokens_source"], "usage");
  EXPECT_EQ(j["client_output_tokens"], r.output_tokens - 1);
  EXPECT_EQ(j["cached_tokens"], 64);
  EXPECT_EQ(j["reasoning_tokens"], 12);
  EXPECT_EQ(j["reasoning_tokens_source"], "usage");
  EXPECT_EQ(j["model"], "lora-a");
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["session"], 3);
  EXPECT_EQ(j["turn"], 2);
  EXPECT_EQ(j["stage"], 1);
  EXPECT_DOUBLE_EQ(j["server"]["first_token_s"].get<double>(), 0.0123456789);
  EXPECT_TRUE(j["server"]["queue_s"].is_null());
  EXPECT_EQ(j["server"]["last_token_s"], 1.5);
  EXPECT_EQ(j["grader"], "regex:\\d+ \"quoted\"");
  EXPECT_EQ(j["grade"], "unparsed");
  EXPECT_TRUE(j["extracted"].is_null()) << "nothing extracted from an unparsed answer";
  EXPECT_EQ(j["server_tokens"]["from"], "token_ids");
  EXPECT_EQ(j["server_tokens"]["tokens"], json::array({1, 22, 333}));
  EXPECT_EQ(j["structured"], "tools+json_schema");
  EXPECT_TRUE(j["structured_verdict"].is_null());
  EXPECT_EQ(j["structured_error"], "missing \"sku\"");
  ASSERT_EQ(j["tool_calls"].size(), 2u);
  EXPECT_EQ(j["tool_calls"][0]["arguments"], "{\"city\":\"Paris\"}");
  EXPECT_EQ(j["tool_calls"][1]["name"], "search");
  EXPECT_EQ(j["tool_calls"][1]["arguments"], "");
  EXPECT_EQ(j["http_status"], 200);
  EXPECT_EQ(j["error_class"], "http_status");
  // Text with control characters, quotes, emoji and invalid UTF-8: escaped and replaced as the
  // JSON library does.
  EXPECT_EQ(j["output_text"].get<std::string>().substr(0, 20), "line one\nline \"two\"\t");
  EXPECT_NE(j["output_text"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos) << "U+FFFD";
}

TEST(RecordLine, MissingMomentsAreNullAndAbsentPartsAreLeftOut) {
  RequestRecord r;
  r.t_intended = 1500us;
  r.error = ErrorClass::kConnect;
  const json j = json::parse(record_line(r));
  EXPECT_EQ(j["t_intended_ms"], 1.5);
  for (const char* k : {"t_send_ms", "t_first_ms", "t_last_ms", "ttft_ms", "tpot_ms", "e2e_ms", "finish_reason",
                        "client_output_tokens", "cached_tokens", "error"}) {
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  for (const char* k : {"model", "session", "stage", "server", "grader", "output_text", "server_tokens",
                        "structured", "tool_calls", "reasoning_tokens"}) {
    EXPECT_FALSE(j.contains(k)) << k;
  }
}

TEST(RecordLine, ExtraFieldsTakeTheirPlaceInKeyOrder) {
  RequestRecord r;
  r.index = 4;
  const ExtraLineField extra[] = {{"shard", 1}, {"global_index", 9}};
  const std::string line = record_line(r, extra);
  EXPECT_EQ(line, canonical(line));
  const json j = json::parse(line);
  EXPECT_EQ(j["shard"], 1);
  EXPECT_EQ(j["global_index"], 9);
  EXPECT_EQ(j["index"], 4);
}

TEST(RecordLine, ANonFiniteNumberIsNullAsTheLibraryWritesIt) {
  RequestRecord r;
  r.server_first_token_s = std::numeric_limits<double>::quiet_NaN();
  r.server_last_token_s = std::numeric_limits<double>::infinity();
  const std::string line = record_line(r);
  EXPECT_EQ(line, canonical(line));
  EXPECT_TRUE(json::parse(line)["server"]["first_token_s"].is_null());
}

TEST(RecordLine, ALineReadBackIsTheSameLine) {
  std::mt19937_64 rng(3);
  for (std::uint32_t shape = 0; shape < 131072; shape += 1031) {
    RequestRecord r = varied(shape, rng);
    r.output_text.reset();  // invalid UTF-8 does not come back as it went
    const std::string line = record_line(r);
    EXPECT_EQ(record_line(record_from_json(json::parse(line))), line) << "shape " << shape;
  }
}

TEST(RecordLine, RecordJsonIsTheLineParsed) {
  std::mt19937_64 rng(5);
  const RequestRecord r = varied(0x1F3F5, rng);
  EXPECT_EQ(record_json(r), json::parse(record_line(r)));
}

}  // namespace
}  // namespace record_line_test
