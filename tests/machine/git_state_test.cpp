// Git state through libgit2 (machine/git_state.h): a repository owned by
// another user — a CI container's user on a runner's checkout — keeps its
// git.commit, and the record says it was read without git's safe.directory.
#include "machine/git_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace lockstep {
namespace {
namespace fs = std::filesystem;

TEST(GitState, ACheckoutOwnedByAnotherUserKeepsItsCommit) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand the repository to another user";
  fs::path d = fs::temp_directory_path() / ("lockstep-git-owner-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::string cd = "cd '" + d.string() + "' && ";
  ASSERT_EQ(std::system((cd + "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && "
                               "git rev-parse HEAD > head.txt")
                            .c_str()),
            0);
  GitState own = read_git_state(d.string());
  ASSERT_TRUE(own.in_repo) << own.error;
  EXPECT_TRUE(own.owner_note.empty());
  ASSERT_EQ(std::system(("chown -R 65534 '" + d.string() + "'").c_str()), 0);
  GitState other = read_git_state(d.string());
  ASSERT_TRUE(other.in_repo) << other.error;
  EXPECT_EQ(other.commit, own.commit);
  EXPECT_EQ(other.owner_note, "owned by uid 65534, read by uid 0 without git's safe.directory check (lockstep runs "
                              "no hook or config program)");
  EXPECT_EQ(other.dirty_files, std::vector<std::string>{"head.txt"});
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep
