// Per-sample augmentation for image-shaped samples [C, H, W] (float32).
//
//   at::Generator g = stream_generator(seed, "augment", {epoch, index});
//   torch::Tensor out = augment_sample(image, {/*max_shift=*/1, /*noise_std=*/0.05}, g);
//
// Every random draw comes from the generator passed in, which the dataset
// seeds from (augment stream, epoch, sample index): the result is the same
// whatever worker thread runs it and in whatever order (docs/seeding.md).
// Draw order (part of the contract, changing it changes goldens):
//   1. shift: one randint in [-max_shift, max_shift] for dy, then one for dx
//      (only when max_shift > 0); pixels shifted in are 0;
//   2. flip: one randint in [0, 1]; 1 mirrors the image left-right (only
//      when flip is on);
//   3. noise: one randn of shape [C, H, W] times noise_std (only when
//      noise_std > 0);
//   then, with no draw, normalise: out[c] = (x[c] - float(mean[c])) / float(std[c])
//   in float32 (torchvision's Normalize), when mean/std are given.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <vector>

#include "spec/loader_spec.h"

namespace lockstep {

/// Returns an augmented copy of `image` ([C, H, W], float32, contiguous).
torch::Tensor augment_sample(const torch::Tensor& image, const AugmentOptions& options,
                             at::Generator& generator);

/// Shifts `image` ([C, H, W]) by (dy, dx) pixels with zero fill.
torch::Tensor shift_image(const torch::Tensor& image, int64_t dy, int64_t dx);

}  // namespace lockstep
