// `lockstep compare RUN GOLDEN` as the command line calls it
// (compare_command), in this process: the verdict's headline and the two
// files named, and an equivalence lane's record held as check holds a lane,
// its reference named for what it is (the base run of this job, or a golden
// that another job's base run made). The comparison itself is compare/'s.
#include <gtest/gtest.h>

#include <string>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "gate/gate_fixture.h"
#include "record/run_record.h"

namespace lockstep {
namespace {
using testing::GateProject;
using testing::make_gate_record;

std::string compare(const std::string& run, const std::string& golden, const std::string& config, int expected) {
  CompareOptions o;
  o.run = run;
  o.golden = golden;
  o.config = config;
  std::string out;
  EXPECT_EQ(testing::captured([&] { return compare_command(o); }, out), expected) << out;
  return out;
}

TEST(CompareCommand, ARunAgainstItsGoldenSaysTheVerdictAndBothFiles) {
  GateProject p("cli-compare");
  const std::string golden = p.write_golden(make_gate_record());
  const std::string run = (p.root() / "run.json").string();
  write_run_record(run, make_gate_record());
  const std::string out = compare(run, golden, p.smoke_file(), 0);
  EXPECT_EQ(out.rfind("lockstep: unit: PASS (exit 0)\n  run:    " + run + "\n  golden: " + golden + "\n", 0), 0u)
      << out;
}

TEST(CompareCommand, ALaneRecordIsHeldToTheBaseRunAndAGoldenIsNamedAsOne) {
  GateProject p("cli-compare-lane", [](nlohmann::json& cfg) {
    cfg["equivalence"] = {{"workers0", {{"set", {{"data", {{"workers", 0}}}}}}}};
  });
  RunRecord lane = make_gate_record();
  lane.config["variant"] = "\"workers0\"";
  const std::string lane_file = (p.root() / "variant-workers0.json").string();
  write_run_record(lane_file, lane);
  const std::string base = (p.root() / "run-1.json").string();
  write_run_record(base, make_gate_record());
  std::string out = compare(lane_file, base, p.smoke_file(), 0);
  EXPECT_NE(out.find("\n  base run:      " + base + "\nlane: equivalence — lane workers0 against the base run of this "
                     "job, bit for bit, on the same batches bit for bit\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("note: the run is equivalence lane workers0's (its config's \"variant\"), the reference a base "
                     "run: compared as check compares a lane, its inputs left out; held by equivalence.workers0 of " +
                     p.smoke_file() + "\n"),
            std::string::npos)
      << out;

  const std::string golden = p.write_golden(make_gate_record());
  out = compare(lane_file, golden, p.smoke_file(), 0);
  EXPECT_NE(out.find("\n  golden:        " + golden + "\nlane: equivalence — lane workers0 against the golden (the base "
                     "run of the job that blessed it), bit for bit, on the same batches bit for bit\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("the reference a golden, the base run of another job (check holds a lane to the base run of its "
                     "own job, run-1.json beside it; a stack change shows here too)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("of this job"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep
