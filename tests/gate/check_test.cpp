// check_smoke() in-process: every way a smoke's check ends, with a fake
// launcher (no LibTorch, no child processes).
#include "gate/check.h"
#include "gate/provenance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compare/markdown_report.h"
#include "compare/text_report.h"
#include "core/error.h"
#include "core/job_slots.h"
#include "core/atomic_file.h"
#include "gate/gate_fixture.h"
#include "gate/verify_goldens.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;
using testing::joined;
using testing::make_gate_record;

// `cfg` made a trainer smoke (`python3 train.py`, JSONL metrics naming
// `series`, probes): the gate's trainer paths with the fake launcher.
void as_trainer(nlohmann::json& cfg, const nlohmann::json& series = {{"loss", "loss"}, {"grad_norm", "grad_norm"}}) {
  for (const char* k : {"data", "model", "optimizer"}) cfg.erase(k);
  cfg["trainer"] = {{"command", {"python3", "train.py"}},
                    {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", series}}},
                    {"probes", "{out}/probes.jsonl"}};
}

TEST(CheckSmoke, IdenticalRunsMatchingTheGoldenPass) {
  GateProject p("pass");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  EXPECT_TRUE(c.compared);
  EXPECT_FALSE(c.pending.has_value());
  EXPECT_EQ(c.smoke, "unit");
  EXPECT_EQ(c.report_dir, p.out_dir() + "/unit");
  ASSERT_EQ(l.calls.size(), 2u);  // the config's default repeat
  EXPECT_EQ(l.calls[0].out, p.out_dir() + "/unit/run-1.json");
  EXPECT_EQ(l.calls[1].out, p.out_dir() + "/unit/run-2.json");
  EXPECT_EQ(l.calls[0].smoke, p.smoke_file());
  EXPECT_TRUE(l.checkpoints.empty());
  // Run 2 varied what must not matter (the config's default: every kind);
  // run 1 ran plain.
  EXPECT_TRUE(l.calls[0].overrides.vary.empty());
  const RunVariation& v = l.calls[1].overrides.vary;
  EXPECT_GE(v.allocator_bytes, 65536);
  EXPECT_GE(v.malloc_perturb, 1);
  EXPECT_TRUE(v.env_reversed);
  EXPECT_TRUE(v.thread_warmup);
  EXPECT_EQ(c.verdict.notes.back(),
            "2 runs in this job were bit-identical, run 2 varying what must not matter (" + describe_variation(v) + ")");
  EXPECT_EQ(c.verdict.lane, Lane::kSameStack);
}

TEST(CheckSmoke, RepeatVariesEmptyRunsEveryRepeatPlain) {
  GateProject p("plain-repeats", [](nlohmann::json& c) { c["repeat_varies"] = nlohmann::json::array(); });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_TRUE(l.calls[1].overrides.vary.empty());
  EXPECT_EQ(c.verdict.notes.back(), "2 runs in this job were bit-identical");

  GateProject q("one-kind", [](nlohmann::json& c) { c["repeat_varies"] = {"env-order"}; });
  q.write_golden(make_gate_record());
  FakeLauncher one;
  check_smoke(q.smoke_file(), q.check_options(), one);
  ASSERT_EQ(one.calls.size(), 2u);
  EXPECT_EQ(variation_spec(one.calls[1].overrides.vary), "env-order");
}

// A result that depends on what must not matter (allocation history, in
// this fake: the allocator hole moves the loss): two identical repeats
// would pass; the varied one differs, the plain runs after it agree with
// run 1, and each kind alone is tried to name the one that moves it.
TEST(CheckSmoke, ADifferenceOnlyUnderVariationIsNondeterministicNamingTheKind) {
  GateProject p("vary-alloc");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.vary.allocator_bytes > 0) r.series["loss"].values[1] = 2.0;
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  const RunVariation v = l.calls[1].overrides.vary;
  const std::vector<std::string> kinds = varied_kinds(v);
  ASSERT_EQ(l.calls.size(), 5u + kinds.size());  // 5 runs (--distinct-runs), then each kind alone
  for (size_t k = 0; k < kinds.size(); ++k) {
    EXPECT_EQ(l.calls[5 + k].out, p.out_dir() + "/unit/vary-" + kinds[k] + ".json");
    EXPECT_EQ(l.calls[5 + k].overrides.vary, only_kind(v, kinds[k]));
  }
  for (size_t k : {0u, 2u, 3u, 4u}) EXPECT_TRUE(l.calls[k].overrides.vary.empty()) << k;
  const std::string dir = p.out_dir() + "/unit";
  EXPECT_EQ(c.verdict.first_divergence.rfind("run 2 differs from run 1 only when it varies what must not matter (" +
                                                 describe_variation(v) +
                                                 "): the plain runs 1, 3, 4 and 5 agree bit for bit; alone, a " +
                                                 std::to_string(v.allocator_bytes) +
                                                 "-byte allocator hole before the run moves the values (" + dir +
                                                 "/vary-allocator.json); first difference: train step 1: loss",
                                             0),
            0u)
      << c.verdict.first_divergence;
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "to see it again: lockstep run " + p.smoke_file() + " --record plain.json; lockstep run " +
                          p.smoke_file() + " --vary allocator=" + std::to_string(v.allocator_bytes) +
                          " --record varied.json; lockstep compare varied.json plain.json (exit 1 names the first "
                          "difference; docs/equivalence.md, \"Perturbed repeats\")"),
            c.verdict.notes.end())
      << joined(c.verdict.notes);
  EXPECT_EQ(c.verdict.subject_word, "run 2");
}

// When a plain run differs as well, the variation is not named the cause;
// when no kind alone moves the values, their combination is.
TEST(CheckSmoke, AVariedRepeatIsNotBlamedForWhatPlainRunsShowToo) {
  GateProject p("vary-plain");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 2 || call == 4) r.series["loss"].values[1] = 2.0;
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_EQ(l.calls.size(), 5u);  // no kind is tried alone
  EXPECT_EQ(c.verdict.first_divergence.rfind("run 2 differs from run 1 in the same job (2 distinct results in 5 runs)", 0), 0u)
      << c.verdict.first_divergence;
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "run 2 varied what must not matter (" + describe_variation(l.calls[1].overrides.vary) +
                          "); plain runs differ as well, so the variation is not the only cause"),
            c.verdict.notes.end())
      << joined(c.verdict.notes);

  FakeLauncher both;  // the allocator hole and the reversed environment together, neither alone
  both.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (run.overrides.vary.allocator_bytes > 0 && run.overrides.vary.env_reversed) r.series["loss"].values[1] = 2.0;
  };
  SmokeCheck b = check_smoke(p.smoke_file(), p.check_options(), both);
  EXPECT_NE(b.verdict.first_divergence.find("; no kind alone moves the values, their combination does; first "
                                            "difference: train step 1: loss"),
            std::string::npos)
      << b.verdict.first_divergence;
}

TEST(CheckSmoke, OneRunSaysDeterminismWasNotChecked) {
  GateProject p("repeat-1");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  CheckSmokeOptions o = p.check_options();
  o.repeat = 1;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass);
  EXPECT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(c.verdict.notes.back(), "one run only (repeat 1): run-to-run determinism was not checked in this job");
}

