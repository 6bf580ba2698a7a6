// calibrate_smoke() in-process with a fake launcher: the runs it asks for
// (one per axis point and repeat, each with its override, environment or
// seed), records from other runners, the detection search's bisection
// over planted learning-rate changes, and the refusals of bad axes.
#include "calibrate/calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "calibrate/calibration_report.h"
#include "core/error.h"
#include "gate/gate_fixture.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;
using testing::make_gate_record;

// grad_norm at step 1 moves by 1e-7 with 2 threads, and by 10 x the planted
// lr change (a change of f moves it by 10 f, relative).
void stack_and_lr(size_t, const ChildRun& run, RunRecord& r) {
  double& g = r.series["grad_norm"].values[1];
  if (run.overrides.intra_op_threads == 2) g += 1e-7;
  g *= 1 + 10 * (run.overrides.lr_scale - 1);
}

// The project's smoke made a trainer smoke (`python3 train.py`, JSONL
// metrics, batch probes: a data-only pass of its own).
void as_trainer(nlohmann::json& cfg) {
  for (const char* k : {"data", "model", "optimizer"}) cfg.erase(k);
  cfg["trainer"] = {{"command", {"python3", "train.py"}},
                    {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"},
                                 {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}},
                    {"probes", "{out}/probes.jsonl"}};
}

CalibrateOptions options(const GateProject& p) {
  CalibrateOptions o;
  o.out_dir = p.out_dir();
  o.isa_flags = "avx avx2 fma";
  return o;
}

TEST(Calibrate, RunsEveryPointOfTheAxesAtEachRepeat) {
  GateProject p("cal-points");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2"), parse_axis("capability=default,avx2")};
  o.repeats = 2;
  o.detect = false;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(l.calls.size(), 8u);
  EXPECT_EQ(l.calls[0].overrides.intra_op_threads, 1);
  auto has = [](const ChildRun& r, const std::string& e) { return std::find(r.env.begin(), r.env.end(), e) != r.env.end(); };
  EXPECT_TRUE(has(l.calls[0], "ATEN_CPU_CAPABILITY=default"));
  EXPECT_TRUE(has(l.calls[3], "ATEN_CPU_CAPABILITY=avx2"));
  // Idle OpenMP threads sleep instead of spinning (unless the environment says otherwise).
  EXPECT_EQ(has(l.calls[0], "OMP_WAIT_POLICY=PASSIVE"), std::getenv("OMP_WAIT_POLICY") == nullptr);
  EXPECT_EQ(l.calls[7].overrides.intra_op_threads, 2);
  EXPECT_EQ(l.calls[7].out, p.out_dir() + "/unit/calibrate/calibrate-8.json");
  EXPECT_EQ(c.runs[7].label, "threads=2 capability=avx2 #2");
  EXPECT_EQ(c.recommended.at("loss").tolerance.rule, Tolerance::Rule::kExact);
  EXPECT_EQ(c.self_failed, 0);
  EXPECT_EQ(c.self_comparisons, 56);
  EXPECT_EQ(c.false_alarm.runs, 8);
  EXPECT_EQ(c.detection.why_not, "not searched (--no-detect)");
}

