// bisect() over real git repositories (made with git in a scratch folder)
// and a fake launcher whose records follow the learning rate in each
// commit's smoke config: the first bad commit in few steps, goldens never
// read, skipped commits with their reasons, flaky ends, an empty range,
// and the user's work tree, index, HEAD and git bisect state untouched.
#include "bisect/bisect.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/atomic_file.h"
#include "core/json_io.h"
#include "bisect/bisect_fixture.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::lr_launcher;
using testing::make_gate_record;
using testing::Repo;
using testing::sh;

TEST(Bisect, NamesTheCommitThatMovedTheCurveAndNeverReadsAGolden) {
  // 40 commits: 23 changes the learning rate by 1e-4; 31 re-blesses the
  // golden (here: a file that would not even parse).
  Repo repo("forty", 40, [](int k) { return k >= 23 ? 0.1001 : 0.1; }, [](int k, const fs::path& d) {
    if (k == 31) {
      fs::create_directories(d / "goldens" / "unit");
      write_file_atomically((d / "goldens" / "unit" / "cpu-x86_64-avx2.json").string(), "{ not a golden");
    }
  });
  FakeLauncher l = lr_launcher();
  BisectResult r = bisect(repo.options(0, 39), l);
  EXPECT_EQ(r.code, ExitCode::kRegression) << r.message;
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_EQ(r.first_bad.hash, repo.hash(23));
  EXPECT_EQ(r.first_bad.subject, "commit 23");
  EXPECT_EQ(r.first_bad.author, "Ann <ann@example.org>");
  EXPECT_EQ(r.range, 39);
  EXPECT_LE(r.steps.size(), 8u);  // the two ends and at most ceil(log2 39) = 6 steps
  EXPECT_TRUE(r.steps[0].end && r.steps[1].end);
  EXPECT_EQ(r.steps[0].commit.hash, repo.hash(0));
  EXPECT_NE(r.divergence.find("loss"), std::string::npos) << r.divergence;
  for (const auto& s : r.steps) EXPECT_NE(s.verdict, BisectStep::Verdict::kSkip) << s.why;
  EXPECT_EQ(r.runs, static_cast<int>(r.steps.size()) * 2);  // 2 runs per commit
  EXPECT_EQ(l.calls.front().out, repo.options(0, 39).out_dir + "/bisect/" + repo.hash(0).substr(0, 12) + "/unit-1.json");
}

TEST(Bisect, LeavesTheWorkTreeIndexHeadAndGitBisectAlone) {
  Repo repo("untouched", 6, [](int k) { return k >= 3 ? 0.2 : 0.1; });
  write_file_atomically(repo.path() + "/notes.txt", "uncommitted\n");
  std::string status = sh("git -C '" + repo.path() + "' status --porcelain");
  std::string head = sh("git -C '" + repo.path() + "' rev-parse HEAD");
  FakeLauncher l = lr_launcher();
  BisectResult r = bisect(repo.options(0, 5), l);
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_EQ(r.first_bad.hash, repo.hash(3));
  EXPECT_EQ(sh("git -C '" + repo.path() + "' status --porcelain"), status);
  EXPECT_EQ(sh("git -C '" + repo.path() + "' rev-parse HEAD"), head);
  EXPECT_FALSE(fs::exists(repo.path() + "/.git/BISECT_LOG"));
  EXPECT_FALSE(fs::exists(repo.path() + "/.git/worktrees"));
}

TEST(Bisect, CommitsWithoutTheSmokeAreSkippedWithTheReason) {
  // The config is gone in commits 1..4 and back, with another lr, in 5.
  Repo repo("missing", 9, [](int k) { return k >= 1 && k <= 4 ? -1.0 : k >= 5 ? 0.2 : 0.1; });
  FakeLauncher l = lr_launcher();
  BisectOptions o = repo.options(0, 8);
  o.smokes = {"smoke/unit.json"};
  BisectResult r = bisect(o, l);
  EXPECT_EQ(r.code, ExitCode::kRegression);
  EXPECT_FALSE(r.found);
  int skipped = 0;
  for (const auto& s : r.steps)
    if (s.verdict == BisectStep::Verdict::kSkip) {
      ++skipped;
      EXPECT_EQ(s.why, "smoke/unit.json does not exist at " + s.commit.hash.substr(0, 7));
    }
  EXPECT_GE(skipped, 1);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_EQ(r.candidates.back().hash, repo.hash(5));
  EXPECT_EQ(r.message.rfind("the first bad commit is one of ", 0), 0u) << r.message;
}

