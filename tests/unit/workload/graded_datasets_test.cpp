// The graded datasets (issue 18): the CSV reader, grader names, GSM8K and MMLU loaders, and the
// custom JSONL's messages / reference / grader / subset, on small files written to a temp dir.

#include <filesystem>

#include <gtest/gtest.h>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/csv.hpp"
#include "llmload/loadgen/workload/graded.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "subprocess.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using wltest::config_error;

std::vector<std::vector<std::string>> csv_fields(std::string_view text) {
  std::vector<std::vector<std::string>> out;
  for (auto& r : parse_csv(text, "t.csv")) out.push_back(std::move(r.fields));
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

TEST(Csv, PlainQuotedAndEmptyFields) {
  EXPECT_EQ(csv_fields("a,b,c\n1,2,3\n"), (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_EQ(csv_fields("a,,c,\n"), (Rows{{"a", "", "c", ""}})) << "empty fields, a trailing comma";
  EXPECT_EQ(csv_fields("\"x, y\",\"say \"\"hi\"\"\",\"\"\n"), (Rows{{"x, y", "say \"hi\"", ""}}));
  EXPECT_EQ(csv_fields("no final newline,z"), (Rows{{"no final newline", "z"}}));
  EXPECT_EQ(csv_fields("a,b\r\nc,d\r\n"), (Rows{{"a", "b"}, {"c", "d"}})) << "CRLF";
  EXPECT_EQ(csv_fields("\xEF\xBB\xBF" "a,b\n"), (Rows{{"a", "b"}})) << "a byte order mark is dropped";
  EXPECT_EQ(csv_fields("a\n\n\r\nb\n"), (Rows{{"a"}, {"b"}})) << "empty lines are skipped";
  EXPECT_EQ(csv_fields("5\" long,x\n"), (Rows{{"5\" long", "x"}})) << "a quote inside an unquoted field";
  EXPECT_EQ(csv_fields("a\rb,c\n"), (Rows{{"a\rb", "c"}})) << "a lone CR is an ordinary character";
  EXPECT_TRUE(csv_fields("").empty());
}

TEST(Csv, LineBreaksInsideQuotesAndLineNumbers) {
  const auto records = parse_csv("q1,\"line one\nline two\r\nline three\",x\n\nq2,b,c\n", "t.csv");
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"q1", "line one\nline two\r\nline three", "x"}));
  EXPECT_EQ(records[1].line, 5) << "three lines for the first record, then an empty one";
  EXPECT_EQ(records[1].fields[0], "q2");
}

