// A team's trainer stopped at a checkpoint and resumed
// (external/trainer_run.h; `lockstep run --stop-after N --checkpoint P`,
// then `--resume P`): the stopped run's partial record beside the
// checkpoint, verified (its XXH3-128, smoke, config, seed, contract, rank
// count, steps and probes: exit 2 naming what differs), and the resumed
// run's outputs joined after it on one grid.
//
//   ResumePoint rp = read_resume_point(config, "ckpt.pt", seed);   // rp.at: the first step to train
//   merge_with_stopped_run(rp, partial_path("ckpt.pt"), config.trace.steps, outputs);
//
// Internal to src/external/.
#pragma once

#include <cstdint>
#include <string>

#include "external/trainer_outputs.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// The partial record `lockstep run --stop-after` writes beside its checkpoint.
std::string partial_path(const std::string& checkpoint);

/// Where a resumed run starts: the stopped run's partial record, verified.
struct ResumePoint {
  RunRecord partial;
  int64_t at = 0;  ///< the step it stopped after (its series' last step + 1)
};

/// The partial record beside checkpoint `resume` (written by `lockstep run
/// --stop-after`): its XXH3-128, smoke, config, seed, determinism contract,
/// rank count, steps and probes must be this run's. Exit 2 naming it.
ResumePoint read_resume_point(const SmokeConfig& c, const std::string& resume, uint64_t seed);

/// A resumed run's outputs joined after the stopped run's: the series (the
/// same dtype, on one grid), the module trace and the trained batches.
void merge_with_stopped_run(const ResumePoint& rp, const std::string& part, int trace_steps, TrainedOutputs& out);

}  // namespace lockstep
