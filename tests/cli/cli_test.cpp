// End-to-end tests through the lockstep executable, as CI and users run it.
// They train the digits smoke on the real data (ci/fetch-data.sh), so each
// `lockstep run` takes about a second; a blessed golden is shared by the
// tests of one suite.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <fstream>
#include <map>

#include "cli/cli_helpers.h"
#include "core/atomic_file.h"
#include "core/float_bits.h"
#include "core/json_io.h"
#include "test_paths.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using namespace cli_test;

// The suite's blessed golden: a scratch project with smoke/digits-cnn.json
// blessed once. Under CTest the fixture test CliGoldenSetup.Bless makes it
// in $LOCKSTEP_CLI_GOLDEN_PROJECT and every Cli test reuses it; run
// directly, the suite blesses its own.
fs::path bless_shared_project(const fs::path& dir) {
  fs::remove_all(dir);
  fs::path made = scratch("blessed");
  fs::create_directories(dir.parent_path());
  fs::rename(made, dir);
  Result r = lockstep("bless " + (dir / "smoke" / "digits-cnn.json").string() + " --reason 'test golden' --out " +
                      (dir / "out").string());
  EXPECT_EQ(r.code, 0) << r.output;
  return dir;
}

TEST(CliGoldenSetup, Bless) {
  const char* dir = std::getenv("LOCKSTEP_CLI_GOLDEN_PROJECT");
  ASSERT_TRUE(dir && *dir) << "run by CTest, which sets LOCKSTEP_CLI_GOLDEN_PROJECT";
  bless_shared_project(dir);
}

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* shared = std::getenv("LOCKSTEP_CLI_GOLDEN_PROJECT");
    if (shared && *shared && fs::is_directory(fs::path(shared) / "goldens" / "digits-cnn"))
      project_ = shared;
    else
      project_ = bless_shared_project(fs::temp_directory_path() / ("lockstep-cli-own-" + std::to_string(::getpid())));
    for (auto& e : fs::directory_iterator(project_ / "goldens" / "digits-cnn")) golden_ = e.path().string();
  }
  static std::string smoke() { return (project_ / "smoke" / "digits-cnn.json").string(); }
  static std::string out(const std::string& name) { return (project_ / "out" / name).string(); }

  static inline fs::path project_;
  static inline std::string golden_;  // path of the blessed golden
};

// Two files named by hand, made under different stack labels
// (LOCKSTEP_STACK): compared as given, and said.
TEST_F(Cli, CompareOfRecordsOfTwoStackLabelsSaysSo) {
  std::string labeled = out("labeled.json"), plain = out("plain.json");
  ASSERT_EQ(lockstep("run " + kSmoke + " --record " + labeled + " --quiet", "LOCKSTEP_STACK=sid").code, 0);
  ASSERT_EQ(lockstep("run " + kSmoke + " --record " + plain + " --quiet").code, 0);
  Result r = lockstep("compare " + labeled + " " + plain + " --config " + kSmoke);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("the golden was made for stack (unlabeled), the run under stack sid (LOCKSTEP_STACK): "
                          "compared as given"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(lockstep("compare " + plain + " " + plain).output.find("LOCKSTEP_STACK"), std::string::npos);
}

TEST_F(Cli, TwoRunProcessesWriteBitIdenticalRecords) {
  Result a = lockstep("run " + kSmoke + " --record " + out("a.json"));
  Result b = lockstep("run " + kSmoke + " --record " + out("b.json"));
  ASSERT_EQ(a.code, 0) << a.output;
  ASSERT_EQ(b.code, 0) << b.output;
  auto ja = parse_json_file(out("a.json")), jb = parse_json_file(out("b.json"));
  for (const char* key : {"series", "probes", "train_probes", "hashes", "contract"})
    EXPECT_EQ(ja[key], jb[key]) << key;
  EXPECT_EQ(ja["series"]["loss"]["values"].size(), 10u);
  Result c = lockstep("compare " + out("a.json") + " " + out("b.json"));
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("lane: same-stack"), std::string::npos) << c.output;
}

// The data-only pass gives the same batches with 0, 1, 2 and 4 workers.
TEST_F(Cli, DataPassIsIdenticalForAnyWorkerCount) {
  nlohmann::json reference;
  for (int workers : {0, 1, 2, 4}) {
    std::string path = out("probe-" + std::to_string(workers) + ".json");
    Result r = lockstep("probe " + kSmoke + " --workers " + std::to_string(workers) + " --record " + path);
    ASSERT_EQ(r.code, 0) << r.output;
    nlohmann::json probes = parse_json_file(path)["probes"];
    EXPECT_EQ(probes.size(), 56u);  // 1797 digits / batch 32, drop_last
    if (workers == 0) reference = probes;
    else EXPECT_EQ(probes, reference) << workers << " workers";
  }
}