TEST(Csv, ErrorsNameTheFileAndLine) {
  std::string msg = config_error([] { parse_csv("a,b\nc,\"open\nstill open\n", "data.csv"); });
  EXPECT_NE(msg.find("data.csv:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("never closed"), std::string::npos) << msg;
  msg = config_error([] { parse_csv("a,b\n\"x\"y,z\n", "data.csv"); });
  EXPECT_NE(msg.find("data.csv:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("two quotes"), std::string::npos) << msg;
}

TEST(GradedPieces, GraderNames) {
  for (const char* ok : {"exact", "normalized", "choice", "number", "number:0.5", "number:0", "json",
                         "regex:answer is (\\d+)", "regex:[A-D]"}) {
    EXPECT_EQ(grader_problem(ok), "") << ok;
  }
  for (const char* bad : {"", "Exact", "numbers", "number:", "number:-1", "number:x", "number: 1", "regex:", "regex:(",
                          "regex:[a-"}) {
    const std::string problem = grader_problem(bad);
    EXPECT_FALSE(problem.empty()) << bad;
  }
  EXPECT_NE(grader_problem("exactly").find("unknown grader"), std::string::npos);
  EXPECT_NE(grader_problem("exactly").find("regex:PATTERN"), std::string::npos) << "the accepted forms";
  EXPECT_NE(grader_problem("regex:(").find("does not compile"), std::string::npos);
}

TEST(GradedPieces, Gsm8kReferenceAndPrompt) {
  EXPECT_EQ(gsm8k_reference("She has 48/2 = <<48/2=24>>24.\n#### 72"), "72");
  EXPECT_EQ(gsm8k_reference("#### 1,234,567"), "1234567");
  EXPECT_EQ(gsm8k_reference("x\n#### -5 \n"), "-5");
  EXPECT_EQ(gsm8k_reference("#### 2.5"), "2.5");
  EXPECT_EQ(gsm8k_reference("#### 1\n#### 9"), "9") << "the last mark";
  EXPECT_EQ(gsm8k_reference("The answer is 72"), std::nullopt);
  EXPECT_EQ(gsm8k_reference("#### seventy"), std::nullopt);
  EXPECT_EQ(gsm8k_reference("####"), std::nullopt);
  EXPECT_EQ(gsm8k_prompt("How many?"), "Question: How many?\nAnswer:");
}

TEST(GradedPieces, MmluSubjectAndPrompt) {
  EXPECT_EQ(mmlu_subject("high_school_physics_test.csv"), "high_school_physics");
  EXPECT_EQ(mmlu_subject("anatomy_dev.csv"), "anatomy");
  EXPECT_EQ(mmlu_subject("arithmetic.csv"), "arithmetic");
  EXPECT_EQ(mmlu_subject("_test.csv"), "_test") << "never an empty subject";
  EXPECT_EQ(mmlu_prompt("college_physics", "  Which one?\n", {"w", "x", "y", "z"}),
            "The following is a multiple choice question about college physics.\n\nWhich one?\nA. w\nB. x\nC. y\n"
            "D. z\nAnswer:");
}

class GradedDatasetTest : public ::testing::Test {
 protected:
  std::unique_ptr<Workload> load(const std::string& dataset, const std::string& path,
                                 std::optional<std::uint64_t> max = std::nullopt, std::int64_t out = 64) {
    WorkloadConfig cfg;
    cfg.dataset = dataset;
    cfg.dataset_path = path;
    return make_workload(cfg, 0, out, max, 0, TokenModel::builtin());
  }
  std::string write(const std::string& name, std::string_view text) {
    wltest::write_text(dir_.file(name), text);
    return dir_.file(name);
  }
  std::string error(const std::string& dataset, const std::string& name, std::string_view text) {
    const std::string path = write(name, text);
    return config_error([&] { load(dataset, path); });
  }

  testing::TempDir dir_;
};

TEST_F(GradedDatasetTest, Gsm8kRows) {
  const std::string path = write("gsm8k.jsonl",
                                 "{\"question\": \"Tom has 3 apples and buys 1,200 more. How many?\", "
                                 "\"answer\": \"3 + 1200 = <<3+1200=1203>>1203\\n#### 1,203\"}\n"
                                 "\n"
                                 "{\"question\": \"What is 2 - 5?\", \"answer\": \"#### -3\", \"extra\": 1}\r\n");
  const auto w = load("gsm8k", path, std::nullopt, 256);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(2));
  const WorkItem a = w->item(0);
  EXPECT_EQ(a.prompt, "Question: Tom has 3 apples and buys 1,200 more. How many?\nAnswer:");
  EXPECT_EQ(a.reference, "1203");
  EXPECT_EQ(a.grader, "number");
  EXPECT_EQ(a.subset, "");
  EXPECT_EQ(a.output_tokens, 256) << "the run's default output length";
  EXPECT_EQ(a.input_tokens, estimate_text_tokens(a.prompt));
  EXPECT_TRUE(a.messages.empty());
  EXPECT_EQ(w->item(1).reference, "-3");
  const auto d = w->describe();
  EXPECT_EQ(d["dataset"], "gsm8k");
  EXPECT_EQ(d["path"], path);
  EXPECT_EQ(d["rows"], 2);
  EXPECT_EQ(d["requests"], 2);
  EXPECT_EQ(d["grader"], "number");

  const auto limited = load("gsm8k", path, 1);
  EXPECT_EQ(limited->size(), std::optional<std::uint64_t>(1));
  EXPECT_EQ(limited->describe()["rows"], 2) << "every row is read and validated";
}

TEST_F(GradedDatasetTest, Gsm8kErrorsNameFileLineAndForm) {
  const std::string ok = "{\"question\": \"q\", \"answer\": \"#### 1\"}\n";
  struct Case {
    std::string content;
    std::string line;
    std::string what;
  };
  const std::vector<Case> cases = {
      {ok + "not json\n", ":2:", "not a JSON object"},
      {ok + ok + "\n[1]\n", ":4:", "not a JSON object"},
      {ok + "{\"answer\": \"#### 1\"}\n", ":2:", "\"question\""},
      {ok + "{\"question\": \"\", \"answer\": \"#### 1\"}\n", ":2:", "\"question\""},
      {ok + "{\"question\": \"q\"}\n", ":2:", "\"answer\" is missing"},
      {ok + "{\"question\": \"q\", \"answer\": 5}\n", ":2:", "\"answer\" is missing or not a string"},
      {ok + "{\"question\": \"q\", \"answer\": \"it is 5\"}\n", ":2:", "does not end in \"#### <number>\""},
      {ok + "{\"question\": \"q\", \"answer\": \"#### five\"}\n", ":2:", "#### five"},
      {ok + "{\"question\": \"q\", \"question\": \"r\", \"answer\": \"#### 1\"}\n", ":2:", "given twice"},
  };
  for (const auto& c : cases) {
    const std::string msg = error("gsm8k", "bad.jsonl", c.content);
    EXPECT_NE(msg.find(dir_.file("bad.jsonl") + c.line), std::string::npos) << c.content << " → " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.content << " → " << msg;
    if (c.what != "given twice") {
      EXPECT_NE(msg.find("GSM8K as published"), std::string::npos) << msg;
    }
  }
  EXPECT_NE(error("gsm8k", "empty.jsonl", "\n\n").find("no questions"), std::string::npos);
  const std::string path = write("fine.jsonl", ok);
  EXPECT_NE(config_error([&] { load("gsm8k", path, std::nullopt, 0); }).find("--output-tokens"), std::string::npos);
  EXPECT_NE(config_error([&] { load("gsm8k", ""); }).find("--dataset-path"), std::string::npos);
  EXPECT_NE(config_error([&] { load("gsm8k", dir_.file("absent.jsonl")); }).find("absent.jsonl"), std::string::npos);
}

constexpr std::string_view kPhysicsCsv =
    "\"A ball, thrown up, has what speed at the top?\",0,\"g, downwards\",\"It \"\"hovers\"\"\",\"depends\nonly on g\","
    "A\r\n"
    "What is 2 + 2?,3,4,5,6,B\r\n";

TEST_F(GradedDatasetTest, MmluOneFile) {
  const auto w = load("mmlu", write("high_school_physics_test.csv", kPhysicsCsv));
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(2));
  const WorkItem a = w->item(0);
  EXPECT_EQ(a.prompt,
            "The following is a multiple choice question about high school physics.\n\n"
            "A ball, thrown up, has what speed at the top?\nA. 0\nB. g, downwards\nC. It \"hovers\"\n"
            "D. depends\nonly on g\nAnswer:");
  EXPECT_EQ(a.reference, "A");
  EXPECT_EQ(a.grader, "choice");
  EXPECT_EQ(a.subset, "high_school_physics");
  EXPECT_EQ(a.output_tokens, 64);
  EXPECT_EQ(a.input_tokens, estimate_text_tokens(a.prompt));
  EXPECT_EQ(w->item(1).reference, "B");
  const auto d = w->describe();
  EXPECT_EQ(d["dataset"], "mmlu");
  EXPECT_EQ(d["rows"], 2);
  EXPECT_EQ(d["files"], 1);
  EXPECT_EQ(d["subsets"], (nlohmann::json{{"high_school_physics", 2}}));
}

TEST_F(GradedDatasetTest, MmluDirectoryInNameOrder) {
  const std::string dir = dir_.file("mmlu");
  std::filesystem::create_directory(dir);
  std::filesystem::create_directory(dir + "/nested.csv");  // a directory, not a file: skipped
  wltest::write_text(dir + "/virology_test.csv", "Q3,a,b,c,d,D\n");
  wltest::write_text(dir + "/anatomy_test.csv", "Q1,a,b,c,d,C\nQ2,a,b,c,d,A\n");
  wltest::write_text(dir + "/README.txt", "not a csv");
  const auto w = load("mmlu", dir);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(3));
  EXPECT_EQ(w->item(0).subset, "anatomy");
  EXPECT_EQ(w->item(0).reference, "C");
  EXPECT_EQ(w->item(1).subset, "anatomy");
  EXPECT_EQ(w->item(2).subset, "virology");
  EXPECT_NE(w->item(2).prompt.find("about virology.\n\nQ3\n"), std::string::npos);
  auto d = w->describe();
  EXPECT_EQ(d["files"], 2);
  EXPECT_EQ(d["subjects"], 2);
  EXPECT_EQ(d["subsets"], (nlohmann::json{{"anatomy", 2}, {"virology", 1}}));

  const auto limited = load("mmlu", dir, 2);
  ASSERT_EQ(limited->size(), std::optional<std::uint64_t>(2));
  d = limited->describe();
  EXPECT_EQ(d["rows"], 3);
  EXPECT_EQ(d["subsets"], (nlohmann::json{{"anatomy", 2}})) << "the requests kept per subject";
}

TEST_F(GradedDatasetTest, MmluErrorsNameFileAndLine) {
  const std::string ok = "q,a,b,c,d,A\n";
  struct Case {
    std::string content;
    std::string line;
    std::string what;
  };
  const std::vector<Case> cases = {
      {ok + "q,a,b,c,A\n", ":2:", "5 fields, expected 6"},
      {ok + "\"multi\nline\",a,b,c,d,A\nq,a,b,c,d,E\n", ":4:", "not a letter A-D"},
      {ok + "q,a,b,c,d,\n", ":2:", "not a letter A-D"},
      {"question,A,B,C,D,answer\n" + ok, ":1:", "a header row?"},
      {ok + ",a,b,c,d,B\n", ":2:", "the question (1st field) is empty"},
      {ok + "q,\"a\"b,c,d,e,A\n", ":2:", "two quotes"},
  };
  for (const auto& c : cases) {
    const std::string msg = error("mmlu", "bad_test.csv", c.content);
    EXPECT_NE(msg.find(dir_.file("bad_test.csv") + c.line), std::string::npos) << c.content << " → " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.content << " → " << msg;
  }
  EXPECT_NE(error("mmlu", "empty_test.csv", "\n").find("no questions"), std::string::npos);
  const std::string empty_dir = dir_.file("nothing");
  std::filesystem::create_directory(empty_dir);
  EXPECT_NE(config_error([&] { load("mmlu", empty_dir); }).find("no .csv files"), std::string::npos);
  EXPECT_NE(config_error([&] { load("mmlu", dir_.file("absent")); }).find("no such file or directory"),
            std::string::npos);
  EXPECT_NE(config_error([&] { load("mmlu", ""); }).find("--dataset-path"), std::string::npos);
}

TEST_F(GradedDatasetTest, CustomGradedRowsAndMessages) {
  const std::string path = write(
      "graded.jsonl",
      "{\"prompt\": \"What is 2 + 2?\", \"reference\": \"4\", \"grader\": \"number\", \"subset\": \"math\"}\n"
      "{\"prompt\": \"Capital of France?\", \"reference\": \"Paris\"}\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi?\"}],"
      " \"reference\": \"hello\", \"grader\": \"regex:(h\\\\w+)\"}\n"
      "{\"prompt\": \"A person as JSON\", \"grader\": \"json\", \"reference\": {\"type\": \"object\", "
      "\"required\": [\"name\"]}}\n"
      "{\"prompt\": \"Any JSON\", \"grader\": \"json\"}\n"
      "{\"prompt\": \"Not graded\", \"subset\": \"plain\"}\n");
  const auto w = load("custom", path);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(6));
  EXPECT_EQ(w->item(0).reference, "4");
  EXPECT_EQ(w->item(0).grader, "number");
  EXPECT_EQ(w->item(0).subset, "math");
  EXPECT_EQ(w->item(1).grader, "normalized") << "a reference without a grader";
  const WorkItem chat = w->item(2);
  EXPECT_EQ(chat.prompt, "Be brief.\nHi?");
  EXPECT_EQ(chat.input_tokens, estimate_text_tokens("Be brief.\nHi?"));
  ASSERT_EQ(chat.messages.size(), 2U);
  EXPECT_EQ(chat.messages[0].role, "system");
  EXPECT_EQ(chat.messages[1].content, "Hi?");
  EXPECT_EQ(chat.grader, "regex:(h\\w+)");
  EXPECT_EQ(w->item(3).reference, "{\"required\":[\"name\"],\"type\":\"object\"}") << "the schema's dump";
  EXPECT_EQ(w->item(4).grader, "json");
  EXPECT_EQ(w->item(4).reference, "") << "json may check validity only";
  EXPECT_EQ(w->item(5).grader, "");
  EXPECT_EQ(w->item(5).subset, "plain");
  const auto d = w->describe();
  EXPECT_EQ(d["graded"], 5);
  EXPECT_EQ(d["graders"], (nlohmann::json{{"json", 2}, {"normalized", 1}, {"number", 1}, {"regex:(h\\w+)", 1}}));
  EXPECT_EQ(d["subsets"], (nlohmann::json{{"math", 1}, {"plain", 1}}));
  EXPECT_EQ(d["messages_rows"], 1);

  const auto plain = load("custom", write("plain.jsonl", "{\"prompt\": \"x\"}\n"));
  EXPECT_FALSE(plain->describe().contains("graded")) << "plain files are described as before";
}

