// The nightly ledgers from the command line: two CI jobs, each in its own
// clone of a team repository, pull the lockstep-history branch, check with
// --history and push; the second push is refused (the first moved the
// branch), merged and pushed again, so a third clone reads both nights.
// `history add` enters a record made elsewhere once, and a folder without
// ledgers is exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_helpers.h"
#include "core/atomic_file.h"

namespace lockstep::cli_test {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-history-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(HistoryCli, TwoJobsPushingOneAfterTheOtherKeepBothNights) {
  fs::path d = fresh("branch");
  std::string remote = (d / "remote.git").string();
  // The team repository: wine-mlp's smoke and golden, on a bare remote.
  ASSERT_EQ(shell("git init -q --bare -b main '" + remote + "' && git init -q -b main '" + (d / "seed").string() +
                  "' && cd '" + (d / "seed").string() + "' && mkdir smoke goldens && cp '" + kSourceDir +
                  "/smoke/wine-mlp.json' smoke/ && cp -r '" + kSourceDir + "/goldens/wine-mlp' goldens/ && "
                  "git add -A && git -c user.name=t -c user.email=t@t commit -qm team && git push -q '" + remote +
                  "' main").code, 0);
  for (const char* job : {"a", "b", "c"})
    ASSERT_EQ(shell("git clone -q '" + remote + "' '" + (d / job).string() + "' && git -C '" + (d / job).string() +
                    "' config user.name 'CI " + job + "' && git -C '" + (d / job).string() +
                    "' config user.email ci@example.com").code, 0);
  auto night = [&](const char* job) {
    std::string dir = (d / job).string();
    Result pull = lockstep("history pull lockstep-history", "", dir);
    EXPECT_EQ(pull.code, 0) << pull.output;
    EXPECT_NE(pull.output.find("history: pulled 0 ledger(s) from lockstep-history at origin (the branch does not "
                               "exist there yet: `lockstep history push` makes it); 0 updated in lockstep-history"),
              std::string::npos) << pull.output;
    Result check = lockstep("check smoke/wine-mlp.json --repeat 1 --out out --history lockstep-history", "", dir);
    EXPECT_EQ(check.code, 0) << check.output;
    return dir;
  };
  std::string a = night("a"), b = night("b");  // both pulled before either pushed
  Result pa = lockstep("history push lockstep-history", "", a);
  ASSERT_EQ(pa.code, 0) << pa.output;
  EXPECT_NE(pa.output.find("history: pushed 1 ledger(s) to lockstep-history at origin (commit "), std::string::npos)
      << pa.output;
  Result pb = lockstep("history push lockstep-history", "", b);
  ASSERT_EQ(pb.code, 0) << pb.output;
  EXPECT_NE(pb.output.find(", merged with the remote's entries)"), std::string::npos) << pb.output;
  EXPECT_EQ(shell("git -C '" + b + "' status --porcelain --untracked-files=no").output, "")
      << "the work tree and index are untouched";