TEST(Calibrate, WithoutAxesItRunsTwiceTheThreadsOverEveryCapabilityHere) {
  GateProject p("cal-default");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.repeats = 1;
  o.detect = false;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(c.axes.size(), 2u);
  EXPECT_EQ(c.axes[0].values, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(c.axes[1].values, (std::vector<std::string>{"default", "avx2"}));
  EXPECT_EQ(l.calls.size(), 4u);
}

TEST(Calibrate, TheSpreadOfTheThreadsSetsTheRuleAndTheDetectionLimitIsBisected) {
  GateProject p("cal-detect");
  FakeLauncher l;
  l.edit = stack_and_lr;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  const Recommendation& g = c.recommended.at("grad_norm");
  EXPECT_EQ(g.tolerance.rule, Tolerance::Rule::kClose);
  EXPECT_EQ(g.tolerance.rtol, 1e-3);
  EXPECT_EQ(g.tolerance.atol, 1e-6);
  // lr x (1 +- f) moves grad_norm by 10 f: missed at 1e-4 (1e-3 relative,
  // within rtol), caught at 10^-3.5.
  ASSERT_TRUE(c.detection.measured) << c.detection.why_not;
  EXPECT_NEAR(c.detection.catches, std::pow(10, -3.5), 1e-9);
  EXPECT_NEAR(c.detection.misses, 1e-4, 1e-12);
  EXPECT_EQ(c.detection.runs, 12);  // the two ends, then 4 rounds, each +f and -f
  ASSERT_EQ(c.detection.tried.size(), 6u);
  EXPECT_EQ(c.detection.tried[0], (std::pair<double, bool>{0.1, true}));
  EXPECT_EQ(c.detection.tried[1], (std::pair<double, bool>{1e-9, false}));
  EXPECT_EQ(c.detection.caught_by.rfind("grad_norm at step 1", 0), 0u) << c.detection.caught_by;
  EXPECT_EQ(l.calls[4].overrides.lr_scale, 1.1);
  EXPECT_EQ(l.calls[5].overrides.lr_scale, 0.9);
  EXPECT_EQ(l.calls[4].out, p.out_dir() + "/unit/calibrate/detect-1.json");
  std::string text = render_calibration_text(c);
  EXPECT_NE(text.find("detection: catches lr x (1 +- 0.000316), misses lr x (1 +- 0.0001); 12 runs"), std::string::npos)
      << text;
}

// A trainer smoke's planted-lr runs make no data-only pass (a process of
// its own, which a learning rate cannot change): they take the first
// run's, and find the same limit.
TEST(Calibrate, ATrainersPlantedRunsTakeTheFirstRunsDataOnlyPass) {
  GateProject p("cal-trainer", as_trainer);
  FakeLauncher l;
  l.edit = stack_and_lr;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_TRUE(c.detection.measured) << c.detection.why_not;
  EXPECT_NEAR(c.detection.catches, std::pow(10, -3.5), 1e-9);
  EXPECT_EQ(c.detection.runs, 12);
  ASSERT_EQ(l.calls.size(), 16u);  // 2 points x 2 repeats, then the 12 planted runs
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(l.calls[i].data_pass) << i;
  for (size_t i = 4; i < l.calls.size(); ++i) EXPECT_FALSE(l.calls[i].data_pass) << i;
}

// A trainer whose training pass consumed other batches than its data-only
// pass is refused as check refuses it, before any rule is recommended.
TEST(Calibrate, ATrainerWhoseDataPassDoesNotReplayTrainingIsRefusedAsCheckRefusesIt) {
  GateProject p("cal-shared-generator", as_trainer);
  FakeLauncher l;
  l.record.train_probes[1].sample_index_hash = "00000000000000ff";
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  try {
    calibrate_smoke(p.smoke_file(), o, l);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()).rfind(p.smoke_file() + ": threads=1 #1: the training pass consumed other batches "
                                          "than the data-only pass, first at batch 1: other samples", 0), 0u)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("though the 2 runs repeated bit for bit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(l.calls.size(), 4u);  // no detection run
}

TEST(Calibrate, ARunThatIgnoresThePlantedLearningRateIsSaid) {
  GateProject p("cal-ignored");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  o.repeats = 1;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  EXPECT_FALSE(c.detection.measured);
  EXPECT_EQ(c.detection.why_not.rfind("lr x (1 +- 0.1) left every value bit-identical", 0), 0u) << c.detection.why_not;
}

TEST(Calibrate, TheLrSeriesItselfDoesNotCountAsDetection) {
  GateProject p("cal-lr-series");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    r.series["lr"] = Series{Series::Dtype::kFloat64, {0.1 * run.overrides.lr_scale, 0.1 * run.overrides.lr_scale}, {}, {}, {}, 0, {}};
  };
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  o.repeats = 1;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  EXPECT_FALSE(c.detection.measured);
  EXPECT_EQ(c.detection.why_not, "the recommended rules miss even lr x (1 +- 0.1)");
}

