// The project's accuracy test sets (data/accuracy, made by make_sets.js) load with their loaders,
// and keep the arithmetic contract llmload-server's mock answers: one expression per question of
// 2 to 4 operands in 1..99 joined by " + ", " - " or " * ", * before + and -, left to right, and
// nothing else numeric; every answer is recomputed here.

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/csv.hpp"
#include "llmload/loadgen/workload/graded.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "subprocess.hpp"

namespace llmload {
namespace {

const std::string kSets = LLMLOAD_ACCURACY_DIR;

std::string set_file(const std::string& name) {
  const std::string path = kSets + "/" + name;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path << " is missing: it ships with the repository (node data/accuracy/make_sets.js remakes it)";
  }
  return path;
}

std::unique_ptr<Workload> load_set(const std::string& dataset, const std::string& name) {
  WorkloadConfig cfg;
  cfg.dataset = dataset;
  cfg.dataset_path = set_file(name);
  return make_workload(cfg, 0, 128, std::nullopt, 0, TokenModel::builtin());
}

struct Expression {
  std::string text;
  std::vector<std::int64_t> operands;
  std::vector<char> operators;
};

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The expression of a question: from its first digit, "N( op N)*" with single spaces; nullopt when
// there is none or any digit follows it.
std::optional<Expression> find_expression(std::string_view q) {
  std::size_t i = 0;
  while (i < q.size() && !is_digit(q[i])) ++i;
  if (i == q.size()) return std::nullopt;
  const std::size_t start = i;
  Expression e;
  auto number = [&] {
    std::int64_t v = 0;
    while (i < q.size() && is_digit(q[i])) v = v * 10 + (q[i++] - '0');
    e.operands.push_back(v);
  };
  number();
  while (i + 3 < q.size() && q[i] == ' ' && (q[i + 1] == '+' || q[i + 1] == '-' || q[i + 1] == '*') &&
         q[i + 2] == ' ' && is_digit(q[i + 3])) {
    e.operators.push_back(q[i + 1]);
    i += 3;
    number();
  }
  e.text = std::string(q.substr(start, i - start));
  for (std::size_t k = i; k < q.size(); ++k) {
    if (is_digit(q[k])) return std::nullopt;
  }
  return e;
}

// * first, then + and - from left to right.
std::int64_t evaluate(const Expression& e) {
  std::vector<std::int64_t> terms = {e.operands[0]};
  std::vector<int> signs = {1};
  for (std::size_t k = 0; k < e.operators.size(); ++k) {
    if (e.operators[k] == '*') {
      terms.back() *= e.operands[k + 1];
    } else {
      terms.push_back(e.operands[k + 1]);
      signs.push_back(e.operators[k] == '+' ? 1 : -1);
    }
  }
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < terms.size(); ++k) sum += signs[k] * terms[k];
  return sum;
}

void expect_contract(const Expression& e, const std::string& question) {
  EXPECT_GE(e.operands.size(), 2U) << question;
  EXPECT_LE(e.operands.size(), 4U) << question;
  for (const auto v : e.operands) {
    EXPECT_GE(v, 1) << question;
    EXPECT_LE(v, 99) << question;
  }
}

TEST(AccuracySets, EvaluateFollowsPrecedence) {
  const auto e = find_expression("What is 48 + 17 * 3?");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->text, "48 + 17 * 3");
  EXPECT_EQ(evaluate(*e), 99);
  EXPECT_EQ(evaluate(*find_expression("10 - 2 - 3 * 2 + 1")), 3);
  EXPECT_FALSE(find_expression("What is 1 + 2 for 3 people?").has_value()) << "a second number";
  EXPECT_FALSE(find_expression("No numbers").has_value());
}

