// Batch probes: the content hash and float64 statistics of a tensor, the
// unit of the data-only pass (record/batch_probe.h has the data model).
//
//   TensorStats s = probe_tensor(batch.inputs);
//   BatchProbe p = probe_batch(k, batch.inputs, batch.labels, batch.indices);
//
// Statistics are accumulated in float64 in one fixed order (8 interleaved
// partial sums combined pairwise; data/tensor_stats.h has the definition),
// on the calling thread only, so the value never depends on the intra-op
// thread count. Non-finite elements are counted and left out of
// sum/mean/std/min/max.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "record/batch_probe.h"

namespace lockstep {

/// Statistics of a float32 buffer of n elements (no LibTorch involved).
TensorStats probe_floats(const float* data, size_t n);

/// Statistics of any CPU tensor (float32 or int64; others are converted to
/// float64 first). The hash covers the contiguous bytes in the tensor's dtype.
TensorStats probe_tensor(const torch::Tensor& tensor);

/// The probe of batch `index`.
BatchProbe probe_batch(int64_t index, const torch::Tensor& inputs, const torch::Tensor& labels,
                       const std::vector<int64_t>& sample_indices);

}  // namespace lockstep
