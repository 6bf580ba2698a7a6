// Synthetic data source: a table generated from the seed, for smokes that
// need no files (token sequences for the transformer, images, tabular
// rows). The same seed gives the same bytes on every machine: every draw is
// an integer or uniform draw from a private mt19937 generator seeded from
// the "synthetic" stream (no normal draws, whose vectorised kernels differ
// between CPU capabilities).
//
//   SyntheticOptions o{SyntheticOptions::Kind::kTokens, /*rows=*/512, /*vocab=*/64};
//   CsvTable t = make_synthetic(o, {16}, /*classes=*/4, seed);   // t.integer_features
//
// Kinds (sample_shape in brackets, K = classes):
//   tokens  [L]:       tokens ~ U{0..vocab-1}; label = token[0] mod K
//                      (learnable by attention); delivered as int64
//   images  [C, H, W]: label ~ U{0..K-1}; pixel ~ U[0, 0.5), plus 0.5 on
//                      image row (label mod H) — a class-coded stripe
//   tabular [F]:       feature ~ U[-1, 1); label = argmax_k sum_f W[k][f] x[f]
//                      with W ~ U[-1, 1) drawn first, in float64
#pragma once

#include <cstdint>
#include <vector>

#include "data/csv_source.h"

namespace lockstep {

/// The "data.synthetic" section of a smoke config.
struct SyntheticOptions {
  enum class Kind { kTokens, kImages, kTabular };
  Kind kind = Kind::kTokens;
  int64_t rows = 512;   ///< samples
  int64_t vocab = 64;   ///< tokens only: ids in [0, vocab), vocab <= 2^24 (exact in float32)
};

/// Generates the table. Throws exit-2 Error when `sample_shape` does not
/// suit the kind (tokens [L], images [C, H, W], tabular [F]).
CsvTable make_synthetic(const SyntheticOptions& options, const std::vector<int64_t>& sample_shape,
                        int64_t classes, uint64_t seed);

}  // namespace lockstep
