// review_pending() and accept_pending() in-process: what a pending golden
// must be to replace a golden.
#include "gate/pending.h"
#include "gate/provenance.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "machine/git_state.h"
#include "gate/gate_fixture.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace {

using testing::GateProject;
using testing::make_gate_record;

// A pending golden of the scratch smoke, as a failing check leaves it.
std::string write_pending(const GateProject& p, RunRecord record) {
  record.config_hash = load_smoke_config(p.smoke_file()).config_hash;
  Golden g;
  g.record = std::move(record);
  g.provenance = stamp_provenance("check", "(pending review: check failed: train step 0: loss)", GitState{}, 2);
  std::string path = p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new";
  write_golden(path, g);
  return path;
}

std::string expect_refusal(const PendingSet& set) {
  try {
    accept_pending(set, "approved");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(Pending, ReviewComparesWithTheCurrentGoldenAndAcceptStampsTheReason) {
  GateProject p("pending");
  RunRecord golden = make_gate_record();
  golden.config_hash = load_smoke_config(p.smoke_file()).config_hash;
  std::string current = p.write_golden(golden);
  RunRecord moved = make_gate_record();
  moved.series["loss"].values[0] = static_cast<float>(2.4);
  std::string pending = write_pending(p, moved);

  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  ASSERT_EQ(set.files, std::vector<std::string>{pending});
  auto reviews = review_pending(set);
  ASSERT_EQ(reviews.size(), 1u);
  EXPECT_FALSE(reviews[0].is_new);
  EXPECT_EQ(reviews[0].current, current);
  ASSERT_TRUE(reviews[0].verdict.has_value());
  EXPECT_EQ(reviews[0].verdict->exit_code(), ExitCode::kRegression);

  auto accepted = accept_pending(set, "approved: new loss");
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].target, current);
  EXPECT_EQ(accepted[0].golden.provenance.reason, "approved: new loss");
  EXPECT_EQ(accepted[0].golden.provenance.action, "accept");
  EXPECT_EQ(accepted[0].golden.provenance.replaces, read_golden(current).content_hash);
  EXPECT_EQ(reviews[0].current_hash, read_golden(current).content_hash);
  EXPECT_EQ(accepted[0].golden.provenance.runs, 2);
  EXPECT_EQ(accepted[0].golden.record.series.at("loss").values[0], static_cast<double>(static_cast<float>(2.4)));
}

// A pending golden is held to its smoke's config: without the smoke folder
// nothing can be reviewed or accepted, and the refusal says which folder
// and how to name another. A file name whose stack label is empty is no
// pending golden of check's making.
TEST(Pending, NoSmokeFolderOrAnEmptyStackLabelIsRefusedByName) {
  GateProject p("pending-gone");
  std::string pending = write_pending(p, make_gate_record());
  std::string gone = p.root().string() + "/no-smoke";
  try {
    load_pending(p.out_dir(), p.goldens_dir(), gone);
    ADD_FAILURE() << "loaded without a smoke folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), p.out_dir() + ": its pending goldens are held to their smoke configs, and there "
                                                   "is no smoke folder " + gone + " (deleted or moved since the check?); "
                                                   "give it with --smoke DIR");
  }
  std::string unlabeled_by_accident = p.out_dir() + "/unit/cpu-x86_64-avx2@.golden.new";
  std::filesystem::rename(pending, unlabeled_by_accident);
  EXPECT_EQ(expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), "")),
            unlabeled_by_accident + ": expected a pending golden named <platform>[@<stack label>].golden.new as check "
                                    "files it, got \"cpu-x86_64-avx2@.golden.new\" (a stack label is 1..40 letters, "
                                    "digits, '.', '_' and '-')");
}

