// Issue 20 ("flat memory"), the report side: a run's report reads requests.jsonl through
// JsonlRecordSource (RunArtifact::records) and renders exactly what the same records held in
// memory render; copies of an artifact keep their records; errors name the file and line. Also
// the edge cases of the line rules beyond jsonl_records_test.cpp (lone \r, blank or CRLF cut last
// lines, each error message) and a file that grows, changes or goes after it was counted.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/analysis/report.hpp"

namespace jsonl_report_test {

namespace fs = std::filesystem;
using namespace llmload::analysis;
using namespace std::chrono_literals;

// A directory of its own (process id and a counter: parallel test processes never share one),
// removed at the end.
class ReportScratchDir {
 public:
  ReportScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / fmt::format("llmload-jsonl-report-{}-{}", ::getpid(), counter.fetch_add(1));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ReportScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ReportScratchDir(const ReportScratchDir&) = delete;
  ReportScratchDir& operator=(const ReportScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_report_bytes(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << p;
}

// Request i of a short run: the first two warmup, every 7th failed, the rest successful.
RequestRecord report_record(std::uint64_t i) {
  RequestRecord r;
  r.index = i;
  r.item = i;
  r.warmup = i < 2;
  r.in_window = !r.warmup && i < 38;
  r.t_intended = std::chrono::duration_cast<Nanos>(i * 25ms);
  r.t_send = r.t_intended + 150us;
  r.requested_input_tokens = 100;
  r.requested_output_tokens = 20;
  r.input_tokens = 100;
  if (i % 7 == 6) {
    r.t_done = *r.t_send + 3ms;
    r.http_status = 503;
    r.error = ErrorClass::kHttpStatus;
    r.error_message = "overloaded";
  } else {
    r.t_headers = *r.t_send + 2ms;
    r.t_first = *r.t_send + std::chrono::duration_cast<Nanos>(std::chrono::microseconds(20'000 + 731 * i));
    r.t_first_output = r.t_first;
    r.t_last = *r.t_first + 19 * 4ms;
    r.t_done = *r.t_last + 1ms;
    r.output_tokens = 20;
    r.output_events = 20;
    r.tokens_from_usage = true;
    r.finish_reason = "length";
    r.http_status = 200;
  }
  return r;
}

std::string report_line(std::uint64_t i) { return record_json(report_record(i)).dump(); }

// One pass over a range, each record as its requests.jsonl line (RequestRecord has no ==).
std::vector<std::string> range_lines(const RecordRange& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(record_json(r).dump());
  return out;
}

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

TEST(JsonlReport, LineRulesEdgeCasesMatchTheWholeFileParse) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  const std::vector<std::string> texts = {
      "\n" + report_line(0) + "\n  \t\n" + report_line(1) + "\n\r\n\n" + report_line(2) + "\n \n",  // blanks, lone \r
      report_line(0) + "\r\n" + report_line(1).substr(0, 10) + "\r",  // cut last line, CRLF
      report_line(0) + "\n  ",                                          // unterminated blank last line
      "\n\r\n \n",                                                       // blanks only
      report_line(0) + "\n" + report_line(1) + "\n\n" + report_line(2).substr(0, 40),  // cut after a blank
  };
  for (const auto& text : texts) {
    SCOPED_TRACE(text);
    write_report_bytes(p, text);
    const RecordsFile whole = parse_records_jsonl(text);
    const JsonlRecordSource source(p.string());
    EXPECT_EQ(source.size(), whole.records.size());
    EXPECT_EQ(source.cut_line(), whole.cut_line);
    std::vector<std::string> expected;
    for (const auto& r : whole.records) expected.push_back(record_json(r).dump());
    EXPECT_EQ(range_lines(RecordRange(source)), expected);
    EXPECT_EQ(range_lines(RecordRange(source)), expected);  // and again
  }
}

TEST(JsonlReport, EveryErrorMessageMatchesTheWholeFileParse) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  nlohmann::json no_index = record_json(report_record(1));
  no_index.erase("index");
  nlohmann::json bad_warmup = record_json(report_record(1));
  bad_warmup["warmup"] = "no";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {report_line(0) + "\n{not json\n" + report_line(2) + "\n", "line 2 is not valid JSON"},
      {report_line(0) + "\n\n" + report_line(1).substr(0, 30) + "\n", "line 3 is not valid JSON"},  // cut, not last
      {report_line(0) + "\r\n" + no_index.dump() + "\r\n", "line 2: missing \"index\""},
      {"\n\n" + bad_warmup.dump() + "\n", "line 3: \"warmup\" is not true or false"},
      {"[1, 2]\n", "line 1: not a JSON object"},
      {report_line(0) + "\n42", "line 2: not a JSON object"},  // unterminated but JSON: not a cut line
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(message);
    write_report_bytes(p, text);
    std::string whole_error, source_error;
    try {
      parse_records_jsonl(text);
    } catch (const MergeError& e) {
      whole_error = e.what();
    }
    try {
      JsonlRecordSource source(p.string());
    } catch (const MergeError& e) {
      source_error = e.what();
    }
    EXPECT_EQ(whole_error, message);
    EXPECT_EQ(source_error, message);
  }
  try {
    JsonlRecordSource source((dir.path() / "nothing.jsonl").string());
    ADD_FAILURE() << "no error for a missing file";
  } catch (const RecordFileError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing.jsonl: cannot be read"), std::string::npos) << e.what();
  }
}

TEST(JsonlReport, AFileThatGrewGivesTheRecordsCounted) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  write_report_bytes(p, report_line(0) + "\n" + report_line(1) + "\n");
  const JsonlRecordSource source(p.string());
  {
    std::ofstream more(p, std::ios::binary | std::ios::app);
    more << report_line(2) << "\n" << report_line(3) << "\n";
  }
  EXPECT_EQ(source.size(), 2U);
  EXPECT_EQ(range_lines(RecordRange(source)), (std::vector<std::string>{report_line(0), report_line(1)}));
}

TEST(JsonlReport, AFileChangedOrGoneSinceItWasReadIsAnErrorNamingIt) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  write_report_bytes(p, report_line(0) + "\n" + report_line(1) + "\n");
  const JsonlRecordSource source(p.string());
  write_report_bytes(p, report_line(0) + "\n{oops\n");
  try {
    for (const auto& r : RecordRange(source)) (void)r;
    ADD_FAILURE() << "no error";
  } catch (const RecordFileError& e) {
    EXPECT_EQ(std::string(e.what()), p.string() + ": line 2 is not valid JSON (the file changed after it was first read)");
  }
  fs::remove(p);
  try {
    for (const auto& r : RecordRange(source)) (void)r;
    ADD_FAILURE() << "no error";
  } catch (const RecordFileError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ": cannot be read"), std::string::npos) << e.what();
  }
}

