// The Prometheus text-format parser and its arithmetic (analysis/prometheus.hpp): real-format
// vLLM and SGLang expositions (written from the names, label layout and value spelling of
// vllm/v1/metrics/loggers.py + prometheus_client and sglang's collector.py), edge cases of the
// format, malformed input (a ParseError naming the line, never a crash), histogram_quantile as
// Prometheus computes it and deltas. The standard series, the artifact's JSON and the TTFT
// cross-check are in server_series_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "exposition_samples.hpp"
#include "llmload/analysis/prometheus.hpp"

namespace llmload::analysis::prom {
namespace {

using namespace test_samples;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ------------------------------------------------------------------------------- the parser

TEST(prometheus_parse, vllm_families_types_help_and_labels) {
  const Exposition e = parse_exposition(kVllmBefore);
  const Family* running = e.family("vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->type, MetricType::kGauge);
  EXPECT_EQ(running->help, "Number of requests in model execution batches.");
  ASSERT_EQ(running->samples.size(), 2u);
  EXPECT_EQ(*running->samples[1].label("engine"), "1");
  EXPECT_EQ(*running->samples[1].label("model_name"), "meta-llama/Llama-3.1-8B-Instruct");

  const Family* preempt = e.family("vllm:num_preemptions_total");
  ASSERT_NE(preempt, nullptr);
  EXPECT_EQ(preempt->type, MetricType::kCounter);
  EXPECT_EQ(e.family("vllm:num_preemptions_created")->type, MetricType::kGauge);

  const Family* ttft = e.family("vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, MetricType::kHistogram);
  EXPECT_EQ(ttft->samples.size(), 16u);  // 14 buckets + _count + _sum, all in the family
  EXPECT_EQ(ttft->samples.back().name, "vllm:time_to_first_token_seconds_sum");
  EXPECT_DOUBLE_EQ(ttft->samples.back().value, 0.6);

  EXPECT_DOUBLE_EQ(e.family("process_virtual_memory_bytes")->samples[0].value, 1.2345678e10);
  EXPECT_EQ(*e.family("python_info")->samples[0].label("version"), "3.12.3");
  EXPECT_EQ(e.families.size(), 13u);
  EXPECT_EQ(to_string(detect_flavor(e)), "vllm");
}

TEST(prometheus_parse, sglang_sum_before_buckets) {
  const Exposition e = parse_exposition(kSglang);
  EXPECT_EQ(detect_flavor(e), ServerFlavor::kSglang);
  const auto h = histogram(e, "sglang:time_to_first_token_seconds");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->le, (std::vector<double>{0.1, 0.2, 0.4, kInf}));
  EXPECT_EQ(h->cumulative, (std::vector<double>{100, 300, 400, 400}));
  EXPECT_DOUBLE_EQ(h->count, 400);
  EXPECT_DOUBLE_EQ(h->sum, 2.3518979474117756e+06);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "sglang:prompt_tokens_total"), 8128902.0);
}

TEST(prometheus_parse, label_value_and_help_escapes) {
  const Exposition e = parse_exposition(
      "# HELP m Line one\\nline two with a \\\\ backslash and a \\t kept\n"
      "# TYPE m gauge\n"
      "m{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",utf8=\"caf\xc3\xa9 \xe2\x9c\x93\"} 1\n");
  const Family* f = e.family("m");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->help, "Line one\nline two with a \\ backslash and a \\t kept");
  const Sample& s = f->samples.at(0);
  EXPECT_EQ(*s.label("path"), "C:\\dir");
  EXPECT_EQ(*s.label("quote"), "say \"hi\"");
  EXPECT_EQ(*s.label("nl"), "a\nb");
  EXPECT_EQ(*s.label("utf8"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(s.label("absent"), nullptr);
}

TEST(prometheus_parse, special_values_and_timestamps) {
  const Exposition e = parse_exposition(
      "a NaN\n"
      "b +Inf\n"
      "c -Inf\n"
      "d 1e+06 1712345678901\n"
      "e -0.5 -5\n"
      "f Inf\n"
      "g 3\n"
      "h .5e-3\n"
      "i +7\n"
      "j nan\n");
  auto v = [&](const char* n) { return e.family(n)->samples.at(0).value; };
  EXPECT_TRUE(std::isnan(v("a")));
  EXPECT_EQ(v("b"), kInf);
  EXPECT_EQ(v("c"), -kInf);
  EXPECT_DOUBLE_EQ(v("d"), 1e6);
  EXPECT_EQ(e.family("d")->samples[0].timestamp_ms, 1712345678901);
  EXPECT_DOUBLE_EQ(v("e"), -0.5);
  EXPECT_EQ(e.family("e")->samples[0].timestamp_ms, -5);
  EXPECT_EQ(v("f"), kInf);
  EXPECT_DOUBLE_EQ(v("g"), 3);
  EXPECT_FALSE(e.family("g")->samples[0].timestamp_ms);
  EXPECT_DOUBLE_EQ(v("h"), 0.0005);
  EXPECT_DOUBLE_EQ(v("i"), 7);
  EXPECT_TRUE(std::isnan(v("j")));
  EXPECT_EQ(e.family("a")->type, MetricType::kUntyped);
}

TEST(prometheus_parse, whitespace_crlf_blank_lines_comments_and_trailing_comma) {
  const Exposition e = parse_exposition(
      "\n"
      "# just a comment\n"
      "#another\n"
      "   \t\n"
      "# TYPE x counter\r\n"
      "x_total{a=\"1\",} 2\r\n"
      "x_total { a = \"2\" , b=\"3\" } \t 4   \n"
      "y{} 5\n"
      "  z\t6");  // no final newline
  // `x_total` is not the family `x` (a counter's samples carry the family's own name in 0.0.4).
  ASSERT_NE(e.family("x_total"), nullptr);
  EXPECT_EQ(e.family("x_total")->samples.size(), 2u);
  EXPECT_EQ(*e.family("x_total")->samples[1].label("b"), "3");
  EXPECT_DOUBLE_EQ(*sum_samples(e, "x_total"), 6);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "x_total", {{"a", "2"}}), 4);
  EXPECT_FALSE(sum_samples(e, "x_total", {{"a", "9"}}));
  EXPECT_TRUE(e.family("y")->samples[0].labels.empty());
  EXPECT_DOUBLE_EQ(e.family("z")->samples[0].value, 6);
  EXPECT_EQ(e.family("x")->type, MetricType::kCounter);
  EXPECT_TRUE(e.family("x")->samples.empty());
}

