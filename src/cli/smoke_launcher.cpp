#include "cli/smoke_launcher.h"

#include "cli/commands.h"
#include "cli/record_producers.h"
#include "plan/run_plan.h"

namespace lockstep {

namespace {

// The plan a child `lockstep run` would make of `run`.
RunPlan plan_of(const ChildRun& run, const SmokeConfig& cfg) {
  RunPlan plan = plan_run(cfg, run, run.train);
  if (!run.python.empty() && !plan.config.trainer.command.empty()) plan.config.trainer.command[0] = run.python;
  for (const auto& x : run.env) {
    size_t eq = x.find('=');
    plan.config.trainer.env[x.substr(0, eq)] = eq == std::string::npos ? "" : x.substr(eq + 1);
  }
  return plan;
}

}  // namespace

RunRecord SmokeLauncher::run(const ChildRun& run) {
  SmokeConfig cfg = load_smoke_config(run.smoke, run.variant);
  if (!cfg.has_trainer()) return process_.run(run);
  RunPlan plan = plan_of(run, cfg);
  ProducedRun r = make_record_producer(plan)->produce(plan);
  write_run_record(plan.out, r.record);
  return r.record;
}

void SmokeLauncher::run_to_checkpoint(const ChildRun& run) {
  SmokeConfig cfg = load_smoke_config(run.smoke, run.variant);
  if (!cfg.has_trainer()) return process_.run_to_checkpoint(run);
  RunPlan plan = plan_of(run, cfg);
  make_record_producer(plan)->produce(plan);
}

std::vector<RunRecord> SmokeLauncher::run_together(const std::vector<ChildRun>& lanes) {
  if (lanes.empty() || load_smoke_config(lanes.front().smoke).has_trainer()) return Launcher::run_together(lanes);
  return process_.run_together(lanes);
}

void SmokeLauncher::require_runnable(const std::vector<std::string>& smoke_files, const std::string& command) {
  require_torch_for_built_in(smoke_files, command);
}

}  // namespace lockstep
