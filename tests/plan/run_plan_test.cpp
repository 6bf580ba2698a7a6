// The plan of one `lockstep run`/`probe`, in-process: which site makes the
// record, which span runs, every default output path, and each refusal
// (exit 2) with its exact message, for every kind of smoke.
#include "plan/run_plan.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

nlohmann::json trainer_section() {
  return {{"command", {"python3", "train.py", "--steps", "{steps}"}},
          {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}},
          {"probes", "{out}/probes.jsonl"},
          {"resume", {{"stop", {"--stop-after", "{resume_at}", "--checkpoint", "{checkpoint}"}},
                      {"continue", {"--resume", "{checkpoint}"}}}}};
}

// A scratch project whose smoke is built-in, a team trainer or 2 ranks.
struct Project {
  // `kind`: "builtin", "trainer" or "ranks"; `name` tells the scratch folders apart.
  Project(const std::string& kind, const std::string& name)
      : p("plan-" + name, [&](nlohmann::json& cfg) {
          if (kind == "trainer") {
            cfg = {{"name", "unit"}, {"seed", 42}, {"steps", 2}, {"trainer", trainer_section()}};
          } else if (kind == "ranks") {
            cfg["distributed"] = {{"world_size", 2}, {"backend", "gloo"}};
          }
        }) {
    write_file_atomically(fs::path(p.smoke_file()).parent_path() / "unit.csv", "a,b,c,d,label\n1,2,3,4,0\n");
  }
  RunRequest request() const {
    RunRequest r;
    r.smoke = p.smoke_file();
    return r;
  }
  RunPlan plan(const RunRequest& r, bool train = true) const {
    return plan_run(load_smoke_config(r.smoke), r, train);
  }
  // The message of the BadUsage/BadInput plan_run throws, "(planned)" if none.
  std::string refusal(const RunRequest& r, bool train = true) const {
    try {
      plan(r, train);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      return e.what();
    }
    return "(planned)";
  }
  testing::GateProject p;
};

TEST(RunPlan, EachSmokeKindRunsAtItsSiteWithTheDefaultRecordPath) {
  Project builtin("builtin", "sites"), trainer("trainer", "sites-t"), ranks("ranks", "sites-r");
  RunPlan b = builtin.plan(builtin.request());
  EXPECT_EQ(b.site, RunSite::kInProcess);
  EXPECT_EQ(b.span, RunSpan::kWhole);
  EXPECT_EQ(b.out, "lockstep-out/unit.run.json");
  EXPECT_STREQ(b.verb(), "run");
  RunPlan probe = builtin.plan(builtin.request(), /*train=*/false);
  EXPECT_EQ(probe.out, "lockstep-out/unit.probe.json");
  EXPECT_STREQ(probe.verb(), "probe");
  RunRequest lane = builtin.request();
  lane.variant = "workers0";  // a lane's record never overwrites the base run's
  EXPECT_EQ(builtin.plan(lane).out, "lockstep-out/unit.variant-workers0.run.json");
  EXPECT_EQ(trainer.plan(trainer.request()).site, RunSite::kTrainer);
  EXPECT_EQ(ranks.plan(ranks.request()).site, RunSite::kRanks);
  EXPECT_EQ(processes_per_run(b.config), 1);  // what check -j counts per run
  EXPECT_EQ(processes_per_run(ranks.plan(ranks.request()).config), 2);
  RunRequest given = builtin.request();
  given.out = "elsewhere/r.json";
  EXPECT_EQ(builtin.plan(given).out, "elsewhere/r.json");
}