TEST(prometheus_parse, empty_and_comment_only_inputs) {
  EXPECT_TRUE(parse_exposition("").families.empty());
  EXPECT_EQ(parse_exposition("# hello\n\n# world\n").sample_count(), 0u);
  // HELP and TYPE alone declare a family without samples.
  const Exposition e = parse_exposition("# HELP q Some help\n# TYPE q gauge\n");
  ASSERT_EQ(e.families.size(), 1u);
  EXPECT_EQ(e.families[0].help, "Some help");
  EXPECT_EQ(e.sample_count(), 0u);
}

TEST(prometheus_parse, summary_and_interleaved_families) {
  const Exposition e = parse_exposition(
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 1\n"
      "s{quantile=\"0.99\"} 2\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 1\n"
      "s_sum 3\n"  // back to the summary: found by name
      "h_bucket{le=\"+Inf\"} 2\n"
      "h_count 2\n"
      "s_count 2\n"
      "h_sum 1.5\n");
  ASSERT_EQ(e.families.size(), 2u);
  EXPECT_EQ(e.family("s")->samples.size(), 4u);
  EXPECT_EQ(e.family("h")->samples.size(), 4u);
  const auto h = histogram(e, "h");
  ASSERT_TRUE(h);
  EXPECT_DOUBLE_EQ(h->count, 2);
  EXPECT_DOUBLE_EQ(*histogram_mean(*h), 0.75);
}

