// Every `llmload run` example in README.md, docs/*.md and `llmload run --help`, run as written
// against llmload-server, must give a VALID, conclusive answer of its documented kind: exit 0, a
// result.json, validity VALID (schedule lag excepted: that is the machine's timing, recorded by
// bench/open_loop_validity.sh, not asserted), and with an SLO a PASS or FAIL (never INCONCLUSIVE). The test
// fails when an example stops working or changes its kind of answer (docs/testing.md, "Examples").
//
// As written, except for what points it at the test's server and keeps CI short:
//   - the server comes from LLMLOAD_BASE_URL (as a user sets it); a --base-url in the example is
//     replaced, --output/--result-dir go to a temporary directory;
//   - one switch, LLMLOAD_EXAMPLES_TIME_SCALE=F (default 5, 1 runs them at full length),
//     compresses time: durations (--duration, time warmups, --min/--max-duration, stage
//     durations) are divided by F and rates (--request-rate, rate stages, --time-scale)
//     multiplied by F, so every example sends the same requests in 1/F of the time. The server's
//     latencies are fixed, so its answers do not depend on the rate.
// Examples that are not whole commands (with `...` or shell variables) and those a dedicated test
// covers (sharding: tests/integration/shard) are listed as skipped, with the reason.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Example {
  std::string where;    // file:line, or `llmload run --help`
  std::string command;  // continuation lines joined
};

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// A trailing shell comment (" # ..."), outside quotes.
std::string strip_comment(const std::string& s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return trim(s.substr(0, i));
    }
  }
  return trim(s);
}

bool is_run_command(const std::string& line) {
  return line.rfind("llmload run ", 0) == 0 || line.rfind("build/bin/llmload run ", 0) == 0;
}

// Joins `\`-continued lines starting at lines[i]; advances i past them.
std::string joined(const std::vector<std::string>& lines, std::size_t& i) {
  std::string cmd = strip_comment(trim(lines[i]));
  while (!cmd.empty() && cmd.back() == '\\' && i + 1 < lines.size()) {
    cmd.pop_back();
    cmd = trim(cmd) + " " + strip_comment(trim(lines[++i]));
  }
  return cmd;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// `llmload run` commands in the fenced code blocks of a Markdown file.
std::vector<Example> markdown_examples(const fs::path& file) {
  std::ifstream f(file);
  if (!f) throw std::runtime_error("cannot read " + file.string());
  std::stringstream ss;
  ss << f.rdbuf();
  const auto lines = lines_of(ss.str());
  std::vector<Example> out;
  bool fenced = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced || !is_run_command(trim(lines[i]))) continue;
    const std::size_t line = i + 1;
    out.push_back({fs::relative(file, LLMLOAD_SOURCE_DIR).string() + ":" + std::to_string(line), joined(lines, i)});
  }
  return out;
}

std::vector<Example> help_examples(const std::string& help) {
  const auto lines = lines_of(help);
  std::vector<Example> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_run_command(trim(lines[i]))) out.push_back({"llmload run --help", joined(lines, i)});
  }
  return out;
}

// Shell words: whitespace-separated, '...' and "..." quoted.
std::vector<std::string> words(const std::string& cmd) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (char c : cmd) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      have = true;
    } else if (c == ' ' || c == '\t') {
      if (have) out.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += c;
      have = true;
    }
  }
  if (have) out.push_back(cur);
  return out;
}

// Why an example is not run here, or "" to run it.
std::string skip_reason(const std::string& cmd) {
  if (cmd.find("...") != std::string::npos) return "not a whole command (`...` stands for the user's flags)";
  if (std::regex_search(cmd, std::regex(R"(\$[A-Za-z({])"))) return "uses shell variables";
  if (cmd.find("--shard-") != std::string::npos || cmd.find("--start-at") != std::string::npos) {
    return "a shard of a sharded run (tests/integration/shard runs them)";
  }
  return "";
}

