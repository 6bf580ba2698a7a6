// What calibration measures on a set of runs of one smoke that differ only
// in the stack (intra-op threads, ATEN_CPU_CAPABILITY, DataLoader workers,
// another runner) or the seed: per metric and step, how far the values
// spread; per tolerance key, the rule that spread recommends; and how
// often that rule would fail a run that should pass (leave-one-out).
// Torch-free and process-free: calibrate.h makes the runs.
//
//   std::vector<CalibrationRun> runs = ...;            // records, each with its axis point
//   SpreadRules rules;                                 // Megatron's rule: m = 1.5, floors 1e-3 / 1e-6
//   std::vector<CurveSpread> spreads = measure_spreads(runs, /*seeds_vary=*/false);
//   std::map<std::string, Recommendation> rec = recommend(spreads, rules, /*seeds_vary=*/false);
//   FalseAlarm fa = leave_one_out(runs, rules, /*seeds_vary=*/false, cfg.tolerance);  // fa.failed_runs of fa.runs
//
// The rule (docs/comparison.md, "Calibrating a smoke"): a key whose values
// agreed bit for bit in every run is recommended "exact"; otherwise, with
// max_abs and max_rel the largest |x - mean| and |x - mean| / |mean| over
// steps (mean over the runs at each step, as Megatron-LM's
// compute_golden_statistics.py), atol = max(m * max_abs, atol_floor) and
// rtol = max(m * max_rel, rtol_floor), rounded up to two significant
// digits, max_rel taken where |mean| > atol; where seeds vary, sigma
// k = max(m * max |x - mean| / std, 3).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compare/tolerance.h"
#include "compare/tolerance_policy.h"
#include "record/run_record.h"

