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
  if (tmpdir_env != nullptr && *tmpdir_env != '\0') {
    if (const auto kind = probe(tmpdir_env); kind != DirKind::unusable) {
      return {tmpdir_env, kind == DirKind::memory};
    }
  }
  const auto tmp = probe("/tmp");
  if (tmp == DirKind::disk) return {"/tmp", false};
  const auto var_tmp = probe("/var/tmp");
  if (var_tmp == DirKind::disk) return {"/var/tmp", false};
  if (tmp == DirKind::memory) return {"/tmp", true};
  if (var_tmp == DirKind::memory) return {"/var/tmp", true};
  return {"/tmp", false, /*usable=*/false};
}

TempDir temp_dir() { return choose_temp_dir(std::getenv("TMPDIR"), probe_dir); }

std::optional<std::string> temp_dir_warning() {
  if (temp_dir().usable) return std::nullopt;
  return std::string(
      "no temporary directory can be written ($TMPDIR, /tmp, /var/tmp), so the run's records will be kept in "
      "memory, which grows with the run: set TMPDIR to a writable directory on disk (in a pod with "
      "readOnlyRootFilesystem, mount an emptyDir at /tmp)");
}

int open_anonymous_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;  // no O_TMPFILE there
  std::string name = dir + "/llmload-spill-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  ::unlink(buf.data());
  return fd;
}

}  // namespace llmload
