// A team's own Python trainer gated end to end (docs/trainers.md): the
// example in examples/pytorch-trainer/ (a real PyTorch trainer on Debian's
// python3-torch) checked against its committed golden, the field's usual
// bugs caught with the right exit class and location, a failing trainer
// quoted, and `lockstep import`.
#include <gtest/gtest.h>

#include <csignal>
#include <functional>

#include "cli/cli_helpers.h"
#include "core/json_io.h"

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
Result check_with_bug(const std::string& bug, const fs::path& out) {
  return lockstep("check " + kExampleSmoke + " --out " + out.string(), "PYTORCH_TRAINER_BUG=" + bug);
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
  EXPECT_TRUE(fs::exists(out / "pytorch-trainer" / "report.md")) << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, TheHelpersModuleTraceIsInTheRecordAndRepeatsBitForBit) {
  fs::path out = out_dir("trace");
  std::string rec = (out / "run.json").string();
  Result r = lockstep("run " + kExampleSmoke + "/pytorch-trainer.json --repeat 2 --out " + rec);
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

TEST(TrainerCli, WorkerInitFnRemovedIsARegressionAtADataBatch) {
  fs::path out = out_dir("worker-init");
  Result r = check_with_bug("no_worker_init_fn", out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: data batch 0"), std::string::npos) << r.output;
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
  EXPECT_NE(r.output.find("run 2 differs from run 1 in the same job"), std::string::npos) << r.output;
  // The op sits in Net.forward, outside the traced modules: the first
  // traced module to see other values is conv2, in backward, and it says
  // the cause is upstream of it.
  EXPECT_NE(r.output.find("first difference: train step 0, backward, conv2: input differs too, output differs ("),
            std::string::npos)
      << r.output;
  fs::remove_all(out);
}

TEST(TrainerCli, AFailingTrainerIsARegressionQuotingItsStderr) {
  fs::path out = out_dir("failing");
  Result r = check_with_bug("no_such_bug", out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("the trainer exited with status 2 in the data-only pass"), std::string::npos) << r.output;
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
  Result same = lockstep("check " + smoke + " --out " + out, site.env());
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_NE(same.output.find("lane: same-stack"), std::string::npos) << same.output;
  EXPECT_NE(same.output.find("  python.packages.unrelated golden: (missing)"), std::string::npos) << same.output;

  site.install("1.1.0", "2.0");
  Result r = lockstep("check " + smoke + " --out " + out, site.env());
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
  Result e = lockstep("env --json --diff " + golden, site.env(), smoke);
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
  Result pinned = lockstep("check " + smoke + " --out " + out, site.env());
  EXPECT_EQ(pinned.code, 0) << pinned.output;
  EXPECT_NE(pinned.output.find("  * python.packages.unrelated golden: (absent: not installed)"), std::string::npos)
      << pinned.output;
  EXPECT_NE(pinned.output.find("    python.packages.fakeaug   golden: 1.0.0"), std::string::npos) << pinned.output;
  // env --diff applies the smoke's lists too (found beside the goldens), as check does.
  Result pinned_env = lockstep("env --json --diff " + golden, site.env(), smoke);
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
                   LOCKSTEP_BINARY + " run " + kExampleSmoke + "/pytorch-trainer.json --out " + (d / "run.json").string() +
                   " 2>&1; code=$?; kill $holder; exit $code)");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("its rendezvous could not bind a port that is in use (\"Address already in use\")"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("The data-only pass runs beside the training pass. A trainer that picks its port itself"),
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
  Result r = lockstep("run " + empty.string() + " --out " + (d / "run.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(": 10 batches probed, 10 steps"), std::string::npos) << r.output;
  EXPECT_EQ(parse_json_file((d / "run.json").string())["probes"].size(), 10u);
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
  Result good = lockstep("probe " + smoke.string() + " --out " + (d / "probe.json").string());
  EXPECT_EQ(good.code, 0) << good.output;
  // check says the worker-count check held (here with no golden yet: exit 2, the note all the same).
  Result first = lockstep("check " + smoke.string() + " --repeat 1 --out " + (d / "out").string());
  EXPECT_EQ(first.code, 2) << first.output;
  EXPECT_NE(first.output.find("note: the data-only pass ran with 2, 0 DataLoader workers in every run: the same "
                              "batches bit for bit"),
            std::string::npos) << first.output;
  // A smoke that stopped without a comparison has its HTML report too.
  EXPECT_TRUE(fs::exists(d / "out" / "pytorch-trainer" / "report.html"));
  Result bad = lockstep("run " + smoke.string() + " --out " + (d / "run.json").string(),
                        "PYTORCH_TRAINER_BUG=global_random");
  EXPECT_EQ(bad.code, 4) << bad.output;
  EXPECT_NE(bad.output.find("the data-only pass with 0 DataLoader workers differs from the one with 2 DataLoader "
                            "workers at batch 0: inputs (xxh3 "),
            std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("Python's global random"), std::string::npos) << bad.output;
  fs::remove_all(d);
}

TEST(TrainerCli, ImportReadsAJsonlLogIntoARecordThatCompares) {
  fs::path d = out_dir("import");
  fs::create_directories(d);
  write_file_atomically((d / "a.jsonl").string(), "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": NaN}\n");
  write_file_atomically((d / "b.jsonl").string(), "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": 1.25}\n");
  Result a = lockstep("import jsonl " + (d / "a.jsonl").string() + " --series loss --out " + (d / "a.json").string());
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_NE(a.output.find("import: 1 series over 2 steps"), std::string::npos) << a.output;
  Result b = lockstep("import jsonl " + (d / "b.jsonl").string() + " --series loss=loss --out " +
                      (d / "b.json").string());
  ASSERT_EQ(b.code, 0) << b.output;
  Result c = lockstep("compare " + (d / "a.json").string() + " " + (d / "b.json").string());
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_NE(c.output.find("step 1"), std::string::npos) << c.output;
  Result bad = lockstep("import jsonl " + (d / "a.jsonl").string() + " --series lossx --out " + (d / "x.json").string());
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
  write_file_atomically((d / "loss.txt").string(), "1 10.96455\n2 10.9614\n3 10.951\n");
  Result m = lockstep("import megatron " + (d / "golden_values_dev_dgx_h100.json").string() +
                      " --series 'loss=lm loss' --out " + (d / "m.json").string());
  ASSERT_EQ(m.code, 0) << m.output;
  Result t = lockstep("import torchtitan " + (d / "loss.txt").string() + " --series loss=loss --out " +
                      (d / "t.json").string());
  ASSERT_EQ(t.code, 0) << t.output;
  Result c = lockstep("compare " + (d / "t.json").string() + " " + (d / "m.json").string());
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_NE(c.output.find("step 3"), std::string::npos) << c.output;
  Result bad = lockstep("import megatron " + (d / "loss.txt").string() + " --series 'loss=lm loss' --out " +
                        (d / "x.json").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("loss.txt"), std::string::npos) << bad.output;
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
  for (const Case& c : {Case{"TERM", 128 + SIGTERM, " run cancelled.json --out r.json", "echo $$ > PIDFILE; exec sleep 300"},
                        Case{"INT", 128 + SIGINT, " run cancelled.json --out r.json", "echo $$ > PIDFILE; exec sleep 300"},
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
                     {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}}}}}}}};
    write_file_atomically((d / "cancelled.json").string(), pretty_dump(cfg));
    // In the background, so the shell can signal it once the trainer is up.
    Result r = shell("cd '" + d.string() + "' && " + LOCKSTEP_BINARY + c.command + " & lp=$!; " +
                     "i=0; while [ ! -s trainer.pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; " +
                     "kill -" + sig + " $lp; wait $lp; echo \"lockstep status $?\"; tp=$(cat trainer.pid); " +
                     "i=0; while kill -0 $tp 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; " +
                     "if kill -0 $tp 2>/dev/null; then echo \"trainer alive\"; kill -9 $tp; else echo \"trainer gone\"; fi");
    EXPECT_NE(r.output.find("lockstep status " + std::to_string(c.status)), std::string::npos) << sig << r.output;
    EXPECT_NE(r.output.find("trainer gone"), std::string::npos) << sig << r.output;
    EXPECT_FALSE(fs::exists(d / "r.json")) << sig;
    fs::remove_all(d);
  }
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
}  // namespace lockstep::cli_test
