// BackgroundAppender: the thread that appends never waits for the file (only for a full queue),
// every byte arrives in order, and a failed write loses nothing when asked to keep the bytes.
#include "llmload/loadgen/background_appender.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace llmload {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string appender_line(int i) { return "{\"index\": " + std::to_string(i) + ", \"pad\": \"" + std::string(100, 'x') + "\"}\n"; }

// A FIFO is a file whose writes block until someone reads: a disk that does not take the bytes.
struct Fifo {
  fs::path path = fs::temp_directory_path() / ("llmload-appender-" + std::to_string(::getpid()));
  int reader = -1;
  int writer = -1;
  Fifo() {
    fs::remove(path);
    if (::mkfifo(path.c_str(), 0600) != 0) return;
    reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    writer = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ::fcntl(reader, F_SETFL, 0);  // blocking reads from here on
  }
  ~Fifo() {
    if (reader >= 0) ::close(reader);
    fs::remove(path);
  }
  // Reads until the writer closes.
  std::string read_all() const {
    std::string out;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
};

// 4 MiB appended to a file nobody reads yet (a pipe takes 64 KiB): every append returns before
// the first byte is read, and the reader then gets every byte in order.
TEST(BackgroundAppender, AppendsReturnWhileTheFileTakesNothing) {
  Fifo fifo;
  ASSERT_GE(fifo.reader, 0);
  ASSERT_GE(fifo.writer, 0);
  std::atomic<bool> appended{false};
  bool appended_before_reading = false;
  std::string got;
  std::thread reader([&] {
    // Waits for the appends to return (a deadlock breaker, not a time limit the test judges).
    for (int i = 0; i < 600 && !appended.load(); ++i) std::this_thread::sleep_for(100ms);
    appended_before_reading = appended.load();
    got = fifo.read_all();
  });
  std::string want;
  {
    BackgroundAppender file(fifo.writer, {});
    for (int i = 0; want.size() < 4 * 1024 * 1024; ++i) {
      const std::string line = appender_line(i);
      want += line;
      EXPECT_TRUE(file.append(line));
    }
    appended = true;
    EXPECT_EQ(file.waits(), 0u);
    EXPECT_EQ(file.close(), 0);
  }
  reader.join();
  EXPECT_TRUE(appended_before_reading);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
}

// A queue bounded at 4 KiB: past it, append waits for the file (memory stays bounded), counts
// the wait, and nothing is lost or reordered.
TEST(BackgroundAppender, PastMaxPendingAppendWaitsForTheFile) {
  Fifo fifo;
  ASSERT_GE(fifo.reader, 0);
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(300ms);  // the pipe fills, then the queue
    got = fifo.read_all();
  });
  BackgroundAppender::Options options;
  options.chunk = 1024;
  options.max_pending = 4096;
  BackgroundAppender file(fifo.writer, options);
  std::string want;
  for (int i = 0; want.size() < 1024 * 1024; ++i) {
    const std::string line = appender_line(i);
    want += line;
    EXPECT_TRUE(file.append(line));
  }
  EXPECT_GT(file.waits(), 0u);
  EXPECT_EQ(file.close(), 0);
  reader.join();
  EXPECT_TRUE(got == want);
}

// Bytes are written at least every flush_interval without a full chunk: a process killed
// outright loses at most the last interval.
TEST(BackgroundAppender, AFewBytesAreWrittenWithinTheFlushInterval) {
  const fs::path path = fs::temp_directory_path() / ("llmload-appender-flush-" + std::to_string(::getpid()));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  BackgroundAppender::Options options;
  options.flush_interval = 50ms;
  BackgroundAppender file(fd, options);
  ASSERT_TRUE(file.append("one line\n"));
  bool seen = false;
  for (int i = 0; i < 600 && !seen; ++i) {  // up to a minute: the interval, on a busy machine
    std::this_thread::sleep_for(20ms);
    std::error_code ec;
    seen = fs::file_size(path, ec) == 9;
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(file.close(), 0);
  fs::remove(path);
}

// Every write fails (/dev/full: no space). With keep_unwritten the bytes read back from memory
// as if written, appends after the failure included; without it they are dropped.
TEST(BackgroundAppender, AFailedWriteKeepsTheBytesWhenAsked) {
  for (const bool keep : {true, false}) {
    const int full = ::open("/dev/full", O_RDWR | O_CLOEXEC);
    ASSERT_GE(full, 0);
    BackgroundAppender::Options options;
    options.chunk = 4096;
    options.keep_unwritten = keep;
    BackgroundAppender file(full, options);
    std::string want;
    for (int i = 0; i < 2000; ++i) {
      want += appender_line(i);
      file.append(appender_line(i));
    }
    EXPECT_FALSE(file.sync()) << keep;
    EXPECT_EQ(file.error(), ENOSPC);
    EXPECT_FALSE(file.append("after\n"));
    want += "after\n";
    EXPECT_EQ(file.appended(), want.size());
    std::string back;
    char buf[1000];
    for (std::ptrdiff_t n; (n = file.read_at(back.size(), buf, sizeof buf)) > 0;) back.append(buf, static_cast<std::size_t>(n));
    if (keep) {
      EXPECT_TRUE(back == want) << back.size() << " of " << want.size();
    } else {
      EXPECT_TRUE(back.empty()) << back.size();
    }
    EXPECT_EQ(file.close(), ENOSPC);
  }
}

// A file for reading and writing, already unlinked (the system removes it with the last
// descriptor); -1 if it cannot be made.
int unlinked_file(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("llmload-appender-" + name + "-" + std::to_string(::getpid()));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  fs::remove(path);
  return fd;
}

// A reader at the end of what is written waits for bytes still queued, so a pass over a file
// being written reads everything appended before it.
TEST(BackgroundAppender, ReadAtReadsBytesStillQueued) {
  const int fd = unlinked_file("read");
  ASSERT_GE(fd, 0);
  BackgroundAppender::Options options;
  options.flush_interval = 1h;  // nothing is written unless a reader asks
  BackgroundAppender file(fd, options);
  ASSERT_TRUE(file.append("abc"));
  char buf[8] = {};
  ASSERT_EQ(file.read_at(0, buf, sizeof buf), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_EQ(file.read_at(3, buf, sizeof buf), 0);
  EXPECT_EQ(file.close(), 0);
}

// finish(): a filled appender stops its writer thread and is still read; what is appended after
// it is kept in memory and read back in order, and sync() says it was not written.
TEST(BackgroundAppender, FinishStopsTheWriterAndKeepsTheFileForReading) {
  const int fd = unlinked_file("finish");
  ASSERT_GE(fd, 0);
  BackgroundAppender::Options options;
  options.flush_interval = 1h;  // the queue is written by finish() itself
  BackgroundAppender file(fd, options);
  EXPECT_TRUE(file.writer_running());
  ASSERT_TRUE(file.append("abc"));
  file.finish();
  EXPECT_FALSE(file.writer_running());  // joined
  EXPECT_TRUE(file.sync());
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 3);  // written to the file, not held
  ASSERT_TRUE(file.append("de"));
  EXPECT_FALSE(file.sync());  // "de" is in memory
  char buf[8] = {};
  ASSERT_EQ(file.read_at(0, buf, sizeof buf), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
  ASSERT_EQ(file.read_at(3, buf, sizeof buf), 2);
  EXPECT_EQ(std::string(buf, 2), "de");
  EXPECT_EQ(file.read_at(5, buf, sizeof buf), 0);
  EXPECT_EQ(file.appended(), 5U);
  file.finish();  // again: nothing
  EXPECT_EQ(file.close(), 0);
}

}  // namespace
}  // namespace llmload
