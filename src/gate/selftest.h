// `lockstep selftest`: the negative control of a smoke (vLLM's habit: a
// determinism test that cannot fail is worthless). Three questions, each
// answered with child runs through the launcher seam:
//
//   0. A second plain run, bit for bit: when the smoke does not repeat,
//      no planted change can be told from its own nondeterminism, and
//      nothing else is run ("NOT REPEATABLE", exit 4).
//   1. Sensitivity: a run with one ULP of the model's first parameter
//      moved before step 0 (`run --perturb parameter`) against a plain
//      run, bit for bit. It must fail, and the module trace should name
//      the module.
//   2. The data-only pass's sensitivity: a run whose data-only pass sees
//      its first batch's first sample moved (`run --perturb data`; a
//      trainer's helper moves it in ctx.register_loader). Some batch probe
//      must differ from the plain run's: a data pass that probes indices
//      or labels only, or a tensor taken before the dataset made the
//      sample, passes every check while the data changes under it. A
//      trainer smoke without a data-only pass (no trainer.probes) skips it.
//      "sensitive" when 1 and 2 are caught.
//   3. Observability: K runs with the contract relaxed (determinism mode
//      "default": non-deterministic algorithms allowed; 2 intra-op
//      threads) counted in distinct results. One result means this smoke
//      cannot observe the stack's nondeterminism here (its kernels are
//      deterministic on this machine even unpinned): its repeat check
//      proves little beyond that.
//
//   SelftestOptions o;  o.dir = "lockstep-out/digits-cnn";
//   SelftestResult r = selftest_smoke(load_smoke_config("smoke/digits-cnn.json"), "smoke/digits-cnn.json", o, launcher);
//   r.sensitive;   r.distinct;   to_json(r);
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "launch/launcher.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// How a selftest runs.
struct SelftestOptions {
  /// Where its records go: selftest-base.json, selftest-base-2.json, selftest-perturbed.json,
  /// selftest-perturbed-data.json, selftest-relaxed-N.json.
  std::string dir;
  int relaxed_runs = 3;     ///< runs with the contract relaxed (--distinct-runs), at least 2
  int relaxed_threads = 2;  ///< their intra-op threads
};

/// What a selftest found.
struct SelftestResult {
  std::string smoke;
  /// The two plain runs agreed bit for bit; false: nothing planted was
  /// judged (verdict "NOT REPEATABLE", exit 4).
  bool repeatable = true;
  bool sensitive = false;       ///< both planted changes were caught (the data one where it applies)
  bool parameter_caught = false;  ///< the one-ULP parameter change failed the bit-for-bit comparison
  std::string caught;           ///< its first divergence ("" when it passed unseen)
  std::string module;           ///< the first module the trace named; "" when none was
  /// What was moved, for a person: "conv.weight[0], one ULP towards +inf
  /// before step 0" when the records' init statistics name it (the
  /// built-in trainer), else "the first element of the model's first
  /// parameter, ...".
  std::string perturbed;
  bool data_checked = false;    ///< the smoke has a data-only pass, so its sample was perturbed
  bool data_caught = false;     ///< some data-only batch probe differed from the plain run's
  std::string data_caught_at;   ///< "data batch 0: inputs: ..." ("" when not caught)
  /// What the data control moved, as the record's fingerprint field
  /// perturb.data says: "dataset index 173 (the first sample of ...)", or
  /// the helper's "nothing: ..." and why.
  std::string data_perturbed;
  int relaxed_runs = 0;         ///< runs made with the contract relaxed
  int distinct = 0;             ///< distinct results among them
  std::string relaxed_how;      ///< "determinism mode default, 2 intra-op threads"
  std::string relaxed_first;    ///< where the second result first differs from the first; "" when one result
  std::vector<std::string> notes;
  /// kPass when sensitive, kRegression when a planted change went unseen,
  /// kNondeterministic when the plain runs differ.
  ExitCode code() const {
    return !repeatable ? ExitCode::kNondeterministic : sensitive ? ExitCode::kPass : ExitCode::kRegression;
  }
  /// "sensitive", "INSENSITIVE" or "NOT REPEATABLE".
  std::string verdict() const { return !repeatable ? "NOT REPEATABLE" : sensitive ? "sensitive" : "INSENSITIVE"; }
};

/// Runs the selftest of `config` (loaded from `smoke_path`). Throws what
/// the launcher throws (exit 2 bad input, 3 environment).
SelftestResult selftest_smoke(const SmokeConfig& config, const std::string& smoke_path, const SelftestOptions& options,
                              Launcher& launcher);

/// {"smoke", "verdict", "repeatable", "sensitive", "caught", "module", "perturbed",
///  "data": {"checked", "caught", "perturbed", "first_difference"},
///  "relaxed": {"runs", "distinct", "how", "first_difference", "observes"}, "notes"}.
/// "caught", "module" and "perturbed" are the parameter change's.
nlohmann::json to_json(const SelftestResult& result);

/// The lines `lockstep selftest` prints for one smoke.
std::string selftest_text(const SelftestResult& result);

}  // namespace lockstep
