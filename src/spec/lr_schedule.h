// Learning-rate schedules for the smoke trainer. Pure arithmetic, no
// LibTorch, so the rule is testable on its own.
//
//   LrSchedule s{LrSchedule::Kind::kWarmup, /*base_lr=*/0.1, /*warmup_steps=*/4};
//   s.at(0);   // 0.025: step 0 of a linear warm-up runs at base_lr * 1/4
//
// Definitions (step s is 0-based, the rate applied at optimiser step s):
//   constant: base_lr
//   warmup:   base_lr * min(1, (s + 1) / warmup_steps)   (linear warm-up, as
//             in Goyal et al. 2017, "Accurate, Large Minibatch SGD")
//   step:     base_lr * gamma ^ floor(s / step_size)     (torch.optim.lr_scheduler.StepLR)
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// A learning-rate schedule (smoke config optimizer.schedule).
struct LrSchedule {
  enum class Kind { kConstant, kWarmup, kStep };
  Kind kind = Kind::kConstant;
  double base_lr = 0.05;
  int64_t warmup_steps = 1;  ///< warmup: steps to reach base_lr, >= 1
  int64_t step_size = 1;     ///< step: decay every step_size steps, >= 1
  double gamma = 0.1;        ///< step: multiplicative decay

  /// The learning rate of 0-based optimiser step `step`, in double. The step
  /// decay multiplies repeatedly instead of calling std::pow, so the bits
  /// do not depend on the libm.
  double at(int64_t step) const;
};

/// "constant", "warmup" or "step".
const char* schedule_name(LrSchedule::Kind kind);

}  // namespace lockstep
