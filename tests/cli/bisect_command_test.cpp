// `lockstep bisect` as the command line calls it (bisect_command), in this
// process over a real git repository and a fake launcher: a line per step
// as it ends, the conclusion naming the first bad commit, the summary line
// with its exit code, and --json. The search itself is bisect/'s
// (tests/bisect/bisect_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "bisect/bisect_fixture.h"
#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {
using testing::FakeLauncher;
using testing::lr_launcher;
using testing::Repo;

TEST(BisectCommand, SaysEachStepTheFirstBadCommitAndTheSummaryAndWritesJson) {
  Repo repo("cli", 8, [](int k) { return k >= 5 ? 0.2 : 0.1; });
  BisectCliOptions o;
  o.bisect = repo.options(0, 7);
  o.json_out = o.bisect.out_dir + "-bisect.json";
  o.jobs = 1;
  FakeLauncher l = lr_launcher();
  std::string out;
  ASSERT_EQ(testing::captured([&] { return bisect_command(o, l); }, out), to_int(ExitCode::kRegression)) << out;
  auto commit = [&](int k) {
    return repo.hash(k).substr(0, 7) + " commit " + std::to_string(k) + " (Ann <ann@example.org>, ";
  };
  EXPECT_EQ(out.rfind("bisect: [end] " + commit(0), 0), 0u) << out;
  EXPECT_NE(out.find("\nbisect: [end] " + commit(7)), std::string::npos) << out;
  EXPECT_NE(out.find("\nbisect: " + commit(5)), std::string::npos) << out;
  EXPECT_NE(out.find("\nbisect: first bad commit: " + commit(5)), std::string::npos) << out;
  EXPECT_NE(out.find("\n  against its parent: "), std::string::npos) << out;
  nlohmann::json j = parse_json_file(o.json_out);
  EXPECT_EQ(j["lockstep_report"], "bisect");
  EXPECT_EQ(j["exit"], 1);
  EXPECT_EQ(j["first_bad"]["hash"], repo.hash(5));
  EXPECT_EQ(j["range"], 7);
  const size_t tested = j["steps"].size() - 2;  // the two ends are steps too
  EXPECT_EQ(j["runs"], static_cast<int>(l.calls.size()));
  const std::string summary = "bisect: 7 commits, " + std::to_string(tested) + " tested besides the two ends, " +
                              std::to_string(l.calls.size()) + " runs; exit 1\n";
  ASSERT_GE(out.size(), summary.size());
  EXPECT_EQ(out.substr(out.size() - summary.size()), summary) << out;
}

TEST(BisectCommand, AJsonFileThatIsNotABisectReportIsRefusedBeforeAnyRun) {
  Repo repo("cli-json", 3, [](int k) { return k >= 2 ? 0.2 : 0.1; });
  BisectCliOptions o;
  o.bisect = repo.options(0, 2);
  o.json_out = repo.path() + "/history.txt";  // a file of the user's
  o.json_given = true;
  FakeLauncher l = lr_launcher();
  std::string out;
  try {
    testing::captured([&] { return bisect_command(o, l); }, out);
    ADD_FAILURE() << "no refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("--json " + o.json_out), std::string::npos) << e.what();
  }
  EXPECT_TRUE(l.calls.empty());
}

}  // namespace
}  // namespace lockstep