TEST(CheckSmoke, RepeatDifferenceIsNondeterministic) {
  GateProject p("repeat");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  CheckSmokeOptions o = p.check_options();
  o.repeat = 3;
  o.distinct_runs = 3;  // no run more than the repeats
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    r.resources.step_time_s = {0.01 * static_cast<double>(call), 0.02};
    r.resources.peak_rss_bytes = 1000 * static_cast<int64_t>(call);
    if (call == 3) r.series["loss"].values[1] = 2.0;
  };
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_TRUE(c.compared);  // the same reports as a regression: run 3 against run 1
  EXPECT_FALSE(c.pending.has_value());
  EXPECT_EQ(l.calls.size(), 3u);
  EXPECT_EQ(c.verdict.reference_word, "run 1");
  EXPECT_EQ(c.verdict.subject_word, "run 3");
  EXPECT_EQ(c.verdict.run_label, p.out_dir() + "/unit/run-3.json");
  EXPECT_EQ(c.verdict.golden_label, p.out_dir() + "/unit/run-1.json");
  ASSERT_EQ(c.verdict.findings.size(), 1u);
  EXPECT_EQ(c.verdict.findings[0].detail,
            "step 1: run 1 2.25, run 3 2, |err| 0.25, rel 0.111, 1048576 ulp; rule exact; 1 of 2 fail");
  std::string text = render_text(c.verdict, false);
  EXPECT_EQ(text.find("golden"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("lockstep: unit: NONDETERMINISTIC (exit 4)\n  run 3: " + p.out_dir() + "/unit/run-3.json\n  run 1: ", 0), 0u)
      << text;
  EXPECT_EQ(render_markdown(c.verdict).find("golden"), std::string::npos);
  for (const auto& n : c.verdict.notes)  // two runs of one job say nothing about resources
    EXPECT_TRUE(n.find("step time") == std::string::npos && n.find("RSS") == std::string::npos) << n;
  EXPECT_EQ(c.verdict.first_divergence.rfind("run 3 differs from run 1 in the same job (2 distinct results in 3 runs); "
                                             "first difference: train step 1: loss", 0), 0u)
      << c.verdict.first_divergence;
  EXPECT_EQ(c.records, "records: " + p.out_dir() + "/unit/run-1.json, " + p.out_dir() + "/unit/run-3.json");
  EXPECT_STREQ(stop_kind(c.verdict), "nondeterministic");
}

// How nondeterministic: when the repeats differ, the smoke runs until
// distinct_runs runs in all (default 5), and the verdict counts the
// distinct results and says where each first differs from run 1.
TEST(CheckSmoke, DifferingRepeatsAreCountedInDistinctResults) {
  GateProject p("distinct");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 2 || call == 4) r.series["loss"].values[1] = 2.0;  // runs 2 and 4 alike
    if (call == 5) r.series["loss"].values[0] = 3.0;               // run 5 on its own
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  ASSERT_EQ(l.calls.size(), 5u);
  EXPECT_EQ(l.calls[2].out, p.out_dir() + "/unit/run-3.json");
  EXPECT_EQ(l.calls[4].out, p.out_dir() + "/unit/run-5.json");
  EXPECT_EQ(c.verdict.first_divergence.rfind("run 2 differs from run 1 in the same job (3 distinct results in 5 runs); "
                                             "first difference: train step 1: loss", 0), 0u)
      << c.verdict.first_divergence;
  ASSERT_GE(c.verdict.notes.size(), 3u);
  EXPECT_EQ(c.verdict.notes[0], "result 1 of 3: runs 1, 3");
  EXPECT_EQ(c.verdict.notes[1].rfind("result 2 of 3: runs 2, 4; first difference from run 1: train step 1: loss", 0), 0u)
      << c.verdict.notes[1];
  EXPECT_EQ(c.verdict.notes[2].rfind("result 3 of 3: run 5; first difference from run 1: train step 0: loss", 0), 0u)
      << c.verdict.notes[2];
  // Each run under its own number in its difference.
  EXPECT_NE(c.verdict.notes[2].find("step 0: run 1 2.5, run 5 "), std::string::npos) << c.verdict.notes[2];
  // Repeats that agree run no more.
  FakeLauncher same;
  SmokeCheck pass = check_smoke(p.smoke_file(), p.check_options(), same);
  EXPECT_EQ(pass.verdict.exit_code(), ExitCode::kPass) << pass.verdict.first_divergence;
  EXPECT_EQ(same.calls.size(), 2u);
}

TEST(CheckSmoke, ABuiltInSmokesBatchesOtherThanItsDataPassAreNondeterministic) {
  GateProject p("train-vs-probe");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.record.train_probes[1].inputs.xxh3_128 = std::string(32, 'c');
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_EQ(c.verdict.first_divergence,
            "the training pass consumed other batches than the data-only pass, first at batch 1: the same samples "
            "with other inputs (xxh3 aaaaaaaaaaaa… → cccccccccccc…): augmentation or noise drew other values "
            "(records: " + p.out_dir() + "/unit)");
}

