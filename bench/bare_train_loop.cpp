// The baseline of bench/run_vs_bare_loop.sh: the digits-cnn smoke's 10
// training steps as a bare LibTorch program — same data, same batches
// (lockstep's loader), same model, initialisation and optimiser — with no
// probes, per-step metrics, fingerprint or record. `lockstep run` divided
// by this is the tool's overhead.
//
//   bare_train_loop DIGITS_CSV_GZ   # prints the final loss
#include <torch/torch.h>

#include <iostream>

#include "data/csv_source.h"
#include "data/loader.h"
#include "determinism/contract.h"
#include "train/models.h"

int main(int argc, char** argv) {
  using namespace lockstep;
  if (argc != 2) {
    std::cerr << "usage: bare_train_loop DIGITS_CSV_GZ\n";
    return 2;
  }
  const uint64_t seed = 20261129;  // smoke/digits-cnn.json
  apply_determinism_contract({"strict", 1, 1});
  auto table = std::make_shared<CsvTable>(read_csv({argv[1], 0, -1, 0.0625}));
  LoaderSpec spec;
  spec.sample_shape = {1, 8, 8};
  spec.batch_size = 32;
  spec.workers = 2;
  spec.augment.max_shift = 1;
  spec.augment.noise_std = 0.05;
  SmokeLoader loader(table, spec, seed);

  ModelSpec m;
  auto model = make_model(m, {1, 8, 8}, 10);
  init_parameters(*model, seed);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  float last = 0;
  int64_t step = 0;
  loader.run_epoch(0, [&](int64_t, SmokeBatch& b) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(b.inputs), b.labels);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    return ++step < 10;
  });
  std::cout << last << "\n";
  return 0;
}
