// The smoke trainer: a fixed number of optimiser steps over the smoke
// loader, recording per-step metrics, init statistics and final hashes,
// with an optional checkpoint/resume that must replay the uninterrupted run.
//
//   TrainResult r = train_smoke(spec, loader, seed);
//   r.series["loss"].values[0];   // float32 loss of step 0, exact
//
// Per step s (0-based), after backward and before optimizer.step():
//   loss                  float32 cross-entropy of the batch
//   grad_norm             float64 global L2 norm of all gradients
//   grad_norm/<param>     float64 L2 norm of each parameter's gradient
//   lr                    learning rate applied at this step (lr_schedule.h)
// after optimizer.step():
//   param_norm            float64 global L2 norm of all parameters
// Informational (never bit-compared): step wall time, peak RSS, peak CUDA
// memory. At the end: hashes "params" (parameters and buffers, by name) and
// "optimizer" (every optimiser state tensor, by parameter), XXH3-128.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/loader.h"
#include "spec/distributed_spec.h"
#include "record/batch_probe.h"
#include "record/run_record.h"
#include "record/series.h"
#include "train/models.h"
#include "spec/train_specs.h"

namespace lockstep {

class RankGroup;
class RankProgress;

/// Checkpoint and resume for the resume check (docs/architecture.md: a resumed run
/// replays the uninterrupted one bit for bit).
struct ResumeSpec {
  int64_t stop_after = 0;        ///< > 0: checkpoint after this many steps and stop
  std::string checkpoint_out;    ///< where the checkpoint goes (with stop_after)
  std::string resume_from;       ///< a checkpoint to continue from
  bool restore_generators = true;  ///< false only to prove the check catches it
};

/// Everything the trainer needs besides the data.
struct TrainSpec {
  int64_t steps = 10;
  std::string device = "cpu";  ///< "cpu" or "cuda"
  ModelSpec model;
  OptimizerSpec optimizer;
  std::vector<int64_t> sample_shape;
  int64_t classes = 10;
  /// "index_put_accumulate": every step scales the loss by a factor computed
  /// with index_put_(accumulate=true) over 2^20 values into 8 slots, which
  /// LibTorch parallelises with float atomics unless deterministic
  /// algorithms are on. A self-test of the repeat check; "" = none.
  std::string inject_nondeterminism;
  /// 1: none. Else every step's loss times this: the dependence a test-only
  /// model plants (inject_nondeterminism "allocation_order": the factor of
  /// allocation_order_factor(), measured by the run before its data).
  double loss_factor = 1;
  /// A planted one-ULP change (SmokeConfig::perturb "parameter"): the first
  /// element of the first parameter moved towards +inf before step 0.
  bool perturb_parameter = false;
  ResumeSpec resume;
  std::string config_hash;  ///< stored in a checkpoint and checked on resume
  /// SmokeConfig::values_hash (planted changes included): stored in a
  /// checkpoint and checked on resume.
  std::string values_hash;
  std::string config_file;  ///< the smoke config, for messages that name a field of it
  /// The determinism contract applied (determinism/contract.h): stored in a
  /// checkpoint, and a resume under another one is refused.
  std::map<std::string, std::string> contract;
  /// Multi-rank (spec/distributed_spec.h has the contract): the
  /// joined process group, or null for a single process. With a group the
  /// trainer checks identical initialisation, all-reduces the gradients in
  /// one bucket, all-gathers losses and non-finite flags, and checks the
  /// parameters agree after every update; a failed check is exit 1.
  RankGroup* group = nullptr;
  RankProgress* progress = nullptr;  ///< where this rank is (with group)
  RankFault fault;                   ///< self-test (with group)
  /// Per-module fingerprints of the first trace.steps steps (module_tracer.h).
  TraceSpec trace;
};

/// What one training run produced.
struct TrainResult {
  std::map<std::string, Series> series;
  std::map<std::string, std::string> hashes;
  std::map<std::string, InitStats> init;  ///< per parameter, before step 0
  std::vector<BatchProbe> train_probes;   ///< probe of every batch consumed, in order
  Resources resources;
  int64_t steps_done = 0;  ///< < spec.steps only when stopped for a checkpoint
  /// Multi-rank: wall seconds of the steps spent in collectives (buffer
  /// broadcast, loss all-gather, gradient bucket all-reduce with its copies,
  /// parameter-hash all-gather); 0 for a single process. Informational.
  double collective_s = 0;
  ModuleTrace module_trace;  ///< the traced steps (record/module_trace.h)
  StepDigests digests;       ///< per step: gradients after backward, parameters after the update
};

/// The test-only model "allocation_order" (SmokeConfig
/// inject_nondeterminism): eight 32 KiB heap buffers are allocated now,
/// and the factor in [1, 1 + 2^-12) is a checksum of their addresses
/// relative to the first one, as code keyed by pointers depends on where
/// its buffers lie. Two runs of one binary agree (relative addresses
/// survive ASLR, and no free chunk that large is left by start-up); an
/// allocator hole before them (run --vary allocator: 64 to 128 KiB) takes
/// one or more of them and moves the factor, with odds of 1 in 257 of
/// keeping it. Call it before any other thread allocates. Throws nothing
/// (an allocation failure gives 1).
double allocation_order_factor();

/// Trains from `seed` for spec.steps steps, or until spec.resume.stop_after
/// (then writes the checkpoint). Throws exit-2 Error when the data yields no
/// batch or a checkpoint is unreadable or belongs to another config/seed,
/// exit-3 Error when CUDA is asked for but absent or a collective fails;
/// with a group, exit-1 Error when the ranks' initialisation or parameters
/// disagree (naming the step, rank and first parameter) or a loss or
/// gradient is non-finite on any rank (naming the rank). A multi-rank
/// result adds the series "rank<r>/loss" (each rank's own float32 loss) and
/// "loss" is the global loss (distributed_spec.h).
TrainResult train_smoke(const TrainSpec& spec, SmokeLoader& loader, uint64_t seed);

}  // namespace lockstep
