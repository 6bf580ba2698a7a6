// `lockstep run --repeat N` as the command line calls it (run_command), in
// this process with a fake launcher for the fresh runs: N runs asked for,
// the first record kept when all are bit-identical, and exit 4 naming the
// run and the first difference when one is not. A single run's path is
// tests/plan/run_plan_test.cpp's and tests/cli/train_cli_test.cpp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"
#include "record/run_record.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::GateProject;

RunOptions repeat_of(const GateProject& p, int n) {
  write_file_atomically((fs::path(p.smoke_file()).parent_path() / "unit.csv").string(), "a,b,c,d,label\n1,2,3,4,0\n");
  RunOptions o;
  o.smoke = p.smoke_file();
  o.out = p.out_dir() + "/unit.run.json";
  o.repeat = n;
  o.overrides.intra_op_threads = 2;
  return o;
}

TEST(RunCommand, RepeatKeepsTheFirstRecordWhenEveryRunIsBitIdentical) {
  GateProject p("cli-run-repeat");
  const RunOptions o = repeat_of(p, 3);
  FakeLauncher l;
  std::string out;
  ASSERT_EQ(testing::captured([&] { return run_command(o, l); }, out), 0) << out;
  EXPECT_EQ(out, "run unit: 3 runs in fresh processes are bit-identical\n  record " + o.out + "\n");
  ASSERT_EQ(l.calls.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(l.calls[i].out, p.out_dir() + "/unit.run.repeat-" + std::to_string(i + 1) + ".json");
    EXPECT_EQ(l.calls[i].overrides.intra_op_threads, 2);  // each run as asked
    EXPECT_EQ(l.calls[i].repeat, 1);
    EXPECT_TRUE(l.calls[i].quiet);
  }
  EXPECT_EQ(read_run_record(o.out).series.at("loss").values, testing::make_gate_record().series.at("loss").values);
}

// A lane's repeats run the lane, each child asked for it by name.
TEST(RunCommand, RepeatOfALaneRunsTheLaneEveryTime) {
  GateProject p("cli-run-repeat-lane", [](nlohmann::json& cfg) {
    cfg["equivalence"] = {{"workers0", {{"set", {{"data", {{"workers", 0}}}}}}}};
  });
  RunOptions o = repeat_of(p, 2);
  o.variant = "workers0";
  FakeLauncher l;
  std::string out;
  ASSERT_EQ(testing::captured([&] { return run_command(o, l); }, out), 0) << out;
  ASSERT_EQ(l.calls.size(), 2u);
  for (const ChildRun& c : l.calls) EXPECT_EQ(c.variant, "workers0");
}

TEST(RunCommand, RepeatThatDiffersIsExitFourNamingTheRunAndTheFirstDifference) {
  GateProject p("cli-run-repeat-differs");
  const RunOptions o = repeat_of(p, 3);
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 3) r.series["loss"].values[1] += 1e-6f;
  };
  std::string out;
  ASSERT_EQ(testing::captured([&] { return run_command(o, l); }, out), to_int(ExitCode::kNondeterministic)) << out;
  EXPECT_EQ(out.rfind("run unit: NONDETERMINISTIC (exit 4): run 3 differs from run 1; first difference: ", 0), 0u)
      << out;
  EXPECT_NE(out.find("loss"), std::string::npos) << out;
  EXPECT_NE(out.find("\n  records: " + p.out_dir() + "/unit.run.repeat-1.json, " + p.out_dir() +
                     "/unit.run.repeat-3.json\n"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(o.out)) << "no record of a nondeterministic run";
}

}  // namespace
}  // namespace lockstep