// "60s" / "2m" / "500ms" divided by f, as a duration in milliseconds.
std::string scaled_duration(const std::string& d, double f) {
  std::smatch m;
  if (!std::regex_match(d, m, std::regex(R"(([0-9.]+)(ms|s|m|h))"))) return d;
  double ms = std::stod(m[1]);
  const std::string u = m[2];
  ms *= u == "ms" ? 1 : u == "s" ? 1e3 : u == "m" ? 60e3 : 3600e3;
  return std::to_string(static_cast<long long>(ms / f)) + "ms";
}

std::string scaled_number(const std::string& v, double f) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0') return v;  // inf, or not a number
  std::ostringstream o;
  o << x * f;
  return o.str();
}

// rate:5@30s,concurrency:64@60s -> rate:50@3000ms,concurrency:64@6000ms
std::string scaled_stages(const std::string& spec, double f) {
  std::string out;
  std::stringstream ss(spec);
  for (std::string part; std::getline(ss, part, ',');) {
    std::smatch m;
    if (std::regex_match(part, m, std::regex(R"((rate|concurrency):([0-9.]+)@(.+))"))) {
      part = std::string(m[1]) + ":" + (m[1] == "rate" ? scaled_number(m[2], f) : std::string(m[2])) + "@" +
             scaled_duration(m[3], f);
    }
    out += (out.empty() ? "" : ",") + part;
  }
  return out;
}

// The example's arguments after `llmload`, pointed at `out` and compressed by `f`.
std::vector<std::string> prepared(const std::string& cmd, const std::string& out, double f) {
  auto w = words(cmd);
  std::vector<std::string> args = {binary_path("llmload")};
  for (std::size_t i = 1; i < w.size(); ++i) {  // w[0]: llmload or build/bin/llmload
    const std::string& a = w[i];
    const bool has_value = i + 1 < w.size();
    if ((a == "--base-url") && has_value) {
      ++i;  // LLMLOAD_BASE_URL points it at the test's server
      continue;
    }
    if ((a == "--output" || a == "--result-dir") && has_value) {
      args.insert(args.end(), {a, out});
      ++i;
      continue;
    }
    if (has_value && (a == "--duration" || a == "--min-duration" || a == "--max-duration" ||
                      (a == "--warmup" && !std::isdigit(static_cast<unsigned char>(w[i + 1].back()))))) {
      args.insert(args.end(), {a, scaled_duration(w[++i], f)});
      continue;
    }
    if (has_value && (a == "--request-rate" || a == "--time-scale")) {
      args.insert(args.end(), {a, scaled_number(w[++i], f)});
      continue;
    }
    if (has_value && a == "--stages") {
      args.insert(args.end(), {a, scaled_stages(w[++i], f)});
      continue;
    }
    args.push_back(a);
  }
  if (std::find(args.begin(), args.end(), "--output") == args.end() &&
      std::find(args.begin(), args.end(), "--result-dir") == args.end()) {
    args.insert(args.end(), {"--output", out});
  }
  return args;
}

double time_scale() {
  const char* v = std::getenv("LLMLOAD_EXAMPLES_TIME_SCALE");
  return v != nullptr && std::atof(v) >= 1 ? std::atof(v) : 5.0;
}

// The result.json an example wrote: DIR/result.json, or vLLM's DIR/<name>.json (--save-result).
json written_result(const std::string& dir) {
  fs::path p = fs::path(dir) / "result.json";
  if (!fs::exists(p)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".json") p = e.path();
    }
  }
  std::ifstream f(p);
  if (!f) return nullptr;
  return json::parse(f, nullptr, false);
}

