// The seam between orchestration (check, bless, run --repeat) and the runs
// it asks for, in the spirit of ninja's CommandRunner: orchestration asks a
// Launcher for run records and never starts a process itself, so it is unit
// tested in-process with a fake launcher that returns canned records.
//
//   ProcessLauncher launcher;                       // spawns `lockstep run`
//   ChildRun run;  run.smoke = "smoke/digits-cnn.json";  run.out = "out/run-1.json";
//   RunRecord r = launcher.run(run);                // throws Error(2|3) on a failed child
//   std::vector<RunRecord> rs = run_children(launcher, run, "out", "run", 2);
//
// Repeat checks need separate processes: a second run in the same process
// would share LibTorch's global state (the inter-op pool can be sized only
// once, generators, caches), and the point is to show that a fresh process
// reproduces the bits. Equivalence lanes compare configs, not processes:
// a built-in smoke's lanes may share one (run_together; docs/decisions.md,
// decision 36).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/job_slots.h"
#include "plan/run_plan.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {


/// One child run of a smoke: the request a `lockstep run` would parse
/// (plan/run_plan.h: smoke, out, overrides, seed, stop_after, checkpoint,
/// resume, data_pass, ...; quiet), and what only a launcher knows. A run
/// without its data-only pass (data_pass false) has empty data-only
/// probes until take_data_pass() fills them.
struct ChildRun : RunRequest {
  ChildRun() { quiet = true; }
  bool train = true;       ///< false: the data-only pass alone (`lockstep probe`)
  /// run_children(): only the first run makes the data-only pass; the
  /// others run without it and take the first's probes. For a trainer
  /// smoke, whose pass is a Python process of its own: a later run's
  /// training batches are held to the same probes through the bit-for-bit
  /// comparison with the first run, so a second pass would show nothing
  /// new (docs/decisions.md).
  bool share_data_pass = false;
  /// Extra environment of the run, "NAME=VALUE" (calibrate's
  /// ATEN_CPU_CAPABILITY axis): set in the child process, or for a trainer
  /// smoke in the trainer's environment (as trainer.env would).
  std::vector<std::string> env;
  /// Non-empty: a trainer smoke's interpreter (trainer.command[0])
  /// replaced (bisect-env's "python"); a built-in smoke has none.
  std::string python;
  /// run_children(): the run numbered `varied_run` (> 0; check's second
  /// repeat) runs with overrides.vary = `variation` (spec/run_variation.h),
  /// the others plain. 0: every run as `overrides` says.
  int varied_run = 0;
  RunVariation variation;
};

/// Starts child runs. Implementations: ProcessLauncher (real), and fakes in
/// the tests.
class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Runs `run` to completion and returns its record. Throws Error with
  /// exit 2 when the child refused its input and exit 3 for anything else
  /// (the message carries the child's reason).
  virtual RunRecord run(const ChildRun& run) = 0;
  /// Runs `run` (stop_after > 0) up to its checkpoint; no record. Same errors.
  virtual void run_to_checkpoint(const ChildRun& run) = 0;
  /// Runs `lanes`, equivalence lanes of one built-in smoke that may share a
  /// process (RunRequest::then_variants' rules: each lane a ChildRun that
  /// differs from the first in `variant` and `out` only, its out
  /// then_variant_record(first out, variant)), and returns their records
  /// in order. The real launcher runs them one after another in one
  /// process, a LibTorch start-up for all; this default, one run() each.
  /// Same errors as run(), the message led by "lane NAME: " when there
  /// are several.
  virtual std::vector<RunRecord> run_together(const std::vector<ChildRun>& lanes);
  /// Before any run of `command` ("check", "bless"): throws
  /// EnvironmentError (exit 3) when this launcher cannot run some of
  /// `smoke_files` at all (a built-in smoke where no lockstep-torch was
  /// built). This default can run anything.
  virtual void require_runnable(const std::vector<std::string>& smoke_files, const std::string& command) {
    (void)smoke_files;
    (void)command;
  }
};

