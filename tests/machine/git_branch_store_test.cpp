// Files kept on a branch through a real local bare remote: committed
// without touching the work tree or the index, pushed, fetched back; and two
// jobs pushing from the same base both land, the second's rejected push
// retried after a fetch and a merge of each file.
#include "machine/git_branch_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

std::string sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int rc = p ? ::pclose(p) : -1;
  EXPECT_EQ(rc, 0) << command << "\n" << out;
  return out;
}

class BranchStore : public ::testing::Test {
 protected:
  fs::path root_ = fs::temp_directory_path() / ("lockstep-branch-store-" + std::to_string(::getpid()));
  std::string remote_ = (root_ / "remote.git").string();

  void SetUp() override {
    fs::remove_all(root_);
    fs::create_directories(root_);
    sh("git init -q --bare -b main '" + remote_ + "'");
    for (const char* job : {"a", "b"}) {
      std::string d = (root_ / job).string();
      sh("git init -q -b main '" + d + "' && cd '" + d + "' && git config user.name 'CI " + job +
         "' && git config user.email ci@example.com && echo code > code.txt && git add code.txt && "
         "git commit -q -m code && git remote add origin '" + remote_ + "'");
    }
  }
  void TearDown() override { fs::remove_all(root_); }

  BranchStoreOptions in(const char* job) {
    BranchStoreOptions o;
    o.repo = (root_ / job).string();
    return o;
  }
};

// Appends the lines of `ours` that `theirs` lacks: a stand-in for the
// ledgers' union.
std::string union_lines(const std::string&, const std::string& ours, const std::string& theirs, const std::string&) {
  std::string out = theirs;
  size_t at = 0;
  while (at < ours.size()) {
    size_t end = ours.find('\n', at);
    std::string line = ours.substr(at, end - at + 1);
    if (theirs.find(line) == std::string::npos) out += line;
    at = end + 1;
  }
  return out;
}

TEST_F(BranchStore, CommitsWithoutTouchingTheWorkTreeAndFetchesBack) {
  std::string a = (root_ / "a").string();
  EXPECT_FALSE(fetch_branch_files(in("a")).has_value()) << "no branch yet";
  PushOutcome p = commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  EXPECT_EQ(p.attempts, 1);
  EXPECT_FALSE(p.merged);
  EXPECT_EQ(sh("git -C '" + a + "' status --porcelain"), "") << "work tree and index untouched";
  EXPECT_EQ(sh("git -C '" + a + "' rev-parse --abbrev-ref HEAD"), "main\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:s.jsonl"), "night 1\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-parse lockstep-history"), p.commit + "\n");
  auto back = fetch_branch_files(in("b"));
  EXPECT_EQ(back, (std::map<std::string, std::string>{{"s.jsonl", "night 1\n"}}));  // an optional holding them
  EXPECT_EQ(sh("git -C '" + (root_ / "b").string() + "' rev-parse lockstep-history"), p.commit + "\n")
      << "pull starts the local branch at the remote's";
}

TEST_F(BranchStore, TwoJobsFromOneBaseBothLand) {
  commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  fetch_branch_files(in("b"));  // both jobs pulled night 1
  commit_and_push({{"s.jsonl", "night 1\nnight 2 (a)\n"}}, in("a"), union_lines);
  PushOutcome b = commit_and_push({{"s.jsonl", "night 1\nnight 2 (b)\n"}, {"t.jsonl", "t 1\n"}}, in("b"), union_lines);
  EXPECT_EQ(b.attempts, 2) << "the first push was rejected";
  EXPECT_TRUE(b.merged);
  EXPECT_EQ(b.files.at("s.jsonl"), "night 1\nnight 2 (a)\nnight 2 (b)\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:s.jsonl"), "night 1\nnight 2 (a)\nnight 2 (b)\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:t.jsonl"), "t 1\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-list --parents -n 1 lockstep-history").size(), 3 * 41u)
      << "a merge commit: the remote's tip and the rejected commit";
}

