// End-to-end tests of the smoke trainer through the CLI and of
// the bless refusals that need a trainer: every built-in model
// reproduces across processes, a nondeterministic kernel is caught by
// --repeat only when deterministic algorithms are off, a resumed run
// replays the straight run, multi-seed goldens.
#include <gtest/gtest.h>

#include "cli/cli_helpers.h"
#include "test_paths.h"

namespace lockstep {
namespace {
using namespace cli_test;

const std::string kWine = kSourceDir + "/smoke/wine-mlp.json";
const std::string kTokens = kSourceDir + "/smoke/tokens-transformer.json";

std::string smoke_in(const fs::path& project, const std::string& file) {
  return (project / "smoke" / file).string();
}

// A check killed with SIGKILL (a cancelled CI job) takes its training
// child with it: the child dies with its parent (PR_SET_PDEATHSIG).
TEST(TrainCli, AKilledCheckLeavesNoTrainingChild) {
  fs::path d = scratch("sigkill-check", [](nlohmann::json& c) {
    c["steps"] = 200000;
    c.erase("resume_at");
  }, kWine);
  std::string cfg = smoke_in(d, "wine-mlp.json");
  // "[l]ockstep": the pattern must not match this shell's own command line.
  std::string child = "'[l]ockstep-torch run .*" + d.string() + "'";
  Result r = shell("cd '" + d.string() + "' && " + test_paths::lockstep_binary() + " check " + cfg + " --out out & lp=$!; " +
                   "i=0; while ! pgrep -f " + child + " >/dev/null && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; " +
                   "kill -KILL $lp; wait $lp; echo \"lockstep status $?\"; " +
                   "i=0; while pgrep -f " + child + " >/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; " +
                   "if pgrep -f " + child + " >/dev/null; then echo \"child alive\"; pkill -9 -f " + child +
                   "; else echo \"child gone\"; fi");
  EXPECT_NE(r.output.find("lockstep status " + std::to_string(128 + 9)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("child gone"), std::string::npos) << r.output;
  fs::remove_all(d);
}

// Each built-in model: two fresh processes give bit-identical records.
TEST(TrainCli, EachBuiltInModelIsBitIdenticalAcrossProcesses) {
  fs::path p = scratch("models");
  for (const std::string& smoke : {kTokens, kSmoke, kWine}) {
    Result r = lockstep("run " + smoke + " --repeat 2 --record " + (p / "out" / "r.json").string());
    EXPECT_EQ(r.code, 0) << smoke << "\n" << r.output;
    EXPECT_NE(r.output.find("2 runs in fresh processes are bit-identical"), std::string::npos) << r.output;
  }
  nlohmann::json rec = parse_json_file((p / "out" / "r.json").string());
  EXPECT_EQ(rec["series"]["lr"]["values"][0], 0.01 * (1.0 / 3));  // warm-up over 3 steps: base * (s+1)/3
  EXPECT_EQ(rec["series"]["lr"]["values"][2], 0.01);
  EXPECT_EQ(rec["init"].size(), 6u);  // fc1, fc2, head: weight and bias
  EXPECT_EQ(rec["resources"]["step_time_s"].size(), 10u);
  EXPECT_GT(rec["resources"]["peak_rss_bytes"].get<int64_t>(), 0);
}

// check's lanes of a built-in smoke share one process (--then-variant):
// each lane's record holds the values of that lane run alone, bit for
// bit, whatever ran before it in the process; a lane that cannot share
// one is refused by name.
TEST(TrainCli, LanesRunInOneProcessEqualEachLaneRunAlone) {
  const std::string cancer = kSourceDir + "/smoke/cancer-mlp.json";
  const std::string dir = (scratch("lanes-together") / "out").string();
  Result together = lockstep("run " + cancer + " --quiet --variant threads2 --then-variant split2 --then-variant " +
                             "workers0 --record " + dir + "/variant-threads2.json");
  ASSERT_EQ(together.code, 0) << together.output;
  EXPECT_EQ(together.output, "");
  for (const std::string name : {"split2", "workers0"}) {
    Result alone = lockstep("run " + cancer + " -q --variant " + name + " --record " + dir + "/alone.json");
    ASSERT_EQ(alone.code, 0) << alone.output;
    EXPECT_EQ(alone.output, "");  // -q, as check's
    nlohmann::json a = parse_json_file(dir + "/variant-" + name + ".json");
    nlohmann::json b = parse_json_file(dir + "/alone.json");
    EXPECT_EQ(a["config"]["variant"], "\"" + name + "\"");  // config values are JSON texts
    for (const char* key : {"config", "contract", "series", "hashes", "digests", "init", "module_trace", "probes",
                            "train_probes"})
      EXPECT_EQ(a[key], b[key]) << name << ": " << key;
  }
  // Every lane is planned before the first one runs: nothing is written.
  fs::remove_all(dir);
  Result ranks = lockstep("run " + cancer + " --variant threads2 --then-variant ranks2 --record " + dir + "/variant-threads2.json");
  EXPECT_EQ(ranks.code, 2) << ranks.output;
  EXPECT_NE(ranks.output.find("lane ranks2: --then-variant ranks2: this lane runs elsewhere than in this process"),
            std::string::npos) << ranks.output;
  EXPECT_FALSE(fs::exists(dir + "/variant-threads2.json"));
}

// A deliberately nondeterministic kernel (index_put_ accumulate, 2 threads).
TEST(TrainCli, NondeterministicKernelIsExit4OnlyWithoutDeterministicAlgorithms) {
  for (const char* mode : {"default", "strict"}) {
    fs::path p = scratch(std::string("nondet-") + mode, [&](nlohmann::json& c) {
      c["inject_nondeterminism"] = "index_put_accumulate";
      c["determinism"] = {{"mode", mode}, {"intra_op_threads", 2}, {"inter_op_threads", 1}};
      c.erase("resume_at");
    }, kWine);
    Result r = lockstep("run " + smoke_in(p, "wine-mlp.json") + " --repeat 3 --record " + (p / "out/r.json").string());
    if (std::string(mode) == "default") {
      EXPECT_EQ(r.code, 4) << r.output;
      EXPECT_NE(r.output.find("NONDETERMINISTIC (exit 4)"), std::string::npos) << r.output;
      // The injected factor scales the loss outside every module: the first
      // traced module to see other values is the head, in backward. Which
      // traced step first differs is up to the scheduler (two threads race
      // in the kernel; at step 0 they may happen to add in the same order).
      EXPECT_NE(r.output.find("first difference: train step "), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(", backward, head: input differs too, output differs ("), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(": loss (first parameter gradient to diverge: "), std::string::npos) << r.output;
    } else {
      EXPECT_EQ(r.code, 0) << r.output;
    }
  }
}

// A loss that depends on where heap buffers lie (the test-only model
// "allocation_order"): identical repeats agree bit for bit, a run with an
// allocator hole does not, the other kinds leave it alone, and check's
// varied second repeat is exit 4 naming the hole.
TEST(TrainCli, AnAllocationHistoryDependenceShowsOnlyUnderThePerturbedRepeat) {
  fs::path p = scratch("alloc-order", [](nlohmann::json& c) {
    c["inject_nondeterminism"] = "allocation_order";
    c.erase("resume_at");
    c.erase("equivalence");
  }, kWine);
  const std::string smoke = smoke_in(p, "wine-mlp.json");
  const std::string out = (p / "out").string();
  Result plain = lockstep("run " + smoke + " --repeat 3 --record " + out + "/a.json");
  EXPECT_EQ(plain.code, 0) << plain.output;
  ASSERT_EQ(lockstep("run " + smoke + " --quiet --vary allocator=70000 --record " + out + "/b.json").code, 0);
  ASSERT_EQ(lockstep("run " + smoke + " --quiet --vary malloc-perturb=7,env-order,thread-warmup --record " + out +
                     "/c.json").code, 0);
  EXPECT_EQ(lockstep("compare " + out + "/b.json " + out + "/a.json").code, 1);
  Result others = lockstep("compare " + out + "/c.json " + out + "/a.json");
  EXPECT_EQ(others.code, 0) << others.output;
  nlohmann::json b = parse_json_file(out + "/b.json");
  EXPECT_EQ(b["fingerprint"]["vary.allocator"]["value"], "70000");

  Result check = lockstep("check " + smoke + " --out " + out + "/check");
  EXPECT_EQ(check.code, 4) << check.output;
  EXPECT_NE(check.output.find("first divergence: run 2 differs from run 1 only when it varies what must not matter ("),
            std::string::npos) << check.output;
  EXPECT_NE(check.output.find("the plain runs 1, 3, 4 and 5 agree bit for bit; alone, a "), std::string::npos)
      << check.output;
  EXPECT_NE(check.output.find("-byte allocator hole before the run moves the values (" + out +
                              "/check/wine-mlp/vary-allocator.json); first difference: train step 0"),
            std::string::npos)
      << check.output;
  EXPECT_NE(check.output.find("note: to see it again: lockstep run " + smoke + " --record plain.json; lockstep run " +
                              smoke + " --vary allocator="),
            std::string::npos)
      << check.output;
  fs::remove_all(p);
}

// `run --vary` refuses what it cannot apply, naming the kind (exit 2).
TEST(TrainCli, AMalformedVariationIsExitTwo) {
  Result r = lockstep("run " + kWine + " --vary heap --record /tmp/never.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--vary: unknown kind \"heap\" (one of allocator, malloc-perturb, affinity, env-order, "
                          "thread-warmup)"),
            std::string::npos)
      << r.output;
}

// `probe --batch-sweep`: the built-in model's outputs at every piece size,
// printed and as JSON; its exit code is the JSON's verdict (which module,
// if any, is not batch-invariant depends on the stack's kernels: the
// planted cases are tests/run/batch_sweep_test.cpp). A --record is
// refused; a trainer smoke's sweep is the helper's (trainer_cli_test.cpp).
TEST(TrainCli, TheBatchSweepPrintsEachModuleAndItsVerdict) {
  fs::path p = scratch("sweep", {}, kWine);
  const std::string json = (p / "sweep.json").string();
  Result r = lockstep("probe " + kWine + " --batch-sweep --json " + json);
  nlohmann::json j = parse_json_file(json);
  EXPECT_EQ(r.code, j["invariant"].get<bool>() ? 0 : 1) << r.output;
  EXPECT_EQ(j["smoke"], "wine-mlp");
  EXPECT_EQ(j["batch"], 24);
  EXPECT_EQ(j["sizes"], nlohmann::json({24, 12, 6, 3, 1}));
  std::vector<std::string> modules;
  for (const auto& m : j["modules"]) modules.push_back(m["module"]);
  EXPECT_EQ(modules, (std::vector<std::string>{"fc1", "drop", "fc2", "drop#2", "head", "(model output)"}));
  EXPECT_EQ(j["modules"][0]["type"], "Linear");
  EXPECT_EQ(r.output.rfind("batch sweep wine-mlp (cpu): the first batch, 24 samples, forwarded whole and in pieces of "
                           "12, 6, 3, 1 (eval mode: no dropout; a BatchNorm on its running statistics)", 0), 0u)
      << r.output;
  EXPECT_NE(r.output.find("\n  fc1 (Linear)  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(j["invariant"].get<bool>() ? "wine-mlp: BATCH-INVARIANT on this stack (exit 0)\n"
                                                     : "wine-mlp: NOT BATCH-INVARIANT (exit 1): "),
            std::string::npos)
      << r.output;

  Result record = lockstep("probe " + kWine + " --batch-sweep --record " + (p / "r.json").string());
  EXPECT_EQ(record.code, 2) << record.output;
  EXPECT_NE(record.output.find("--record: --batch-sweep writes no record (--json FILE writes the sweep as JSON)"),
            std::string::npos)
      << record.output;
  EXPECT_EQ(lockstep("probe " + kWine + " --json " + json).code, 2);  // --json needs --batch-sweep
  fs::remove_all(p);
}

// Resume at step 5 equals the straight run; without the generator state
// (dropout draws from it) it fails at the first resumed step.
TEST(TrainCli, ResumeReplaysTheStraightRunAndCatchesAMissingGeneratorState) {
  fs::path p = scratch("resume", {}, kWine);
  std::string smoke = smoke_in(p, "wine-mlp.json");
  std::string straight = (p / "straight.json").string(), ckpt = (p / "at5.ckpt").string();
  ASSERT_EQ(lockstep("run " + smoke + " --record " + straight).code, 0);
  Result stop = lockstep("run " + smoke + " --stop-after 5 --checkpoint " + ckpt);
  ASSERT_EQ(stop.code, 0) << stop.output;
  EXPECT_NE(stop.output.find("stopped after 5 steps"), std::string::npos) << stop.output;

  Result resumed = lockstep("run " + smoke + " --resume " + ckpt + " --record " + (p / "resumed.json").string());
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  Result same = lockstep("compare " + (p / "resumed.json").string() + " " + straight);
  EXPECT_EQ(same.code, 0) << same.output;

  Result bad = lockstep("run " + smoke + " --resume " + ckpt + " --skip-generator-restore --record " +
                        (p / "bad.json").string());
  ASSERT_EQ(bad.code, 0) << bad.output;
  Result differs = lockstep("compare " + (p / "bad.json").string() + " " + straight);
  EXPECT_EQ(differs.code, 1) << differs.output;
  EXPECT_NE(differs.output.find("first divergence: train step 5: "), std::string::npos) << differs.output;

  // `check` runs the same resume check from the config's resume_at.
  Result check = lockstep("check " + smoke + " --out " + (p / "out").string());
  EXPECT_NE(check.output.find("no golden for smoke 'wine-mlp'"), std::string::npos) << check.output;
  EXPECT_TRUE(fs::exists(p / "out/wine-mlp/resumed.json")) << check.output;

  // A checkpoint is bound to its config and is never half-read.
  std::string other = smoke_in(scratch("resume-other", [](nlohmann::json& c) { c["seed"] = 7; }, kWine), "wine-mlp.json");
  Result foreign = lockstep("run " + other + " --resume " + ckpt + " --record " + (p / "x.json").string());
  EXPECT_EQ(foreign.code, 2) << foreign.output;
  EXPECT_NE(foreign.output.find("config_hash"), std::string::npos) << foreign.output;
  std::string text = read_file(ckpt);
  std::string flipped = text;
  flipped[flipped.size() / 2] ^= 0x01;  // one bit in the middle: caught by the trailer hash
  write_file_atomically((p / "flip.ckpt").string(), flipped);
  Result flip = lockstep("run " + smoke + " --resume " + (p / "flip.ckpt").string() + " --record " + (p / "x.json").string());
  EXPECT_EQ(flip.code, 2) << flip.output;
  EXPECT_NE(flip.output.find("flip.ckpt: (file): expected a lockstep checkpoint"), std::string::npos) << flip.output;
  write_file_atomically((p / "cut.ckpt").string(), text.substr(0, text.size() / 2));
  Result cut = lockstep("run " + smoke + " --resume " + (p / "cut.ckpt").string() + " --record " + (p / "x.json").string());
  EXPECT_EQ(cut.code, 2) << cut.output;
  EXPECT_NE(cut.output.find("cut.ckpt"), std::string::npos) << cut.output;
}

TEST(TrainCli, CheckWithResumeAtPassesWhenTheResumedRunReplaysTheStraightOne) {
  // check restores everything, so the resume check passes; the failing
  // direction is shown above through --skip-generator-restore.
  fs::path p = scratch("resume-check", {}, kWine);
  Result bless = lockstep("bless " + smoke_in(p, "wine-mlp.json") + " --reason t --out " + (p / "out").string());
  ASSERT_EQ(bless.code, 0) << bless.output;
  Result check = lockstep("check " + smoke_in(p, "wine-mlp.json") + " --out " + (p / "out").string());
  EXPECT_EQ(check.code, 0) << check.output;
  EXPECT_NE(check.output.find("resumed at step 8 from a checkpoint in a fresh process: bit-identical"),
            std::string::npos) << check.output;
}

TEST(TrainCli, BlessRefusesNondeterministicRunsAndNaN) {
  fs::path nd = scratch("bless-nondet", [](nlohmann::json& c) {
    c["inject_nondeterminism"] = "index_put_accumulate";
    c["determinism"] = {{"mode", "default"}, {"intra_op_threads", 2}, {"inter_op_threads", 1}};
  }, kWine);
  Result r = lockstep("bless " + (nd / "smoke").string() + " --reason x --repeat 3 --out " + (nd / "out").string());
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("refusing to bless wine-mlp: run "), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(nd / "goldens"));