// A trainer whose sampler shares torch's global generator with dropout:
// every run repeats, yet training draws other batches than the data-only
// pass. That is the smoke's wiring, said as exit 2 with the fix; with one
// run the repeat is unknown and it stays exit 4.
TEST(CheckSmoke, ATrainerWhoseDataPassDoesNotReplayTrainingIsBadInputWithTheFix) {
  GateProject p("shared-generator", [](nlohmann::json& cfg) { as_trainer(cfg); });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.record.train_probes[1].sample_index_hash = "00000000000000ff";
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  const std::string head =
      "the training pass consumed other batches than the data-only pass, first at batch 1: other samples (sample "
      "indices 0000000000000000 in the data-only pass, 00000000000000ff in training): the sampler's order moved";
  EXPECT_EQ(c.verdict.first_divergence.rfind(head + ", though the 2 runs repeated bit for bit: deterministic, but "
                                             "this smoke's data-only pass does not replay the training pass; the "
                                             "usual cause: the DataLoader's sampler", 0), 0u)
      << c.verdict.first_divergence;
  EXPECT_NE(c.verdict.first_divergence.find("generator=ctx.generator"), std::string::npos);
  CheckSmokeOptions once = p.check_options();
  once.repeat = 1;
  SmokeCheck one = check_smoke(p.smoke_file(), once, l);
  EXPECT_EQ(one.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_EQ(one.verdict.first_divergence.rfind(head + " (one run: whether it repeats was not checked); the usual "
                                               "cause:", 0), 0u)
      << one.verdict.first_divergence;
}

// A trainer smoke's runs make no data-only pass (a Python process of its
// own). Batches trained on that are the golden's bit for bit take the
// golden's data-only probes: no pass runs, and the verdict says so.
TEST(CheckSmoke, ATrainerWhoseBatchesAreTheGoldensTakesItsDataOnlyPassAndRunsNone) {
  GateProject p("data-from-golden", [](nlohmann::json& cfg) {
    as_trainer(cfg);
    cfg["resume_at"] = 1;
    cfg["trainer"]["resume"] = {{"stop", {"--stop-after", "{resume_at}"}}, {"continue", {"--resume", "{checkpoint}"}}};
  });
  RunRecord golden = make_gate_record();
  golden.config = {{"trainer.data_only", "[\"--data-only\"]"}};
  golden.probes[0].inputs.sum = 7.0;  // the golden's own data-only probes, told apart
  p.write_golden(golden);
  FakeLauncher l;
  l.record.config = golden.config;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.data_pass) r.probes.clear();  // as run_trainer makes it
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  ASSERT_EQ(l.calls.size(), 3u);  // two runs and the resumed run, all training only
  for (const ChildRun& call : l.calls) {
    EXPECT_TRUE(call.train);
    EXPECT_FALSE(call.data_pass);
  }
  ASSERT_EQ(c.run.probes.size(), 2u);
  EXPECT_EQ(c.run.probes[0].inputs.sum, 7.0);
  // The records on disk are the ones judged: `compare` by hand agrees.
  for (const char* f : {"run-1.json", "run-2.json", "resumed.json"})
    EXPECT_EQ(read_run_record(p.out_dir() + "/unit/" + f).probes.size(), 2u) << f;
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "no data-only pass ran: the 2 batches trained on are the golden's data-only batches bit for "
                      "bit, with the same trainer.data_only"),
            c.verdict.notes.end());
  // The golden's probes held against themselves say nothing: no rows, not counted.
  for (const auto& r : c.verdict.results) EXPECT_NE(r.name.rfind("probes.", 0), 0u) << r.name;
  size_t counted = 0;
  for (const auto& r : c.verdict.results) counted += r.checked;
  EXPECT_EQ(c.verdict.values_checked, counted);

  // The golden's pass does not stand for today's when the data-only
  // arguments changed, or when it probed fewer batches than were trained.
  for (int variant = 0; variant < 2; ++variant) {
    FakeLauncher again;
    again.record.config = golden.config;
    if (variant == 0) again.record.config["trainer.data_only"] = "[\"--data-only\",\"--fast\"]";
    RunRecord shorter = golden;
    if (variant == 1) {
      shorter.probes.pop_back();
      p.write_golden(shorter);
    }
    again.edit = l.edit;
    check_smoke(p.smoke_file(), p.check_options(), again);
    ASSERT_GE(again.calls.size(), 3u) << variant;  // two runs, then the data-only pass
    EXPECT_FALSE(again.calls[2].train) << variant;
  }
}

// Other batches than the golden's (or no golden): the data-only pass runs
// once, after the runs (`lockstep probe`), and its probes are the run's.
TEST(CheckSmoke, ATrainerWhoseBatchesMovedRunsTheDataOnlyPassOnceAfterTheRuns) {
  auto trainer = [](nlohmann::json& cfg) { as_trainer(cfg); };
  GateProject p("data-after-runs", trainer);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.record.train_probes[1].labels.xxh3_128 = std::string(32, 'e');  // the data moved
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.data_pass) r.probes.clear();
    else r.probes = r.train_probes;  // the pass sees what training saw
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression) << c.verdict.first_divergence;
  ASSERT_EQ(l.calls.size(), 3u);
  EXPECT_FALSE(l.calls[0].data_pass);
  EXPECT_FALSE(l.calls[1].data_pass);
  EXPECT_FALSE(l.calls[2].train);
  EXPECT_TRUE(l.calls[2].data_pass);
  EXPECT_EQ(l.calls[2].out, p.out_dir() + "/unit/data-only.json");
  EXPECT_EQ(c.run.probes[1].labels.xxh3_128, std::string(32, 'e'));
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "the data-only pass ran once, after the runs (the golden's data-only batches are not the ones "
                      "trained on, or trainer.data_only changed)"),
            c.verdict.notes.end());

  GateProject fresh("data-no-golden", trainer);
  FakeLauncher first;
  SmokeCheck none = check_smoke(fresh.smoke_file(), fresh.check_options(), first);
  EXPECT_EQ(none.verdict.exit_code(), ExitCode::kBadInput);  // no golden: a pending one
  ASSERT_EQ(first.calls.size(), 3u);
  EXPECT_FALSE(first.calls[2].train);
}

// Several DataLoader worker counts: the worker-count check is the pass's
// own finding, which no golden records, so the pass runs beside run 1 at
// every count (with its training batches to name the cause), as in bless.
TEST(CheckSmoke, ATrainerWithSeveralWorkerCountsRunsTheDataOnlyPassBesideTheFirstRun) {
  GateProject p("data-workers", [](nlohmann::json& cfg) {
    for (const char* k : {"data", "model", "optimizer"}) cfg.erase(k);
    cfg["trainer"] = {{"command", {"python3", "train.py", "--workers", "{workers}"}},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}},
                      {"probes", "{out}/probes.jsonl"},
                      {"workers", {2, 0}}};
  });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.data_pass) r.probes.clear();
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  ASSERT_EQ(l.calls.size(), 2u);
  EXPECT_TRUE(l.calls[0].data_pass);
  EXPECT_FALSE(l.calls[1].data_pass);
  EXPECT_EQ(read_run_record(p.out_dir() + "/unit/run-2.json").probes.size(), 2u);
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "the data-only pass ran beside run 1 with 2, 0 DataLoader workers: the same batches bit for bit"),
            c.verdict.notes.end());
}

TEST(CheckSmoke, ResumeDifferenceIsARegressionNamingTheStep) {
  GateProject p("resume", [](nlohmann::json& cfg) { cfg["resume_at"] = 1; });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.resume.empty()) r.series["grad_norm"].values[1] = 0.5;
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_FALSE(c.compared);
  ASSERT_EQ(l.checkpoints.size(), 1u);
  EXPECT_EQ(l.checkpoints[0].stop_after, 1);
  EXPECT_EQ(l.checkpoints[0].checkpoint, p.out_dir() + "/unit/resume-at-1.ckpt");
  ASSERT_EQ(l.calls.size(), 3u);
  EXPECT_EQ(l.calls[2].resume, p.out_dir() + "/unit/resume-at-1.ckpt");
  EXPECT_EQ(c.verdict.first_divergence.rfind("the run resumed from a checkpoint at step 1 differs from the "
                                             "uninterrupted run; first difference: train step 1: grad_norm", 0),
            0u)
      << c.verdict.first_divergence;
  EXPECT_EQ(c.records, "records: " + p.out_dir() + "/unit/run-1.json, " + p.out_dir() + "/unit/resumed.json");
}

TEST(CheckSmoke, AnIdenticalResumePassesWithANote) {
  GateProject p("resume-ok", [](nlohmann::json& cfg) { cfg["resume_at"] = 1; });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  EXPECT_EQ(c.verdict.notes.back(),
            "resumed at step 1 from a checkpoint in a fresh process: bit-identical to the uninterrupted run");
}

