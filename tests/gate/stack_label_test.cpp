// Goldens under a stack label (LOCKSTEP_STACK) through a migration, in
// process: check falls back to the unlabeled golden and says so, review
// compares the pending golden with that stand-in, accept files it as
// <platform>@<label>.json, check then uses it, and verify-goldens keeps the
// two stacks apart (stale within a label, the stack left behind named, a
// label left over from a finished migration refused).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "gate/bless.h"
#include "gate/provenance.h"
#include "gate/check.h"
#include "gate/gate_fixture.h"
#include "gate/pending.h"
#include "gate/verify_goldens.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace {

using testing::FakeLauncher;
using testing::GateProject;
using testing::joined;
using testing::make_gate_record;

// The scratch smoke's record as made on another stack: LibTorch 2.6, its
// values unchanged, under stack label "torch2".
RunRecord new_stack_record(const GateProject& p) {
  RunRecord r = make_gate_record();
  r.config_hash = load_smoke_config(p.smoke_file()).config_hash;
  r.fingerprint["torch.version"] = {"2.6.0", true};
  r.stack = "torch2";
  return r;
}

RunRecord old_stack_golden(const GateProject& p) {
  RunRecord r = make_gate_record();
  r.config_hash = load_smoke_config(p.smoke_file()).config_hash;
  return r;
}

TEST(StackLabel, TheFirstRunUnderALabelIsComparedWithTheUnlabeledGoldenAcrossStacks) {
  GateProject p("stack-first");
  std::string unlabeled = p.write_golden(old_stack_golden(p));
  FakeLauncher l;
  l.record = new_stack_record(p);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kPass) << c.verdict.first_divergence;
  EXPECT_EQ(c.verdict.lane, Lane::kCrossStack);
  EXPECT_EQ(c.verdict.golden_label, unlabeled);
  ASSERT_FALSE(c.verdict.notes.empty());
  EXPECT_EQ(c.verdict.notes.front(),
            "no golden for stack torch2 (LOCKSTEP_STACK) on platform cpu-x86_64-avx2; compared against the "
            "unlabeled " + unlabeled + "; when this stack's values are right, file its own golden: "
            "LOCKSTEP_STACK=torch2 lockstep bless ..., or accept the pending golden");
  // The label's golden to accept, though the check passed.
  ASSERT_TRUE(c.pending.has_value());
  EXPECT_EQ(c.pending_path, p.out_dir() + "/unit/cpu-x86_64-avx2@torch2.golden.new");
  EXPECT_EQ(c.pending->provenance.reason,
            "(pending review: no golden for stack torch2 yet; passed against " + unlabeled + ")");
}

TEST(StackLabel, AnUnlabeledRunNeverUsesALabeledGolden) {
  GateProject p("stack-unlabeled-run");
  p.write_golden(new_stack_record(p));
  FakeLauncher l;
  l.record = old_stack_golden(p);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.pending_path, p.out_dir() + "/unit/cpu-x86_64-avx2.golden.new");
}

TEST(StackLabel, ALabelWithNoGoldenAtAllNamesTheVariableInTheBlessCommand) {
  GateProject p("stack-none");
  FakeLauncher l;
  l.record = new_stack_record(p);
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence,
            p.goldens_dir() + "/unit/cpu-x86_64-avx2@torch2.json: no golden for smoke 'unit' on platform "
            "cpu-x86_64-avx2 under stack label torch2 nor unlabeled (nor any of its family); create one with "
            "`LOCKSTEP_STACK=torch2 lockstep bless " + p.smoke_file() + " --reason \"...\"`");
}