// A dangling link, FIFO or folder named like a pending golden is refused
// by name (it was skipped unseen; a FIFO would block the read).
TEST(Pending, AnEntryNamedLikeAPendingGoldenThatIsNoFileIsRefused) {
  GateProject p("pending-no-file");
  write_pending(p, make_gate_record());
  const std::string odd = p.out_dir() + "/unit/cpu-x86_64-avx512.golden.new";
  auto refusal = [&]() -> std::string {
    try {
      load_pending(p.out_dir(), p.goldens_dir(), "");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return e.what();
    }
    ADD_FAILURE() << "loaded " << odd;
    return "";
  };
  const std::string tail = "; remove it or give the check's own --out folder";
  std::filesystem::create_symlink(p.out_dir() + "/nowhere", odd);
  EXPECT_EQ(refusal(), odd + ": expected a pending golden file as check writes it, got a dangling link" + tail);
  std::filesystem::remove(odd);
  ASSERT_EQ(::mkfifo(odd.c_str(), 0600), 0);
  EXPECT_EQ(refusal(), odd + ": expected a pending golden file as check writes it, got a FIFO" + tail);
  std::filesystem::remove(odd);
  std::filesystem::create_directories(odd);
  EXPECT_EQ(refusal(), odd + ": expected a pending golden file as check writes it, got a folder" + tail);
  std::filesystem::remove(odd);
  // A link to a real golden file elsewhere: not what check wrote there.
  const std::string elsewhere = p.out_dir() + "/elsewhere.json";
  std::filesystem::copy_file(p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new", elsewhere);
  std::filesystem::create_symlink(elsewhere, odd);
  EXPECT_EQ(refusal(), odd + ": expected a pending golden file as check writes it, got a symbolic link (to " +
                           elsewhere + ")" + tail);
}

// What a replacing golden would stop checking: series (by name, then
// steps), probes, hashes, the op trace, the contract, resources.
TEST(Pending, DroppedChecksNameWhatTheReplacementNoLongerChecks) {
  RunRecord current = make_gate_record();
  current.hashes = {{"fc.weight", std::string(32, 'c')}};
  current.resources.peak_rss_bytes = 1 << 20;
  current.module_trace.ops.push_back({1, "forward", "fc", "aten.addmm.default", std::string(32, 'a'), -1});
  EXPECT_TRUE(dropped_checks(current, current).empty());
  RunRecord pending = current;
  pending.series.erase("grad_norm");
  pending.series["loss"].values.pop_back();
  pending.probes.clear();
  pending.hashes.clear();
  pending.contract.clear();
  pending.resources = {};
  pending.module_trace.ops.clear();
  EXPECT_EQ(dropped_checks(current, pending),
            (std::vector<std::string>{"series grad_norm", "1 of series loss's 2 steps", "batch probes",
                                      "per-op hashes (trace.ops)", "parameter hashes", "determinism contract",
                                      "resources (step time, peak RSS)"}));
  // Kept with fewer entries is narrower too.
  RunRecord fewer = current;
  ASSERT_GE(fewer.probes.size(), 2u);
  fewer.probes.pop_back();
  EXPECT_EQ(dropped_checks(current, fewer),
            std::vector<std::string>{"1 of the " + std::to_string(current.probes.size()) + " batch probes"});
  // A multi-seed golden's mean and std, and per-op hashes, count too.
  RunRecord seeded = current;
  seeded.series["loss"].mean = seeded.series["loss"].values;
  seeded.series["loss"].std = std::vector<double>(seeded.series["loss"].values.size(), 0.1);
  seeded.module_trace.ops.push_back(seeded.module_trace.ops.front());
  EXPECT_EQ(dropped_checks(seeded, current),
            (std::vector<std::string>{"the multi-seed mean and std of loss (the sigma rules' reference)",
                                      "1 of the 2 per-op hashes"}));
  RunRecord wider = current;
  wider.series["lr"] = wider.series["loss"];
  EXPECT_TRUE(dropped_checks(current, wider).empty()) << "more is never narrower";
}

// accept refuses a narrower golden unless asked, and then records what it dropped.
TEST(Pending, ANarrowerGoldenIsAcceptedOnlyOnRequestAndRecorded) {
  GateProject p("narrower");
  RunRecord golden = make_gate_record();
  golden.config_hash = load_smoke_config(p.smoke_file()).config_hash;
  p.write_golden(golden);
  RunRecord loss_only = make_gate_record();
  loss_only.series.erase("grad_norm");
  write_pending(p, loss_only);
  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  ASSERT_EQ(review_pending(set)[0].dropped, std::vector<std::string>{"series grad_norm"});
  EXPECT_NE(expect_refusal(set).find("cpu-x86_64-avx2.golden.new: expected a golden that checks what "),
            std::string::npos);
  auto accepted = accept_pending(set, "approved", false, true);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].dropped, std::vector<std::string>{"series grad_norm"});
  EXPECT_EQ(accepted[0].golden.provenance.narrower, "series grad_norm");
}

TEST(Pending, AcceptRefusesNonFiniteValuesAsBlessDoes) {
  GateProject p("pending-nan");
  RunRecord r = make_gate_record();
  r.series["grad_norm"].values[1] = NAN;
  std::string path = write_pending(p, r);
  EXPECT_EQ(expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), "")),
            "refusing to accept " + path + ": series.grad_norm.values[1] is non-finite (nan); a golden holds finite "
            "values unless the smoke sets tolerance.allow_nonfinite_golden");
}