// A folder that lacks nights the branch holds (a CI cache miss, a cut
// file) pushes their union with the branch's tip, never their loss as a
// fast-forward; a file only the branch has goes through the merge too.
TEST_F(BranchStore, APushNeverDropsWhatTheBranchHolds) {
  commit_and_push({{"s.jsonl", "night 1\nnight 2\n"}, {"t.jsonl", "t 1\n"}}, in("a"), union_lines);
  std::vector<std::string> merged;
  auto noting = [&](const std::string& name, const std::string& ours, const std::string& theirs,
                    const std::string& theirs_is) {
    merged.push_back(name + (ours.empty() ? " (branch only)" : "") + " from " + theirs_is);
    return union_lines(name, ours, theirs, theirs_is);
  };
  PushOutcome p = commit_and_push({{"s.jsonl", "night 3\n"}}, in("a"), noting);
  EXPECT_EQ(p.attempts, 1);
  EXPECT_FALSE(p.merged) << "nothing came from the remote";
  EXPECT_EQ(merged, (std::vector<std::string>{"s.jsonl from the local branch lockstep-history",
                                              "t.jsonl (branch only) from the local branch lockstep-history"}));
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:s.jsonl"), "night 1\nnight 2\nnight 3\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:t.jsonl"), "t 1\n");
}

// A push of what the branch already holds makes no commit: the tip stays,
// and the remote is where it was.
TEST_F(BranchStore, APushWithNothingNewMakesNoCommit) {
  PushOutcome first = commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  EXPECT_FALSE(first.unchanged);
  PushOutcome again = commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  EXPECT_TRUE(again.unchanged);
  EXPECT_EQ(again.commit, first.commit);
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-list --count lockstep-history"), "1\n");
  PushOutcome more = commit_and_push({{"s.jsonl", "night 1\nnight 2\n"}}, in("a"), union_lines);
  EXPECT_FALSE(more.unchanged);
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-list --count lockstep-history"), "2\n");
}