TEST(StackLabel, ReviewShowsTheStandInAndAcceptFilesTheLabeledGolden) {
  GateProject p("stack-migrate");
  std::string unlabeled = p.write_golden(old_stack_golden(p));
  FakeLauncher l;
  l.record = new_stack_record(p);
  l.record.series["loss"].values[0] = static_cast<float>(2.4);  // beyond the default tolerance
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  ASSERT_EQ(c.verdict.exit_code(), ExitCode::kRegression) << c.verdict.first_divergence;
  EXPECT_EQ(c.verdict.lane, Lane::kCrossStack);
  ASSERT_TRUE(c.pending.has_value());
  write_golden(c.pending_path, *c.pending);

  PendingSet set = load_pending(p.out_dir(), p.goldens_dir(), "");
  auto reviews = review_pending(set);
  ASSERT_EQ(reviews.size(), 1u);
  const PendingReview& r = reviews[0];
  std::string labeled = p.goldens_dir() + "/unit/cpu-x86_64-avx2@torch2.json";
  EXPECT_TRUE(r.is_new);
  EXPECT_EQ(r.current, labeled);
  EXPECT_EQ(r.stand_in, unlabeled);
  EXPECT_EQ(r.stand_in_note.rfind("no golden for stack torch2 (LOCKSTEP_STACK)", 0), 0u) << r.stand_in_note;
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->exit_code(), ExitCode::kRegression);
  EXPECT_EQ(r.verdict->lane, Lane::kCrossStack);
  EXPECT_EQ(r.current_hash, read_golden(unlabeled).content_hash);

  auto accepted = accept_pending(set, "torch 2.6 migration: values moved within the cross-stack lane", true);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].target, labeled);
  EXPECT_EQ(accepted[0].golden.provenance.replaces, "");  // the unlabeled golden stays
  write_golden(accepted[0].target, accepted[0].golden);

  // The next check under the label uses its own golden: same stack, passes.
  SmokeCheck again = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(again.verdict.exit_code(), ExitCode::kPass) << again.verdict.first_divergence;
  EXPECT_EQ(again.verdict.golden_label, labeled);
  EXPECT_EQ(again.verdict.lane, Lane::kSameStack);
  EXPECT_FALSE(again.pending.has_value());
  // The old stack's job still gates against the unlabeled golden.
  FakeLauncher old;
  old.record = old_stack_golden(p);
  SmokeCheck before = check_smoke(p.smoke_file(), p.check_options(), old);
  EXPECT_EQ(before.verdict.exit_code(), ExitCode::kPass) << before.verdict.first_divergence;
  EXPECT_EQ(before.verdict.golden_label, unlabeled);

  // verify-goldens: two stacks on purpose, the one left behind named.
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  EXPECT_TRUE(audit.problems.empty()) << joined(audit.problems);
  // (The fixture's goldens keep no config fields: each gets that note too.)
  std::vector<std::string> migration;
  for (const std::string& n : audit.notes)
    if (n.find("migration") != std::string::npos) migration.push_back(n);
  ASSERT_EQ(migration.size(), 1u) << joined(audit.notes);
  EXPECT_EQ(migration[0], labeled + ": migration in progress: stack label torch2 on LibTorch 2.6.0 (library "
                          "(missing)); the unlabeled " + unlabeled + " stays on the stack left behind, LibTorch "
                          "1.13.0 (library (missing))");
}

TEST(StackLabel, VerifyGoldensRefusesALabelLeftFromAFinishedMigration) {
  GateProject p("stack-over");
  RunRecord moved = old_stack_golden(p);
  moved.fingerprint["torch.version"] = {"2.6.0", true};
  std::string unlabeled = p.write_golden(moved);  // re-blessed on the new stack without the label
  std::string labeled = p.write_golden(new_stack_record(p));
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  ASSERT_EQ(audit.problems.size(), 1u) << joined(audit.problems);
  EXPECT_EQ(audit.problems[0],
            labeled + ": stack label torch2 holds a golden made on the unlabeled " + unlabeled +
                "'s own stack (LibTorch 2.6.0 (library (missing))): the migration is over; remove the label's "
                "goldens (git rm " + labeled + ") and LOCKSTEP_STACK from the CI job");
}

