// RunJournal: a disk that falls behind requests.jsonl is named when the run ends, once, with how
// often the run waited for it; a disk that keeps up is not.
#include "run_journal.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace llmload::app {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct JournalDir {
  fs::path path = fs::temp_directory_path() / ("llmload-journal-" + std::to_string(::getpid()));
  JournalDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~JournalDir() { fs::remove_all(path); }
};

// Every line 1 KiB with its newline, numbered.
RunJournal::LineFn kibibyte_lines() {
  return [](const analysis::RequestRecord& r) {
    std::string line = "{\"index\": " + std::to_string(r.index) + ", \"pad\": \"";
    line.append(1021 - line.size(), 'x');
    return line + "\"}";
  };
}

// The lines' indexes, "0..N" when they are 0, 1, ..., N in order, else the first that is not.
std::string line_indexes(const std::string& text) {
  std::istringstream in(text);
  int expect = 0;
  for (std::string line; std::getline(in, line); ++expect) {
    if (line.rfind("{\"index\": " + std::to_string(expect) + ",", 0) != 0) {
      return "line " + std::to_string(expect) + ": " + line.substr(0, 20);
    }
  }
  return "0.." + std::to_string(expect - 1);
}

// What a run into `dir` left: stderr, the journal's waits, and the bytes requests.jsonl got.
struct BehindRun {
  std::string err;
  std::uint64_t waits = 0;
  bool whole = false;
  std::string got;
};

// requests.jsonl is a FIFO that nobody reads until the appends stop getting anywhere (a pipe takes
// 64 KiB, the journal's queue here 4 KiB): the disk falls behind and the run waits for it.
BehindRun run_into_a_disk_that_falls_behind(const fs::path& dir) {
  BehindRun out;
  const fs::path fifo = dir / "requests.jsonl";
  if (::mkfifo(fifo.c_str(), 0600) != 0) return out;
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // the journal's open then returns
  if (reader < 0) return out;
  constexpr int kLines = 1000;
  std::atomic<int> appended{0};
  // The pipe's capacity in 1 KiB lines (64 KiB unless the user's pipes are over their limit).
  const int pipe_lines = std::max(1, ::fcntl(reader, F_GETPIPE_SZ) / 1024);
  std::thread drain([&] {
    // Read nothing until the appends have stopped for 200 ms past a full pipe: append then waits
    // for the disk. At most 20 s.
    int seen = -1;
    auto still_since = std::chrono::steady_clock::now();
    const auto give_up = still_since + 20s;
    while (std::chrono::steady_clock::now() < give_up) {
      const int now_seen = appended.load();
      if (now_seen == kLines) break;
      if (now_seen != seen) {
        seen = now_seen;
        still_since = std::chrono::steady_clock::now();
      } else if (seen >= pipe_lines && std::chrono::steady_clock::now() - still_since >= 200ms) {
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    ::fcntl(reader, F_SETFL, 0);
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.got.append(buf, static_cast<std::size_t>(n));
    }
  });
  ::testing::internal::CaptureStderr();
  {
    RunJournal journal(dir.string(), nlohmann::json::object(), kibibyte_lines(), 4096);
    for (int i = 0; i < kLines; ++i) {
      analysis::RequestRecord r;
      r.index = i;
      journal.append(r);
      appended.store(i + 1);
    }
    journal.close();
    journal.close();  // says it once
    out.waits = journal.waits();
    out.whole = journal.whole(kLines);
  }
  out.err = ::testing::internal::GetCapturedStderr();
  drain.join();
  ::close(reader);
  return out;
}

// close() says so on stderr, once, naming the directory, the bound and how often; nothing is lost
// or reordered.
TEST(RunJournal, ADiskThatFellBehindIsNamedWhenTheRunEnds) {
  JournalDir dir;
  const BehindRun run = run_into_a_disk_that_falls_behind(dir.path);
  EXPECT_GT(run.waits, 0u);
  EXPECT_TRUE(run.whole);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.err, m,
                                std::regex("the disk under (\\S+) fell 4 KiB behind requests\\.jsonl (\\d+) "
                                           "time\\(s\\), and the run waited for it: result\\.json's schedule "
                                           "lag says whether any request went out late")))
      << run.err;
  EXPECT_EQ(m[1].str(), dir.path.string());
  EXPECT_EQ(std::stoull(m[2].str()), run.waits);
  EXPECT_EQ(run.err.find("fell", run.err.find("fell") + 1), std::string::npos) << "said more than once: " << run.err;
  EXPECT_EQ(run.got.size(), std::size_t{1000} * 1024);
  EXPECT_EQ(line_indexes(run.got), "0..999") << "lines lost or out of order";
}

// A disk that keeps up (a regular file, the queue at its default): no warning.
TEST(RunJournal, NoWarningWhenTheDiskKeepsUp) {
  JournalDir dir;
  ::testing::internal::CaptureStderr();
  {
    RunJournal journal(dir.path.string(), nlohmann::json::object(), kibibyte_lines());
    for (int i = 0; i < 200; ++i) {
      analysis::RequestRecord r;
      r.index = i;
      journal.append(r);
    }
    journal.close();
    EXPECT_EQ(journal.waits(), 0u);
    EXPECT_TRUE(journal.whole(200));
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  std::ifstream in(dir.path / "requests.jsonl");
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 200);
}

}  // namespace
}  // namespace llmload::app
