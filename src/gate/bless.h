// The golden `lockstep bless` makes for one smoke, and every refusal on
// the way. The caller writes the golden (write_golden) and prints.
//
//   ProcessLauncher launcher;
//   BlessOptions o;  o.reason = "LibTorch 1.13 -> 2.11";
//   BlessedGolden b = bless_smoke("smoke/digits-cnn.json", o, launcher);
//   std::string hash = write_golden(b.path, b.golden);
//   std::cout << (b.replaces ? b.changes : "new golden");
//
// Refuses with exit 2 on a dirty work tree (files under the goldens folder
// excepted: they are bless's own output) unless allow_dirty, or when the
// reference run holds NaN/Inf (validate_golden_candidate); with exit 4
// unless `runs` fresh runs of every seed are bit-identical.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "machine/git_state.h"
#include "launch/launcher.h"
#include "record/golden.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// How one smoke is blessed.
struct BlessSmokeOptions {
  std::string reason;                 ///< recorded in the provenance; required by the caller
  std::string goldens_dir;            ///< "": goldens/ beside the smoke folder
  std::string out_dir = "lockstep-out";  ///< the runs' records go to <out_dir>/<smoke>/
  bool allow_dirty = false;           ///< bless from a dirty work tree (recorded)
  int runs = 2;                       ///< fresh runs per seed, held to bit equality
  /// Extra seeds (`--seeds 42,43`) for a multi-seed golden; the config's
  /// seed stays the exact reference. Must add a seed other than it.
  std::vector<uint64_t> seeds;
};

/// A golden ready to be written.
struct BlessedGolden {
  std::string smoke;
  std::string path;        ///< goldens/<smoke>/<platform>[@<stack>].json
  Golden golden;           ///< record, seed statistics and provenance
  bool replaces = false;   ///< a golden already exists at path
  /// When !replaces: the golden check compared such runs with until now (a
  /// same-family or unlabeled one, golden_store.h find_golden); "" for none.
  std::string stand_in;
  std::string changes;     ///< describe_changes() against the replaced golden or the stand-in ("" when none changed)
  /// "" unless the smoke declares "platforms" and this golden's platform is
  /// not among them (a stack that picks another CPU capability): says so.
  std::string undeclared_note;
  size_t seeds = 1;        ///< seeds blessed
  /// missing_data_pass_note() of the smoke: "" unless a trainer smoke
  /// writes no batch probes (its golden then pins no batches).
  std::string data_pass_note;
  /// "" unless the golden is filed under a stack label (LOCKSTEP_STACK)
  /// while the unlabeled golden it would otherwise be checked against was
  /// made on this same stack (no determinism-relevant field and no contract
  /// setting differs): a label is for a stack that differs.
  std::string same_stack_label_note;
};

/// Runs and checks `file` for a golden (see above). Throws Error.
BlessedGolden bless_smoke(const std::string& file, const BlessSmokeOptions& options, Launcher& launcher);

/// The refusals every writer of goldens applies to a candidate (bless,
/// accept, verify-goldens): fewer than two bit-identical runs behind it
/// (`runs`, the provenance's count: one run proves nothing about
/// determinism), and a NaN or +-Inf anywhere in the record
/// (first_nonfinite) unless the smoke's tolerance.allow_nonfinite_golden.
/// Throws exit-2 Error "refusing to <action>: ...".
void validate_golden_candidate(const RunRecord& record, int runs, bool allow_nonfinite, const std::string& action);

/// Refuses a golden candidate made under another determinism contract than
/// the smoke config's (mode, intra-op and inter-op threads, and a
/// multi-rank smoke's world size and backend: a check run with
/// --intra-op-threads 2 or --world-size 4 is no golden for the smoke). Throws
/// exit-2 Error "refusing to <action>: ...".
void validate_contract(const RunRecord& record, const SmokeConfig& config, const std::string& action);

/// What a golden must hold to be kept for `config` (accept, verify-goldens):
/// validate_contract and validate_golden_candidate with its provenance's
/// runs. An imported golden (provenance.imported_from: another tool's
/// curves, `lockstep import --golden`) was made by no lockstep run: only
/// its values are held (finite unless allowed). Either way the precision
/// guard (refuse_rounded_series), and for a trainer smoke no series its
/// trainer.metrics.series does not name. Throws exit-2 Error "refusing to
/// <action>: ...".
void validate_kept_golden(const Golden& golden, const SmokeConfig& config, const std::string& action);

/// The precision guard of every comparison (compare/tolerance_policy.h,
/// rounded_series_problem) applied where a golden is kept: a series its
/// source rounded ("rounded" set, e.g. a log printing 4 decimals) under a
/// rule of the smoke's that would compare the rounding. Throws exit-2 Error
/// "refusing to <action>: series NAME: ..." naming the config.
void refuse_rounded_series(const RunRecord& record, const SmokeConfig& config, const std::string& action);

/// The work-tree paths of `files` (relative to git.workdir, as git names
/// them) that lie outside every folder of `own_folders` (goldens/, --out):
/// the changes lockstep's own outputs are not.
std::vector<std::string> outside_folders(const GitState& git, const std::vector<std::string>& files,
                                         const std::vector<std::string>& own_folders);

/// Refuses (exit 2) when the work tree of `git` has changes outside
/// `own_folders` (lockstep's own output: the goldens folder, the --out or
/// pending folder), unless `allow_dirty`: a golden's provenance names the
/// commit it was made from.
void refuse_dirty_tree(const GitState& git, const std::vector<std::string>& own_folders, bool allow_dirty,
                       const std::string& command);

/// Adds the per-step mean and population std over `runs` (one run per seed,
/// same series and lengths) to every series of `golden` (the "sigma" rule,
/// docs/comparison.md).
void add_seed_statistics(const std::vector<RunRecord>& runs, RunRecord& golden);

}  // namespace lockstep
