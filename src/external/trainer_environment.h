// `lockstep env --diff RECORD` for a team trainer's record: what differs
// between the stack the record was made on and the stack a trainer run
// would get here, field for field, without LibTorch. The machine's facts
// come from machine/machine_facts (as a trainer run records them, under the
// environment lockstep would hand the trainer), the Python facts from the
// trainer's own interpreter (the record's python.executable) running the
// helper's stack_fingerprint().
//
//   TrainerEnvironmentDiff d = diff_trainer_environment("goldens/t/cpu-x86_64-avx2.json", ".");
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
};

/// Whether `record` is a team trainer's (its fingerprint has trainer.command).
bool is_trainer_fingerprint(const Fingerprint& record);

/// Diffs the trainer record at `path` against this machine and the
/// record's interpreter; `repo_path` is where git state is read. Throws
/// exit-2 Error for an unreadable record or a contract field out of range;
/// exit-3 EnvironmentError when the interpreter cannot be run or its
/// helper output is not a fingerprint (the message quotes its stderr).
TrainerEnvironmentDiff diff_trainer_environment(const std::string& path, const std::string& repo_path);

}  // namespace lockstep
