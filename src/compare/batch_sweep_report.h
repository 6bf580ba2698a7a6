// The batch-invariance sweep for a person (`lockstep probe SMOKE
// --batch-sweep`): one line per module, then the verdict, which names the
// first module where a difference starts (its input the whole batch's bit
// for bit, its output not). The sweep itself: record/batch_sweep.h.
//
//   std::cout << render_batch_sweep(read_batch_sweep("sweep.json"));
#pragma once

#include <string>

#include "record/batch_sweep.h"

namespace lockstep {

/// The sweep for a person, one line per module, then the verdict:
///   batch sweep wine-mlp (cpu): the first batch, 24 samples, forwarded whole and in pieces of 12, 6, 3, 1 ...
///     fc1 (Linear)      batch-invariant
///     fc2 (Linear)      not batch-invariant: at 12: 5 of 24 samples differ, max 2 ulp (|Δ| 1e-07); at 6: ...
///     head (Linear)     differs only as its input does (an earlier module's difference, carried on): ...
///   wine-mlp: BATCH-INVARIANT on this stack (exit 0)
///   wine-mlp: NOT BATCH-INVARIANT (exit 1): fc2 (Linear) is not batch-invariant on this stack at batch 12 (max 2 ulp)
std::string render_batch_sweep(const BatchSweep& sweep);

}  // namespace lockstep
