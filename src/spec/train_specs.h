// The model and optimiser sections of a smoke config, as plain data with
// no LibTorch, so the config parser (which the LibTorch-free build also
// compiles) and the trainer share one definition.
//
//   ModelSpec m;  m.name = "mlp";  m.hidden = 32;  m.dropout = 0.1;
//   OptimizerSpec o;  o.name = "adamw";  o.schedule.base_lr = 1e-3;
#pragma once

#include <cstdint>
#include <string>

#include "record/module_trace.h"
#include "spec/lr_schedule.h"

namespace lockstep {

/// Model section of a smoke config.
struct ModelSpec {
  std::string name = "cnn";  ///< "cnn", "mlp", "transformer" or "torchscript"
  int64_t channels = 8;      ///< cnn: conv output channels
  int64_t hidden = 64;       ///< mlp: hidden width
  double dropout = 0.0;      ///< mlp, transformer: dropout probability in [0, 1)
  int64_t d_model = 32;      ///< transformer: embedding width
  int64_t heads = 4;         ///< transformer: attention heads (divides d_model)
  int64_t ff = 64;           ///< transformer: feed-forward width
  int64_t vocab = 0;         ///< transformer: token ids in [0, vocab), from the data
  std::string path;          ///< torchscript: the saved module (torch.jit.save)
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
  /// Gradient accumulation: each step's batch is split into this many
  /// micro-batches of equal size, forwarded and backpropagated one by one,
  /// each loss weighted by its share of the batch (1/k), their gradients
  /// summed, then one optimiser step. 1: the batch at once. The same
  /// mathematics; the float bits may differ (summation order).
  int64_t micro_batches = 1;
};

/// Trace section of a smoke config: per-module fingerprints of the first
/// steps (record/module_trace.h, docs/module-trace.md).
struct TraceSpec {
  int64_t steps = 2;  ///< steps traced, 0..kMaxTraceSteps (0: off)
  /// Per-step XXH3-128 digests of the parameters and gradients
  /// (record/step_digests.h) at every step: the built-in trainer hashes
  /// them, a trainer smoke's lockstep-digests.jsonl is read. Off: neither.
  bool digests = true;
  /// Per-op output hashes of the traced steps too (a trainer smoke: the
  /// Python helper under torch's DebugMode, torch >= 2.10; LOCKSTEP_TRACE_OPS).
  bool ops = false;
  /// Self-test of the localisation: the output of `module` (its first
  /// call in the pass) at `step` and `phase` is moved by one ULP (its
  /// first element, towards +inf); "" = none.
  std::string self_test_module;
  int64_t self_test_step = 0;
  TracePhase self_test_phase = TracePhase::kForward;
};

}  // namespace lockstep
