// Module traces written by a trainer of its own (python/lockstep's
// ModuleTracer), one entry per line in the run record's format
// (record/module_trace.h):
//
//   {"step": 0, "phase": "forward", "module": "conv1", "input_xxh3": "...", "output": {...}}
//   {"step": 0, "phase": "backward", "module": "fc", ...}
//
//   ModuleTrace t = read_module_trace_jsonl("out/module_trace.jsonl", /*steps=*/2, /*first_step=*/0);
//
// Entries must be in execution order (steps never go back) and within the
// traced steps. Errors name the file and the line
// ("out/module_trace.jsonl: line 3: phase: expected ..."), exit 2.
#pragma once

#include <cstdint>
#include <string>

#include "record/module_trace.h"

namespace lockstep {

/// Reads every entry of `path`; blank lines are skipped; an empty file is
/// an empty trace (a resumed run past the traced steps writes none). The
/// trace's `steps` is `steps` (the config's trace.steps). Throws exit-2
/// Error naming the file and the line for malformed JSON, an entry
/// module_trace_entry_from_json refuses, a step outside [first_step,
/// steps) or going back. Entries beyond kMaxTraceEntriesPerPass in one
/// step and phase are counted in ModuleTrace::dropped, not kept. The
/// helper's per-op lines (trace.ops: an "op" entry, {"step",
/// "ops_dropped"}, {"ops_not_traced"}) go to ModuleTrace::ops, with the
/// same step rules and kMaxTraceOpsPerStep.
ModuleTrace read_module_trace_jsonl(const std::string& path, int64_t steps, int64_t first_step = 0);

}  // namespace lockstep
