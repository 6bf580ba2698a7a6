// bless_smoke() in-process with a fake launcher: the golden it makes and
// every refusal.
#include "gate/bless.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "gate/gate_fixture.h"
#include "gate/provenance.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;
using testing::make_gate_record;

BlessSmokeOptions options_for(const GateProject& p) {
  BlessSmokeOptions o;
  o.reason = "new smoke";
  o.out_dir = p.out_dir();
  return o;
}

TEST(BlessSmoke, TwoIdenticalRunsMakeANewGoldenWithProvenance) {
  GateProject p("bless-new");
  FakeLauncher l;
  ::setenv("CI_JOB_URL", "https://gitlab.example.com/ml/team/-/jobs/42", 1);
  ::setenv("CI_RUNNER_DESCRIPTION", "cpu-avx2-runner-3", 1);
  BlessedGolden b = bless_smoke(p.smoke_file(), options_for(p), l);
  ::unsetenv("CI_JOB_URL");
  ::unsetenv("CI_RUNNER_DESCRIPTION");
  EXPECT_EQ(b.golden.provenance.action, "bless");
  EXPECT_EQ(b.golden.provenance.replaces, "");
  EXPECT_EQ(b.golden.provenance.ci_job_url, "https://gitlab.example.com/ml/team/-/jobs/42");
  EXPECT_EQ(b.golden.provenance.ci_runner, "cpu-avx2-runner-3");
  // The fields survive the file, and the line review prints says them.
  std::string path = p.goldens_dir() + "/written.json";
  write_golden(path, b.golden);
  Provenance read = read_golden(path).provenance;
  EXPECT_EQ(read.action, "bless");
  EXPECT_EQ(read.ci_runner, "cpu-avx2-runner-3");
  std::string line = describe_provenance(read);
  EXPECT_EQ(line.rfind("blessed " + read.created_utc + " by ", 0), 0u) << line;
  EXPECT_NE(line.find(" (lockstep " LOCKSTEP_VERSION ", 2 runs) in CI job https://gitlab.example.com/ml/team/-/jobs/42 "
                      "on runner cpu-avx2-runner-3: \"new smoke\""),
            std::string::npos)
      << line;
  EXPECT_EQ(b.path, p.goldens_dir() + "/unit/cpu-x86_64-avx2.json");
  EXPECT_FALSE(b.replaces);
  EXPECT_EQ(b.seeds, 1u);
  EXPECT_EQ(b.golden.provenance.reason, "new smoke");
  EXPECT_EQ(b.golden.provenance.runs, 2);
  EXPECT_EQ(b.golden.provenance.tool_version, LOCKSTEP_VERSION);
  EXPECT_TRUE(b.golden.provenance.seeds.empty());
  EXPECT_EQ(b.golden.record.series.at("loss").values, make_gate_record().series.at("loss").values);
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_EQ(l.calls[0].out, p.out_dir() + "/unit/bless-1.json");
  EXPECT_EQ(l.calls[0].seed, "");  // the config's own seed
}

TEST(BlessSmoke, ReblessingTheSameValuesReportsNoChange) {
  GateProject p("bless-again");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  BlessedGolden b = bless_smoke(p.smoke_file(), options_for(p), l);
  EXPECT_TRUE(b.replaces);
  EXPECT_EQ(b.changes, "");
  EXPECT_EQ(b.golden.provenance.replaces, read_golden(b.path).content_hash);
  EXPECT_EQ(b.golden.provenance.replaces.size(), 32u);
}

TEST(BlessSmoke, DifferingRunsAreRefusedAsNondeterministic) {
  GateProject p("bless-nondet");
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 2) r.series["grad_norm"].values[0] = 3.0;
  };
  try {
    bless_smoke(p.smoke_file(), options_for(p), l);
    FAIL() << "bless accepted differing runs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kNondeterministic);
    // Run 2 varied what must not matter, as check's second repeat does.
    const std::string why = e.what();
    EXPECT_EQ(why.rfind("refusing to bless unit: run 2 differs from run 1 (run 2 varied what must not matter: " +
                            describe_variation(l.calls[1].overrides.vary) +
                            "; docs/equivalence.md, \"Perturbed repeats\"): train step 0: grad_norm",
                        0),
              0u)
        << why;
  }
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_TRUE(l.calls[0].overrides.vary.empty());
  EXPECT_EQ(l.calls[1].overrides.vary, repeat_variation(load_smoke_config(p.smoke_file())));
  EXPECT_FALSE(l.calls[1].overrides.vary.empty());
}

TEST(BlessSmoke, NonFiniteValuesAnywhereAreRefused) {
  GateProject p("bless-nan");
  FakeLauncher l;
  l.record.probes[1].inputs.std = NAN;
  l.record.train_probes = l.record.probes;
  try {
    bless_smoke(p.smoke_file(), options_for(p), l);
    FAIL() << "bless accepted a NaN probe statistic";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "refusing to bless unit: probes[1].inputs.std is non-finite (nan); a golden holds "
                                     "finite values unless the smoke sets tolerance.allow_nonfinite_golden");
  }
}

TEST(BlessSmoke, NonFiniteValuesPassWhenTheSmokeAllowsThem) {
  GateProject p("bless-nan-allowed",
               [](nlohmann::json& cfg) { cfg["tolerance"] = {{"allow_nonfinite_golden", true}}; });
  FakeLauncher l;
  l.record.series["loss"].values[1] = INFINITY;
  BlessedGolden b = bless_smoke(p.smoke_file(), options_for(p), l);
  EXPECT_TRUE(std::isinf(b.golden.record.series.at("loss").values[1]));
}

