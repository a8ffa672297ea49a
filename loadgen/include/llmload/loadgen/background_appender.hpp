#pragma once
// Appends bytes to a file from a thread of its own, so that the thread that measures never waits
// for the disk. A write(2) to a busy disk can block for a long time (the kernel pauses a writer
// when too much of memory waits to be written back); on the event loop that is every request due
// meanwhile sent late. Measured (docs/benchmarks.md, "A busy disk"): beside a `dd` filling the
// disk, a 4 KiB write of requests.jsonl on the event loop blocked for 1.0-2.4 s in 3 of 14 runs,
// and those runs sent requests up to 2.4 s late.
//
// - append() copies the bytes into a queue and returns; it wakes the writer only when a chunk
//   (64 KiB) is queued, so most appends cost a copy and an uncontended lock, no system call.
// - The writer writes what is queued when a chunk is full, and at least every flush_interval, so a
//   process killed outright loses at most the last interval's bytes, as before.
// - The queue is bounded (max_pending): past it, append() waits for the disk (memory stays flat
//   whatever the disk does) and counts the wait.
// - A failed write stops the writing and keeps its errno (error()). With keep_unwritten, every byte
//   not written (from the failed write on, and all appended after) stays in memory and read_at()
//   reads it as if it had been written: nothing is lost. Without it, they are dropped.
//
// Threading: append, sync, read_at, close and the counters belong to one thread (the owner);
// error() may be read from any.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace llmload {

class BackgroundAppender {
 public:
  /// The default bound of the queue (Options::max_pending); the run's warning names it.
  static constexpr std::size_t kDefaultMaxPending = 16 * 1024 * 1024;

  struct Options {
    std::size_t chunk = 64 * 1024;                // the writer is woken when this much is queued
    std::size_t max_pending = kDefaultMaxPending;  // append() waits past this much queued
    std::chrono::milliseconds flush_interval{1000};  // queued bytes are written at least this often
    bool keep_unwritten = false;                  // after a failed write, keep the bytes in memory
  };

  /// Takes the descriptor (open for writing); close() or the destructor closes it.
  BackgroundAppender(int fd, Options options);
  ~BackgroundAppender();
  BackgroundAppender(const BackgroundAppender&) = delete;
  BackgroundAppender& operator=(const BackgroundAppender&) = delete;

  /// Queues the bytes. Returns false once a write has failed (the bytes are then kept in memory
  /// with keep_unwritten, dropped without).
  bool append(std::string_view bytes);
  /// Waits until every byte appended so far is written, or a write failed; whether all were written.
  bool sync();
  /// Copies up to `n` bytes of the stream from `offset` into `out` (written bytes from the file, the
  /// ones a failed write left from memory); 0 at the end. Waits for bytes still being written.
  /// Returns -1 with errno set if reading the file fails.
  std::ptrdiff_t read_at(std::uint64_t offset, char* out, std::size_t n);
  /// Writes what is queued and stops the writer thread, keeping the descriptor for read_at: for an
  /// appender whose appending is over (a store filled once and then only read). Bytes appended
  /// after it are kept in memory and read back in order (sync() then says they are not written).
  /// Idempotent; close() still closes (and returns 0 even though such bytes were never written).
  void finish();
  /// Whether the writer thread runs (until finish() or close()).
  bool writer_running() const { return writer_.joinable(); }
  /// Writes what is queued, stops the writer and closes the descriptor; the first error (errno
  /// value) of a write or of close(2), 0 if none (bytes kept in memory after finish() are not an
  /// error: sync() is what says they are not written). Idempotent. Nothing may be read or
  /// appended after.
  int close();

  /// The first failed write's errno, 0 while none failed.
  int error() const { return error_.load(std::memory_order_acquire); }
  /// Bytes appended (written, queued or kept) so far.
  std::uint64_t appended() const { return appended_; }
  /// How many times append() waited because max_pending bytes were queued.
  std::uint64_t waits() const { return waits_; }

 private:
  void writer_loop();
  // Writes `bytes` whole (partial writes and EINTR retried); 0 or the errno of the failure, with
  // `done` the bytes written before it.
  static int write_all(int fd, std::string_view bytes, std::size_t& done);

  int fd_;
  Options options_;
  std::uint64_t appended_ = 0;
  std::uint64_t waits_ = 0;
  bool closed_ = false;
  bool finished_ = false;  // finish(): no writer thread; later appends are kept in unwritten_
  std::atomic<int> error_{0};

  std::mutex mutex_;
  std::condition_variable wake_writer_;  // a chunk is queued, or stop
  std::condition_variable progress_;     // bytes were written or failed: appenders, sync, read_at
  std::string queued_;                   // appended, not yet taken by the writer
  std::uint64_t written_ = 0;            // bytes in the file
  std::uint64_t in_flight_ = 0;          // taken by the writer, being written
  std::string unwritten_;                // after a failure (keep_unwritten): the bytes past written_
  bool stop_ = false;
  bool flush_ = false;                   // sync() or read_at() wants the queue written now
  std::thread writer_;
};

}  // namespace llmload
