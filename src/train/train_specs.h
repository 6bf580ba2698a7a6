// The model and optimiser sections of a smoke config, as plain data with
// no LibTorch, so the config parser (which the LibTorch-free build also
// compiles) and the trainer share one definition.
//
//   ModelSpec m;  m.name = "mlp";  m.hidden = 32;  m.dropout = 0.1;
//   OptimizerSpec o;  o.name = "adamw";  o.schedule.base_lr = 1e-3;
#pragma once

#include <cstdint>
#include <string>

#include "train/lr_schedule.h"

namespace lockstep {

/// Model section of a smoke config.
struct ModelSpec {
  std::string name = "cnn";  ///< "cnn" or "mlp"
  int64_t channels = 8;      ///< cnn: conv output channels
  int64_t hidden = 64;       ///< mlp: hidden width
  double dropout = 0.0;      ///< mlp: dropout probability in [0, 1)
};

/// Optimiser section of a smoke config. Hyper-parameters follow
/// torch.optim.SGD / Adam / AdamW; AdamW's weight decay is decoupled
/// (Loshchilov & Hutter 2019).
struct OptimizerSpec {
  std::string name = "sgd";  ///< "sgd", "adam" or "adamw"
  double momentum = 0.9;     ///< sgd
  bool nesterov = false;     ///< sgd (needs momentum > 0)
  double weight_decay = 0;   ///< all three (adamw default 0.01 is not implied)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  ///< adam, adamw
  LrSchedule schedule;       ///< carries the base learning rate
};

}  // namespace lockstep
