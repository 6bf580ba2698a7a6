// How the smoke loader forms batches and augments samples, as plain data
// with no LibTorch: the smoke config (src/smoke/, torch-free) holds these
// structs and the loader (data/loader.h) consumes them unchanged.
//
//   LoaderSpec spec;
//   spec.sample_shape = {1, 8, 8};  spec.batch_size = 32;  spec.workers = 2;
//   spec.augment.max_shift = 1;  spec.augment.flip = true;
//   SmokeLoader loader(table, spec, seed);   // data/loader.h
#pragma once

#include <cstdint>
#include <vector>

namespace lockstep {

/// Augmentation parameters from the smoke config's data.augment section
/// (the draw order is documented in data/augment.h).
struct AugmentOptions {
  int max_shift = 0;       ///< pixels, each axis
  double noise_std = 0.0;  ///< Gaussian noise standard deviation, in feature units
  bool flip = false;       ///< random horizontal flip, probability 1/2
  std::vector<double> mean, std;  ///< per channel; empty: no normalisation
  /// The deliberate worker-seeding bug (smoke "inject_nondeterminism":
  /// "worker_seeded_augment"): the dataset draws from one generator per
  /// worker thread seeded with a constant instead of one per sample.
  bool worker_seeded = false;
  /// >= 0 in a multi-rank run: the rank joins the augment key, {epoch,
  /// sample, rank} (spec/distributed_spec.h); -1: {epoch, sample}.
  int rank = -1;
  /// True when any augmentation step (shift, flip, noise, normalise) is on.
  bool enabled() const { return max_shift > 0 || flip || noise_std > 0 || !mean.empty(); }
};

/// How batches are formed (smoke config "data" section).
struct LoaderSpec {
  std::vector<int64_t> sample_shape;  ///< per sample, e.g. {1, 8, 8} ([C, H, W]) or {16} (tokens)
  int64_t batch_size = 32;            ///< samples per batch
  int workers = 0;                    ///< 0: batches built on the calling thread
  bool shuffle = true;                ///< a seeded permutation per epoch
  bool drop_last = true;              ///< drop a final short batch
  /// Multi-rank share (torch DistributedSampler with drop_last): rank r of
  /// world_size takes positions r, r + W, ... of the first
  /// floor(n / W) * W entries of the epoch's global order. 0 of 1: all.
  int rank = 0;
  int world_size = 1;
  AugmentOptions augment;
};

}  // namespace lockstep