// Runs made from uncommitted code (the record's git.dirty) pin what no
// commit holds, even once the tree was committed since: refused unless
// --allow-dirty, which is recorded.
TEST(Pending, AcceptRefusesAGoldenWhoseRunsWereMadeFromADirtyTree) {
  GateProject p("pending-dirty");
  RunRecord r = make_gate_record();
  r.fingerprint["git.dirty"] = {"trainer/train.py", false};
  std::string path = write_pending(p, r);
  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  EXPECT_EQ(expect_refusal(set),
            path + ": its runs were made from uncommitted files (git.dirty: trainer/train.py), so no commit is "
                   "known to reproduce it: commit them, run `lockstep check` again and accept the pending golden that "
                   "check leaves; or accept --allow-dirty, which is recorded");
  auto accepted = accept_pending(set, "approved", /*allow_dirty=*/true);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_TRUE(accepted[0].golden.provenance.allow_dirty);
  // A clean tree's runs are accepted as they are.
  r.fingerprint["git.dirty"] = {"clean", false};
  write_pending(p, r);
  EXPECT_EQ(accept_pending(load_pending(p.out_dir(), p.goldens_dir(), ""), "approved").size(), 1u);
}

// A pending golden made at another commit than the work tree's (a CI job
// on another branch, a merged-result pipeline) is accepted with a note
// naming both: accept cannot compare its data and code with these.
TEST(Pending, AcceptNamesACommitOtherThanTheWorkTrees) {
  GateProject p("pending-commit");
  const std::string git = "cd '" + p.root().string() + "' && git -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(std::system((git + "init -q . && echo 'out/' > .gitignore && " + git + "add -A && " + git +
                         "commit -qm init").c_str()),
            0);
  RunRecord r = make_gate_record();
  r.fingerprint["git.dirty"] = {"clean", false};
  r.fingerprint["git.commit"] = {std::string(40, 'a'), false};
  write_pending(p, r);
  auto accepted = accept_pending(load_pending(p.out_dir(), p.goldens_dir(), ""), "approved");
  ASSERT_EQ(accepted.size(), 1u);
  const GitState here = read_git_state(p.root().string());
  EXPECT_EQ(accepted[0].other_commit,
            "its runs were made at commit aaaaaaaaaaaa, this work tree is at " + here.commit.substr(0, 12) +
                ": its data and code are that commit's; if the smoke's inputs differ here, the next check fails "
                "(run `lockstep check` here to be sure)");
  // Made at this commit: nothing to say.
  r.fingerprint["git.commit"] = {here.commit, false};
  write_pending(p, r);
  EXPECT_EQ(accept_pending(load_pending(p.out_dir(), p.goldens_dir(), ""), "approved")[0].other_commit, "");
}

// The precision guard holds where a golden is kept, not only in check: a
// curve its source rounded (4 decimals) is refused for an exact smoke.
TEST(Pending, AcceptRefusesASeriesItsSourceRoundedUnderAnExactRule) {
  GateProject p("pending-rounded", [](nlohmann::json& c) { c["tolerance"] = {{"series", {{"default", {{"exact", true}}}}}}; });
  RunRecord r = make_gate_record();
  r.series["loss"].rounded = 1e-4;
  std::string path = write_pending(p, r);
  std::string what = expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), ""));
  EXPECT_EQ(what.rfind("refusing to accept " + path + ": series loss: its values are rounded to 0.0001 by their "
                       "source, so the rule exact would compare the rounding, not the runs; give "
                       "tolerance.series.loss an atol of at least 5e-05 (in ",
                       0),
            0u)
      << what;
}

// A pending golden of a smoke deleted since the check is left out, said,
// and the others are reviewed and accepted; only such ones is exit 2.
TEST(Pending, APendingGoldenOfADeletedSmokeIsLeftOutAndSaid) {
  GateProject p("pending-orphan");
  std::string kept = write_pending(p, make_gate_record());
  RunRecord gone = make_gate_record();
  gone.smoke = "gone";
  Golden g;
  g.record = gone;
  g.provenance = stamp_provenance("check", "(pending review: no golden existed for platform cpu-x86_64-avx2)", GitState{}, 2);
  std::string orphan = p.out_dir() + "/gone/cpu-x86_64-avx2.golden.new";
  write_golden(orphan, g);
  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  EXPECT_EQ(set.files, std::vector<std::string>{kept});
  ASSERT_EQ(set.orphans.size(), 1u);
  EXPECT_EQ(set.orphans[0], orphan + ": left out: no smoke config named \"gone\" in " + set.smoke_dir +
                                " (its goldens elsewhere? give them with --goldens DIR, its smokes with --smoke DIR; "
                                "deleted or renamed since the check? then remove it)");
  EXPECT_EQ(accept_pending(set, "approved").size(), 1u);
  std::filesystem::remove(kept);
  try {
    load_pending(p.out_dir(), p.goldens_dir(), "");
    ADD_FAILURE() << "only a deleted smoke's pending golden was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), p.out_dir() + ": no pending golden of a smoke in " + set.smoke_dir + ":\n  " +
                                         set.orphans[0]);
  }
}

