// `lockstep bisect` and `lockstep bisect-env` as the command line calls
// them (bisect_command, bisect_env_command), in this process with a fake
// launcher (bisect over a real git repository): a line per step as it
// ends, the conclusion naming the first bad commit or the culprit
// variable, the summary line with its exit code, and --json. The searches
// themselves are bisect/'s (tests/bisect/).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bisect/bisect_fixture.h"
#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {
using testing::FakeLauncher;
using testing::GateProject;
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
  EXPECT_NE(testing::refusal([&] { return testing::captured([&] { return bisect_command(o, l); }, out); })
                .find("--json " + o.json_out),
            std::string::npos);
  EXPECT_TRUE(l.calls.empty());
}

TEST(BisectEnvCommand, SaysTheDifferencesEachSetTestedAndTheCulpritAndWritesJson) {
  GateProject p("cli-bisect-env");
  BisectEnvCliOptions o;
  o.bisect.good_env = (p.root() / "good.json").string();
  o.bisect.bad_env = (p.root() / "bad.json").string();
  write_file_atomically(o.bisect.good_env, R"({"env": {"SHIFT": "0", "FOO": "1"}})");
  write_file_atomically(o.bisect.bad_env, R"({"env": {"SHIFT": "1", "BAR": "2"}})");
  o.bisect.smokes = {p.smoke_file()};
  o.bisect.out_dir = p.out_dir();
  o.json_out = (p.root() / "bisect-env.json").string();
  o.jobs = 1;
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (std::find(run.env.begin(), run.env.end(), "SHIFT=1") != run.env.end()) r.series["loss"].values[1] = 2.3f;
  };
  std::string out;
  ASSERT_EQ(testing::captured([&] { return bisect_env_command(o, l); }, out), to_int(ExitCode::kRegression)) << out;
  EXPECT_EQ(out.rfind("bisect-env: 3 difference(s) from " + o.bisect.good_env + " to " + o.bisect.bad_env +
                          ": BAR=2; FOO as inherited; SHIFT=1\n"
                          "bisect-env: the good stack (" + o.bisect.good_env + "): passes (2 runs)\n",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("\nbisect-env: {SHIFT=1}: fails (2 runs)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nbisect-env: the curve moves with {SHIFT=1} alone\n"), std::string::npos) << out;
  nlohmann::json j = parse_json_file(o.json_out);
  EXPECT_EQ(j["lockstep_report"], "bisect-env");
  EXPECT_EQ(j["exit"], 1);
  EXPECT_EQ(j["culprit"], nlohmann::json::array({"SHIFT=1"}));
  const std::string summary = "bisect-env: " + std::to_string(j["tests"].size()) + " sets tested, " +
                              std::to_string(l.calls.size()) + " runs; exit 1\n";
  ASSERT_GE(out.size(), summary.size());
  EXPECT_EQ(out.substr(out.size() - summary.size()), summary) << out;
}

TEST(BisectEnvCommand, AnEmptyEnvironmentPathIsRefusedBeforeAnyRun) {
  GateProject p("cli-bisect-env-empty");
  BisectEnvCliOptions o;
  o.bisect.good_env = (p.root() / "good.json").string();
  o.bisect.smokes = {p.smoke_file()};
  o.bisect.out_dir = p.out_dir();
  FakeLauncher l;
  std::string out;
  EXPECT_EQ(testing::refusal([&] { return testing::captured([&] { return bisect_env_command(o, l); }, out); }),
            "--bad-env: an environment file path, got an empty path");
  EXPECT_TRUE(l.calls.empty());
}

}  // namespace
}  // namespace lockstep