// With room for two runs (check -j 2) the resume check's two runs come
// first: they are the smoke's longest chain. With one slot (-j 1) they
// follow the repeats and the comparison, as a serial check's do. (Every
// slot is taken here, so the runs happen in this thread, in order.)
TEST(CheckSmoke, TheResumeChainGoesFirstWhenTwoRunsFit) {
  GateProject p("resume-first", [](nlohmann::json& cfg) { cfg["resume_at"] = 1; });
  p.write_golden(make_gate_record());
  for (int capacity : {1, 2}) {
    JobSlots slots(capacity);
    slots.acquire(capacity);  // the check's own slot, and every other one
    CheckSmokeOptions o = p.check_options();
    o.slots = &slots;
    FakeLauncher l;
    SmokeCheck c = check_smoke(p.smoke_file(), o, l);
    EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
    std::vector<std::string> order;
    for (const auto& run : l.calls) order.push_back(std::filesystem::path(run.out).filename().string());
    const std::vector<std::string> serial = {"run-1.json", "run-2.json", "resumed.json"};
    const std::vector<std::string> chain_first = {"resumed.json", "run-1.json", "run-2.json"};
    EXPECT_EQ(order, capacity == 1 ? serial : chain_first) << "capacity " << capacity;
    slots.release(capacity);
  }
}

TEST(CheckSmoke, MissingGoldenIsBadInputWithAPendingGolden) {
  GateProject p("no-golden");
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_FALSE(c.compared);
  ASSERT_TRUE(c.pending.has_value());
  EXPECT_EQ(c.pending_path, p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new");
  EXPECT_EQ(c.pending->provenance.reason, "(pending review: no golden existed for platform cpu-x86_64-avx2)");
  EXPECT_EQ(c.pending->provenance.runs, 2);
  EXPECT_EQ(c.pending->provenance.git_commit.rfind("(absent: ", 0), 0u);  // the scratch project has no git
  EXPECT_EQ(c.verdict.first_divergence,
            p.goldens_dir() + "/unit/cpu-x86_64-avx2.json: no golden for smoke 'unit' on platform cpu-x86_64-avx2 "
            "(nor any of its family); create one with `lockstep bless " + p.smoke_file() + " --reason \"...\"`");
  // No golden was read: the reports say so, not "same-stack".
  EXPECT_EQ(c.verdict.lane, Lane::kNone);
  EXPECT_EQ(to_json(c.verdict).at("lane"), "none");
}

// The pending golden a failing check leaves, copied into goldens/ by hand
// (its content hash intact), is no golden: check and verify-goldens refuse it.
TEST(CheckSmoke, APendingGoldenCopiedIntoTheGoldensIsRefused) {
  GateProject p("pending-copied");
  FakeLauncher l;
  SmokeCheck first = check_smoke(p.smoke_file(), p.check_options(), l);
  ASSERT_TRUE(first.pending.has_value());
  EXPECT_EQ(first.pending->provenance.action, "check");
  std::string copied = p.goldens_dir() + "/unit/cpu-x86_64-avx2.json";
  write_golden(copied, *first.pending);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence,
            copied + ": provenance.action: expected a golden written by bless or accept, got a pending golden a "
                     "failing check left (copied into the goldens folder by hand?); promote it with `lockstep accept "
                     "DIR --reason ...`");
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  std::string all;
  for (const auto& problem : audit.problems) all += problem + "\n";
  EXPECT_NE(all.find(copied + ": provenance.action: a pending golden a failing check left"), std::string::npos) << all;
}

// Every golden of the smoke is read before the first run: a damaged one is
// exit 2 naming its byte before any run, even one filed for another
// platform than this run's.
TEST(CheckSmoke, ADamagedGoldenIsBadInputBeforeAnyRun) {
  GateProject p("damaged-first");
  p.write_golden(make_gate_record());
  std::string damaged = p.goldens_dir() + "/unit/cuda-sm90.json";
  write_file_atomically(damaged, "{\"lockstep\": 1, \"smoke\": ");
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence.rfind(damaged + ": ", 0), 0u) << c.verdict.first_divergence;
  EXPECT_NE(c.verdict.first_divergence.find("truncated"), std::string::npos) << c.verdict.first_divergence;
  EXPECT_TRUE(l.calls.empty());
  EXPECT_FALSE(c.ran);
}

// A trainer golden holding a series the config's trainer.metrics.series
// does not name was not made from this config: check refuses it as
// verify-goldens does (exit 2), rather than failing the run against it.
TEST(CheckSmoke, ATrainerGoldenWithASeriesTheConfigDoesNotNameIsRefused) {
  GateProject p("foreign-series", [](nlohmann::json& cfg) { as_trainer(cfg, {{"loss", "loss"}}); });
  std::string path = p.write_golden(make_gate_record());  // loss and grad_norm
  FakeLauncher l;
  l.record.series.erase("grad_norm");
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence,
            path + ": series grad_norm: not a series " + p.smoke_file() + " records (trainer.metrics.series: loss) "
                   "(a golden made from another config, or edited by hand; or the config renamed a series since "
                   "it was blessed: re-bless it if the change is meant)");
}

// A golden of fewer than two runs is refused by check as verify-goldens
// refuses it, naming the field (0 runs is refused by every reader).
TEST(CheckSmoke, AGoldenOfFewerThanTwoRunsIsRefused) {
  GateProject p("one-run");
  FakeLauncher l;
  Golden g;
  g.record = make_gate_record();
  g.provenance = stamp_provenance("bless", "made by hand", GitState{}, 1);
  std::string path = p.goldens_dir() + "/unit/cpu-x86_64-avx2.json";
  write_golden(path, g);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence,
            path + ": provenance.runs: expected 2 or more (a golden is made of bit-identical runs in fresh "
                   "processes), got 1");
  g.provenance.runs = 0;
  write_golden(path, g);
  c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence, path + ": provenance.runs: expected the runs the golden was made from, 1 or "
                                               "more (0 only for an imported golden)");
}

// A golden whose seed is not its config's (a forged or hand-edited one,
// its content hash recomputed) is a problem for verify-goldens.
TEST(CheckSmoke, AGoldenOfAnotherSeedThanItsConfigIsAVerifyGoldensProblem) {
  GateProject p("other-seed");
  RunRecord r = make_gate_record();
  r.seed = 7;
  std::string path = p.write_golden(r);
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  std::string all;
  for (const auto& problem : audit.problems) all += problem + "\n";
  EXPECT_NE(all.find(path + ": seed.base: 7, but " + p.smoke_file() + " has seed 42 (a golden is made with its "
                     "config's seed); re-bless"),
            std::string::npos) << all;
}

// A golden made before records kept the config's value fields still
// verifies, with a note that a re-bless would let check name the field.
TEST(CheckSmoke, AGoldenWithoutTheConfigsValueFieldsIsAVerifyGoldensNote) {
  GateProject p("no-config-fields");
  RunRecord r = make_gate_record();
  r.config.clear();
  const std::string path = p.write_golden(r);
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  EXPECT_NE(std::find(audit.notes.begin(), audit.notes.end(),
                      path + ": made before records kept the config's value fields: an input change against it is "
                             "named by the config's hash only; a re-bless names the field (optimizer.lr 0.01 → 0.011)"),
            audit.notes.end())
      << ::testing::PrintToString(audit.notes);
  r.config = {{"optimizer.lr", "0.1"}};
  write_golden(path, Golden{r, read_golden(path).provenance, ""});
  EXPECT_TRUE(audit_goldens(p.goldens_dir(), "").notes.empty());
}

