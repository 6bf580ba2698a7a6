#include "data/synthetic_source.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/hash.h"
#include "determinism/seed_streams.h"

namespace lockstep {

CsvTable make_synthetic(const SyntheticOptions& o, const std::vector<int64_t>& shape, int64_t classes,
                        uint64_t seed) {
  using Kind = SyntheticOptions::Kind;
  const size_t dims = o.kind == Kind::kImages ? 3 : 1;
  if (shape.size() != dims)
    throw BadUsage(std::string("synthetic ") +
                   (o.kind == Kind::kTokens ? "tokens need data.sample_shape [L]"
                    : o.kind == Kind::kImages ? "images need data.sample_shape [C, H, W]"
                                              : "tabular rows need data.sample_shape [F]"));
  CsvTable t;
  t.rows = o.rows;
  t.features = 1;
  for (int64_t d : shape) t.features *= d;
  at::Generator gen = stream_generator(seed, "synthetic");
  torch::Tensor x, y;
  switch (o.kind) {
    case Kind::kTokens: {
      torch::Tensor tokens = torch::randint(0, o.vocab, {t.rows, t.features}, gen, torch::kLong);
      y = tokens.select(1, 0).remainder(classes);
      x = tokens.to(torch::kFloat32);  // exact: vocab <= 2^24
      t.integer_features = true;
      break;
    }
    case Kind::kImages: {
      y = torch::randint(0, classes, {t.rows}, gen, torch::kLong);
      x = torch::rand({t.rows, shape[0], shape[1], shape[2]}, gen, torch::kFloat32) * 0.5f;
      auto acc = y.accessor<int64_t, 1>();
      for (int64_t r = 0; r < t.rows; ++r) x[r].select(1, acc[r] % shape[1]).add_(0.5f);
      break;
    }
    case Kind::kTabular: {
      torch::Tensor w = (torch::rand({classes, t.features}, gen, torch::kFloat64) * 2 - 1).contiguous();
      x = (torch::rand({t.rows, t.features}, gen, torch::kFloat32) * 2 - 1).contiguous();
      // Sequential sums, not a BLAS matmul: the labels must not depend on
      // the BLAS or the vector path.
      y = torch::empty({t.rows}, torch::kLong);
      const double* wp = w.data_ptr<double>();
      const float* xp = x.data_ptr<float>();
      int64_t* yp = y.data_ptr<int64_t>();
      for (int64_t r = 0; r < t.rows; ++r) {
        double best = 0;
        for (int64_t k = 0; k < classes; ++k) {
          double score = 0;
          for (int64_t f = 0; f < t.features; ++f) score += wp[k * t.features + f] * xp[r * t.features + f];
          if (k == 0 || score > best) { best = score; yp[r] = k; }
        }
      }
      break;
    }
  }
  x = x.contiguous().reshape({t.rows, t.features});
  t.values.assign(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
  t.labels.assign(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
  t.num_classes = t.rows > 0 ? y.max().item<int64_t>() + 1 : 0;
  t.bytes = t.values.size() * sizeof(float) + t.labels.size() * sizeof(int64_t);
  Xxh3Stream h;
  h.update(t.values.data(), t.values.size() * sizeof(float));
  h.update(t.labels.data(), t.labels.size() * sizeof(int64_t));
  t.file_xxh3 = h.hex();
  return t;
}

}  // namespace lockstep
