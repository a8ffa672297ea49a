// Where files that grow with a run are kept (common/temp_file.hpp): $TMPDIR, else a directory on
// disk, an anonymous file there; the system's own `stat -f` judges what is in memory.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "llmload/common/temp_file.hpp"
#include "scoped_env.hpp"
#include "subprocess.hpp"

namespace llmload {
namespace temp_file_test {

// A fake system: each directory's kind, unusable unless listed.
std::function<DirKind(const std::string&)> fake_dirs(std::map<std::string, DirKind> kinds) {
  return [kinds = std::move(kinds)](const std::string& dir) {
    const auto it = kinds.find(dir);
    return it == kinds.end() ? DirKind::unusable : it->second;
  };
}

// The file system type coreutils' `stat -f` names for `dir` ("ext2/ext3", "tmpfs", ...).
std::string stat_fs_type(const std::string& dir) {
  const std::string cmd = "stat -f -c %T '" + dir + "' 2>/dev/null";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::array<char, 128> buf{};
  std::string out;
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) out += buf.data();
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace temp_file_test

using temp_file_test::fake_dirs;
using temp_file_test::stat_fs_type;

TEST(TempDir, TmpdirFirstThenADirectoryOnDiskThenTmpInMemory) {
  const auto disk = DirKind::disk;
  const auto memory = DirKind::memory;
  // $TMPDIR is the user's choice, on disk or in memory, when it can be written to.
  auto d = choose_temp_dir("/scratch", fake_dirs({{"/scratch", memory}, {"/tmp", disk}}));
  EXPECT_EQ(d.path, "/scratch");
  EXPECT_TRUE(d.in_memory);
  d = choose_temp_dir("/scratch", fake_dirs({{"/scratch", disk}, {"/tmp", memory}}));
  EXPECT_EQ(d.path, "/scratch");
  EXPECT_FALSE(d.in_memory);
  EXPECT_TRUE(d.usable);
  // A $TMPDIR that is missing or empty is passed over.
  d = choose_temp_dir("/gone", fake_dirs({{"/tmp", disk}}));
  EXPECT_EQ(d.path, "/tmp");
  EXPECT_FALSE(d.in_memory);
  EXPECT_EQ(d.tmpdir_passed_over, "/gone");
  d = choose_temp_dir("", fake_dirs({{"/tmp", disk}}));
  EXPECT_EQ(d.path, "/tmp");
  // /tmp in memory (Debian 13, Fedora): /var/tmp on disk instead.
  d = choose_temp_dir(nullptr, fake_dirs({{"/tmp", memory}, {"/var/tmp", disk}}));
  EXPECT_EQ(d.path, "/var/tmp");
  EXPECT_FALSE(d.in_memory);
  d = choose_temp_dir(nullptr, fake_dirs({{"/var/tmp", disk}}));
  EXPECT_EQ(d.path, "/var/tmp");
  // Nothing on disk: /tmp, and it says the file is held in memory.
  d = choose_temp_dir(nullptr, fake_dirs({{"/tmp", memory}, {"/var/tmp", memory}}));
  EXPECT_EQ(d.path, "/tmp");
  EXPECT_TRUE(d.in_memory);
  d = choose_temp_dir(nullptr, fake_dirs({{"/tmp", memory}}));
  EXPECT_TRUE(d.in_memory);
  EXPECT_TRUE(d.usable);
  // Nothing writable (a read-only root): not usable, whatever $TMPDIR names.
  d = choose_temp_dir("/gone", fake_dirs({}));
  EXPECT_FALSE(d.usable);
  EXPECT_FALSE(d.in_memory);
  d = choose_temp_dir(nullptr, fake_dirs({{"/var/tmp", memory}}));
  EXPECT_EQ(d.path, "/var/tmp");
  EXPECT_TRUE(d.in_memory);
  EXPECT_TRUE(d.usable);
}

TEST(TempDir, WhatIsInMemoryIsWhatStatSays) {
  EXPECT_EQ(probe_dir("/nonexistent-llmload-dir"), DirKind::unusable);
  EXPECT_EQ(probe_dir("/proc/self/status"), DirKind::unusable);  // a file, not a directory
  EXPECT_EQ(probe_dir(""), DirKind::unusable);
  int checked = 0;
  for (const std::string dir : {"/", "/tmp", "/var/tmp", "/dev/shm"}) {
    const std::string type = stat_fs_type(dir);
    if (type.empty()) continue;  // not there, or no coreutils
    const auto kind = probe_dir(dir);
    if (kind == DirKind::unusable) continue;  // not writable by this user
    ++checked;
    EXPECT_EQ(kind == DirKind::memory, type == "tmpfs" || type == "ramfs") << dir << " is " << type;
  }
  if (checked == 0) GTEST_SKIP() << "no writable directory, or no `stat -f`, to compare with";
}

// $TMPDIR set to what cannot be written is passed over, and a run says so.
TEST(TempDir, AnUnwritableTmpdirIsPassedOverAndSaid) {
  const testing::TempDir tmp;
  const std::string missing = tmp.file("missing");
  const testing::ScopedEnv tmpdir("TMPDIR", missing);
  const TempDir d = temp_dir();
  EXPECT_NE(d.path, missing);
  EXPECT_EQ(d.tmpdir_passed_over, missing);
  if (d.usable) {
    const auto w = temp_dir_warning();
    ASSERT_TRUE(w.has_value());
    EXPECT_NE(w->find("TMPDIR=" + missing), std::string::npos) << *w;
    EXPECT_NE(w->find(d.path), std::string::npos) << *w;
  }
  tmpdir.set(tmp.path());
  EXPECT_EQ(temp_dir().path, tmp.path());
  EXPECT_TRUE(temp_dir().tmpdir_passed_over.empty());
  EXPECT_FALSE(temp_dir_warning().has_value());
}

TEST(TempDir, TheAnonymousFileIsInItsDirectoryWithNoName) {
  const testing::TempDir tmp;
  const auto dir = std::filesystem::canonical(tmp.path());  // as /proc/self/fd shows it
  // O_TMPFILE, and the fallback for file systems (or sandboxes) without it.
  for (const auto open_file : {&open_anonymous_file, &open_unlinked_file}) {
    const int fd = open_file(dir.string());
    ASSERT_GE(fd, 0) << std::strerror(errno);
    // The directory stays empty: the file has no name, so nothing is left whatever ends the process.
    EXPECT_TRUE(std::filesystem::is_empty(dir));
    const std::string target = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd)).string();
    EXPECT_EQ(target.rfind(dir.string() + "/", 0), 0u) << target;
    EXPECT_NE(target.find("(deleted)"), std::string::npos) << target;
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ASSERT_EQ(::write(fd, "abc", 3), 3);
    char back[3] = {};
    ASSERT_EQ(::pread(fd, back, 3, 0), 3);
    EXPECT_EQ(std::string(back, 3), "abc");
    ::close(fd);
    errno = 0;
    EXPECT_EQ(open_file((dir / "missing").string()), -1);
    EXPECT_NE(errno, 0);
    EXPECT_TRUE(std::filesystem::is_empty(dir));
  }
}

}  // namespace llmload
