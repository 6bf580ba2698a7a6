// The launcher check, bless and `run --repeat` use: a built-in smoke runs in
// a fresh `lockstep run` process (launch/launcher.h's ProcessLauncher); a
// smoke with a "trainer" section runs here, in this process, through the
// same plan and producer as `lockstep run` (plan/run_plan.h,
// cli/record_producers.h), because its
// trainer already runs in fresh processes of its own (external/trainer_run.h)
// and a `lockstep run` in between would only add LibTorch's start-up
// (about a second) to every run.
//
//   SmokeLauncher launcher;
//   SmokeCheck c = check_smoke("examples/pytorch-trainer/smoke/pytorch-trainer.json", {}, launcher);
#pragma once

#include "launch/launcher.h"

namespace lockstep {

/// ProcessLauncher for built-in smokes; run_trainer in this process for
/// trainer smokes, writing the record to `run.out` as a child would (and
/// the trainer's folders beside it, <out>.trainer/).
class SmokeLauncher : public Launcher {
 public:
  /// Throws Error with the exit classes of run_trainer (1 failed trainer,
  /// 2 bad input, 3 environment) or of ProcessLauncher::run.
  RunRecord run(const ChildRun& run) override;
  void run_to_checkpoint(const ChildRun& run) override;
  /// A built-in smoke's lanes in one `lockstep run` process
  /// (ProcessLauncher::run_together); a trainer's, one run each.
  std::vector<RunRecord> run_together(const std::vector<ChildRun>& lanes) override;
  /// A built-in smoke needs lockstep-torch beside this executable
  /// (require_torch_for_built_in, cli/commands.h).
  void require_runnable(const std::vector<std::string>& smoke_files, const std::string& command) override;

 private:
  ProcessLauncher process_;
};

}  // namespace lockstep