TEST(Bisect, ANondeterministicStepIsSkippedAfterItsReruns) {
  Repo repo("nondet", 9, [](int k) { return k >= 6 ? 0.2 : 0.1; }, [](int k, const fs::path& d) {
    fs::path marker = d / "smoke" / "nondeterministic";
    if (k == 4) write_file_atomically(marker.string(), "x");
    else fs::remove(marker);
  });
  FakeLauncher l = lr_launcher();
  BisectResult r = bisect(repo.options(0, 8), l);
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_EQ(r.first_bad.hash, repo.hash(6));
  bool saw = false;
  for (const auto& s : r.steps)
    if (s.commit.hash == repo.hash(4)) {
      saw = true;
      EXPECT_EQ(s.verdict, BisectStep::Verdict::kSkip);
      EXPECT_EQ(s.why.rfind("nondeterministic in 2 attempt(s): smoke/unit.json: run 2 differs from run 1 at ", 0), 0u)
          << s.why;
      EXPECT_EQ(s.runs, 4);
    }
  EXPECT_TRUE(saw);
}

TEST(Bisect, AFlakyGoodEndStopsTheBisectSayingSo) {
  Repo repo("flaky-good", 5, [](int k) { return k >= 3 ? 0.2 : 0.1; }, [](int k, const fs::path& d) {
    fs::path marker = d / "smoke" / "nondeterministic";
    if (k == 0) write_file_atomically(marker.string(), "x");
    else fs::remove(marker);
  });
  FakeLauncher l = lr_launcher();
  BisectResult r = bisect(repo.options(0, 4), l);
  EXPECT_EQ(r.code, ExitCode::kNondeterministic);
  EXPECT_EQ(r.message.rfind("the good end " + repo.hash(0).substr(0, 7) + " commit 0 (Ann <ann@example.org>, ", 0), 0u)
      << r.message;
  EXPECT_NE(r.message.find(") is flaky: smoke/unit.json: run 2 differs from run 1"), std::string::npos) << r.message;
  EXPECT_EQ(r.steps.size(), 1u);
}

TEST(Bisect, ABadEndThatPassesHasNothingToBisect) {
  Repo repo("no-change", 4, [](int) { return 0.1; });
  FakeLauncher l = lr_launcher();
  BisectResult r = bisect(repo.options(0, 3), l);
  EXPECT_EQ(r.code, ExitCode::kBadInput);
  EXPECT_EQ(r.message.rfind("nothing to bisect: the bad end " + repo.hash(3).substr(0, 7), 0), 0u) << r.message;
}

TEST(Bisect, AFailedBuildSkipsTheCommit) {
  Repo repo("build", 7, [](int k) { return k >= 4 ? 0.2 : 0.1; }, [](int k, const fs::path& d) {
    write_file_atomically((d / "build.sh").string(), k == 3 ? "echo broken >&2; exit 3\n" : "exit 0\n");
  });
  FakeLauncher l = lr_launcher();
  BisectOptions o = repo.options(0, 6);
  o.build = "sh build.sh";
  BisectResult r = bisect(o, l);
  EXPECT_FALSE(r.found);
  ASSERT_EQ(r.candidates.size(), 2u);  // 3 (skipped) or 4
  EXPECT_EQ(r.candidates[0].hash, repo.hash(3));
  EXPECT_EQ(r.candidates[1].hash, repo.hash(4));
  for (const auto& s : r.steps)
    if (s.commit.hash == repo.hash(3))
      EXPECT_EQ(s.why.rfind("the build exited with status 3 (log ", 0), 0u) << s.why;
}

TEST(Bisect, BadRevisionsAreRefused) {
  Repo repo("revs", 3, [](int) { return 0.1; });
  FakeLauncher l = lr_launcher();
  BisectOptions o = repo.options(0, 2);
  o.good = "no-such-branch";
  try {
    bisect(o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()).rfind("'no-such-branch': names no commit of ", 0), 0u) << e.what();
  }
  for (std::vector<std::string> smokes : {std::vector<std::string>{"/abs/smoke.json"}, {"../smoke"}, {""},
                                            {"smoke", "smoke/./"}}) {
    o = repo.options(0, 2);
    o.smokes = smokes;
    EXPECT_THROW(bisect(o, l), Error) << smokes.front();
  }
  o = repo.options(0, 2);
  o.smokes = {"smoke", "smoke/unit.json"};  // a folder and a config in it
  try {
    bisect(o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is named twice (a folder and a config in it?)"), std::string::npos) << e.what();
  }
  l.calls.clear();
  o = repo.options(2, 0);  // reversed
  EXPECT_THROW(bisect(o, l), Error);
  o = repo.options(1, 1);
  EXPECT_THROW(bisect(o, l), Error);
  EXPECT_TRUE(l.calls.empty());
}

}  // namespace
}  // namespace lockstep