TEST(Calibrate, RecordsFromOtherRunnersJoinTheRunsAndReportsBesideThemAreLeftOut) {
  GateProject p("cal-records");
  std::filesystem::create_directories(p.root() / "ci");
  const std::string values = load_smoke_config(p.smoke_file()).values_hash;
  RunRecord other = make_gate_record();
  other.fingerprint["runner"] = {"ci runner gpu-1 (#7)", false};
  other.fingerprint["config.values_xxh3"] = {values, false, true};
  other.series["grad_norm"].values[1] += 2e-7;
  write_run_record((p.root() / "ci" / "run-1.json").string(), other);
  write_file_atomically((p.root() / "ci" / "report.json").string(), "{\"verdict\": 0}");
  write_run_record((p.root() / "ci" / "run-1-again.json").string(), other);  // the same record twice
  const std::string golden = p.write_golden(other);
  std::filesystem::copy_file(golden, p.root() / "ci" / "golden.json");  // a golden among the artifacts
  FakeLauncher l;
  l.record.fingerprint["runner"] = {"host here", false};
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1")};
  o.records = {(p.root() / "ci").string()};
  o.detect = false;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(c.runs.size(), 3u);
  EXPECT_EQ(c.runs[2].point.at("runner"), "ci runner gpu-1 (#7)");
  EXPECT_EQ(c.runners, (std::vector<std::string>{"host here", "ci runner gpu-1 (#7)"}));
  EXPECT_EQ(c.notes.at(0), "--records " + (p.root() / "ci" / "run-1.json").string() +
                              ": the same record as one read before, counted once");
  ASSERT_EQ(c.notes.size(), 3u);
  EXPECT_EQ(c.notes.at(1), "--records " + (p.root() / "ci").string() + ": 2 file(s) left out: golden.json (a golden, "
                          "not a run record), report.json (JSON, but no run record)")
      << c.notes.at(1);
  EXPECT_EQ(c.recommended.at("grad_norm").tolerance.rule, Tolerance::Rule::kClose);
  // A record named on its own must be one of this smoke, and of this
  // version of its config; both are refused before anything runs.
  size_t calls = l.calls.size();
  o.records = {(p.root() / "ci" / "report.json").string()};
  EXPECT_THROW(calibrate_smoke(p.smoke_file(), o, l), Error);
  o.records = {golden};
  try {
    calibrate_smoke(p.smoke_file(), o, l);
    ADD_FAILURE() << "a golden named in --records was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), golden + ": expected a run record (lockstep run, check's run-N.json); this is a "
                                              "golden (provenance, content_hash): calibrate measures runs");
  }
  other.fingerprint["config.values_xxh3"] = {"0123456789abcdef", false, true};
  write_run_record((p.root() / "old.json").string(), other);
  o.records = {(p.root() / "old.json").string()};
  try {
    calibrate_smoke(p.smoke_file(), o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("fingerprint.config.values_xxh3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(l.calls.size(), calls);
}

// Calibrate names the golden check would use for its runs (their stack
// label's, else the unlabeled one standing in) and judges run 1 against it
// under the rules it recommends; runs of several stack labels are said to
// spread over the stack change.
TEST(Calibrate, ItJudgesItsRunsAgainstTheGoldenCheckUsesUnderTheirStackLabel) {
  GateProject p("cal-stack");
  RunRecord golden = make_gate_record();
  golden.series["loss"].values[0] = static_cast<float>(2.4);
  std::string unlabeled = p.write_golden(golden);
  std::filesystem::create_directories(p.root() / "ci");
  RunRecord other = make_gate_record();
  other.fingerprint["config.values_xxh3"] = {load_smoke_config(p.smoke_file()).values_hash, false, true};
  write_run_record((p.root() / "ci" / "run-1.json").string(), other);  // unlabeled
  FakeLauncher l;
  l.record.stack = "torch2";
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1")};
  o.records = {(p.root() / "ci").string()};
  o.detect = false;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_EQ(c.notes[0], "the runs carry several stack labels ((none), torch2): their spread includes the stack "
                        "change, as the cross-stack lane's tolerance does");
  EXPECT_EQ(c.notes[1].rfind("check compares these runs with " + unlabeled + " (no golden for stack torch2 "
                             "(LOCKSTEP_STACK) on platform cpu-x86_64-avx2; compared against the unlabeled " +
                             unlabeled, 0), 0u) << c.notes[1];
  EXPECT_NE(c.notes[1].find("; run 1 against it under the recommended rules: fails first at loss at step 0: "),
            std::string::npos) << c.notes[1];
}

TEST(Calibrate, RecordsInsideItsOwnRecordsFolderAreRefusedBeforeAnyRun) {
  GateProject p("cal-own");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  o.records = {p.out_dir() + "/unit/calibrate/calibrate-1.json"};
  try {
    calibrate_smoke(p.smoke_file(), o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("which this calibration clears and fills with its own runs"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(l.calls.empty());
  EXPECT_EQ(calibrate_records_dir(p.smoke_file(), p.out_dir()), p.out_dir() + "/unit/calibrate");
}

TEST(Calibrate, AMalformedFileInARecordsFolderIsBadInput) {
  GateProject p("cal-trunc");
  std::filesystem::create_directories(p.root() / "ci");
  write_file_atomically((p.root() / "ci" / "run-1.json").string(), "{\"smoke\": \"unit\", \"series\": {");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1,2")};
  o.records = {(p.root() / "ci").string()};
  EXPECT_THROW(calibrate_smoke(p.smoke_file(), o, l), Error);
  EXPECT_TRUE(l.calls.empty());
}

TEST(Calibrate, SeedsBecomeAnAxisOfTheConfigsSeedAndTheNext) {
  GateProject p("cal-seeds");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    r.seed = std::stoull(run.seed);
    r.series["grad_norm"].values[1] = 1 + 0.01 * static_cast<double>(r.seed - 42);
  };
  CalibrateOptions o = options(p);
  o.axes = {parse_axis("threads=1")};
  o.seeds = 3;
  o.repeats = 1;
  o.detect = false;
  Calibration c = calibrate_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(l.calls.size(), 3u);
  EXPECT_EQ(l.calls[2].seed, "44");
  EXPECT_TRUE(c.seeds_vary);
  EXPECT_EQ(c.recommended.at("grad_norm").tolerance.rule, Tolerance::Rule::kSigma);
  EXPECT_NE(render_calibration_text(c).find("sigma rules need a multi-seed golden"), std::string::npos);
}

TEST(Calibrate, BadAxesAreRefusedNamingTheFlag) {
  auto message = [](const std::string& text) {
    try {
      parse_axis(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message("speed=1"), "--axis speed=1: unknown axis 'speed' (threads, capability, workers or seed)");
  EXPECT_EQ(message("threads=0"), "--axis threads=0: '0' is not an intra-op thread count in [1, 1024]");
  EXPECT_EQ(message("threads=1,1"), "--axis threads=1,1: '1' is given twice");
  EXPECT_EQ(message("threads="), "--axis threads=: expected at least one value after '='");
  EXPECT_EQ(message("threads"), "--axis threads: expected NAME=V1,V2,... with NAME one of threads, capability, workers, seed");
  EXPECT_EQ(message("capability=sse4"), "--axis capability=sse4: 'sse4' is not an ATen CPU capability: default, avx2 or avx512");
  EXPECT_EQ(message("seed=18446744073709551616"),
            "--axis seed=18446744073709551616: '18446744073709551616' is not a decimal seed in [0, 2^64-1]");
  EXPECT_EQ(parse_axis("workers=0,2").values, (std::vector<std::string>{"0", "2"}));
}

TEST(Calibrate, ACapabilityTheCpuLacksIsAnEnvironmentError) {
  GateProject p("cal-isa");
  FakeLauncher l;
  CalibrateOptions o = options(p);
  o.isa_flags = "avx fma sse4_2";
  o.axes = {parse_axis("capability=default,avx2")};
  try {
    calibrate_smoke(p.smoke_file(), o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_EQ(std::string(e.what()),
              "--axis capability=avx2: this CPU cannot run it (cpu.isa: avx fma sse4_2; it runs default)");
  }
  EXPECT_TRUE(l.calls.empty());
  EXPECT_EQ(supported_capabilities("avx avx2 avx512bw avx512dq avx512f avx512vl fma"),
            (std::vector<std::string>{"default", "avx2", "avx512"}));
}

}  // namespace
}  // namespace lockstep