void run_examples(const std::vector<Example>& examples) {
  // Fixed latencies and the bundled server's default model: an example naming another model would
  // not run as written against llmload-server, and fails here.
  auto server = start_server({"--latency-model", "fixed", "--ttft", "50ms", "--itl", "1ms", "--max-model-len", "65536"});
  const double f = time_scale();
  int ran = 0;
  for (const auto& ex : examples) {
    SCOPED_TRACE(ex.where + ": " + ex.command);
    if (const std::string why = skip_reason(ex.command); !why.empty()) {
      std::printf("[ SKIPPED  ] %s: %s (%s)\n", ex.where.c_str(), ex.command.c_str(), why.c_str());
      continue;
    }
    TempDir dir;
    const std::string out = dir.file("out");
    const auto args = prepared(ex.command, out, f);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    std::printf("[ EXAMPLE  ] %s: %s\n", ex.where.c_str(), shown.c_str());
    std::fflush(stdout);
    // Run from the repository root: examples name repository paths (data/traces/...).
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", LLMLOAD_SOURCE_DIR};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult p = run(argv, std::chrono::seconds(300), {"LLMLOAD_BASE_URL=" + server.base_url});
    ++ran;
    EXPECT_EQ(p.exit_code, 0) << p.err;
    const json res = written_result(out);
    ASSERT_TRUE(res.is_object()) << "no result.json in " << out << "\n" << p.err;
    // A run's or a trials artifact's verdict (all trials VALID). Schedule lag alone is allowed:
    // whether the operating system wakes the client on time is the machine's timing, which tests
    // may not assert (bench/open_loop_validity.sh records it); every other reason fails.
    ASSERT_TRUE(res["validity"].is_object()) << res.dump().substr(0, 300);
    for (const auto& reason : res["validity"].value("reasons", json::array())) {
      if (reason.value("code", std::string()) == "schedule_lag") {
        std::printf("[   NOTE   ] %s: INVALID for schedule lag on this machine (allowed): %s\n", ex.where.c_str(),
                    reason.value("message", std::string()).c_str());
        continue;
      }
      ADD_FAILURE() << "INVALID: " << reason.dump();
    }
    if (res.contains("slo") && res["slo"].is_object()) {
      EXPECT_NE(res["slo"].value("verdict", std::string()), "INCONCLUSIVE") << res["slo"].dump(2);
    }
  }
  EXPECT_GT(ran, 0) << "no example was run: the extraction found none";
}

TEST(Examples, EveryRunExampleInTheDocsGivesAValidConclusiveAnswer) {
  std::vector<Example> all = markdown_examples(fs::path(LLMLOAD_SOURCE_DIR) / "README.md");
  for (const auto& e : fs::directory_iterator(fs::path(LLMLOAD_SOURCE_DIR) / "docs")) {
    if (e.path().extension() != ".md") continue;
    auto more = markdown_examples(e.path());
    all.insert(all.end(), more.begin(), more.end());
  }
  ASSERT_FALSE(all.empty());
  run_examples(all);
}

TEST(Examples, EveryRunExampleInTheHelpGivesAValidConclusiveAnswer) {
  const RunResult help = run({binary_path("llmload"), "run", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  const auto examples = help_examples(help.out);
  ASSERT_GE(examples.size(), 5u) << help.out;
  run_examples(examples);
}

// The extraction itself: continuation lines, comments, quotes and the time compression.
TEST(Examples, ExtractionJoinsLinesAndCompressesTime) {
  const auto ex = help_examples("  x\n      llmload run --scenario stages --stages rate:5@30s,concurrency:4@1m \\\n"
                                "        --duration 60s  # a comment\n");
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].command, "llmload run --scenario stages --stages rate:5@30s,concurrency:4@1m --duration 60s");
  const auto args = prepared(ex[0].command + " --request-rate 8 --warmup 10s --warmup 20 --base-url http://x:1 "
                                             "--header 'X-A: b c'",
                             "/o", 10);
  const std::vector<std::string> tail(args.begin() + 1, args.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"run", "--scenario", "stages", "--stages",
                                            "rate:50@3000ms,concurrency:4@6000ms", "--duration", "6000ms",
                                            "--request-rate", "80", "--warmup", "1000ms", "--warmup", "20",
                                            "--header", "X-A: b c", "--output", "/o"}));
  EXPECT_EQ(skip_reason("llmload run ... --trials 5"), "not a whole command (`...` stands for the user's flags)");
  EXPECT_EQ(skip_reason("llmload run --base-url $URL"), "uses shell variables");
  EXPECT_EQ(skip_reason("llmload run --request-rate 8"), "");
}

}  // namespace
}  // namespace llmload::testing
