// Every test process removes, when it ends, the folders under the temp dir
// it made in lockstep's naming, "lockstep-<what>-<its pid>" (a folder per
// test's process: ctest runs each test in one). KEEP=1 keeps them, to look
// at a failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class TempCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (std::getenv("KEEP")) return;
    namespace fs = std::filesystem;
    const std::string suffix = "-" + std::to_string(::getpid());
    std::error_code ec;
    for (fs::directory_iterator it(fs::temp_directory_path(), ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.rfind("lockstep-", 0) == 0 && name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        std::error_code rm;
        fs::remove_all(it->path(), rm);
      }
    }
  }
};

const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new TempCleanup);

}  // namespace