TEST(RunPlan, OverridesApplyToTheConfigAndATrainerRefusesWorkersABuiltInSmokeNoDataPass) {
  Project builtin("builtin", "over"), trainer("trainer", "over-t");
  RunRequest r = builtin.request();
  r.overrides.intra_op_threads = 3;
  r.overrides.workers = 2;
  RunPlan b = builtin.plan(r);
  EXPECT_EQ(b.config.intra_op_threads, 3);
  EXPECT_EQ(b.config.data.loader.workers, 2);
  RunRequest t = trainer.request();
  t.overrides.workers = 2;
  EXPECT_EQ(trainer.refusal(t),
            "--workers: a trainer smoke's DataLoader workers are the trainer's own (its command; trainer.workers "
            "with a {workers} placeholder runs the data-only pass at several counts)");
  t.overrides.workers = -1;
  t.overrides.intra_op_threads = 2;
  EXPECT_EQ(trainer.plan(t).config.intra_op_threads, 2);
  RunRequest alone = builtin.request();
  alone.data_pass = false;
  EXPECT_EQ(builtin.refusal(alone),
            "--no-data-pass: a built-in smoke's data-only pass is part of its own process (no interpreter to start); "
            "the flag is for a trainer smoke");
  RunRequest probed = trainer.request();
  probed.data_pass = false;
  EXPECT_EQ(trainer.refusal(probed, /*train=*/false), "--no-data-pass: `lockstep probe` is the data-only pass");
  RunRequest trained = trainer.request();
  trained.data_pass = false;
  EXPECT_FALSE(trainer.plan(trained).request.data_pass);
  trained.repeat = 2;
  EXPECT_EQ(trainer.refusal(trained), "--no-data-pass does not combine with --repeat (the first of the repeats makes "
                                      "the data-only pass, the others take its probes)");
}

// --perturb data moves a sample of the data-only pass: a trainer run
// without one is refused; so is a --rendezvous without --rank.
TEST(RunPlan, APlantedDataChangeNeedsADataOnlyPassAndARendezvousARank) {
  Project trainer("trainer", "perturb-data");
  RunRequest r = trainer.request();
  r.overrides.perturb = "data";
  EXPECT_EQ(trainer.plan(r).config.perturb, "data");
  r.data_pass = false;
  EXPECT_EQ(trainer.refusal(r), "--perturb data: it moves a sample of the data-only pass, and this run makes none "
                                "(--no-data-pass)");
  Project builtin("builtin", "rendezvous");
  RunRequest b = builtin.request();
  b.rendezvous = "/tmp";
  EXPECT_EQ(builtin.refusal(b), "--rendezvous: only with --rank (both are given by the coordinator of a multi-rank "
                                "run, which `lockstep run` on a distributed smoke starts)");
}

TEST(RunPlan, StopAfterMustBeBelowTheStepsAtEverySite) {
  for (const char* kind : {"builtin", "trainer", "ranks"}) {
    Project p(kind, std::string("stop-") + kind);
    RunRequest r = p.request();
    r.stop_after = 2;
    r.checkpoint = p.p.out_dir() + "/ck";
    EXPECT_EQ(p.refusal(r), "--stop-after 2: must be below the 2 steps of " + r.smoke) << kind;
    r.stop_after = 1;
    RunPlan plan = p.plan(r);
    EXPECT_EQ(plan.span, RunSpan::kStopAfter) << kind;
    EXPECT_EQ(plan.site, std::string(kind) == "trainer" ? RunSite::kTrainer
                         : std::string(kind) == "ranks" ? RunSite::kRanks
                                                        : RunSite::kInProcess) << kind;
  }
}

TEST(RunPlan, RepeatRunsWholeOnOneMachine) {
  Project p("builtin", "repeat");
  RunRequest r = p.request();
  r.repeat = 3;
  RunPlan plan = p.plan(r);
  EXPECT_EQ(plan.repeat, 3);
  EXPECT_EQ(plan.out, "lockstep-out/unit.run.json");
  r.resume = p.p.out_dir() + "/ck";
  EXPECT_EQ(p.refusal(r), "--repeat does not combine with --stop-after or --resume");
  r.resume.clear();
  r.nnodes = 2;
  EXPECT_EQ(p.refusal(r), "--nnodes: --repeat runs on one machine only (run it there)");
}

