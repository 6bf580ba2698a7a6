// Which tolerance applies to which metric or probe field, read from a smoke
// config's "tolerance" section:
//
//   "tolerance": {
//     "series": {"default": {"atol": 1e-6, "rtol": 1e-4},
//                "loss":    {"ulp": 64},
//                "grad_norm/*": {"rtol": 1e-3, "atol": 1e-6}},
//     "probes": {"default": {"atol": 1e-9, "rtol": 1e-6},
//                "inputs.std": {"exact": true}},
//     "allow_nonfinite_golden": false,
//     "same_stack": "exact",
//     "resources": {"step_time_ratio": 4, "peak_memory_ratio": 1.5}
//   }
//
// A rule is {"exact": true}, {"atol": A, "rtol": R} (either may be omitted,
// default 0), {"ulp": N} or {"sigma": K}. Lookup: the exact name, then
// "<prefix>/*" for "<prefix>/<parameter>", then "default". These apply in
// the cross-stack lane; in the same-stack lane everything is bit-exact
// unless "same_stack" is "tolerance" (for stacks known to be
// nondeterministic in the last bits, which lockstep would otherwise flag).
//
// Resources (step time, peak RSS, peak CUDA memory) are never bit-compared:
// on the same platform key only, the run's median step time over the steady
// steps (all but step 0) may be at most step_time_ratio times the golden's,
// and peak memory at most peak_memory_ratio times (docs/comparison.md).
#pragma once

#include <map>
#include <string>

#include "compare/tolerance.h"
#include "record/series.h"

namespace lockstep {

class JsonView;

/// Tolerances per series and per probe statistic.
struct TolerancePolicy {
  Tolerance series_default = Tolerance::close(1e-6, 1e-4);
  std::map<std::string, Tolerance> series;  ///< by series name or "<prefix>/*"
  Tolerance probe_default = Tolerance::close(1e-9, 1e-6);
  std::map<std::string, Tolerance> probes;  ///< "inputs.mean", "labels.sum", ...
  bool allow_nonfinite_golden = false;
  bool same_stack_exact = true;  ///< "same_stack": "exact" (default) or "tolerance"
  double step_time_ratio = 4.0;    ///< run median step time / golden's, at most
  double peak_memory_ratio = 1.5;  ///< run peak RSS (and CUDA) / golden's, at most

  /// The rule for series `name`.
  Tolerance for_series(const std::string& name) const;
  /// The rule for probe statistic `field` ("inputs.std").
  Tolerance for_probe(const std::string& field) const;
};

/// "" when `policy` can hold series `name` of `golden` (Series::rounded: its
/// values rounded to a decimal grid), else what is wrong: an exact or ULP
/// rule compares the rounding, not the runs; a tolerance whose bound
/// atol + rtol * |g| falls below half the grid step at some value cannot
/// tell the rounding from a change. From the precision guard of lockstep
/// import (docs/trainers.md, "Migrating from another tool").
std::string rounded_series_problem(const TolerancePolicy& policy, const std::string& name, const Series& golden);

/// Parses a "tolerance" section; throws exit-2 Error naming the path.
TolerancePolicy tolerance_policy_from_json(const JsonView& node);

/// Parses one rule object.
Tolerance tolerance_from_json(const JsonView& node);

}  // namespace lockstep
