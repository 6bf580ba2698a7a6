// The batch-invariance sweep of a built-in smoke (`lockstep probe SMOKE
// --batch-sweep`), as PyTorch's batch-invariant mode and vLLM's
// determinism tests ask it: is each sample's output the same whatever
// batch it is computed in? The model as initialised (eval mode: dropout
// off, BatchNorm on its running statistics, so nothing couples the
// samples), the smoke's first batch of N samples forwarded at N, then in
// pieces of N/2, N/4, ..., 1; each module's output for each sample held
// bit for bit to the full batch's:
//
//   BatchSweep s = sweep_batch_invariance(with_overrides(load_smoke_config(path), {}));
//   s.invariant();        // every module, every size: bit for bit
//   render_batch_sweep(s) == "batch sweep wine-mlp: ...\n  fc1 (Linear)  batch-invariant\n..."   // compare/
//
// A module whose output has no batch dimension (a positional embedding)
// is compared whole; the model's own output is the last row (the only one
// of a TorchScript module that is not an nn.Sequential). Outputs are kept
// without a copy: a child that works in place on its input
// (ReLU(inplace=True)) changes its predecessor's kept output, in the whole
// batch and the pieces alike. The cost: one forward of the batch per size, with the
// outputs kept and compared (bench/batch_sweep.sh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "record/batch_sweep.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Runs the sweep for the built-in smoke `config` (overrides applied):
/// the preflight and the determinism contract as a run applies them, the
/// data as its loader gives it (first batch of epoch 0), the model as
/// initialised from the seed. Throws BadUsage (exit 2) for a trainer smoke
/// (its model is the trainer's own) or a first batch of one sample (nothing
/// to split), exit 3 for a cuda smoke without CUDA.
/// `time_plain` (the bench's hidden --batch-sweep-timing) first forwards
/// each size's pieces with nothing kept, timed (SweepCell::plain_seconds).
BatchSweep sweep_batch_invariance(const SmokeConfig& config, bool time_plain = false);

}  // namespace lockstep
