// Test helper: small run records built in code, for record/ and compare/
// tests (no LibTorch).
#pragma once

#include <string>
#include <vector>

#include "record/run_record.h"

namespace lockstep::testing {

/// A record with a float32 "loss" and float64 "grad_norm" series and a
/// fixed same-stack fingerprint and contract.
inline RunRecord make_record(std::vector<double> loss, std::vector<double> grad = {}) {
  RunRecord r;
  r.smoke = "unit";
  r.config_hash = "0123456789abcdef";
  r.seed = 42;
  r.device = "cpu";
  r.platform = "cpu-x86_64-avx2";
  r.steps = static_cast<int64_t>(loss.size());
  r.contract = {{"mode", "strict"}, {"intra_op_threads", "1"}};
  r.fingerprint = {{"torch.version", {"1.13.0", true}}, {"os.kernel", {"6.1", false}}};
  Series l;
  l.dtype = Series::Dtype::kFloat32;
  for (double v : loss) l.values.push_back(static_cast<double>(static_cast<float>(v)));
  r.series["loss"] = l;
  if (grad.empty()) grad.assign(loss.size(), 1.0);
  Series g;
  g.values = std::move(grad);
  r.series["grad_norm"] = g;
  return r;
}

/// A probe whose inputs have the given mean (other stats derived simply).
inline BatchProbe make_probe(int64_t batch, double mean, const std::string& hash = std::string(32, 'a')) {
  BatchProbe p;
  p.batch = batch;
  p.sample_index_hash = std::string(16, '0');
  p.inputs = TensorStats{{4, 1}, "float32", hash, mean * 4, mean, 0.5, mean - 1, mean + 1, 0, 0};
  p.labels = TensorStats{{4}, "int64", std::string(32, 'b'), 6, 1.5, 1.1, 0, 3, 0, 0};
  return p;
}

}  // namespace lockstep::testing
