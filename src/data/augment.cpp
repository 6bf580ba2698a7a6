#include "data/augment.h"

#include <torch/torch.h>

namespace lockstep {

torch::Tensor shift_image(const torch::Tensor& image, int64_t dy, int64_t dx) {
  TORCH_CHECK(image.dim() == 3, "shift_image expects [C, H, W]");
  auto out = torch::zeros_like(image);
  int64_t h = image.size(1), w = image.size(2);
  int64_t y0 = std::max<int64_t>(0, dy), y1 = std::min<int64_t>(h, h + dy);
  int64_t x0 = std::max<int64_t>(0, dx), x1 = std::min<int64_t>(w, w + dx);
  if (y0 >= y1 || x0 >= x1) return out;
  using torch::indexing::Slice;
  out.index_put_({Slice(), Slice(y0, y1), Slice(x0, x1)},
                 image.index({Slice(), Slice(y0 - dy, y1 - dy), Slice(x0 - dx, x1 - dx)}));
  return out;
}

torch::Tensor augment_sample(const torch::Tensor& image, const AugmentOptions& o,
                             at::Generator& gen) {
  torch::Tensor out = image;
  if (o.max_shift > 0) {
    auto d = torch::randint(-o.max_shift, o.max_shift + 1, {2}, gen, torch::kInt64);
    out = shift_image(out, d[0].item<int64_t>(), d[1].item<int64_t>());
  }
  if (o.flip) {
    if (torch::randint(0, 2, {1}, gen, torch::kInt64).item<int64_t>() == 1) out = out.flip({2});
  }
  if (o.noise_std > 0) {
    out = out + torch::randn(out.sizes(), gen, torch::kFloat32) * o.noise_std;
  }
  if (!o.mean.empty()) {
    std::vector<float> m(o.mean.begin(), o.mean.end()), s(o.std.begin(), o.std.end());
    torch::Tensor mt = torch::tensor(m).view({-1, 1, 1}), st = torch::tensor(s).view({-1, 1, 1});
    out = (out - mt) / st;
  }
  return out.contiguous();
}

}  // namespace lockstep
