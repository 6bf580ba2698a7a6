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

#include "cli/commands.h"
#include "record/run_record.h"

namespace lockstep {

/// One child run.
struct ChildRun {
  std::string config;                  ///< smoke config path
  std::string out;                     ///< record path the child writes
  std::vector<std::string> extra_args; ///< e.g. {"--intra-op-threads", "2"}
  std::string seed;                    ///< non-empty: LOCKSTEP_SEED for the child
};

/// The command-line flags that pass `overrides` on to a child run.
std::vector<std::string> override_args(const RunOverrides& overrides);

/// Path of the running lockstep executable (/proc/self/exe).
std::string self_executable();

/// Spawns `lockstep run CONFIG --out OUT --quiet EXTRA...`, waits, and reads
/// the record. The child's stderr passes through. A child that exits with
/// 2 or 3 is rethrown as the same code; any other failure is exit 3.
RunRecord run_child(const ChildRun& run);

/// The same without reading a record (a run that stops at a checkpoint).
void spawn_child(const ChildRun& run);

/// `n` fresh runs of `config`, records <dir>/<prefix>-1.json ... -n.json.
std::vector<RunRecord> run_children(const std::string& config, const std::string& dir, const std::string& prefix,
                                    int n, const std::vector<std::string>& extra_args, const std::string& seed = "");

/// Where the first run that is not bit-identical to runs[0] differs:
/// {its 0-based index, first_bit_difference()}, or {0, ""} when all agree.
std::pair<size_t, std::string> first_repeat_difference(const std::vector<RunRecord>& runs);

}  // namespace lockstep
