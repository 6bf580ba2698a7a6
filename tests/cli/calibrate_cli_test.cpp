// `lockstep calibrate` end to end, with real runs: digits-cnn over the
// thread counts and every CPU capability here, a smoke whose runs agree
// bit for bit, --write (the goldens stay valid), the team trainer example,
// and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cli/cli_helpers.h"

namespace lockstep {
namespace {
using namespace cli_test;

// Whether `run` holds a series value outside |a - g| <= atol + rtol * |g|
// (or not bit-identical, for an exact rule) against `golden`, under the
// rules of a calibration report's "recommended" section; the lr series
// itself (the planted knob) aside.
bool fails_recommended(const nlohmann::json& rec, const nlohmann::json& run, const nlohmann::json& golden) {
  for (const auto& [name, g] : golden["series"].items()) {
    if (name == "lr" || !rec.contains(name) || rec[name]["rule"].is_null()) continue;
    const nlohmann::json& rule = rec[name]["rule"];
    const auto& gv = g["values"];
    const auto& av = run["series"][name]["values"];
    for (size_t i = 0; i < gv.size(); ++i) {
      double a = av[i].get<double>(), b = gv[i].get<double>();
      if (rule.contains("exact") ? a != b : std::fabs(a - b) > rule["atol"].get<double>() + rule["rtol"].get<double>() * std::fabs(b))
        return true;
    }
  }
  return false;
}

TEST(CalibrateCli, DigitsCnnOverThreadsAndCapabilitiesRecommendsRulesThatHoldAndCatchLrTimes1001) {
  fs::path p = scratch("calibrate-digits", [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string smoke = (p / "smoke" / "digits-cnn.json").string(), out = (p / "out").string();
  std::string json = (p / "cal.json").string(), html = (p / "cal.html").string();
  Result r = lockstep("calibrate " + smoke + " --repeat 1 --out " + out + " --json " + json + " --html " + html);
  ASSERT_EQ(r.code, 0) << r.output;
  nlohmann::json c = parse_json_file(json);
  EXPECT_EQ(c["axes"]["threads"], (nlohmann::json{"1", "2"}));
  EXPECT_EQ(c["axes"]["capability"][0], "default");  // and every capability this CPU runs
  size_t runs = 2 * c["axes"]["capability"].size();
  EXPECT_EQ(c["runs"].size(), runs);
  // Per metric: every series and probe statistic has its own spread.
  std::set<std::string> metrics;
  for (const auto& m : c["metrics"]) metrics.insert(m["name"].get<std::string>());
  for (const char* name : {"loss", "grad_norm", "grad_norm/conv.weight", "param_norm", "lr", "probes.inputs.sum",
                           "train_probes.labels.max"})
    EXPECT_TRUE(metrics.count(name)) << name;
  EXPECT_EQ(c["recommended"]["lr"]["rule"], (nlohmann::json{{"exact", true}}));
  EXPECT_TRUE(c["recommended"]["loss"]["rule"].contains("rtol")) << c["recommended"]["loss"].dump();
  // The recommendation passes every calibration run against every other.
  EXPECT_EQ(c["self_check"]["failed"], 0);
  EXPECT_EQ(c["self_check"]["comparisons"], runs * (runs - 1));
  EXPECT_NE(r.output.find("the recommended rules pass every calibration run against every other"), std::string::npos);
  EXPECT_NE(r.output.find("false-alarm estimate: "), std::string::npos) << r.output;
  EXPECT_EQ(c["false_alarm"]["runs"], runs);
  EXPECT_TRUE(c["detection"]["measured"].get<bool>()) << c["detection"].dump();
  // A run with lr x 1.001 fails the recommended rules against the first calibration run.
  std::string planted = (p / "lr.json").string();
  ASSERT_EQ(lockstep("run " + smoke + " --lr-scale 1.001 --quiet --record " + planted).code, 0);
  nlohmann::json reference = parse_json_file(out + "/digits-cnn/calibrate/calibrate-1.json");
  EXPECT_TRUE(fails_recommended(c["recommended"], parse_json_file(planted), reference));
  EXPECT_FALSE(fails_recommended(c["recommended"], parse_json_file(out + "/digits-cnn/calibrate/calibrate-2.json"),
                                 reference));
  // The page: one plot per metric, no script.
  std::string page = read_file(html);
  EXPECT_NE(page.find("aria-label=\"spread of grad_norm\""), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(CalibrateCli, RunsThatAgreeBitForBitAreRecommendedExact) {
  fs::path p = scratch("calibrate-exact", [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string json = (p / "cal.json").string();
  Result r = lockstep("calibrate " + (p / "smoke" / "digits-cnn.json").string() +
                      " --axis workers=0,2 --repeat 1 --no-detect --out " + (p / "out").string() + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  nlohmann::json c = parse_json_file(json);
  ASSERT_FALSE(c["recommended"].empty());
  for (const auto& [key, rec] : c["recommended"].items())
    EXPECT_EQ(rec["rule"], (nlohmann::json{{"exact", true}})) << key;
  EXPECT_NE(r.output.find("detection: not searched (--no-detect)"), std::string::npos) << r.output;
}

TEST(CalibrateCli, WriteUpdatesTheToleranceAndTheGoldensStayValid) {
  fs::path p = scratch("calibrate-write", [](nlohmann::json& c) { c.erase("resume_at"); },
                       kSourceDir + "/smoke/wine-mlp.json");
  std::string s = (p / "smoke").string(), out = (p / "out").string(), smoke = s + "/wine-mlp.json";
  ASSERT_EQ(lockstep("bless " + s + " --reason base --out " + out).code, 0);
  Result r = lockstep("calibrate " + smoke + " --axis threads=1,2 --repeat 1 --no-detect --write --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote the recommended rules and a calibration block into " + smoke), std::string::npos);
  nlohmann::json cfg = parse_json_file(smoke);
  EXPECT_EQ(cfg["calibration"]["axes"]["threads"], (nlohmann::json{"1", "2"}));
  EXPECT_EQ(cfg["calibration"]["runs"], 2);
  EXPECT_EQ(cfg["calibration"]["multiplier"], 1.5);
  EXPECT_TRUE(cfg["tolerance"]["series"].contains("loss"));
  EXPECT_TRUE(cfg["tolerance"]["probes"].contains("inputs.sum"));
  Result v = lockstep("verify-goldens " + (p / "goldens").string());
  EXPECT_EQ(v.code, 0) << v.output;
  Result c = lockstep("check " + s + " --out " + out);
  EXPECT_EQ(c.code, 0) << c.output;
}

TEST(CalibrateCli, TheTeamTrainerExampleCalibratesTheSameWay) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-calibrate-trainer-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::string json = (d / "cal.json").string();
  Result r = lockstep("calibrate " + kSourceDir + "/examples/pytorch-trainer/smoke/pytorch-trainer.json" +
                      " --axis threads=1,2 --repeat 1 --out " + (d / "out").string() + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  nlohmann::json c = parse_json_file(json);
  EXPECT_TRUE(c["recommended"].contains("loss"));
  EXPECT_TRUE(c["recommended"].contains("probes.inputs.sum"));
  EXPECT_EQ(c["self_check"]["failed"], 0);
  // train.py multiplies its lr by lockstep.lr_scale(): the search finds a limit.
  EXPECT_TRUE(c["detection"]["measured"].get<bool>()) << c["detection"].dump();
  EXPECT_LE(c["detection"]["catches"].get<double>(), 0.1);
  fs::remove_all(d);
}

TEST(CalibrateCli, BadOptionsAreRefused) {
  Result axis = lockstep("calibrate " + kSmoke + " --axis speed=2");
  EXPECT_EQ(axis.code, 2) << axis.output;
  EXPECT_NE(axis.output.find("--axis speed=2: unknown axis 'speed' (threads, capability, workers or seed)"),
            std::string::npos)
      << axis.output;
  Result folder = lockstep("calibrate " + kSourceDir + "/smoke");
  EXPECT_EQ(folder.code, 2) << folder.output;
  EXPECT_NE(folder.output.find("a folder; calibrate takes one smoke config"), std::string::npos) << folder.output;
  Result json = lockstep("calibrate " + kSmoke + " --json " + kSmoke);
  EXPECT_EQ(json.code, 2) << json.output;
  EXPECT_NE(json.output.find("that is an input of this command (" + kSmoke + "); name a new file"), std::string::npos)
      << json.output;
  // A report never replaces a file it did not write, and is checked before any run.
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-calibrate-refuse-" + std::to_string(::getpid()));
  fs::create_directories(d);
  write_file_atomically((d / "notes.json").string(), "{\"mine\": 1}");
  Result other = lockstep("calibrate " + kSmoke + " --json " + (d / "notes.json").string() + " --out " + (d / "out").string());
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("refusing to overwrite a file that is not an earlier report of this command"),
            std::string::npos)
      << other.output;
  EXPECT_FALSE(fs::exists(d / "out" / "digits-cnn")) << other.output;
  EXPECT_EQ(read_file((d / "notes.json").string()), "{\"mine\": 1}");
  Result empty = lockstep("calibrate " + kSmoke + " --json ''");
  EXPECT_EQ(empty.code, 2) << empty.output;
  Result nan = lockstep("calibrate " + kSmoke + " --multiplier nan");
  EXPECT_EQ(nan.code, 2) << nan.output;
  EXPECT_NE(nan.output.find("expected a decimal number in [1, 1000], got 'nan'"), std::string::npos) << nan.output;
  Result hex = lockstep("run " + kSmoke + " --lr-scale 0x10");
  EXPECT_EQ(hex.code, 2) << hex.output;
  fs::remove_all(d);
  Result records = lockstep("calibrate " + kSmoke + " --records /nonexistent/ci --no-detect");
  EXPECT_EQ(records.code, 2) << records.output;
}

}  // namespace
}  // namespace lockstep