// An artifact of requests.jsonl alone (no result.json, no latency.hlog: the report computes its
// counts, distributions and time series from the records, pass after pass), its last line cut
// off (line n + 2: a blank line follows record 5).
void write_records_artifact(const fs::path& dir, std::uint64_t n) {
  fs::create_directories(dir);
  std::string text;
  for (std::uint64_t i = 0; i < n; ++i) text += report_line(i) + (i == 5 ? "\r\n\n" : "\n");
  text += report_line(n).substr(0, 25);
  write_report_bytes(dir / "requests.jsonl", text);
}

TEST(JsonlReport, ReportReadsTheFileAsItWouldTheRecordsInMemory) {
  ReportScratchDir dir;
  const fs::path run = dir.path() / "run";
  write_records_artifact(run, 40);
  const ReportInput streamed = read_report_input(run.string());
  ASSERT_EQ(streamed.runs.size(), 1U);
  const RunArtifact& a = streamed.runs.front();
  EXPECT_TRUE(a.has_records);
  EXPECT_EQ(a.records().size(), 40U);
  EXPECT_EQ(a.histogram_source, "requests.jsonl");
  EXPECT_TRUE(has_note(a.notes, "requests.jsonl: the last line (42) is cut off")) << fmt::format("{}", fmt::join(a.notes, "\n"));

  // The same artifact with its records in memory renders the same page, summary and CSV.
  ReportInput in_memory = streamed;
  in_memory.runs.front().set_records(to_vector(a.records()));
  EXPECT_EQ(in_memory.runs.front().records().size(), 40U);
  const std::string html = render_html(streamed);
  EXPECT_NE(html.find("<svg"), std::string::npos);  // charts drawn from the records
  EXPECT_EQ(html, render_html(in_memory));
  EXPECT_EQ(render_markdown(streamed), render_markdown(in_memory));
  EXPECT_EQ(render_csv(streamed), render_csv(in_memory));

  // A copy keeps its records when the artifact it was copied from is gone.
  std::optional<ReportInput> original(read_report_input(run.string()));
  const ReportInput copy = *original;
  original.reset();
  EXPECT_EQ(copy.runs.front().records().size(), 40U);
  EXPECT_EQ(range_lines(copy.runs.front().records()), range_lines(a.records()));
  EXPECT_EQ(render_html(copy), html);
}

