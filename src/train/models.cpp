#include "train/models.h"

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/hash.h"
#include "determinism/seed_streams.h"
#include "train/torchscript_model.h"

namespace lockstep {

namespace {

class Cnn : public SmokeModel {
 public:
  Cnn(const std::vector<int64_t>& shape, int64_t channels, int64_t classes)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(shape[0], channels, 3).padding(1)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(channels))),
        fc(register_module("fc", torch::nn::Linear(channels * (shape[1] / 2) * (shape[2] / 2), classes))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto c = trace("conv", x, conv->forward(x));
    auto h = torch::relu(trace("bn", c, bn->forward(c)));
    h = torch::max_pool2d(h, 2).flatten(1);
    return trace("fc", h, fc->forward(h));
  }

  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear fc;
};

class Mlp : public SmokeModel {
 public:
  Mlp(int64_t features, int64_t hidden, double dropout, int64_t classes)
      : fc1(register_module("fc1", torch::nn::Linear(features, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        head(register_module("head", torch::nn::Linear(hidden, classes))),
        drop(register_module("drop", torch::nn::Dropout(dropout))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    auto f = x.flatten(1);
    auto h = torch::relu(trace("fc1", f, fc1->forward(f)));
    h = trace("drop", h, drop->forward(h));
    auto g = torch::relu(trace("fc2", h, fc2->forward(h)));
    g = trace("drop", g, drop->forward(g));
    return trace("head", g, head->forward(g));
  }

  torch::nn::Linear fc1, fc2, head;
  torch::nn::Dropout drop;
};

class Transformer : public SmokeModel {
 public:
  Transformer(const ModelSpec& s, int64_t length, int64_t classes)
      : tokens(register_module("tokens", torch::nn::Embedding(s.vocab, s.d_model))),
        positions(register_module("positions", torch::nn::Embedding(length, s.d_model))),
        encoder(register_module("encoder", torch::nn::TransformerEncoderLayer(
                                               torch::nn::TransformerEncoderLayerOptions(s.d_model, s.heads)
                                                   .dim_feedforward(s.ff)
                                                   .dropout(s.dropout)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.d_model})))),
        head(register_module("head", torch::nn::Linear(s.d_model, classes))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor pos = torch::arange(x.size(1), torch::TensorOptions().dtype(torch::kLong).device(x.device()));
    torch::Tensor tok = trace("tokens", x, tokens->forward(x));  // one statement each: a fixed trace order
    torch::Tensor at = trace("positions", pos, positions->forward(pos));
    torch::Tensor h = tok + at.unsqueeze(0);  // [B, L, d]
    // The C++ TransformerEncoderLayer takes [L, B, d] (no batch_first in 1.13).
    torch::Tensor t = h.transpose(0, 1);
    h = trace("encoder", t, encoder->forward(t)).transpose(0, 1);
    torch::Tensor n = trace("norm", h, norm->forward(h)).mean(1);
    return trace("head", n, head->forward(n));
  }

  torch::nn::Embedding tokens, positions;
  torch::nn::TransformerEncoderLayer encoder;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};

}  // namespace

std::shared_ptr<SmokeModel> make_model(const ModelSpec& spec, const std::vector<int64_t>& shape,
                                       int64_t classes) {
  if (spec.name == "cnn") {
    if (shape.size() != 3 || shape[1] < 2 || shape[2] < 2)
      throw BadUsage("model cnn needs image samples [C, H, W] with H, W >= 2 (data.sample_shape)");
    return std::make_shared<Cnn>(shape, spec.channels, classes);
  }
  if (spec.name == "mlp") {
    int64_t features = 1;
    for (int64_t d : shape) features *= d;
    return std::make_shared<Mlp>(features, spec.hidden, spec.dropout, classes);
  }
  if (spec.name == "transformer") {
    if (shape.size() != 1 || spec.vocab < 2)
      throw BadUsage("model transformer needs token sequences: data.source synthetic with kind \"tokens\" "
                     "and data.sample_shape [L]");
    if (spec.d_model % spec.heads != 0)
      throw BadUsage("model transformer: d_model " + std::to_string(spec.d_model) + " is not divisible by heads " +
                     std::to_string(spec.heads));
    return std::make_shared<Transformer>(spec, shape[0], classes);
  }
  if (spec.name == "torchscript") return load_torchscript_model(spec.path);
  throw BadUsage("unknown model '" + spec.name + "' (known: cnn, mlp, transformer, torchscript)");
}

void init_parameters(torch::nn::Module& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  // fan_in of the weight that shares a module prefix with each bias.
  std::map<std::string, int64_t> fan_in;
  for (const auto& p : model.named_parameters()) {
    const torch::Tensor& t = p.value();
    if (t.dim() >= 2) fan_in[p.key().substr(0, p.key().rfind('.'))] = t.numel() / t.size(0);
  }
  for (auto& p : model.named_parameters()) {
    torch::Tensor& t = p.value();
    const std::string& name = p.key();
    std::string module = name.substr(0, name.rfind('.'));
    bool is_norm = t.dim() == 1 && !fan_in.count(module);
    if (is_norm) {
      bool is_weight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
      t.fill_(is_weight ? 1.0 : 0.0);
      continue;
    }
    int64_t fi = t.dim() >= 2 ? t.numel() / t.size(0) : fan_in[module];
    double bound = 1.0 / std::sqrt(static_cast<double>(fi));
    at::Generator gen = stream_generator(seed, "init", {xxh3_64(name)});
    t.uniform_(-bound, bound, gen);
  }
}

}  // namespace lockstep
