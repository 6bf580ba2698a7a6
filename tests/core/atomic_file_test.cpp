#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(AtomicFile, WritesCreatesParentsAndLeavesNoTemporaries) {
  fs::path d = fresh_dir("atomic");
  std::string path = (d / "a" / "b" / "golden.json").string();
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  EXPECT_EQ(read_file(path), "second");
  size_t files = 0;
  for (auto& e : fs::directory_iterator(d / "a" / "b")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST(AtomicFile, FailureLeavesTargetUntouched) {
  fs::path d = fresh_dir("atomic-fail");
  std::string target = (d / "golden.json").string();
  write_file_atomically(target, "old");
  // A directory where the file's parent should be: the write must fail.
  std::string blocked = (d / "golden.json" / "x.json").string();
  EXPECT_THROW(write_file_atomically(blocked, "new"), Error);
  EXPECT_EQ(read_file(target), "old");
}

TEST(AtomicFile, ReadMissingIsExit2NamingThePath) {
  try {
    read_file("/nonexistent/lockstep.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "/nonexistent/lockstep.json: cannot read: No such file or directory");
  }
}

TEST(AtomicFile, NeverReplacesSomethingThatIsNotARegularFile) {
  // As root, a rename over /dev/null would replace the device node.
  EXPECT_THROW(write_file_atomically("/dev/null", "x"), Error);
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_THROW(write_file_atomically(std::filesystem::temp_directory_path().string(), "x"), Error);
}

}  // namespace
}  // namespace lockstep