// check's lanes of a built-in smoke share one process (--then-variant):
// only after a lane, a whole single run here; a later lane that would set
// a process-wide setting otherwise, or run as ranks, is refused by name.
TEST(RunPlan, LanesShareAProcessOnlyWhereNothingProcessWideDiffers) {
  auto lanes = [](nlohmann::json& cfg) {
    cfg["equivalence"] = {
        {"threads2", {{"set", {{"determinism", {{"intra_op_threads", 2}}}}}, {"rule", {{"ulp", 4}}}}},
        {"workers0", {{"set", {{"data", {{"workers", 0}}}}}}},
        {"relaxed", {{"set", {{"determinism", {{"mode", "default"}}}}}}},
        {"interop2", {{"set", {{"determinism", {{"inter_op_threads", 2}}}}}}},
        {"ranks2", {{"set", {{"distributed", {{"world_size", 2}, {"backend", "gloo"}}}}}, {"same_batches", false}}}};
  };
  testing::GateProject project("plan-then", lanes);
  write_file_atomically(fs::path(project.smoke_file()).parent_path() / "unit.csv", "a,b,c,d,label\n1,2,3,4,0\n");
  RunRequest r;
  r.smoke = project.smoke_file();
  r.variant = "threads2";
  r.out = project.out_dir() + "/unit/variant-threads2.json";
  r.then_variants = {"workers0"};
  RunPlan first = plan_run(load_smoke_config(r.smoke, r.variant), r, true);
  RunPlan next = plan_then_variant(first, load_smoke_config(r.smoke, "workers0"), "workers0");
  EXPECT_EQ(next.out, project.out_dir() + "/unit/variant-workers0.json");
  EXPECT_EQ(next.request.variant, "workers0");
  EXPECT_TRUE(next.request.then_variants.empty());
  EXPECT_EQ(next.config.intra_op_threads, 1);
  EXPECT_EQ(next.config.data.loader.workers, 0);
  EXPECT_EQ(then_variant_record("out/unit/variant-a.json", "b"), "out/unit/variant-b.json");

  auto refused = [&](const RunRequest& req, bool train = true) -> std::string {
    try {
      plan_run(load_smoke_config(req.smoke, req.variant), req, train);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      return e.what();
    }
    return "(planned)";
  };
  auto refused_next = [&](const std::string& name) -> std::string {
    try {
      plan_then_variant(first, load_smoke_config(r.smoke, name), name);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      return e.what();
    }
    return "(planned)";
  };
  EXPECT_EQ(refused_next("relaxed"),
            "--then-variant relaxed: its determinism.mode (default) is not lane threads2's (strict), a setting of "
            "the whole process; run it on its own with --variant relaxed");
  EXPECT_EQ(refused_next("interop2"),
            "--then-variant interop2: its determinism.inter_op_threads (2) is not lane threads2's (1), a setting of "
            "the whole process; run it on its own with --variant interop2");
  EXPECT_EQ(refused_next("ranks2"),
            "--then-variant ranks2: this lane runs elsewhere than in this process (its own processes or ranks); run "
            "it on its own with --variant ranks2");
  RunRequest base = r;
  base.variant.clear();
  EXPECT_EQ(refused(base), "--then-variant: it follows a lane (--variant NAME)");
  EXPECT_EQ(refused(r, false), "--then-variant: `lockstep run` only");
  RunRequest twice = r;
  twice.then_variants = {"workers0", "workers0"};
  EXPECT_EQ(refused(twice), "--then-variant workers0: each lane once");
  RunRequest repeated = r;
  repeated.repeat = 2;
  EXPECT_EQ(refused(repeated), "--then-variant: one run of each lane (no --repeat)");
  RunRequest stopped = r;
  stopped.stop_after = 1;
  stopped.checkpoint = project.out_dir() + "/ck";
  EXPECT_EQ(refused(stopped), "--then-variant: whole runs only (no --stop-after, --resume)");
  RunRequest unnamed = r;
  unnamed.out.clear();
  EXPECT_EQ(refused(unnamed),
            "--then-variant: with --record DIR/variant-NAME.json (the later lanes' records go beside it)");
  RunRequest over = r;
  over.out = project.out_dir() + "/unit/variant-workers0.json";
  EXPECT_EQ(refused(over), "--then-variant workers0: its record would be --record " + over.out + ", lane threads2's");
  RunRequest empty = r;
  empty.then_variants = {""};
  EXPECT_EQ(refused(empty), "--then-variant: a lane's name, not empty");
  RunRequest varied = r;
  varied.overrides.vary.allocator_bytes = 70000;
  EXPECT_EQ(refused(varied), "--then-variant: no --vary (a varied run is a repeat's, in a process of its own)");
  RunRequest ranks = r;
  ranks.variant = "ranks2";
  EXPECT_EQ(refused(ranks),
            "--then-variant: a built-in smoke's lane in this process (not a trainer's nor a multi-rank one)");
}

