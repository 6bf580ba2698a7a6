#include "spec/lr_schedule.h"

#include <algorithm>

namespace lockstep {

double LrSchedule::at(int64_t step) const {
  switch (kind) {
    case Kind::kConstant:
      return base_lr;
    case Kind::kWarmup:
      return base_lr * std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(warmup_steps));
    case Kind::kStep: {
      // Repeated multiplication, not std::pow: the same bits on every libm.
      double lr = base_lr;
      for (int64_t k = step / step_size; k > 0; --k) lr *= gamma;
      return lr;
    }
  }
  return base_lr;
}

const char* schedule_name(LrSchedule::Kind kind) {
  switch (kind) {
    case LrSchedule::Kind::kConstant: return "constant";
    case LrSchedule::Kind::kWarmup: return "warmup";
    case LrSchedule::Kind::kStep: return "step";
  }
  return "constant";
}

}  // namespace lockstep