TEST(Pending, AcceptRefusesAPendingGoldenOfAnotherConfigVersion) {
  GateProject p("pending-config");
  Golden g;
  g.record = make_gate_record();
  g.record.config_hash = "0000000000000000";  // made before the config changed
  g.provenance = stamp_provenance("check", "(pending review: check failed)", GitState{}, 2);
  std::string path = p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new";
  write_golden(path, g);
  std::string what = expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), ""));
  EXPECT_EQ(what.rfind(path + ": config_hash: expected " + load_smoke_config(p.smoke_file()).config_hash, 0), 0u)
      << what;
  EXPECT_NE(what.find("made from another version of the config"), std::string::npos) << what;
}

TEST(Pending, NoPendingGoldensIsBadInput) {
  GateProject p("pending-none");
  std::filesystem::create_directories(p.out_dir());
  try {
    load_pending(p.out_dir(), p.goldens_dir(), "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), p.out_dir() + ": no pending goldens (*.golden.new) to review");
  }
}

TEST(Pending, AFolderThatIsNotThereIsSaidSo) {
  GateProject p("pending-absent");
  try {
    load_pending(p.out_dir() + "/nope", p.goldens_dir(), "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()).rfind(p.out_dir() + "/nope: no such folder", 0), 0u) << e.what();
  }
}

// A pending golden is held to where check filed it, and two for one golden
// (two downloaded artifacts) are refused rather than the last one winning.
TEST(Pending, MisfiledOrDuplicatePendingGoldensAreRefused) {
  GateProject p("pending-filing");
  std::string path = write_pending(p, make_gate_record());
  // Moved into the folder of another smoke the suite has.
  nlohmann::json other = parse_json_file(p.smoke_file());
  other["name"] = "other";
  write_file_atomically((p.root() / "smoke" / "other.json").string(), pretty_dump(other));
  std::string moved = p.out_dir() + "/other/cpu-x86_64-avx2.golden.new";
  std::filesystem::create_directories(p.out_dir() + "/other");
  std::filesystem::rename(path, moved);
  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  EXPECT_EQ(expect_refusal(set), moved + ": smoke: expected \"other\" (the folder it is filed in), got \"unit\"");
  std::filesystem::remove_all(p.out_dir() + "/other");
  std::filesystem::remove(p.root() / "smoke" / "other.json");

  path = write_pending(p, make_gate_record());
  std::string renamed = p.out_dir() + "/unit/cpu-x86_64-zzz.golden.new";
  std::filesystem::rename(path, renamed);
  EXPECT_EQ(expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), "")),
            renamed + ": platform: expected \"cpu-x86_64-zzz\" (its file name), got \"cpu-x86_64-avx2\"");
  std::filesystem::remove(renamed);

  path = write_pending(p, make_gate_record());
  std::string second = p.out_dir() + "/shard-2/unit/cpu-x86_64-avx2.golden.new";
  std::filesystem::create_directories(p.out_dir() + "/shard-2/unit");
  std::filesystem::copy_file(path, second);
  set = load_pending(p.out_dir(), p.goldens_dir(), "");
  ASSERT_EQ(set.files.size(), 2u);
  std::string what = expect_refusal(set);
  EXPECT_NE(what.find(": expected one pending golden per smoke and platform; " + set.files[0] + " is another for "),
            std::string::npos)
      << what;
}

TEST(Pending, AcceptRefusesAGoldenMadeUnderAnotherContract) {
  GateProject p("pending-contract");
  RunRecord r = make_gate_record();
  r.contract = {{"mode", "strict"}, {"intra_op_threads", "2"}, {"inter_op_threads", "1"}};
  std::string path = write_pending(p, r);
  EXPECT_EQ(expect_refusal(load_pending(p.out_dir(), p.goldens_dir(), "")),
            "refusing to accept " + path + ": it was made with contract.intra_op_threads 2, but " + p.smoke_file() +
                " sets 1 (a run with an override, such as --intra-op-threads or --world-size, is no golden for the smoke)");
}

}  // namespace
}  // namespace lockstep