// Each malformed line gives a ParseError naming its line and the problem.
TEST(prometheus_parse, malformed_input_is_a_clear_error) {
  struct Case {
    std::string text;
    std::size_t line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"ok 1\nm\n", 2, "missing value"},
      {"m abc\n", 1, "not a number"},
      {"m 0x10\n", 1, "not a number"},
      {"m 1.2.3\n", 1, "not a number"},
      {"m{a=\"1} 2\n", 1, "unterminated"},
      {"m{a=\"1\n", 1, "unterminated"},
      {"m{a=\"\\x\"} 1\n", 1, "invalid escape"},
      {"m{a 1} 1\n", 1, "expected '='"},
      {"m{a=1} 1\n", 1, "double quotes"},
      {"m{a=\"1\" b=\"2\"} 1\n", 1, "expected ','"},
      {"m{a=\"1\"\n", 1, "not closed"},
      {"m{\"a\"=\"1\"} 1\n", 1, "expected a label name"},
      {"1m 2\n", 1, "expected a metric name"},
      {"m-x 2\n", 1, "invalid character"},
      {"m{a=\"1\",a=\"2\"} 1\n", 1, "appears twice"},
      {"m 1 2 3\n", 1, "after the timestamp"},
      {"m 1 1.5\n", 1, "timestamp"},
      {"# TYPE m blah\n", 1, "unknown type"},
      {"# TYPE m gauge extra\n", 1, "unexpected text"},
      {"# TYPE m gauge\n# TYPE m counter\n", 2, "second TYPE"},
      {"# HELP m a\n# HELP m b\n", 2, "second HELP"},
      {"# TYPE\n", 1, "without a metric name"},
      {"# TYPE h histogram\nh_bucket 1\n", 2, "no 'le' label"},
      {"# TYPE h histogram\nh_bucket{le=\"big\"} 1\n", 2, "not a number"},
      {"# TYPE s summary\ns 1\n", 2, "quantile"},
      {"<html><body>Not Found</body></html>\n", 1, "expected a metric name"},
      {"{\"detail\":\"Not Found\"}", 1, "expected a metric name"},
      {"a 1\nb 2\n\nc{x=\"1\"} 3 4 5\n", 4, "after the timestamp"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      (void)parse_exposition(c.text);
      ADD_FAILURE() << "parsed";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line " + std::to_string(c.line) + ":"), std::string::npos) << e.what();
    }
    std::string err;
    EXPECT_FALSE(try_parse_exposition(c.text, &err));
    EXPECT_FALSE(err.empty());
  }
}

// Every truncation and every single-byte corruption of a real exposition either parses or gives
// a ParseError: no crash, no other exception.
TEST(prometheus_parse, truncated_or_corrupted_input_never_crashes) {
  const std::string text = std::string(kVllmBefore).substr(0, 3000);
  std::size_t parsed = 0;
  std::size_t rejected = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    std::string err;
    (try_parse_exposition(std::string_view(text).substr(0, n), &err) ? parsed : rejected)++;
  }
  for (std::size_t i = 0; i < text.size(); i += 7) {
    for (char c : {'\0', '"', '\\', '{', '}', ' ', '\n', '\xff', '='}) {
      std::string t = text;
      t[i] = c;
      std::string err;
      (try_parse_exposition(t, &err) ? parsed : rejected)++;
    }
  }
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(rejected, 0u);
}

// ---------------------------------------------------------------------------- the arithmetic

TEST(prometheus_math, sums_and_means_over_label_sets) {
  const Exposition e = parse_exposition(kVllmAfter);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:num_requests_running"), 12);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:num_requests_running", {{"engine", "1"}}), 5);
  EXPECT_DOUBLE_EQ(*mean_samples(e, "vllm:kv_cache_usage_perc"), 0.375);
  EXPECT_DOUBLE_EQ(*sum_samples(e, "vllm:request_success_total"), 110);
  EXPECT_FALSE(sum_samples(e, "vllm:absent"));
  EXPECT_FALSE(mean_samples(e, "vllm:absent"));
  // NaN samples are skipped.
  const Exposition n = parse_exposition("g{a=\"1\"} NaN\ng{a=\"2\"} 4\n");
  EXPECT_DOUBLE_EQ(*sum_samples(n, "g"), 4);
  EXPECT_DOUBLE_EQ(*mean_samples(n, "g"), 4);
}

