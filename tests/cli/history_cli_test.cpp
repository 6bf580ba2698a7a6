// The nightly ledgers from the command line: two CI jobs, each in its own
// clone of a team repository, pull the lockstep-history branch, check with
// --history and push; the second push is refused (the first moved the
// branch), merged and pushed again, so a third clone reads both nights.
// `history add` enters a record made elsewhere once, and a folder without
// ledgers is exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_helpers.h"
#include "core/atomic_file.h"

namespace lockstep::cli_test {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-history-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(HistoryCli, TwoJobsPushingOneAfterTheOtherKeepBothNights) {
  fs::path d = scratch("branch");
  std::string remote = (d / "remote.git").string();
  // The team repository: wine-mlp's smoke and golden, on a bare remote.
  ASSERT_EQ(shell("git init -q --bare -b main '" + remote + "' && git init -q -b main '" + (d / "seed").string() +
                  "' && cd '" + (d / "seed").string() + "' && mkdir smoke goldens && cp '" + kSourceDir +
                  "/smoke/wine-mlp.json' smoke/ && cp -r '" + kSourceDir + "/goldens/wine-mlp' goldens/ && "
                  "git add -A && git -c user.name=t -c user.email=t@t commit -qm team && git push -q '" + remote +
                  "' main").code, 0);
  for (const char* job : {"a", "b", "c"})
    ASSERT_EQ(shell("git clone -q '" + remote + "' '" + (d / job).string() + "' && git -C '" + (d / job).string() +
                    "' config user.name 'CI " + job + "' && git -C '" + (d / job).string() +
                    "' config user.email ci@example.com").code, 0);
  auto night = [&](const char* job) {
    std::string dir = (d / job).string();
    Result pull = lockstep("history pull lockstep-history", "", dir);
    EXPECT_EQ(pull.code, 0) << pull.output;
    Result check = lockstep("check smoke/wine-mlp.json --repeat 1 --out out --history lockstep-history", "", dir);
    EXPECT_EQ(check.code, 0) << check.output;
    return dir;
  };
  std::string a = night("a"), b = night("b");  // both pulled before either pushed
  Result pa = lockstep("history push lockstep-history", "", a);
  ASSERT_EQ(pa.code, 0) << pa.output;
  EXPECT_NE(pa.output.find("history: pushed 1 ledger(s) to lockstep-history at origin (commit "), std::string::npos)
      << pa.output;
  Result pb = lockstep("history push lockstep-history", "", b);
  ASSERT_EQ(pb.code, 0) << pb.output;
  EXPECT_NE(pb.output.find(", merged with the remote's entries)"), std::string::npos) << pb.output;
  EXPECT_EQ(shell("git -C '" + b + "' status --porcelain --untracked-files=no").output, "")
      << "the work tree and index are untouched";

  std::string c = (d / "c").string();
  Result pc = lockstep("history pull lockstep-history", "", c);
  ASSERT_EQ(pc.code, 0) << pc.output;
  Result h = lockstep("history lockstep-history", "", c);
  EXPECT_EQ(h.code, 0) << h.output;
  EXPECT_NE(h.output.find("history: wine-mlp: 2 nights"), std::string::npos) << h.output;
  fs::remove_all(d);
}

TEST(HistoryCli, ARecordIsAddedOnceAndAFolderWithoutLedgersIsExit2) {
  fs::path d = scratch("add");
  std::string run = (d / "run.json").string();
  ASSERT_EQ(lockstep("run " + kSourceDir + "/smoke/wine-mlp.json --out " + run).code, 0);
  Result add = lockstep("history add " + run + " --to " + (d / "h").string());
  EXPECT_EQ(add.code, 0) << add.output;
  EXPECT_NE(add.output.find("-> " + (d / "h" / "wine-mlp.jsonl").string() + " (run "), std::string::npos) << add.output;
  Result again = lockstep("history add " + run + " --to " + (d / "h").string());
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("run_id: expected a run not yet entered"), std::string::npos) << again.output;
  Result shown = lockstep("history " + (d / "h").string());
  EXPECT_EQ(shown.code, 0) << shown.output;
  EXPECT_NE(shown.output.find("history: wine-mlp: 1 night, "), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("last verdict not compared"), std::string::npos) << shown.output;
  fs::create_directories(d / "empty");
  Result none = lockstep("history " + (d / "empty").string());
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find((d / "empty").string() + ": expected a ledger (<smoke>.jsonl): the folder has none"),
            std::string::npos) << none.output;
  Result push_nothing = lockstep("history push " + (d / "empty").string(), "", d.string());
  EXPECT_EQ(push_nothing.code, 2) << push_nothing.output;
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep::cli_test
