// What `lockstep env` reports: this machine's fingerprint and platform key,
// optionally diffed against a record's after applying that record's
// determinism contract (so only the stack itself differs). The LibTorch side
// of `lockstep env`; cli/ prints the result.
//
//   EnvQuery q;  q.diff_record = "goldens/digits-cnn/cpu-x86_64-avx2.json";
//   EnvReport r = describe_environment(q);
//   for (const auto& d : r.differences) std::cout << d.name << "\n";
//   if (!r.cuda_unusable.empty()) ...;   // the caller exits 3 after printing
#pragma once

#include <string>
#include <vector>

#include "record/fingerprint.h"

namespace lockstep {

/// What to describe.
struct EnvQuery {
  std::string device = "cpu";  ///< whose platform key and relevance: "cpu" or "cuda"
  bool device_given = false;   ///< the device was asked for explicitly (it must match a record's)
  std::string diff_record;     ///< a run record or golden to diff against; "" for none
  std::string repo_path = ".";  ///< where git state is read
};

/// The environment, and its differences from a record.
struct EnvReport {
  std::string device;            ///< the device described (the record's with diff_record)
  std::string platform;          ///< this machine's platform key for that device
  Fingerprint fingerprint;       ///< this machine's, under the applied contract
  std::string record_platform;   ///< with diff_record: the record's platform key
  std::vector<FieldDiff> differences;  ///< with diff_record: record vs here, relevant first
  std::string cuda_unusable;     ///< device cuda: why CUDA cannot run here; "" when it can
};

/// Captures the fingerprint. Without diff_record no contract is applied
/// (the stack's defaults are read back); with one, the record's contract
/// (mode, thread counts) is checked and applied first, and the smoke-run
/// fields (the inputs: data.*, model.*, config.*) are left out of the diff
/// (a team trainer's record is diffed by external/trainer_environment.h,
/// without LibTorch). Throws exit-2
/// Error for an unreadable record or a contract field out of range, and for
/// a device that contradicts the record's.
EnvReport describe_environment(const EnvQuery& query);

}  // namespace lockstep
