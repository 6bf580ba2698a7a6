// `lockstep bisect` end to end: a real git repository of 40 commits around
// the wine-mlp smoke, real runs, the commit that changed the learning rate
// named, a re-blessed golden never read, the repository left as it was.
#include <gtest/gtest.h>

#include "cli/cli_helpers.h"
#include "test_paths.h"

namespace lockstep {
namespace {
using namespace cli_test;

void git(const fs::path& repo, const std::string& args) {
  Result r = shell("git -C '" + repo.string() + "' -c user.name=Ann -c user.email=ann@example.org " + args);
  ASSERT_EQ(r.code, 0) << args << "\n" << r.output;
}

TEST(BisectCli, NamesTheCommitThatChangedTheLearningRate) {
  fs::path d = scratch("bisect", [](nlohmann::json& c) { c.erase("resume_at"); }, kSourceDir + "/smoke/wine-mlp.json");
  std::string smoke = (d / "smoke" / "wine-mlp.json").string();
  nlohmann::json cfg = parse_json_file(smoke);
  const double lr = cfg["optimizer"]["lr"].get<double>();
  git(d, "init -q -b main");
  for (int k = 0; k < 40; ++k) {
    if (k == 23) cfg["optimizer"]["lr"] = lr * (1 + 1e-4);  // the change to find
    write_file_atomically(smoke, pretty_dump(cfg));
    write_file_atomically((d / "log.txt").string(), "commit " + std::to_string(k) + "\n");
    if (k == 31) {  // a golden re-blessed inside the range: bisect must never read it
      fs::create_directories(d / "goldens" / "wine-mlp");
      write_file_atomically((d / "goldens" / "wine-mlp" / "cpu-x86_64-avx2.json").string(), "{ not json");
    }
    git(d, "add -A");
    git(d, "commit -q -m 'commit " + std::to_string(k) + "'");
  }
  Result head = shell("git -C '" + d.string() + "' rev-parse HEAD~16");
  std::string c23 = head.output.substr(0, 7);
  std::string json = (d.parent_path() / (d.filename().string() + ".json")).string();
  std::string out = (d.parent_path() / (d.filename().string() + "-out")).string();
  Result r = lockstep("bisect --good HEAD~39 --bad HEAD smoke/wine-mlp.json --json " + json + " --out " + out, "",
                      d.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("bisect: first bad commit: " + c23 + " commit 23 (Ann <ann@example.org>, "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("input changed: smoke config wine-mlp: optimizer.lr"), std::string::npos) << r.output;
  nlohmann::json j = parse_json_file(json);
  EXPECT_EQ(j["first_bad"]["subject"], "commit 23");
  EXPECT_LE(j["steps"].size(), 8u);
  EXPECT_TRUE(j["skipped"].empty());
  Result status = shell("git -C '" + d.string() + "' status --porcelain");
  EXPECT_EQ(status.output, "");
  fs::remove(json);
  fs::remove_all(out);
}

TEST(BisectCli, RefusesWhatItCannotBisect) {
  Result outside = lockstep("bisect --good HEAD~1 --bad HEAD --repo /");
  EXPECT_EQ(outside.code, 2) << outside.output;
  EXPECT_NE(outside.output.find("/: not in a git repository"), std::string::npos) << outside.output;
  Result missing = lockstep("bisect --bad HEAD");
  EXPECT_EQ(missing.code, 2) << missing.output;
}

// bisect-env with real runs: of four differences between two stacks, the
// CPU capability moves the digits-cnn curve (held exact here), alone.
TEST(BisectCli, BisectEnvNamesTheOneDifferenceThatMovesTheCurve) {
  fs::path d = scratch("bisect-env", [](nlohmann::json& c) {
    c.erase("resume_at");
    c["tolerance"] = {{"series", {{"default", {{"exact", true}}}}}, {"probes", {{"default", {{"exact", true}}}}}};
  });
  write_file_atomically((d / "good.json").string(),
                        R"({"env": {"ATEN_CPU_CAPABILITY": "avx2", "LANG": "C.UTF-8", "FOO": "1"}})");
  write_file_atomically((d / "bad.json").string(),
                        R"({"env": {"ATEN_CPU_CAPABILITY": "default", "LANG": "en_US.UTF-8", "BAR": "2"}})");
  std::string json = (d / "be.json").string();
  Result r = lockstep("bisect-env --good-env good.json --bad-env bad.json smoke/digits-cnn.json --json " + json +
                          " --out " + (d / "out").string(),
                      "", d.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("bisect-env: the curve moves with {ATEN_CPU_CAPABILITY=default} alone"), std::string::npos)
      << r.output;
  nlohmann::json j = parse_json_file(json);
  EXPECT_EQ(j["differences"].size(), 4u);
  EXPECT_LE(j["runs"].get<int>(), 2 * 4 * 2);  // 2 x differences x log2(differences)
}

// With the team trainer: a Python folder whose sitecustomize scales the
// learning rate only when SHIFT=1 is set too; bisect-env names the pair.
TEST(BisectCli, BisectEnvNamesTwoDifferencesThatOnlyMoveTheCurveTogether) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-bisect-env-pair-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "site");
  write_file_atomically((d / "site" / "sitecustomize.py").string(),
                        "import os\n"
                        "if os.environ.get('SHIFT') == '1':\n"
                        "    import torch.optim\n"
                        "    _SGD = torch.optim.SGD\n"
                        "    class SGD(_SGD):\n"
                        "        def __init__(self, params, lr=0.001, *a, **k):\n"
                        "            super().__init__(params, lr * 1.01, *a, **k)\n"
                        "    torch.optim.SGD = SGD\n");
  write_file_atomically((d / "good.json").string(), R"({"env": {"SHIFT": "0", "NOISE": "a"}})");
  write_file_atomically((d / "bad.json").string(),
                        R"({"env": {"SHIFT": "1", "NOISE": "b"}, "python_path": [")" + (d / "site").string() + R"("]})");
  // The example trainer, shortened (4 steps, no resume check): the pair
  // moves the curve from the first step on.
  nlohmann::json smoke = parse_json_file(kSourceDir + "/examples/pytorch-trainer/smoke/pytorch-trainer.json");
  smoke["steps"] = 4;
  smoke.erase("resume_at");
  smoke.erase("platforms");
  smoke["trainer"]["cwd"] = kSourceDir + "/examples/pytorch-trainer";
  write_file_atomically((d / "pytorch-trainer.json").string(), pretty_dump(smoke));
  Result r = lockstep("bisect-env --good-env good.json --bad-env bad.json --repeat 1 " +
                          (d / "pytorch-trainer.json").string() + " --out " + (d / "out").string(),
                      "", d.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("bisect-env: the curve moves with {SHIFT=1, Python folder " + (d / "site").string() +
                          "} together"),
            std::string::npos)
      << r.output;
  fs::remove_all(d);
}

// A cancelled bisect (SIGTERM, as a cancelled CI job) kills what runs,
// removes its temporary folders and ends by the signal.
TEST(BisectCli, ACancelledBisectLeavesNoTemporaryFolder) {
  fs::path d = scratch("bisect-term", [](nlohmann::json& c) { c.erase("resume_at"); }, kSourceDir + "/smoke/wine-mlp.json");
  fs::path tmp = d.parent_path() / (d.filename().string() + "-tmp");
  fs::create_directories(tmp);
  git(d, "init -q -b main");
  for (int k = 0; k < 3; ++k) {
    write_file_atomically((d / "log.txt").string(), std::to_string(k));
    git(d, "add -A");
    git(d, "commit -q -m c" + std::to_string(k));
  }
  Result r = shell("cd '" + d.string() + "' && (env -u CI TMPDIR='" + tmp.string() + "' " + test_paths::lockstep_binary() +
                   " bisect --good HEAD~2 --bad HEAD --build 'sleep 61.5' --out '" + (d / "out").string() +
                   "' & pid=$!; sleep 2; kill -TERM $pid; wait $pid; echo \"rc=$?\")");
  EXPECT_NE(r.output.find("rc=143"), std::string::npos) << r.output;  // 128 + SIGTERM
  EXPECT_TRUE(fs::is_empty(tmp)) << r.output;
  Result sleeping = shell("pgrep -f '^sleep 61.5' | wc -l");
  EXPECT_EQ(sleeping.output, "0\n");
  fs::remove_all(tmp);
}

// env --diff --write-envs: a record made under another CPU capability, diffed
// here, gives the two environment files bisect-env searches.
TEST(BisectCli, EnvDiffWritesThePairBisectEnvSearches) {
  fs::path d = scratch("env-pair", [](nlohmann::json& c) {
    c.erase("resume_at");
    c["tolerance"] = {{"series", {{"default", {{"exact", true}}}}}, {"probes", {{"default", {{"exact", true}}}}}};
  });
  std::string record = (d / "golden-like.json").string();
  ASSERT_EQ(lockstep("run smoke/digits-cnn.json --quiet --record " + record, "ATEN_CPU_CAPABILITY=default", d.string()).code, 0);
  Result diff = lockstep("env --diff " + record + " --write-envs good.json bad.json", "ATEN_CPU_CAPABILITY=avx2", d.string());
  ASSERT_EQ(diff.code, 0) << diff.output;
  EXPECT_NE(diff.output.find("settable difference(s): the record's values to good.json, this machine's to bad.json"),
            std::string::npos)
      << diff.output;
  EXPECT_EQ(parse_json_file((d / "good.json").string())["env"]["ATEN_CPU_CAPABILITY"], "default");
  EXPECT_EQ(parse_json_file((d / "bad.json").string())["env"]["ATEN_CPU_CAPABILITY"], "avx2");
  Result r = lockstep("bisect-env --good-env good.json --bad-env bad.json smoke/digits-cnn.json --out out", "", d.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("the curve moves with {ATEN_CPU_CAPABILITY=avx2} alone"), std::string::npos) << r.output;
  // An existing file that is not an environment file is never replaced.
  Result refused = lockstep("env --diff " + record + " --write-envs smoke/digits-cnn.json bad.json", "", d.string());
  EXPECT_EQ(refused.code, 2) << refused.output;
}

}  // namespace
}  // namespace lockstep
