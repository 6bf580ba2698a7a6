// `lockstep bless` as the command line calls it (bless_command), in this
// process with a fake launcher: the golden written where check looks for
// it, what bless says about it (new, or what changed against the golden
// it replaces), the commit it asks for, and its refusals before any run.
// The golden itself is gate/bless's (tests/gate/bless_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "cli/in_process.h"
#include "gate/gate_fixture.h"
#include "record/golden.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::GateProject;
using testing::make_gate_record;

BlessOptions options_for(const GateProject& p) {
  BlessOptions o;
  o.smokes = {p.smoke_file()};
  o.bless.reason = "new smoke";
  o.bless.out_dir = p.out_dir();
  o.in_ci = true;  // the test suite runs in CI too
  return o;
}

// bless_command's exit code; its stdout in `out`.
int bless(const BlessOptions& o, FakeLauncher& launcher, std::string& out) {
  return testing::captured([&] { return bless_command(o, launcher); }, out);
}

TEST(BlessCommand, WritesTheGoldenCheckReadsAndSaysWhatChangedTheSecondTime) {
  GateProject p("cli-bless");
  FakeLauncher l;
  std::string out;
  ASSERT_EQ(bless(options_for(p), l, out), 0) << out;
  const std::string golden = p.goldens_dir() + "/unit/" + make_gate_record().platform + ".json";
  ASSERT_TRUE(fs::exists(golden)) << out;
  EXPECT_EQ(out.rfind("blessed " + golden + " (2 bit-identical runs, content ", 0), 0u) << out;
  EXPECT_NE(out.find("\n  new golden (none existed for platform " + make_gate_record().platform + ")\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("now review the change and commit " + p.goldens_dir() + "/ with the same reason\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(read_golden(golden).provenance.reason, "new smoke");
  EXPECT_EQ(l.calls.size(), 2u);

  // Blessed again over a moved loss: the change is listed, the golden replaced.
  FakeLauncher moved;
  moved.edit = [](size_t, const ChildRun&, RunRecord& r) { r.series["loss"].values[1] = 2.0; };
  BlessOptions again = options_for(p);
  again.bless.reason = "loss moved on purpose";
  ASSERT_EQ(bless(again, moved, out), 0) << out;
  EXPECT_NE(out.find("\nchanges against the golden it replaces:\n"), std::string::npos) << out;
  EXPECT_NE(out.find("loss"), std::string::npos) << out;
  EXPECT_EQ(read_golden(golden).record.series.at("loss").values[1], 2.0);
  EXPECT_EQ(read_golden(golden).provenance.reason, "loss moved on purpose");
}

TEST(BlessCommand, ABlankReasonIsRefusedBeforeAnyRun) {
  GateProject p("cli-bless-reason");
  FakeLauncher l;
  BlessOptions o = options_for(p);
  o.bless.reason = "  \n";
  std::string out;
  EXPECT_EQ(testing::refusal([&] { return bless(o, l, out); }),
            "bless needs --reason TEXT: say why the goldens change (it is recorded)");
  EXPECT_TRUE(l.calls.empty());
  EXPECT_FALSE(fs::exists(p.goldens_dir()));
}

TEST(BlessCommand, AKindThatMatchesNothingBlessesNothing) {
  GateProject p("cli-bless-kind");
  FakeLauncher l;
  BlessOptions o = options_for(p);
  o.kind = "trainer";
  std::string out;
  EXPECT_EQ(bless(o, l, out), 0) << out;
  EXPECT_TRUE(l.calls.empty());
  EXPECT_FALSE(fs::exists(p.goldens_dir()));
}

}  // namespace
}  // namespace lockstep
