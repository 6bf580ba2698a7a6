// `lockstep env --diff RECORD` for a team trainer's record: what differs
// between the stack the record was made on and the stack a trainer run
// would get here, field for field, without LibTorch. The machine's facts
// come from machine/machine_facts (as a trainer run records them, under the
// environment lockstep would hand the trainer), the Python facts from the
// smoke's interpreter (its trainer.command[0], never a program the record
// names) running the helper's stack_fingerprint().
//
//   SmokeConfig cfg = load_smoke_config("smoke/t.json");
//   TrainerEnvironmentDiff d = diff_trainer_environment("goldens/t/cpu-x86_64-avx2.json", ".", cfg);
//   for (const auto& f : d.differences) std::cout << (f.relevant ? "* " : "  ") << f.name << "\n";
//
// Left out, because a run sets them rather than the stack: the determinism
// contract read back in the run (determinism.*), the smoke's own fields
// (trainer.*, inputs, data.*, config.*), the loader's and the modules the
// trainer happened to import (loader.*, python.module.*: the versions are
// in python.packages.*).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "record/fingerprint.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// What diff_trainer_environment() found.
struct TrainerEnvironmentDiff {
  std::string platform;         ///< the platform key a run here would get
  std::string record_platform;  ///< the record's
  std::string interpreter;      ///< the Python that was asked (the record's python.executable)
  /// Every differing field, relevant ones first and among them the Python
  /// packages first; a field is relevant when either side tags it so (a
  /// package the trainer imported when the record was made).
  std::vector<FieldDiff> differences;
  size_t compared = 0;   ///< fields compared
  size_t left_out = 0;   ///< record fields left out (the run's own, see above)
  std::string config;    ///< the smoke config whose trainer.packages applied; "" none
};

/// Whether `record` is a team trainer's (its fingerprint has trainer.command).
bool is_trainer_fingerprint(const Fingerprint& record);

/// Diffs the trainer record at `path` against this machine and the
/// smoke's interpreter (`cfg` is the record's smoke config: its
/// trainer.command[0], a Python, or `python` when given; its trainer.env
/// and trainer.packages apply, as in a run and in check). Nothing the
/// record names is ever run. `repo_path` is where git state is read.
/// Throws exit-2 Error for an unreadable record, a contract field out of
/// range, a config of another smoke, or an interpreter that is not there
/// or not a Python; exit-3 EnvironmentError when it cannot be run or does
/// not print a fingerprint (at most 16 MiB read; its stderr quoted).
TrainerEnvironmentDiff diff_trainer_environment(const std::string& path, const std::string& repo_path,
                                                const SmokeConfig& cfg, const std::string& python = "");

}  // namespace lockstep