TEST(JsonlReport, WriteReportOfRecordsOnly) {
  ReportScratchDir dir;
  const fs::path run = dir.path() / "run";
  write_records_artifact(run, 40);
  const ReportFiles files = write_report(run.string());
  EXPECT_TRUE(fs::exists(files.html));
  EXPECT_GT(fs::file_size(files.html), 1000U);
  EXPECT_TRUE(fs::exists(files.markdown));
  EXPECT_TRUE(fs::exists(files.csv));
  EXPECT_TRUE(has_note(files.notes, "is cut off"));
}

TEST(JsonlReport, ErrorsNameTheFileAndLine) {
  ReportScratchDir dir;
  const fs::path run = dir.path() / "run";
  fs::create_directories(run);
  write_report_bytes(run / "requests.jsonl", report_line(0) + "\n{oops\n" + report_line(1) + "\n");
  try {
    read_run_artifact(run.string());
    ADD_FAILURE() << "no error";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), (run / "requests.jsonl").string() + ": line 2 is not valid JSON");
  }
  write_report_bytes(run / "requests.jsonl", "");
  const RunArtifact empty = read_run_artifact(run.string());
  EXPECT_TRUE(empty.has_records);
  EXPECT_TRUE(empty.records().empty());
  EXPECT_TRUE(has_note(empty.notes, "requests.jsonl holds no request"));
}

TEST(JsonlReport, HandMadeArtifactKeepsItsRecordsInCopies) {
  RunArtifact a;
  EXPECT_TRUE(a.records().empty());
  std::vector<RequestRecord> rs;
  for (std::uint64_t i = 0; i < 5; ++i) rs.push_back(report_record(i));
  a.set_records(rs);
  RunArtifact b = a;
  a = RunArtifact{};
  EXPECT_TRUE(a.records().empty());
  ASSERT_EQ(b.records().size(), 5U);
  std::uint64_t i = 0;
  for (const auto& r : b.records()) EXPECT_EQ(r.index, i++);
}

// A keeper in memory that counts what it is given and how many passes read it.
class CountingKeeper : public RecordKeeper {
 public:
  struct Counts {
    int made = 0;
    std::size_t kept = 0;
    int passes = 0;
  };
  /// `problem`: what problem() says once `problem_after` records have been kept.
  explicit CountingKeeper(Counts& counts, std::optional<std::string> problem = std::nullopt,
                          std::size_t problem_after = 0)
      : counts_(counts), problem_(std::move(problem)), problem_after_(problem_after) {
    ++counts_.made;
  }
  std::optional<std::string> problem() const override {
    return records_.size() >= problem_after_ ? problem_ : std::nullopt;
  }
  void keep(const RequestRecord& r) override {
    records_.push_back(r);
    ++counts_.kept;
  }
  std::size_t size() const override { return records_.size(); }
  std::unique_ptr<RecordCursor> open() const override {
    ++counts_.passes;
    return std::make_unique<Cursor>(records_);
  }

 private:
  class Cursor : public RecordCursor {
   public:
    explicit Cursor(const std::vector<RequestRecord>& rs) : rs_(rs) {}
    bool next(RequestRecord& out) override {
      if (i_ >= rs_.size()) return false;
      out = rs_[i_++];
      return true;
    }

   private:
    const std::vector<RequestRecord>& rs_;
    std::size_t i_ = 0;
  };
  Counts& counts_;
  std::optional<std::string> problem_;
  std::vector<RequestRecord> records_;
  std::size_t problem_after_ = 0;
};

RecordKeeperFactory counting_keeper(CountingKeeper::Counts& counts) {
  return [&counts] { return std::make_unique<CountingKeeper>(counts); };
}