/// The real launcher: `lockstep run CONFIG --record OUT --quiet ...` in a fresh
/// process of this executable (/proc/self/exe, or `executable`) through the
/// one process runner (core/process.h: its own process group, killed with
/// this process), stderr to <out>.log (kept when non-empty) and echoed to
/// ours. A child that runs past `timeout_s` is killed with its group: exit
/// 3 naming it, as a child killed by a signal.
class ProcessLauncher : public Launcher {
 public:
  /// A smoke's child runs seconds to minutes; an hour is a hang.
  static constexpr int64_t kDefaultTimeoutS = 3600;
  explicit ProcessLauncher(std::string executable = "", int64_t timeout_s = kDefaultTimeoutS);
  RunRecord run(const ChildRun& run) override;
  void run_to_checkpoint(const ChildRun& run) override;
  /// One `lockstep run SMOKE --variant A --then-variant B ...`; its time
  /// limit is timeout_s per lane.
  std::vector<RunRecord> run_together(const std::vector<ChildRun>& lanes) override;

 private:
  void spawn(const ChildRun& run, int64_t timeout_s);
  std::string executable_;
  int64_t timeout_s_;
};

/// The `lockstep run` (or `probe`) arguments for `run` (without the
/// executable): run_request_args() of its request.
std::vector<std::string> child_args(const ChildRun& run);

/// Gives `run`, made without its data-only pass (ChildRun::data_pass
/// false), the data-only probes of `from`, the run whose pass stands for
/// both, and writes it again to `path` (its record file) when given, so
/// the record on disk is the one judged; a run with probes of its own is
/// left as it is.
void take_data_pass(RunRecord& run, const RunRecord& from, const std::string& path = "");

/// Whether `config`'s runs share one data-only pass (ChildRun::share_data_pass):
/// a trainer smoke that writes batch probes.
bool shares_data_pass(const SmokeConfig& config);

/// `n` fresh runs of `base` (its `out` ignored), records
/// <dir>/<prefix>-1.json ... <dir>/<prefix>-<n>.json, in that order. With
/// `slots`, runs start at once while `slots_per_run` slots are free (core/job_slots.h's
/// run_tasks; `launcher` must then be thread-safe, as ProcessLauncher and
/// SmokeLauncher are); the error of the lowest-numbered failed run is
/// thrown, as in a serial run. With base.share_data_pass, runs 2..n run
/// without the data-only pass and take run 1's probes. `held`: the slots the calling thread holds,
/// lent while it waits for the runs in other threads. `first`, when given,
/// runs before them in this thread (work at the head of a longer chain,
/// e.g. the resume check's two runs); it must not throw. `first_number`
/// > 1 numbers them from there (<prefix>-<first_number>.json on): more runs
/// of an earlier batch, none making the data-only pass (the caller hands
/// them run 1's with take_data_pass).
std::vector<RunRecord> run_children(Launcher& launcher, const ChildRun& base, const std::string& dir,
                                    const std::string& prefix, int n, JobSlots* slots = nullptr,
                                    int slots_per_run = 1, int held = 0, const std::function<void()>& first = {},
                                    int first_number = 1);

/// Runs grouped by their bits: each group holds the 0-based indices of
/// runs bit-identical to each other (first_bit_difference() empty), in
/// the order their first member ran; `first_difference[g]` is where group
/// g's first run differs from runs[0] ("" for group 0, run 1's). How
/// nondeterministic a job is: SGLang's count of distinct outputs over N
/// trials.
struct DistinctResults {
  std::vector<std::vector<size_t>> groups;
  std::vector<std::string> first_difference;
};

/// Groups `runs` (at least one) by bitwise equality; each run is compared
/// with one run of each group found so far.
DistinctResults distinct_results(const std::vector<RunRecord>& runs);

/// Where the first run that is not bit-identical to runs[0] differs:
/// {its 0-based index, first_bit_difference()}, or {0, ""} when all agree.
std::pair<size_t, std::string> first_repeat_difference(const std::vector<RunRecord>& runs);

}  // namespace lockstep