// A thread count is a stack axis (what calibrate's threads axis measures):
// the cross-stack lane, the smoke's tolerances, the threads named.
// The step-time ratio is left out of it (a copy of the smoke allows 1000):
// two OpenMP threads beside another test's process take turns on a core
// (steps up to 70 times the golden's), which is the machine's load, not
// what this test holds.
TEST_F(Cli, OtherIntraOpThreadCountIsComparedUnderTheTolerancesNamingTheThreads) {
  nlohmann::json cfg = parse_json_file(smoke());
  cfg["tolerance"]["resources"]["step_time_ratio"] = 1000;
  fs::create_directories(project_ / "smoke-threads");
  const std::string copy = (project_ / "smoke-threads" / "digits-cnn.json").string();
  std::ofstream(copy) << cfg.dump(2) << "\n";
  Result r = lockstep("check " + copy + " --goldens " + (project_ / "goldens").string() + " --intra-op-threads 2 --out " +
                      (project_ / "out-t2").string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("lane: cross-stack"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("determinism.intra_op_threads 1 → 2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("contract.intra_op_threads"), std::string::npos) << r.output;
}

TEST_F(Cli, OneUlpInTheGoldenLossFailsExactAndPassesWithRtol) {
  std::string run = out("ulp-run.json");
  ASSERT_EQ(lockstep("run " + smoke() + " --record " + run).code, 0);
  nlohmann::json g = parse_json_file(run);
  float v = static_cast<float>(g["series"]["loss"]["values"][3].get<double>());
  float moved = std::nextafter(v, 100.0f);
  g["series"]["loss"]["values"][3] = static_cast<double>(moved);
  g["series"]["loss"]["bits"][3] = float_bits_hex(moved);
  std::string golden = out("ulp-golden.json");
  write_file_atomically(golden, pretty_dump(g));

  Result exact = lockstep("compare " + run + " " + golden);
  EXPECT_EQ(exact.code, 1) << exact.output;
  EXPECT_NE(exact.output.find("first divergence: train step 3: loss"), std::string::npos) << exact.output;
  EXPECT_NE(exact.output.find("1 ulp"), std::string::npos) << exact.output;

  fs::path relaxed = scratch("rtol", [](nlohmann::json& c) {
    c["tolerance"]["same_stack"] = "tolerance";
    c["tolerance"]["series"]["loss"] = {{"rtol", 1e-6}};
  });
  Result r = lockstep("compare " + run + " " + golden + " --config " + (relaxed / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 0) << r.output;
}

// A report replaces only an earlier report of its kind: a note of the
// user's named by --json (or --junit, --markdown, --html) stays as it was.
TEST_F(Cli, CompareReportsReplaceOnlyEarlierReports) {
  const std::vector<std::string> flags = {"--json", "--junit", "--markdown", "--html"};
  std::string all;
  for (const auto& f : flags) all += " " + f + " " + out("report" + f.substr(2));
  for (int i = 0; i < 2; ++i) {  // written, then replaced
    Result r = lockstep("compare " + golden_ + " " + golden_ + all);
    EXPECT_EQ(r.code, 0) << r.output;
  }
  std::string notes = out("notes.txt");
  for (const auto& f : flags) {
    write_file_atomically(notes, "my notes\n");
    Result r = lockstep("compare " + golden_ + " " + golden_ + " " + f + " " + notes);
    EXPECT_EQ(r.code, 2) << f << r.output;
    EXPECT_NE(r.output.find(f + " " + notes + ": refusing to overwrite a file that is not an earlier report of this "
                            "command"), std::string::npos) << r.output;
    EXPECT_EQ(read_file(notes), "my notes\n") << f;
  }
}

// A goldens folder in place of a golden: the run's smoke and platform pick it.
TEST_F(Cli, CompareFindsTheRunsGoldenInAGoldensFolder) {
  std::string run = out("folder-run.json");
  ASSERT_EQ(lockstep("run " + smoke() + " --record " + run).code, 0);
  std::string goldens = (project_ / "goldens").string();
  Result r = lockstep("compare " + run + " " + goldens);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(golden_), std::string::npos) << "the verdict names the golden it used\n" << r.output;
  Result own = lockstep("compare " + run + " " + goldens + "/digits-cnn/");  // the smoke's own folder
  EXPECT_EQ(own.code, 0) << own.output;
  EXPECT_NE(own.output.find(golden_), std::string::npos) << own.output;
  fs::path empty = project_ / "no-goldens";
  fs::create_directories(empty);
  Result none = lockstep("compare " + run + " " + empty.string());
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find(empty.string() + ": expected a golden for smoke 'digits-cnn' on platform "),
            std::string::npos)
      << none.output;
  // What check refuses as a golden, compare refuses too: a plain record,
  // a pending golden a failing check left, a golden filed under another
  // platform.
  std::string platform = fs::path(golden_).stem().string();
  fs::path odd = project_ / "odd-goldens";
  fs::create_directories(odd / "digits-cnn");
  std::string filed = (odd / "digits-cnn" / (platform + ".json")).string();
  fs::copy_file(run, filed, fs::copy_options::overwrite_existing);
  Result plain = lockstep("compare " + run + " " + odd.string());
  EXPECT_EQ(plain.code, 2) << plain.output;
  EXPECT_NE(plain.output.find(filed + ": (top level): expected a golden (with \"provenance\" and \"content_hash\"), got a plain run record"), std::string::npos) << plain.output;
  nlohmann::json pending = parse_json_file(golden_);
  pending["provenance"]["action"] = "check";
  write_file_atomically(filed, pretty_dump(pending));
  Result stale = lockstep("compare " + run + " " + odd.string());
  EXPECT_EQ(stale.code, 2) << stale.output;
  EXPECT_NE(stale.output.find(filed + ": "), std::string::npos) << stale.output;
  fs::remove(filed);
  std::string misfiled = (odd / "digits-cnn" / "cpu-x86_64-zzz.json").string();
  fs::copy_file(golden_, misfiled);
  Result wrong = lockstep("compare " + run + " " + odd.string());
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find(misfiled + ": platform: expected \"cpu-x86_64-zzz\" (the platform it is filed under), got \"" +
                              platform + "\""),
            std::string::npos)
      << wrong.output;

  nlohmann::json rec = parse_json_file(run);
  rec["smoke"] = "../digits-cnn";
  write_file_atomically(out("folder-escape.json"), pretty_dump(rec));
  Result escape = lockstep("compare " + out("folder-escape.json") + " " + goldens);
  EXPECT_EQ(escape.code, 2) << escape.output;
  EXPECT_NE(escape.output.find("folder-escape.json: smoke: expected a name of letters, digits"), std::string::npos)
      << escape.output;
}

// A report or an import never replaces a golden, and nothing but bless
// and accept writes into the goldens folder compare was given.
TEST_F(Cli, ReportsAndImportsNeverReplaceAGolden) {
  std::string run = out("guard-run.json");
  ASSERT_EQ(lockstep("run " + smoke() + " --record " + run).code, 0);
  const std::string before = read_file(golden_);
  std::string goldens = (project_ / "goldens").string();
  Result into = lockstep("compare " + run + " " + goldens + " --json " + golden_);
  EXPECT_EQ(into.code, 2) << into.output;
  EXPECT_NE(into.output.find(golden_ + ": refusing to write the --json report into the goldens folder "),
            std::string::npos)
      << into.output;
  std::string copy = out("golden-copy.json");
  fs::copy_file(golden_, copy, fs::copy_options::overwrite_existing);
  Result over = lockstep("compare " + run + " " + golden_ + " --junit " + copy);
  EXPECT_EQ(over.code, 2) << over.output;
  EXPECT_NE(over.output.find(copy + ": refusing to write the --junit report over a golden"), std::string::npos)
      << over.output;
  std::string log = out("guard.jsonl");
  write_file_atomically(log, "{\"step\": 0, \"loss\": 1.5}\n");
  Result import = lockstep("import jsonl " + log + " --series loss=loss --record " + copy);
  EXPECT_EQ(import.code, 2) << import.output;
  EXPECT_NE(import.output.find(copy + ": refusing to write the imported record over a golden"), std::string::npos)
      << import.output;
  EXPECT_EQ(read_file(golden_), before);
  EXPECT_EQ(read_file(copy), before);
  Result named = lockstep("compare " + run + " " + goldens + " --junit " + out("x.golden.new"));
  EXPECT_EQ(named.code, 2) << named.output;
  EXPECT_NE(named.output.find("x.golden.new: the --junit report must not be named *.golden.new"), std::string::npos)
      << named.output;
  Result report = lockstep("compare " + run + " " + goldens + " --json " + out("guard-report.json"));
  EXPECT_EQ(report.code, 0) << report.output;  // anywhere else is fine
}

TEST_F(Cli, TruncatedGoldenIsExit2NamingTheFile) {
  fs::path p = scratch("truncated");
  fs::create_directories(p / "goldens" / "digits-cnn");
  std::string text = read_file(golden_);
  std::string target = (p / "goldens" / "digits-cnn" / fs::path(golden_).filename()).string();
  write_file_atomically(target, text.substr(0, text.size() / 3));
  Result r = lockstep("check " + (p / "smoke").string() + " --out " + (p / "out").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(target + ": line "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" (byte "), std::string::npos) << r.output;
}

// The committed golden, from the repository's smoke/.
TEST_F(Cli, CheckOnTheCommittedGoldenPasses) {
  Result r = lockstep("check " + kSourceDir + "/smoke --out " + (project_ / "out-committed").string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\ncheck: 6 smokes: 6 PASS; exit 0 (junit " + (project_ / "out-committed").string() +
                          "/junit.xml)\n"),
            std::string::npos)
      << r.output;
}

// A suite ends with one line: the count per exit class, the smokes that did
// not pass, the exit code.
TEST_F(Cli, ASuiteEndsWithOneSummaryLine) {
  fs::path p = scratch("summary");
  fs::create_directories(p / "goldens");
  fs::copy(project_ / "goldens" / "digits-cnn", p / "goldens" / "digits-cnn");
  nlohmann::json other = parse_json_file(smoke());
  other["name"] = "digits-unblessed";
  write_file_atomically((p / "smoke" / "digits-unblessed.json").string(), pretty_dump(other));
  Result r = lockstep("check " + (p / "smoke").string() + " --out " + (p / "out").string() + " --quiet");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("\ncheck: 2 smokes: 1 PASS, 1 BAD INPUT (digits-unblessed); exit 2 (junit " +
                          (p / "out").string() + "/junit.xml)\n"),
            std::string::npos)
      << r.output;
  // --quiet: the passing smoke is its headline alone, the other in full;
  // both have their reports.
  EXPECT_NE(r.output.find("lockstep: digits-cnn: PASS (exit 0)\nlockstep: digits-unblessed: BAD INPUT (exit 2): "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("environment"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(p / "out" / "digits-cnn" / "report.md"));
  fs::remove_all(p);
}

TEST_F(Cli, CheckAgainstItsOwnBlessPassesBitExact) {
  Result r = lockstep("check " + smoke() + " --out " + (project_ / "out-own").string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("lane: same-stack"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(project_ / "out-own" / "digits-cnn" / "report.json"));
}

TEST_F(Cli, ReblessReportsNoChangeAndKeepsTheFileWellFormed) {
  fs::path p = scratch("rebless");
  std::string s = (p / "smoke").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason first --out " + (p / "out").string()).code, 0);
  Result again = lockstep("bless " + s + " --reason second --out " + (p / "out").string());
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("no value changed against the golden it replaces"), std::string::npos) << again.output;
  size_t files = 0;
  for (auto& e : fs::directory_iterator(p / "goldens" / "digits-cnn")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporaries left behind
}

TEST_F(Cli, OverriddenSeedIsNeverComparedAgainstAnotherSeed) {
  Result r = lockstep("check " + smoke() + " --repeat 1 --out " + (project_ / "out-seed").string(),
                      "LOCKSTEP_SEED=7");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("seed 7 (overridden by LOCKSTEP_SEED)"), std::string::npos) << r.output;
}

// CI never writes goldens; a failing check leaves a pending
// golden that review shows and accept promotes.
TEST_F(Cli, FailingCheckInCiLeavesPendingGoldenThatAcceptPromotes) {
  // Its last check compares step times with a golden blessed seconds before;
  // on a loaded machine that can exceed the usual 10x, and this test is about
  // pending goldens, not resources.
  fs::path p = scratch("pending", [](nlohmann::json& c) { c["tolerance"]["resources"]["step_time_ratio"] = 1000; });
  std::string s = (p / "smoke").string(), out = (p / "out").string(), goldens = (p / "goldens").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason first --out " + out).code, 0);
  std::string golden = goldens + "/digits-cnn/cpu-x86_64-avx2.json";
  for (auto& e : fs::directory_iterator(goldens + "/digits-cnn")) golden = e.path().string();
  std::string before = read_file(golden);

  // An approved change: a new learning rate in the config.
  std::string cfg_text = read_file(s + "/digits-cnn.json");
  nlohmann::json changed = parse_json_file(s + "/digits-cnn.json");
  changed["optimizer"]["lr"] = 0.06;
  write_file_atomically(s + "/digits-cnn.json", pretty_dump(changed));
  std::string changed_text = read_file(s + "/digits-cnn.json");

  Result failing = lockstep("check " + s + " --out " + out, "CI=true");
  EXPECT_EQ(failing.code, 1) << failing.output;
  EXPECT_NE(failing.output.find("first divergence: input changed: smoke config digits-cnn"), std::string::npos)
      << failing.output;
  EXPECT_EQ(read_file(golden), before);  // goldens untouched
  std::string pending = out + "/digits-cnn/" + fs::path(golden).stem().string() + ".golden.new";
  ASSERT_TRUE(fs::exists(pending)) << failing.output;
  EXPECT_TRUE(fs::exists(out + "/junit.xml"));

  Result review = lockstep("review " + out + " --goldens " + goldens);
  EXPECT_EQ(review.code, 0) << review.output;
  EXPECT_NE(review.output.find("input changed: smoke config digits-cnn"), std::string::npos) << review.output;
  Result refused = lockstep("accept " + out + " --goldens " + goldens + " --reason 'new lr'", "CI=true");
  EXPECT_EQ(refused.code, 2) << refused.output;
  // A pending golden made from another version of the config is refused.
  changed["optimizer"]["lr"] = 0.07;
  write_file_atomically(s + "/digits-cnn.json", pretty_dump(changed));
  Result stale = lockstep("accept " + out + " --goldens " + goldens + " --reason stale");
  EXPECT_EQ(stale.code, 2) << stale.output;
  EXPECT_NE(stale.output.find("made from another version of the config"), std::string::npos) << stale.output;
  write_file_atomically(s + "/digits-cnn.json", changed_text);
  Result accepted = lockstep("accept " + out + " --goldens " + goldens + " --reason 'new lr'");
  EXPECT_EQ(accepted.code, 0) << accepted.output;
  EXPECT_FALSE(fs::exists(pending));
  EXPECT_EQ(parse_json_file(golden)["provenance"]["reason"], "new lr");

  Result passing = lockstep("check " + s + " --out " + out, "CI=true");
  EXPECT_EQ(passing.code, 0) << passing.output;

  // A failing run under other thread counts (an override; held exact here
  // so that it fails) is no golden for the smoke.
  nlohmann::json exact = parse_json_file(s + "/digits-cnn.json");
  exact["tolerance"]["series"]["default"] = {{"exact", true}};
  write_file_atomically(s + "/digits-cnn.json", pretty_dump(exact));
  Result threads = lockstep("check " + s + " --intra-op-threads 2 --out " + out, "CI=true");
  EXPECT_EQ(threads.code, 1) << threads.output;
  Result contract = lockstep("accept " + out + " --goldens " + goldens + " --reason 'two threads'");
  EXPECT_EQ(contract.code, 2) << contract.output;
  EXPECT_NE(contract.output.find("it was made with contract.intra_op_threads 2, but"), std::string::npos)
      << contract.output;
  fs::remove(pending);
  (void)cfg_text;
  Result verify = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(verify.code, 0) << verify.output;
}

TEST_F(Cli, VerifyGoldensCatchesEditsPendingFilesAndChangedConfigs) {
  fs::path p = scratch("verify");
  std::string s = (p / "smoke").string(), goldens = (p / "goldens").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason v --out " + (p / "out").string()).code, 0);
  Result ok = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("1 golden(s) for 1 smoke(s)"), std::string::npos) << ok.output;

  std::string golden;
  for (auto& e : fs::directory_iterator(goldens + "/digits-cnn")) golden = e.path().string();
  std::string text = read_file(golden);

  // A pending file copied into goldens/.
  write_file_atomically(goldens + "/digits-cnn/cpu-x86_64-avx2.golden.new", text);
  Result pending = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(pending.code, 2) << pending.output;
  EXPECT_NE(pending.output.find(".golden.new: not a golden"), std::string::npos) << pending.output;
  fs::remove(goldens + "/digits-cnn/cpu-x86_64-avx2.golden.new");

  // A hand edit: the reason changed without re-blessing.
  std::string edited = text;
  edited.replace(edited.find("\"reason\": \"v\""), 13, "\"reason\": \"w\"");
  write_file_atomically(golden, edited);
  Result hand = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(hand.code, 2) << hand.output;
  EXPECT_NE(hand.output.find("content_hash: expected the hash of the golden's content"), std::string::npos) << hand.output;
  write_file_atomically(golden, text);

  // The smoke's step count changed after the bless.
  nlohmann::json cfg = parse_json_file(s + "/digits-cnn.json");
  cfg["steps"] = 12;
  write_file_atomically(s + "/digits-cnn.json", pretty_dump(cfg));
  Result steps = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(steps.code, 2) << steps.output;
  EXPECT_NE(steps.output.find("10 steps, but"), std::string::npos) << steps.output;
  EXPECT_NE(steps.output.find("now has 12; re-bless"), std::string::npos) << steps.output;
}

// verify-goldens judges a config edit as check does, by the fields that
// determine the values: a looser tolerance, a default written out or
// `repeat` need no re-bless; the learning rate does, named; a data file
// moved with its content unchanged is a note.
TEST_F(Cli, VerifyGoldensJudgesAConfigEditByItsValues) {
  fs::path p = scratch("verify-values", [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string s = (p / "smoke").string(), goldens = (p / "goldens").string(), out = (p / "out").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason v --out " + out).code, 0);
  nlohmann::json cfg = parse_json_file(s + "/digits-cnn.json");
  auto write = [&](const nlohmann::json& c) { write_file_atomically(s + "/digits-cnn.json", pretty_dump(c)); };
  nlohmann::json loose = cfg;
  loose["tolerance"]["series"]["default"] = {{"atol", 1e-3}, {"rtol", 1e-2}};
  loose["repeat"] = 3;
  loose["determinism"]["mode"] = "strict";  // the default, written out
  write(loose);
  Result ok = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(lockstep("check " + s + " --out " + out).code, 0);

  nlohmann::json lr = cfg;
  lr["optimizer"]["lr"] = lr["optimizer"]["lr"].get<double>() * 1.001;
  write(lr);
  Result moved_lr = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(moved_lr.code, 2) << moved_lr.output;
  EXPECT_NE(moved_lr.output.find("digits-cnn.json changed a field that determines the values since it was blessed "
                                 "(optimizer.lr); re-bless"),
            std::string::npos)
      << moved_lr.output;

  // The data file copied beside the config, byte for byte: only data.path changes.
  fs::copy_file(data_dir() + "/digits.csv.gz", p / "smoke" / "digits.csv.gz");
  nlohmann::json moved = cfg;
  moved["data"]["path"] = "digits.csv.gz";
  write(moved);
  Result v = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("verify-goldens: note: "), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(": data.path moved (\"{data}/digits.csv.gz\" → \"digits.csv.gz\"); check compares the "
                          "file's content (data.file_xxh3)"),
            std::string::npos)
      << v.output;
  Result c = lockstep("check " + s + " --out " + out);
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("note: data.path moved: \"{data}/digits.csv.gz\" → \"digits.csv.gz\"; its content is "
                          "unchanged, so the input is the same"),
            std::string::npos)
      << c.output;
  EXPECT_EQ(c.output.find("input changed"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("config.values_xxh3 golden:"), std::string::npos) << c.output;  // not listed as a changed input
}

// --kind splits one suite folder between a job in lockstep's image (the
// built-in smokes) and one in the team's trainer image (the trainer
// smokes): the other kind is never run, and none of the kind is exit 0.
TEST(CliCheck, KindChecksOnlyTheSmokesOfThatKind) {
  fs::path p = scratch("kind", {}, kSourceDir + "/smoke/wine-mlp.json");
  nlohmann::json trainer = {{"name", "team-trainer"}, {"seed", 1}, {"steps", 2},
                            {"trainer", {{"command", {"false"}},
                                         {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"},
                                                      {"series", {{"loss", "loss"}}}}}}}};
  write_file_atomically((p / "smoke" / "team-trainer.json").string(), pretty_dump(trainer));
  const std::string out = (p / "out").string();
  ASSERT_EQ(lockstep("bless " + (p / "smoke").string() + " --kind built-in --reason first --out " + out).code, 0);
  Result built_in = lockstep("check " + (p / "smoke").string() + " --kind built-in --out " + out);
  EXPECT_EQ(built_in.code, 0) << built_in.output;
  EXPECT_NE(built_in.output.find("check: 1 built-in smoke; 1 of the other kind left to `check --kind trainer`\n"),
            std::string::npos) << built_in.output;
  EXPECT_EQ(built_in.output.find("team-trainer"), std::string::npos) << built_in.output;
  Result none = lockstep("check " + kSourceDir + "/smoke --kind trainer --out " + (p / "out2").string());
  EXPECT_EQ(none.code, 0) << none.output;
  EXPECT_NE(none.output.find("check: no trainer smoke among the 6 given (built-in smokes only: `check --kind "
                             "built-in` takes them); nothing to check, exit 0"),
            std::string::npos) << none.output;
  EXPECT_TRUE(fs::exists(p / "out2" / "junit.xml"));
  // The trainer smoke, checked on its own: its command fails (exit 1, quoted).
  Result trainer_only = lockstep("check " + (p / "smoke").string() + " --kind trainer --out " + out);
  EXPECT_EQ(trainer_only.code, 1) << trainer_only.output;
  EXPECT_NE(trainer_only.output.find("team-trainer"), std::string::npos) << trainer_only.output;
  EXPECT_EQ(trainer_only.output.find("wine-mlp"), std::string::npos) << trainer_only.output;
  EXPECT_EQ(lockstep("check " + (p / "smoke").string() + " --kind gpu --out " + out).code, 2);
}

// check -j 2 gives what check -j 1 gives: the same exit code, the same
// lines in the same smoke order, the same reports field by field; only the
// timings (step time, peak RSS) and the output folder's name differ. The
// suite: a smoke that passes its golden (and its resume check), one without
// a golden (exit 2, a pending golden), a config that cannot be read.
TEST(CliCheck, ParallelJobsGiveTheSerialVerdictsInSuiteOrder) {
  fs::path p = scratch("jobs", {}, kSourceDir + "/smoke/wine-mlp.json");
  nlohmann::json tokens = parse_json_file(kSourceDir + "/smoke/tokens-transformer.json");
  tokens.erase("platforms");
  write_file_atomically((p / "smoke" / "tokens-transformer.json").string(), pretty_dump(tokens));
  Result blessed = lockstep("bless " + (p / "smoke" / "wine-mlp.json").string() + " --reason test --allow-dirty --out " +
                            (p / "bless-out").string());
  ASSERT_EQ(blessed.code, 0) << blessed.output;
  write_file_atomically((p / "smoke" / "broken.json").string(), "{\"name\": \"broken\", ");
  auto without_timings = [&](std::string text, const std::string& out) {
    std::string kept;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("median step time") != std::string::npos || line.find("peak RSS") != std::string::npos) continue;
      for (size_t at; (at = line.find(out)) != std::string::npos;) line.replace(at, out.size(), "OUT");
      kept += line + "\n";
    }
    return kept;
  };
  std::map<int, Result> by_jobs;
  for (int jobs : {1, 2}) {
    std::string out = (p / ("out-j" + std::to_string(jobs))).string();
    by_jobs[jobs] = lockstep("check " + (p / "smoke").string() + " -j " + std::to_string(jobs) + " --out " + out);
    by_jobs[jobs].output = without_timings(by_jobs[jobs].output, out);
  }
  EXPECT_EQ(by_jobs[1].code, 2) << by_jobs[1].output;
  EXPECT_EQ(by_jobs[2].code, 2) << by_jobs[2].output;
  EXPECT_EQ(by_jobs[2].output, by_jobs[1].output);
  EXPECT_NE(by_jobs[1].output.find("check: 3 smokes: 1 PASS, 2 BAD INPUT (broken, tokens-transformer)"),
            std::string::npos)
      << by_jobs[1].output;
  EXPECT_LT(by_jobs[2].output.find("lockstep: broken:"), by_jobs[2].output.find("lockstep: tokens-transformer:"));
  EXPECT_LT(by_jobs[2].output.find("lockstep: tokens-transformer:"), by_jobs[2].output.find("lockstep: wine-mlp:"));
  for (const char* smoke : {"tokens-transformer", "wine-mlp"}) {
    nlohmann::json reports[2];
    for (int jobs : {1, 2}) {
      nlohmann::json r = parse_json_file((p / ("out-j" + std::to_string(jobs)) / smoke / "report.json").string());
      nlohmann::json notes = nlohmann::json::array();
      for (const auto& n : r["notes"]) {
        std::string text = n.get<std::string>();
        if (text.find("median step time") == std::string::npos && text.find("peak RSS") == std::string::npos)
          notes.push_back(without_timings(text, (p / ("out-j" + std::to_string(jobs))).string()));
      }
      r["notes"] = notes;
      r.erase("run");  // the record's path, in each check's own --out
      reports[jobs - 1] = r;
    }
    ASSERT_FALSE(reports[0].empty()) << smoke;
    for (const auto& [key, value] : reports[0].items()) EXPECT_EQ(reports[1][key], value) << smoke << ": " << key;
    EXPECT_EQ(reports[1].size(), reports[0].size()) << smoke;
  }
  for (const char* out : {"out-j1", "out-j2"}) {  // the smoke without a golden left a pending one either way
    int pending = 0;
    for (const auto& e : fs::directory_iterator(p / out / "tokens-transformer"))
      pending += e.path().string().size() > 11 && e.path().string().substr(e.path().string().size() - 11) == ".golden.new";
    EXPECT_EQ(pending, 1) << out;
  }
  Result zero = lockstep("check " + (p / "smoke").string() + " -j 0");
  EXPECT_EQ(zero.code, 2) << zero.output;
  fs::remove_all(p);
}

