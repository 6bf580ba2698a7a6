// The batch-invariance sweep of a built-in smoke (`lockstep probe SMOKE
// --batch-sweep`), as PyTorch's batch-invariant mode and vLLM's
// determinism tests ask it: is each sample's output the same whatever
// batch it is computed in? The model as initialised (eval mode: dropout
// off, BatchNorm on its running statistics, so nothing couples the
// samples), the smoke's first batch of N samples forwarded at N, then in
// pieces of N/2, N/4, ..., 1; each module's output for each sample held
// bit for bit to the full batch's:
//
//   BatchSweep s = sweep_batch_invariance(with_overrides(load_smoke_config(path), {}));
//   s.invariant();        // every module, every size: bit for bit
//   render_batch_sweep(s) == "batch sweep wine-mlp: ...\n  fc1 (Linear)  batch-invariant\n..."
//
// A module whose output has no batch dimension (a positional embedding)
// is compared whole; the model's own output is the last row (the only one
// of a TorchScript module that is not an nn.Sequential). Outputs are kept
// without a copy: a child that works in place on its input
// (ReLU(inplace=True)) changes its predecessor's kept output, in the whole
// batch and the pieces alike. The cost: one forward of the batch per size, with the
// outputs kept and compared (bench/batch_sweep.sh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "smoke/smoke_config.h"

namespace lockstep {

/// One module at one piece size.
struct SweepCell {
  int64_t size = 0;           ///< the piece size (samples per forward)
  int64_t samples_differ = 0; ///< samples whose output differs from the full batch's in any bit
  /// Of those, the samples whose input to the module was the whole batch's
  /// bit for bit: the difference starts in this module (0: it only carries
  /// on what an earlier module changed).
  int64_t samples_new = 0;
  uint64_t max_ulp = 0;       ///< the largest float32 ULP distance of one element (0: identical)
  double max_abs = 0;         ///< the largest |whole - piece| of one element
  double seconds = 0;         ///< wall time of this size's forwards (outputs kept) and comparisons
  /// With `time_plain`: wall time of the same forwards with nothing kept
  /// nor compared, measured first (bench/batch_sweep.sh's baseline); else 0.
  double plain_seconds = 0;
};

/// One module (by its trace key; a key called twice in a forward is
/// "<key>#2" for its second call) across the sizes.
struct ModuleSweep {
  std::string module;          ///< "fc1", "drop#2"
  std::string type;            ///< LibTorch's module type, "Linear" ("" when unknown)
  bool per_sample = true;      ///< false: no batch dimension, compared whole
  std::vector<SweepCell> cells;  ///< one per size after the full batch, in sweep order

  /// The first size at which it differs, 0 when it never does.
  int64_t first_size_differing() const;
  /// The first size at which a difference starts in it (its input the
  /// whole batch's), 0 when none does.
  int64_t first_size_originating() const;
};

/// A sweep's result.
struct BatchSweep {
  std::string smoke;
  std::string device;
  int64_t batch = 0;            ///< N, the first batch's samples
  std::vector<int64_t> sizes;   ///< N, N/2, ..., 1 (each halved, rounded down)
  double forward_s = 0;         ///< wall time of one forward of the whole batch, nothing kept (after a warm-up)
  std::vector<ModuleSweep> modules;  ///< in the model's call order

  /// Whether every module's output is bit for bit the same at every size.
  bool invariant() const;
};

/// Runs the sweep for the built-in smoke `config` (overrides applied):
/// the preflight and the determinism contract as a run applies them, the
/// data as its loader gives it (first batch of epoch 0), the model as
/// initialised from the seed. Throws BadUsage (exit 2) for a trainer smoke
/// (its model is the trainer's own) or a first batch of one sample (nothing
/// to split), exit 3 for a cuda smoke without CUDA.
/// `time_plain` (the bench's hidden --batch-sweep-timing) first forwards
/// each size's pieces with nothing kept, timed (SweepCell::plain_seconds).
BatchSweep sweep_batch_invariance(const SmokeConfig& config, bool time_plain = false);

/// The sweep for a person, one line per module, then the verdict:
///   batch sweep wine-mlp (cpu): the first batch, 24 samples, forwarded at 24, 12, 6, 3, 1 (eval mode) ...
///     fc1 (Linear)      batch-invariant
///     fc2 (Linear)      not batch-invariant: at 12: 5 of 24 samples differ, max 2 ulp (|Δ| 1e-07); at 6: ...
///     head (Linear)     differs only as its input does (an earlier module's difference, carried on): ...
///   wine-mlp: BATCH-INVARIANT (exit 0)   |   wine-mlp: NOT BATCH-INVARIANT (exit 1): fc2 (Linear) ...
/// The verdict names the first module where a difference starts (its
/// input the whole batch's bit for bit, its output not).
std::string render_batch_sweep(const BatchSweep& sweep);

/// The sweep as JSON: {"smoke", "device", "batch", "sizes", "invariant",
/// "forward_s", "modules": [{"module", "type", "per_sample", "invariant",
/// "first_size_differing", "first_size_originating", "cells": [{"size",
/// "samples_differ", "samples_new", "max_ulp", "max_abs", "seconds"}]}]};
/// "plain_seconds" in a cell only when timed (bench/batch_sweep.sh).
nlohmann::json batch_sweep_json(const BatchSweep& sweep);

}  // namespace lockstep