TEST(JsonlReport, KeptRecordsAreParsedOnceAndEveryPassReadsTheKeeper) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  write_report_bytes(p, report_line(0) + "\n\n" + report_line(1) + "\n" + report_line(2) + "\n" + report_line(3).substr(0, 20));
  CountingKeeper::Counts counts;
  const JsonlRecordSource source(p.string(), counting_keeper(counts));
  EXPECT_EQ(counts.made, 1);
  EXPECT_EQ(counts.kept, 3U);  // the records, not the blank line or the cut-off last line
  EXPECT_EQ(source.cut_line(), std::optional<std::size_t>(5));
  // The file is not read again: gone, the passes still give its records, in order.
  fs::remove(p);
  const std::vector<std::string> want{report_line(0), report_line(1), report_line(2)};
  EXPECT_EQ(range_lines(RecordRange(source)), want);
  EXPECT_EQ(range_lines(RecordRange(source)), want);
  EXPECT_EQ(counts.passes, 2);
}

// A keeper that could not keep the records as it should (a store without a temporary file holds
// them in memory) is dropped: each pass reads the file again, as without one.
TEST(JsonlReport, AKeeperWithAProblemIsDroppedAndThePassesReadTheFile) {
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  write_report_bytes(p, report_line(0) + "\n" + report_line(1) + "\n" + report_line(2) + "\n" + report_line(3) + "\n");
  CountingKeeper::Counts counts;
  // The problem arises with the second record: the keeper is let go then, not filled with the
  // rest (it would hold them in memory).
  const JsonlRecordSource source(p.string(), [&counts] {
    return std::make_unique<CountingKeeper>(counts, "no temporary file for the run's records (No space left on device)",
                                            /*problem_after=*/2);
  });
  EXPECT_EQ(counts.kept, 2U);
  EXPECT_EQ(source.size(), 4U);
  EXPECT_EQ(range_lines(RecordRange(source)),
            (std::vector<std::string>{report_line(0), report_line(1), report_line(2), report_line(3)}));
  EXPECT_EQ(counts.passes, 0);  // the file, not the keeper
  fs::remove(p);
  EXPECT_THROW(for (const auto& r : RecordRange(source)) (void)r, RecordFileError);
}

// A keeper whose records cannot be read back: the pass's error names the file, as bad input.
TEST(JsonlReport, AKeptRecordThatCannotBeReadBackIsAnErrorNamingTheFile) {
  class FailingKeeper : public RecordKeeper {
   public:
    void keep(const RequestRecord&) override { ++n_; }
    std::size_t size() const override { return n_; }
    std::unique_ptr<RecordCursor> open() const override {
      struct Cursor : RecordCursor {
        bool next(RequestRecord&) override { throw std::runtime_error("the run's record file was cut short"); }
      };
      return std::make_unique<Cursor>();
    }

   private:
    std::size_t n_ = 0;
  };
  ReportScratchDir dir;
  const fs::path p = dir.path() / "requests.jsonl";
  write_report_bytes(p, report_line(0) + "\n");
  const JsonlRecordSource source(p.string(), [] { return std::make_unique<FailingKeeper>(); });
  try {
    for (const auto& r : RecordRange(source)) (void)r;
    ADD_FAILURE() << "no error";
  } catch (const RecordFileError& e) {
    EXPECT_EQ(std::string(e.what()), p.string() + ": its records, kept once read, cannot be read back (the run's "
                                                  "record file was cut short)");
  }
}

TEST(JsonlReport, AReportOfASweepKeepsEachPointsRecordsOnceAndRendersTheSame) {
  ReportScratchDir dir;
  write_records_artifact(dir.path() / "point-a", 40);
  write_records_artifact(dir.path() / "point-b", 30);
  const ReportInput parsed_each_pass = read_report_input(dir.path().string());
  CountingKeeper::Counts counts;
  const ReportInput kept = read_report_input(dir.path().string(), nullptr, counting_keeper(counts));
  ASSERT_EQ(kept.runs.size(), 2U);
  EXPECT_EQ(counts.made, 2);       // one keeper per requests.jsonl
  EXPECT_EQ(counts.kept, 70U);     // each record kept once
  const std::string html = render_html(kept);
  EXPECT_GT(counts.passes, 2);     // the report's passes read the keepers
  EXPECT_EQ(html, render_html(parsed_each_pass));
  EXPECT_EQ(render_markdown(kept), render_markdown(parsed_each_pass));
  EXPECT_EQ(render_csv(kept), render_csv(parsed_each_pass));
}

}  // namespace jsonl_report_test
