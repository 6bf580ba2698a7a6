// The first divergent module: where the module traces of a run and its
// reference (record/module_trace.h) first part, so a verdict names the
// step, the phase and the module, not only the metric.
//
//   ModuleDivergence d = locate_module_divergence(run.module_trace, golden.module_trace, policy, exact);
//   if (d.first >= 0) std::cout << d.summary;
//   // "train step 0, forward, conv: input identical, output differs (sum rel 3.1e-09, ...)"
//
// The rule (docs/module-trace.md): walk both traces in execution order
// (step 0 forward, step 0 backward, step 1 forward, ...) and take the first
// entry whose output moved while what flowed into it agrees. "Moved" is
// "its bytes differ" in an exact lane (same stack, a repeat, another
// contract) and "a statistic is outside the probe tolerances" across
// stacks, where the first entry whose bytes moved is reported too (as a
// fact, not a failure). An entry whose input already differs is reported
// as such ("input differs too"): the cause is upstream, in a step the
// trace does not cover or in the data. Nothing here fails a verdict: the
// series and hashes do that; the trace says where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compare/tolerance_policy.h"
#include "record/module_trace.h"

namespace lockstep {

/// One cell of the module × (step, phase) grid.
struct TraceCell {
  int64_t step = 0;
  TracePhase phase = TracePhase::kForward;
  std::string module;
  /// 0: identical bytes; 1: bytes differ, statistics within tolerance
  /// (cross-stack lane only); 2: differs under the lane's rule (exact
  /// lanes: any byte; cross-stack: a statistic outside tolerance, or the
  /// NaN/Inf counts).
  int state = 0;
};

/// Where two module traces part.
struct ModuleDivergence {
  bool compared = false;        ///< both records hold comparable traces
  std::string note;             ///< why not compared, or a structural difference; "" otherwise
  /// The traces hold other modules, shapes, dtypes or entry counts within
  /// the steps both traced (the note says where): a difference of its own
  /// in an exact lane.
  bool structure_differs = false;
  std::vector<TraceCell> cells; ///< the entries compared, in execution order
  int64_t first = -1;           ///< cell of the first divergence under the lane's rule; -1 none
  std::string summary;          ///< that cell in words (see the example above); "" when none
  std::string change;           ///< how that cell's output moved ("sum |Δ| ... ulp"); "" when none
  int64_t first_bits = -1;      ///< cross-stack: cell of the first entry whose bytes moved; -1 none
  std::string bits_summary;     ///< that cell in words; "" when none
  /// Exact lanes, both traces holding per-op hashes (trace.ops): the first
  /// op whose output bits differ, in execution order ("train step 0,
  /// forward, fc: aten.addmm.default (op 2 of fc's 2 ops)"); "" none.
  std::string first_op;
  int64_t first_op_step = -1;   ///< the training step of first_op; -1 none
  /// Why the ops were not compared, or where their sequences part (or
  /// how their counts differ); "" else.
  std::string op_note;
  /// The op sequences differ (another op at a place, or more or fewer ops
  /// in the steps both traced): in an exact lane a difference of its own.
  bool ops_differ = false;
};

/// The first op of `run` whose output bits differ from `reference`'s, in
/// execution order within the steps both traced (ModuleDivergence::
/// first_op), and an op note (one side without ops and why, or the op
/// sequences parting: another op at the same place stops the walk).
/// Ops are matched by position. Hashes are exact: meaningful in an exact
/// lane only (across stacks nearly every float op's bits move).
void locate_first_op(const ModuleTrace& run, const ModuleTrace& reference, ModuleDivergence& d);

/// Compares `run` with `reference` (usually the golden's trace). `exact`:
/// bytes decide (same-stack, repeat, contract-mismatch lanes); otherwise
/// each float64 statistic is held to policy.for_probe("module.<stat>").
ModuleDivergence locate_module_divergence(const ModuleTrace& run, const ModuleTrace& reference,
                                          const TolerancePolicy& policy, bool exact);

}  // namespace lockstep
