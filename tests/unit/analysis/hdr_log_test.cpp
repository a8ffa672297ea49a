// .hlog writer (Java HistogramLogWriter's exact text) and strict reader.

#include "llmload/analysis/hdr_log.hpp"
#include "hdr_test_vectors.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

using llmload::analysis::format_fixed3;
using llmload::analysis::HdrCodecError;
using llmload::analysis::HdrHistogram;
using llmload::analysis::HlogWriter;
using llmload::analysis::read_hlog;

constexpr const char* kMixedBase64 = "HISTFAAAACt42pNpmSzMwMDAzQABzFCaEURcm7yEwf4DRICJnWXlXCam6a43WACTkweh";

using llmload::analysis::testing::mixed;

std::string read_error(const std::string& text) {
  std::istringstream in(text);
  try {
    (void)read_hlog(in);
  } catch (const HdrCodecError& e) {
    return e.what();
  }
  return "<read>";
}

const std::string kHeader =
    "#[Logged with t]\n#[Histogram log format version 1.3]\n#[StartTime: 1700000000.000 (seconds since epoch), x]\n"
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

TEST(hdr_log, FormatFixed3MatchesJavaFormatter) {
  // Values from Java String.format(Locale.US, "%.3f", v).
  EXPECT_EQ(format_fixed3(0.0625), "0.063");
  EXPECT_EQ(format_fixed3(1.0005), "1.001");  // printf gives 1.000
  EXPECT_EQ(format_fixed3(2.675), "2.675");
  EXPECT_EQ(format_fixed3(0.0005), "0.001");
  EXPECT_EQ(format_fixed3(-0.0001), "-0.000");
  EXPECT_EQ(format_fixed3(999.9995), "1000.000");
  EXPECT_EQ(format_fixed3(0.0), "0.000");
  EXPECT_EQ(format_fixed3(123.4), "123.400");
  EXPECT_EQ(format_fixed3(9.9996), "10.000");
  EXPECT_EQ(format_fixed3(1700000000.127), "1700000000.127");
  EXPECT_EQ(format_fixed3(1e20), "100000000000000000000.000");
  EXPECT_EQ(format_fixed3(5e-324), "0.000");
}

TEST(hdr_log, WritesJavaLayout) {
  std::ostringstream out;
  HlogWriter w(out);
  w.write_header("llmload 0.1.0", 1700000000.0);
  w.write_base_time(1700000000.0);
  w.write_legend();
  w.write_interval(mixed(), 0.127, 1.007, "ttft");
  w.write_interval(HdrHistogram(), 1.134, 1.0, std::nullopt, 1.0);
  const std::string expected =
      std::string("#[Logged with llmload 0.1.0]\n") +
      "#[Histogram log format version 1.3]\n"
      "#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\n"
      "#[BaseTime: 1700000000.000 (seconds since epoch)]\n"
      "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
      "Tag=ttft,0.127,1.007,2501902.335," +
      kMixedBase64 +
      "\n"
      "1.134,1.000,0.000,HISTFAAAAB942pNpmSzMwMDAyAABzFAazL82eQmD/QeoCABVgwSI\n";
  EXPECT_EQ(out.str(), expected);
}

