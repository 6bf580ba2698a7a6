// Module traces: per-module fingerprints of the first training steps, so a
// divergence is named down to the module ("train step 0, forward, conv:
// input identical, output differs") instead of only the step and metric.
//
//   ModuleTrace t;  t.steps = 2;
//   t.entries.push_back({0, TracePhase::kForward, "conv", input_hash, probe_tensor(out)});
//   nlohmann::json j = to_json(t);
//   ModuleTrace back = module_trace_from_json(JsonView(j, "run.json", "module_trace"));
//
// What an entry holds (the definition the built-in trainer and the Python
// helper share, docs/module-trace.md):
//   forward:  the module's output, and the XXH3-128 of its first tensor
//             input (the batch, or what the modules before it produced);
//   backward: the gradient flowing out of the module (with respect to its
//             first input; a module whose input needs no gradient, like the
//             first one, has no backward entry), and the XXH3-128 of the
//             gradient flowing into it (with respect to its output).
// `output` is a TensorStats: XXH3-128 of the bytes and float64 statistics,
// the batch-probe definition (record/batch_probe.h). Entries are in
// execution order: step 0's forward modules, then its backward ones, then
// step 1's, and so on. Nothing here depends on LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/batch_probe.h"

namespace lockstep {

class JsonView;

/// Which pass an entry was recorded in.
enum class TracePhase { kForward, kBackward };

/// "forward" or "backward".
const char* trace_phase_name(TracePhase phase);

/// The size cap: at most this many entries per (step, phase); the ones
/// after it are counted in ModuleTrace::dropped, not kept. With about
/// 550 bytes of JSON per entry a record's trace stays under 4.5 MB even at
/// the maximum of kMaxTraceSteps steps (docs/module-trace.md).
inline constexpr int64_t kMaxTraceEntriesPerPass = 256;
/// The most steps `trace.steps` may ask for.
inline constexpr int64_t kMaxTraceSteps = 16;

/// One module's fingerprint at one step and phase.
struct ModuleTraceEntry {
  int64_t step = 0;
  TracePhase phase = TracePhase::kForward;
  std::string module;      ///< module path, e.g. "conv", "encoder.layers.0.self_attn"
  std::string input_xxh3;  ///< XXH3-128 of what flowed in, 32 hex digits
  TensorStats output;      ///< what flowed out
  int64_t rank = -1;       ///< the rank that recorded it; -1 (absent in JSON): a single process
};

/// At most this many op entries per traced step (the rest are counted in
/// ModuleTrace::ops_dropped): about 150 bytes each, 600 KB a step.
inline constexpr int64_t kMaxTraceOpsPerStep = 4096;

/// One aten op's output at a traced step: what torch's DebugMode
/// (torch.utils._debug_mode, torch >= 2.10) saw the Python helper's
/// trainer dispatch, hashed by the helper (`trace.ops`). In execution order
/// within the step: its forward, backward and optimizer ops.
struct OpTraceEntry {
  int64_t step = 0;
  std::string phase;        ///< "forward", "backward" or "optimizer" (inside optimizer.step)
  std::string module;       ///< innermost module path in forward ("fc1"); "" outside a submodule, in backward
  std::string op;           ///< the overload, e.g. "aten.addmm.default"
  std::string output_xxh3;  ///< XXH3-128 of its output tensors' bytes (several: of their hashes), 32 hex digits
  int64_t rank = -1;        ///< the rank that recorded it; -1: a single process
};

/// "forward", "backward" or "optimizer": the phases an op entry may name.
bool is_op_phase(const std::string& phase);

/// A run's module trace.
struct ModuleTrace {
  int64_t steps = 0;                       ///< steps traced (0: not traced)
  std::vector<ModuleTraceEntry> entries;   ///< in execution order
  int64_t dropped = 0;                     ///< entries left out by the size cap
  std::string not_traced;                  ///< why there are no entries ("" when traced)
  std::vector<OpTraceEntry> ops;           ///< per-op output hashes (trace.ops), in execution order
  int64_t ops_dropped = 0;                 ///< op entries left out by kMaxTraceOpsPerStep
  std::string ops_not_traced;              ///< trace.ops asked, none recorded: why ("torch 2.6.0 has no DebugMode")
  bool empty() const { return entries.empty() && not_traced.empty(); }
};

nlohmann::json to_json(const ModuleTrace& trace);

/// Parses a trace. Throws exit-2 Error naming the JSON path on a wrong
/// type, an unknown key, a step outside [0, steps), a phase other than
/// forward/backward, a malformed hash, or more entries than the cap allows.
ModuleTrace module_trace_from_json(const JsonView& node);

/// Parses one entry (also a line of a trainer's module_trace.jsonl, where
/// `rank` may be present). Same errors as module_trace_from_json().
ModuleTraceEntry module_trace_entry_from_json(const JsonView& node);

/// Parses one op entry ({"step", "phase", "module", "op", "output_xxh3"},
/// `rank` optional). Throws exit-2 Error naming the JSON path on a wrong
/// type, an unknown key, a phase other than forward/backward/optimizer, an
/// op name that is empty or over 256 bytes, or a malformed hash.
OpTraceEntry op_trace_entry_from_json(const JsonView& node);

}  // namespace lockstep
