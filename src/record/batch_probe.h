// Batch probes: what the data-only pass records for every batch, so a data
// change is named ("batch 3, inputs.std") before anyone looks at training.
//
// TensorStats is computed over the batch tensor as laid out in memory
// (C-contiguous). Statistics are float64 and accumulated in a fixed order,
// so they do not depend on the thread count. `std` is the population
// standard deviation (divisor N, numpy's default ddof=0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;

/// Content hash and summary statistics of one tensor.
struct TensorStats {
  std::vector<int64_t> shape;
  std::string dtype;       ///< float32|float64|float16|bfloat16|int64|int32|int16|int8|uint8|bool
  std::string xxh3_128;    ///< XXH3-128 of the raw bytes, 32 hex digits
  double sum = 0, mean = 0, std = 0, min = 0, max = 0;  ///< over finite elements
  uint64_t nan_count = 0, inf_count = 0;
};

/// The probe of one batch: inputs and labels.
struct BatchProbe {
  int64_t batch = 0;              ///< 0-based index in the pass (a rank's own index in a multi-rank run)
  int64_t rank = -1;              ///< the rank whose batch it is; -1 (absent in JSON): a single-process run
  std::string sample_index_hash;  ///< XXH3-64 of the int64 dataset indices, 16 hex digits
  TensorStats inputs;
  TensorStats labels;
};

/// Whether `a` and `b` are the same batch bit for bit: the same samples
/// (sample_index_hash), inputs and labels (xxh3_128).
bool same_batch(const BatchProbe& a, const BatchProbe& b);

/// Names of the float64 statistics in a fixed order:
/// "sum", "mean", "std", "min", "max".
const std::vector<std::string>& tensor_stat_names();

/// The statistic called `name` (one of tensor_stat_names()).
double tensor_stat(const TensorStats& stats, const std::string& name);

nlohmann::json to_json(const TensorStats& stats);
nlohmann::json to_json(const BatchProbe& probe);

/// The probes of the ranks of one multi-rank run as one list: batch 0 of
/// rank 0, batch 0 of rank 1, ..., then batch 1 of each. Entry i is batch
/// i / W of rank i % W: its `rank` is set and its `batch` is i, as in any
/// record; a resumed run's second half passes `first_batch` (the first
/// half's entries, steps x W) and numbers on from it. Throws exit-1 Error
/// naming `where` when the ranks saw different numbers of batches (every
/// rank must see the same).
std::vector<BatchProbe> interleave_rank_probes(const std::vector<std::vector<BatchProbe>>& per_rank,
                                               const std::string& where, int64_t first_batch = 0);

/// What differs in content between two probes of the same batch, by hash:
/// "sample_index_hash 1f.. → 2a..", "inputs (xxh3 ..→..)" or "labels
/// (...)", the first that differs in that order; "" when the samples,
/// inputs and labels are bit-identical. The batch is identical exactly
/// when this is "" (the statistics follow from the bytes).
std::string batch_content_difference(const BatchProbe& reference, const BatchProbe& other);

/// Parses a TensorStats object; throws exit-2 Error naming the JSON path
/// (a key, a 32-digit hash, a known dtype).
TensorStats tensor_stats_from_json(const JsonView& node);

/// Parses a probe; throws exit-2 Error naming the JSON path on bad input.
BatchProbe batch_probe_from_json(const JsonView& node);

}  // namespace lockstep