// A golden cut short is one problem (it cannot be read), not two (its
// smoke "has no golden" too); a goldens folder with no smoke/ beside it
// asks for --smoke.
TEST(CheckSmoke, AnUnreadableGoldenIsOneVerifyGoldensProblemAndAMissingSmokeFolderAsksForSmoke) {
  GateProject p("cut-golden");
  const std::string path = p.write_golden(make_gate_record());
  const std::string text = read_file(path);
  write_file_atomically(path, text.substr(0, text.size() / 2));
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  ASSERT_EQ(audit.problems.size(), 1u) << joined(audit.problems);
  EXPECT_EQ(audit.problems[0].rfind(path + ": ", 0), 0u) << audit.problems[0];
  std::filesystem::rename(p.root() / "smoke", p.root() / "configs");
  try {
    audit_goldens(p.goldens_dir(), "");
    ADD_FAILURE() << "audited without smoke configs";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), p.goldens_dir() + ": no smoke folder beside it (" + (p.root() / "smoke").string() +
                                         "); name the folder of the smoke configs these goldens belong to with "
                                         "--smoke DIR");
  }
}

// A golden "made" in the future (a forged or mis-clocked provenance) would
// sort as the newest of its stack whatever it holds: a problem, with a
// day allowed for clock skew between machines.
TEST(CheckSmoke, AGoldenMadeInTheFutureIsAVerifyGoldensProblem) {
  GateProject p("future");
  Golden g;
  g.record = make_gate_record();
  g.provenance = stamp_provenance("bless", "made tomorrow", GitState{}, 2);
  g.provenance.created_utc = utc_now(23 * 3600);
  const std::string path = p.goldens_dir() + "/unit/cpu-x86_64-avx2.json";
  write_golden(path, g);
  const std::string want = path + ": provenance.created_utc: ";
  auto future_problems = [&] {
    std::vector<std::string> out;
    for (const auto& problem : audit_goldens(p.goldens_dir(), "").problems)
      if (problem.rfind(want, 0) == 0) out.push_back(problem);
    return out;
  };
  EXPECT_TRUE(future_problems().empty()) << joined(future_problems());
  g.provenance.created_utc = "9999-12-31T23:59:59Z";
  write_golden(path, g);
  std::vector<std::string> found = future_problems();
  ASSERT_EQ(found.size(), 1u) << joined(found);
  const std::string head = want + "9999-12-31T23:59:59Z is in the future (this machine's clock says " +
                           utc_now().substr(0, 4);
  EXPECT_EQ(found[0].substr(0, head.size()), head);
  EXPECT_NE(found[0].find("): a hand-made or mis-clocked golden; re-bless it on a machine with the right time"),
            std::string::npos) << found[0];
}

// An imported golden (another tool's curves) has no LibTorch stack: it
// makes no lockstep golden of another platform stale, nor is it stale.
TEST(CheckSmoke, AnImportedGoldenMakesNoOtherPlatformStale) {
  GateProject p("imported-stale");
  p.write_golden(make_gate_record());
  Golden imported;
  imported.record = make_gate_record();
  imported.record.platform = "cpu-x86_64-avx512";
  imported.record.fingerprint = {{"import.source", {"jsonl /ci/loss.jsonl (xxh3 0123456789abcdef)", false}}};
  imported.provenance = stamp_provenance("import", "moved", GitState{}, 0);
  imported.provenance.imported_from = "jsonl /ci/loss.jsonl (xxh3 0123456789abcdef)";
  imported.provenance.created_utc = utc_now(60);  // the newest (a minute from now)
  write_golden(p.goldens_dir() + "/unit/cpu-x86_64-avx512.json", imported);
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  std::string all;
  for (const auto& problem : audit.problems) all += problem + "\n";
  EXPECT_EQ(all.find(": stale: "), std::string::npos) << all;
}

TEST(CheckSmoke, AGoldenOfTheSameFamilyStandsInWithANote) {
  GateProject p("family");
  RunRecord other = make_gate_record();
  std::string path = p.write_golden(other, "cpu-x86_64-avx512");
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  ASSERT_FALSE(c.verdict.notes.empty());
  EXPECT_EQ(c.verdict.notes.front(),
            "no golden for platform cpu-x86_64-avx2; compared against " + path + " of the same family");
  EXPECT_EQ(c.verdict.golden_label, path);
}

TEST(CheckSmoke, ARegressionLeavesAPendingGolden) {
  GateProject p("regression");
  RunRecord golden = make_gate_record();
  golden.series["loss"].values[0] = static_cast<float>(2.4);
  p.write_golden(golden);
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_TRUE(c.compared);
  ASSERT_TRUE(c.pending.has_value());
  EXPECT_EQ(c.pending->provenance.reason, "(pending review: check failed: " + c.verdict.first_divergence + ")");
  EXPECT_EQ(c.verdict.first_divergence.rfind("train step 0: loss", 0), 0u) << c.verdict.first_divergence;
  EXPECT_EQ(c.golden.series.at("loss").values[0], golden.series.at("loss").values[0]);
}

// Equivalence lanes: one fresh run per lane, held to run 1 by the lane's
// rule, no golden needed.
void add_lanes(nlohmann::json& cfg) {
  cfg["equivalence"] = nlohmann::json::parse(R"({
    "workers0": {"set": {"data": {"workers": 0}}},
    "threads2": {"set": {"determinism": {"intra_op_threads": 2}}, "rule": {"ulp": 2}}})");
}

// Moves lane `name`'s loss at step 1 by `ulps` float32 ULPs.
std::function<void(size_t, const ChildRun&, RunRecord&)> lane_moves(const std::string& name, int ulps) {
  return [name, ulps](size_t, const ChildRun& run, RunRecord& r) {
    if (run.variant != name) return;
    float v = static_cast<float>(r.series["loss"].values[1]);
    for (int i = 0; i < ulps; ++i) v = std::nextafter(v, 10.0f);
    r.series["loss"].values[1] = v;
  };
}

TEST(CheckSmoke, EachEquivalenceLaneRunsOnceAndPassesWithANote) {
  GateProject p("lanes-pass", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = lane_moves("threads2", 2);  // within its rule
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  ASSERT_EQ(l.calls.size(), 4u);
  EXPECT_EQ(l.calls[2].variant, "threads2");  // the config's order: by name
  EXPECT_EQ(l.calls[2].out, p.out_dir() + "/unit/variant-threads2.json");
  EXPECT_EQ(l.calls[3].variant, "workers0");
  EXPECT_TRUE(l.calls[3].data_pass);  // a built-in smoke's run makes its own
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "equivalence lane threads2 (set {\"determinism\":{\"intra_op_threads\":2}}): the same as the "
                      "base run within ulp <= 2 (largest difference rel 2.12e-07 in loss at step 1; 24 values "
                      "compared)"),
            n.end());
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "equivalence lane workers0 (set {\"data\":{\"workers\":0}}): the same as the base run bit for "
                      "bit (24 values compared)"),
            n.end());
}