TEST(prometheus_math, delta_quantiles_and_mean_of_a_run) {
  const Exposition before = parse_exposition(kVllmBefore);
  const Exposition after = parse_exposition(kVllmAfter);
  const auto hb = histogram(before, "vllm:time_to_first_token_seconds");
  const auto ha = histogram(after, "vllm:time_to_first_token_seconds");
  ASSERT_TRUE(hb && ha);
  const auto d = histogram_delta(*hb, *ha);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->reset);
  EXPECT_DOUBLE_EQ(d->hist.count, 100);
  EXPECT_NEAR(d->hist.sum, 8.5, 1e-12);
  EXPECT_NEAR(*histogram_mean(d->hist), 0.085, 1e-12);
  // histogram_quantile by hand: p50 has rank 50 in (0.08, 0.1] holding 50 from cumulative 40:
  // 0.08 + 0.02 × 10/50; p90 (rank 90) is that bucket's top; p99 (rank 99) is 9/10 into
  // (0.1, 0.25].
  EXPECT_NEAR(histogram_quantile(0.5, d->hist), 0.084, 1e-12);
  EXPECT_NEAR(histogram_quantile(0.9, d->hist), 0.1, 1e-12);
  EXPECT_NEAR(histogram_quantile(0.99, d->hist), 0.235, 1e-12);
  EXPECT_DOUBLE_EQ(histogram_quantile(0.0, d->hist), 0.0);  // rank 0: the first bucket, from 0
  EXPECT_NEAR(histogram_quantile(1.0, d->hist), 0.25, 1e-12);
}

TEST(prometheus_math, histogram_quantile_edge_cases) {
  Histogram h;
  h.le = {1, 2, kInf};
  h.cumulative = {10, 10, 20};
  h.count = 20;
  // Rank in the first bucket: interpolated from 0.
  EXPECT_DOUBLE_EQ(histogram_quantile(0.25, h), 0.5);
  // Rank in +Inf: the largest finite bound.
  EXPECT_DOUBLE_EQ(histogram_quantile(0.99, h), 2);
  EXPECT_EQ(histogram_quantile(-0.1, h), -kInf);
  EXPECT_EQ(histogram_quantile(1.1, h), kInf);
  EXPECT_TRUE(std::isnan(histogram_quantile(std::nan(""), h)));

  Histogram empty;
  empty.le = {1, kInf};
  empty.cumulative = {0, 0};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, empty)));
  EXPECT_FALSE(histogram_mean(empty));

  Histogram only_inf;
  only_inf.le = {kInf};
  only_inf.cumulative = {5};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, only_inf)));

  Histogram no_inf;  // as given by hand: not a valid Prometheus histogram
  no_inf.le = {1, 2};
  no_inf.cumulative = {1, 2};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.5, no_inf)));

  Histogram negative;
  negative.le = {-1, 0, kInf};
  negative.cumulative = {5, 10, 10};
  EXPECT_DOUBLE_EQ(histogram_quantile(0.2, negative), -1);  // first bound <= 0: no interpolation
  EXPECT_DOUBLE_EQ(histogram_quantile(0.75, negative), -0.5);

  Histogram dip;  // non-monotonic (a delta of racing scrapes): made monotonic first
  dip.le = {1, 2, 3, kInf};
  dip.cumulative = {2, 1, 8, 8};  // taken as {2, 2, 8, 8}
  EXPECT_DOUBLE_EQ(histogram_quantile(0.5, dip), 2.0 + 2.0 / 6.0);
}

TEST(prometheus_math, delta_reset_and_incompatible_buckets) {
  Histogram a;
  a.le = {1, kInf};
  a.cumulative = {5, 10};
  a.sum = 7;
  a.count = 10;
  Histogram b = a;
  b.cumulative = {1, 2};
  b.sum = 1;
  b.count = 2;
  const auto d = histogram_delta(a, b);  // b has fewer: the server restarted
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->reset);
  EXPECT_DOUBLE_EQ(d->hist.count, 2);
  Histogram c = a;
  c.le = {2, kInf};
  EXPECT_FALSE(histogram_delta(a, c));
}

TEST(prometheus_math, histogram_without_inf_bucket_gets_one) {
  const Exposition e = parse_exposition(
      "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 5\nh_count 6\nh_sum 9\n");
  const auto h = histogram(e, "h");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->le.back(), kInf);
  EXPECT_DOUBLE_EQ(h->cumulative.back(), 6);
  EXPECT_FALSE(histogram(e, "absent"));
}
}  // namespace
}  // namespace llmload::analysis::prom
