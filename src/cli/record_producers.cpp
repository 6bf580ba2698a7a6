#include "cli/record_producers.h"

#include <filesystem>
#include <functional>
#include <string>

#include "core/install_paths.h"
#include "distributed/rank_checkpoint.h"
#include "distributed/rank_launch.h"
#include "distributed/rank_records.h"
#include "external/trainer_run.h"
#include "launch/launcher.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The team's trainer command, in fresh processes of its own; the record
// built from its outputs (external/trainer_run.h). Its folders go beside
// the record, <out>.trainer/.
class TrainerProducer : public RecordProducer {
 public:
  ProducedRun produce(const RunPlan& plan) override {
    TrainerRun run = run_trainer(plan, plan.out + ".trainer");
    ProducedRun out;
    if (run.stopped_at_checkpoint) {
      out.outcome = ProducedRun::Outcome::kStopped;
      out.who = "the trainer ";
      out.checkpoint = plan.request.checkpoint;
      return out;
    }
    out.record = std::move(run.record);
    out.notes = std::move(run.notes);
    const SmokeConfig& c = plan.config;
    out.who = " (trainer `" + c.trainer.command.front() + "`" +
              (c.distributed.configured ? ", " + std::to_string(c.distributed.world_size) + " ranks" : "") + "): ";
    return out;
  }
};

// A multi-rank built-in smoke: world_size fresh rank processes
// (distributed/rank_launch.h), their records merged into one
// (distributed/rank_records.h); a stopped run's checkpoint is a folder of
// one file per rank (distributed/rank_checkpoint.h).
class RankProducer : public RecordProducer {
 public:
  ProducedRun produce(const RunPlan& plan) override {
    const RunRequest& r = plan.request;
    const SmokeConfig& cfg = plan.config;
    ProducedRun out;
    if (plan.span == RunSpan::kStopAfter) {
      RankCheckpointWriter checkpoint(r.checkpoint, {cfg.name, cfg.distributed.world_size, r.stop_after});
      RankLaunch l = launch_of(plan, [&](int rank, RunRequest& q) {
        q.stop_after = r.stop_after;
        q.checkpoint = checkpoint.rank_file(rank);
      });
      run_ranks(l);
      checkpoint.commit();
      std::error_code ec;
      fs::remove_all(l.rendezvous, ec);  // no record to keep beside: the logs of a stop that succeeded
      out.outcome = ProducedRun::Outcome::kStopped;
      out.who = std::to_string(l.world_size) + " ranks ";
      out.checkpoint = checkpoint.dir();
      return out;
    }
    std::vector<std::string> resume_files;
    if (plan.span == RunSpan::kResume) resume_files = open_rank_checkpoint(r.resume, cfg.name, cfg.distributed.world_size);
    RankLaunch l = launch_of(plan, [&](int rank, RunRequest& q) {
      if (resume_files.empty()) return;
      q.resume = resume_files[static_cast<size_t>(rank)];
      q.skip_generator_restore = r.skip_generator_restore;
    });
    std::vector<std::string> paths = run_ranks(l);
    if (l.node_rank > 0) return elsewhere(l);
    std::vector<RunRecord> ranks;
    for (const auto& path : paths) ranks.push_back(read_run_record(path));
    out.record = merge_rank_records(ranks, l.rendezvous);
    if (l.nnodes > 1)  // not part of the stack: the same ranks on one machine give the same bits
      out.record.fingerprint["distributed.nodes"] = {std::to_string(l.nnodes) + " machines, store at " + l.master,
                                                     false, false};
    out.who = ": " + std::to_string(l.world_size) + (l.world_size == 1 ? " rank (" : " ranks (") +
              cfg.distributed.backend +
              (l.nnodes > 1 ? ", on " + std::to_string(l.nnodes) + " machines through " + l.master : std::string()) +
              "), ";
    out.loss_label = "global loss";
    out.after_loss = "; parameters agreed on every rank after every step";
    return out;
  }

 private:
  // The coordinator's launch: per rank, `lockstep-torch run|probe SMOKE
  // --record <out>.ranks/rank-<r>.json --quiet --rank r --rendezvous
  // <out>.ranks`, with the plan's lane and overrides (and --nnodes, --master
  // on several machines), written from the rank's RunRequest; `each` adds
  // what rank r alone gets (its checkpoint or resume file); what `each`
  // refers to must outlive the launch.
  static RankLaunch launch_of(const RunPlan& plan, std::function<void(int, RunRequest&)> each) {
    const RunRequest& r = plan.request;
    RankLaunch l;
    l.executable = sibling_executable("lockstep-torch");
    l.rendezvous = plan.out + ".ranks";
    RunRequest shared;
    shared.smoke = r.smoke;
    shared.variant = r.variant;
    shared.overrides = r.overrides;
    shared.quiet = true;
    shared.rendezvous = l.rendezvous;
    if (plan.master.set()) {
      shared.nnodes = r.nnodes;
      shared.master = plan.master.describe();
    }
    l.argv = [shared, each = std::move(each), train = plan.train](int rank, const std::string& record) {
      RunRequest q = shared;
      q.rank = rank;
      q.out = record;
      each(rank, q);
      return run_request_args(q, train);
    };
    l.world_size = plan.config.distributed.world_size;
    l.reverse_environment = plan.config.vary.env_reversed;
    l.timeout_s = plan.config.distributed.timeout_s;
    l.smoke = plan.config.name;
    if (plan.master.set()) {
      l.nnodes = r.nnodes;
      l.node_rank = r.node_rank;
      l.master = plan.master.describe();
    }
    return l;
  }

  // Node K > 0 of several machines: its ranks finished; node 0 merges and
  // writes the record.
  static ProducedRun elsewhere(const RankLaunch& l) {
    int per_node = l.world_size / l.nnodes, first = l.node_rank * per_node;
    ProducedRun out;
    out.outcome = ProducedRun::Outcome::kElsewhere;
    out.who = ": node " + std::to_string(l.node_rank) + " of " + std::to_string(l.nnodes) +
              (per_node == 1 ? ": rank " + std::to_string(first)
                             : ": ranks " + std::to_string(first) + ".." + std::to_string(first + per_node - 1)) +
              " finished; node 0 writes the record";
    out.logs = l.rendezvous;
    return out;
  }
};

}  // namespace

std::unique_ptr<RecordProducer> make_record_producer(const RunPlan& plan) {
  switch (plan.site) {
    case RunSite::kTrainer:
      return std::make_unique<TrainerProducer>();
    case RunSite::kRanks:
      return std::make_unique<RankProducer>();
    case RunSite::kInProcess:
    case RunSite::kRank:
      break;
  }
  return builtin_record_producer();
}

}  // namespace lockstep
