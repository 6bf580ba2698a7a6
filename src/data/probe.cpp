#include "data/probe.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "core/hash.h"

namespace lockstep {

namespace {

// Fixed-order float64 statistics over any element type. Element i goes to
// lane i % 8 (sum and squared deviation) in index order. The common case,
// no NaN or Inf, runs as branch-free loops over blocks of 8 (this file is
// built with -O3: GCC vectorises the squared-deviation loop; the min/max
// loop stays scalar under IEEE semantics); a NaN/Inf detector rides along
// (x - x is 0 only for finite x), and when it fires the element-wise path
// starts over. Both add in the same order, so the bits never depend on
// which path ran.
template <typename T>
void accumulate(const T* data, size_t n, TensorStats& s) {
  constexpr size_t kLanes = 8;
  const double kInf = std::numeric_limits<double>::infinity();
  double sum[kLanes], lo_lane[kLanes], hi_lane[kLanes], check[kLanes];
  for (size_t j = 0; j < kLanes; ++j) {
    sum[j] = check[j] = 0;
    lo_lane[j] = kInf;
    hi_lane[j] = -kInf;
  }
  size_t finite = 0;
  const size_t blocks_end = n - n % kLanes;
  for (size_t i = 0; i < blocks_end; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      double v = static_cast<double>(data[i + j]);
      sum[j] += v;
      lo_lane[j] = v < lo_lane[j] ? v : lo_lane[j];
      hi_lane[j] = v > hi_lane[j] ? v : hi_lane[j];
      check[j] += v - v;
    }
  bool clean = true;
  for (size_t j = 0; j < kLanes; ++j) clean &= check[j] == 0.0;
  size_t from = blocks_end;
  if (clean) {
    finite = blocks_end;
  } else {
    for (size_t j = 0; j < kLanes; ++j) {
      sum[j] = 0;
      lo_lane[j] = kInf;
      hi_lane[j] = -kInf;
    }
    from = 0;
  }
  for (size_t i = from; i < n; ++i) {  // the tail, or everything when NaN/Inf occur
    double v = static_cast<double>(data[i]);
    if (!std::isfinite(v)) {
      if (std::isnan(v)) ++s.nan_count;
      else ++s.inf_count;
      continue;
    }
    size_t j = i % kLanes;
    sum[j] += v;
    lo_lane[j] = v < lo_lane[j] ? v : lo_lane[j];
    hi_lane[j] = v > hi_lane[j] ? v : hi_lane[j];
    ++finite;
  }
  double lo = lo_lane[0], hi = hi_lane[0];
  for (size_t j = 1; j < kLanes; ++j) {
    lo = lo_lane[j] < lo ? lo_lane[j] : lo;
    hi = hi_lane[j] > hi ? hi_lane[j] : hi;
  }
  // Pairwise combination of the lanes: (0+1)+(2+3) + (4+5)+(6+7).
  double total = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
  s.sum = total;
  if (finite == 0) {
    s.mean = s.std = s.min = s.max = 0;
    return;
  }
  s.mean = total / static_cast<double>(finite);
  const double mean = s.mean;
  double sq[kLanes] = {0};
  if (clean) {
    for (size_t i = 0; i < blocks_end; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j) {
        double d = static_cast<double>(data[i + j]) - mean;
        sq[j] += d * d;
      }
  }
  for (size_t i = from; i < n; ++i) {
    double v = static_cast<double>(data[i]);
    if (std::isfinite(v)) sq[i % kLanes] += (v - mean) * (v - mean);
  }
  double ss = ((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]));
  s.std = std::sqrt(ss / static_cast<double>(finite));
  s.min = lo;
  s.max = hi;
}

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
  s.xxh3_128 = xxh3_128_hex(data, n * sizeof(float));
  accumulate(data, n, s);
  return s;
}

TensorStats probe_tensor(const torch::Tensor& tensor) {
  torch::Tensor t = tensor.to(torch::kCPU).contiguous();
  TensorStats s;
  s.shape = t.sizes().vec();
  s.dtype = dtype_name(t.scalar_type());
  s.xxh3_128 = xxh3_128_hex(t.data_ptr(), t.nbytes());
  size_t n = static_cast<size_t>(t.numel());
  if (t.scalar_type() == torch::kFloat32) {
    accumulate(t.data_ptr<float>(), n, s);
  } else if (t.scalar_type() == torch::kInt64) {
    accumulate(t.data_ptr<int64_t>(), n, s);
  } else {
    torch::Tensor d = t.to(torch::kFloat64);
    accumulate(d.data_ptr<double>(), n, s);
  }
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
