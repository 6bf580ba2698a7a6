// `lockstep calibrate`: tolerances from evidence. Runs one smoke across
// axes that move the stack but not the inputs (intra-op threads,
// ATEN_CPU_CAPABILITY, DataLoader workers, seeds), reads records other
// runners made, and measures what a tolerance must absorb (spread.h), how
// often the recommended rules would cry wolf (leave-one-out), and the
// smallest planted change of the learning rate they still catch (a
// bisection over the factor with real runs). Every run is a child run
// through the Launcher seam (launch/launcher.h), in parallel while job
// slots are free, so the orchestration is unit-tested with canned records.
//
//   CalibrateOptions o;
//   o.axes = {parse_axis("threads=1,2"), parse_axis("capability=default,avx2")};
//   o.repeats = 2;
//   SmokeLauncher launcher;
//   Calibration c = calibrate_smoke("smoke/digits-cnn.json", o, launcher);
//   c.recommended.at("loss").tolerance.describe();   // "|a-g| <= 1e-06 + 0.001*|g|"
//   c.false_alarm.failed_runs;  c.detection.catches;  // 0, 3e-05
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibrate/spread.h"
#include "core/job_slots.h"
#include "launch/launcher.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// One axis of a calibration: `--axis threads=1,2`.
struct CalibrateAxis {
  std::string name;                 ///< threads, capability, workers or seed
  std::vector<std::string> values;  ///< as given, each valid for the axis
};

/// Parses "NAME=V1,V2,...". Throws BadUsage (exit 2) naming the flag for an
/// unknown axis, an empty or repeated value, or a value the axis does not
/// take (threads 1..1024, workers 0..64, seed a decimal uint64, capability
/// default|avx2|avx512).
CalibrateAxis parse_axis(const std::string& text);

/// The ATen CPU capabilities this CPU runs, from its ISA flags
/// (machine/machine_facts.h): "default", then "avx2" (avx2, fma), then
/// "avx512" (avx512f, avx512bw, avx512vl, avx512dq, fma), as LibTorch's
/// own check.
std::vector<std::string> supported_capabilities(const std::string& isa_flags);

/// What calibrate runs and how it judges.
struct CalibrateOptions {
  /// The axes; empty: threads {n, 2n} (n the config's intra-op threads) x
  /// every capability the CPU supports.
  std::vector<CalibrateAxis> axes;
  int seeds = 1;        ///< > 1: a seed axis of the config's seed and the next seeds-1
  int repeats = 2;      ///< fresh runs at each point
  std::vector<std::string> records;  ///< record files, or folders of them, from other runners
  SpreadRules rules;
  bool detect = true;   ///< search the detection limit (lr) with further runs
  int detect_rounds = 4;  ///< bisection rounds between lr x (1 +- 1e-9) and x (1 +- 0.1)
  std::string out_dir = "lockstep-out";  ///< records go to <out_dir>/<smoke>/calibrate/
  JobSlots* slots = nullptr;  ///< runs at once while slots are free (null: one at a time)
  std::string isa_flags;      ///< the CPU's ISA flags; "": this machine's
};

/// The detection limit: the smallest planted change lr x (1 +- f) the
/// recommended rules catch, found by bisection over f.
struct Detection {
  bool measured = false;
  std::string why_not;   ///< when not measured: "--no-detect", "the trainer does not apply ..."
  double catches = 0;    ///< f caught in both directions
  double misses = 0;     ///< the largest f tried that was missed (0: none was)
  int runs = 0;
  std::vector<std::pair<double, bool>> tried;  ///< (f, caught) in the order run
  std::string caught_by;  ///< what failed at `catches`: "grad_norm at step 3: ..."
};

/// What calibrate found for one smoke.
struct Calibration {
  std::string smoke;
  std::string file;
  std::string date;            ///< UTC, when it ran
  std::vector<CalibrateAxis> axes;
  int repeats = 0;
  bool seeds_vary = false;
  std::vector<CalibrationRun> runs;    ///< made here, then read from --records
  std::vector<std::string> runners;    ///< distinct fingerprint `runner` values of the runs
  std::vector<CurveSpread> spreads;
  std::map<std::string, Recommendation> recommended;  ///< by series name or "probes." + field
  SpreadRules rules;
  /// The recommended rules over the calibration runs themselves: each run
  /// against each other one as golden (sigma: against all runs' mean and
  /// std); `self_failed` of `self_comparisons` failed, the first said.
  int self_comparisons = 0;
  int self_failed = 0;
  std::string self_example;
  /// The same comparisons under the config's own rules: how often the gate
  /// as configured would fail these runs.
  int configured_failed = 0;
  std::string configured_example;
  /// Recommended close rules that allow more than the configured ones
  /// (a larger atol or rtol where the configured rule is close too).
  int looser = 0;
  FalseAlarm false_alarm;
  Detection detection;
  std::vector<std::string> notes;      ///< "runs at one point differed: ..."
  TolerancePolicy configured;          ///< the config's tolerances, for comparison
};

/// The folder calibrate clears and fills with the runs' records:
/// <out_dir>/<smoke name>/calibrate ("" when the config cannot be read:
/// calibrate_smoke then says why).
std::string calibrate_records_dir(const std::string& file, const std::string& out_dir);

/// Calibrates the smoke config `file`. Throws Error: exit 2 for bad options
/// or records (another smoke's, unreadable), exit 3 for an axis value this
/// machine cannot run (a capability the CPU lacks), or the failed run's own
/// class.
Calibration calibrate_smoke(const std::string& file, const CalibrateOptions& options, Launcher& launcher);

}  // namespace lockstep
