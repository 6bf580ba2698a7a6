// The verdict of comparing a run against a golden: one object that every
// report (text, JSON) renders, so they can never disagree.
//
//   Verdict v = compare_records(run, golden, policy);   // compare.h
//   v.passed();  v.first_divergence;  v.findings;  v.exit_code();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/module_divergence.h"
#include "compare/tolerance.h"
#include "core/error.h"
#include "record/fingerprint.h"

namespace lockstep {

/// Which comparison regime applied (docs/comparison.md: bit-exact on one stack, tolerances across stacks).
enum class Lane {
  kSameStack,         ///< every determinism-relevant field equal: bit-exact
  kCrossStack,        ///< the stack differs: configured tolerances
  kContractMismatch,  ///< the determinism contract differs: fails; values compared
                      ///< exactly only to locate the first divergence
  kNone,              ///< nothing was compared (a run stopped before: stopped_verdict)
  kEquivalence,       ///< an equivalence lane's run against the base run (compare_variant)
};

/// "same-stack", "cross-stack", "contract-mismatch", "none", "equivalence".
const char* lane_name(Lane lane);

/// Where a failure was found. Findings are reported in causal order
/// (causal_order in compare.cpp): input, data, train, contract, structure,
/// hashes, resources.
enum class Section { kStructure, kContract, kData, kTrain, kHashes, kResources, kInput };

/// "structure", "contract", "data", "train", "hashes", "resources", "input".
const char* section_name(Section section);

/// One failed check.
struct Finding {
  Section section = Section::kStructure;
  std::string subject;  ///< "loss", "grad_norm/conv.weight", "probes[3].inputs.std", ...
  int64_t index = -1;   ///< step or batch of the first failure, -1 if none
  std::string detail;   ///< one sentence with the numbers and the rule applied
};

/// Per-series (or per-probe-field) summary over all steps or batches.
struct SeriesResult {
  Section section = Section::kTrain;
  std::string name;     ///< "loss", "inputs.mean", ...
  std::string rule;     ///< Tolerance::describe() of the rule applied
  Tolerance tolerance;  ///< the rule itself (for plots of the tolerance band)
  size_t checked = 0;   ///< values compared
  size_t failed = 0;    ///< values outside tolerance
  int64_t first_fail = -1;
  double max_abs = 0;         ///< largest |a-g| over finite pairs
  int64_t max_abs_at = -1;
  double max_rel = 0;         ///< largest relative error (golden != 0); NaN if none
  int64_t max_rel_at = -1;
  /// The largest share of the tolerance a value used: |a-g| / allowed for
  /// atol/rtol and sigma rules, ulps / max_ulp for ULP rules; for an exact
  /// rule 0 when every value is bit-identical, else +inf; +inf for a
  /// non-finite run value. Above 1 fails. The nightly history plots it.
  double max_use = 0;
};

/// One equivalence lane's outcome beside a smoke's verdict
/// (docs/equivalence.md): JUnit gives it a testcase
/// "lockstep.<smoke>.equivalence" / <name>, the JSON report a "lanes" row.
struct LaneOutcome {
  std::string name;       ///< the lane's name in the config
  std::string change;     ///< what it changes: "trainer args --accum 2"
  std::string rule;       ///< "bit for bit" or "within <rule>"
  /// false: the lane was not run, or not judged, because the golden
  /// comparison failed first (JUnit: <skipped>).
  bool judged = true;
  bool passed = false;
  /// Pass: how close it came ("bit for bit", "largest difference rel
  /// 1.04e-07 in loss at step 9"); fail: its first difference; not
  /// judged: why.
  std::string detail;
  size_t values_checked = 0;
};

/// Everything a report needs.
struct Verdict {
  std::string smoke;
  std::string run_label;     ///< path or "run"
  std::string golden_label;  ///< path or "golden"
  std::string reference_word = "golden";  ///< what reports call the reference ("golden", "run 1")
  std::string subject_word = "run";       ///< what reports call the compared run ("run", "run 2")
  Lane lane = Lane::kSameStack;
  std::string lane_reason;
  /// The import.source of the side whose curves came from another tool's
  /// file (`lockstep import`): only what it holds was compared; ""
  /// otherwise.
  std::string imported_from;
  /// Which side that is: reference_word ("golden") or subject_word ("run").
  std::string imported_side;
  std::vector<FieldDiff> env_diffs;   ///< inputs first, then relevant fields
  std::vector<Finding> findings;      ///< failures in report order
  std::vector<SeriesResult> results;  ///< every series / probe field compared
  std::vector<std::string> notes;     ///< facts that are not failures
  std::string first_divergence;       ///< "" when passed
  /// Lines quoted under the first divergence, e.g. the last lines of a
  /// failed trainer's stderr ("  | " prefix removed); usually empty.
  std::vector<std::string> quote;
  size_t values_checked = 0;
  /// Where the module traces part (first divergent module, the grid of the
  /// HTML report); trace.compared is false when either record has none.
  ModuleDivergence trace;
  /// The smoke's exit class: kPass or kRegression for a comparison
  /// (compare_records sets it), or why the smoke ended without one: exit 4
  /// (its runs differ), 2 (bad input) or 3 (environment: CUDA unusable, a
  /// refused knob). JUnit reports the last two as <error>, not <failure>.
  ExitCode code = ExitCode::kPass;
  /// Non-empty: this verdict compares equivalence lane `equivalence_lane`'s
  /// run with the base run (run 1), not a run with its golden; JUnit files
  /// its testcases under "lockstep.<smoke>.equivalence.<lane>.<section>".
  std::string equivalence_lane;
  /// Every equivalence lane of the smoke, in name order (empty: none).
  std::vector<LaneOutcome> lanes;

  bool passed() const { return code == ExitCode::kPass; }
  /// The exit code this verdict stands for.
  ExitCode exit_code() const { return code; }
};

/// The word a report leads with: "FAIL", "NONDETERMINISTIC" (exit 4),
/// "PASS", or, when the stack moved
/// and the tolerances held, "PASS (cross-stack: N stack field(s) differ,
/// within tolerance)", so a green job still shows that the stack changed.
std::string verdict_headline(const Verdict& verdict);

/// How many determinism-relevant (stack) fields differ from the golden.
size_t stack_differences(const Verdict& verdict);

/// How a verdict ended without a comparison: "nondeterministic" (exit 4),
/// "bad-input" (2), "environment" (3); "" for a pass or a regression.
const char* stop_kind(const Verdict& verdict);

/// The process exit code over several smokes: the most severe of the
/// verdicts' codes, in the order 3 > 2 > 4 > 1 > 0 (README, "Exit codes");
/// kPass for none.
ExitCode most_severe(const std::vector<Verdict>& verdicts);

/// Machine-readable form of the verdict (the JSON report).
nlohmann::json to_json(const Verdict& verdict);

}  // namespace lockstep
