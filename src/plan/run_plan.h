// What one `lockstep run` or `lockstep probe` will do, decided once before
// anything starts, in the spirit of ninja's Plan: the config with the
// overrides applied; the span (whole run, stop after K steps, resume);
// where it runs (this process, the team's trainer command, N rank
// processes here, one rank of a group, node K of several machines); and
// every output path with its default filled in. Every exit-2 rule of
// `run` and `probe` lives here, once, unit-tested in-process
// (tests/plan/run_plan_test.cpp). A RecordProducer (plan/record_producer.h)
// then makes the record the plan describes.
//
//   RunRequest r;  r.smoke = "smoke/digits-cnn.json";  r.stop_after = 4;  r.checkpoint = "ck.pt";
//   RunPlan p = plan_run(load_smoke_config(r.smoke), r, /*train=*/true);   // BadUsage (exit 2) if refused
//   p.site == RunSite::kInProcess;  p.span == RunSpan::kStopAfter;  p.out == "lockstep-out/digits-cnn.run.json"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "smoke/smoke_config.h"
#include "spec/distributed_spec.h"

namespace lockstep {

/// What was asked of `run` / `probe`: the command line's options (cli/main.cpp),
/// or a child run of check and bless (launch/launcher.h's ChildRun is one).
/// A new run option is a field here and its row in plan/run_flags.cpp,
/// which both the parser (cli/flags.h) and run_request_args() read
/// (tests/cli/help_test.cpp parses every field's flag back); every run
/// site, in this process or a child, reads it from here.
struct RunRequest {
  std::string smoke;   ///< smoke config path
  /// Non-empty: run equivalence lane `variant` of the smoke (its config's
  /// "equivalence.<variant>" applied: load_smoke_config's second argument).
  std::string variant;
  /// Equivalence lanes run after `variant`'s, one after another in this
  /// same process, each into then_variant_record(out, name): check's lanes
  /// of a built-in smoke share one LibTorch start-up, which is most of a
  /// run (docs/decisions.md). Only after a lane (`variant` set) whose
  /// record is given (`out`), for a built-in smoke's whole run in this
  /// process, each lane with the first one's determinism mode and inter-op
  /// threads (process-wide settings).
  std::vector<std::string> then_variants;
  std::string out;     ///< default: lockstep-out/<smoke>.run.json (probe: .probe.json)
  bool quiet = false;  ///< no summary on stdout
  RunOverrides overrides;
  std::string seed;             ///< non-empty: the base seed (decimal uint64) instead of the config's or $LOCKSTEP_SEED
  int repeat = 1;               ///< > 1: fresh processes held to bit equality (exit 4)
  int64_t stop_after = 0;       ///< > 0: checkpoint after this many steps; no record
  std::string checkpoint;       ///< with stop_after: where the checkpoint goes
  std::string resume;           ///< continue from this checkpoint to the end
  /// false (`--no-data-pass`): a trainer smoke's training pass alone, no
  /// data-only pass beside it, and a record without data-only probes (the
  /// runs of check and bless after the first, which take the first's:
  /// launch/launcher.h's ChildRun::share_data_pass).
  bool data_pass = true;
  bool skip_generator_restore = false;  ///< test hook: resume without generator state
  int rank = -1;                ///< >= 0: one rank of a distributed smoke (with rendezvous)
  std::string rendezvous;       ///< the rank's rendezvous folder (distributed/rank_launch.h)
  // A multi-rank smoke on several machines (docs/distributed.md):
  int nnodes = 1;               ///< machines; world_size / nnodes ranks on each
  int node_rank = -1;           ///< this machine, 0..nnodes-1 (required with nnodes > 1)
  std::string master;           ///< "HOST:PORT" of node 0's store; default MASTER_ADDR:MASTER_PORT
};

/// The record of lane `name` run after another lane in one process
/// (RunRequest::then_variants): `variant-<name>.json` in the folder of the
/// first lane's record `first_out`, as check lays its lanes out.
std::string then_variant_record(const std::string& first_out, const std::string& name);

/// The command-line flags that pass `overrides` on to a child run.
std::vector<std::string> override_args(const RunOverrides& overrides);

/// The `lockstep run` (`train`) or `lockstep probe` command line that asks
/// for `request` (without the executable): the verb, the smoke, then a
/// flag for every field that differs from its default, written from the
/// rows that the parser reads (plan/run_flags.h). `seed` travels as LOCKSTEP_SEED in the child's
/// environment, not as a flag, and so does overrides.vary (LOCKSTEP_VARY:
/// a varied run's command line is the plain run's, byte for byte, so its
/// heap history differs by the variation only).
std::vector<std::string> run_request_args(const RunRequest& request, bool train);

/// Where the record is made.
enum class RunSite {
  kInProcess,  ///< a built-in smoke in this process (lockstep-torch; the front execs it)
  kTrainer,    ///< the team's trainer command (external/trainer_run.h), from this process
  kRanks,      ///< world_size rank processes started and judged here (distributed/rank_launch.h)
  kRank,       ///< one rank of a group, started by the coordinator (--rank, --rendezvous)
};

/// How much of the smoke runs.
enum class RunSpan {
  kWhole,      ///< all steps (or, for probe, the data-only pass)
  kStopAfter,  ///< stop_after steps, then a checkpoint; no record
  kResume,     ///< from a checkpoint to the end
};

/// A run decided: what runs, where, and where everything goes.
struct RunPlan {
  RunRequest request;  ///< as asked (out left as given)
  SmokeConfig config;  ///< overrides applied (a trainer smoke: intra-op threads and world size only)
  bool train = true;   ///< false: `probe`, the data-only pass only
  RunSite site = RunSite::kInProcess;
  RunSpan span = RunSpan::kWhole;
  std::string out;     ///< the record's path, default filled in (node K > 0: its logs' base name)
  MasterAddress master;  ///< set: node request.node_rank of request.nnodes machines, node 0's store
  int repeat = 1;      ///< > 1: `run --repeat`, fresh child runs (launch/launcher.h)

  /// "run" or "probe", as the summary and messages say it.
  const char* verb() const { return train ? "run" : "probe"; }
};

/// Decides `request` on `loaded` (load_smoke_config's result, overrides not
/// yet applied). Throws BadUsage (exit 2) for anything `run` or `probe`
/// refuses, naming the flag: --stop-after at or past the smoke's steps,
/// --workers for a trainer smoke, --no-data-pass for a built-in one, --repeat with --stop-after/--resume or
/// several machines, an output over an input, into the goldens or sharing
/// the checkpoint's paths, an output that is not a regular file, a folder
/// as a single-process checkpoint, --rank outside the world or without its
/// rendezvous folder, and the rules of several machines (--nnodes,
/// --node-rank, --master / MASTER_ADDR:MASTER_PORT, a host that does not
/// resolve). Throws EnvironmentError (exit 3) when the host cannot be
/// resolved now.
RunPlan plan_run(const SmokeConfig& loaded, const RunRequest& request, bool train);

/// The plan of lane `name`, run after `first` (a lane's plan with
/// then_variants) in the same process: `first`'s request with variant
/// `name`, record then_variant_record(first.out, name). `loaded`: the
/// smoke's config as lane `name` loads it. Throws BadUsage (exit 2) for
/// what plan_run refuses, and for a lane that would run elsewhere (its
/// own ranks) or set the process-wide determinism.mode or
/// inter_op_threads otherwise than `first`.
RunPlan plan_then_variant(const RunPlan& first, const SmokeConfig& loaded, const std::string& name);

}  // namespace lockstep
