// `lockstep selftest` as the command line calls it (selftest_command), in
// this process with a fake launcher: each smoke's verdict printed, the
// summary line and exit code of a suite, the JSON file. What each verdict
// says is gate/selftest's (tests/gate/selftest_test.cpp).
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

// A launcher whose planted changes show in smoke "unit" only: the smoke
// named "blind" returns the same record whatever is planted.
FakeLauncher launcher_blind_to(const std::string& blind) {
  FakeLauncher l;
  l.edit = [blind](size_t, const ChildRun& run, RunRecord& r) {
    if (fs::path(run.smoke).stem() == blind) return;
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
    if (run.overrides.perturb == "data") r.probes[0].inputs.xxh3_128 = std::string(32, 'c');
  };
  return l;
}

TEST(SelftestCommand, PrintsEachSmokeThenOneSummaryLineAndWritesTheJson) {
  GateProject p("cli-selftest");
  nlohmann::json blind = parse_json_file(p.smoke_file());
  blind["name"] = "blind";
  write_file_atomically((p.root() / "smoke" / "blind.json").string(), pretty_dump(blind));
  FakeLauncher l = launcher_blind_to("blind");
  SelftestCommandOptions o;
  o.smokes = {(p.root() / "smoke").string()};
  o.out_dir = p.out_dir();
  o.json_out = (p.root() / "selftest.json").string();
  std::string out;
  const int code = testing::captured([&] { return selftest_command(o, l); }, out);
  EXPECT_EQ(code, 1) << out;  // a planted change went unseen
  EXPECT_NE(out.find("selftest blind: INSENSITIVE"), std::string::npos) << out;
  EXPECT_NE(out.find("selftest unit: sensitive (it catches a planted one-ULP change of a parameter and of a data "
                     "sample)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), "selftest: 2 smokes, 1 sensitive, 1 INSENSITIVE (exit 1)\n");
  nlohmann::json j = parse_json_file(o.json_out);
  ASSERT_EQ(j["selftest"].size(), 2u);
  EXPECT_EQ(j["selftest"][0]["smoke"], "blind");
  EXPECT_EQ(j["selftest"][0]["sensitive"], false);
  EXPECT_EQ(j["selftest"][1]["smoke"], "unit");
  EXPECT_EQ(j["selftest"][1]["sensitive"], true);
  EXPECT_EQ(l.calls.size(), 14u);  // per smoke: two plain runs, two planted, three relaxed
}

TEST(SelftestCommand, AJsonFileOverAnInputIsRefusedBeforeAnyRun) {
  GateProject p("cli-selftest-json");
  FakeLauncher l;
  SelftestCommandOptions o;
  o.smokes = {p.smoke_file()};
  o.out_dir = p.out_dir();
  o.json_out = p.smoke_file();
  EXPECT_NE(testing::refusal([&] { return selftest_command(o, l); }).find("--json"), std::string::npos);
  EXPECT_TRUE(l.calls.empty());
}

}  // namespace
}  // namespace lockstep