// Each CI shard verifies the goldens of its own smokes: a smoke whose
// config moved fails its shard only, not the other (check --shard's split).
TEST(CliVerify, EachShardVerifiesItsOwnSmokes) {
  fs::path p = fs::temp_directory_path() / ("lockstep-cli-verify-shard-" + std::to_string(::getpid()));
  fs::remove_all(p);
  for (const char* smoke : {"digits-cnn", "wine-mlp"}) {
    fs::create_directories(p / "smoke");
    fs::create_directories(p / "goldens");
    fs::copy_file(kSourceDir + "/smoke/" + smoke + ".json", p / "smoke" / (std::string(smoke) + ".json"));
    fs::copy(kSourceDir + "/goldens/" + smoke, p / "goldens" / smoke, fs::copy_options::recursive);
  }
  nlohmann::json wine = parse_json_file((p / "smoke" / "wine-mlp.json").string());
  wine["optimizer"]["lr"] = wine["optimizer"]["lr"].get<double>() * 2;
  write_file_atomically((p / "smoke" / "wine-mlp.json").string(), pretty_dump(wine));
  std::string goldens = (p / "goldens").string();
  Result all = lockstep("verify-goldens " + goldens);
  EXPECT_EQ(all.code, 2) << all.output;
  Result one = lockstep("verify-goldens " + goldens + " --shard 1/2");
  Result two = lockstep("verify-goldens " + goldens + " --shard 2/2");
  EXPECT_EQ(one.code + two.code, 2) << one.output << two.output;  // exactly one shard fails
  const Result& failing = one.code ? one : two;
  const Result& passing = one.code ? two : one;
  // The committed golden keeps the config's fields: the field is named.
  EXPECT_NE(failing.output.find("wine-mlp.json changed a field that determines the values since it was blessed "
                                "(optimizer.lr); re-bless"),
            std::string::npos) << failing.output;
  EXPECT_EQ(failing.output.find("digits-cnn"), std::string::npos) << failing.output;
  EXPECT_NE(passing.output.find("1 golden(s) for 1 smoke(s) in " + goldens + " (shard "), std::string::npos)
      << passing.output;
  fs::remove_all(p);
}

