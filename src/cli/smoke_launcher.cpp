#include "cli/smoke_launcher.h"

#include "core/error.h"
#include "external/trainer_run.h"

namespace lockstep {

namespace {

// The trainer run a child `lockstep run` would make of `run`.
TrainerRun run_here(const ChildRun& run, const SmokeConfig& raw) {
  if (run.overrides.workers >= 0)
    throw BadUsage("--workers: a trainer smoke's DataLoader workers are the trainer's own (set them in its command)");
  SmokeConfig cfg = with_overrides(raw, {run.overrides.intra_op_threads, -1});
  TrainerRunOptions o;
  o.work_dir = run.out + ".trainer";
  o.seed = run.seed;
  o.stop_after = run.stop_after;
  o.checkpoint = run.checkpoint;
  o.resume = run.resume;
  return run_trainer(cfg, o);
}

}  // namespace

RunRecord SmokeLauncher::run(const ChildRun& run) {
  SmokeConfig cfg = load_smoke_config(run.config);
  if (!cfg.has_trainer()) return process_.run(run);
  TrainerRun r = run_here(run, cfg);
  write_run_record(run.out, r.record);
  return r.record;
}

void SmokeLauncher::run_to_checkpoint(const ChildRun& run) {
  SmokeConfig cfg = load_smoke_config(run.config);
  if (!cfg.has_trainer()) return process_.run_to_checkpoint(run);
  run_here(run, cfg);
}

}  // namespace lockstep
