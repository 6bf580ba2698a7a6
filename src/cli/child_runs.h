// Runs `lockstep run` in fresh child processes, for `check` and `bless`.
//
// Repeat checks must use separate processes: a second run in the same
// process would share LibTorch's global state (the inter-op pool can be
// sized only once, generators, caches), and the point is to show that a
// fresh process reproduces the bits.
//
//   RunRecord r = run_child({"smoke/digits-cnn.json", "/tmp/x/run-1.json", {}});
#pragma once

#include <string>
#include <vector>

#include "record/run_record.h"

namespace lockstep {

/// One child run.
struct ChildRun {
  std::string config;                  ///< smoke config path
  std::string out;                     ///< record path the child writes
  std::vector<std::string> extra_args; ///< e.g. {"--intra-op-threads", "2"}
};

/// Path of the running lockstep executable (/proc/self/exe).
std::string self_executable();

/// Spawns `lockstep run CONFIG --out OUT --quiet EXTRA...`, waits, and reads
/// the record. The child's stderr passes through. A child that exits with
/// 2 or 3 is rethrown as the same code; any other failure is exit 3.
RunRecord run_child(const ChildRun& run);

}  // namespace lockstep