// Within one label the stale rule holds as without labels, and a trainer's
// torch counts: a trainer golden left on torch 1.13 while another platform
// was re-blessed on 2.6 is stale even though neither has LibTorch fields.
TEST(StackLabel, AGoldenLeftOnTheOldTorchUnderTheSameLabelIsStale) {
  GateProject p("stack-stale");
  RunRecord old_trainer = old_stack_golden(p);
  old_trainer.fingerprint = {{"python.torch", {"1.13.1", true}}};
  std::string left = p.write_golden(old_trainer);
  RunRecord new_trainer = old_stack_golden(p);
  new_trainer.fingerprint = {{"python.torch", {"2.6.0", true}}};
  new_trainer.platform = "cpu-x86_64-avx512";
  Golden g;
  g.record = new_trainer;
  g.provenance = stamp_provenance("bless", "re-blessed", GitState{}, 2);
  g.provenance.created_utc = utc_now(60);  // the newest (a minute from now)
  std::string newer = p.goldens_dir() + "/unit/cpu-x86_64-avx512.json";
  write_golden(newer, g);
  GoldensAudit audit = audit_goldens(p.goldens_dir(), "");
  ASSERT_EQ(audit.problems.size(), 1u) << joined(audit.problems);
  EXPECT_EQ(audit.problems[0], left + ": stale: made on LibTorch (missing) (library (missing)), torch 1.13.1, while " +
                                   newer + " was re-blessed on LibTorch (missing) (library (missing)), torch 2.6.0; "
                                   "re-bless it on the new stack");
}

TEST(StackLabel, AGoldenFiledUnderAnotherLabelIsRefused) {
  GateProject p("stack-misfiled");
  RunRecord r = new_stack_record(p);
  std::string path = p.write_golden(r);
  std::string misfiled = p.goldens_dir() + "/unit/cpu-x86_64-avx2@lts.json";
  std::filesystem::rename(path, misfiled);
  FakeLauncher l;
  l.record = new_stack_record(p);
  l.record.stack = "lts";
  SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
  EXPECT_EQ(c.verdict.exit_code(), ExitCode::kBadInput);
  EXPECT_EQ(c.verdict.first_divergence,
            misfiled + ": stack: expected \"lts\" (the stack label it is filed under), got \"torch2\"");
}

TEST(StackLabel, BlessUnderALabelSaysWhatItMovedAgainstTheStandInAndAnUndeclaredPlatform) {
  GateProject p("stack-bless", [](nlohmann::json& cfg) { cfg["platforms"] = {"cpu-x86_64-avx2"}; });
  std::string unlabeled = p.write_golden(old_stack_golden(p));
  FakeLauncher l;
  l.record = new_stack_record(p);
  l.record.platform = "cpu-x86_64-avx512";  // the new LibTorch picks AVX-512
  l.record.series["loss"].values[1] = static_cast<float>(2.2);
  BlessSmokeOptions o;
  o.reason = "torch 2.6";
  o.out_dir = p.out_dir();
  BlessedGolden b = bless_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(b.path, p.goldens_dir() + "/unit/cpu-x86_64-avx512@torch2.json");
  EXPECT_FALSE(b.replaces);
  EXPECT_EQ(b.stand_in, unlabeled);
  EXPECT_EQ(b.changes.rfind("  loss: max |change| ", 0), 0u) << b.changes;
  EXPECT_EQ(b.undeclared_note,
            "platform cpu-x86_64-avx512 is not among the platforms " + p.smoke_file() +
                " declares (cpu-x86_64-avx2): this stack picks another CPU capability or GPU; add it to "
                "\"platforms\" so verify-goldens requires its golden, or run with ATEN_CPU_CAPABILITY to keep the "
                "declared one");
  EXPECT_EQ(b.same_stack_label_note, "") << "LibTorch 2.6 is another stack";
}

// A label on the very stack the unlabeled golden was made on files a second
// golden for one stack: bless says so.
TEST(StackLabel, BlessUnderALabelOnTheUnlabeledGoldensOwnStackSaysSo) {
  GateProject p("stack-same");
  std::string unlabeled = p.write_golden(old_stack_golden(p));
  FakeLauncher l;
  l.record = old_stack_golden(p);
  l.record.stack = "torch2";
  BlessSmokeOptions o;
  o.reason = "label";
  o.out_dir = p.out_dir();
  BlessedGolden b = bless_smoke(p.smoke_file(), o, l);
  EXPECT_EQ(b.path, p.goldens_dir() + "/unit/cpu-x86_64-avx2@torch2.json");
  EXPECT_EQ(b.same_stack_label_note,
            "stack label torch2 (LOCKSTEP_STACK) on the stack the unlabeled " + unlabeled +
                " was made on (no determinism-relevant field or contract setting differs): this files a second "
                "golden for one stack; a label is for a stack that differs (docs/platforms.md): bless without it");
}

}  // namespace
}  // namespace lockstep