TEST(AccuracySets, ArithmeticJsonlIsGsm8kAndItsAnswersAreRight) {
  const auto w = load_set("gsm8k", "arithmetic.jsonl");
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(200));
  EXPECT_EQ(w->item(0).prompt, "Question: Find the value of 36 * 66 * 58.\nAnswer:");
  EXPECT_EQ(w->item(0).reference, "137808");
  EXPECT_EQ(w->item(0).grader, "number");

  std::ifstream in(set_file("arithmetic.jsonl"));
  std::string line;
  std::size_t row = 0;
  std::set<std::string> expressions;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string question = j.at("question");
    const auto e = find_expression(question);
    ASSERT_TRUE(e.has_value()) << "row " << row << ": not one expression with nothing else numeric: " << question;
    expect_contract(*e, question);
    const std::string value = std::to_string(evaluate(*e));
    EXPECT_EQ(j.at("answer"), e->text + " = " + value + "\n#### " + value) << question;
    ASSERT_LT(row, 200U);
    EXPECT_EQ(w->item(row).reference, value) << question;
    EXPECT_EQ(w->item(row).prompt, gsm8k_prompt(question));
    expressions.insert(e->text);
    ++row;
  }
  EXPECT_EQ(row, 200U);
  EXPECT_EQ(expressions.size(), 200U) << "no expression twice";
}

TEST(AccuracySets, ArithmeticCsvIsMmluWithOneRightOption) {
  const auto w = load_set("mmlu", "arithmetic_test.csv");
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(200));
  EXPECT_EQ(w->describe()["subsets"], (nlohmann::json{{"arithmetic", 200}}));
  EXPECT_EQ(w->item(0).prompt,
            "The following is a multiple choice question about arithmetic.\n\nWhat is 80 * 17 * 72?\n"
            "A. 97920\nB. 97917\nC. 97913\nD. 97928\nAnswer:");
  EXPECT_EQ(w->item(0).reference, "A");
  EXPECT_EQ(w->item(0).subset, "arithmetic");

  const auto records = parse_csv(testing::read_file(set_file("arithmetic_test.csv")), "arithmetic_test.csv");
  ASSERT_EQ(records.size(), 200U);
  std::map<std::string, int> letters;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const auto& f = records[r].fields;
    ASSERT_EQ(f.size(), 6U);
    const std::string& question = f[0];
    ASSERT_EQ(question.rfind("What is ", 0), 0U) << question;
    const auto e = find_expression(question);
    ASSERT_TRUE(e.has_value()) << question;
    expect_contract(*e, question);
    EXPECT_EQ(question, "What is " + e->text + "?");
    const std::int64_t value = evaluate(*e);
    std::set<std::int64_t> options;
    for (int k = 1; k <= 4; ++k) options.insert(std::stoll(f[static_cast<std::size_t>(k)]));
    EXPECT_EQ(options.size(), 4U) << "distinct options: " << question;
    const int right = f[5][0] - 'A' + 1;
    ASSERT_TRUE(right >= 1 && right <= 4) << f[5];
    EXPECT_EQ(std::stoll(f[static_cast<std::size_t>(right)]), value) << question;
    for (const auto o : options) EXPECT_LE(std::llabs(o - value), 10) << "options near the answer: " << question;
    EXPECT_EQ(w->item(r).reference, f[5]);
    ++letters[f[5]];
  }
  EXPECT_EQ(letters, (std::map<std::string, int>{{"A", 50}, {"B", 50}, {"C", 50}, {"D", 50}}));
}

TEST(AccuracySets, GradedJsonlShowsEveryGrader) {
  const auto w = load_set("custom", "graded.jsonl");
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(20));
  EXPECT_EQ(w->describe()["graded"], 20);
  std::set<std::string> kinds;
  bool schema = false;
  bool messages = false;
  for (std::uint64_t i = 0; i < 20; ++i) {
    const WorkItem item = w->item(i);
    EXPECT_EQ(grader_problem(item.grader), "") << item.grader;
    kinds.insert(item.grader.substr(0, item.grader.find(':')));
    if (item.grader == "json" && !item.reference.empty()) {
      schema = schema || nlohmann::json::parse(item.reference).is_object();
    }
    messages = messages || !item.messages.empty();
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"choice", "exact", "json", "normalized", "number", "regex"}));
  EXPECT_TRUE(schema) << "a json row with a schema";
  EXPECT_TRUE(messages) << "a messages row";
  EXPECT_EQ(w->item(0).prompt, "Question: What is 12 * 12?\nAnswer:");
  EXPECT_EQ(w->item(0).reference, "144");
}

}  // namespace
}  // namespace llmload
