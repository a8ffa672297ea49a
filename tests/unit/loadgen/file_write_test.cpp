// Results are written whole or not at all, and a failure says what the OS said (file_write.hpp).
#include "file_write.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace llmload::app {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(FileWrite, AtomicWriteReplacesTheFileWholeAndLeavesNoTemporary) {
  const fs::path dir = fs::temp_directory_path() / ("llmload-file-write-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path f = dir / "result.json";
  ASSERT_FALSE(write_file_atomically(f, "{\"a\": 1}\n").has_value());
  ASSERT_FALSE(write_file_atomically(f, "{\"b\": 2}\n").has_value());
  EXPECT_EQ(slurp(f), "{\"b\": 2}\n");
  EXPECT_FALSE(fs::exists(dir / "result.json.tmp"));
  // A directory that does not exist: the OS's reason, and nothing left behind.
  const auto e = write_file_atomically(dir / "missing" / "result.json", "x");
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("No such file or directory"), std::string::npos) << *e;
  fs::remove_all(dir);
}

TEST(FileWrite, AFullDeviceIsNamedWithTheFix) {
  // /dev/full answers every write with ENOSPC.
  const auto e = write_file("/dev/full", std::string(4096, 'x'));
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("No space left on device (free some space"), std::string::npos) << *e;
}

TEST(FileWrite, EveryCommonFailureIsNamedAsWhatItIs) {
  EXPECT_NE(write_failure_reason(EROFS).find("read-only"), std::string::npos);
  EXPECT_EQ(write_failure_reason(EROFS).find("space"), std::string::npos) << "a read-only disk is not a full one";
  EXPECT_NE(write_failure_reason(EACCES).find("no permission"), std::string::npos);
  EXPECT_NE(write_failure_reason(ENOSPC).find("free some space"), std::string::npos);
}

}  // namespace
}  // namespace llmload::app
