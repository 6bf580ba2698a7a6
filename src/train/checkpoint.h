// Training checkpoints for the resume check: everything that determines
// the rest of a smoke run, in one LibTorch archive.
//
//   save_checkpoint("ck.pt", state, model, optimizer);      // atomic
//   CheckpointState st = load_checkpoint("ck.pt", model, optimizer, true);
//
// Contents: every parameter and buffer (by position, names checked), the
// optimiser state (torch::optim::Optimizer::save), the default CPU (and,
// when used, CUDA) generator state that dropout draws from, the position in
// the data (epoch, next batch within it; the sampler and augmentation are
// pure functions of seed, epoch and index, so nothing else is needed), and
// what was recorded so far (series, train probes, init statistics, step
// times, module trace) so the resumed process writes the whole run's record. The archive
// is followed by its XXH3-128, so a flipped byte is refused (exit 2) instead
// of resuming from corrupted state.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "record/batch_probe.h"
#include "record/run_record.h"
#include "record/series.h"

namespace lockstep {

/// The non-tensor part of a checkpoint.
struct CheckpointState {
  std::string config_hash;  ///< of the smoke config that wrote it
  uint64_t seed = 0;
  int64_t step = 0;            ///< optimiser steps already taken
  uint64_t epoch = 0;          ///< epoch of the next batch
  int64_t batch_in_epoch = 0;  ///< index of the next batch within that epoch
  std::map<std::string, Series> series;
  std::map<std::string, InitStats> init;
  std::vector<BatchProbe> train_probes;
  std::vector<double> step_time_s;
  ModuleTrace module_trace;  ///< the traced steps before the checkpoint
  StepDigests digests;       ///< the steps before the checkpoint (record/step_digests.h)
  std::map<std::string, std::string> contract;  ///< the determinism contract it ran under (a resume keeps it)
  int rank = -1;             ///< the rank that wrote it in a multi-rank run; -1 for a single process
  int world_size = 1;        ///< ranks in that run
  /// The config's values hash with the run's planted changes (--lr-scale,
  /// --perturb: SmokeConfig::values_hash); "" in a checkpoint made before
  /// it. A resume under other values is refused.
  std::string values_hash;
};

/// Writes the checkpoint atomically. Throws exit-2 Error when it cannot
/// be written.
void save_checkpoint(const std::string& path, const CheckpointState& state, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer, bool cuda);

/// Restores model, optimiser and (unless `restore_generators` is false)
/// generator state, and returns the rest. Throws exit-2 Error naming the
/// file when it is missing, truncated, not a lockstep checkpoint, or its
/// parameters do not match the model's names and shapes.
CheckpointState load_checkpoint(const std::string& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, bool cuda, bool restore_generators);

}  // namespace lockstep
