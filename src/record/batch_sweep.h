// What a batch-invariance sweep found (`lockstep probe SMOKE
// --batch-sweep`): each module's output for each sample of the first
// batch, computed whole and in pieces of N/2, N/4, ..., 1, held bit for
// bit to the whole batch's. The built-in sweep (run/batch_sweep.h) and the
// Python helper's sweep of a trainer's model (python/lockstep/batch_sweep.py,
// LOCKSTEP_BATCH_SWEEP) both give one; this is its data model and its JSON,
// written and read back. Reports: compare/batch_sweep_report.h.
//
//   BatchSweep s = read_batch_sweep("out/sweep/batch_sweep.json");   // exit 2 naming the field if malformed
//   s.invariant();
//   write_file_atomically("sweep.json", pretty_dump(batch_sweep_json(s)));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

/// One module at one piece size.
struct SweepCell {
  int64_t size = 0;           ///< the piece size (samples per forward)
  int64_t samples_differ = 0; ///< samples whose output differs from the full batch's in any bit
  /// Of those, the samples whose input to the module was the whole batch's
  /// bit for bit: the difference starts in this module (0: it only carries
  /// on what an earlier module changed).
  int64_t samples_new = 0;
  uint64_t max_ulp = 0;       ///< the largest ULP distance of one element, in its own dtype (0: identical)
  double max_abs = 0;         ///< the largest |whole - piece| of one element
  double seconds = 0;         ///< wall time of this size's forwards (outputs kept) and comparisons
  /// With the bench's timing: wall time of the same forwards with nothing
  /// kept nor compared, measured first (bench/batch_sweep.sh); else 0.
  double plain_seconds = 0;
};

/// One module (by its trace key; a key called twice in a forward is
/// "<key>#2" for its second call) across the sizes.
struct ModuleSweep {
  std::string module;          ///< "fc1", "drop#2", "(model output)"
  std::string type;            ///< the module's class, "Linear" ("" when unknown)
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

/// The sweep as JSON: {"smoke", "device", "batch", "sizes", "invariant",
/// "forward_s", "modules": [{"module", "type", "per_sample", "invariant",
/// "first_size_differing", "first_size_originating", "cells": [{"size",
/// "samples_differ", "samples_new", "max_ulp", "max_abs", "seconds"}]}]};
/// "plain_seconds" in a cell only when timed (bench/batch_sweep.sh).
nlohmann::json batch_sweep_json(const BatchSweep& sweep);

/// Reads a sweep from `path` in batch_sweep_json's form; "smoke",
/// "device" and the derived fields ("invariant", "first_size_*") may be
/// absent and are recomputed, never trusted. Throws exit-2 BadInput naming
/// the file and field when it is not that form: sizes not N halved down to
/// 1, a module without one cell per size after N or out of order, counts
/// outside [0, N], a negative or non-finite distance or time, a derived
/// field that contradicts the cells, a module name used twice or holding a
/// control character, "(model output)" anywhere but the last row.
BatchSweep read_batch_sweep(const std::string& path);

}  // namespace lockstep
