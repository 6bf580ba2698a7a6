// The comparator: a run record against a golden, producing a Verdict.
//
//   Verdict v = compare_records(run, golden.record, policy);
//   std::cout << render_text(v);        // text_report.h
//   return to_int(v.exit_code());
//
// Read compare_records() top to bottom to understand any verdict:
//   1. inputs that cannot be compared are rejected (exit 2): another seed,
//      an empty golden, NaN/Inf in a golden that does not allow them;
//   2. the lane: same stack -> bit-exact; different stack -> tolerances;
//      different determinism contract -> fail;
//   3. data probes, batch by batch (data is checked before training);
//   4. training series, step by step;
//   5. final hashes (same stack only: across stacks they are expected to differ);
//      init statistics, resources, module traces (module_divergence.h);
//   6. the first divergence: data before training, earliest batch / step,
//      led by the first divergent module when the traces name one.
#pragma once

#include <string>

#include "compare/tolerance_policy.h"
#include "compare/verdict.h"
#include "record/run_record.h"

namespace lockstep {

/// Labels for the two sides in reports (file paths, usually).
struct CompareLabels {
  std::string run = "run";
  std::string golden = "golden";
  /// How the reports call the two sides: "golden" and "run", or for a
  /// nondeterministic job "run 1" and "run 2" (never "golden").
  std::string reference_word = "golden";
  std::string subject_word = "run";
  /// Where an equivalence lane's reference came from, as its lane reason
  /// says it (compare_variant): check's base run is "of this job"; a
  /// golden compared by hand, another job's base run.
  std::string reference_from = "of this job";
};

/// Compares `run` against `golden` (the reference). Throws exit-2 Error when
/// the two cannot be compared meaningfully: the seeds differ, the golden is
/// empty, or the golden holds NaN/Inf and `policy.allow_nonfinite_golden`
/// is false.
Verdict compare_records(const RunRecord& run, const RunRecord& golden,
                        const TolerancePolicy& policy, const CompareLabels& labels = {});

/// An equivalence lane's run (`variant`: the base run with some fields
/// changed, smoke/smoke_config.h's EquivalenceVariant) against the base
/// run of the same job (`base`), with no golden: every training series
/// under `rule` (exact: bit for bit, with the final hashes and module
/// traces too), the batches trained on bit for bit when `same_batches`.
/// The inputs, contract and resources differ by design and are not
/// compared, nor the data-only pass (the base run's own check). Throws
/// what compare_records throws (exit 2: the seeds differ).
Verdict compare_variant(const RunRecord& variant, const RunRecord& base, const Tolerance& rule, bool same_batches,
                        const CompareLabels& labels);

/// The first difference between two runs of the same job, held to bit
/// equality (for --repeat and bless): "" when bit-identical, else e.g.
/// "train step 3: loss 2.3012 vs 2.3013 (first parameter: conv.weight)".
/// `a_word` and `b_word` name the two runs in it ("run 3", "run 1").
std::string first_bit_difference(const RunRecord& a, const RunRecord& b, const std::string& a_word = "run 2",
                                 const std::string& b_word = "run 1");

/// The full comparison behind first_bit_difference(): `run` against
/// `reference`, two runs of one job, bit for bit, on what they produced
/// (fingerprint, contract and resources are the job's, not compared). The
/// verdict's words come from `labels` ("run 1", "run 2"), so the reports of
/// a nondeterministic job never speak of a golden.
Verdict compare_runs(const RunRecord& run, const RunRecord& reference, const CompareLabels& labels);

}  // namespace lockstep
