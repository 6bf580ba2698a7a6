#include "gate/selftest.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gate/gate_fixture.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;
using testing::joined;

// The runs a selftest asks for, and its verdicts, with canned records:
// the planted change seen or not, the relaxed runs alike or not.
TEST(Selftest, APlantedChangeThatFailsTheBitwiseComparisonIsSensitive) {
  GateProject p("selftest-sensitive");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
    if (run.overrides.perturb == "data") {
      r.probes[0].inputs.xxh3_128 = std::string(32, 'c');
      r.fingerprint["perturb.data"] = {"dataset index 3 (the first sample of the data-only pass's first batch): ...",
                                       false};
    }
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  // Two plain runs, the perturbed ones, then three runs with the contract relaxed.
  ASSERT_EQ(l.calls.size(), 7u);
  EXPECT_EQ(l.calls[0].out, p.out_dir() + "/selftest-base.json");
  EXPECT_EQ(l.calls[1].out, p.out_dir() + "/selftest-base-2.json");
  EXPECT_EQ(l.calls[2].overrides.perturb, "parameter");
  EXPECT_EQ(l.calls[3].overrides.perturb, "data");
  EXPECT_EQ(l.calls[3].out, p.out_dir() + "/selftest-perturbed-data.json");
  for (size_t k = 4; k < 7; ++k) {
    EXPECT_EQ(l.calls[k].overrides.mode, "default");
    EXPECT_EQ(l.calls[k].overrides.intra_op_threads, 2);
    EXPECT_EQ(l.calls[k].out, p.out_dir() + "/selftest-relaxed-" + std::to_string(k - 3) + ".json");
  }
  EXPECT_TRUE(r.sensitive);
  EXPECT_TRUE(r.parameter_caught);
  EXPECT_TRUE(r.data_checked);
  EXPECT_TRUE(r.data_caught);
  EXPECT_EQ(r.data_caught_at, "data batch 0: inputs (xxh3 aaaaaaaaaaaa… → cccccccccccc…)");
  EXPECT_EQ(to_json(r)["data"]["perturbed"],
            "dataset index 3 (the first sample of the data-only pass's first batch): ...");
  EXPECT_EQ(r.code(), ExitCode::kPass);
  EXPECT_EQ(r.caught.rfind("train step 1: loss", 0), 0u) << r.caught;
  EXPECT_EQ(r.distinct, 1);
  EXPECT_EQ(to_json(r)["relaxed"]["observes"], false);
  EXPECT_NE(selftest_text(r).find("selftest unit: sensitive (it catches a planted one-ULP change of a parameter and of a data sample)\n"), std::string::npos) << selftest_text(r);
  EXPECT_NE(selftest_text(r).find("3 runs: 1 distinct result: this smoke cannot observe nondeterminism on this stack"),
            std::string::npos)
      << selftest_text(r);
}

TEST(Selftest, AChangeNothingRecordsIsInsensitiveAndRelaxedRunsAreCounted) {
  GateProject p("selftest-insensitive");
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 6) r.series["loss"].values[0] = std::nextafter(2.5f, 3.0f);  // the second relaxed run differs
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

// The data control: a data-only pass whose probes hold still although a
// sample moved is INSENSITIVE even when the parameter change is caught;
// a helper that moved nothing says why; a trainer smoke without a
// data-only pass skips the control.
TEST(Selftest, ADataPassBlindToItsSamplesIsInsensitive) {
  GateProject p("selftest-data-blind");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
    if (run.overrides.perturb == "data") r.fingerprint["perturb.data"] = {"dataset index 3 (...)", false};
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  EXPECT_TRUE(r.parameter_caught);
  EXPECT_FALSE(r.data_caught);
  EXPECT_FALSE(r.sensitive);
  EXPECT_EQ(r.code(), ExitCode::kRegression);
  EXPECT_NE(selftest_text(r).find("  planted data change (dataset index 3 (...)): NOT caught\n"), std::string::npos)
      << selftest_text(r);
  EXPECT_NE(joined(r.notes).find("the data-only pass's probes were bit-identical although a sample moved"),
            std::string::npos)
      << joined(r.notes);

  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
    if (run.overrides.perturb == "data")
      r.fingerprint["perturb.data"] = {"nothing: an IterableDataset has no sample index to perturb", false};
  };
  r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  EXPECT_FALSE(r.sensitive);
  EXPECT_NE(joined(r.notes).find("the data control moved nothing: nothing: an IterableDataset"), std::string::npos)
      << joined(r.notes);
}

// Plain runs that differ make every planted change meaningless (a changed
// sample order "catches" the data control): nothing else runs, exit 4.
TEST(Selftest, PlainRunsThatDifferAreNotRepeatableAndNothingIsPlanted) {
  GateProject p("selftest-unrepeatable");
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 2) r.probes[0].sample_index_hash = std::string(16, '7');
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  EXPECT_EQ(l.calls.size(), 2u);
  EXPECT_FALSE(r.repeatable);
  EXPECT_FALSE(r.sensitive);
  EXPECT_EQ(r.code(), ExitCode::kNondeterministic);
  EXPECT_EQ(r.verdict(), "NOT REPEATABLE");
  EXPECT_EQ(selftest_text(r).rfind("selftest unit: NOT REPEATABLE (its plain runs differ: nothing planted was judged)\n"
                                   "  note: the plain runs differ (data batch 0: ",
                                   0),
            0u)
      << selftest_text(r);
  EXPECT_EQ(to_json(r)["repeatable"], false);
}

TEST(Selftest, ATrainerWithoutADataOnlyPassSkipsTheDataControl) {
  GateProject p("selftest-no-data-pass", [](nlohmann::json& c) {
    c.erase("data");
    c.erase("model");
    c.erase("optimizer");
    c["trainer"] = {{"command", {"python3", "train.py"}},
                    {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}}}}}};
  });
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.perturb == "parameter") r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  };
  SelftestOptions o;
  o.dir = p.out_dir();
  SelftestResult r = selftest_smoke(load_smoke_config(p.smoke_file()), p.smoke_file(), o, l);
  ASSERT_EQ(l.calls.size(), 6u);  // no perturbed-data run
  EXPECT_FALSE(r.data_checked);
  EXPECT_TRUE(r.sensitive);
  EXPECT_EQ(selftest_text(r).find("planted data change"), std::string::npos) << selftest_text(r);
  EXPECT_NE(joined(r.notes).find("no data-only pass (trainer.probes unset)"), std::string::npos) << joined(r.notes);
}

}  // namespace
}  // namespace lockstep