  // Features scaled to ~1e33 and lr 1000: the loss is NaN from step 1.
  fs::path nan = scratch("bless-nan", [](nlohmann::json& c) {
    c["data"]["scale"] = 1e30;
    c["optimizer"] = {{"name", "sgd"}, {"lr", 1000}};
    c.erase("resume_at");
  }, kWine);
  Result n = lockstep("bless " + (nan / "smoke").string() + " --reason x --out " + (nan / "out").string());
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("refusing to bless wine-mlp: series.grad_norm.values[1] is non-finite (nan)"), std::string::npos)
      << n.output;
  EXPECT_NE(n.output.find("non-finite"), std::string::npos) << n.output;
  EXPECT_FALSE(fs::exists(nan / "goldens"));
}

TEST(TrainCli, MultiSeedGoldenKeepsTheConfigSeedExactAndAddsMeanAndStd) {
  fs::path p = scratch("seeds", [](nlohmann::json& c) { c.erase("resume_at"); }, kWine);
  std::string smoke = smoke_in(p, "wine-mlp.json");
  Result b = lockstep("bless " + smoke + " --reason seeds --seeds 1,2 --out " + (p / "out").string());
  ASSERT_EQ(b.code, 0) << b.output;
  EXPECT_NE(b.output.find("3 seeds"), std::string::npos) << b.output;
  std::string golden;
  for (auto& e : fs::directory_iterator(p / "goldens" / "wine-mlp")) golden = e.path().string();
  nlohmann::json g = parse_json_file(golden);
  EXPECT_EQ(g["provenance"]["seeds"], nlohmann::json::array({20261130u, 1u, 2u}));
  const nlohmann::json& loss = g["series"]["loss"];
  ASSERT_EQ(loss["mean"].size(), 10u);
  ASSERT_EQ(loss["std"].size(), 10u);
  // values = the config seed's run; mean over three seeds differs from it.
  nlohmann::json seed1 = parse_json_file((p / "out/wine-mlp/bless-seed-1-1.json").string());
  nlohmann::json seed0 = parse_json_file((p / "out/wine-mlp/bless-seed-20261130-1.json").string());
  nlohmann::json seed2 = parse_json_file((p / "out/wine-mlp/bless-seed-2-1.json").string());
  EXPECT_EQ(loss["values"], seed0["series"]["loss"]["values"]);
  double a = seed0["series"]["loss"]["values"][0], c = seed1["series"]["loss"]["values"][0],
         d = seed2["series"]["loss"]["values"][0];
  double mean = (a + c + d) / 3;
  EXPECT_EQ(loss["mean"][0].get<double>(), mean);
  EXPECT_GT(loss["std"][0].get<double>(), 0.0);
  EXPECT_EQ(seed1["seed"]["overridden"], true);
  EXPECT_EQ(seed0["seed"]["overridden"], false);

  // Same stack: still bit-exact against the config seed's run.
  Result same = lockstep("check " + smoke + " --out " + (p / "out").string());
  EXPECT_EQ(same.code, 0) << same.output;
}

