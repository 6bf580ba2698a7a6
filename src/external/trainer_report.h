// What the team's trainer says about itself: the file the Python helper
// (python/lockstep, `apply_contract()`) writes into $LOCKSTEP_OUT, and the
// contract lockstep requires of it.
//
//   TrainerReport r = read_trainer_report("out/train/lockstep-trainer.json");  // exit 2 if malformed
//   std::string why = contract_mismatch(expected_contract(cfg), r.contract);
//   if (!why.empty()) throw EnvironmentError(why);                             // exit 3
//
// The file (schema "lockstep.trainer/1"):
//   {"schema": "lockstep.trainer/1",
//    "helper": {"version": "0.1.0", "path": "/opt/lockstep/share/lockstep/python/lockstep"},
//    "contract": {"mode": "strict", "deterministic_algorithms": "true", ...},   // read back from torch
//    "fingerprint": {"python.torch": {"value": "1.13.1", "relevant": true}, ...},
//    "perturbed": "dataset index 17 (the first sample of ...)"}   // LOCKSTEP_PERTURB=data only
#pragma once

#include <map>
#include <string>

#include "record/fingerprint.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// The name of the report file in a run's output folder.
inline constexpr const char* kTrainerReportFile = "lockstep-trainer.json";

/// The parsed report.
struct TrainerReport {
  std::map<std::string, std::string> contract;  ///< flag name -> value read back ("true", "1", ...)
  Fingerprint fingerprint;                      ///< python.*, loader.*, trainer.* fields
  std::string helper_version;                   ///< the helper's __version__; "" from a helper before 0.1.0
  std::string helper_path;                      ///< the folder the trainer imported the helper from
  /// With LOCKSTEP_PERTURB=data, in rank 0's data-only pass: what the
  /// helper moved ("dataset index 17 (the first sample of ...): sample[0],
  /// a float32 tensor of shape [1, 8, 8]: its element 0 one ULP towards
  /// +inf") or why nothing ("nothing: an IterableDataset ..."); with
  /// LOCKSTEP_PERTURB=parameter, in the training pass: the parameter its
  /// ModuleTracer moved ("conv1.weight[0], one ULP towards +inf before
  /// step 0"); "" otherwise.
  std::string perturbed;
};

/// Reads `path`. Throws exit-2 Error naming the file and field when it is
/// missing (the trainer did not call apply_contract()), not JSON, of another
/// schema, or a field has the wrong type.
TrainerReport read_trainer_report(const std::string& path);

/// Adds what the trainer reported to `record`: its contract (also as
/// determinism.* fingerprint fields), its cpu.capability (the one its torch
/// reports as python.torch.cpu_capability, else the one the record's
/// cpu.isa allows: it names the platform), and its own fingerprint fields.
/// Those must lie under python., loader. or trainer. and must not be a
/// field the record already holds: exit-2 Error naming `report_path`.
/// Shared by a trainer smoke's run and `lockstep import --trainer-report`.
void add_trainer_facts(const TrainerReport& report, const std::string& report_path, RunRecord& record);

/// "" when the helper that wrote `report` is this lockstep's own version
/// (LOCKSTEP_VERSION); else a message naming both versions and the folder
/// the trainer imported the helper from (for an exit-3 EnvironmentError:
/// the helper and the binary must come from one install).
std::string helper_mismatch(const TrainerReport& report);

/// `dir`/lockstep-trainer.json read (read_trainer_report's exit 2) and held
/// to this lockstep and to `config`'s contract: a helper of another
/// version, or a trainer that ran under another contract, is exit-3
/// EnvironmentError naming the file. Every pass of a trainer run, and the
/// batch sweep, reads its report through this.
TrainerReport read_checked_report(const SmokeConfig& config, const std::string& dir);

/// The flags the config's determinism mode requires, with the values the
/// report must show: strict pins deterministic algorithms (error, not
/// warn), cuDNN deterministic and benchmark off, TF32 off, and the thread
/// counts; default pins only the thread counts.
std::map<std::string, std::string> expected_contract(const SmokeConfig& config);

/// "" when `reported` holds every expected flag with its value; else a
/// message naming each flag, the value required and the value reported.
std::string contract_mismatch(const std::map<std::string, std::string>& expected,
                              const std::map<std::string, std::string>& reported);

}  // namespace lockstep
