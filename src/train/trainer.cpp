#include "train/trainer.h"

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/hash.h"
#include "data/probe.h"

namespace lockstep {

namespace {

double l2(const torch::Tensor& t) { return t.detach().to(torch::kFloat64).norm().item<double>(); }

std::string hash_tensors(const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  Xxh3Stream h;
  for (const auto& [name, t] : named) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    h.update_string(name);
    h.update(c.data_ptr(), c.nbytes());
  }
  return h.hex();
}

}  // namespace

TrainResult train_smoke(const TrainSpec& spec, SmokeLoader& loader, uint64_t seed) {
  torch::Device device(torch::kCPU);
  if (spec.device == "cuda") {
    if (!torch::cuda::is_available())
      throw EnvironmentError("device: cuda was asked for, but no usable CUDA device is visible "
                             "(CPU-only LibTorch, no driver, or CUDA_VISIBLE_DEVICES empty); "
                             "lockstep never falls back to the CPU");
    device = torch::Device(torch::kCUDA, 0);
  }

  auto model = make_model(spec.model, spec.sample_shape, spec.classes);
  init_parameters(*model, seed);
  model->to(device);
  model->train();
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(spec.optimizer.lr).momentum(spec.optimizer.momentum));

  TrainResult r;
  auto& loss_s = r.series["loss"];
  loss_s.dtype = Series::Dtype::kFloat32;
  auto& grad_s = r.series["grad_norm"];
  auto& param_s = r.series["param_norm"];
  auto& lr_s = r.series["lr"];
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& p : model->named_parameters()) params.emplace_back(p.key(), p.value());
  for (const auto& p : params) r.series["grad_norm/" + p.first];

  int64_t step = 0;
  for (uint64_t epoch = 0; step < spec.steps; ++epoch) {
    int64_t before = step;
    loader.run_epoch(epoch, [&](int64_t, SmokeBatch& batch) {
      r.train_probes.push_back(probe_batch(step, batch.inputs, batch.labels, batch.indices));
      torch::Tensor x = batch.inputs.to(device), y = batch.labels.to(device);
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();

      loss_s.values.push_back(static_cast<double>(loss.item<float>()));
      double total = 0;
      for (const auto& [name, p] : params) {
        double n = p.grad().defined() ? l2(p.grad()) : 0.0;
        r.series["grad_norm/" + name].values.push_back(n);
        total += n * n;
      }
      grad_s.values.push_back(std::sqrt(total));
      lr_s.values.push_back(spec.optimizer.lr);

      optimizer.step();
      double pn = 0;
      for (const auto& [name, p] : params) {
        double n = l2(p);
        pn += n * n;
      }
      param_s.values.push_back(std::sqrt(pn));
      return ++step < spec.steps;
    });
    if (step == before)
      throw BadUsage("the data yields no batch in epoch " + std::to_string(epoch) +
                     " (fewer samples than data.batch_size with drop_last?)");
  }

  std::vector<std::pair<std::string, torch::Tensor>> state = params;
  for (const auto& b : model->named_buffers()) state.emplace_back("buffer:" + b.key(), b.value());
  r.hashes["params"] = hash_tensors(state);

  std::vector<std::pair<std::string, torch::Tensor>> momentum;
  for (const auto& [name, p] : params) {
    auto it = optimizer.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == optimizer.state().end()) continue;
    auto& st = static_cast<torch::optim::SGDParamState&>(*it->second);
    if (st.momentum_buffer().defined()) momentum.emplace_back(name, st.momentum_buffer());
  }
  r.hashes["optimizer"] = hash_tensors(momentum);
  return r;
}

}  // namespace lockstep