// A push rewrites the branch's whole tree, so a branch holding a folder
// (a branch of code named by mistake) is refused before anything moves, as
// is the branch checked out here; a refused push leaves the local branch
// where it was. A dot-file such as .gitattributes is a plain file: kept.
TEST_F(BranchStore, ABranchOfCodeOrTheCheckedOutOneIsRefusedAndMovesNothing) {
  auto refusal = [&](const BranchStoreOptions& o) {
    try {
      commit_and_push({{"s.jsonl", "night 1\n"}}, o, union_lines);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "pushed";
    return std::string();
  };
  BranchStoreOptions checked_out = in("a");
  checked_out.branch = "main";
  EXPECT_NE(refusal(checked_out).find("got main, a branch checked out in a work tree of this repository"),
            std::string::npos);
  std::string b = (root_ / "b").string(), a = (root_ / "a").string();
  sh("cd '" + b + "' && mkdir src && echo x > src/a.cpp && git add src && git commit -q -m src && "
     "git push -q origin main:code");
  const std::string tip = sh("git -C '" + remote_ + "' rev-parse code");
  BranchStoreOptions code = in("a");
  code.branch = "code";
  EXPECT_NE(refusal(code).find("code:src: expected a branch of plain files only (ledgers, on a branch of their own "
                               "such as lockstep-history), got a folder: is --branch a branch of code?"),
            std::string::npos);
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-parse code"), tip) << "the remote's branch untouched";
  EXPECT_EQ(sh("git -C '" + a + "' for-each-ref refs/heads/code"), "") << "no local branch left behind";
  // A pull is refused alike: the branch is not a ledger branch.
  try {
    fetch_branch_files(code);
    ADD_FAILURE() << "pulled a branch holding a folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("code:src: expected a branch of plain files only"), std::string::npos) << e.what();
  }

  commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  sh("cd '" + b + "' && git fetch -q origin lockstep-history && git checkout -q -b h FETCH_HEAD && "
     "echo '*.jsonl -text' > .gitattributes && git add .gitattributes && git commit -q -m attrs && "
     "git push -q origin h:lockstep-history && git checkout -q main");
  commit_and_push({{"s.jsonl", "night 1\nnight 2\n"}}, in("a"), union_lines);
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:.gitattributes"), "*.jsonl -text\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:s.jsonl"), "night 1\nnight 2\n");
}

// The branch checked out in a linked work tree (`git worktree add`) is
// refused as the main one is: a commit would leave that index behind it.
TEST_F(BranchStore, ABranchCheckedOutInALinkedWorkTreeIsRefused) {
  std::string a = (root_ / "a").string();
  commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  sh("cd '" + a + "' && git worktree add -q '" + (root_ / "wt").string() + "' lockstep-history");
  try {
    commit_and_push({{"s.jsonl", "night 1\nnight 2\n"}}, in("a"), union_lines);
    ADD_FAILURE() << "pushed to a branch checked out in a linked work tree";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("a branch checked out in a work tree"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:s.jsonl"), "night 1\n");
}

// When the remote moved, what this clone does not push is the remote's as
// it is now: a file changed or removed there is not brought back from this
// clone's older copy; and a merge that adds nothing makes no commit.
TEST_F(BranchStore, AfterTheRemoteMovedItsOtherFilesWinAndNothingNewMakesNoMerge) {
  std::string b = (root_ / "b").string();
  commit_and_push({{"s.jsonl", "night 1\n"}}, in("a"), union_lines);
  fetch_branch_files(in("b"));
  auto on_branch = [&](const std::string& cmd) {
    sh("cd '" + b + "' && git fetch -q origin lockstep-history && git checkout -q -B h FETCH_HEAD && " + cmd +
       " && git commit -q -m edit && git push -q origin h:lockstep-history && git checkout -q main");
  };
  on_branch("printf 'v1\\n' > .gitattributes && printf 'x\\n' > gone.txt && git add .gitattributes gone.txt");
  commit_and_push({{"s.jsonl", "night 1\nnight 2\n"}}, in("a"), union_lines);  // a's branch now holds v1 and gone.txt
  on_branch("printf 'v2\\n' > .gitattributes && git rm -q gone.txt && git add .gitattributes");
  PushOutcome p = commit_and_push({{"s.jsonl", "night 1\nnight 2\nnight 3\n"}}, in("a"), union_lines);
  EXPECT_TRUE(p.merged);
  EXPECT_EQ(sh("git -C '" + remote_ + "' show lockstep-history:.gitattributes"), "v2\n");
  EXPECT_EQ(sh("git -C '" + remote_ + "' ls-tree --name-only lockstep-history"), ".gitattributes\ns.jsonl\n");

  // b pushes a night; a, with nothing b lacks, pushes: no merge commit.
  commit_and_push({{"s.jsonl", "night 1\nnight 2\nnight 3\nnight 4\n"}}, in("b"), union_lines);
  const std::string tip = sh("git -C '" + remote_ + "' rev-parse lockstep-history");
  PushOutcome nothing = commit_and_push({{"s.jsonl", "night 1\nnight 2\nnight 3\n"}}, in("a"), union_lines);
  EXPECT_TRUE(nothing.unchanged);
  EXPECT_EQ(nothing.commit + "\n", tip);
  EXPECT_EQ(sh("git -C '" + remote_ + "' rev-parse lockstep-history"), tip);
  EXPECT_EQ(sh("git -C '" + (root_ / "a").string() + "' rev-parse lockstep-history"), tip) << "a's branch at the remote's";
}

TEST_F(BranchStore, APathOutsideARepositoryOrAnUnknownRemoteIsExit2) {
  BranchStoreOptions o;
  o.repo = root_.string();
  try {
    commit_and_push({{"s.jsonl", "x\n"}}, o, union_lines);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
  }
  o = in("a");
  o.remote = (root_ / "nowhere.git").string();
  try {
    commit_and_push({{"s.jsonl", "x\n"}}, o, union_lines);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment) << e.what();
    EXPECT_NE(std::string(e.what()).find("pushing lockstep-history to " + o.remote), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockstep
