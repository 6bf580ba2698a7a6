// The RecordProducer (plan/record_producer.h) for each RunSite, composed
// here because cli/ is the one layer that sees them all: the team's
// trainer command (external/), the rank coordinator (distributed/, which
// starts `lockstep-torch run --rank r` processes), and the built-in trainer
// in this process (cli/torch_commands.cpp; the torch-free front's version
// execs lockstep-torch, a build without LibTorch exits 3).
//
//   RunPlan plan = plan_run(load_smoke_config(path), request, /*train=*/true);
//   ProducedRun run = make_record_producer(plan)->produce(plan);
#pragma once

#include <memory>

#include "plan/record_producer.h"

namespace lockstep {

/// The producer for `plan.site`.
std::unique_ptr<RecordProducer> make_record_producer(const RunPlan& plan);

/// The built-in smoke's producer (kInProcess and kRank). Defined once per
/// executable: in lockstep-torch it runs run/smoke_run.h here; in the
/// torch-free `lockstep` its produce() replaces this process with
/// lockstep-torch and the same command line (never returns); without
/// LibTorch it throws EnvironmentError (exit 3).
std::unique_ptr<RecordProducer> builtin_record_producer();

}  // namespace lockstep