  std::string c = (d / "c").string();
  Result pc = lockstep("history pull lockstep-history", "", c);
  ASSERT_EQ(pc.code, 0) << pc.output;
  EXPECT_NE(pc.output.find("history: pulled 1 ledger(s) from lockstep-history at origin; 1 updated in lockstep-history"),
            std::string::npos) << pc.output;
  // A branch that exists but holds no ledger says so (not "does not exist").
  ASSERT_EQ(shell("cd '" + c + "' && git checkout -q --orphan notes && git rm -rqf . && echo x > README && "
                  "git add README && git commit -qm notes && git push -q origin notes:other-branch && "
                  "git checkout -q main").code, 0);
  Result po = lockstep("history pull other --branch other-branch", "", c);
  EXPECT_EQ(po.code, 0) << po.output;
  EXPECT_NE(po.output.find("history: pulled 0 ledger(s) from other-branch at origin (the branch holds no "
                           "<smoke>.jsonl ledger); 0 updated in other"), std::string::npos) << po.output;
  // A branch of code is refused by a pull as by a push: nothing is pulled.
  Result code = lockstep("history pull other --branch main", "", c);
  EXPECT_EQ(code.code, 2) << code.output;
  EXPECT_NE(code.output.find("main:goldens: expected a branch of plain files only"), std::string::npos) << code.output;
  // An empty ledger on the branch is refused, by a pull and by a push.
  ASSERT_EQ(shell("cd '" + c + "' && git fetch -q origin lockstep-history && git checkout -q -b h FETCH_HEAD && "
                  ": > empty.jsonl && git add empty.jsonl && git commit -qm cut && "
                  "git push -q origin h:lockstep-history && git checkout -q main").code, 0);
  for (const char* verb : {"pull", "push"}) {
    Result cut = lockstep(std::string("history ") + verb + " lockstep-history", "", c);
    EXPECT_EQ(cut.code, 2) << verb << ": " << cut.output;
    EXPECT_NE(cut.output.find("empty.jsonl (lockstep-history at origin): expected at least one night"),
              std::string::npos) << verb << ": " << cut.output;
  }
  EXPECT_FALSE(fs::exists(fs::path(c) / "lockstep-history" / "empty.jsonl"));
  Result h = lockstep("history lockstep-history", "", c);
  EXPECT_EQ(h.code, 0) << h.output;
  EXPECT_NE(h.output.find("history: wine-mlp: 2 nights"), std::string::npos) << h.output;
  fs::remove_all(d);
}

TEST(HistoryCli, ARecordIsAddedOnceAndAFolderWithoutLedgersIsExit2) {
  fs::path d = fresh("add");
  std::string run = (d / "run.json").string();
  ASSERT_EQ(lockstep("run " + kSourceDir + "/smoke/wine-mlp.json --record " + run).code, 0);
  Result add = lockstep("history add " + run + " --to " + (d / "h").string());
  EXPECT_EQ(add.code, 0) << add.output;
  EXPECT_NE(add.output.find("-> " + (d / "h" / "wine-mlp.jsonl").string() + " (run "), std::string::npos) << add.output;
  Result again = lockstep("history add " + run + " --to " + (d / "h").string());
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("run_id: expected a run not yet entered"), std::string::npos) << again.output;
  // The record a check entered (its run id holds the check's instance) is
  // the same record: not added again.
  std::string checked = (d / "h2").string();
  Result check = lockstep("check " + kSourceDir + "/smoke/wine-mlp.json --repeat 1 --out " + (d / "out").string() +
                          " --history " + checked);
  EXPECT_EQ(check.code, 0) << check.output;
  Result entered = lockstep("history add " + (d / "out" / "wine-mlp" / "run-1.json").string() + " --to " + checked);
  EXPECT_EQ(entered.code, 2) << entered.output;
  EXPECT_NE(entered.output.find(") is already in the ledger; nothing was added"), std::string::npos) << entered.output;
  // A check's other records beside its report are the same night seen
  // again (a repeat, the resumed run, a variant): not a night of their own.
  const fs::path out = d / "out" / "wine-mlp";
  for (const auto& [name, kind] : std::vector<std::pair<std::string, std::string>>{
           {"run-2.json", "a repeat run"}, {"resumed.json", "the resumed run"},
           {"variant-threads.json", "an equivalence lane's variant run"}}) {
    fs::copy_file(out / "run-1.json", out / name, fs::copy_options::overwrite_existing);
    Result repeat = lockstep("history add " + (out / name).string() + " --to " + (d / "h3").string());
    EXPECT_EQ(repeat.code, 2) << repeat.output;
    EXPECT_NE(repeat.output.find((out / name).string() + ": expected a night's run record; this is " + kind +
                                 " of the check whose report is " + (out / "report.json").string() +
                                 ": its night is its run 1 (`lockstep history add " + (out / "run-1.json").string() +
                                 "`, unless check --history entered it); nothing was added"),
              std::string::npos) << repeat.output;
  }
  EXPECT_FALSE(fs::exists(d / "h3"));
  Result shown = lockstep("history " + (d / "h").string());
  EXPECT_EQ(shown.code, 0) << shown.output;
  EXPECT_NE(shown.output.find("history: wine-mlp: 1 night, "), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("last verdict not compared"), std::string::npos) << shown.output;
  Result golden = lockstep("history add " + kSourceDir + "/goldens/wine-mlp/cpu-x86_64-avx2.json --to " + (d / "h").string());
  EXPECT_EQ(golden.code, 2) << golden.output;
  EXPECT_NE(golden.output.find("expected a run record (lockstep run or import --record); this is a golden"),
            std::string::npos) << golden.output;
  fs::create_directories(d / "empty");
  Result none = lockstep("history " + (d / "empty").string());
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find((d / "empty").string() + ": expected a ledger (<smoke>.jsonl): the folder has none"),
            std::string::npos) << none.output;
  Result push_nothing = lockstep("history push " + (d / "empty").string(), "", d.string());
  EXPECT_EQ(push_nothing.code, 2) << push_nothing.output;
  fs::remove_all(d);
}