TEST(TrainCli, TrainerConfigAndFlagErrorsAreExit2NamingTheField) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](nlohmann::json& c) { c["optimizer"] = {{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0}, {"nesterov", true}}; },
       "optimizer.nesterov: expected false unless momentum > 0 (torch.optim.SGD)"},
      {[](nlohmann::json& c) { c["optimizer"] = {{"name", "sgd"}, {"lr", 0.1}, {"betas", {0.9, 0.99}}}; },
       "optimizer.betas: expected no betas for sgd (adam and adamw only)"},
      {[](nlohmann::json& c) { c["optimizer"]["schedule"] = {{"name", "step"}, {"step_size", 2}}; },
       "optimizer.schedule.gamma: expected a value (the field is missing)"},
      {[](nlohmann::json& c) { c["resume_at"] = 10; },
       "resume_at: expected a step between 1 and steps - 1 (9), got 10"},
      {[](nlohmann::json& c) { c["model"]["dropout"] = 1; }, "model.dropout: expected a probability in [0, 1)"},
      {[](nlohmann::json& c) { c["model"]["name"] = "mlpp"; }, "(did you mean \"mlp\"?)"},
      {[](nlohmann::json& c) { c["model"]["channels"] = 4; }, "model.channels: expected no channels for model mlp"},
      {[](nlohmann::json& c) { c["model"] = {{"name", "transformer"}, {"classes", 3}}; },
       "model.name: expected a model for the data: transformer needs data.source synthetic with kind \"tokens\""},
      {[](nlohmann::json& c) {
         c["data"] = {{"source", "synthetic"}, {"synthetic", {{"kind", "images"}, {"vocab", 8}}},
                      {"sample_shape", {1, 4, 4}}, {"batch_size", 8}};
       },
       "data.synthetic.vocab: expected no vocab for kind images (tokens only)"},
      {[](nlohmann::json& c) { c["data"]["synthetic"] = {{"kind", "tabular"}}; },
       "data.synthetic: expected no synthetic section for source csv"},
      {[](nlohmann::json& c) {
         c["data"] = {{"source", "synthetic"}, {"synthetic", {{"kind", "tabular"}, {"rows", 10000000}}},
                      {"sample_shape", {64}}, {"batch_size", 8}};
       },
       "data.synthetic.rows: expected a table of at most 2^28 values"},
      {[](nlohmann::json& c) { c["data"]["sample_shape"] = {3, 100000, 100000}; },
       "data.sample_shape: expected a sample of at most 2^24 elements"},
  };
  int i = 0;
  for (const auto& c : cases) {
    fs::path p = scratch("cfg-" + std::to_string(i++), c.edit, kWine);
    Result r = lockstep("run " + smoke_in(p, "wine-mlp.json") + " --record " + (p / "r.json").string());
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
  }
  Result stop = lockstep("run " + kWine + " --stop-after 10 --checkpoint /tmp/never.ckpt");
  EXPECT_EQ(stop.code, 2) << stop.output;
  EXPECT_NE(stop.output.find("must be below the 10 steps"), std::string::npos) << stop.output;
  Result both = lockstep("run " + kWine + " --repeat 2 --resume /tmp/never.ckpt");
  EXPECT_EQ(both.code, 2) << both.output;
  Result alone = lockstep("run " + kWine + " --stop-after 3");
  EXPECT_EQ(alone.code, 2) << alone.output;
  Result empty = lockstep("run " + kWine + " --record ''");
  EXPECT_EQ(empty.code, 2) << empty.output;
  EXPECT_NE(empty.output.find("a file path for the record, not empty"), std::string::npos) << empty.output;
  Result device = lockstep("run " + kWine + " --record /dev/null");
  EXPECT_EQ(device.code, 2) << device.output;
  EXPECT_NE(device.output.find("/dev/null: refusing to write over something that is not a regular file"),
            std::string::npos) << device.output;
  fs::path scratch_seeds = scratch("bad-seeds", {}, kWine);
  for (const char* seeds : {"1,,2", "-1", "x", "3,3"}) {
    Result bad = lockstep("bless " + smoke_in(scratch_seeds, "wine-mlp.json") + " --reason x --seeds " + seeds +
                          " --out " + (scratch_seeds / "out").string());
    EXPECT_EQ(bad.code, 2) << seeds << "\n" << bad.output;
    EXPECT_NE(bad.output.find("--seeds"), std::string::npos) << bad.output;
  }
  EXPECT_FALSE(fs::exists(scratch_seeds / "goldens"));
}

// check --rerun-failing after a config change: the reruns differ (the
// kernel races two threads, so some of 3 do), which the verdict notes,
// but a changed input fails whatever the values do: exit 1 stands.
TEST(TrainCli, NondeterministicKernelRerunsDoNotHideAChangedInput) {
  fs::path p = scratch("rerun-nondet", [&](nlohmann::json& c) {
    c["determinism"] = {{"mode", "default"}, {"intra_op_threads", 2}, {"inter_op_threads", 1}};
    c.erase("resume_at");
  }, kWine);
  std::string s = (p / "smoke").string(), out = (p / "out").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason base --out " + out).code, 0);
  nlohmann::json cfg = parse_json_file(s + "/wine-mlp.json");
  cfg["inject_nondeterminism"] = "index_put_accumulate";
  write_file_atomically(s + "/wine-mlp.json", pretty_dump(cfg));
  Result r = lockstep("check " + s + " --repeat 1 --rerun-failing 3 --out " + out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: input changed: smoke config wine-mlp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("differs from the failing run bit for bit ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("this runner is nondeterministic for the smoke too; the failure stands (a changed input "
                          "fails whatever the values do)"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace lockstep
