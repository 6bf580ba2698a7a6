// The rule that a resumed run keeps the determinism contract it stopped
// under, in one place for every kind of checkpoint: a built-in smoke's
// (train/trainer.cpp reads the contract from the checkpoint) and a team
// trainer's stopped half (external/trainer_run.cpp reads it from the part
// record). Header-only and torch-free, so both layers share it.
//
//   require_resume_contract("ck.rank-0.ckpt", this_runs_contract, checkpoint.contract, "this run's");
//   // throws: ck.rank-0.ckpt: contract.intra_op_threads: expected "2" (this run's), got "1": ...
#pragma once

#include <map>
#include <string>

#include "core/error.h"

namespace lockstep {

/// Throws exit-2 BadInput naming `file` and the field "contract.<key>" for
/// the first key (in key order) of `expected` that `stopped` lacks or holds
/// another value for; `whose` says where the expected value comes from
/// ("this run's"). Keys only in `stopped` are not compared (a later
/// lockstep may record more).
inline void require_resume_contract(const std::string& file, const std::map<std::string, std::string>& expected,
                                    const std::map<std::string, std::string>& stopped, const std::string& whose) {
  for (const auto& [key, value] : expected)
    if (auto it = stopped.find(key); it == stopped.end() || it->second != value)
      throw BadInput(file, "contract." + key,
                     "\"" + value + "\" (" + whose + "), got " +
                         (it == stopped.end() ? std::string("none") : "\"" + it->second + "\"") +
                         ": a run resumes under the determinism contract it stopped under");
}

}  // namespace lockstep