// Two configs with one smoke name: bless refuses the suite before any run,
// as check does (the second golden would replace the first).
TEST_F(Cli, BlessRefusesTwoConfigsOfOneName) {
  fs::path p = scratch("bless-twins");
  fs::copy_file(p / "smoke" / "digits-cnn.json", p / "smoke" / "digits-cnn-copy.json");
  for (const char* command : {"bless --reason twins", "check"}) {
    Result r = lockstep(std::string(command) + " " + (p / "smoke").string() + " --out " + (p / "out").string());
    EXPECT_EQ(r.code, 2) << command << r.output;
    EXPECT_NE(r.output.find("digits-cnn.json: name: expected a smoke name unique in the suite; \"digits-cnn\" is "
                            "also the name in "),
              std::string::npos)
        << command << r.output;
  }
  // One file given twice is said as such, not as two configs.
  std::string once = (p / "smoke" / "digits-cnn.json").string();
  Result twice = lockstep("check " + once + " " + (p / "smoke" / ".." / "smoke" / "digits-cnn.json").string());
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_NE(twice.output.find(": given twice (also as " + once + "); name each smoke config once"), std::string::npos)
      << twice.output;
  EXPECT_FALSE(fs::exists(p / "goldens"));
}

// The pre-push hook in a repository that is not lockstep's: installed by
// `lockstep hook install` (the script lockstep ships, no copy in the repo),
// triggered by what the smokes read (their configs, goldens, data beside
// them, lockstep.json), checking the pushed commit's tree.
TEST(CliHook, PrePushBlocksABrokenSmokeAndLetsACleanPushThrough) {
  fs::path p = scratch("prepush", [](nlohmann::json& c) { c["data"]["path"] = "data/digits.csv.gz"; });
  fs::create_directories(p / "smoke" / "data");
  fs::copy_file(data_dir() + "/digits.csv.gz", p / "smoke" / "data" / "digits.csv.gz");
  std::string s = (p / "smoke").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason hook --out " + (p / "out").string()).code, 0);
  fs::remove_all(p / "out");
  std::string git = "git -c user.name=t -c user.email=t@t ";
  // TMPDIR: the hook's worktrees and a blocked push's reports, removed with the test.
  fs::path tmp = p.string() + "-tmp";
  fs::create_directories(tmp);
  auto run = [&](const std::string& cmd) {
    return shell("cd '" + p.string() + "' && unset CI LOCKSTEP_BIN && export TMPDIR='" + tmp.string() + "' && " + cmd);
  };
  ASSERT_EQ(run("git init -q -b main . && " + git + "add -A && " + git + "commit -qm init && git init -q --bare remote.git && git remote add origin remote.git").code, 0);
  Result install = lockstep("hook install", "", p.string());
  EXPECT_EQ(install.code, 0) << install.output;
  EXPECT_NE(install.output.find("installed "), std::string::npos) << install.output;
  Result again = lockstep("hook install", "", p.string());  // idempotent
  EXPECT_NE(again.output.find("already installed"), std::string::npos) << again.output;
  Result plan = lockstep("hook plan", "", p.string());
  EXPECT_EQ(plan.output, "smokes\tsmoke\ntrigger\tgoldens/\ntrigger\tsmoke/\n") << plan.output;

  // The first push: every file is new.
  Result clean = run("git push -q origin main");
  EXPECT_EQ(clean.code, 0) << clean.output;
  EXPECT_NE(clean.output.find("(lockstep check smoke) because goldens/digits-cnn/"), std::string::npos) << clean.output;
  EXPECT_NE(clean.output.find("PASS"), std::string::npos) << clean.output;

  // A data edit committed beside the smoke: checked from the pushed tree, blocked.
  ASSERT_EQ(run("gzip -dc smoke/data/digits.csv.gz | sed '1s/^0,/3,/' | gzip -n > d.gz && mv d.gz smoke/data/digits.csv.gz && " +
                git + "commit -qam 'edit data'").code, 0);
  Result blocked = run("git push -q origin main");
  EXPECT_NE(blocked.code, 0) << blocked.output;
  EXPECT_NE(blocked.output.find("because smoke/data/digits.csv.gz changed"), std::string::npos) << blocked.output;
  EXPECT_NE(blocked.output.find("push blocked (exit 1)"), std::string::npos) << blocked.output;
  EXPECT_NE(blocked.output.find("LOCKSTEP_SKIP=1"), std::string::npos) << blocked.output;
  // The work tree is not what is checked: undoing the edit there changes nothing.
  Result worktree_undo = run("git show HEAD~1:smoke/data/digits.csv.gz > smoke/data/digits.csv.gz && git push -q origin main");
  EXPECT_NE(worktree_undo.code, 0) << worktree_undo.output;
  ASSERT_EQ(run("git checkout -q -- . ").code, 0);

  Result reverted = run(git + "revert --no-edit HEAD >/dev/null && git push -q origin main");
  EXPECT_EQ(reverted.code, 0) << reverted.output;
  // The pushed range nets to no change (the blocked commit and its revert).
  EXPECT_NE(reverted.output.find("smoke suite not run"), std::string::npos) << reverted.output;

  Result docs_only = run("echo notes > NOTES.md && " + git + "add NOTES.md && " + git + "commit -qm docs && git push -q origin HEAD:docs");
  EXPECT_EQ(docs_only.code, 0) << docs_only.output;
  EXPECT_NE(docs_only.output.find("smoke suite not run"), std::string::npos) << docs_only.output;

  // A lockstep the hook has not checked with yet triggers it by itself.
  ASSERT_EQ(run("echo 'lockstep 0.0.1' > .git/lockstep-checked-version").code, 0);
  Result upgraded = run(git + "commit -q --allow-empty -m empty && git push -q origin HEAD:docs");
  EXPECT_EQ(upgraded.code, 0) << upgraded.output;
  EXPECT_NE(upgraded.output.find("because lockstep version (lockstep 0.0.1 -> lockstep "), std::string::npos)
      << upgraded.output;

  // Triggers come from the committed lockstep.json.
  ASSERT_EQ(run("printf '{\"hook\": {\"paths\": [\"NOTES.md\"]}}' > lockstep.json && echo more >> NOTES.md && " + git +
                "add -A && " + git + "commit -qm 'hook settings' && git push -q origin HEAD:docs").code, 0);
  Result settings = run("echo again >> NOTES.md && " + git + "commit -qam notes && git push -q origin HEAD:docs");
  EXPECT_EQ(settings.code, 0) << settings.output;
  EXPECT_NE(settings.output.find("because NOTES.md changed"), std::string::npos) << settings.output;
  // A new branch whose two commits touch one file names it once.
  Result twice = run("echo a >> NOTES.md && " + git + "commit -qam a && echo b >> NOTES.md && " + git +
                     "commit -qam b && git push -q origin HEAD:twice");
  EXPECT_EQ(twice.code, 0) << twice.output;
  EXPECT_NE(twice.output.find("because NOTES.md changed"), std::string::npos) << twice.output;
  EXPECT_EQ(twice.output.find("NOTES.md, NOTES.md"), std::string::npos) << twice.output;
  // A file moved out of a trigger folder is a change there (renames are two
  // paths); a name that is not ASCII is matched as written, not quoted.
  Result moved = run("git mv smoke/data/digits.csv.gz moved.gz && " + git + "commit -qm mv && git push -q origin HEAD:moved");
  EXPECT_NE(moved.code, 0) << moved.output;
  EXPECT_NE(moved.output.find("because smoke/data/digits.csv.gz changed"), std::string::npos) << moved.output;
  ASSERT_EQ(run("git reset -q --hard HEAD~1").code, 0);
  Result accented = run("echo n > smoke/données.txt && " + git + "add -A && " + git +
                        "commit -qm accent && git push -q origin HEAD:accent");
  EXPECT_EQ(accented.code, 0) << accented.output;
  EXPECT_NE(accented.output.find("because smoke/données.txt changed"), std::string::npos) << accented.output;
  ASSERT_EQ(run("printf '{\"hook\": {\"pathz\": []}}' > lockstep.json && " + git + "commit -qam bad").code, 0);
  Result bad = run("git push -q origin HEAD:docs");
  EXPECT_NE(bad.code, 0) << bad.output;
  EXPECT_NE(bad.output.find("lockstep.json: hook.pathz: expected a known field, not 'pathz' (did you mean 'paths'?)"),
            std::string::npos)
      << bad.output;

  // An existing foreign hook is never overwritten.
  write_file_atomically((p / ".git/hooks/pre-push").string(), "#!/bin/sh\nexit 0\n");
  Result foreign = lockstep("hook install", "", p.string());
  EXPECT_EQ(foreign.code, 2) << foreign.output;
  EXPECT_NE(foreign.output.find("not overwriting it"), std::string::npos) << foreign.output;
  fs::remove_all(p);
  fs::remove_all(tmp);
}

