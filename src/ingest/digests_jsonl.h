// Per-step digests written by a trainer of its own (python/lockstep's
// DigestWriter), one line per step, into its output folder as
// lockstep-digests.jsonl:
//
//   {"step": 0, "params": "<32 hex>", "grads": "<32 hex>"}
//   {"step": 1, ...}
//
//   StepDigests d = read_digests_jsonl("out/train/lockstep-digests.jsonl", 10);
//
// What a digest holds: record/step_digests.h. Errors name the file and the
// line ("out/lockstep-digests.jsonl: line 3: grads: expected ..."), exit 2.
#pragma once

#include <cstdint>
#include <string>

#include "record/step_digests.h"

namespace lockstep {

/// The file name the helper writes in a pass's output folder.
inline constexpr const char* kDigestsFile = "lockstep-digests.jsonl";

/// Reads every line of `path`; blank lines are skipped. Steps must
/// increase and lie in [first_step, steps) (a run resumed at step K writes
/// from K). Throws exit-2 Error naming the file and the line for malformed
/// JSON, a key other than step, params and grads, a digest that is not 32
/// lowercase hex digits, a step out of order or range, or a file without
/// a line. The steps are kept explicit (StepDigests::steps): compact_steps
/// drops them once the run's digests cover 0..steps-1.
StepDigests read_digests_jsonl(const std::string& path, int64_t steps, int64_t first_step = 0);

}  // namespace lockstep