TEST(CheckSmoke, ALaneBeyondItsRuleIsARegressionNamingTheLaneAndStep) {
  GateProject p("lanes-fail", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = lane_moves("threads2", 3);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(c.verdict.first_divergence.rfind("equivalence lane threads2 (set {\"determinism\":{\"intra_op_threads\":2}}) "
                                             "differs from the base run, held within ulp <= 2; first difference: "
                                             "train step 1: loss",
                                             0),
            0u)
      << c.verdict.first_divergence;
  EXPECT_TRUE(c.compared);
  EXPECT_FALSE(c.pending.has_value());  // the golden comparison passed: nothing to accept
  EXPECT_EQ(c.records, "records: " + p.out_dir() + "/unit/run-1.json, " + p.out_dir() + "/unit/variant-threads2.json");
  EXPECT_NE(c.run.series.at("loss").values[1], c.golden.series.at("loss").values[1]);
  EXPECT_EQ(c.verdict.run_label, p.out_dir() + "/unit/variant-threads2.json");
  EXPECT_EQ(c.verdict.lane, Lane::kEquivalence);  // "lane: equivalence — lane threads2 against the base run ..."
}

// Every lane is reported: the first that fails (by name) is the verdict,
// the golden's outcome and how to see it again are said, the others are
// notes; the ledger must not take the lane's values for the night's.
TEST(CheckSmoke, EveryLaneIsReportedAndTheFirstFailureIsTheVerdict) {
  GateProject p("lanes-all", add_lanes);
  std::string golden = p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.variant.empty()) r.series["loss"].values[1] = 2.0;
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(c.lane, "threads2");
  EXPECT_EQ(c.verdict.equivalence_lane, "threads2");
  ASSERT_EQ(c.verdict.lanes.size(), 2u);
  EXPECT_FALSE(c.verdict.lanes[0].passed);
  EXPECT_EQ(c.verdict.lanes[1].name, "workers0");
  EXPECT_EQ(c.verdict.lanes[1].rule, "bit for bit");
  EXPECT_EQ(c.verdict.lanes[1].detail.rfind("train step 1: loss", 0), 0u) << c.verdict.lanes[1].detail;
  EXPECT_EQ(c.verdict.first_divergence.rfind("equivalence lane threads2", 0), 0u) << c.verdict.first_divergence;
  const auto& n = c.verdict.notes;
  auto has = [&n](const std::string& prefix) {
    return std::any_of(n.begin(), n.end(), [&](const std::string& x) { return x.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("the base run passed its golden (" + golden + "; ")) << ::testing::PrintToString(n);
  EXPECT_TRUE(has("to see it again: lockstep run " + p.smoke_file() + " --variant threads2; a lane that may differ "
                  "this much takes a wider equivalence.threads2.rule")) << ::testing::PrintToString(n);
  EXPECT_TRUE(has("equivalence lane workers0 (set {\"data\":{\"workers\":0}}) also differs from the base run, held "
                  "bit for bit; first difference: train step 1: loss")) << ::testing::PrintToString(n);
}

// A lane that splits the batch of a model that couples its samples
// (dropout's masks drawn per forward) fails by design: the note says why
// instead of advising a wider rule.
TEST(CheckSmoke, AFailingLaneThatSplitsTheBatchOfADropoutModelSaysWhyNoRuleHelps) {
  GateProject p("lanes-split-dropout", [](nlohmann::json& cfg) {
    cfg["model"]["dropout"] = 0.25;
    cfg["equivalence"] = nlohmann::json::parse(
        R"({"split2": {"set": {"optimizer": {"micro_batches": 2}}, "rule": {"atol": 0, "rtol": 1e-5}}})");
  });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = lane_moves("split2", 1000);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "to see it again: lockstep run " + p.smoke_file() +
                          " --variant split2; this lane splits the batch (set {\"optimizer\":{\"micro_batches\":2}}), "
                          "and the model's dropout (p = 0.25) draws its masks per forward, so the pieces draw other "
                          "masks than one batch: one batch and its pieces are then other trainings, whatever the rule "
                          "(docs/equivalence.md); hold such a lane on a model without them"),
            n.end())
      << ::testing::PrintToString(n);
}

// A lane whose global batch (data.batch_size x ranks) is not the base
// run's is another training: a failure says so, not "a wider rule".
TEST(CheckSmoke, ALaneOfAnotherGlobalBatchIsNamedAsAConfigMistake) {
  GateProject p("lanes-global-batch", [](nlohmann::json& cfg) {
    cfg["equivalence"] = nlohmann::json::parse(
        R"({"half": {"set": {"data": {"batch_size": 2}}, "same_batches": false, "rule": {"atol": 0, "rtol": 1e-5}}})");
  });
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = lane_moves("half", 1000);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "to see it again: lockstep run " + p.smoke_file() +
                          " --variant half; this lane trains on a global batch of 2 (data.batch_size 2 x 1 rank) "
                          "where the base run trains on 4: another training, not an equivalent one; set "
                          "data.batch_size so that the two agree"),
            n.end())
      << ::testing::PrintToString(n);
}

// check --intra-op-threads / --workers / --world-size stand for the base
// run; a lane that sets the same field keeps its own value.
TEST(CheckSmoke, ALaneKeepsWhatItSetsUnderChecksOverrides) {
  GateProject p("lanes-overrides", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  CheckSmokeOptions o = p.check_options();
  o.overrides.intra_op_threads = 1;
  o.overrides.workers = 2;
  check_smoke(p.smoke_file(), o, l);
  ASSERT_EQ(l.calls.size(), 4u);
  EXPECT_EQ(l.calls[0].overrides.intra_op_threads, 1);
  EXPECT_EQ(l.calls[2].variant, "threads2");
  EXPECT_EQ(l.calls[2].overrides.intra_op_threads, 0);  // the lane's 2
  EXPECT_EQ(l.calls[2].overrides.workers, 2);
  EXPECT_EQ(l.calls[3].overrides.intra_op_threads, 1);
  EXPECT_EQ(l.calls[3].overrides.workers, -1);  // the lane's 0
}

// A built-in smoke's lanes share one process (one LibTorch start-up)
// where nothing process-wide differs: a lane that sets the determinism
// mode, the inter-op threads or the ranks runs alone, and so does one
// whose command line check's overrides make another. With more slots
// beside the base run, the shared lanes spread over that many processes.
TEST(CheckSmoke, LanesShareAProcessWhereNothingProcessWideDiffers) {
  GateProject p("lanes-together", [](nlohmann::json& cfg) {
    cfg["equivalence"] = nlohmann::json::parse(R"({
      "workers0": {"set": {"data": {"workers": 0}}},
      "threads2": {"set": {"determinism": {"intra_op_threads": 2}}, "rule": {"ulp": 2}},
      "threads3": {"set": {"determinism": {"intra_op_threads": 3}}, "rule": {"ulp": 2}},
      "relaxed": {"set": {"determinism": {"mode": "default"}}},
      "interop2": {"set": {"determinism": {"inter_op_threads": 2}}},
      "ranks2": {"set": {"distributed": {"world_size": 2, "backend": "gloo"}}, "same_batches": false}})");
  });
  p.write_golden(make_gate_record());
  using Groups = std::vector<std::vector<std::string>>;
  {
    FakeLauncher l;
    SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
    EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
    EXPECT_EQ(l.together, (Groups{{"interop2"}, {"ranks2"}, {"relaxed"}, {"threads2", "threads3", "workers0"}}));
  }
  {
    FakeLauncher l;
    CheckSmokeOptions o = p.check_options();
    o.overrides.workers = 2;  // stands for every lane but workers0
    check_smoke(p.smoke_file(), o, l);
    EXPECT_EQ(l.together, (Groups{{"interop2"}, {"ranks2"}, {"relaxed"}, {"threads2", "threads3"}, {"workers0"}}));
  }
  {
    // Judged on the lane's loaded config, not on the keys it sets: with a
    // base run in mode "default", a lane that removes the determinism
    // section runs strict, alone; and so does every -j.
    GateProject relaxed("lanes-together-default", [](nlohmann::json& cfg) {
      cfg["determinism"] = {{"mode", "default"}};
      cfg["equivalence"] = nlohmann::json::parse(R"({
        "workers0": {"set": {"data": {"workers": 0}}},
        "strict": {"set": {"determinism": null}}})");
    });
    relaxed.write_golden(make_gate_record());
    FakeLauncher l;
    check_smoke(relaxed.smoke_file(), relaxed.check_options(), l);
    EXPECT_EQ(l.together, (Groups{{"strict"}, {"workers0"}}));
  }
  {
    JobSlots slots(3);  // two slots beside the base run's
    slots.acquire(1);
    CheckSmokeOptions o = p.check_options();
    o.slots = &slots;
    FakeLauncher l;
    check_smoke(p.smoke_file(), o, l);
    std::sort(l.together.begin(), l.together.end());
    EXPECT_EQ(l.together, (Groups{{"interop2"}, {"ranks2"}, {"relaxed"}, {"threads2", "workers0"}, {"threads3"}}));
    slots.release(1);
  }
}

