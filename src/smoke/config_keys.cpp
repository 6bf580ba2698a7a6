#include "smoke/config_keys.h"

#include <algorithm>

namespace lockstep {

namespace {

// The smoke's identity and how check treats it.
std::vector<ConfigKey> identity_keys() {
  return {
    {"schema", false, "config schema version, 1 (identity)"},
    {"name", false, "the smoke's name, its goldens' folder (identity)"},
    {"device", true, "cpu or cuda"},
    {"min_driver", false, "the oldest NVIDIA driver the smoke runs on (a preflight, not an input)"},
    {"seed", true, "the base seed every named stream derives from"},
    {"steps", true, "training steps"},
    {"determinism", true, "the determinism contract"},
    {"determinism.mode", true, "strict or default"},
    {"determinism.intra_op_threads", true, "intra-op threads"},
    {"determinism.inter_op_threads", true, "inter-op threads"},
    {"repeat", false, "fresh runs check compares bit for bit (how the check judges)"},
    {"repeat_varies", false, "what check's second repeat varies: allocator, malloc-perturb, affinity, env-order, thread-warmup (default all; [] none; how the check judges)"},
    {"platforms", false, "platforms a golden is required for (verify-goldens)"},
    {"resume_at", false, "step of the resume check's checkpoint (how the check judges)"},
    {"tolerance", false, "tolerances of the comparison (how the check judges; compare/tolerance_policy.h)"},
    {"equivalence", false, "equivalence lanes: named variants of the run held to the base run by their own rule, no golden (how the check judges; docs/equivalence.md)"},
    {"calibration", false, "written by `lockstep calibrate --write`: the evidence behind the tolerances (recorded, not read by the gate)"},
    {"calibration.date", false, "when it ran, UTC"},
    {"calibration.axes", false, "axis name -> the values run"},
    {"calibration.repeats", false, "fresh runs at each point"},
    {"calibration.runs", false, "runs measured, those from other runners included"},
    {"calibration.runners", false, "the runners that made them"},
    {"calibration.multiplier", false, "m of the rule"},
    {"calibration.floors", false, "atol, rtol and sigma floors of the rule"},
    {"calibration.false_alarm", false, "the leave-one-out estimate: failed_runs, runs, upper95"},
    {"calibration.detection", false, "the smallest lr change caught, and the largest missed"},
    {"inject_nondeterminism", true, "a fault the gate must catch (self-test)"},
  };
}

// A built-in smoke's data.
std::vector<ConfigKey> builtin_data_keys() {
  return {
    {"data", true, "the data source and loader"},
    {"data.source", true, "csv, images or synthetic"},
    {"data.path", true, "the data file or image folder (a move with the same content is the same input)"},
    {"data.skip_rows", true, "csv: header rows skipped"},
    {"data.label_column", true, "csv: the label's column"},
    {"data.scale", true, "csv: features multiplied by it"},
    {"data.sample_shape", true, "one sample's shape"},
    {"data.batch_size", true, "samples per batch"},
    {"data.workers", false, "DataLoader workers: batches must not depend on them (check holds them to that)"},
    {"data.shuffle", true, "a seeded permutation per epoch"},
    {"data.drop_last", true, "drop the last partial batch"},
    {"data.augment", true, "augmentation"},
    {"data.augment.shift", true, "random shift, pixels"},
    {"data.augment.flip", true, "random horizontal flip"},
    {"data.augment.noise_std", true, "Gaussian noise"},
    {"data.augment.normalize", true, "per-channel normalisation"},
    {"data.augment.normalize.mean", true, "per-channel mean"},
    {"data.augment.normalize.std", true, "per-channel std"},
    {"data.probe_epochs", true, "epochs the data-only pass probes"},
    {"data.synthetic", true, "synthetic source"},
    {"data.synthetic.kind", true, "tokens, images or tabular"},
    {"data.synthetic.rows", true, "samples"},
    {"data.synthetic.vocab", true, "tokens: ids in [0, vocab)"},
    {"data.image", true, "image folder decoding"},
    {"data.image.interpolation", true, "OpenCV resize interpolation"},
    {"data.image.to_float", true, "uint to float: div or mul"},
    {"data.image.manifest_sample", true, "content-hash every n-th file"},
    {"data.max_bytes", false, "csv: a cap on the file's size (exit 2 above it; no value changes)"},
    {"data.max_line_bytes", false, "csv: a cap on one line (exit 2 above it)"},
    {"data.max_batches", false, "a cap on the data-only pass's batches (exit 2 above it)"},
  };
}

// A built-in smoke's model and optimiser.
std::vector<ConfigKey> builtin_model_keys() {
  return {
    {"model", true, "the built-in model"},
    {"model.name", true, "cnn, mlp, transformer or torchscript"},
    {"model.channels", true, "cnn: channels"},
    {"model.hidden", true, "mlp: hidden width"},
    {"model.dropout", true, "mlp, transformer: dropout probability"},
    {"model.d_model", true, "transformer: width"},
    {"model.heads", true, "transformer: attention heads"},
    {"model.ff", true, "transformer: feed-forward width"},
    {"model.path", false, "torchscript: the module file (its content hash is the input: model.torchscript_xxh3)"},
    {"model.classes", true, "output classes"},
    {"optimizer", true, "the optimiser"},
    {"optimizer.name", true, "sgd, adam or adamw"},
    {"optimizer.lr", true, "base learning rate"},
    {"optimizer.momentum", true, "sgd: momentum"},
    {"optimizer.nesterov", true, "sgd: Nesterov momentum"},
    {"optimizer.weight_decay", true, "weight decay"},
    {"optimizer.betas", true, "adam, adamw: betas"},
    {"optimizer.eps", true, "adam, adamw: eps"},
    {"optimizer.micro_batches", true, "gradient accumulation: micro-batches per step (divides data.batch_size)"},
    {"optimizer.schedule", true, "learning-rate schedule"},
    {"optimizer.schedule.name", true, "constant, warmup or step"},
    {"optimizer.schedule.warmup_steps", true, "warmup: steps"},
    {"optimizer.schedule.step_size", true, "step: steps per decay"},
    {"optimizer.schedule.gamma", true, "step: decay factor"},
  };
}

// Several ranks.
std::vector<ConfigKey> distributed_keys() {
  return {
    {"distributed", true, "multi-rank smoke"},
    {"distributed.world_size", true, "ranks"},
    {"distributed.backend", true, "gloo or nccl"},
    {"distributed.timeout_s", false, "a rank's deadline (how the run is guarded)"},
    {"distributed.self_test", true, "a fault in one rank (self-test)"},
    {"distributed.self_test.fault", true, "skip_allreduce, nan_loss, kill or hang"},
    {"distributed.self_test.rank", true, "the faulty rank"},
    {"distributed.self_test.step", true, "the faulty step"},
  };
}

// Module traces.
std::vector<ConfigKey> trace_keys() {
  return {
    {"trace", false, "module traces (what is recorded, not what is computed)"},
    {"trace.steps", false, "traced steps (what is recorded)"},
    {"trace.digests", false, "per-step parameter and gradient digests (what is recorded)"},
    {"trace.ops", false, "per-op output hashes of the traced steps (a trainer's helper, torch >= 2.10)"},
    {"trace.self_test", false, "a one-ULP perturbation the gate must locate in the values, not in the config"},
    {"trace.self_test.module", false, "the perturbed module"},
    {"trace.self_test.step", false, "the perturbed step"},
    {"trace.self_test.phase", false, "forward or backward"},
  };
}

// A team's own trainer.
std::vector<ConfigKey> trainer_keys() {
  return {
    {"trainer", true, "the team's trainer, run as a command"},
    {"trainer.command", true, "the command"},
    {"trainer.cwd", true, "its folder"},
    {"trainer.timeout_s", false, "a run's deadline (how the run is guarded)"},
    {"trainer.metrics", true, "where its metrics are read"},
    {"trainer.metrics.format", true, "tensorboard, jsonl, mllog or csv"},
    {"trainer.metrics.path", true, "the metrics file or folder"},
    {"trainer.metrics.series", true, "series name to tag"},
    {"trainer.metrics.step", true, "jsonl, csv: the step field"},
    {"trainer.metrics.mllog_step", true, "mllog: the step key"},
    {"trainer.probes", true, "the batch probes file (the data-only pass)"},
    {"trainer.data_only", true, "the data-only pass's extra arguments"},
    {"trainer.workers", false, "DataLoader worker counts of the data-only passes, held to one another bit for bit"},
    {"trainer.resume", true, "how the command stops at a checkpoint and continues"},
    {"trainer.resume.stop", true, "arguments that stop at {resume_at}"},
    {"trainer.resume.continue", true, "arguments that continue from {checkpoint}"},
    {"trainer.env", true, "environment variables for the trainer"},
    {"trainer.inputs", true, "the data files it reads (globs relative to trainer.cwd), hashed as inputs"},
    {"trainer.packages", false, "which Python distributions are stack-relevant (how the environment is judged)"},
    {"trainer.packages.relevant", false, "distributions made relevant"},
    {"trainer.packages.informational", false, "distributions made informational"},
  };
}

}  // namespace

const std::vector<ConfigKey>& smoke_config_keys() {
  static const std::vector<ConfigKey> table = [] {
    std::vector<ConfigKey> all;
    for (auto section : {identity_keys(), builtin_data_keys(), builtin_model_keys(), distributed_keys(), trace_keys(), trainer_keys()})
      all.insert(all.end(), section.begin(), section.end());
    return all;
  }();
  return table;
}

std::vector<std::string_view> keys_under(std::string_view section) {
  std::vector<std::string_view> out;
  const size_t skip = section.empty() ? 0 : section.size() + 1;
  for (const ConfigKey& k : smoke_config_keys()) {
    if (!section.empty() && (k.path.size() <= skip || k.path.substr(0, section.size()) != section ||
                             k.path[section.size()] != '.'))
      continue;
    std::string_view rest = k.path.substr(skip);
    if (rest.find('.') != std::string_view::npos) continue;  // a grandchild: its parent is listed
    out.push_back(rest);
  }
  return out;
}

}  // namespace lockstep
