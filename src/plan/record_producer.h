// The seam between a RunPlan (plan/run_plan.h) and whatever makes its
// record, in the spirit of ninja's CommandRunner: `lockstep run`/`probe`
// decide a plan, ask the producer for its site, and print one summary
// (cli/run_command.cpp). Three producers: the built-in trainer in this
// process (cli/torch_commands.cpp, LibTorch; the torch-free front execs
// lockstep-torch for it), the team's trainer command
// (external/trainer_run.h) and the rank coordinator (launch and merge,
// distributed/rank_launch.h); cli/record_producers.h picks one. check and
// bless reach the same producers through their child runs
// (cli/smoke_launcher.h), so every record lockstep makes is produced here.
//
//   RunPlan plan = plan_run(load_smoke_config(path), request, /*train=*/true);
//   std::unique_ptr<RecordProducer> producer = make_record_producer(plan);
//   ProducedRun run = producer->produce(plan);   // run.record when run.outcome == kRecord
#pragma once

#include <string>
#include <vector>

#include "plan/run_plan.h"
#include "record/run_record.h"

namespace lockstep {

/// What a producer made of a plan.
struct ProducedRun {
  enum class Outcome {
    kRecord,   ///< `record` is the run's record, to be written to plan.out
    kStopped,  ///< the plan's kStopAfter span: a checkpoint, no record
    kElsewhere,  ///< node K > 0 of several machines: node 0 writes the record
  };
  Outcome outcome = Outcome::kRecord;
  RunRecord record;                ///< with kRecord: stamped (smoke/finish_record.h)
  std::vector<std::string> notes;  ///< printed as "note: ..." before the summary
  /// The summary's words for who ran. kRecord: what stands between the
  /// smoke's name and "N batches probed" (": ", " (trainer `python3`): ",
  /// ": 2 ranks (gloo), "); kStopped: who stopped ("", "the trainer ",
  /// "2 ranks "); kElsewhere: the rest of the line after the smoke's name.
  std::string who = ": ";
  std::string loss_label = "loss";  ///< "global loss" for a rank group
  std::string after_loss;          ///< e.g. "; parameters agreed on every rank after every step"
  std::string checkpoint;          ///< kStopped: where the checkpoint is
  std::string logs;                ///< where the ranks' logs are (kElsewhere)
};

/// Makes the record a plan describes. Implementations throw Error with the
/// exit class of what failed: 1 a trainer or rank that broke, 2 bad input,
/// 3 the environment.
class RecordProducer {
 public:
  virtual ~RecordProducer() = default;
  /// Runs `plan` (its site is this producer's) to its end.
  virtual ProducedRun produce(const RunPlan& plan) = 0;
};

}  // namespace lockstep
