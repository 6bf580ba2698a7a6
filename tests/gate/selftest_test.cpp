#include "gate/selftest.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gate/gate_fixture.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;

// The runs a selftest asks for, and its verdicts, with canned records:
// the planted change seen or not, the relaxed runs alike or not.
TEST(Selftest, APlantedChangeThatFailsTheBitwiseComparisonIsSensitive) {
  GateProject p("selftest-sensitive");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  // A plain run, the perturbed one, then three runs with the contract relaxed.
  ASSERT_EQ(l.calls.size(), 5u);
  EXPECT_EQ(l.calls[0].out, p.out_dir() + "/selftest-base.json");
  EXPECT_EQ(l.calls[1].overrides.perturb, "parameter");
  for (size_t k = 2; k < 5; ++k) {
    EXPECT_EQ(l.calls[k].overrides.mode, "default");
    EXPECT_EQ(l.calls[k].overrides.intra_op_threads, 2);
    EXPECT_EQ(l.calls[k].out, p.out_dir() + "/selftest-relaxed-" + std::to_string(k - 1) + ".json");
  }
  EXPECT_TRUE(r.sensitive);
  EXPECT_EQ(r.code(), ExitCode::kPass);
  EXPECT_EQ(r.caught.rfind("train step 1: loss", 0), 0u) << r.caught;
  EXPECT_EQ(r.distinct, 1);
  EXPECT_EQ(to_json(r)["relaxed"]["observes"], false);
  EXPECT_NE(selftest_text(r).find("selftest unit: sensitive\n"), std::string::npos) << selftest_text(r);
  EXPECT_NE(selftest_text(r).find("3 runs: 1 distinct result: this smoke cannot observe nondeterminism on this stack"),
            std::string::npos)
      << selftest_text(r);
}

TEST(Selftest, AChangeNothingRecordsIsInsensitiveAndRelaxedRunsAreCounted) {
  GateProject p("selftest-insensitive");
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 4) r.series["loss"].values[0] = std::nextafter(2.5f, 3.0f);  // the second relaxed run differs
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  EXPECT_FALSE(r.sensitive);
  EXPECT_EQ(r.code(), ExitCode::kRegression);
  EXPECT_EQ(r.verdict(), "INSENSITIVE");
  EXPECT_EQ(r.distinct, 2);
  EXPECT_EQ(r.relaxed_first.rfind("train step 0: loss", 0), 0u) << r.relaxed_first;
  EXPECT_NE(selftest_text(r).find("planted change (the first element of the model's first parameter, one ULP towards "
                                  "+inf before step 0): NOT caught"),
            std::string::npos)
      << selftest_text(r);
  EXPECT_NE(selftest_text(r).find("this smoke observes the stack's nondeterminism"), std::string::npos);
  EXPECT_EQ(to_json(r)["relaxed"]["observes"], true);
}

}  // namespace
}  // namespace lockstep