// After lockstep is removed the hook says so and blocks, with the way out;
// LOCKSTEP_SKIP=1 is honoured by the hook itself; `hook uninstall`
// removes lockstep's hook and only lockstep's.
TEST(CliHook, AHookWhoseLockstepIsGoneSaysSoAndCanBeSkippedOrRemoved) {
  fs::path p = fs::temp_directory_path() / ("lockstep-cli-hook-gone-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  std::string git = "git -c user.name=t -c user.email=t@t ";
  auto run = [&](const std::string& cmd) { return shell("cd '" + p.string() + "' && unset CI LOCKSTEP_BIN && " + cmd); };
  ASSERT_EQ(run("git init -q -b main . && " + git + "commit -q --allow-empty -m x && git init -q --bare remote.git && "
                "git remote add origin remote.git").code, 0);
  ASSERT_EQ(lockstep("hook install", "", p.string()).code, 0);
  // The binary the hook names is gone (as after `apt remove lockstep`).
  Result gone = run("LOCKSTEP_BIN=/nonexistent/lockstep git push -q origin main");
  EXPECT_NE(gone.code, 0) << gone.output;
  EXPECT_NE(gone.output.find("with /nonexistent/lockstep, and lockstep is no longer installed there (removed?); push "
                             "blocked."),
            std::string::npos) << gone.output;
  EXPECT_NE(gone.output.find("push without the check: LOCKSTEP_SKIP=1 git push"), std::string::npos) << gone.output;
  EXPECT_NE(gone.output.find("remove the hook: rm '.git/hooks/pre-push'"), std::string::npos) << gone.output;
  Result skipped = run("LOCKSTEP_SKIP=1 LOCKSTEP_BIN=/nonexistent/lockstep git push -q origin main");
  EXPECT_EQ(skipped.code, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("lockstep pre-push: skipped (LOCKSTEP_SKIP=1)"), std::string::npos) << skipped.output;

  Result removed = lockstep("hook uninstall", "", p.string());
  EXPECT_EQ(removed.code, 0) << removed.output;
  EXPECT_NE(removed.output.find("removed " + (p / ".git/hooks/pre-push").string()), std::string::npos) << removed.output;
  EXPECT_FALSE(fs::exists(p / ".git/hooks/pre-push"));
  Result none = lockstep("hook uninstall", "", p.string());
  EXPECT_EQ(none.code, 0) << none.output;
  EXPECT_NE(none.output.find("no pre-push hook in "), std::string::npos) << none.output;
  write_file_atomically((p / ".git/hooks/pre-push").string(), "#!/bin/sh\nexit 0\n");
  Result foreign = lockstep("hook uninstall", "", p.string());
  EXPECT_EQ(foreign.code, 2) << foreign.output;
  EXPECT_NE(foreign.output.find("a pre-push hook that `lockstep hook install` did not write; not removing it"),
            std::string::npos) << foreign.output;
  EXPECT_TRUE(fs::exists(p / ".git/hooks/pre-push"));
  fs::remove_all(p);
}

// The hook goes where git runs hooks from: core.hooksPath, and a linked
// worktree's main repository.
TEST(CliHook, InstallsWhereGitRunsHooks) {
  fs::path p = fs::temp_directory_path() / ("lockstep-cli-hookspath-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  std::string git = "git -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(shell("cd '" + p.string() + "' && git init -q -b main repo && cd repo && " + git +
                  "commit -q --allow-empty -m x && git config core.hooksPath .githooks && git worktree add -q ../wt")
                .code,
            0);
  Result r = lockstep("hook install", "", (p / "repo").string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(p / "repo" / ".githooks" / "pre-push")) << r.output;
  EXPECT_FALSE(fs::exists(p / "repo" / ".git" / "hooks" / "pre-push")) << r.output;
  ASSERT_EQ(shell("cd '" + (p / "repo").string() + "' && git config --unset core.hooksPath").code, 0);
  Result wt = lockstep("hook install", "", (p / "wt").string());
  EXPECT_EQ(wt.code, 0) << wt.output;
  EXPECT_TRUE(fs::exists(p / "repo" / ".git" / "hooks" / "pre-push")) << wt.output;
  fs::remove_all(p);
}

// An empty --shard (a matrix that forgot LOCKSTEP_SHARD) is refused: run
// as "no sharding", every shard job would check the whole suite.
TEST(CliErrors, AnEmptyShardIsRefused) {
  fs::path out = fs::temp_directory_path() / ("lockstep-cli-shard-" + std::to_string(::getpid()));
  Result r = lockstep("check " + kSourceDir + "/smoke --shard '' --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--shard: expected a value, got an empty string"), std::string::npos) << r.output;
  fs::remove_all(out);
}

TEST(CliErrors, BlessRefusesWithoutReasonAndInCi) {
  fs::path p = scratch("bless-refuse");
  std::string s = (p / "smoke").string();
  Result no_reason = lockstep("bless " + s);
  EXPECT_EQ(no_reason.code, 2) << no_reason.output;
  EXPECT_NE(no_reason.output.find("--reason is required"), std::string::npos) << no_reason.output;
  Result blank = lockstep("bless " + s + " --reason ' '");
  EXPECT_EQ(blank.code, 2) << blank.output;
  Result ci = lockstep("bless " + s + " --reason x", "CI=true");
  EXPECT_EQ(ci.code, 2) << ci.output;
  EXPECT_NE(ci.output.find("CI is set"), std::string::npos) << ci.output;
  EXPECT_FALSE(fs::exists(p / "goldens"));
}

TEST(CliErrors, BlessRefusesADirtyWorkTree) {
  fs::path p = scratch("bless-dirty");
  std::string git = "cd " + p.string() + " && git -c init.defaultBranch=main init -q && git -c user.name=t -c user.email=t@t add -A && git -c user.name=t -c user.email=t@t commit -qm init";
  ASSERT_EQ(std::system(git.c_str()), 0);
  std::ofstream(p / "smoke" / "notes.txt") << "uncommitted";
  Result r = lockstep("bless " + (p / "smoke").string() + " --reason x --out " + (p / "out").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("dirty work tree"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("smoke/notes.txt"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(p / "goldens"));
}

TEST(CliErrors, ConfigTypoIsExit2WithSuggestion) {
  fs::path p = scratch("typo", [](nlohmann::json& c) { c["tolerence"] = c["tolerance"]; c.erase("tolerance"); });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("digits-cnn.json: tolerence: expected a known field, not 'tolerence' (did you mean 'tolerance'?)"),
            std::string::npos)
      << r.output;
}

TEST(CliErrors, CudaOnACpuBuildIsExit3) {
  fs::path p = scratch("cuda", [](nlohmann::json& c) { c["device"] = "cuda"; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("device is \"cuda\" but CUDA is not usable: this lockstep is linked against a "
                          "CPU-only LibTorch"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("no NVIDIA driver is usable either: libcuda.so.1 not found (no NVIDIA driver) "
                          "(lockstep never falls back to the CPU)"),
            std::string::npos)
      << r.output;
}

// The fake NVIDIA libraries (tests/machine/fake_nvidia): one H200, driver
// 580.95.05, cuDNN 9.8.0 and NCCL 2.27.3 loaded as LibTorch would load them.
const std::string kFakeNvidia = test_paths::fake_nvidia_dir();
const std::string kWithFakeDriver = "LD_LIBRARY_PATH=" + kFakeNvidia;
const std::string kWithFakeStack =
    kWithFakeDriver + " LD_PRELOAD=" + kFakeNvidia + "/libcudnn.so.9:" + kFakeNvidia + "/libnccl.so.2";

// With a driver present the reason still leads with the CPU-only LibTorch,
// and says what the driver sees.
TEST(CliCuda, CpuOnlyLibTorchWithADriverSaysBoth) {
  fs::path p = scratch("cuda-fake", [](nlohmann::json& c) { c["device"] = "cuda"; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string(), kWithFakeDriver);
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("CPU-only LibTorch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the driver itself sees 1 device, device 0 is NVIDIA H200 (compute capability 9.0)"),
            std::string::npos)
      << r.output;
}

TEST(CliCuda, MinDriverAgainstTheInstalledDriver) {
  fs::path p = scratch("min-driver", [](nlohmann::json& c) {
    c["device"] = "cuda";
    c["min_driver"] = "590";
  });
  Result old_driver = lockstep("run " + (p / "smoke/digits-cnn.json").string(), kWithFakeDriver);
  EXPECT_EQ(old_driver.code, 3) << old_driver.output;
  EXPECT_NE(old_driver.output.find("the NVIDIA driver is 580.95.05, older than min_driver 590"), std::string::npos)
      << old_driver.output;
  // A new enough driver passes that check and stops at the next one.
  Result new_driver = lockstep("run " + (p / "smoke/digits-cnn.json").string(),
                               kWithFakeDriver + " FAKE_NVML_DRIVER=595.10.01");
  EXPECT_EQ(new_driver.code, 3) << new_driver.output;
  EXPECT_EQ(new_driver.output.find("min_driver"), std::string::npos) << new_driver.output;
  EXPECT_NE(new_driver.output.find("CPU-only LibTorch"), std::string::npos) << new_driver.output;
}

// The CUDA fields, read through the driver API, NVML and the loaded
// cuDNN/NCCL, with the platform key they give.
TEST(CliCuda, EnvDeviceCudaShowsEveryCudaField) {
  fs::path err = fs::temp_directory_path() / ("lockstep-env-cuda-" + std::to_string(::getpid()) + ".err");
  Result r = shell("(env -u CI " + kWithFakeStack + " " + test_paths::lockstep_binary() + " env --device cuda --format json 2>" +
                   err.string() + ")");
  EXPECT_EQ(r.code, 3) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["platform"], "cuda-sm90");
  const auto& fp = j["fingerprint"];
  std::map<std::string, std::string> expected = {
      {"device", "cuda"},
      {"nvidia.driver_version", "580.95.05"},
      {"cuda.driver_api_version", "13.0"},
      {"cuda.gpu_name", "NVIDIA H200"},
      {"cuda.compute_capability", "9.0"},
      {"cuda.sm_count", "132"},
      {"cuda.memory_bytes", "150754820096"},
      {"cuda.gpu_uuid", "GPU-8f2a610c-4d3e-1b77-9012-a55ec308f164"},
      {"cuda.cudnn", "9.8.0"},
      {"cuda.nccl", "2.27.3"},
      {"cuda.runtime", "(absent: CPU-only LibTorch)"},
      {"cuda.torch_devices", "0"}};
  for (const auto& [field, value] : expected) EXPECT_EQ(fp[field]["value"], value) << field;
  for (const char* relevant : {"nvidia.driver_version", "cuda.driver_api_version", "cuda.gpu_name",
                               "cuda.compute_capability", "cuda.sm_count", "cuda.cudnn", "cuda.nccl"})
    EXPECT_TRUE(fp[relevant]["relevant"].get<bool>()) << relevant;
  EXPECT_FALSE(fp["cuda.gpu_uuid"]["relevant"].get<bool>());  // one GPU of a fleet is not a different stack
  EXPECT_EQ(j["cuda_unusable"].get<std::string>().rfind("this lockstep is linked against a CPU-only LibTorch", 0), 0u);
  std::ifstream in(err);
  std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(message.find("env --device cuda: CUDA is not usable: this lockstep is linked against a CPU-only"),
            std::string::npos)
      << message;
  fs::remove(err);
  // The CPU view of the same machine: CUDA facts recorded, not relevant.
  Result cpu = shell("(env -u CI " + kWithFakeStack + " " + test_paths::lockstep_binary() + " env --format json 2>/dev/null)");
  EXPECT_EQ(cpu.code, 0) << cpu.output;
  auto c = nlohmann::json::parse(cpu.output);
  EXPECT_EQ(c["platform"].get<std::string>().rfind("cpu-", 0), 0u);
  EXPECT_EQ(c["fingerprint"]["cuda.gpu_name"]["value"], "NVIDIA H200");
  EXPECT_FALSE(c["fingerprint"]["cuda.gpu_name"]["relevant"].get<bool>());
}

// A refused CUDA smoke in `check`: a line on stdout and a JUnit <error> of
// type environment carrying the child's reason (GitLab shows it), never a
// regression <failure>.
TEST(CliCuda, CheckReportsARefusedCudaSmokeAsAnEnvironmentError) {
  fs::path p = scratch("check-cuda", [](nlohmann::json& c) { c["device"] = "cuda"; });
  std::string out = (p / "out").string();
  Result r = lockstep("check " + (p / "smoke").string() + " --out " + out);
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("lockstep: digits-cnn: ENVIRONMENT (exit 3): `lockstep run "), std::string::npos) << r.output;
  std::string junit = read_file(out + "/junit.xml");
  EXPECT_NE(junit.find("failures=\"0\" errors=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("type=\"environment\">exit 3: `lockstep run "), std::string::npos) << junit;
  EXPECT_NE(junit.find("digits-cnn.json: device is &quot;cuda&quot; but CUDA is not usable: this lockstep is linked "
                       "against a CPU-only LibTorch"),
            std::string::npos)
      << junit;
  EXPECT_EQ(junit.find("regression"), std::string::npos) << junit;
}

TEST(CliCuda, DriverVersionsThatCannotBeCompared) {
  fs::path p = scratch("driver-versions", [](nlohmann::json& c) {
    c["device"] = "cuda";
    c["min_driver"] = "535";
  });
  std::string cfg = (p / "smoke/digits-cnn.json").string();
  Result garbled = lockstep("run " + cfg, kWithFakeDriver + " FAKE_NVML_DRIVER=580.95.05-beta");
  EXPECT_EQ(garbled.code, 3) << garbled.output;
  EXPECT_NE(garbled.output.find("the NVIDIA driver reports version \"580.95.05-beta\", which cannot be compared with "
                                "min_driver 535"),
            std::string::npos)
      << garbled.output;
  fs::path q = scratch("driver-overflow", [](nlohmann::json& c) {
    c["device"] = "cuda";
    c["min_driver"] = "99999999999999999999";
  });
  Result overflow = lockstep("run " + (q / "smoke/digits-cnn.json").string(), kWithFakeDriver);
  EXPECT_EQ(overflow.code, 2) << overflow.output;
  EXPECT_NE(overflow.output.find("min_driver: expected a dotted driver version such as \"535.104\""), std::string::npos)
      << overflow.output;
}

TEST(CliCuda, GpuMeansCuda) {
  fs::path p = scratch("gpu", [](nlohmann::json& c) { c["device"] = "gpu"; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("device: expected one of \"cpu\", \"cuda\", got \"gpu\" (did you mean \"cuda\"?)"),
            std::string::npos)
      << r.output;
}

// A team trainer's golden holds its Python's view of the stack: env --diff
// compares only what both read, and says what it left out, rather than
// calling every package a determinism-relevant difference.
TEST(CliCuda, EnvDiffOfATrainerGoldenComparesWhatBothRead) {
  std::string golden = kSourceDir + "/examples/pytorch-trainer/goldens/pytorch-trainer/cpu-x86_64-avx2.json";
  Result r = lockstep("env --diff " + golden);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("a team trainer's record, compared with this machine and its interpreter /usr/bin/python3: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" field(s) a run sets itself (its determinism contract, loader, modules imported) are left out"),
            std::string::npos)
      << r.output;
  // What lockstep sets for a trainer run is the same here: never a difference.
  for (const char* set : {"determinism.", "env.OMP_NUM_THREADS", "env.MKL_NUM_THREADS", "env.TZ", "python.module."})
    EXPECT_EQ(r.output.find(set), std::string::npos) << set << "\n" << r.output;
  // A record is data: the program it names as its interpreter, and the
  // environment it records, are never run or used (a CI artifact or a
  // merge request's golden could name anything).
  fs::path d = fs::temp_directory_path() / ("lockstep-env-record-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::string marker = (d / "ran").string();
  write_file_atomically((d / "evil.sh").string(), "#!/bin/sh\ntouch '" + marker + "'\n");
  fs::permissions(d / "evil.sh", fs::perms::owner_all);
  nlohmann::json rec = parse_json_file(golden);
  rec.erase("provenance");
  rec.erase("content_hash");
  rec["fingerprint"]["python.executable"]["value"] = (d / "evil.sh").string();
  rec["fingerprint"]["trainer.env.PATH"] = {{"value", d.string()}, {"relevant", true}};
  write_file_atomically((d / "record.json").string(), pretty_dump(rec));
  Result evil = lockstep("env --diff " + (d / "record.json").string() + " --config " + kSourceDir +
                         "/examples/pytorch-trainer/smoke/pytorch-trainer.json");
  EXPECT_EQ(evil.code, 0) << evil.output;
  EXPECT_FALSE(fs::exists(marker)) << evil.output;
  EXPECT_NE(evil.output.find("its interpreter /usr/bin/python3"), std::string::npos) << evil.output;
  Result none = lockstep("env --diff " + (d / "record.json").string());
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("a team trainer's record of smoke 'pytorch-trainer', and no config of that smoke in "),
            std::string::npos) << none.output;
  EXPECT_NE(none.output.find(": pass --config SMOKE (its trainer.command names the interpreter to ask; lockstep "
                             "never runs a program a record names)"),
            std::string::npos) << none.output;
  fs::remove_all(d);
  Result config = lockstep("env --diff " + kSourceDir + "/examples/pytorch-trainer/smoke/pytorch-trainer.json");
  EXPECT_EQ(config.code, 2) << config.output;
  EXPECT_NE(config.output.find("pytorch-trainer.json: a smoke config, not a record; pass the smoke's golden"),
            std::string::npos) << config.output;
  Result device = lockstep("env --device cpu --diff " + golden);
  EXPECT_EQ(device.code, 2) << device.output;
  EXPECT_NE(device.output.find("a team trainer's record; the diff uses the record's device; drop --device"),
            std::string::npos) << device.output;
}

// env --diff applies the record's contract: its fields are checked first,
// --device cannot contradict it, and a CUDA record where CUDA is unusable
// is exit 3 after the diff.
TEST(CliCuda, EnvDiffChecksTheRecord) {
  fs::path p = scratch("env-diff");
  std::string rec = (p / "run.json").string();
  ASSERT_EQ(lockstep("run " + kSmoke + " --quiet --record " + rec).code, 0);
  nlohmann::json j = parse_json_file(rec);
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json e = j;
    edit(e);
    std::string path = (p / "edited.json").string();
    write_file_atomically(path, pretty_dump(e));
    return path;
  };
  std::string huge = edited([](nlohmann::json& e) { e["contract"]["intra_op_threads"] = "100000"; });
  Result threads = lockstep("env --diff " + huge);
  EXPECT_EQ(threads.code, 2) << threads.output;
  EXPECT_NE(threads.output.find("edited.json: contract.intra_op_threads: expected an integer in [1, 1024], got \"100000\""),
            std::string::npos)
      << threads.output;
  Result conflict = lockstep("env --device cuda --diff " + rec);
  EXPECT_EQ(conflict.code, 2) << conflict.output;
  EXPECT_NE(conflict.output.find("the record is a cpu run"), std::string::npos) << conflict.output;
  std::string cuda = edited([](nlohmann::json& e) { e["device"] = "cuda"; });
  Result unusable = lockstep("env --diff " + cuda);
  EXPECT_EQ(unusable.code, 3) << unusable.output;
  EXPECT_NE(unusable.output.find("a CUDA record, but CUDA is not usable here: this lockstep is linked against a CPU-only"),
            std::string::npos)
      << unusable.output;
}

// The GPU suite's configs (gpu/smoke/, checked by the smoke-gpu job) are
// valid: on this CPU-only build they get as far as the CUDA preflight.
TEST(CliCuda, GpuSuiteConfigsReachTheCudaPreflight) {
  int seen = 0;
  for (const auto& e : fs::directory_iterator(kSourceDir + "/gpu/smoke")) {
    if (e.path().extension() != ".json") continue;
    ++seen;
    Result r = lockstep("run " + e.path().string() + " --record never-written.json");
    EXPECT_EQ(r.code, 3) << e.path() << "\n" << r.output;
    EXPECT_NE(r.output.find("device is \"cuda\" but CUDA is not usable"), std::string::npos) << r.output;
  }
  EXPECT_GE(seen, 1);
}

TEST(CliCuda, StubDriverLibraryIsNamed) {
  Result r = lockstep("env --device cuda", kWithFakeDriver + " FAKE_CUDA_INIT_RESULT=34");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("cuda.gpu_name"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)"), std::string::npos) << r.output;
}

TEST(CliErrors, InvalidCublasWorkspaceConfigInStrictModeIsExit3) {
  Result r = lockstep("run " + kSmoke + " --record never-written.json", "CUBLAS_WORKSPACE_CONFIG=:0:0");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("CUBLAS_WORKSPACE_CONFIG=:0:0"), std::string::npos) << r.output;
}

TEST(CliErrors, MissingDataFileIsExit2) {
  fs::path p = scratch("nodata", [](nlohmann::json& c) { c["data"]["path"] = "no-such-file.csv"; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("data.path: expected an existing data file; " + (p / "smoke/no-such-file.csv").string() +
                          " does not exist (a relative path is read from the config's folder, " +
                          (p / "smoke").string() + "; commit the file there"),
            std::string::npos)
      << r.output;
  // A fetched dataset's name without {data}/ is pointed at; {data} itself
  // says how to fetch.
  fs::path q = scratch("nodata-plain", [](nlohmann::json& c) { c["data"]["path"] = "digits.csv.gz"; });
  r = lockstep("run " + (q / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("exists: did you mean \"{data}/digits.csv.gz\"?)"), std::string::npos) << r.output;
  r = lockstep("run " + (q / "smoke/digits-cnn.json").string(), "LOCKSTEP_DATA_DIR=" + (q / "empty").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << r.output;
  r = lockstep("run " + kSmoke, "LOCKSTEP_DATA_DIR=" + (q / "empty").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find((q / "empty").string() + "/digits.csv.gz does not exist ({data} is $LOCKSTEP_DATA_DIR"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ci/fetch-data.sh"), std::string::npos) << r.output;
  fs::remove_all(p);
  fs::remove_all(q);
}

// A relative data path is the team's own file beside the config: the same
// data read from there gives the same batches as from {data}.
TEST(CliPaths, ARelativeDataPathIsReadBesideTheConfig) {
  fs::path p = scratch("beside", [](nlohmann::json& c) { c["data"]["path"] = "data/digits.csv.gz"; });
  fs::create_directories(p / "smoke" / "data");
  fs::copy_file(data_dir() + "/digits.csv.gz", p / "smoke" / "data" / "digits.csv.gz");
  Result r = lockstep("probe " + (p / "smoke/digits-cnn.json").string() + " --record " + (p / "beside.json").string(),
                      "", (p / "smoke" / "data").string());
  EXPECT_EQ(r.code, 0) << r.output;
  Result fetched = lockstep("probe " + kSmoke + " --record " + (p / "fetched.json").string());
  ASSERT_EQ(fetched.code, 0) << fetched.output;
  nlohmann::json a = parse_json_file((p / "beside.json").string());
  nlohmann::json b = parse_json_file((p / "fetched.json").string());
  EXPECT_EQ(a["probes"], b["probes"]);
  EXPECT_EQ(a["fingerprint"]["data.file_xxh3"], b["fingerprint"]["data.file_xxh3"]);
  fs::path q = scratch("brace", [](nlohmann::json& c) { c["data"]["path"] = "{dat}/digits.csv.gz"; });
  Result bad = lockstep("probe " + (q / "smoke/digits-cnn.json").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("data.path: expected a path relative to the config's folder, an absolute path, or "
                            "\"{data}/<name>\""),
            std::string::npos)
      << bad.output;
  fs::remove_all(p);
  fs::remove_all(q);
}

// The ATen CPU capability changes the platform key, leads the
// environment diff, and changes the training results on the same binary.
TEST(CliEnv, CpuCapabilityChangesKeyDiffAndResults) {
  fs::path p = scratch("capability");
  std::string a = (p / "default.json").string(), b = (p / "avx2.json").string();
  ASSERT_EQ(lockstep("run " + kSmoke + " --quiet --record " + a, "ATEN_CPU_CAPABILITY=default").code, 0);
  ASSERT_EQ(lockstep("run " + kSmoke + " --quiet --record " + b, "ATEN_CPU_CAPABILITY=avx2").code, 0);
  auto ja = parse_json_file(a), jb = parse_json_file(b);
  EXPECT_EQ(ja["platform"], "cpu-x86_64-default");
  EXPECT_EQ(jb["platform"], "cpu-x86_64-avx2");
  EXPECT_NE(ja["series"]["loss"]["bits"], jb["series"]["loss"]["bits"]);
  Result diff = lockstep("env --diff " + a, "ATEN_CPU_CAPABILITY=avx2");
  EXPECT_EQ(diff.code, 0) << diff.output;
  auto first_field = diff.output.find("\n* ");
  ASSERT_NE(first_field, std::string::npos) << diff.output;
  EXPECT_EQ(diff.output.substr(first_field + 3, 14), "cpu.capability") << diff.output;
  EXPECT_NE(diff.output.find(" determinism-relevant (*: a check against this record would use the cross-stack lane)\n"),
            std::string::npos)
      << diff.output;
  // Across capabilities the digits smoke stays within its tolerances.
  Result cmp = lockstep("compare " + a + " " + b + " --config " + kSmoke);
  EXPECT_EQ(cmp.code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("lane: cross-stack"), std::string::npos) << cmp.output;
}

TEST(CliEnv, DirtyWorkTreeIsReportedWithFileNames) {
  fs::path p = scratch("env-dirty");
  std::string git = "cd " + p.string() + " && git -c init.defaultBranch=main init -q && git -c user.name=t -c user.email=t@t add -A && git -c user.name=t -c user.email=t@t commit -qm init";
  ASSERT_EQ(std::system(git.c_str()), 0);
  std::ofstream(p / "smoke" / "digits-cnn.json", std::ios::app) << "\n";
  std::ofstream(p / "new-file.txt") << "x";
  Result r = lockstep("env --format json", "", p.string());
  ASSERT_EQ(r.code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["fingerprint"]["git.dirty"]["value"], "new-file.txt smoke/digits-cnn.json");
  EXPECT_EQ(j["fingerprint"]["git.branch"]["value"], "main");
  EXPECT_EQ(j["fingerprint"]["git.commit"]["value"].get<std::string>().size(), 40u);
  EXPECT_EQ(j["platform"].get<std::string>().rfind("cpu-", 0), 0u);
}

TEST(CliErrors, MinDriverOnAMachineWithoutDriverIsExit3) {
  fs::path p = scratch("driver", [](nlohmann::json& c) {
    c["device"] = "cuda";
    c["min_driver"] = "535.104";
  });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("min_driver"), std::string::npos) << r.output;
}

TEST(CliErrors, ZeroStepsAndBadNamesAreExit2) {
  fs::path p = scratch("zero", [](nlohmann::json& c) { c["steps"] = 0; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("steps: expected an integer in [1, 1000000], got 0"), std::string::npos) << r.output;
  fs::path q = scratch("dotdot", [](nlohmann::json& c) { c["name"] = ".."; });
  Result n = lockstep("run " + (q / "smoke/digits-cnn.json").string());
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("name: expected a name of letters"), std::string::npos) << n.output;
}

TEST(CliErrors, OutputsNeverOverwriteInputsOrGoldens) {
  fs::path p = scratch("overwrite");
  std::string cfg = (p / "smoke/digits-cnn.json").string();
  Result over_config = lockstep("run " + cfg + " --record " + cfg);
  EXPECT_EQ(over_config.code, 2) << over_config.output;
  EXPECT_NE(over_config.output.find("refusing to write an output over an input"), std::string::npos);
  Result into_goldens = lockstep("run " + cfg + " --record " + (p / "goldens/digits-cnn/cpu-x86_64-avx2.json").string());
  EXPECT_EQ(into_goldens.code, 2) << into_goldens.output;
  EXPECT_FALSE(fs::exists(p / "goldens"));
  nlohmann::json after = parse_json_file(cfg);
  EXPECT_EQ(after["name"], "digits-cnn");
}

TEST(CliErrors, ToleranceKeyTypoIsExit2) {
  fs::path p = scratch("toltypo", [](nlohmann::json& c) { c["tolerance"]["series"]["los"] = {{"rtol", 1e-3}}; });
  Result r = lockstep("run " + (p / "smoke/digits-cnn.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("tolerance.series.los: expected a recorded series"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(did you mean 'loss'?)"), std::string::npos) << r.output;
}

TEST(CliErrors, UsageErrorsAreExit2) {
  EXPECT_EQ(lockstep("").code, 2);
  EXPECT_EQ(lockstep("frobnicate").code, 2);
  EXPECT_EQ(lockstep("compare onlyone").code, 2);
  EXPECT_EQ(lockstep("--version").code, 0);
}

// One class for one cause, printed and returned alike: an --out that is a
// file is the user's mistake (2), said once before any run.
TEST(CliErrors, OutOntoAFileIsOneUsageError) {
  fs::path p = scratch("out-file");
  write_file_atomically((p / "out").string(), "not a folder");
  for (const char* cmd : {"check", "bless"}) {
    Result r = lockstep(std::string(cmd) + " " + (p / "smoke").string() + " --reason x --out " + (p / "out").string());
    if (std::string(cmd) == "check")
      r = lockstep("check " + (p / "smoke").string() + " --out " + (p / "out").string());
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("lockstep: error: " + (p / "out").string() + ": --out must be a folder"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("ENVIRONMENT"), std::string::npos) << r.output;
  }
  Result empty = lockstep("check " + (p / "smoke").string() + " --out ''");
  EXPECT_EQ(empty.code, 2) << empty.output;
  EXPECT_NE(empty.output.find("--out: expected a value, got an empty string"), std::string::npos) << empty.output;
  Result in_goldens = lockstep("check " + (p / "smoke").string() + " --out " + (p / "goldens" / "x").string());
  EXPECT_EQ(in_goldens.code, 2) << in_goldens.output;
  EXPECT_NE(in_goldens.output.find("--out must not be inside the goldens folder"), std::string::npos) << in_goldens.output;
  EXPECT_FALSE(fs::exists(p / "goldens"));
}

// Millions of rows in batches of one would fill the machine with probes.
TEST(CliErrors, TooManyProbeBatchesIsExit2NamingTheField) {
  fs::path p = scratch("max-batches", [](nlohmann::json& c) {
    c["data"]["batch_size"] = 1;
    c["data"]["max_batches"] = 100;
  });
  Result r = lockstep("probe " + (p / "smoke" / "digits-cnn.json").string() + " --record " + (p / "p.json").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("digits-cnn.json: data.max_batches: expected at most 100 batches in the data-only pass; 1797 "
                          "samples in batches of 1 x 1 epoch(s) make 1797"),
            std::string::npos)
      << r.output;
}

// Two writers of one goldens folder take turns; a temporary left by a
// killed writer is named by verify-goldens with the command that removes
// it, and the next bless removes it itself.
TEST(CliGoldenWriters, ConcurrentBlessesTakeTurnsAndStaleTemporariesAreCleared) {
  fs::path p = scratch("writers", [](nlohmann::json& c) { c.erase("resume_at"); });
  std::string smoke = (p / "smoke").string();
  std::string bless = std::string("env -u CI ") + test_paths::lockstep_binary() + " bless " + smoke + " --reason turns --out ";
  Result both = shell("(" + bless + (p / "out-a").string() + " > " + (p / "a.log").string() + " 2>&1 & " + bless +
                      (p / "out-b").string() + " > " + (p / "b.log").string() + " 2>&1; wait $!; b=$?; wait; echo b=$b)");
  std::string a = read_file((p / "a.log").string()), b = read_file((p / "b.log").string());
  EXPECT_NE(a.find("blessed "), std::string::npos) << a;
  EXPECT_NE(b.find("blessed "), std::string::npos) << b;
  // Whichever came second waited, and its summary is against the first's golden.
  EXPECT_TRUE(a.find("waiting for process") != std::string::npos || b.find("waiting for process") != std::string::npos)
      << a << b;
  EXPECT_TRUE(a.find("no value changed against the golden it replaces") != std::string::npos ||
              b.find("no value changed against the golden it replaces") != std::string::npos)
      << a << b;
  EXPECT_EQ(lockstep("verify-goldens " + (p / "goldens").string()).code, 0);

  // A temporary of a writer that has exited.
  fs::path dir = p / "goldens" / "digits-cnn";
  std::string stale;
  for (auto& e : fs::directory_iterator(dir)) stale = (dir / ("." + e.path().filename().string() + ".tmp.999999.Ab12Cd")).string();
  write_file_atomically(stale, "half a golden");
  Result v = lockstep("verify-goldens " + (p / "goldens").string());
  EXPECT_EQ(v.code, 2) << v.output;
  EXPECT_NE(v.output.find(stale + ": a temporary file of an interrupted write (process 999999 has exited; the next "
                                  "bless or accept removes its own), remove it: rm -- '" + stale + "'"),
            std::string::npos)
      << v.output;
  Result again = lockstep("bless " + smoke + " --reason again --out " + (p / "out-c").string());
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("removed " + stale), std::string::npos) << again.output;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(lockstep("verify-goldens " + (p / "goldens").string()).code, 0);
  EXPECT_FALSE(fs::exists(p / "goldens" / ".lockstep.lock"));

  // A lock file nobody holds, and a FIFO named like a golden.
  write_file_atomically((p / "goldens" / ".lockstep.lock").string(), "12345\n");
  ASSERT_EQ(shell("mkfifo " + (dir / "cpu-x86_64-fifo.json").string()).code, 0);
  Result leftovers = lockstep("verify-goldens " + (p / "goldens").string());
  EXPECT_EQ(leftovers.code, 2) << leftovers.output;
  // The lock is stale and harmless: a note, not a problem (the FIFO is one).
  EXPECT_NE(leftovers.output.find("verify-goldens: note: " + (p / "goldens" / ".lockstep.lock").string() +
                                  ": a goldens lock nobody holds (a bless or accept was killed); it is stale and "
                                  "harmless"),
            std::string::npos)
      << leftovers.output;
  EXPECT_NE(leftovers.output.find("verify-goldens: 1 problem(s)"), std::string::npos) << leftovers.output;
  EXPECT_NE(leftovers.output.find((dir / "cpu-x86_64-fifo.json").string() + ": not a regular file"), std::string::npos)
      << leftovers.output;
  fs::remove(dir / "cpu-x86_64-fifo.json");

  // --no-wait while the folder is held: exit 3 naming the holder.
  Result held = shell("cd " + p.string() + " && exec 9>goldens/.lockstep.lock && flock 9 && echo 4242 >&9 && env -u CI " +
                      test_paths::lockstep_binary() + " bless " + smoke + " --reason x --no-wait --out " + (p / "out-d").string());
  EXPECT_EQ(held.code, 3) << held.output;
  EXPECT_NE(held.output.find("is locked by process 4242"), std::string::npos) << held.output;
}

// check --rerun-failing on a real regression: the rerun reproduces the
// failing run bit for bit, so exit 1 stands and says so.
TEST_F(Cli, ARegressionReproducedByItsRerunSaysSo) {
  fs::path p = scratch("rerun-lr", [](nlohmann::json& c) { c.erase("resume_at"); },
                       kSourceDir + "/smoke/wine-mlp.json");
  std::string s = (p / "smoke").string(), out = (p / "out").string();
  ASSERT_EQ(lockstep("bless " + s + " --reason base --out " + out).code, 0);
  nlohmann::json cfg = parse_json_file(s + "/wine-mlp.json");
  cfg["optimizer"]["lr"] = cfg["optimizer"]["lr"].get<double>() * 1.001;
  write_file_atomically(s + "/wine-mlp.json", pretty_dump(cfg));
  Result r = lockstep("check " + s + " --repeat 1 --rerun-failing 1 --out " + out);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(" (reproduced 1 of 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 fresh rerun(s) on "), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(p / "out" / "wine-mlp" / "rerun-1.json"));
}

}  // namespace
}  // namespace lockstep
