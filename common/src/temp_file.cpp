#include "llmload/common/temp_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace llmload {
namespace {

// From linux/magic.h (not included: it is a kernel header some builds lack).
constexpr long kTmpfsMagic = 0x01021994;
constexpr long kRamfsMagic = 0x858458f6;

}  // namespace

DirKind probe_dir(const std::string& dir) {
  struct stat st {};
  if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return DirKind::unusable;
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return DirKind::unusable;
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return DirKind::disk;  // cannot tell: as on disk
  const auto type = static_cast<long>(fs.f_type);
  return type == kTmpfsMagic || type == kRamfsMagic ? DirKind::memory : DirKind::disk;
}

TempDir choose_temp_dir(const char* tmpdir_env, const std::function<DirKind(const std::string&)>& probe) {
  TempDir d;
  const auto at = [&d](const char* path, bool in_memory) {
    d.path = path;
    d.in_memory = in_memory;
    return d;
  };
  if (tmpdir_env != nullptr && *tmpdir_env != '\0') {
    if (const auto kind = probe(tmpdir_env); kind != DirKind::unusable) return at(tmpdir_env, kind == DirKind::memory);
    d.tmpdir_passed_over = tmpdir_env;
  }
  const auto tmp = probe("/tmp");
  if (tmp == DirKind::disk) return at("/tmp", false);
  const auto var_tmp = probe("/var/tmp");
  if (var_tmp == DirKind::disk) return at("/var/tmp", false);
  if (tmp == DirKind::memory) return at("/tmp", true);
  if (var_tmp == DirKind::memory) return at("/var/tmp", true);
  d.usable = false;
  return at("/tmp", false);
}

TempDir temp_dir() { return choose_temp_dir(std::getenv("TMPDIR"), probe_dir); }

std::optional<std::string> temp_dir_warning() {
  const TempDir d = temp_dir();
  if (!d.usable) {
    return std::string(
        "no temporary directory can be written ($TMPDIR, /tmp, /var/tmp), so the run's records will be kept in "
        "memory, which grows with the run: set TMPDIR to a writable directory on disk (in a pod with "
        "readOnlyRootFilesystem, mount an emptyDir at /tmp)");
  }
  if (!d.tmpdir_passed_over.empty()) {
    return "TMPDIR=" + d.tmpdir_passed_over + " is not a directory this process can write to: the run's records go to " +
           d.path + " instead";
  }
  return std::nullopt;
}

int open_unlinked_file(const std::string& dir) {
  std::string name = dir + "/llmload-spill-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  if (::unlink(buf.data()) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;  // a file that would outlive the process is not made
  }
  return fd;
}

int open_anonymous_file(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno == ENOENT || errno == ENOTDIR) return -1;  // no such directory: nothing else would do
  // No O_TMPFILE there (a file system or kernel without it, a sandbox that refuses it), as
  // glibc's tmpfile() does: a unique name, removed at once.
  return open_unlinked_file(dir);
}

}  // namespace llmload
