// The verdict of `lockstep check` for one smoke: where it is made. Read
// check_smoke() top to bottom to know why any smoke passed or failed.
//
//   ProcessLauncher launcher;
//   SmokeCheck c = check_smoke("smoke/digits-cnn.json", {}, launcher);
//   c.verdict.exit_code();   // 0 pass, 1 regression, 2 bad input, 3 environment, 4 nondeterministic
//   if (c.compared) render_text(c.verdict, false);   // else c.verdict.first_divergence says why
//   if (c.pending) write_golden(c.pending_path, *c.pending);
//
// For each smoke, in order (the first failure ends it):
//   1. `repeat` fresh runs through the launcher, held to bit equality
//      (a difference is exit 4: the stack is nondeterministic; the verdict
//      compares run N with run 1, so the reports locate it); run 2 varies
//      what must not matter (`repeat_varies`: spec/run_variation.h), and a
//      difference that only it shows, the plain runs agreeing, is exit 4
//      naming the kind that moves the values alone;
//   2. the batches the trainer consumed must equal the data-only pass
//      (a difference is exit 4 too);
//   3. the golden: goldens/<smoke>/<platform>.json, else one of the same
//      family (a note says so), compared with compare_records
//      (compare/compare.h): lane, tolerances, findings; a failing
//      comparison ends the smoke (exit 1) with a pending golden for
//      review/accept; with rerun_failing K, K more fresh runs first:
//      one that differs from the failing run bit for bit makes it exit 4
//      (the runner is nondeterministic), else "(reproduced K of K)";
//   4. with resume_at: K, K steps and a checkpoint, a resumed fresh run,
//      held to the uninterrupted run's bits (a difference is exit 1); with
//      a spare job slot the stopped run starts beside step 1, and its
//      error, if any, still counts only here;
//   5. each equivalence lane (config "equivalence"): one fresh run of the
//      smoke with the lane's changes, held to run 1 under the lane's rule
//      (compare_variant); a difference is exit 1 naming the lane, its
//      first step and module, once a second run of the lane reproduced
//      it (a second run that differs is exit 4: the lane is flaky itself);
//   6. no golden: exit 2 with a pending golden.
// An Error from the launcher or a file ends the smoke with its own code.
// check never writes into goldens/: the caller writes reports and pending
// goldens from the SmokeCheck.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/verdict.h"
#include "core/job_slots.h"
#include "launch/launcher.h"
#include "record/golden.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Options of `lockstep check` that shape each smoke's check.
struct CheckSmokeOptions {
  std::string goldens_dir;                   ///< "": goldens/ beside the smoke folder
  std::string out_dir = "lockstep-out";      ///< records go to <out_dir>/<smoke>/
  int repeat = 0;                            ///< fresh runs; 0: the config's `repeat` (default 2)
  RunOverrides overrides;                    ///< passed on to every child run
  /// check -j: the job slots this smoke's child runs may also use (its
  /// repeats, and its resume check's two runs, start at once while slots
  /// are free); null: one child at a time. The caller holds one run's
  /// slots (processes_per_run) for the smoke, lent back while the check
  /// only waits for runs in other threads. The launcher must then be
  /// thread-safe.
  JobSlots* slots = nullptr;
  /// check --rerun-failing K: a smoke whose golden comparison fails (exit
  /// 1) is run K more times here; a rerun that is not bit-identical to the
  /// failing run makes the verdict exit 4 (nondeterministic on this
  /// runner), else exit 1 stands "(reproduced K of K)".
  int rerun_failing = 0;
  /// check --distinct-runs K: when the repeats differ (exit 4), the smoke
  /// runs until K runs in all, and the verdict says how many distinct
  /// results they gave and where each first differs from run 1 ("3
  /// distinct results in 5 runs"). K at most the repeat count: no extra run.
  int distinct_runs = 5;
};

/// What check found for one smoke.
struct SmokeCheck {
  std::string smoke;      ///< the smoke's name (the file's stem when the config is unreadable)
  Verdict verdict;        ///< exit_code() is the smoke's exit class
  bool ran = false;       ///< every fresh run finished (whatever the comparison found)
  bool compared = false;  ///< the verdict compares two records (reports apply): the run with a
                          ///< golden, or, for a nondeterministic job, run N with run 1
  std::string report_dir; ///< <out_dir>/<smoke>: records, reports
  std::string goldens_dir;  ///< where its golden was looked up (goldens_root): review and accept need it
  std::string records;    ///< for a failure between runs: "records: <a>, <b>"
  RunRecord run;          ///< the run compared (when compared)
  RunRecord golden;       ///< its reference: the golden's record, or run 1 (when compared)
  std::string golden_hash;  ///< the golden's content_hash (when compared with a golden)
  /// Non-empty: the verdict is this equivalence lane's (run: the lane's
  /// record, golden: run 1), not the smoke's run against its golden; a
  /// ledger takes the verdict alone, never the lane's values as the night's.
  std::string lane;
  /// The run as a pending golden (a failed comparison, or no golden yet),
  /// to be written at pending_path for `lockstep review` / `accept`.
  std::optional<Golden> pending;
  std::string pending_path;
};

/// The job slots one of check's runs of `config` keeps busy (check -j):
/// processes_per_run() with `world_size` (> 0: check --world-size) sizing a
/// multi-rank smoke; a trainer smoke's data-only pass counts only with
/// several worker counts, the one case where it runs beside a run.
int check_slots_per_run(const SmokeConfig& config, int world_size);

/// Checks the smoke config `file` (see the steps above). Never throws
/// lockstep::Error: every failure is a verdict with its exit code.
SmokeCheck check_smoke(const std::string& file, const CheckSmokeOptions& options, Launcher& launcher);

/// A verdict for a smoke that ended without a comparison (exit 1 from the
/// resume check, 2, 3 or 4): one structure finding "exit N: <message>", so
/// every report still shows it failing, and `message` as first divergence.
Verdict stopped_verdict(const std::string& smoke, ExitCode code, const std::string& message);

/// Whether `run`'s training pass consumed other batches than its data-only
/// pass (batches past the probed epochs are not compared): {kPass, ""} when
/// they agree, else the class and the reason said for a person:
/// "the training pass consumed other batches than the data-only pass,
/// first at batch 1: other samples (sample indices ...)" with what to do.
/// A trainer smoke whose `repeat` (>= 2) runs were bit-identical is exit 2:
/// deterministic, its data-only pass does not replay the training pass
/// (usually a sampler sharing torch's global generator with dropout); else
/// exit 4. `records` names where the records are (a folder). Throws nothing.
std::pair<ExitCode, std::string> data_pass_mismatch(const SmokeConfig& config, const RunRecord& run, int repeat,
                                                    const std::string& records);

}  // namespace lockstep
