#include "core/temp_folder.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// A fresh private folder named after its prefix, gone with the object
// (contents included) unless kept.
TEST(TempFolder, IsFreshPrivateAndRemovedUnlessKept) {
  std::string gone, kept;
  {
    TempFolder a("lockstep-unit"), b("lockstep-unit");
    gone = a.path();
    kept = b.path();
    EXPECT_NE(gone, kept);
    EXPECT_EQ(fs::path(gone).parent_path(), fs::temp_directory_path());
    EXPECT_EQ(fs::path(gone).filename().string().rfind("lockstep-unit-", 0), 0u);
    EXPECT_EQ(fs::path(gone).filename().string().size(), std::string("lockstep-unit-").size() + 6);
    EXPECT_EQ(fs::status(gone).permissions() & fs::perms::all, fs::perms::owner_all);
    fs::create_directories(fs::path(gone) / "sub");
    b.keep();
  }
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::is_directory(kept));
  fs::remove_all(kept);
}

}  // namespace
}  // namespace lockstep