TEST_F(GradedDatasetTest, CustomGradedRowErrors) {
  const std::string ok = "{\"prompt\": \"fine\"}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"prompt\": \"x\", \"grader\": \"exact\"}", "needs a \"reference\""},
      {"{\"prompt\": \"x\", \"grader\": \"exactly\", \"reference\": \"a\"}", "unknown grader"},
      {"{\"prompt\": \"x\", \"grader\": \"regex:(\", \"reference\": \"a\"}", "does not compile"},
      {"{\"prompt\": \"x\", \"grader\": \"number:-2\", \"reference\": \"1\"}", "tolerance"},
      {"{\"prompt\": \"x\", \"grader\": 3, \"reference\": \"a\"}", "\"grader\" must be a string"},
      {"{\"prompt\": \"x\", \"reference\": {\"type\": \"object\"}}", "add \"grader\": \"json\""},
      {"{\"prompt\": \"x\", \"grader\": \"exact\", \"reference\": [1]}", "JSON array"},
      {"{\"prompt\": \"x\", \"reference\": 42}", "write a number as a string"},
      {"{\"prompt\": \"x\", \"reference\": \"\"}", "non-empty string"},
      {"{\"prompt\": \"x\", \"subset\": 1}", "\"subset\" must be a string"},
      {"{\"prompt\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"y\"}]}", "give one of them"},
      {"{\"messages\": []}", "non-empty array"},
      {"{\"messages\": \"hi\"}", "non-empty array"},
      {"{\"messages\": [{\"role\": \"user\"}]}", "messages[0] has no non-empty string \"content\""},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"content\": \"b\"}]}",
       "messages[1] has no non-empty string \"role\""},
      {"{\"messages\": [\"hi\"]}", "messages[0]"},
      {"{\"reference\": \"a\"}", "\"prompt\" (or \"messages\") is missing"},
  };
  for (const auto& [line, what] : cases) {
    const std::string msg = error("custom", "bad.jsonl", ok + line + "\n");
    EXPECT_NE(msg.find(dir_.file("bad.jsonl") + ":2:"), std::string::npos) << line << " → " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << line << " → " << msg;
  }
}

}  // namespace
}  // namespace llmload