TEST(BlessSmoke, ExtraSeedsMakeAMultiSeedGolden) {
  GateProject p("bless-seeds");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.seed == "7") r.series["grad_norm"].values = {3.0, 5.0};
  };
  BlessSmokeOptions o = options_for(p);
  o.seeds = {7};
  BlessedGolden b = bless_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(b.seeds, 2u);
  EXPECT_EQ(b.golden.provenance.seeds, (std::vector<uint64_t>{42, 7}));
  ASSERT_EQ(l.calls.size(), 4u);
  EXPECT_EQ(l.calls[2].seed, "7");
  EXPECT_EQ(l.calls[2].out, p.out_dir() + "/unit/bless-seed-7-1.json");
  const Series& g = b.golden.record.series.at("grad_norm");
  EXPECT_EQ(g.values, (std::vector<double>{1.0, 1.0}));  // the config seed's run stays the reference
  EXPECT_EQ(g.mean, (std::vector<double>{2.0, 3.0}));
  EXPECT_EQ(g.std, (std::vector<double>{1.0, 2.0}));
}

TEST(BlessSmoke, SeedsThatAddNothingAreRefused) {
  GateProject p("bless-seeds-same");
  FakeLauncher l;
  BlessSmokeOptions o = options_for(p);
  o.seeds = {42};
  try {
    bless_smoke(p.smoke_file(), o, l);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "--seeds must name a seed other than the config's 42");
  }
}

TEST(ValidateGoldenCandidate, NamesTheFirstNonFiniteField) {
  RunRecord r = make_gate_record();
  EXPECT_NO_THROW(validate_golden_candidate(r, 2, false, "accept x"));
  r.train_probes[0].labels.max = -INFINITY;
  try {
    validate_golden_candidate(r, 2, false, "accept x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("refusing to accept x: train_probes[0].labels.max is non-finite (-inf)", 0), 0u)
        << e.what();
  }
  EXPECT_NO_THROW(validate_golden_candidate(r, 2, true, "accept x"));
  try {
    validate_golden_candidate(make_gate_record(), 1, false, "accept y");
    FAIL() << "one run accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "refusing to accept y: it was made from 1 run; a golden needs at least 2 "
                                     "bit-identical runs in fresh processes (run `lockstep check` with --repeat 2 "
                                     "or more, or `lockstep bless`)");
  }
}

// A trainer smoke records the series its config names: a golden holding
// another (a forged one, its hash recomputed) is refused by accept and
// verify-goldens, naming the series and the ones the config has.
TEST(ValidateKeptGolden, ATrainerGoldenHoldsOnlyTheConfigsSeries) {
  SmokeConfig cfg;
  cfg.file = "smoke/trainer.json";
  cfg.trainer.command = {"python3", "train.py"};
  cfg.trainer.series = {{"loss", "train/loss"}, {"lr", "lr"}};
  Golden g;
  g.record = make_gate_record();
  g.record.series.erase("grad_norm");
  g.provenance = stamp_provenance("import", "from the old CI", GitState{}, 0);
  g.provenance.imported_from = "jsonl /ci/loss.jsonl";  // no contract to hold it to
  EXPECT_NO_THROW(validate_kept_golden(g, cfg, "accept x"));
  g.record.series["../../x"] = g.record.series.at("loss");
  try {
    validate_kept_golden(g, cfg, "accept x");
    FAIL() << "a series the config does not name was kept";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "refusing to accept x: series ../../x: not a series smoke/trainer.json records "
                                     "(trainer.metrics.series: loss, lr)");
  }
}

// lockstep's own output (goldens, --out, pending goldens) never makes the
// work tree dirty; anything else does.
TEST(DirtyTree, OwnFoldersAreIgnoredAndOtherChangesNamed) {
  GitState git;
  git.in_repo = true;
  git.workdir = "/r/";
  git.dirty_files = {"goldens/a/cpu.json", "lockstep-out/", "lockstep-out/a/run-1.json"};
  EXPECT_NO_THROW(refuse_dirty_tree(git, {"/r/goldens", "/r/lockstep-out"}, false, "accept"));
  git.dirty_files.push_back("smoke/a.json");
  try {
    refuse_dirty_tree(git, {"/r/goldens", "/r/lockstep-out"}, false, "accept");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "refusing to accept from a dirty work tree (commit first, or pass --allow-dirty, "
                                     "which is recorded):\n  smoke/a.json");
  }
  EXPECT_NO_THROW(refuse_dirty_tree(git, {"/r/goldens"}, true, "accept"));
}

TEST(BlessSmoke, TrainedBatchesOtherThanTheDataOnlyPassAreRefusedAsCheckWould) {
  GateProject p("bless-train-vs-probe");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun&, RunRecord& r) { r.train_probes[1].sample_index_hash = "00000000000000ff"; };
  try {
    bless_smoke(p.smoke_file(), options_for(p), l);
    FAIL() << "bless accepted a run check refuses";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kNondeterministic);
    EXPECT_NE(std::string(e.what()).find("consumed other batches than the data-only pass, first at batch 1: other "
                                         "samples (sample indices 0000000000000000 in the data-only pass, "
                                         "00000000000000ff in training)"),
              std::string::npos) << e.what();
  }
}

TEST(BlessSmoke, SeedsLoggingOtherStepsMakeNoMultiSeedGolden) {
  GateProject p("bless-seed-steps");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.seed.empty()) r.series["loss"].steps = {0, 1};  // the same values, other step numbers
    if (run.seed.empty()) r.series["loss"].steps = {0, 2};
    r.steps = 3;
  };
  BlessSmokeOptions o = options_for(p);
  o.seeds = {99};
  try {
    bless_smoke(p.smoke_file(), o, l);
    FAIL() << "bless averaged values of different steps";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("series loss is logged at other steps with seed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lockstep
