// A team's own Python trainer gated end to end (docs/trainers.md): the
// example in examples/pytorch-trainer/ (a real PyTorch trainer on Debian's
// python3-torch) checked against its committed golden, the field's usual
// bugs caught with the right exit class and location, a failing trainer
// quoted, and `lockstep import`.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <functional>

#include "cli/cli_helpers.h"
#include "core/json_io.h"
#include "test_paths.h"

namespace lockstep::cli_test {
namespace {

const std::string kExample = kSourceDir + "/examples/pytorch-trainer";
const std::string kExampleSmoke = kExample + "/smoke";

fs::path out_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-trainer-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// `check` on the example with the trainer bug `bug` switched on (train.py,
// PYTORCH_TRAINER_BUG, passed on to the trainer); a failing comparison
// ends the check before the resume check.
// Its repeats that differ are counted over 3 runs (not the default 5: time).
Result check_with_bug(const std::string& bug, const fs::path& out) {
  return lockstep("check " + kExampleSmoke + " --distinct-runs 3 --out " + out.string(), "PYTORCH_TRAINER_BUG=" + bug);
}

// A scratch copy of the example's smoke config in <dir>/smoke/ (the
// trainer still runs from the example's folder), edited by `edit`.
fs::path example_smoke_in(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  fs::create_directories(dir / "smoke");
  nlohmann::json cfg = parse_json_file(kExampleSmoke + "/pytorch-trainer.json");
  cfg.erase("platforms");
  cfg["trainer"]["cwd"] = kExample;
  edit(cfg);
  fs::path file = dir / "smoke" / "pytorch-trainer.json";
  write_file_atomically(file.string(), pretty_dump(cfg));
  return file;
}

TEST(TrainerCli, ExampleTrainerPassesAgainstItsCommittedGolden) {
  fs::path out = out_dir("pass");
  Result r = lockstep("check " + kExampleSmoke + " --out " + out.string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 runs in this job were bit-identical"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resumed at step 5 from a checkpoint in a fresh process: bit-identical"), std::string::npos)
      << r.output;
  // The golden's data-only pass stands for today's (docs/decisions.md, entry 29).
  EXPECT_NE(r.output.find("note: no data-only pass ran: the 10 batches trained on are the golden's data-only batches "
                          "bit for bit"),
            std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "pytorch-trainer" / "run-1.json.trainer" / "data")) << r.output;
  Result by_hand = lockstep("compare " + (out / "pytorch-trainer" / "run-1.json").string() + " " + kExample +
                            "/goldens/pytorch-trainer/cpu-x86_64-avx2.json");
  EXPECT_EQ(by_hand.code, 0) << by_hand.output;
  EXPECT_TRUE(fs::exists(out / "pytorch-trainer" / "report.md")) << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, TheHelpersModuleTraceIsInTheRecordAndRepeatsBitForBit) {
  fs::path out = out_dir("trace");
  std::string rec = (out / "run.json").string();
  Result r = lockstep("run " + kExampleSmoke + "/pytorch-trainer.json --repeat 2 --record " + rec);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 runs in fresh processes are bit-identical"), std::string::npos) << r.output;
  nlohmann::json t = parse_json_file(rec)["module_trace"];
  EXPECT_EQ(t["steps"], 2);
  std::vector<std::string> order;
  for (const auto& e : t["entries"])
    order.push_back(std::to_string(e["step"].get<int>()) + " " + e["phase"].get<std::string>() + " " +
                    e["module"].get<std::string>());
  EXPECT_EQ(order, (std::vector<std::string>{"0 forward conv1", "0 forward conv2", "0 forward fc", "0 backward fc",
                                             "0 backward conv2", "1 forward conv1", "1 forward conv2", "1 forward fc",
                                             "1 backward fc", "1 backward conv2"}));
  fs::remove_all(out);
}

// For a test about something else: the smoke's trainer runs once per run
// of a check (no resume check: no stopped and continued runs; no data-only
// pass), one Python process where the example as committed starts four.
void trainer_only(nlohmann::json& c) {
  c.erase("resume_at");
  c["trainer"].erase("probes");
  c["trainer"].erase("data_only");
}