namespace lockstep {

/// One run of a calibration and where on the axes it ran.
struct CalibrationRun {
  /// Axis name -> value ("threads" -> "2", "capability" -> "avx2", "seed"
  /// -> "7"); a record from elsewhere has "runner" -> its runner.
  std::map<std::string, std::string> point;
  int repeat = 1;      ///< 1-based repeat at its point
  std::string label;   ///< "threads=2 capability=avx2 #1", or the record's path
  std::string source;  ///< the record's path
  RunRecord record;
};

/// The multiplier and floors of the recommendation.
struct SpreadRules {
  double multiplier = 1.5;   ///< m: Megatron-LM's command-line default
  double rtol_floor = 1e-3;  ///< Megatron-LM's floor
  double atol_floor = 1e-6;  ///< Megatron-LM's floor
  double sigma_floor = 3;    ///< the smallest k of a sigma rule
};

/// The spread of one metric (a series, or a probe statistic over batches)
/// over the runs.
struct CurveSpread {
  std::string name;   ///< "loss", "grad_norm/fc.weight", "probes.inputs.sum", "train_probes.labels.max"
  std::string key;    ///< the tolerance key it falls under: the series name, or the probe field "inputs.sum"
  bool probe = false;
  bool float32 = false;
  bool bit_identical = true;  ///< every run holds the same bits at every step
  std::string skipped;        ///< non-empty: why it was not measured (steps differ, non-finite, absent)
  double max_abs = 0;         ///< largest |x - mean| over steps and runs
  double max_rel = 0;         ///< largest |x - mean| / |mean| (|mean| > 1e-9)
  double max_z = 0;           ///< largest |x - mean| / std (std > 0), for the sigma rule
  int64_t worst_step = -1;    ///< step (batch) of max_abs
  std::string worst_run;      ///< label of the run at max_abs
  /// The axis whose one-axis changes moved the values most ("threads",
  /// "capability", "workers", "seed", "runner"), "repeat" (two runs at one
  /// point differed), "several axes", or "" when bit-identical.
  std::string driver;
  std::vector<int64_t> steps;       ///< step (batch) numbers
  std::vector<double> mean;         ///< per step, over the runs
  std::vector<double> abs_spread;   ///< per step, largest |x - mean|
};

/// A recommended rule for one tolerance key.
struct Recommendation {
  std::string key;     ///< series name or probe field
  bool probe = false;
  bool measured = true;  ///< false: no rule recommended (`because` says why); the config's stays
  Tolerance tolerance;
  std::string because; ///< "bit-identical in 8 runs", "spread 2.1e-07 (rel 1.4e-07) x 1.5, driven by threads"
  double abs_spread = 0;  ///< the largest |x - mean| over its curves
  /// The largest |x - mean| / |mean| over the steps where |mean| exceeds
  /// the recommended atol: where it does not, the absolute term holds the
  /// value and a relative spread near a zero mean means nothing.
  double rel_spread = 0;
  std::string driver;     ///< what drove abs_spread (CurveSpread::driver)
};

/// How often the recommended rules would fail a run that should pass: each
/// run held out in turn, the rules recommended from the others, and the
/// held-out run compared with each other run as its golden (sigma: with
/// the others' mean and std).
struct FalseAlarm {
  int runs = 0;              ///< runs held out
  int failed_runs = 0;       ///< held-out runs failing at least one comparison
  int comparisons = 0;
  int failed_comparisons = 0;
  std::string example;       ///< the first failure: "threads=2 #1 against threads=1 #1: loss at step 9 ..."
  /// One-sided 95 % upper bound on the per-run false-alarm rate
  /// (Clopper-Pearson over `runs`): with 0 of 8 failing, 0.31.
  double upper95 = 1;
};

/// Per metric of the runs (at least 2): series by name, then the data-only
/// pass's and the trained batches' probe statistics. With `seeds_vary`,
/// probes are measured over the runs of the first run's seed only (another
/// seed draws other batches). A metric absent from a run, logged at other
/// steps, or non-finite in a run is kept with `skipped` set.
std::vector<CurveSpread> measure_spreads(const std::vector<CalibrationRun>& runs, bool seeds_vary);

/// The rule per tolerance key, keyed by the series name or "probes." +
/// the probe field (a probe field merges its data-only and trained
/// curves); series under sigma where `seeds_vary`.
std::map<std::string, Recommendation> recommend(const std::vector<CurveSpread>& spreads, const SpreadRules& rules,
                                                bool seeds_vary);

/// The first value of `run` that fails its rule against `golden` ("" when
/// every one passes): the series and probe statistics both hold, under
/// `rules` (series by name; a probe statistic by field, "inputs.sum"; a
/// key without a rule is not compared), skipping the series named in
/// `except`. `golden_std` (sigma rules) holds per-series std per step; a
/// sigma rule without it uses the golden series' own std.
std::string first_failing_value(const RunRecord& run, const RunRecord& golden,
                                const std::map<std::string, Recommendation>& rules,
                                const std::vector<std::string>& except = {},
                                const std::map<std::string, std::vector<double>>* golden_std = nullptr);

/// The golden of a multi-seed smoke made from `runs` (at least one): the
/// first run's record with each series' `mean` the runs' mean per step;
/// the population std per step goes to `std_out` by series name.
RunRecord multi_seed_golden(const std::vector<CalibrationRun>& runs, std::map<std::string, std::vector<double>>& std_out);

/// `configured` (the smoke's tolerance section) with each measured rule of
/// `rules` in place of the configured one for its key, and no resource
/// bound (calibration runs share the CPUs; their step times are no
/// evidence of a regression).
TolerancePolicy policy_with(const TolerancePolicy& configured, const std::map<std::string, Recommendation>& rules);

/// How `check` would judge `run` against `golden` as its golden under
/// `policy`: "" when it passes, else the verdict's first divergence (or why
/// the two cannot be compared). The same lanes as check (compare_records):
/// runs of one stack and contract are held bit-exact unless the smoke sets
/// "same_stack": "tolerance"; runs under other thread counts, CPU
/// capabilities or runners get the tolerances; another contract fails.
/// This is the one rule calibrate and check share (docs/comparison.md).
std::string check_failure(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy);

/// Leave-one-out over `runs` (see FalseAlarm): without `seeds_vary`, each
/// comparison is check_failure() under policy_with(configured, the rules
/// recommended from the others); with it, first_failing_value() against
/// the others' mean and std.
FalseAlarm leave_one_out(const std::vector<CalibrationRun>& runs, const SpreadRules& rules, bool seeds_vary,
                         const TolerancePolicy& configured = {});

/// The one-sided 95 % Clopper-Pearson upper bound on a rate after `failed`
/// of `n` trials failed (n >= 1).
double upper_bound_95(int failed, int n);

/// `value` rounded up to two significant digits (3.21e-7 -> 3.3e-7).
double round_up_2(double value);

}  // namespace lockstep
