// Stand-ins for the LibTorch subcommands in a build configured with
// -DLOCKSTEP_WITH_TORCH=OFF: they exit 3 and say why, so a compare-only
// binary is honest about what it cannot do.
#include "cli/commands.h"
#include "cli/record_producers.h"
#include "core/error.h"

namespace lockstep {

namespace {
[[noreturn]] void absent(const char* what) {
  throw EnvironmentError(std::string("`lockstep ") + what +
                         "` needs LibTorch, and this lockstep was built with LOCKSTEP_WITH_TORCH=OFF");
}
}  // namespace

namespace {
class AbsentProducer : public RecordProducer {
 public:
  ProducedRun produce(const RunPlan& plan) override { absent(plan.verb()); }
};
}  // namespace

std::unique_ptr<RecordProducer> builtin_record_producer() { return std::make_unique<AbsentProducer>(); }
int finish_command(int code) { return code; }
int env_command(const EnvOptions&) { absent("env"); }
int batch_sweep_command(const RunOptions& o, const BatchSweepOptions& sweep) {
  const SmokeConfig cfg = refuse_batch_sweep_of(o, sweep);
  if (cfg.has_trainer()) return trainer_batch_sweep_command(o, sweep, cfg);  // the trainer brings its own torch
  absent("probe --batch-sweep");
}

}  // namespace lockstep