TEST(RunPlan, OutputsNeverLandOnInputsGoldensOrTheCheckpoint) {
  Project p("builtin", "outputs");
  RunRequest r = p.request();
  r.out = r.smoke;
  EXPECT_EQ(p.refusal(r), r.smoke + ": refusing to write an output over an input of this command (" + r.smoke + ")");
  r.out = p.p.goldens_dir() + "/unit/cpu.json";
  EXPECT_NE(p.refusal(r).find("refusing to write a run record"), std::string::npos) << p.refusal(r);
  r.out = p.p.out_dir() + "/run.json";
  r.stop_after = 1;
  r.checkpoint = p.p.out_dir() + "/run.json.ck";
  EXPECT_EQ(p.refusal(r), "--record " + r.out + " and --checkpoint " + r.checkpoint +
                              ": the record (and its " + r.out + ".ranks or .trainer folder) and the checkpoint's "
                              "files (" + r.checkpoint + ", " + r.checkpoint +
                              ".*) would share paths; give them names that do not start with each other");
  r.stop_after = 0;
  r.checkpoint.clear();
  fs::create_directories(p.p.out_dir() + "/folder.json");
  r.out = p.p.out_dir() + "/folder.json";
  EXPECT_EQ(p.refusal(r), "--record " + r.out + ": refusing to write over something that is not a regular file "
                                              "(--record names the record's file, e.g. " + r.out + "/unit.run.json)");
  // Not a folder: no hint of a file inside it.
  fs::create_symlink("/nonexistent", p.p.out_dir() + "/dangling.json");
  r.out = p.p.out_dir() + "/dangling.json";
  EXPECT_EQ(p.refusal(r), "--record " + r.out + ": refusing to write over something that is not a regular file");
  r.out = p.p.out_dir() + "/new/";
  EXPECT_EQ(p.refusal(r), "--record " + r.out + ": a file path for the record, not a folder (drop the trailing /)");
  EXPECT_FALSE(fs::exists(r.out));
  r.out = p.p.out_dir() + "/run.json";
  r.stop_after = 1;
  r.checkpoint = p.p.out_dir() + "/ck/";
  EXPECT_EQ(p.refusal(r), "--checkpoint " + r.checkpoint + ": a file path, not a folder (drop the trailing /)");
  r.stop_after = 0;
  r.checkpoint.clear();
  // Another smoke of the suite is not an input of this run, but a record
  // over it would break every later check.
  std::string other = (fs::path(r.smoke).parent_path() / "other.json").string();
  fs::copy_file(r.smoke, other);
  r.out = other;
  EXPECT_EQ(p.refusal(r), other + ": refusing to write a run record over a smoke config");
  // Any other file is left alone too; an earlier record is replaced.
  std::string readme = p.p.out_dir() + "/README.md";
  write_file_atomically(readme, "# notes\n");
  r.out = readme;
  EXPECT_EQ(p.refusal(r), "--record " + readme + ": refusing to write a run record over a file that is not a lockstep "
                          "run record (a record replaces only an earlier record; name a new file, e.g. "
                          "lockstep-out/<smoke>.run.json)");
  std::string earlier = p.p.out_dir() + "/earlier.json";
  write_file_atomically(earlier, "{\n  \"platform\": \"cpu\",\n  \"schema\": \"lockstep.run/1\"\n}\n");
  r.out = earlier;
  EXPECT_EQ(p.refusal(r), "(planned)");
  EXPECT_EQ(read_file(readme), "# notes\n");
}

