// Built-in smoke models, written with the torch::nn C++ frontend so they
// build unchanged on LibTorch 1.13 and 2.x.
//
//   auto net = make_model(spec, /*input_shape=*/{1, 8, 8}, /*classes=*/10);
//   init_parameters(*net, seed);      // explicit, from the "init" stream
//   torch::Tensor logits = net->forward(x);   // x: [B, 1, 8, 8] float32
//
// cnn: Conv2d(C, channels, 3, padding 1) -> BatchNorm2d -> ReLU ->
//      MaxPool2d(2) -> Flatten -> Linear(channels*(H/2)*(W/2), classes)
// mlp: Flatten -> Linear(features, hidden) -> ReLU -> Dropout(p) ->
//      Linear(hidden, hidden) -> ReLU -> Dropout(p) -> Linear(hidden, classes)
// transformer (x: [B, L] int64 token ids):
//      Embedding(vocab, d) + positional Embedding(L, d) ->
//      TransformerEncoderLayer(d, heads, ff, dropout; post-norm, ReLU) ->
//      LayerNorm(d) -> mean over L -> Linear(d, classes)
// torchscript: a user module (torch::jit::load) whose parameters train;
//      see torchscript_model.h.
// Module trace keys (module_tracer.h): cnn conv, bn, fc; mlp fc1, drop,
// fc2, drop, head; transformer tokens, positions, encoder, norm, head.
//
// Dropout draws from LibTorch's default generator (torch::nn::Dropout takes
// no generator); the trainer seeds it from the "dropout" stream before the
// first step and checkpoints its state, so dropout masks are reproducible
// and survive a resume.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "train/module_tracer.h"
#include "spec/train_specs.h"

namespace lockstep {

/// A classifier: forward maps a batch to logits [B, classes].
/// Each built-in model passes its submodules' inputs and outputs through
/// trace() in its forward (module_tracer.h), so a tracer set with
/// set_tracer() records them by module path.
class SmokeModel : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  /// Starts recording into `tracer` (null: stop). A model that cannot be
  /// traced says why through tracer->not_traced().
  virtual void set_tracer(ModuleTracer* tracer) { tracer_ = tracer; }

 protected:
  /// `out` (module `name`'s output for input `in`), recorded when tracing.
  torch::Tensor trace(const char* name, const torch::Tensor& in, torch::Tensor out) {
    return tracer_ ? tracer_->record(name, in, std::move(out)) : out;
  }
  ModuleTracer* tracer_ = nullptr;
};

/// Builds the model named in `spec` for samples of `input_shape`.
/// Throws exit-2 Error for an unknown model or a shape it cannot take.
std::shared_ptr<SmokeModel> make_model(const ModelSpec& spec, const std::vector<int64_t>& input_shape,
                                       int64_t classes);

/// Initialises every parameter from its own generator, seeded from the
/// "init" stream and the XXH3-64 of the parameter's name, so the values do
/// not depend on creation order or the global generator:
///   weights (dim >= 2): U(-b, b), b = 1/sqrt(fan_in)  (PyTorch's default
///                       Linear/Conv bound, kaiming_uniform with a=sqrt(5))
///   biases:             U(-b, b) with the same fan_in
///   norm weight/bias:   1 / 0
void init_parameters(torch::nn::Module& model, uint64_t seed);

}  // namespace lockstep
