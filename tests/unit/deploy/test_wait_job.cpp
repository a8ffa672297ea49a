// docker/k8s/wait-job.sh (see docs/deploy.md), the script that waits for llmload's Kubernetes Job
// and returns llmload's exit code, run against a stand-in kubectl.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "subprocess.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kWaitJobScript = fs::path(LLMLOAD_SOURCE_DIR) / "docker" / "k8s" / "wait-job.sh";

// docker/k8s/wait-job.sh against a stand-in kubectl (there is no cluster here) that answers the
// queries the script makes from files: the Job's True condition types (one line per poll; the
// last line repeats), the failed containers' exit codes, the logs. Checks the outcome of each
// path: complete (0), failed (llmload's exit code), still running (124), unknown Job (2).
class WaitJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("llmload-wait-job-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    const auto kubectl = dir_ / "bin" / "kubectl";
    std::ofstream(kubectl) << R"(#!/usr/bin/env bash
# Stand-in kubectl: answers from files in $STUB; logs every call to $STUB/calls.
echo "$*" >>"$STUB/calls"
case "$*" in
  "get job $JOB -o name") echo "job.batch/$JOB"; exit 0 ;;
  "get job "*" -o name") echo "Error from server (NotFound): jobs.batch "$3" not found" >&2; exit 1 ;;
  "get job $JOB -o jsonpath={.status.conditions[?(@.status==\"True\")].type}")
    n=$(cat "$STUB/polls" 2>/dev/null || echo 0); echo $((n + 1)) >"$STUB/polls"
    line=$(sed -n "$((n + 1))p" "$STUB/states"); [ -n "$line" ] || line=$(tail -n 1 "$STUB/states")
    [ "$line" = "-" ] || printf '%s' "$line"; exit 0 ;;
  "get job $JOB -o jsonpath={.status.conditions[?(@.type==\"Failed\")].reason}") printf 'PodFailurePolicy'; exit 0 ;;
  "get job $JOB -o jsonpath={.status.conditions[?(@.type==\"Failed\")].message}") printf 'Container llmload exited'; exit 0 ;;
  "get pods -l job-name=$JOB -o jsonpath={range .items[*]}{.status.containerStatuses[?(@.name==\"llmload\")].state.terminated.exitCode}{\" \"}{end}")
    cat "$STUB/codes"; exit 0 ;;
  "logs job/$JOB --tail=-1") echo "REPORT OF $JOB"; exit 0 ;;
esac
echo "stand-in kubectl: unexpected call: $*" >&2
exit 99
)";
    fs::permissions(kubectl, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs wait-job.sh for job "llmload-vllm" with the given condition lines and exit codes.
  llmload::testing::RunResult wait_for(const std::string& job, const std::string& states, const std::string& codes,
                                       const std::string& timeout_s = "30") {
    std::ofstream(dir_ / "states") << states;
    std::ofstream(dir_ / "codes") << codes;
    fs::remove(dir_ / "polls");
    const std::string path = (dir_ / "bin").string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    return llmload::testing::run({kWaitJobScript.string(), job, timeout_s}, std::chrono::seconds(60),
                                 {"PATH=" + path, "STUB=" + dir_.string(), "JOB=llmload-vllm", "LLMLOAD_WAIT_INTERVAL=0.1"});
  }
  int polls() const {
    std::ifstream in(dir_ / "polls");
    int n = 0;
    in >> n;
    return n;
  }
  fs::path dir_;
};

TEST_F(WaitJob, ReturnsZeroWhenTheJobCompletes) {
  const auto r = wait_for("llmload-vllm", "-\n-\nComplete\n", "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(polls(), 3);  // polled until the condition appeared
  EXPECT_NE(r.out.find("REPORT OF llmload-vllm"), std::string::npos) << r.out;
}

TEST_F(WaitJob, ReturnsLlmloadsExitCodeWhenTheJobFails) {
  // What a pod failure policy produces: FailureTarget, then Failed; llmload exited 6.
  const auto r = wait_for("llmload-vllm", "-\nFailureTarget\nFailureTarget Failed\n", "0 6 ");
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.out.find("REPORT OF llmload-vllm"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("job/llmload-vllm failed (PodFailurePolicy: Container llmload exited); llmload exit code 6"),
            std::string::npos) << r.err;
  // Failed with no container exit code recorded (deadline exceeded): 1.
  EXPECT_EQ(wait_for("llmload-vllm", "Failed\n", "").exit_code, 1);
}

TEST_F(WaitJob, TimesOutWith124AndRefusesUnknownJobsAndBadArguments) {
  // 3 s, not 1: the script's deadline is in whole seconds of `date +%s`, so a 1 s timeout can end
  // after a single poll when the second ticks over during a slow first one (seen on a busy CI machine).
  const auto running = wait_for("llmload-vllm", "-\n", "", "3");
  EXPECT_EQ(running.exit_code, 124) << running.err;
  EXPECT_NE(running.err.find("still running after 3 s"), std::string::npos) << running.err;
  EXPECT_GE(polls(), 2);
  const auto unknown = wait_for("llmload-nope", "Complete\n", "");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("job/llmload-nope not found"), std::string::npos) << unknown.err;
  const auto bad = wait_for("llmload-vllm", "Complete\n", "", "soon");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad TIMEOUT_SECONDS 'soon'"), std::string::npos) << bad.err;
}

}  // namespace
