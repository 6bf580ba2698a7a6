// The section readers of load_smoke_config (smoke/smoke_config.cpp), one
// file per part of a smoke config: a built-in smoke's data, model and
// optimiser (config_builtin.cpp), a team's trainer (config_trainer.cpp),
// and what a run is judged and guarded by: ranks, traces, tolerance names
// (config_runs.cpp). Internal to smoke/: each reads its JSON section into
// the SmokeConfig, accepting the keys config_keys.h lists there, and
// throws BadInput (exit 2) naming the field on anything else.
//
//   read_data(v.at("data"), c.data, fs::absolute(c.file).parent_path());
//   read_model(v.at("model"), c);   // after read_data: the model must fit the samples
#pragma once

#include <filesystem>

#include "core/json_io.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// "data": source, file, loader and augmentation. `config_dir` resolves a
/// relative data.path.
void read_data(const JsonView& d, DataConfig& c, const std::filesystem::path& config_dir);
/// "model", checked against the data already read into `c`.
void read_model(const JsonView& m, SmokeConfig& c);
/// "optimizer" and its lr schedule.
void read_optimizer(const JsonView& o, OptimizerSpec& spec);
/// "trainer": the team's command, its metrics, probes, passes, resume, env, packages.
void read_trainer(const JsonView& t, SmokeConfig& c);
/// "distributed", after steps and the trainer (a self-test needs both).
void read_distributed(const JsonView& d, SmokeConfig& c);
/// A multi-rank team trainer's resume arguments must give each rank its own
/// checkpoint ({rank} beside {checkpoint}); `v` is the whole config.
void check_rank_checkpoints(const JsonView& v, const SmokeConfig& c);
/// "trace", after steps.
void read_trace(const JsonView& t, SmokeConfig& c);
/// Tolerance keys must name a series the smoke records or a probe statistic.
void check_tolerance_names(const JsonView& t, const SmokeConfig& c);

}  // namespace lockstep
