#pragma once
// Where a file that grows with a run is kept while the process runs (the run's record spill, a
// report's kept records): an anonymous file (unlinked at once, so the system removes it whatever
// ends the process) in a directory on disk, so that memory stays flat however long the run is.
//
// std::tmpfile() would always use /tmp (glibc ignores TMPDIR there), and /tmp is a tmpfs on many
// systems (Debian 13, Fedora, Arch): the "file" would then be memory. The rule, in one place:
//   1. $TMPDIR, when set to a directory we may write to (the user's choice, whatever it is on);
//   2. /tmp, when it is on disk;
//   3. /var/tmp, when it is on disk (kept on disk by the FHS; Debian 13 mounts only /tmp as tmpfs);
//   4. /tmp, else /var/tmp, in memory (the caller may say so: TempDir::in_memory);
//   5. none writable (a read-only root, as in a Kubernetes pod with readOnlyRootFilesystem and no
//      volume at /tmp): /tmp, not usable (TempDir::usable), and a file there cannot be made.

#include <functional>
#include <optional>
#include <string>

namespace llmload {

/// What a directory is, for keeping a temporary file in it.
enum class DirKind {
  unusable,  ///< missing, not a directory, or not writable by this process
  disk,
  memory,  ///< tmpfs or ramfs: what is written there is held in memory
};

/// The kind of `dir` as the system says (stat, access, statfs).
DirKind probe_dir(const std::string& dir);

struct TempDir {
  std::string path;
  bool in_memory = false;  ///< files kept there are held in memory (tmpfs, ramfs)
  bool usable = true;      ///< false: no directory of the rule can be written to
  std::string tmpdir_passed_over;  ///< $TMPDIR, when it was set but cannot be written to
};

/// The rule above. `tmpdir_env`: $TMPDIR (null or empty: not set); `probe`: probe_dir in use.
TempDir choose_temp_dir(const char* tmpdir_env, const std::function<DirKind(const std::string&)>& probe);

/// choose_temp_dir with this process's $TMPDIR and the system's answers (asked at each call).
TempDir temp_dir();

/// What a command that keeps records in such a file says at its start: that temp_dir() is not
/// usable (the records will be held in memory), or that $TMPDIR was passed over; else nullopt.
std::optional<std::string> temp_dir_warning();

/// An anonymous read-write file (close-on-exec) in `dir`: O_TMPFILE, else open_unlinked_file.
/// Returns its descriptor, or -1 with errno set.
int open_anonymous_file(const std::string& dir);

/// The fallback: a file with a unique name in `dir`, removed at once (-1 with errno, and no file
/// left, when either step fails).
int open_unlinked_file(const std::string& dir);

}  // namespace llmload
