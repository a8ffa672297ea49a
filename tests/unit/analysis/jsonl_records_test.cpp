// JsonlRecordSource (issue 20): a requests.jsonl read a record at a time gives what
// parse_records_jsonl gives for the same bytes, by the same rules and with the same errors.
#include "llmload/analysis/jsonl_records.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/report.hpp"

namespace llmload::analysis::jsonl_records_test {

std::string jsonl_line(std::uint64_t i) {
  RequestRecord r;
  r.index = i;
  r.in_window = true;
  r.t_intended = Nanos(static_cast<std::int64_t>(i) * 1'000'000);
  r.t_send = r.t_intended + Nanos(5'000);
  r.t_first = r.t_intended + Nanos(20'000'000);
  r.t_last = r.t_intended + Nanos(50'000'000);
  r.t_done = r.t_last;
  r.output_tokens = 8;
  r.model = i % 2 == 0 ? "base" : "adapter";
  return record_json(r).dump();
}

class JsonlFile {
 public:
  explicit JsonlFile(const std::string& text)
      // The process id too: ctest runs each test in a process of its own, in parallel, and every
      // process counts from 1.
      : path_(::testing::TempDir() + "jsonl_records_" + std::to_string(::getpid()) + "_" + std::to_string(++serial_) +
              ".jsonl") {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~JsonlFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int serial_ = 0;
  std::string path_;
};

std::vector<RequestRecord> read_all(const JsonlRecordSource& source) { return to_vector(RecordRange(source)); }

// The same records (by what the line holds) from both readers, and the same cut line.
void expect_same_as_parse(const std::string& text) {
  const RecordsFile whole = parse_records_jsonl(text);
  const JsonlFile f(text);
  const JsonlRecordSource source(f.path());
  EXPECT_EQ(source.cut_line(), whole.cut_line);
  ASSERT_EQ(source.size(), whole.records.size());
  const auto streamed = read_all(source);
  ASSERT_EQ(streamed.size(), whole.records.size());
  for (std::size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(record_json(streamed[i]), record_json(whole.records[i])) << i;
  }
}

TEST(JsonlRecords, TheSameRecordsAsTheWholeFileParse) {
  expect_same_as_parse(jsonl_line(0) + "\n" + jsonl_line(1) + "\n" + jsonl_line(2) + "\n");
  expect_same_as_parse(jsonl_line(0) + "\n\n   \n" + jsonl_line(1) + "\n");        // blank lines
  expect_same_as_parse(jsonl_line(0) + "\r\n" + jsonl_line(1) + "\r\n");           // CRLF
  expect_same_as_parse(jsonl_line(0) + "\n" + jsonl_line(1));                      // no final newline
  expect_same_as_parse(jsonl_line(0) + "\n" + jsonl_line(1) + "\n{\"index\": 2, \"t_int");  // cut
  expect_same_as_parse("");
}

TEST(JsonlRecords, ACutLastLineIsNamedAndLeftOut) {
  const JsonlFile f(jsonl_line(0) + "\n" + jsonl_line(1) + "\n{\"index\": 2, \"t_int");
  const JsonlRecordSource source(f.path());
  EXPECT_EQ(source.size(), 2u);
  ASSERT_TRUE(source.cut_line());
  EXPECT_EQ(*source.cut_line(), 3u);
}

TEST(JsonlRecords, ALineThatIsNotARecordIsTheSameErrorAsTheWholeFileParse) {
  for (const std::string& text : {jsonl_line(0) + "\nnot json\n" + jsonl_line(1) + "\n",
                                 jsonl_line(0) + "\n{\"index\": 1}\n"}) {
    std::string whole_error;
    try {
      parse_records_jsonl(text);
    } catch (const MergeError& e) {
      whole_error = e.what();
    }
    ASSERT_FALSE(whole_error.empty());
    EXPECT_EQ(whole_error.rfind("line 2", 0), 0u) << whole_error;
    const JsonlFile f(text);
    try {
      JsonlRecordSource source(f.path());
      ADD_FAILURE() << "no error for: " << text;
    } catch (const MergeError& e) {
      EXPECT_EQ(std::string(e.what()), whole_error);
    }
  }
  EXPECT_THROW(JsonlRecordSource("/nonexistent/requests.jsonl"), RecordFileError);
}

TEST(JsonlRecords, PassesMayRepeatAndNest) {
  std::string text;
  for (std::uint64_t i = 0; i < 50; ++i) text += jsonl_line(i) + "\n";
  const JsonlFile f(text);
  const JsonlRecordSource source(f.path());
  const RecordRange range(source);
  std::uint64_t outer = 0;
  for (const auto& r : range) {
    EXPECT_EQ(r.index, outer);
    if (outer == 10) {
      std::uint64_t inner = 0;
      for (const auto& q : range) EXPECT_EQ(q.index, inner++);
      EXPECT_EQ(inner, 50u);
    }
    ++outer;
  }
  EXPECT_EQ(outer, 50u);
  EXPECT_EQ(read_all(source).size(), 50u);
}

}  // namespace llmload::analysis::jsonl_records_test