TEST(TrainerCli, WorkerInitFnRemovedIsARegressionAtADataBatch) {
  fs::path out = out_dir("worker-init");
  Result r = check_with_bug("no_worker_init_fn", out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: data batch 0"), std::string::npos) << r.output;
  // Its goldens lie beside its smoke folder, not in ./goldens: the next
  // steps name them, as review and accept need.
  const std::string where = out.string() + " --goldens " + kExample + "/goldens";
  EXPECT_NE(r.output.find("(review with `lockstep review " + where + "`, promote with `lockstep accept " + where +
                          " --reason ...`)"),
            std::string::npos) << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, SamplerGeneratorRemovedIsARegressionAtDataBatchZero) {
  fs::path out = out_dir("sampler");
  Result r = check_with_bug("no_sampler_generator", out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: data batch 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sample_index_hash"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// nanoGPT's get_batch on torch's global generator, with dropout drawing
// from it too: runs repeat, but the data-only pass draws other batches from
// batch 1 on. That is how the smoke is wired, not nondeterminism: exit 2,
// naming the cause and the fix.
TEST(TrainerCli, ABatchSamplerSharingDropoutsGeneratorIsNamedWithItsFix) {
  fs::path out = out_dir("shared-generator");
  Result r = check_with_bug("dropout_shared_generator", out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("BAD INPUT (exit 2): the training pass consumed other batches than the data-only pass, "
                          "first at batch 1: other samples (sample indices "),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("though the 2 runs repeated bit for bit: deterministic, but this smoke's data-only pass "
                          "does not replay the training pass"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DataLoader(..., generator=ctx.generator)"), std::string::npos) << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, AugmentationFromTheGlobalRandomModuleIsNamed) {
  fs::path out = out_dir("global-random");
  Result r = check_with_bug("global_random", out);
  EXPECT_TRUE(r.code == 1 || r.code == 4) << r.output;
  EXPECT_NE(r.output.find("first divergence: data batch 0"), std::string::npos) << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, ANondeterministicOpIsExitFour) {
  fs::path out = out_dir("nondeterministic");
  Result r = check_with_bug("nondeterministic_op", out);
  EXPECT_EQ(r.code, 4) << r.output;
  // A sum in an order drawn from os.urandom: every run its own result
  // (two orders that happen to round alike would make it 2 of 3).
  EXPECT_TRUE(r.output.find("run 2 differs from run 1 in the same job (3 distinct results in 3 runs)") !=
                  std::string::npos ||
              r.output.find("run 2 differs from run 1 in the same job (2 distinct results in 3 runs)") !=
                  std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result 1 of "), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / "pytorch-trainer" / "run-3.json"));
  // The op sits in Net.forward, outside the traced modules: the first
  // traced module to see other values is conv2, in backward, and it says
  // the cause is upstream of it.
  EXPECT_NE(r.output.find("first difference: train step 0, backward, conv2: input differs too, output differs ("),
            std::string::npos)
      << r.output;
  fs::remove_all(out);
}

// `probe --batch-sweep` of a trainer smoke: the helper's ModuleTracer
// sweeps the example's model at step 0's forward (32 samples, then 16, 8,
// 4, 2, 1) and ends the trainer; every leaf and the model's output are
// rows, the exit code is the JSON's verdict (which module, if any, is not
// batch-invariant depends on the stack's kernels; the planted cases are
// tests/python/test_batch_sweep.py). A trainer that never calls
// ctx.trace_modules is exit 2 naming how to take part.
TEST(TrainerCli, TheBatchSweepOfATrainersModelIsTheHelpersAndEndsTheTrainer) {
  fs::path d = out_dir("batch-sweep");
  fs::path smoke = example_smoke_in(d, [](nlohmann::json&) {});
  const std::string json = (d / "sweep.json").string();
  Result r = lockstep("probe " + smoke.string() + " --batch-sweep --json " + json);
  nlohmann::json j = parse_json_file(json);
  EXPECT_EQ(r.code, j["invariant"].get<bool>() ? 0 : 1) << r.output;
  EXPECT_EQ(j["smoke"], "pytorch-trainer");
  EXPECT_EQ(j["batch"], 32);
  EXPECT_EQ(j["sizes"], nlohmann::json({32, 16, 8, 4, 2, 1}));
  std::vector<std::string> modules;
  for (const auto& m : j["modules"]) modules.push_back(m["module"]);
  EXPECT_EQ(modules, (std::vector<std::string>{"conv1", "conv2", "fc", "(model output)"}));
  EXPECT_EQ(j["modules"][0]["type"], "Conv2d");
  EXPECT_EQ(j["modules"][3]["type"], "Net");
  EXPECT_EQ(r.output.rfind("batch sweep pytorch-trainer (cpu): the first batch, 32 samples, forwarded whole and in "
                           "pieces of 16, 8, 4, 2, 1 (eval mode",
                           0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("\n  conv1 (Conv2d)  "), std::string::npos) << r.output;

  write_file_atomically((d / "untraced.py").string(), "import lockstep\nlockstep.apply_contract()\n");
  fs::path untraced = example_smoke_in(d / "untraced", [&](nlohmann::json& c) {
    c["trainer"]["command"] = {"/usr/bin/python3", (d / "untraced.py").string()};
  });
  Result none = lockstep("probe " + untraced.string() + " --batch-sweep");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("trainer.command: expected a trainer whose model the helper can sweep: it sweeps at the "
                             "ModuleTracer's step(0)"),
            std::string::npos)
      << none.output;

  // A model the helper cannot sweep (one sample): exit 2 with its reason.
  write_file_atomically((d / "single.py").string(),
                        "import torch, lockstep\nctx = lockstep.apply_contract()\nmodel = torch.nn.Linear(3, 2)\n"
                        "tracer = ctx.trace_modules(model)\ntracer.step(0)\nmodel(torch.zeros(1, 3))\n");
  fs::path single = example_smoke_in(d / "single", [&](nlohmann::json& c) {
    c["trainer"]["command"] = {"/usr/bin/python3", (d / "single.py").string()};
  });
  Result one = lockstep("probe " + single.string() + " --batch-sweep");
  EXPECT_EQ(one.code, 2) << one.output;
  EXPECT_NE(one.output.find(": the helper could not sweep the trainer's model: lockstep batch sweep: the first batch "
                            "holds 1 sample: nothing to split"),
            std::string::npos)
      << one.output;

  // --json never over a file that is not an earlier sweep's (the trainer's script here).
  const std::string script = kExample + "/train.py";
  const std::string before = read_file(script);
  Result over = lockstep("probe " + smoke.string() + " --batch-sweep --json " + script);
  EXPECT_EQ(over.code, 2) << over.output;
  EXPECT_NE(over.output.find("--json"), std::string::npos) << over.output;
  EXPECT_EQ(read_file(script), before);
  fs::remove_all(d);
}

TEST(TrainerCli, AFailingTrainerIsARegressionQuotingItsStderr) {
  fs::path out = out_dir("failing");
  Result r = check_with_bug("no_such_bug", out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("the trainer exited with status 2 in the training pass"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  | train.py: error: PYTORCH_TRAINER_BUG must be one of"), std::string::npos) << r.output;
  fs::remove_all(out);
}

// Fake distributions on the trainer's PYTHONPATH: `fakeaug` (module
// fakeaug, imported at start-up by a sitecustomize, as a trainer imports
// its augmentation library) and `unrelated` (installed, never imported).
struct FakeSite {
  fs::path dir;
  void install(const std::string& fakeaug, const std::string& unrelated) const {
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto dist = [&](const std::string& name, const std::string& version) {
      fs::path info = dir / (name + "-" + version + ".dist-info");
      fs::create_directories(info);
      write_file_atomically((info / "METADATA").string(),
                            "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
      write_file_atomically((info / "top_level.txt").string(), name + "\n");
      write_file_atomically((dir / (name + ".py")).string(), "VERSION = '" + version + "'\n");
    };
    dist("fakeaug", fakeaug);
    if (!unrelated.empty()) dist("unrelated", unrelated);
    write_file_atomically((dir / "sitecustomize.py").string(), "import fakeaug\n");
  }
  std::string env() const { return "PYTHONPATH=" + dir.string(); }
};

// A package upgrade in the trainer's interpreter: a distribution the
// trainer imported changes version between the golden and the run; it is
// determinism-relevant and the first line of the environment diff, in
// check and in `env --diff`. A package the trainer never imports is
// informational: installing or upgrading it keeps the bit-exact lane.
TEST(TrainerCli, AnImportedPackageChangeLeadsTheDiffAndAnUnrelatedOneIsInformational) {
  fs::path d = out_dir("package");
  fs::create_directories(d);
  FakeSite site{d / "site"};
  fs::copy(kExample, d / "example", fs::copy_options::recursive);
  fs::remove_all(d / "example" / "goldens");
  std::string smoke = (d / "example" / "smoke").string(), out = (d / "out").string();
  {
    nlohmann::json cfg = parse_json_file(smoke + "/pytorch-trainer.json");
    trainer_only(cfg);
    write_file_atomically(smoke + "/pytorch-trainer.json", pretty_dump(cfg));
  }
  site.install("1.0.0", "");
  Result b = lockstep("bless " + smoke + " --reason test --out " + out, site.env());
  ASSERT_EQ(b.code, 0) << b.output;
  std::string golden = (d / "example" / "goldens" / "pytorch-trainer").string() + "/" +
                       fs::directory_iterator(d / "example" / "goldens" / "pytorch-trainer")->path().filename().string();
  nlohmann::json fp = parse_json_file(golden)["fingerprint"];
  EXPECT_EQ(fp["python.packages.fakeaug"]["relevant"], true);
  EXPECT_EQ(fp["python.packages.torch"]["relevant"], true);

  // Installed but never imported: informational, the same bits, same stack.
  site.install("1.0.0", "2.0");
  Result same = lockstep("check " + smoke + " --repeat 1 --out " + out, site.env());
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_NE(same.output.find("lane: same-stack"), std::string::npos) << same.output;
  EXPECT_NE(same.output.find("  python.packages.unrelated golden: (missing)"), std::string::npos) << same.output;

  site.install("1.1.0", "2.0");
  Result r = lockstep("check " + smoke + " --repeat 1 --out " + out, site.env());
  EXPECT_EQ(r.code, 0) << r.output;  // the same bits: the cross-stack lane passes, naming the change
  // The first line under the heading names the package, both versions below it.
  size_t heading = r.output.find("environment differences (");
  ASSERT_NE(heading, std::string::npos) << r.output;
  size_t first = r.output.find('\n', heading) + 1;
  std::string line = r.output.substr(first, r.output.find('\n', first) - first);
  EXPECT_EQ(line.rfind("  * python.packages.fakeaug ", 0), 0u) << r.output;
  EXPECT_EQ(line.substr(line.size() - 13), "golden: 1.0.0") << r.output;
  EXPECT_NE(r.output.find("run:    1.1.0", first), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lane: cross-stack"), std::string::npos) << r.output;

  // env --diff (from the smoke's folder: git state is read where the golden was made) lists exactly the fields that differ, the package first:
  // nothing lockstep sets for the run (threads, the contract) is starred.
  Result e = lockstep("env --format json --diff " + golden, site.env(), smoke);
  ASSERT_EQ(e.code, 0) << e.output;
  nlohmann::json diff = nlohmann::json::parse(e.output);
  std::vector<std::string> fields;
  for (const auto& f : diff["differences"]) fields.push_back(f["field"].get<std::string>() + (f["relevant"] ? " *" : ""));
  EXPECT_EQ(fields, (std::vector<std::string>{"python.packages.fakeaug *", "python.packages.unrelated"})) << e.output;
  Result text = lockstep("env --diff " + golden, site.env(), smoke);
  EXPECT_NE(text.output.find("2 difference(s) in "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("\n* python.packages.fakeaug\n      record: 1.0.0\n      here:   1.1.0\n"), std::string::npos)
      << text.output;

  // trainer.packages.relevant pins a package the trainer does not import,
  // .informational unpins one it does; check applies them to the golden too.
  nlohmann::json cfg = parse_json_file(smoke + "/pytorch-trainer.json");
  cfg["trainer"]["packages"] = {{"relevant", {"Unrelated"}}, {"informational", {"fakeaug"}}};
  write_file_atomically(smoke + "/pytorch-trainer.json", pretty_dump(cfg));
  site.install("1.2.0", "2.1");
  Result pinned = lockstep("check " + smoke + " --repeat 1 --out " + out, site.env());
  EXPECT_EQ(pinned.code, 0) << pinned.output;
  EXPECT_NE(pinned.output.find("  * python.packages.unrelated golden: (absent: not installed)"), std::string::npos)
      << pinned.output;
  EXPECT_NE(pinned.output.find("    python.packages.fakeaug   golden: 1.0.0"), std::string::npos) << pinned.output;
  // env --diff applies the smoke's lists too (found beside the goldens), as check does.
  Result pinned_env = lockstep("env --format json --diff " + golden, site.env(), smoke);
  ASSERT_EQ(pinned_env.code, 0) << pinned_env.output;
  nlohmann::json pd = nlohmann::json::parse(pinned_env.output);
  EXPECT_EQ(pd["config"], smoke + "/pytorch-trainer.json");
  std::vector<std::string> pf;
  for (const auto& f : pd["differences"]) pf.push_back(f["field"].get<std::string>() + (f["relevant"] ? " *" : ""));
  EXPECT_EQ(pf, (std::vector<std::string>{"python.packages.unrelated *", "python.packages.fakeaug"})) << pinned_env.output;
  Result wrong = lockstep("env --diff " + golden + " --config " + kSourceDir + "/smoke/wine-mlp.json", site.env());
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("the config of smoke 'wine-mlp', but " + golden + " is a record of smoke "
                              "'pytorch-trainer'"),
            std::string::npos) << wrong.output;
  EXPECT_NE(pinned.output.find("lane: cross-stack"), std::string::npos) << pinned.output;
  fs::remove_all(d);
}

// A trainer whose rendezvous cannot bind its port (here a single process
// joining a Gloo group at a MASTER_PORT of its own choosing, which another
// program holds) fails with the cause named: exit 3, never a regression.
TEST(TrainerCli, APortInUseIsNamedAsTheCause) {
  fs::path d = out_dir("port-clash");
  fs::create_directories(d);
  std::string port_file = (d / "port").string();
  // The holder binds a free port, says which, and keeps it while lockstep runs.
  Result r = shell("(/usr/bin/python3 -c 'import socket, time; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
                   "s.listen(); open(\"" + port_file + ".tmp\", \"w\").write(str(s.getsockname()[1])); "
                   "__import__(\"os\").rename(\"" + port_file + ".tmp\", \"" + port_file + "\"); time.sleep(120)' & "
                   "holder=$!; i=0; while [ ! -s " + port_file + " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
                   "env -u CI PYTORCH_TRAINER_BUG=fixed_master_port PYTORCH_TRAINER_PORT=$(cat " + port_file + ") " +
                   test_paths::lockstep_binary() + " run " + kExampleSmoke + "/pytorch-trainer.json --record " + (d / "run.json").string() +
                   " 2>&1; code=$?; kill $holder; exit $code)");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("its rendezvous could not bind a port that is in use (\"Address already in use\")"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Other processes of the same trainer run at the same time (the data-only pass beside the "
                          "first training pass; check's repeats and resume check with -j). A trainer that picks its "
                          "port itself"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("use init_process_group's env:// rendezvous"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Otherwise another program took the port"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("errno: 98 - Address already in use"), std::string::npos) << r.output;
  fs::remove_all(d);
}

// Without trainer.probes there is no data-only pass: every verdict and
// report says so. "data_only": [] runs the pass with no extra argument
// (the trainer reads LOCKSTEP_PASS).
TEST(TrainerCli, AMissingDataOnlyPassIsSaidAndAnEmptyArgumentListRunsIt) {
  fs::path d = out_dir("no-data-pass");
  fs::path none = example_smoke_in(d / "none", [](nlohmann::json& c) {
    c["trainer"].erase("probes");
    c["trainer"].erase("data_only");
    c.erase("resume_at");
  });
  Result b = lockstep("bless " + none.string() + " --reason test --allow-dirty --out " + (d / "out").string());
  ASSERT_EQ(b.code, 0) << b.output;
  const std::string note = "no data-only pass: " + none.string() + " sets no trainer.probes, so the batches the "
                           "trainer consumed are not checked";
  EXPECT_NE(b.output.find("  note: " + note), std::string::npos) << b.output;
  Result c = lockstep("check " + none.string() + " --out " + (d / "out").string());
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("note: " + note), std::string::npos) << c.output;
  nlohmann::json report = parse_json_file((d / "out" / "pytorch-trainer" / "report.json").string());
  bool said = false;
  for (const auto& n : report["notes"]) said = said || n.get<std::string>().rfind("no data-only pass: ", 0) == 0;
  EXPECT_TRUE(said) << report.dump(2);

  fs::path empty = example_smoke_in(d / "empty", [](nlohmann::json& c) { c["trainer"]["data_only"] = nlohmann::json::array(); });
  Result r = lockstep("run " + empty.string() + " --record " + (d / "run.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(": 10 batches probed, 10 steps"), std::string::npos) << r.output;
  EXPECT_EQ(parse_json_file((d / "run.json").string())["probes"].size(), 10u);
  // --no-data-pass: the training pass alone, a record without data-only probes.
  Result alone = lockstep("run " + empty.string() + " --no-data-pass --record " + (d / "alone.json").string());
  ASSERT_EQ(alone.code, 0) << alone.output;
  nlohmann::json rec = parse_json_file((d / "alone.json").string());
  EXPECT_TRUE(!rec.contains("probes") || rec["probes"].empty()) << alone.output;
  EXPECT_EQ(rec["train_probes"].size(), 10u);
  EXPECT_FALSE(fs::exists(d / "alone.json.trainer" / "data"));
  fs::remove_all(d);
}

// trainer.inputs: a data file the 10 batches never sample (here one the
// trainer does not read at all) changed by one byte is a changed input
// naming the file, though every value is the same; a pattern that matches
// nothing is exit 2 before the trainer runs.
TEST(TrainerCli, AChangedDeclaredDataFileIsAChangedInputNamingTheFile) {
  fs::path d = out_dir("inputs");
  fs::create_directories(d / "data");
  write_file_atomically((d / "data" / "vocab.txt").string(), "a b c\n");
  fs::path smoke = example_smoke_in(d, [&](nlohmann::json& c) {
    trainer_only(c);
    c["trainer"]["inputs"] = {"{data}/digits.csv.gz", (d / "data" / "*.txt").string()};
  });
  Result a = lockstep("run " + smoke.string() + " --record " + (d / "a.json").string());
  ASSERT_EQ(a.code, 0) << a.output;
  write_file_atomically((d / "data" / "vocab.txt").string(), "a b d\n");
  Result b = lockstep("run " + smoke.string() + " --record " + (d / "b.json").string());
  ASSERT_EQ(b.code, 0) << b.output;
  Result cmp = lockstep("compare " + (d / "b.json").string() + " " + (d / "a.json").string());
  EXPECT_EQ(cmp.code, 1) << cmp.output;
  EXPECT_NE(cmp.output.find("input changed: data files of trainer.inputs: " + (d / "data" / "vocab.txt").string() +
                            " changed (xxh3 "),
            std::string::npos) << cmp.output;
  fs::path none = example_smoke_in(d / "none", [](nlohmann::json& c) { c["trainer"]["inputs"] = {"data/*.bin"}; });
  Result refused = lockstep("run " + none.string() + " --record " + (d / "c.json").string());
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find(none.string() + ": trainer.inputs[0]: expected a pattern that matches at least one "
                                "file in "),
            std::string::npos) << refused.output;
  fs::remove_all(d);
}

// An equivalence lane (docs/equivalence.md): the trainer's own --accum 2
// against its base run, no golden needed. A gradient-accumulation bug the
// base run never reaches passes the golden and fails only the lane, at
// train step 0, named.
TEST(TrainerCli, AnAccumulationBugOnlyTheEquivalenceLaneCatchesIsExitOneNamingTheLane) {
  fs::path d = out_dir("lanes");
  // A copy of the example (its golden beside it, trainer.cwd as committed).
  fs::create_directories(d / "ex");
  fs::copy(kExample, d / "ex", fs::copy_options::recursive);
  fs::path smoke = d / "ex" / "smoke" / "pytorch-trainer.json";
  nlohmann::json cfg = parse_json_file(smoke.string());
  cfg.erase("resume_at");
  cfg["equivalence"] = nlohmann::json::parse(R"({"accum2": {"args": ["--accum", "2"], "rule": {"rtol": 1e-6}}})");
  write_file_atomically(smoke.string(), pretty_dump(cfg));
  const std::string check = "check " + smoke.string() + " --repeat 1 --out " + (d / "out").string();
  Result good = lockstep(check);
  EXPECT_EQ(good.code, 0) << good.output;
  // Micro-batches sum in another order: a few float32 ULPs apart, said.
  const size_t note = good.output.find("note: equivalence lane accum2 (trainer args --accum 2): the same as the base "
                                       "run within |a-g| <= 0 + 1e-06*|g| (largest difference rel ");
  ASSERT_NE(note, std::string::npos) << good.output;
  EXPECT_NE(good.output.find("; 120 values compared)\n", note), std::string::npos) << good.output;
  nlohmann::json lane = parse_json_file((d / "out" / "pytorch-trainer" / "variant-accum2.json").string());
  EXPECT_EQ(lane["config"]["variant"], "\"accum2\"") << lane["config"].dump();
  // By hand, `compare` holds a lane's record to its base run as check does.
  const std::string records = (d / "out" / "pytorch-trainer" / "variant-accum2.json").string() + " " +
                              (d / "out" / "pytorch-trainer" / "run-1.json").string();
  Result by_rule = lockstep("compare " + records + " --config " + smoke.string());
  EXPECT_EQ(by_rule.code, 0) << by_rule.output;
  EXPECT_NE(by_rule.output.find("held by equivalence.accum2 of " + smoke.string()), std::string::npos) << by_rule.output;
  Result exact = lockstep("compare " + records);
  EXPECT_NE(exact.output.find("no --config naming lane accum2: held bit for bit"), std::string::npos) << exact.output;
  EXPECT_EQ(exact.output.find("input changed"), std::string::npos) << exact.output;
  Result bad = lockstep(check, "PYTORCH_TRAINER_BUG=accum_unscaled");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("first divergence: equivalence lane accum2 (trainer args --accum 2) differs from the base "
                            "run, held within |a-g| <= 0 + 1e-06*|g|; first difference: train step 0: grad_norm — "
                            "step 0: base run "),
            std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(d / "out" / "pytorch-trainer" / "cpu-x86_64-avx2.golden.new")) << bad.output;
  // The lane by hand: `run --variant`.
  Result by_hand = lockstep("run " + smoke.string() + " --variant accum2 --no-data-pass --record " +
                            (d / "accum2.json").string());
  EXPECT_EQ(by_hand.code, 0) << by_hand.output;
  EXPECT_NE(by_hand.output.find("run pytorch-trainer (equivalence lane accum2)"), std::string::npos) << by_hand.output;
  Result unknown = lockstep("run " + smoke.string() + " --variant accum4");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find(smoke.string() + ": equivalence: expected a lane named \"accum4\" (its lanes: accum2)"),
            std::string::npos) << unknown.output;
  fs::remove_all(d);
}

// trainer.workers runs the data-only pass at each worker count: a bug
// that depends on the count (augmentation from the global `random`, which
// the DataLoader seeds per worker) is exit 4 naming the batch, even when
// it was present at bless time.
TEST(TrainerCli, BatchesThatDependOnTheWorkerCountAreExitFourNamingTheBatch) {
  fs::path d = out_dir("workers");
  fs::path smoke = example_smoke_in(d, [](nlohmann::json& c) {
    c["trainer"]["workers"] = {2, 0};
    c["trainer"]["command"].push_back("--num-workers");
    c["trainer"]["command"].push_back("{workers}");
  });
  Result good = lockstep("probe " + smoke.string() + " --record " + (d / "probe.json").string());
  EXPECT_EQ(good.code, 0) << good.output;
  // check says the worker-count check held (here with no golden yet: exit 2, the note all the same).
  Result first = lockstep("check " + smoke.string() + " --repeat 1 --out " + (d / "out").string());
  EXPECT_EQ(first.code, 2) << first.output;
  EXPECT_NE(first.output.find("note: the data-only pass ran beside run 1 with 2, 0 DataLoader workers: the same "
                              "batches bit for bit"),
            std::string::npos) << first.output;
  // A smoke that stopped without a comparison has its HTML report too.
  EXPECT_TRUE(fs::exists(d / "out" / "pytorch-trainer" / "report.html"));
  Result bad = lockstep("run " + smoke.string() + " --record " + (d / "run.json").string(),
                        "PYTORCH_TRAINER_BUG=global_random");
  EXPECT_EQ(bad.code, 4) << bad.output;
  EXPECT_NE(bad.output.find("the data-only pass with 0 DataLoader workers differs from the one with 2 DataLoader "
                            "workers at batch 0: inputs (xxh3 "),
            std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("Python's global random"), std::string::npos) << bad.output;
  // An order that no seed fixes differs between the passes at one worker
  // count too: the seed is named, not the worker count.
  Result unseeded = lockstep("run " + smoke.string() + " --record " + (d / "run.json").string(),
                             "PYTORCH_TRAINER_BUG=urandom_sampler");
  EXPECT_EQ(unseeded.code, 4) << unseeded.output;
  EXPECT_NE(unseeded.output.find("the training pass and the data-only pass, both with 2 DataLoader workers, differ at "
                                 "batch 0: "),
            std::string::npos) << unseeded.output;
  EXPECT_NE(unseeded.output.find("the batches are not fixed by the seed"), std::string::npos) << unseeded.output;
  fs::remove_all(d);
}

TEST(TrainerCli, ImportReadsAJsonlLogIntoARecordThatCompares) {
  fs::path d = out_dir("import");
  fs::create_directories(d);
  write_file_atomically((d / "a.jsonl").string(), "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": NaN}\n");
  write_file_atomically((d / "b.jsonl").string(), "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": 1.25}\n");
  Result a = lockstep("import jsonl " + (d / "a.jsonl").string() + " --series loss --record " + (d / "a.json").string());
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_NE(a.output.find("import: 1 series, steps 0..1 (2 values) from "), std::string::npos) << a.output;
  Result b = lockstep("import jsonl " + (d / "b.jsonl").string() + " --series loss=loss --record " +
                      (d / "b.json").string());
  ASSERT_EQ(b.code, 0) << b.output;
  Result c = lockstep("compare " + (d / "a.json").string() + " " + (d / "b.json").string());
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_NE(c.output.find("step 1"), std::string::npos) << c.output;
  Result bad = lockstep("import jsonl " + (d / "a.jsonl").string() + " --series lossx --record " + (d / "x.json").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("lossx"), std::string::npos) << bad.output;
  fs::remove_all(d);
}

// Another tool's goldens come along: a Megatron-LM golden-values file and
// the same curve as a torchtitan loss file become records that compare.
TEST(TrainerCli, ImportReadsMegatronAndTorchtitanGoldensIntoRecordsThatCompare) {
  fs::path d = out_dir("import-peers");
  fs::create_directories(d);
  write_file_atomically((d / "golden_values_dev_dgx_h100.json").string(),
                        R"({"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1,
                            "values": {"1": 10.96455, "2": 10.9614, "3": 10.95}},
                            "iteration-time": {"start_step": 1, "end_step": 3, "step_interval": 1,
                            "values": {"1": 1.5, "2": 1.4, "3": 1.4}}})");
  write_file_atomically((d / "loss.txt").string(), "1 10.96455\n2 10.9614\n3 10.96\n");
  Result m = lockstep("import megatron " + (d / "golden_values_dev_dgx_h100.json").string() +
                      " --series 'loss=lm loss' --out " + (d / "m.json").string());
  ASSERT_EQ(m.code, 0) << m.output;
  Result t = lockstep("import torchtitan " + (d / "loss.txt").string() + " --series loss=loss --record " +
                      (d / "t.json").string());
  ASSERT_EQ(t.code, 0) << t.output;
  // Two imports: both fingerprints are the importing machine's, never the
  // curves' own stacks, so the tolerance lane, not a bit-exact one.
  Result c = lockstep("compare " + (d / "t.json").string() + " " + (d / "m.json").string());
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_NE(c.output.find("loss    |a-g| <= 1e-06 + 0.0001*|g|   1/3      0.01 @3"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("lane: cross-stack — the golden's curves were imported from megatron"), std::string::npos)
      << c.output;
  Result bad = lockstep("import megatron " + (d / "loss.txt").string() + " --series 'loss=lm loss' --record " +
                        (d / "x.json").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("loss.txt"), std::string::npos) << bad.output;
  // A resumed run's _2nd file: "nan" before the resume is "not logged",
  // said by import and left out, never NaN values.
  write_file_atomically((d / "golden_values_dev_dgx_h100_2nd.json").string(),
                        R"({"lm loss": {"start_step": 1, "end_step": 5, "step_interval": 1,
                            "values": {"1": "nan", "2": 10.96, "3": "nan", "4": 10.94, "5": 10.93}}})");
  Result second = lockstep("import megatron " + (d / "golden_values_dev_dgx_h100_2nd.json").string() +
                           " --series 'loss=lm loss' --out " + (d / "second.json").string());
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("1 series, steps 2..5 (3 values)"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("note: loss: 2 of 5 steps not logged in the source (\"nan\"): 1, 3; left out, so "
                               "checks compare the logged steps only"),
            std::string::npos) << second.output;
  fs::remove_all(d);
}

// A team's MLflow history becomes a smoke's golden: `import mlflow
// --golden` leaves a pending golden naming the database, `review` shows
// it, `accept --reason` promotes it (no reruns: no lockstep run made it),
// verify-goldens keeps it, and the smoke's run is compared with it in the
// cross-stack lane, where a changed curve fails.
TEST(TrainerCli, AnMlflowRunBecomesASmokesGoldenThroughReviewAndAccept) {
  fs::path d = out_dir("import-golden");
  fs::path smoke = example_smoke_in(d, [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string run = (d / "run.json").string();
  ASSERT_EQ(lockstep("run " + smoke.string() + " --record " + run).code, 0);
  // The same curves as a team's MLflow history: MLflow's tables, written
  // by Python's sqlite3 as MLflow's store would, rows out of step order.
  std::string db = (d / "mlflow.db").string();
  write_file_atomically((d / "make_db.py").string(),
                        "import json, sqlite3, sys\n"
                        "series = json.load(open(sys.argv[2]))['series']\n"
                        "c = sqlite3.connect(sys.argv[1])\n"
                        "c.executescript('''\n"
                        "CREATE TABLE runs (run_uuid VARCHAR(32) PRIMARY KEY, name VARCHAR(250));\n"
                        "CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,\n"
                        "  run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT 0 NOT NULL, is_nan BOOLEAN DEFAULT 0 NOT NULL);\n"
                        "INSERT INTO runs VALUES ('6f1c0a', 'baseline');\n"
                        "''')\n"
                        "for key, name in (('train/loss', 'loss'), ('train/grad_norm', 'grad_norm')):\n"
                        "    for step, v in reversed(list(enumerate(series[name]['values']))):\n"
                        "        c.execute('INSERT INTO metrics VALUES (?, ?, ?, ?, ?, 0)', (key, v, 1000 + step, '6f1c0a', step))\n"
                        "c.commit()\n");
  ASSERT_EQ(shell("python3 " + (d / "make_db.py").string() + " " + db + " " + run).code, 0);
  std::string out = (d / "out").string(), goldens = (d / "goldens").string();
  std::string source = "mlflow " + fs::absolute(db).lexically_normal().string() + " (xxh3 ";
  std::string series = " --series loss=train/loss --series grad_norm=train/grad_norm";

  Result wrong = lockstep("import mlflow " + db + " --run baseline --series lossx=train/loss --golden " + smoke.string());
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("--series: lossx: not a series " + smoke.string() +
                              " records (trainer.metrics.series: grad_norm, loss)"),
            std::string::npos) << wrong.output;
  Result run_for_jsonl = lockstep("import jsonl " + db + " --run baseline --series loss --record " + (d / "x.json").string());
  EXPECT_EQ(run_for_jsonl.code, 2) << run_for_jsonl.output;
  EXPECT_NE(run_for_jsonl.output.find("--run: only for mlflow stores"), std::string::npos) << run_for_jsonl.output;

  Result imported = lockstep("import mlflow " + db + " --run baseline" + series + " --golden " + smoke.string() +
                             " --platform cpu-x86_64-avx2 --out " + out);
  ASSERT_EQ(imported.code, 0) << imported.output;
  EXPECT_TRUE(fs::exists(d / "out" / "pytorch-trainer" / "cpu-x86_64-avx2.golden.new")) << imported.output;
  Result review = lockstep("review " + out + " --goldens " + goldens);
  EXPECT_EQ(review.code, 0) << review.output;
  EXPECT_NE(review.output.find("curves imported from " + source), std::string::npos) << review.output;
  Result accept = lockstep("accept " + out + " --reason 'moved from MLflow' --allow-dirty --goldens " + goldens);
  ASSERT_EQ(accept.code, 0) << accept.output;
  std::string golden_file = goldens + "/pytorch-trainer/cpu-x86_64-avx2.json";
  nlohmann::json golden = parse_json_file(golden_file), record = parse_json_file(run);
  EXPECT_EQ(golden["provenance"]["action"], "accept");
  EXPECT_EQ(golden["provenance"]["runs"], 0);
  EXPECT_EQ(golden["provenance"]["reason"], "moved from MLflow");
  EXPECT_EQ(golden["provenance"]["imported_from"].get<std::string>().rfind(source, 0), 0u) << golden["provenance"];
  EXPECT_EQ(golden["series"]["loss"]["values"], record["series"]["loss"]["values"]);
  EXPECT_EQ(golden["steps"], 10);
  // Filed as the smoke's runs are stamped: its value fields, their hash.
  EXPECT_EQ(golden["config"], record["config"]);
  EXPECT_EQ(golden["fingerprint"]["config.values_xxh3"], record["fingerprint"]["config.values_xxh3"]);
  Result verify = lockstep("verify-goldens " + goldens + " --smoke " + smoke.parent_path().string());
  EXPECT_EQ(verify.code, 0) << verify.output;

  // The smoke's run against the imported golden: the cross-stack lane
  // (no lockstep contract made the golden), where a moved curve fails.
  Result same = lockstep("compare " + run + " " + golden_file + " --config " + smoke.string());
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_NE(same.output.find("cross-stack"), std::string::npos) << same.output;
  // The same run with its loss moved by 1 % at step 2.
  nlohmann::json moved_record = record;
  moved_record["series"]["loss"]["values"][2] = record["series"]["loss"]["values"][2].get<double>() * 1.01;
  write_file_atomically((d / "moved.json").string(), pretty_dump(moved_record));
  Result moved = lockstep("compare " + (d / "moved.json").string() + " " + golden_file + " --config " + smoke.string());
  EXPECT_EQ(moved.code, 1) << moved.output;
  EXPECT_NE(moved.output.find("step 2"), std::string::npos) << moved.output;
  // A value field of the smoke changed since the import is a changed input,
  // named, as against any golden.
  nlohmann::json cfg = parse_json_file(smoke.string());
  cfg["seed"] = cfg["seed"].get<uint64_t>() + 1;
  write_file_atomically(smoke.string(), pretty_dump(cfg));
  std::string reseeded = (d / "reseeded.json").string();
  ASSERT_EQ(lockstep("run " + smoke.string() + " --record " + reseeded).code, 0);
  Result changed = lockstep("compare " + reseeded + " " + golden_file + " --config " + smoke.string());
  EXPECT_EQ(changed.code, 1) << changed.output;
  EXPECT_NE(changed.output.find("input changed: smoke config pytorch-trainer: seed " +
                                std::to_string(cfg["seed"].get<uint64_t>() - 1) + " → " +
                                std::to_string(cfg["seed"].get<uint64_t>())),
            std::string::npos) << changed.output;
  fs::remove_all(d);
}

// Sixteen nights of the example trainer, each checked with --history: the
// stack alternates between CPU capabilities night by night, and from night
// 10 a silent lr drift of growing size (PYTORCH_TRAINER_LR_DRIFT, nothing
// lockstep is told of) moves the curves. The history names night 10 as the
// first change on a stack seen before, with that night's stack delta, and
// classifies the end as the data says; a hand-edited line is exit 2
// naming it, and skipped with --skip-bad.
TEST(TrainerCli, NightsOfHistoryNameTheNightADriftBegan) {
  constexpr int kNights = 16, kDriftFrom = 10;
  fs::path d = out_dir("history");
  // Blessed on AVX2, the odd nights' capability (the machine's own may be
  // AVX512 under torch 2.x), and every night held to the tolerances, its
  // own stack's too: the uses are read night by night on both stacks.
  fs::path smoke = example_smoke_in(d, [](nlohmann::json& c) {
    trainer_only(c);
    c["tolerance"]["same_stack"] = "tolerance";
  });
  std::string out = (d / "out").string(), hist = (d / "history").string();
  ASSERT_EQ(lockstep("bless " + smoke.string() + " --reason base --allow-dirty --out " + out, "ATEN_CPU_CAPABILITY=avx2")
                .code,
            0);
  std::vector<int> codes;
  for (int n = 1; n <= kNights; ++n) {
    std::string env = std::string("ATEN_CPU_CAPABILITY=") + (n % 2 ? "avx2" : "default");
    if (n >= kDriftFrom) env += " PYTORCH_TRAINER_LR_DRIFT=" + std::to_string(2e-4 * (n - kDriftFrom + 1));
    Result r = lockstep("check " + smoke.string() + " --repeat 1 --out " + out + " --history " + hist, env);
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "night " << n << "\n" << r.output;
    codes.push_back(r.code);
  }
  EXPECT_EQ(std::count(codes.begin(), codes.begin() + kDriftFrom - 1, 0), kDriftFrom - 1) << "nights before the drift pass";
  std::string page = (d / "history.html").string(), json = (d / "history.json").string();
  Result h = lockstep("history " + hist + " --html " + page + " --json " + json);
  ASSERT_EQ(h.code, 0) << h.output;
  EXPECT_NE(h.output.find("history: pytorch-trainer: 16 nights"), std::string::npos) << h.output;
  EXPECT_NE(h.output.find("first changed on a stack seen before: night 10 ("), std::string::npos) << h.output;
  size_t first = h.output.find("first changed on a stack seen before: night 10 (");
  std::string line = first == std::string::npos ? "" : h.output.substr(first, h.output.find('\n', first) - first);
  EXPECT_NE(line.find("; that night: stack: cpu.capability: AVX2 → "), std::string::npos) << line;
  EXPECT_NE(line.find("env.ATEN_CPU_CAPABILITY: avx2 → default"), std::string::npos) << line;
  nlohmann::json report = parse_json_file(json);
  const nlohmann::json& smoke_history = report["smokes"][0];
  const nlohmann::json* loss = nullptr;
  for (const auto& m : smoke_history["metrics"])
    if (m["name"] == "loss") loss = &m;
  ASSERT_NE(loss, nullptr);
  EXPECT_EQ((*loss)["first_change"], kDriftFrom - 1);
  // The class the data says: the uses of the last nights.
  std::vector<double> use;
  for (const auto& u : (*loss)["use"]) use.push_back(u.is_null() ? -1 : u.is_string() ? 1e300 : u.get<double>());
  ASSERT_EQ(use.size(), static_cast<size_t>(kNights));
  // Before the drift: bit-identical to the golden on its stack (odd nights),
  // one and the same small use on the other capability (even nights).
  for (int n = 0; n < kDriftFrom - 1; ++n) EXPECT_EQ(use[n], n % 2 == 0 ? 0 : use[1]) << "night " << n + 1;
  EXPECT_GT(use[1], 0);
  EXPECT_LT(use[1], 1);
  const size_t last = kNights - 1;
  bool regression = use[last - 1] > 1 && use[last] > 1;
  bool rising = use[last - 4] < use[last - 3] && use[last - 3] < use[last - 2] && use[last - 2] < use[last - 1] &&
                use[last - 1] < use[last];
  EXPECT_TRUE(regression || rising) << (*loss).dump();
  EXPECT_EQ((*loss)["class"], regression ? "regression" : "drifting") << (*loss).dump();
  // The page: a trend plot per metric, the change-point table with night 10.
  std::string html = read_file(page);
  EXPECT_NE(html.find("<svg class=\"trend\""), std::string::npos);
  EXPECT_NE(html.find("<tr><td>10</td>"), std::string::npos);
  EXPECT_NE(html.find("loss (on a stack seen before)"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);

  // A hand-edited line: exit 2 naming file and line; --skip-bad reads the rest.
  std::string ledger = hist + "/pytorch-trainer.jsonl";
  std::string text = read_file(ledger);
  size_t second = text.find('\n') + 1;
  text.replace(text.find("\"exit\":", second), 8, "\"exit\":9");
  write_file_atomically(ledger, text);
  Result bad = lockstep("history " + hist);
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find(ledger + ": line 2: exit: expected an integer in [0, 4], got 9; `lockstep history " + hist +
                            " --skip-bad` reads the other lines, naming each one it leaves out\n"),
            std::string::npos)
      << bad.output;
  Result skipped = lockstep("history " + hist + " --skip-bad");
  EXPECT_EQ(skipped.code, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("15 nights"), std::string::npos) << skipped.output;
  EXPECT_NE(skipped.output.find("skipped: " + ledger + ": line 2"), std::string::npos) << skipped.output;
  fs::remove_all(d);
}

// A cancelled CI job (SIGTERM to lockstep) must not leave the trainer
// running: lockstep kills the trainers' process groups, then dies of the
// same signal. SIGKILL cannot be caught: the trainer dies with lockstep all
// the same (PR_SET_PDEATHSIG), here under `check`.
TEST(TrainerCli, ACancelledLockstepTakesItsTrainersWithIt) {
  struct Case {
    const char* sig;
    int status;
    const char* command;
    const char* trainer;  ///< the trainer's shell script; PIDFILE is where it says which pid must die
  };
  // The last case is a wrapper: the process that must die is its child, out
  // of reach of PR_SET_PDEATHSIG, which the process runner's watcher covers.
  for (const Case& c : {Case{"TERM", 128 + SIGTERM, " run cancelled.json --record r.json", "echo $$ > PIDFILE; exec sleep 300"},
                        Case{"INT", 128 + SIGINT, " run cancelled.json --record r.json", "echo $$ > PIDFILE; exec sleep 300"},
                        Case{"INT", 128 + SIGINT, " check cancelled.json --out out", "echo $$ > PIDFILE; exec sleep 300"},
                        Case{"KILL", 128 + SIGKILL, " check cancelled.json --out out", "echo $$ > PIDFILE; exec sleep 300"},
                        Case{"KILL", 128 + SIGKILL, " check cancelled.json --out out",
                             "sleep 300 & echo $! > PIDFILE; wait"}}) {
    const std::string sig = c.sig;
    fs::path d = out_dir(std::string("signal-") + sig + (std::string(c.trainer).rfind("sleep", 0) == 0 ? "-child" : ""));
    fs::create_directories(d);
    std::string pidfile = (d / "trainer.pid").string();
    std::string script = c.trainer;
    script.replace(script.find("PIDFILE"), 7, "'" + pidfile + "'");
    nlohmann::json cfg = {
        {"name", "cancelled"}, {"seed", 1}, {"steps", 2},
        {"trainer", {{"command", {"sh", "-c", script}},
                     {"timeout_s", 600},
                     {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
    write_file_atomically((d / "cancelled.json").string(), pretty_dump(cfg));
    // In the background, so the shell can signal it once the trainer is up;
    // the shell itself in the folder (not `cd && lockstep &`, which would
    // change only the background job's folder), so it reads the pid file.
    Result r = shell("cd '" + d.string() + "' || exit 9; " + test_paths::lockstep_binary() + c.command + " 2>&1 & lp=$!; " +
                     "i=0; while [ ! -s trainer.pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; " +
                     "[ -s trainer.pid ] || echo \"trainer never started\"; " +
                     "kill -" + sig + " $lp; wait $lp; echo \"lockstep status $?\"; tp=$(cat trainer.pid); " +
                     "i=0; while kill -0 $tp 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; " +
                     "if kill -0 $tp 2>/dev/null; then echo \"trainer alive\"; kill -9 $tp; else echo \"trainer gone\"; fi");
    EXPECT_NE(r.output.find("lockstep status " + std::to_string(c.status)), std::string::npos) << sig << r.output;
    EXPECT_EQ(r.output.find("trainer never started"), std::string::npos) << sig << r.output;
    EXPECT_NE(r.output.find("trainer gone"), std::string::npos) << sig << r.output;
    EXPECT_FALSE(fs::exists(d / "r.json")) << sig;
    // A signal that can be caught is said, once (check's front only: its
    // runs die of SIGKILL); SIGKILL cannot be.
    const std::string said = "lockstep: stopped by SIG" + sig + ": the runs and trainers it started were killed; no "
                             "verdict\n";
    const size_t at = r.output.find(said);
    if (sig == "KILL") {
      EXPECT_EQ(r.output.find("lockstep: stopped by"), std::string::npos) << r.output;
    } else {
      EXPECT_NE(at, std::string::npos) << sig << r.output;
      EXPECT_EQ(r.output.find(said, at + 1), std::string::npos) << sig << r.output;
    }
    fs::remove_all(d);
  }
}

// A built-in run stopped by a signal, no trainer in it: the line says so
// without naming runs it never started, and the record is not written.
TEST(TrainerCli, ABuiltInRunStoppedByASignalSaysSo) {
  fs::path d = out_dir("signal-builtin");
  fs::create_directories(d);
  nlohmann::json cfg = nlohmann::json::parse(read_file(test_paths::source_dir() + "/smoke/tokens-transformer.json"));
  cfg["steps"] = 100000;  // far longer than the 2 s before the signal
  cfg.erase("resume_at");
  write_file_atomically((d / "long.json").string(), pretty_dump(cfg));
  Result r = shell("cd '" + d.string() + "' || exit 9; " + test_paths::lockstep_binary() +
                   " run long.json --record r.json 2>&1 & lp=$!; sleep 2; kill -TERM $lp; wait $lp; "
                   "echo \"lockstep status $?\"");
  EXPECT_NE(r.output.find("lockstep: stopped by SIGTERM; no verdict\nlockstep status " + std::to_string(128 + SIGTERM)),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(d / "r.json"));
  fs::remove_all(d);
}

// check --rerun-failing on a runner that is nondeterministic (the example's
// nondeterministic_op switch, set in the runner's environment, not the
// config): the run fails its exact golden, the rerun differs from it, so
// the verdict is exit 4 naming the runner, not a regression.
TEST(TrainerCli, ARerunThatDiffersNamesTheNondeterministicRunner) {
  fs::path d = out_dir("rerun");
  fs::path smoke = example_smoke_in(d, [](nlohmann::json& c) {
    c.erase("resume_at");
    c["tolerance"] = {{"series", {{"default", {{"exact", true}}}}}, {"probes", {{"default", {{"exact", true}}}}}};
  });
  std::string out = (d / "out").string();
  ASSERT_EQ(lockstep("bless " + smoke.parent_path().string() + " --reason base --out " + out).code, 0);
  Result r = lockstep("check " + smoke.parent_path().string() + " --repeat 1 --rerun-failing 1 --out " + out,
                      "PYTORCH_TRAINER_BUG=nondeterministic_op CI_RUNNER_DESCRIPTION=gpu-7 CI_RUNNER_ID=42");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("nondeterministic on ci runner gpu-7 (#42): rerun 1 of 1 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("differs from the failing run bit for bit"), std::string::npos) << r.output;
  fs::remove_all(d);
}

}  // namespace
// The data-only pass's control on a team's trainer: the helper moves the
// first sample of the data pass's first batch (a float one ULP, in the
// DataLoader's worker) through ctx.register_loader. The committed example
// catches it at data batch 0; with its probes taken from the images as
// read (PYTORCH_TRAINER_BUG=probe_raw_images) the move passes unseen and
// selftest says INSENSITIVE, exit 1.
TEST(TrainerCli, SelftestsDataControlCatchesAMovedSampleAndNamesABlindDataPass) {
  fs::path d = out_dir("selftest-data");
  fs::path smoke = example_smoke_in(d, [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string cmd = "selftest " + smoke.string() + " --out " + (d / "out").string() + " --distinct-runs 2";
  Result r = lockstep(cmd);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("selftest pytorch-trainer: sensitive (it catches a planted one-ULP change of a parameter "
                          "and of a data sample)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  planted change (conv1.weight[0], one ULP towards +inf before step 0): caught"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(the first sample of the data-only pass's first batch): sample[0], a float32 tensor of "
                          "shape [1, 8, 8]: its element 0 one ULP towards +inf): caught — data batch 0: inputs (xxh3 "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\nselftest: 1 smoke, 1 sensitive, 0 INSENSITIVE (exit 0)\n"), std::string::npos) << r.output;
  nlohmann::json moved = parse_json_file((d / "out" / "pytorch-trainer" / "selftest-perturbed-data.json").string());
  nlohmann::json base = parse_json_file((d / "out" / "pytorch-trainer" / "selftest-base.json").string());
  EXPECT_EQ(moved["series"], base["series"]);  // the training pass is untouched
  EXPECT_EQ(moved["probes"][1], base["probes"][1]);
  EXPECT_NE(moved["probes"][0]["inputs"], base["probes"][0]["inputs"]);
  EXPECT_EQ(moved["probes"][0]["labels"], base["probes"][0]["labels"]);

  r = lockstep(cmd, "PYTORCH_TRAINER_BUG=probe_raw_images");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("selftest pytorch-trainer: INSENSITIVE (a planted change went unseen: see the notes)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("its element 0 one ULP towards +inf): NOT caught\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note: the data-only pass's probes were bit-identical although a sample moved"),
            std::string::npos)
      << r.output;
  fs::remove_all(d);
}

// The negative control of a team's trainer: the helper's ModuleTracer
// moves the first parameter by one ULP at step 0; the float32 loss and
// the gradient norm of step 0 hold, the per-step gradient digest does not
// (torchtitan's case: the loss held, the hashes moved), and the trace
// names conv1.
TEST(TrainerCli, SelftestCatchesAOneUlpChangeTheLossHidesThroughTheDigests) {
  fs::path d = out_dir("selftest");
  fs::path smoke = example_smoke_in(d, trainer_only);
  Result r = lockstep("selftest " + smoke.string() + " --out " + (d / "out").string() + " --distinct-runs 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("selftest pytorch-trainer: sensitive (it catches a planted one-ULP change of a parameter)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("located in module conv1 — train step 0, forward, conv1: input identical, output differs"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the metrics first moved at train step 0: digests.grads — the gradients' bytes (after "
                          "backward) first differ at step 0"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 runs: "), std::string::npos) << r.output;
  nlohmann::json base = parse_json_file((d / "out" / "pytorch-trainer" / "selftest-base.json").string());
  EXPECT_EQ(base["digests"]["params"].size(), 10u);
  fs::remove_all(d);
}

}  // namespace lockstep::cli_test