// What the history and import commands write never lands on what they read
// or outside their folder.
TEST(HistoryCli, OutputsStayOffTheirInputsAndInsideTheirFolders) {
  fs::path d = fresh("outputs");
  std::string run = (d / "run.json").string(), hist = (d / "h").string();
  ASSERT_EQ(lockstep("run " + kSourceDir + "/smoke/wine-mlp.json --record " + run).code, 0);
  ASSERT_EQ(lockstep("history add " + run + " --to " + hist).code, 0);
  std::string ledger = hist + "/wine-mlp.jsonl", before = read_file(ledger);
  Result onto_ledger = lockstep("history " + hist + " --json " + ledger);
  EXPECT_EQ(onto_ledger.code, 2) << onto_ledger.output;
  Result beside = lockstep("history " + hist + " --html " + hist + "/report.jsonl");
  EXPECT_EQ(beside.code, 2) << beside.output;
  EXPECT_NE(beside.output.find("would stand among the ledgers"), std::string::npos) << beside.output;
  EXPECT_EQ(read_file(ledger), before);
  Result escape = lockstep("import jsonl " + (d / "log.jsonl").string() + " --series loss --name ../escaped --record " +
                           (d / "x.json").string());
  EXPECT_EQ(escape.code, 2) << escape.output;
  EXPECT_NE(escape.output.find("--name ../escaped: a smoke name of 1 to 100 letters"), std::string::npos)
      << escape.output;
  // A run folder read: nothing is written inside it.
  fs::create_directories(d / "run1" / "metrics");
  write_file_atomically((d / "run1" / "metrics" / "loss").string(), "1000 2.5 0\n1001 2.25 1\n");
  Result inside = lockstep("import mlflow " + (d / "run1").string() + " --series loss --record " +
                           (d / "run1" / "metrics" / "loss").string());
  EXPECT_EQ(inside.code, 2) << inside.output;
  EXPECT_NE(inside.output.find("inside the folder read"), std::string::npos) << inside.output;
  EXPECT_EQ(read_file((d / "run1" / "metrics" / "loss").string()), "1000 2.5 0\n1001 2.25 1\n");
  Result pending_inside = lockstep("import mlflow " + (d / "run1").string() + " --series loss --golden " + kSourceDir +
                                   "/smoke/wine-mlp.json --out " + (d / "run1" / "metrics").string());
  EXPECT_EQ(pending_inside.code, 2) << pending_inside.output;
  EXPECT_NE(pending_inside.output.find("inside the folder read (" + (d / "run1").string() +
                                       "); write the pending golden elsewhere"),
            std::string::npos) << pending_inside.output;
  EXPECT_FALSE(fs::exists(d / "run1" / "metrics" / "wine-mlp"));
  // History lands beside the goldens, never among them.
  Result among = lockstep("check " + kSourceDir + "/smoke/wine-mlp.json --repeat 1 --out " + (d / "out").string() +
                          " --history " + kSourceDir + "/goldens");
  EXPECT_EQ(among.code, 2) << among.output;
  EXPECT_NE(among.output.find("--history " + kSourceDir + "/goldens: inside the goldens folder"), std::string::npos)
      << among.output;
  EXPECT_FALSE(fs::exists(kSourceDir + "/goldens/wine-mlp.jsonl"));
  // Nor in check's own output folder (whose lock check holds): refused, not a wait.
  Result in_out = lockstep("check " + kSourceDir + "/smoke/wine-mlp.json --repeat 1 --out " + (d / "out").string() +
                           " --history " + (d / "out").string());
  EXPECT_EQ(in_out.code, 2) << in_out.output;
  EXPECT_NE(in_out.output.find("--history " + (d / "out").string() + ": inside the output folder " +
                               (d / "out").string() + " (check's own, rewritten every run)"),
            std::string::npos)
      << in_out.output;
  // A ledger that is a link is refused before any run (it is replaced atomically).
  fs::create_directories(d / "linked");
  write_file_atomically((d / "elsewhere.jsonl").string(), "");
  fs::create_symlink(d / "elsewhere.jsonl", d / "linked" / "wine-mlp.jsonl");
  Result linked = lockstep("check " + kSourceDir + "/smoke/wine-mlp.json --repeat 1 --out " + (d / "out2").string() +
                           " --history " + (d / "linked").string());
  EXPECT_EQ(linked.code, 2) << linked.output;
  EXPECT_NE(linked.output.find((d / "linked" / "wine-mlp.jsonl").string() + ": expected a ledger file, not a symbolic "
                               "link (each night replaces it atomically; link the history folder instead)"),
            std::string::npos) << linked.output;
  EXPECT_FALSE(fs::exists(d / "out2" / "wine-mlp")) << "refused before any run";
}

