#include "file_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace llmload::app {

std::string write_failure_reason(int err) {
  const std::string what = std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT: return what + " (free some space, or choose another --output)";
    case EROFS: return what + " (the file system is mounted read-only: choose another --output)";
    case EACCES:
    case EPERM: return what + " (no permission to write there: choose another --output)";
    default: return what;
  }
}

namespace {

// Writes the whole of `content` to `path` (created or truncated), synced; 0 or the errno.
int write_all(const std::filesystem::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  for (std::size_t done = 0; done < content.size() && err == 0;) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
    } else {
      done += static_cast<std::size_t>(n);
    }
  }
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;  // EINVAL: a device (no sync)
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

}  // namespace

std::optional<std::string> write_file(const std::filesystem::path& path, std::string_view content) {
  if (const int err = write_all(path, content); err != 0) {
    return fmt::format("{}: {}", path.string(), write_failure_reason(err));
  }
  return std::nullopt;
}

std::optional<std::string> write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  int err = write_all(tmp, content);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return fmt::format("{}: {}", path.string(), write_failure_reason(err));
  }
  return std::nullopt;
}

}  // namespace llmload::app