TEST(RunPlan, ASingleProcessResumesFromAFileNotAFolder) {
  Project p("builtin", "resume");
  RunRequest r = p.request();
  r.resume = p.p.out_dir() + "/ck";
  fs::create_directories(r.resume);
  EXPECT_EQ(p.refusal(r), r.resume + ": expected a checkpoint file (this single-process smoke's), got a folder "
                                     "(a multi-rank smoke's checkpoint?)");
  fs::remove_all(r.resume);
  RunPlan plan = p.plan(r);
  EXPECT_EQ(plan.span, RunSpan::kResume);
}

TEST(RunPlan, ARankNeedsItsGroupAndItsRendezvous) {
  Project ranks("ranks", "rank"), single("builtin", "rank-single");
  RunRequest r = ranks.request();
  r.rank = 2;
  EXPECT_EQ(ranks.refusal(r), "--rank 2: " + r.smoke + " has 2 ranks");
  r.rank = 1;
  EXPECT_EQ(ranks.refusal(r), "--rendezvous '': not a folder (rank processes are started by `lockstep run` on a "
                              "distributed smoke, which makes it)");
  r.rendezvous = ranks.p.out_dir();
  fs::create_directories(r.rendezvous);
  r.out = r.rendezvous + "/rank-1.json";
  RunPlan plan = ranks.plan(r);
  EXPECT_EQ(plan.site, RunSite::kRank);
  EXPECT_EQ(plan.out, r.rendezvous + "/rank-1.json");
  RunRequest s = single.request();
  s.rank = 0;
  EXPECT_EQ(single.refusal(s), "--rank 0: " + s.smoke + " has no distributed section");
}

TEST(RunPlan, SeveralMachinesNameNodeZerosStoreAndEachNodesLogs) {
  Project ranks("ranks", "nodes"), trainer("trainer", "nodes-t"), single("builtin", "nodes-s");
  RunRequest r = ranks.request();
  r.nnodes = 2;
  r.node_rank = 1;
  r.master = "127.0.0.1:29555";
  RunPlan plan = ranks.plan(r);
  EXPECT_EQ(plan.master.describe(), "127.0.0.1:29555");
  EXPECT_EQ(plan.out, "lockstep-out/unit.node-1.run.json");
  r.node_rank = 0;
  EXPECT_EQ(ranks.plan(r).out, "lockstep-out/unit.run.json");
  r.node_rank = 2;
  EXPECT_EQ(ranks.refusal(r), "--node-rank 2: must be below --nnodes 2");
  r.node_rank = -1;
  EXPECT_EQ(ranks.refusal(r),
            "--nnodes 2: --node-rank K is required (0 on the machine that serves the store and writes the record)");
  r.nnodes = 3;
  r.node_rank = 0;
  EXPECT_EQ(ranks.refusal(r), "--nnodes 3: the 2 ranks of " + r.smoke +
                                  " (distributed.world_size or --world-size) do not split evenly over 3 machines");
  RunRequest one = ranks.request();
  one.node_rank = 0;
  EXPECT_EQ(ranks.refusal(one), "--node-rank: only with --nnodes N > 1 (the ranks of a run on several machines)");
  RunRequest t = trainer.request();
  t.nnodes = 2;
  EXPECT_NE(trainer.refusal(t).find("runs a team's trainer"), std::string::npos);
  RunRequest s = single.request();
  s.nnodes = 2;
  EXPECT_EQ(single.refusal(s), "--nnodes 2: " + s.smoke +
                                   " has no \"distributed\" section (a single-process smoke runs on one machine)");
}

}  // namespace
}  // namespace lockstep
