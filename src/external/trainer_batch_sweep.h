// The batch-invariance sweep of a team's trainer's model (`lockstep probe
// SMOKE --batch-sweep` on a trainer smoke): the trainer's training pass,
// started as a run starts it, with LOCKSTEP_BATCH_SWEEP set; the helper's
// ModuleTracer sweeps step 0's first forward (python/lockstep/batch_sweep.py:
// eval mode, no gradients, the batch whole and in pieces of N/2, ..., 1,
// each leaf module's output held bit for bit), writes the sweep and ends
// the trainer. The built-in smoke's sweep: run/batch_sweep.h.
//
//   BatchSweep s = sweep_trainer_batch_invariance(load_smoke_config("smoke/nanogpt.json"), "/tmp/sweep");
//   std::cout << render_batch_sweep(s);   // compare/batch_sweep_report.h
#pragma once

#include <string>

#include "record/batch_sweep.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// The name of the sweep's file in the training pass's output folder.
inline constexpr const char* kBatchSweepFile = "batch_sweep.json";

/// Runs the sweep of `config`'s trainer (overrides applied; has_trainer()
/// must hold) in a fresh folder `work_dir`/sweep and returns it, named
/// after the smoke and its device. Throws BadUsage (exit 2) for a
/// multi-rank trainer smoke (the sweep forwards one process's batch);
/// BadInput (exit 2) naming the config when the trainer ends without a
/// sweep (it never calls ctx.trace_modules(model) and its step(0)), or
/// naming the file and field when the sweep is malformed; the trainer's
/// failure is exit 1 quoting its stderr; a helper of another version or
/// another contract exit 3 (external/trainer_run.h's classes).
BatchSweep sweep_trainer_batch_invariance(const SmokeConfig& config, const std::string& work_dir);

}  // namespace lockstep