TEST(CheckSmoke, LanesAreSkippedWithANoteWhenTheGoldenFails) {
  GateProject p("lanes-skipped", add_lanes);
  RunRecord golden = make_gate_record();
  golden.series["loss"].values[0] = static_cast<float>(2.4);
  p.write_golden(golden);
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(l.calls.size(), 2u);
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "equivalence lanes not run (threads2, workers0): the golden comparison failed first"),
            n.end()) << ::testing::PrintToString(n);
}

TEST(CheckSmoke, ALanesFailedRunIsNamedByTheLane) {
  GateProject p("lanes-error", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.fail = [](const ChildRun& run) {
    if (run.variant == "workers0") throw BadUsage("`lockstep run` failed: data.path: expected an existing data file");
  };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  // The two lanes share a process; the message names the one that failed.
  EXPECT_EQ(c.verdict.first_divergence,
            "equivalence lanes threads2 (set {\"determinism\":{\"intra_op_threads\":2}}), workers0 (set "
            "{\"data\":{\"workers\":0}}) in one process: lane workers0: `lockstep run` failed: data.path: expected "
            "an existing data file");
}

// A config every run refuses is the base run's error to report, at -j 2 as
// at -j 1, although the lanes run first beside the runs.
TEST(CheckSmoke, AnErrorOfEveryRunIsTheBaseRunsAtAnyJobs) {
  GateProject p("lanes-all-fail", add_lanes);
  p.write_golden(make_gate_record());
  for (int capacity : {1, 2}) {
    JobSlots slots(capacity);
    slots.acquire(capacity);
    CheckSmokeOptions o = p.check_options();
    o.slots = &slots;
    FakeLauncher l;
    l.fail = [](const ChildRun&) { throw BadUsage("`lockstep run` failed: data.path: expected an existing data file"); };
    SmokeCheck c = check_smoke(p.smoke_file(), o, l);
    EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
    EXPECT_EQ(c.verdict.first_divergence, "`lockstep run` failed: data.path: expected an existing data file")
        << "-j " << capacity;
  }
}

// With room for two runs (check -j), the lanes run beside the fresh runs
// (they need nothing from them); serially, only once the golden passed.
// Run early, a failing golden leaves them unjudged, said.
TEST(CheckSmoke, LanesRunBesideTheRunsWhenTwoRunsFit) {
  GateProject p("lanes-early", add_lanes);
  p.write_golden(make_gate_record());
  for (int capacity : {1, 2}) {
    JobSlots slots(capacity);
    slots.acquire(capacity);  // the check's own slot, and every other one
    CheckSmokeOptions o = p.check_options();
    o.slots = &slots;
    FakeLauncher l;
    SmokeCheck c = check_smoke(p.smoke_file(), o, l);
    EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
    std::vector<std::string> order;
    for (const auto& run : l.calls) order.push_back(std::filesystem::path(run.out).filename().string());
    const std::vector<std::string> serial = {"run-1.json", "run-2.json", "variant-threads2.json", "variant-workers0.json"};
    if (capacity == 1) {
      EXPECT_EQ(order, serial);
    } else {  // the lanes go first, in this thread; the runs take slots as they come free
      ASSERT_EQ(order.size(), 4u);
      EXPECT_EQ(order.front(), "variant-threads2.json");
      std::sort(order.begin(), order.end());
      EXPECT_EQ(order, serial);
    }
    slots.release(capacity);
  }
  RunRecord moved = make_gate_record();
  moved.series["loss"].values[0] = static_cast<float>(2.4);
  p.write_golden(moved);
  JobSlots slots(2);
  slots.acquire(1);
  CheckSmokeOptions o = p.check_options();
  o.slots = &slots;
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(),
                      "equivalence lanes not judged (threads2, workers0): the golden comparison failed first"),
            n.end()) << ::testing::PrintToString(n);
}

// A failing lane runs once more: reproduced, it stands (exit 1, said);
// a second run that differs makes it exit 4, the lane's own nondeterminism.
TEST(CheckSmoke, AFailingLaneRunsAgainAndAFlakyOneIsNondeterministic) {
  GateProject p("lanes-rerun", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher steady;
  steady.edit = lane_moves("threads2", 3);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), steady);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  ASSERT_EQ(steady.calls.size(), 5u);
  EXPECT_EQ(steady.calls[4].out, p.out_dir() + "/unit/variant-threads2.rerun.json");
  const auto& n = c.verdict.notes;
  EXPECT_NE(std::find(n.begin(), n.end(), "a second run of lane threads2 reproduced it bit for bit"), n.end());
  FakeLauncher flaky;
  flaky.edit = [](size_t call, const ChildRun& run, RunRecord& r) {
    if (run.variant == "threads2") r.series["loss"].values[1] = call == 5 ? 2.0 : 1.5;
  };
  SmokeCheck f = check_smoke(p.smoke_file(), p.check_options(), flaky);
  EXPECT_EQ(f.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_EQ(f.verdict.first_divergence.rfind("equivalence lane threads2 is nondeterministic itself: a second run of it (" +
                                             p.out_dir() + "/unit/variant-threads2.rerun.json) differs from the first "
                                             "bit for bit (train step 1: loss",
                                             0),
            0u) << f.verdict.first_divergence;
}

TEST(CheckSmoke, ALaneFailsWithoutAGoldenToo) {
  GateProject p("lanes-no-golden", add_lanes);
  FakeLauncher l;
  l.edit = lane_moves("workers0", 1);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(c.verdict.first_divergence.rfind("equivalence lane workers0", 0), 0u) << c.verdict.first_divergence;
  // No pending golden while the smoke fails, and the missing golden is said.
  EXPECT_FALSE(c.pending.has_value());
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "no golden for platform " + make_gate_record().platform + " yet: once the smoke passes, check "
                      "writes a pending one (or `lockstep bless " + p.smoke_file() + " --reason \"...\"`)"),
            c.verdict.notes.end())
      << ::testing::PrintToString(c.verdict.notes);
}

