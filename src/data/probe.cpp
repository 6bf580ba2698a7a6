#include "data/probe.h"

#include <torch/torch.h>

#include "core/hash.h"
#include "data/tensor_stats.h"

namespace lockstep {

namespace {

// PyTorch's dtype names (torch.float32, ...), as record/batch_probe.h lists them.
std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "float32";
    case torch::kFloat64: return "float64";
    case torch::kFloat16: return "float16";
    case torch::kBFloat16: return "bfloat16";
    case torch::kInt64: return "int64";
    case torch::kInt32: return "int32";
    case torch::kInt16: return "int16";
    case torch::kInt8: return "int8";
    case torch::kUInt8: return "uint8";
    case torch::kBool: return "bool";
    default: throw std::invalid_argument(std::string("probe: unsupported dtype ") + c10::toString(t));
  }
}

}  // namespace

TensorStats probe_floats(const float* data, size_t n) {
  TensorStats s;
  s.shape = {static_cast<int64_t>(n)};
  s.dtype = "float32";
  Xxh3Stream hash;
  accumulate_stats(data, n, s, &hash);
  s.xxh3_128 = hash.hex();
  return s;
}

TensorStats probe_tensor(const torch::Tensor& tensor) {
  torch::Tensor t = tensor.to(torch::kCPU).contiguous();
  TensorStats s;
  s.shape = t.sizes().vec();
  s.dtype = dtype_name(t.scalar_type());
  size_t n = static_cast<size_t>(t.numel());
  Xxh3Stream hash;  // fed by the statistics pass for float32 and int64
  if (t.scalar_type() == torch::kFloat32) {
    accumulate_stats(t.data_ptr<float>(), n, s, &hash);
  } else if (t.scalar_type() == torch::kInt64) {
    accumulate_stats(t.data_ptr<int64_t>(), n, s, &hash);
  } else {
    hash.update(t.data_ptr(), t.nbytes());
    torch::Tensor d = t.to(torch::kFloat64);
    accumulate_stats(d.data_ptr<double>(), n, s);
  }
  s.xxh3_128 = hash.hex();
  return s;
}

BatchProbe probe_batch(int64_t index, const torch::Tensor& inputs, const torch::Tensor& labels,
                       const std::vector<int64_t>& sample_indices) {
  BatchProbe p;
  p.batch = index;
  p.sample_index_hash = hex64(xxh3_64(sample_indices.data(), sample_indices.size() * sizeof(int64_t)));
  p.inputs = probe_tensor(inputs);
  p.labels = probe_tensor(labels);
  return p;
}

}  // namespace lockstep
