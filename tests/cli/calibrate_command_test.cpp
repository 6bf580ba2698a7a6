// `lockstep calibrate` as the command line calls it (calibrate_command), in
// this process with a fake launcher: the report on stdout, --json and
// --html written, the config left alone unless --write, --seeds as a list,
// and the refusals made before any run. The calibration itself is
// calibrate/'s (tests/calibrate/calibrate_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::GateProject;

CalibrateCliOptions options_for(const GateProject& p) {
  CalibrateCliOptions o;
  o.smoke = p.smoke_file();
  o.calibrate.out_dir = p.out_dir();
  o.calibrate.isa_flags = "avx avx2 fma";
  o.calibrate.repeats = 2;
  o.axes = {"threads=1,2"};
  o.no_detect = true;
  o.jobs = 1;
  return o;
}

int calibrate(const CalibrateCliOptions& o, FakeLauncher& launcher, std::string& out) {
  return testing::captured([&] { return calibrate_command(o, launcher); }, out);
}

TEST(CalibrateCommand, PrintsTheReportWritesJsonAndHtmlAndLeavesTheConfig) {
  GateProject p("cli-cal");
  const std::string config = read_file(p.smoke_file());
  CalibrateCliOptions o = options_for(p);
  o.json_out = (p.root() / "cal.json").string();
  o.html_out = (p.root() / "cal.html").string();
  FakeLauncher l;
  std::string out;
  ASSERT_EQ(calibrate(o, l, out), 0) << out;
  ASSERT_EQ(l.calls.size(), 4u);  // 2 thread counts x 2 repeats
  EXPECT_EQ(l.calls[0].overrides.intra_op_threads, 1);
  EXPECT_EQ(l.calls[3].overrides.intra_op_threads, 2);
  EXPECT_EQ(l.calls[3].out, p.out_dir() + "/unit/calibrate/calibrate-4.json");
  EXPECT_NE(out.find("loss"), std::string::npos) << out;
  const std::string tail = "the config is unchanged (--write puts these rules into " + p.smoke_file() + ")\n";
  ASSERT_GE(out.size(), tail.size());
  EXPECT_EQ(out.substr(out.size() - tail.size()), tail) << out;
  EXPECT_EQ(parse_json_file(o.json_out)["lockstep_report"], "calibrate");
  EXPECT_NE(read_file(o.html_out).find("<title>lockstep calibrate "), std::string::npos);
  EXPECT_EQ(read_file(p.smoke_file()), config);
}

TEST(CalibrateCommand, WriteAddsTheCalibrationBlockAndSeedsAreAList) {
  GateProject p("cli-cal-write");
  CalibrateCliOptions o = options_for(p);
  o.axes.clear();
  o.seed_list = "7,8";
  o.calibrate.repeats = 1;
  o.write = true;
  FakeLauncher l;
  std::string out;
  ASSERT_EQ(calibrate(o, l, out), 0) << out;
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_EQ(l.calls[0].seed, "7");
  EXPECT_EQ(l.calls[1].seed, "8");
  EXPECT_NE(out.find("wrote the recommended rules and a calibration block into " + p.smoke_file() +
                     " (tolerances are not inputs: the goldens stay valid)\n"),
            std::string::npos)
      << out;
  nlohmann::json cfg = parse_json_file(p.smoke_file());
  EXPECT_TRUE(cfg.contains("calibration")) << cfg.dump(2);
  EXPECT_EQ(cfg["name"], "unit");  // the rest of the config stays
}

// Each refusal, word for word, with no run made.
TEST(CalibrateCommand, RefusesBadArgumentsBeforeAnyRun) {
  GateProject p("cli-cal-refuse");
  struct Case {
    std::function<void(CalibrateCliOptions&)> edit;
    std::string message;
  };
  const std::string json = (p.root() / "same").string();
  const std::vector<Case> cases = {
      {[&](CalibrateCliOptions& o) { o.smoke = (p.root() / "smoke").string(); },
       "calibrate " + (p.root() / "smoke").string() + ": a folder; calibrate takes one smoke config"},
      {[&](CalibrateCliOptions& o) { o.json_out = o.html_out = json; },
       "--json and --html name the same file " + json},
      {[](CalibrateCliOptions& o) { o.seed_list = "3"; },
       "calibrate --seeds 3: a list of at least two seeds, as bless --seeds takes (e.g. --seeds 7,8,9); for K seeds "
       "from the config's, --seed-count K"},
      {[](CalibrateCliOptions& o) { o.seed_list = "7,x"; },
       "calibrate --seeds 7,x: seed 2 is \"x\"; expected unsigned integers separated by commas (e.g. --seeds 7,8,9)"},
      {[](CalibrateCliOptions& o) {
         o.seed_list = "7,8";
         o.calibrate.seeds = 3;
       },
       "calibrate --seeds with --seed-count: give the seeds one way"},
      {[&](CalibrateCliOptions& o) { o.html_out = p.goldens_dir() + "/unit/cal.html"; },
       p.goldens_dir() + "/unit/cal.html: refusing to write the --html page into the goldens folder " +
           p.goldens_dir() + "/ (goldens are written only by `lockstep bless` and `lockstep accept`)"},
  };
  for (const Case& c : cases) {
    CalibrateCliOptions o = options_for(p);
    c.edit(o);
    FakeLauncher l;
    std::string out;
    EXPECT_EQ(testing::refusal([&] { return calibrate(o, l, out); }), c.message);
    EXPECT_TRUE(l.calls.empty()) << c.message;
  }
}

}  // namespace
}  // namespace lockstep
