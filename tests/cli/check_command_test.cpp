// `lockstep check` as the command line calls it (check_command), in this
// process with a fake launcher: what it prints, the files it writes beside
// the records (reports, pending golden, junit.xml), the exit code of a
// suite, and the refusals made before any run. The verdict of each smoke
// is gate/check's (tests/gate/check_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "cli/in_process.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::GateProject;
using testing::make_gate_record;

// check_command on `project`'s smokes (or `smokes`), serially; its stdout
// in `out`.
int check(const GateProject& project, FakeLauncher& launcher, std::string& out,
          const std::vector<std::string>& smokes = {}, const std::function<void(CheckOptions&)>& edit = {}) {
  CheckOptions o;
  o.smokes = smokes.empty() ? std::vector<std::string>{project.smoke_file()} : smokes;
  o.smoke = project.check_options();
  o.jobs = 1;
  if (edit) edit(o);
  return testing::captured([&] { return check_command(o, launcher); }, out);
}

TEST(CheckCommand, APassingSmokePrintsItsHeadlineAndWritesReportsAndJunit) {
  GateProject p("cli-check-pass");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  std::string out;
  EXPECT_EQ(check(p, l, out, {}, [](CheckOptions& o) { o.quiet = true; }), 0);
  EXPECT_EQ(out, "lockstep: unit: PASS (exit 0)\n");
  EXPECT_EQ(l.calls.size(), 2u);  // the config's repeat
  for (const char* report : {"report.json", "report.md", "report.html"})
    EXPECT_TRUE(fs::exists(p.out_dir() + "/unit/" + report)) << report;
  nlohmann::json report = parse_json_file(p.out_dir() + "/unit/report.json");
  EXPECT_EQ(report["exit_code"], 0);
  const std::string junit = read_file(p.out_dir() + "/junit.xml");
  // One test case per value series compared (22), none failing.
  EXPECT_NE(junit.find("<testsuite name=\"unit\" tests=\"22\" failures=\"0\" errors=\"0\">"), std::string::npos)
      << junit;
  EXPECT_FALSE(fs::exists(p.out_dir() + "/unit/" + make_gate_record().platform + ".golden.new"));
}

TEST(CheckCommand, ARegressionIsExitOneWithAPendingGoldenNamedOnStdout) {
  GateProject p("cli-check-fail");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun&, RunRecord& r) { r.series["loss"].values[1] = 2.0; };
  std::string out;
  EXPECT_EQ(check(p, l, out), 1);
  EXPECT_EQ(out.rfind("lockstep: unit: FAIL", 0), 0u) << out;
  const std::string pending = p.out_dir() + "/unit/" + make_gate_record().platform + ".golden.new";
  EXPECT_TRUE(fs::exists(pending));
  EXPECT_NE(out.find("pending golden: " + pending + " (review with `lockstep review " + p.out_dir() +
                     " --goldens " + p.goldens_dir() + "`"),
            std::string::npos)
      << out;
  const std::string junit = read_file(p.out_dir() + "/junit.xml");
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
}

TEST(CheckCommand, ASuiteEndsWithOneSummaryLineAndTheWorstExitCode) {
  GateProject p("cli-check-suite");
  p.write_golden(make_gate_record());
  // A second smoke with no golden: exit 2, and a pending golden for it.
  nlohmann::json other = parse_json_file(p.smoke_file());
  other["name"] = "other";
  const std::string other_file = (p.root() / "smoke" / "other.json").string();
  write_file_atomically(other_file, pretty_dump(other));
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) { r.smoke = fs::path(run.smoke).stem().string(); };
  std::string out;
  EXPECT_EQ(check(p, l, out, {(p.root() / "smoke").string()}, [](CheckOptions& o) { o.quiet = true; }), 2);
  EXPECT_NE(out.find("lockstep: other: BAD INPUT (exit 2): " + p.goldens_dir() + "/other/"), std::string::npos) << out;
  EXPECT_NE(out.find("\ncheck: 2 smokes: 1 PASS, 1 BAD INPUT (other); exit 2 (junit " + p.out_dir() +
                     "/junit.xml)\n"),
            std::string::npos)
      << out;
  EXPECT_TRUE(fs::exists(p.out_dir() + "/other/" + make_gate_record().platform + ".golden.new"));
  EXPECT_EQ(l.calls.size(), 4u);
}

TEST(CheckCommand, AKindThatMatchesNothingWritesAnEmptyJunitAndRunsNothing) {
  GateProject p("cli-check-kind");
  FakeLauncher l;
  std::string out;
  EXPECT_EQ(check(p, l, out, {}, [](CheckOptions& o) { o.kind = "trainer"; }), 0);
  EXPECT_TRUE(l.calls.empty());
  EXPECT_NE(out.find("trainer"), std::string::npos) << out;
  const std::string junit = read_file(p.out_dir() + "/junit.xml");
  EXPECT_NE(junit.find("tests=\"0\""), std::string::npos) << junit;
}

TEST(CheckCommand, AnOutFolderInsideTheGoldensIsRefusedBeforeAnyRun) {
  GateProject p("cli-check-out");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  std::string out;
  auto into_goldens = [&](CheckOptions& o) { o.smoke.out_dir = p.goldens_dir() + "/out"; };
  EXPECT_NE(testing::refusal([&] { return check(p, l, out, {}, into_goldens); }).find("--out"), std::string::npos);
  EXPECT_TRUE(l.calls.empty());
}

// A usage error is said before the --out folder is made: none is left.
TEST(CheckCommand, ARefusedCheckLeavesNoOutFolder) {
  GateProject p("cli-check-refused");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  std::string out;
  const std::string notes = p.root().string() + "/notes.txt";
  write_file_atomically(notes, "notes\n");
  EXPECT_EQ(testing::refusal([&] { return check(p, l, out, {}, [&](CheckOptions& o) { o.history_dir = notes; }); }),
            "--history " + notes + ": a folder for the ledgers (<smoke>.jsonl), and this is a file");
  EXPECT_FALSE(fs::exists(p.out_dir()));
  EXPECT_TRUE(l.calls.empty());
}

}  // namespace
}  // namespace lockstep