// A log that counts its steps from 1 (Hugging Face, Megatron-LM) is a
// golden of a smoke that logs 0..steps-1 only with --step-offset -1; its
// review is in the tolerance lane, on the series it holds.
TEST(HistoryCli, AOneBasedLogBecomesAPendingGoldenWithAStepOffset) {
  fs::path d = scratch("offset", {}, kSourceDir + "/smoke/wine-mlp.json");
  fs::create_directories(d / "goldens");
  fs::copy(kSourceDir + "/goldens/wine-mlp", d / "goldens" / "wine-mlp");
  std::string smoke = (d / "smoke" / "wine-mlp.json").string();
  nlohmann::json golden = parse_json_file(kSourceDir + "/goldens/wine-mlp/cpu-x86_64-avx2.json");
  nlohmann::json state = {{"global_step", 10}, {"log_history", nlohmann::json::array()}};
  for (int i = 0; i < 10; ++i)
    state["log_history"].push_back({{"step", i + 1}, {"loss", golden["series"]["loss"]["values"][i]}});
  write_file_atomically((d / "trainer_state.json").string(), state.dump());
  std::string import = "import hf-trainer " + (d / "trainer_state.json").string() + " --series loss=loss --golden " +
                       smoke + " --platform cpu-x86_64-avx2 --out " + (d / "pending").string();
  Result unshifted = lockstep(import);
  EXPECT_EQ(unshifted.code, 2) << unshifted.output;
  EXPECT_NE(unshifted.output.find("covers steps 1..10, but the smoke's runs log steps 0..9; a log that counts from 1 "
                                  "(torchtitan, Hugging Face, Megatron-LM) needs --step-offset -1"),
            std::string::npos) << unshifted.output;
  // A log of the first steps only is not a golden of the whole run.
  nlohmann::json cut = state;
  cut["log_history"].erase(cut["log_history"].begin() + 3, cut["log_history"].end());
  write_file_atomically((d / "cut_state.json").string(), cut.dump());
  Result early = lockstep("import hf-trainer " + (d / "cut_state.json").string() + " --series loss=loss --golden " +
                          smoke + " --step-offset -1 --out " + (d / "pending").string());
  EXPECT_EQ(early.code, 2) << early.output;
  EXPECT_NE(early.output.find("covers steps 0..2 (with --step-offset -1), but the smoke's runs log steps 0..9: the log "
                              "stops early"),
            std::string::npos) << early.output;
  EXPECT_FALSE(fs::exists(d / "pending"));
  // Steps 0..8 of a 10-step smoke logged at every step: the last is missing.
  nlohmann::json short_end = state;
  short_end["log_history"].erase(short_end["log_history"].end() - 1);
  write_file_atomically((d / "short_end.json").string(), short_end.dump());
  Result one_short = lockstep("import hf-trainer " + (d / "short_end.json").string() + " --series loss=loss --golden " +
                              smoke + " --step-offset -1 --out " + (d / "pending").string());
  EXPECT_EQ(one_short.code, 2) << one_short.output;
  EXPECT_NE(one_short.output.find("covers steps 0..8 (with --step-offset -1), but the smoke's runs log steps 0..9: the "
                                  "log stops early"),
            std::string::npos) << one_short.output;
  EXPECT_FALSE(fs::exists(d / "pending"));
  Result far = lockstep(import + " --step-offset 5");
  EXPECT_EQ(far.code, 2) << far.output;
  EXPECT_NE(far.output.find("covers steps 6..15 (with --step-offset 5), but the smoke's runs log steps 0..9; the log's "
                            "own steps are 1..10: check --step-offset"),
            std::string::npos) << far.output;
  Result odd_platform = lockstep("import hf-trainer " + (d / "trainer_state.json").string() +
                                 " --series loss=loss --step-offset -1 --platform dgx_h100 --golden " + smoke);
  EXPECT_EQ(odd_platform.code, 2) << odd_platform.output;
  EXPECT_NE(odd_platform.output.find("--platform dgx_h100: expected a platform key as runs name their goldens, such as "
                                     "cpu-x86_64-avx2 or cuda-sm90"),
            std::string::npos) << odd_platform.output;
  // Steps 1..9 of a 10-step smoke fit without an offset, step 0 left out:
  // filed, and the likely off-by-one said.
  nlohmann::json short_by_one = state;
  short_by_one["log_history"].erase(short_by_one["log_history"].end() - 1);
  write_file_atomically((d / "from_one.json").string(), short_by_one.dump());
  Result from_one = lockstep("import hf-trainer " + (d / "from_one.json").string() + " --series loss=loss --golden " +
                             smoke + " --platform cpu-x86_64-avx2 --out " + (d / "pending").string());
  EXPECT_EQ(from_one.code, 0) << from_one.output;
  EXPECT_NE(from_one.output.find("note: every series starts at step 1, so the golden holds no step 0: if the log "
                                 "counts its steps from 1, import again with --step-offset -1"),
            std::string::npos) << from_one.output;
  Result shifted = lockstep(import + " --step-offset -1");
  ASSERT_EQ(shifted.code, 0) << shifted.output;
  Result again = lockstep(import + " --step-offset -1");  // an earlier import's pending golden is replaced
  ASSERT_EQ(again.code, 0) << again.output;
  Result review = lockstep("review " + (d / "pending").string() + " --goldens " + (d / "goldens").string());
  EXPECT_EQ(review.code, 0) << review.output;
  EXPECT_NE(review.output.find("PASS (an imported pending golden's curves, within tolerance)"), std::string::npos)
      << review.output;
  EXPECT_NE(review.output.find("lane: cross-stack"), std::string::npos) << review.output;
  EXPECT_EQ(review.output.find("contract-mismatch"), std::string::npos) << review.output;
  // The loss curve alone would replace a golden that checks far more: said
  // in review, refused by accept unless asked for.
  const std::string drops = "the series grad_norm, grad_norm/fc1.bias, grad_norm/fc1.weight, grad_norm/fc2.bias, "
                            "grad_norm/fc2.weight, grad_norm/head.bias and 3 more, batch probes, trained-batch probes, "
                            "module trace, parameter hashes, per-step digests, initialisation statistics, "
                            "determinism contract and "
                            "resources (step time, peak RSS)";
  EXPECT_NE(review.output.find("NARROWER: the pending golden drops " + drops.substr(0, 60)), std::string::npos)
      << review.output;
  std::string accept = "accept " + (d / "pending").string() + " --goldens " + (d / "goldens").string() +
                       " --smoke " + (d / "smoke").string() + " --reason 'moved from HF' --allow-dirty";
  Result refused = lockstep(accept);
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("it drops " + drops + " (an imported curve?): accept --allow-narrower to replace it "
                                "anyway"),
            std::string::npos) << refused.output;
  const std::string golden_file = (d / "goldens" / "wine-mlp" / "cpu-x86_64-avx2.json").string();
  EXPECT_EQ(parse_json_file(golden_file)["provenance"]["action"], "bless") << "the golden is unchanged";
  Result narrower = lockstep(accept + " --allow-narrower");
  ASSERT_EQ(narrower.code, 0) << narrower.output;
  EXPECT_NE(narrower.output.find("  narrower than the golden it replaces: no longer checked: " + drops.substr(0, 40)),
            std::string::npos) << narrower.output;
  EXPECT_EQ(parse_json_file(golden_file)["provenance"]["action"], "accept");
  EXPECT_EQ(parse_json_file(golden_file)["provenance"]["narrower"], drops);
  Result verify = lockstep("verify-goldens " + (d / "goldens").string() + " --smoke " + (d / "smoke").string());
  EXPECT_EQ(verify.code, 0) << verify.output;
}

}  // namespace
}  // namespace lockstep::cli_test
