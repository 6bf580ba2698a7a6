// MappedFile: a file's bytes as they are on disk, zeros after them for
// simdjson, read_file's refusals, and exit 2 (not a crash) when another
// process shortens the file under it.
#include "core/mapped_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// A folder of this test's own, removed afterwards.
class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep-mapped-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST_F(MappedFileTest, HoldsTheBytesThenAtLeast64Zeros) {
  const fs::path& d = dir_;
  for (size_t size : {size_t{1}, size_t{4095}, size_t{4096}, size_t{10000}}) {
    std::string text(size, 'x');
    text[0] = '{';
    write(d / "f.json", text);
    MappedFile f((d / "f.json").string());
    EXPECT_EQ(f.text(), text);
    ASSERT_GE(f.capacity(), size + 64);
    for (size_t i = size; i < size + 64; ++i) ASSERT_EQ(f.text().data()[i], '\0') << "byte " << i;
  }
  write(d / "empty.json", "");
  MappedFile empty((d / "empty.json").string());
  EXPECT_EQ(empty.text(), "");
  EXPECT_GE(empty.capacity(), 64u);
}

TEST_F(MappedFileTest, RefusesWhatReadFileRefuses) {
  const fs::path& d = dir_;
  auto message = [](const std::string& path) {
    try {
      MappedFile f(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(d.string()), d.string() + ": cannot read: is a directory");
  EXPECT_EQ(message((d / "none.json").string()), (d / "none.json").string() + ": cannot read: No such file or directory");
  EXPECT_EQ(message("/dev/null"), "/dev/null: cannot read: not a regular file");
}

// A writer that truncates the file while it is mapped (a trainer rewriting
// its record in place): the lost pages raise SIGBUS, said as exit 2.
using MappedFileDeathTest = MappedFileTest;

TEST_F(MappedFileDeathTest, AFileShortenedWhileMappedIsExit2NamingIt) {
  std::string path = (dir_ / "run.json").string();
  write(dir_ / "run.json", std::string(3 * 4096, ' '));
  EXPECT_EXIT(
      {
        MappedFile f(path);
        fs::resize_file(path, 0);
        volatile char c = f.text()[2 * 4096 + 7];
        (void)c;
        std::exit(0);
      },
      ::testing::ExitedWithCode(2), "lockstep: error: " + path + ": changed while being read");
}

}  // namespace
}  // namespace lockstep
