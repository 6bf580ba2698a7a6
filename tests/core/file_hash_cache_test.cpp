// The file-hash cache: a cached hash is served only for the same file
// (device, inode, size, times), never for other bytes.
#include "core/file_hash_cache.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

class FileHashCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-hash-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("LOCKSTEP_CACHE_DIR", (dir_ / "cache").c_str(), 1);
    unsetenv("LOCKSTEP_HASH_CACHE");
  }
  void TearDown() override {
    unsetenv("LOCKSTEP_CACHE_DIR");
    fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    write_file_atomically(path, bytes);
    return path;
  }
  // A clock ten seconds ahead: every file written here has settled.
  static int64_t later() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    return (static_cast<int64_t>(now.tv_sec) + 10) * 1000000000;
  }
  size_t entries() const {
    std::error_code ec;
    size_t n = 0;
    for (auto it = fs::directory_iterator(dir_ / "cache" / "file-hashes", ec); !ec && it != fs::directory_iterator(); ++it) ++n;
    return n;
  }
  fs::path dir_;
};

TEST_F(FileHashCache, TheHashIsTheFilesXxh3) {
  std::string path = write("a.bin", "lockstep");
  EXPECT_EQ(cached_file_xxh3(path), xxh3_128_hex("lockstep", 8));
  EXPECT_EQ(file_xxh3(path), xxh3_128_hex("lockstep", 8));
  EXPECT_EQ(file_hash_cache_dir(), (dir_ / "cache" / "file-hashes").string());
}

TEST_F(FileHashCache, AFileChangedWithinTwoSecondsIsNotCached) {
  std::string path = write("new.bin", "fresh bytes");
  cached_file_xxh3(path);
  EXPECT_EQ(entries(), 0u);
}

TEST_F(FileHashCache, ASettledFileIsCachedAndARewriteIsHashedAgain) {
  std::string path = write("lib.so", "version one");
  EXPECT_EQ(cached_file_xxh3(path, later()), xxh3_128_hex("version one", 11));
  EXPECT_EQ(entries(), 1u);
  EXPECT_EQ(cached_file_xxh3(path, later()), xxh3_128_hex("version one", 11));  // served from the cache
  EXPECT_EQ(entries(), 1u);
  // Same size, mtime set back to the old value: the new inode and ctime
  // still key another entry, so the new bytes are hashed.
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  write("lib.so", "version two");
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(cached_file_xxh3(path, later()), xxh3_128_hex("version two", 11));
}

TEST_F(FileHashCache, AHandEditedEntryIsNotServed) {
  std::string path = write("lib2.so", "payload");
  std::string good = cached_file_xxh3(path, later());
  for (const auto& e : fs::directory_iterator(dir_ / "cache" / "file-hashes")) {
    std::string text = read_file(e.path().string());
    write_file_atomically(e.path().string(), text.substr(0, text.find('\n') + 1) + "not-a-hash\n");
  }
  EXPECT_EQ(cached_file_xxh3(path, later()), good);
}

TEST_F(FileHashCache, OffWithLockstepHashCacheZeroAndErrorsNameTheFile) {
  setenv("LOCKSTEP_HASH_CACHE", "0", 1);
  std::string path = write("off.bin", "x");
  cached_file_xxh3(path, later());
  EXPECT_EQ(entries(), 0u);
  unsetenv("LOCKSTEP_HASH_CACHE");
  try {
    cached_file_xxh3((dir_ / "missing.so").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), (dir_ / "missing.so").string() + ": expected a readable file");
  }
}

}  // namespace
}  // namespace lockstep