TEST(hdr_log, WriterRejectsBadArguments) {
  std::ostringstream out;
  HlogWriter w(out);
  const HdrHistogram h;
  for (const char* tag : {"a,b", "a b", "a\nb", "a\rb", ""}) {
    EXPECT_THROW(w.write_interval(h, 0, 1, std::string_view(tag)), std::invalid_argument) << tag;
  }
  EXPECT_THROW(w.write_interval(h, 0, 1, {}, 0.0), std::invalid_argument);
  EXPECT_THROW(w.write_interval(h, std::nan(""), 1), std::invalid_argument);
  EXPECT_THROW(w.write_header("two\nlines", 0), std::invalid_argument);
  EXPECT_THROW(w.write_header("t", std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_EQ(out.str(), "");
}

TEST(hdr_log, WriteReadRoundTrip) {
  std::ostringstream out;
  HlogWriter w(out);
  w.write_header("llmload", 1700000000.5);
  w.write_base_time(1700000000.5);
  w.write_legend();
  HdrHistogram a = mixed();
  HdrHistogram b;
  for (std::int64_t v = 1; v < 1'000'000; v = v * 2 + 3) b.record(v, v % 7 + 1);
  w.write_interval(a, 0.0, 1.0, "ttft");
  w.write_interval(b, 0.0, 1.0, "e2e");
  w.write_interval(b, 1.0, 0.5);
  w.write_interval(HdrHistogram(), 1.5, 1.0, "ttft");

  std::istringstream in(out.str());
  const auto file = read_hlog(in);
  EXPECT_EQ(file.start_time_sec, 1700000000.5);
  EXPECT_EQ(file.base_time_sec, 1700000000.5);
  ASSERT_EQ(file.intervals.size(), 4u);
  EXPECT_EQ(file.intervals[0].tag, "ttft");
  EXPECT_EQ(file.intervals[1].tag, "e2e");
  EXPECT_EQ(file.intervals[2].tag, std::nullopt);
  EXPECT_EQ(file.intervals[3].tag, "ttft");
  EXPECT_EQ(file.intervals[0].histogram, a);
  EXPECT_EQ(file.intervals[1].histogram, b);
  EXPECT_EQ(file.intervals[2].histogram, b);
  EXPECT_EQ(file.intervals[3].histogram, HdrHistogram());
  EXPECT_EQ(file.intervals[2].start_sec, 1.0);
  EXPECT_EQ(file.intervals[2].length_sec, 0.5);
  EXPECT_EQ(file.intervals[0].max, 2501902.335);
  EXPECT_DOUBLE_EQ(file.intervals[2].histogram.start_time_ms, 1700000001.5e3);
  EXPECT_DOUBLE_EQ(file.intervals[2].histogram.end_time_ms, 1700000002.0e3);
}

TEST(hdr_log, DeducesBaseTimeLikeJava) {
  // Relative timestamps (more than a year before StartTime): base = StartTime.
  std::istringstream rel(kHeader + "0.500,1.000,0.000," + kMixedBase64 + "\n");
  const auto r = read_hlog(rel);
  EXPECT_EQ(r.base_time_sec, std::nullopt);
  EXPECT_DOUBLE_EQ(r.intervals.at(0).histogram.start_time_ms, 1700000000.5e3);
  // Absolute timestamps: base 0.
  std::istringstream abs(kHeader + "1700000003.000,1.000,0.000," + kMixedBase64 + "\n");
  EXPECT_DOUBLE_EQ(read_hlog(abs).intervals.at(0).histogram.start_time_ms, 1700000003e3);
}

TEST(hdr_log, AcceptsOtherWritersLayout) {
  // hdr-histogram-js leaves a blank line after StartTime; Windows tools write CRLF.
  const std::string text =
      "#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 2023]\r\n\r\n"
      "#[Histogram log format version 1.3]\r\n"
      "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\r\n"
      "Tag=a,0.000,1.000,2.500," +
      std::string(kMixedBase64) + "\r\n\n";
  std::istringstream in(text);
  const auto file = read_hlog(in);
  ASSERT_EQ(file.intervals.size(), 1u);
  EXPECT_EQ(file.intervals[0].histogram, mixed());
  EXPECT_EQ(file.intervals[0].tag, "a");
}

TEST(hdr_log, MalformedLinesNameTheLine) {
  const std::string ok = std::string("0.000,1.000,0.000,") + kMixedBase64 + "\n";
  // kHeader has 4 lines; `ok` is line 5; the bad line is line 6.
  const auto err = [&](const std::string& bad) { return read_error(kHeader + ok + bad + "\n"); };
  EXPECT_EQ(err("0.1,1.0,2.0").rfind("hlog line 6: expected 4 comma-separated fields", 0), 0u) << err("0.1,1.0,2.0");
  EXPECT_EQ(err("0.1,1.0,2.0,x,y").rfind("hlog line 6: expected 4", 0), 0u);
  EXPECT_EQ(err(std::string("abc,1.0,2.0,") + kMixedBase64).rfind("hlog line 6: start timestamp 'abc'", 0), 0u);
  EXPECT_EQ(err(std::string("0.1,,2.0,") + kMixedBase64).rfind("hlog line 6: interval length", 0), 0u);
  EXPECT_EQ(err(std::string("0.1,1.0,nan,") + kMixedBase64).rfind("hlog line 6: interval max", 0), 0u);
  EXPECT_EQ(err(std::string("0.1,1.0 ,2,") + kMixedBase64).rfind("hlog line 6: interval length", 0), 0u);
  EXPECT_EQ(err("0.1,1.0,2.0,HISTF!!!").rfind("hlog line 6: histogram: base64", 0), 0u);
  EXPECT_EQ(err("0.1,1.0,2.0,SGVsbG8=").rfind("hlog line 6: histogram: compressed histogram", 0), 0u);
  EXPECT_EQ(err("Tag=ttft").rfind("hlog line 6: tag without", 0), 0u);
  EXPECT_EQ(read_error("#[StartTime: soon (seconds since epoch)]\n").rfind("hlog line 1: StartTime", 0), 0u);
  EXPECT_EQ(read_error("\n\n#[BaseTime: ]\n").rfind("hlog line 3: BaseTime", 0), 0u);
  // Comments and the legend are not data; a data line with a truncated histogram is an error.
  std::string truncated = kMixedBase64;
  truncated.resize(truncated.size() - 4);
  EXPECT_EQ(err("0,1,2," + truncated).rfind("hlog line 6: histogram: compressed histogram", 0), 0u);
}

TEST(hdr_log, EmptyInputHasNoIntervals) {
  std::istringstream in("");
  const auto f = read_hlog(in);
  EXPECT_TRUE(f.intervals.empty());
  EXPECT_EQ(f.start_time_sec, std::nullopt);
}

}  // namespace