TEST(CheckSmoke, ALaneOfOtherBatchesIsRefusedUnlessItSaysSo) {
  auto batches_moved = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.variant.empty()) r.train_probes[1].sample_index_hash = std::string(16, '1');
  };
  GateProject p("lanes-batches", add_lanes);
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.edit = batches_moved;
  EXPECT_EQ(check_smoke(p.smoke_file(), p.check_options(), l).verdict.exit_code(), ExitCode::kRegression);
  GateProject q("lanes-other-batches", [](nlohmann::json& cfg) {
    cfg["equivalence"] = nlohmann::json::parse(R"({"micro": {"set": {"data": {"batch_size": 2}}, "same_batches": false}})");
  });
  q.write_golden(make_gate_record());
  FakeLauncher m;
  m.edit = batches_moved;
  SmokeCheck c = check_smoke(q.smoke_file(), q.check_options(), m);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
}

// check --rerun-failing: reruns that reproduce the failing run keep exit 1
// and say so; a rerun that differs turns it into exit 4 on this runner.
TEST(CheckSmoke, AFailureReproducedByItsRerunsStandsAsARegression) {
  GateProject p("rerun-same");
  RunRecord golden = make_gate_record();
  golden.series["loss"].values[0] = static_cast<float>(2.4);
  p.write_golden(golden);
  FakeLauncher l;
  l.record.fingerprint["runner"] = {"host ci-7", false};
  CheckSmokeOptions o = p.check_options();
  o.rerun_failing = 2;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(l.calls.size(), 4u);  // 2 repeats, 2 reruns
  EXPECT_EQ(l.calls[3].out, p.out_dir() + "/unit/rerun-2.json");
  const std::string& d = c.verdict.first_divergence;
  EXPECT_EQ(d.substr(d.size() - 20), " (reproduced 2 of 2)") << d;
  EXPECT_NE(std::find(c.verdict.notes.begin(), c.verdict.notes.end(),
                      "2 fresh rerun(s) on host ci-7 reproduced the failing run bit for bit"),
            c.verdict.notes.end());
  EXPECT_TRUE(c.pending.has_value());
}

TEST(CheckSmoke, ARerunThatDiffersMakesAFailureNondeterministicOnTheRunner) {
  GateProject p("rerun-differs");
  RunRecord golden = make_gate_record();
  golden.series["loss"].values[0] = static_cast<float>(2.4);
  p.write_golden(golden);
  FakeLauncher l;
  l.record.fingerprint["runner"] = {"host ci-7", false};
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 3) r.series["loss"].values[1] = static_cast<float>(2.2);
  };
  CheckSmokeOptions o = p.check_options();
  o.rerun_failing = 1;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kNondeterministic);
  EXPECT_EQ(c.verdict.first_divergence.rfind("nondeterministic on host ci-7: rerun 1 of 1 (", 0), 0u)
      << c.verdict.first_divergence;
  EXPECT_NE(c.verdict.first_divergence.find("it said: train step 0: loss"), std::string::npos);
  EXPECT_FALSE(c.pending.has_value());
}

TEST(CheckSmoke, RerunsThatDifferDoNotHideAChangedInput) {
  GateProject p("rerun-input");
  RunRecord golden = make_gate_record();
  golden.fingerprint["config.values_xxh3"] = {"00000000000000aa", false, true};
  p.write_golden(golden);
  FakeLauncher l;
  l.record.fingerprint["config.values_xxh3"] = {"00000000000000bb", false, true};
  l.edit = [](size_t call, const ChildRun&, RunRecord& r) {
    if (call == 2) r.series["loss"].values[1] = static_cast<float>(2.2);
  };
  CheckSmokeOptions o = p.check_options();
  o.repeat = 1;
  o.rerun_failing = 1;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(c.verdict.first_divergence.find("reproduced"), std::string::npos);
  bool noted = false;
  for (const auto& n : c.verdict.notes) noted = noted || n.find("the failure stands (a changed input") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CheckSmoke, APassingSmokeIsNotRerun) {
  GateProject p("rerun-pass");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  CheckSmokeOptions o = p.check_options();
  o.rerun_failing = 3;
  SmokeCheck c = check_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass);
  EXPECT_EQ(l.calls.size(), 2u);
}

// A pending golden an earlier, failing check left is gone once a later
// check passes: `accept` must never promote what the latest check did not
// write.
TEST(CheckSmoke, AnEarlierChecksPendingGoldenDoesNotOutliveTheNextCheck) {
  GateProject p("stale");
  p.write_golden(make_gate_record());
  std::string stale = p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new";
  std::filesystem::create_directories(p.out_dir() + "/unit");
  write_file_atomically(stale, "{}");
  write_file_atomically(p.out_dir() + "/unit/keep.txt", "mine");
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(p.out_dir() + "/unit/keep.txt"));
}

TEST(CheckSmoke, ALauncherErrorEndsTheSmokeWithItsCode) {
  GateProject p("env");
  p.write_golden(make_gate_record());
  FakeLauncher l;
  l.fail = [](const ChildRun&) { throw EnvironmentError("CUDA is not usable: no driver"); };
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kEnvironment);
  EXPECT_EQ(c.verdict.first_divergence, "CUDA is not usable: no driver");
  ASSERT_EQ(c.verdict.findings.size(), 1u);
  EXPECT_EQ(c.verdict.findings[0].detail, "exit 3: CUDA is not usable: no driver");
}

TEST(CheckSmoke, AMalformedConfigIsBadInputNamedByItsFile) {
  GateProject p("bad-config", [](nlohmann::json& cfg) { cfg["stpes"] = 3; });
  FakeLauncher l;
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.smoke, "unit");  // the file's stem
  EXPECT_NE(c.verdict.first_divergence.find("stpes: expected a known field, not 'stpes' (did you mean 'steps'?)"),
            std::string::npos)
      << c.verdict.first_divergence;
  EXPECT_TRUE(l.calls.empty());
}

TEST(CheckSmoke, TheSuiteExitIsTheMostSevereVerdict) {
  auto with = [](ExitCode code) {
    Verdict v;
    v.code = code;
    return v;
  };
  EXPECT_EQ(most_severe({}), ExitCode::kPass);
  EXPECT_EQ(most_severe({with(ExitCode::kRegression), with(ExitCode::kNondeterministic)}), ExitCode::kNondeterministic);
  EXPECT_EQ(most_severe({with(ExitCode::kNondeterministic), with(ExitCode::kBadInput)}), ExitCode::kBadInput);
  EXPECT_EQ(most_severe({with(ExitCode::kEnvironment), with(ExitCode::kBadInput), with(ExitCode::kPass)}),
            ExitCode::kEnvironment);
  EXPECT_EQ(most_severe({with(ExitCode::kPass), with(ExitCode::kRegression)}), ExitCode::kRegression);
}

}  // namespace
}  // namespace lockstep
