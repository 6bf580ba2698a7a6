// The smoke trainer: a fixed number of optimiser steps over the smoke
// loader, recording per-step metrics and final hashes.
//
//   TrainResult r = train_smoke(spec, loader, seed);
//   r.series["loss"].values[0];   // float32 loss of step 0, exact
//
// Per step s (0-based), after backward and before optimizer.step():
//   loss                  float32 cross-entropy of the batch
//   grad_norm             float64 global L2 norm of all gradients
//   grad_norm/<param>     float64 L2 norm of each parameter's gradient
//   lr                    learning rate applied at this step
// after optimizer.step():
//   param_norm            float64 global L2 norm of all parameters
// At the end: hashes "params" (parameters and buffers, by name) and
// "optimizer" (momentum buffers), XXH3-128.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/loader.h"
#include "record/batch_probe.h"
#include "record/series.h"
#include "train/models.h"

namespace lockstep {

/// Optimiser section of a smoke config.
struct OptimizerSpec {
  std::string name = "sgd";  ///< "sgd"
  double lr = 0.05;
  double momentum = 0.9;
};

/// Everything the trainer needs besides the data.
struct TrainSpec {
  int64_t steps = 10;
  std::string device = "cpu";  ///< "cpu" or "cuda"
  ModelSpec model;
  OptimizerSpec optimizer;
  std::vector<int64_t> sample_shape;
  int64_t classes = 10;
};

/// What one training run produced.
struct TrainResult {
  std::map<std::string, Series> series;
  std::map<std::string, std::string> hashes;
  std::vector<BatchProbe> train_probes;  ///< probe of every batch consumed, in order
};

/// Trains for spec.steps steps from `seed`. Throws exit-2 Error when the
/// data yields no batch, exit-3 Error when CUDA is asked for but absent.
TrainResult train_smoke(const TrainSpec& spec, SmokeLoader& loader, uint64_t seed);

}  // namespace lockstep
