// The processes of one run of a team's trainer (external/trainer_run.h):
// where each writes and what it is handed (TrainerLayout: the
// placeholders, torchrun's variables per rank, the protocol's LOCKSTEP_*
// variables), which passes a run needs (plan_passes: a data-only pass per
// worker count beside the training pass), and running them side by side
// (run_passes: a trainer that fails is exit 1 quoting its stderr; a port in
// use is exit 3 naming the ports handed out).
//
//   TrainerLayout l(config, seed, "/tmp/x.trainer");  ...
//   PassPlan p = plan_passes(l, plan, /*stopping=*/false, /*resuming=*/false);
//   run_passes(config, p.passes, l.multi);
//
// Internal to src/external/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "external/trainer_run.h"
#include "plan/run_plan.h"
#include "record/fingerprint.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// The environment of a trainer process: the base one (the contract) and
/// the protocol's LOCKSTEP_* variables.
std::map<std::string, std::string> trainer_env(const SmokeConfig& c, uint64_t seed, const std::string& out,
                                               const std::string& pass);

/// `argv` as one line for a message, arguments with spaces in quotes.
std::string join_args(const std::vector<std::string>& argv);

/// One trainer process: its argv, environment, fresh output folder, and
/// what it is in a message ("data-only pass").
struct Pass {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string out;
  std::string what;
  std::string port;  ///< MASTER_PORT of a multi-rank pass, else ""
};

/// Runs `passes` side by side (the data-only pass beside the training pass:
/// two processes on two cores cost the time of one), each in its own fresh
/// output folder. A failure of the trainer itself is exit 1, quoting its
/// stderr; the first pass in `passes` that failed is reported.
void run_passes(const SmokeConfig& c, const std::vector<Pass>& passes, bool ranks);

/// A path of the config (relative to its folder) after placeholders; it
/// must stay inside the process's own output folder `out` (a "{out}/../x"
/// would read another run's, or a stale, file).
std::string output_path(const SmokeConfig& c, const std::string& field, const std::string& text,
                        const std::map<std::string, std::string>& values);

/// Where one trainer run's processes write and what they are handed: the
/// placeholders of the config's arguments and paths, per pass, rank and
/// worker count. A multi-rank trainer runs `world` processes per pass, each
/// with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: env:// rendezvous on
/// 127.0.0.1, a port of its own per pass) and its own output folder
/// <pass>/rank-<r> ({out}); {rank} in the command and paths.
struct TrainerLayout {
  /// The layout of `config`'s trainer run with base seed `seed` in
  /// `work_dir` (made absolute): the data cache, the config's folder, the
  /// ranks and the worker counts; no checkpoint (a resumed or stopping run
  /// sets checkpoint and resume_at).
  TrainerLayout(const SmokeConfig& config, uint64_t seed, const std::string& work_dir);
  const SmokeConfig& c;
  uint64_t seed = 0;
  std::string work, data_dir, config_dir, checkpoint;
  int64_t resume_at = 0;
  Fingerprint inputs;  ///< trainer.inputs' fields (external/trainer_inputs.h), hashed before any pass
  bool multi = false;
  int world = 1;
  /// {workers}: the training pass runs the first count, a data-only pass
  /// runs each; {-1}: no {workers} placeholder.
  std::vector<int> worker_counts;

  std::string rank_dir(const std::string& base, int r) const {
    return multi ? base + "/rank-" + std::to_string(r) : base;
  }
  std::string rank_word(int r) const { return multi ? " of rank " + std::to_string(r) : std::string(); }
  std::map<std::string, std::string> values(const std::string& out, int r, int workers) const {
    std::map<std::string, std::string> v{{"steps", std::to_string(c.steps)}, {"seed", std::to_string(seed)},
                                         {"out", out},                       {"data", data_dir},
                                         {"config_dir", config_dir},         {"resume_at", std::to_string(resume_at)},
                                         {"checkpoint", checkpoint},         {"rank", std::to_string(r)}};
    if (workers >= 0) v["workers"] = std::to_string(workers);
    return v;
  }
  std::vector<std::string> argv(const std::string& out, int r, int workers, const std::vector<std::string>& extra) const {
    auto v = values(out, r, workers);
    std::vector<std::string> args;
    for (const auto& a : c.trainer.command) args.push_back(expand_placeholders(a, v));
    for (const auto& a : extra) args.push_back(expand_placeholders(a, v));
    return args;
  }
  std::map<std::string, std::string> env(const std::string& out, const std::string& pass, int r,
                                         const std::string& port) const {
    std::map<std::string, std::string> e = trainer_env(c, seed, out, pass);
    if (!multi) return e;
    e["RANK"] = e["LOCAL_RANK"] = std::to_string(r);
    e["WORLD_SIZE"] = e["LOCAL_WORLD_SIZE"] = std::to_string(world);
    e["MASTER_ADDR"] = "127.0.0.1";
    e["MASTER_PORT"] = port;
    e["LOCKSTEP_DISTRIBUTED_BACKEND"] = c.distributed.backend;
    return e;
  }
  // The config path `text` of field `field` for the process writing to `out`.
  std::string path(const std::string& field, const std::string& text, const std::string& out, int r, int workers) const {
    return output_path(c, field, text, values(out, r, workers));
  }
};

/// A Python trainer's script (`python3 train.py ...`: the first argument
/// that is no option, unless -m or -c runs a module or a string), checked
/// before any pass runs and hashed into l.inputs as
/// "trainer.script.<as written>" (informational). Throws exit-2 BadInput
/// naming trainer.command[i] when it does not exist.
void check_python_script(TrainerLayout& l);

/// The processes of one run and where they write.
struct PassPlan {
  std::vector<Pass> passes;
  std::vector<std::string> data_outs;  ///< a data-only pass per worker count; empty: none
  std::string train_out;               ///< the training pass's folder (rank 0's inside it when multi)
  std::map<std::string, std::string> train_env;  ///< rank 0's training environment, recorded
};

/// The data-only pass (the batches the trainer's DataLoader yields, probed;
/// one per worker count) beside the training pass (whole, stopping at a
/// checkpoint, or resuming). A run that stops at a checkpoint needs no
/// data-only pass: the resumed run makes it (unless the request's data_pass
/// is false).
PassPlan plan_passes(const TrainerLayout& l, const RunPlan& run, bool stopping, bool resuming);

}  // namespace lockstep
