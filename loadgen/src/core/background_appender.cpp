#include "llmload/loadgen/background_appender.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace llmload {

BackgroundAppender::BackgroundAppender(int fd, Options options) : fd_(fd), options_(options) {
  options_.chunk = std::max<std::size_t>(options_.chunk, 1);
  options_.max_pending = std::max(options_.max_pending, options_.chunk);
  writer_ = std::thread([this] { writer_loop(); });
}

BackgroundAppender::~BackgroundAppender() { close(); }

int BackgroundAppender::write_all(int fd, std::string_view bytes, std::size_t& done) {
  done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno != 0 ? errno : EIO;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

void BackgroundAppender::writer_loop() {
  std::string batch;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_writer_.wait_for(lock, options_.flush_interval,
                          [&] { return stop_ || flush_ || queued_.size() >= options_.chunk; });
    flush_ = false;
    if (queued_.empty()) {
      if (stop_) return;
      continue;
    }
    batch.clear();
    batch.swap(queued_);  // the two buffers take turns: no allocation once both have grown
    in_flight_ = batch.size();
    lock.unlock();
    progress_.notify_all();  // room in the queue for an append waiting at max_pending
    std::size_t done = 0;
    const int err = write_all(fd_, batch, done);
    lock.lock();
    written_ += done;
    in_flight_ = 0;
    if (err != 0) {
      if (options_.keep_unwritten) {
        unwritten_.assign(batch, done);
        unwritten_ += queued_;
      }
      std::string().swap(queued_);
      error_.store(err, std::memory_order_release);
      progress_.notify_all();
      return;
    }
    progress_.notify_all();
  }
}

bool BackgroundAppender::append(std::string_view bytes) {
  if (closed_) return false;
  std::unique_lock lock(mutex_);
  if (finished_) {  // no writer: kept in memory, after the file's bytes (and any a failure kept)
    appended_ += bytes.size();
    if (error() == 0 || options_.keep_unwritten) unwritten_.append(bytes);
    return error() == 0;
  }
  if (error() == 0 && queued_.size() >= options_.max_pending) {
    ++waits_;
    flush_ = true;
    wake_writer_.notify_one();
    progress_.wait(lock, [&] { return queued_.size() < options_.max_pending || error() != 0; });
  }
  appended_ += bytes.size();
  if (error() != 0) {
    if (options_.keep_unwritten) unwritten_.append(bytes);
    return false;
  }
  const bool below = queued_.size() < options_.chunk;
  queued_.append(bytes);
  if (below && queued_.size() >= options_.chunk) {
    lock.unlock();
    wake_writer_.notify_one();
  }
  return true;
}

bool BackgroundAppender::sync() {
  if (closed_) return error() == 0;
  std::unique_lock lock(mutex_);
  if (!queued_.empty()) {
    flush_ = true;
    wake_writer_.notify_one();
  }
  progress_.wait(lock, [&] { return error() != 0 || (queued_.empty() && in_flight_ == 0); });
  return error() == 0 && unwritten_.empty();
}

std::ptrdiff_t BackgroundAppender::read_at(std::uint64_t offset, char* out, std::size_t n) {
  if (closed_) {
    errno = EBADF;
    return -1;
  }
  std::unique_lock lock(mutex_);
  if (offset >= written_ && offset < appended_ && error() == 0 && !finished_) {  // queued or being written
    flush_ = true;
    wake_writer_.notify_one();
    progress_.wait(lock, [&] { return written_ > offset || error() != 0; });
  }
  if (offset < written_) {
    const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n, written_ - offset));
    lock.unlock();  // written bytes do not change: read them while the writer goes on
    ssize_t got = 0;
    do {
      got = ::pread(fd_, out, k, static_cast<off_t>(offset));
    } while (got < 0 && errno == EINTR);
    return got;
  }
  const std::uint64_t rel = offset - written_;
  if (rel >= unwritten_.size()) return 0;
  const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n, unwritten_.size() - rel));
  std::memcpy(out, unwritten_.data() + rel, k);
  return static_cast<std::ptrdiff_t>(k);
}

void BackgroundAppender::finish() {
  if (closed_ || finished_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_writer_.notify_one();
  if (writer_.joinable()) writer_.join();  // it wrote the queue (or failed, keeping the rest)
  std::lock_guard lock(mutex_);
  finished_ = true;
}

int BackgroundAppender::close() {
  if (closed_) return error();
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_writer_.notify_one();
  if (writer_.joinable()) writer_.join();
  closed_ = true;
  int err = error();
  if (fd_ >= 0 && ::close(fd_) != 0 && err == 0) err = errno != 0 ? errno : EIO;
  fd_ = -1;
  if (err != 0) error_.store(err, std::memory_order_release);
  return err;
}

}  // namespace llmload
