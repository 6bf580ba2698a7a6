#include "train/trainer.h"

#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "core/error.h"
#include "spec/resume_contract.h"
#include "core/json_io.h"
#include "core/hash.h"
#include "data/probe.h"
#include "determinism/seed_streams.h"
#include "distributed/rank_group.h"
#include "distributed/rank_progress.h"
#include "env/cuda_preflight.h"
#include "torch_compat.h"
#include "train/checkpoint.h"
#include "train/step_sync.h"

namespace lockstep {

namespace {

double l2(const torch::Tensor& t) { return t.detach().to(torch::kFloat64).norm().item<double>(); }

std::string hash_tensors(const NamedTensors& named) {
  Xxh3Stream h;
  for (const auto& [name, t] : named) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    h.update_string(name);
    h.update(c.data_ptr(), c.nbytes());
  }
  return h.hex();
}

// The step digest of `params` (record/step_digests.h): each parameter's
// bytes, or its gradient's ("none" where it has none), in parameter order.
std::string step_digest(const NamedTensors& params, bool grads) {
  std::vector<std::pair<std::string, std::string>> lines;
  lines.reserve(params.size());
  for (const auto& [name, p] : params) {
    torch::Tensor t = grads ? p.grad() : p;
    if (!t.defined()) {
      lines.emplace_back(name, "none");
      continue;
    }
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    lines.emplace_back(name, xxh3_128_hex(c.data_ptr(), c.nbytes()));
  }
  return manifest_digest(lines);
}

InitStats init_stats(const torch::Tensor& t) {
  torch::Tensor d = t.detach().to(torch::kCPU).to(torch::kFloat64);
  InitStats s;
  s.mean = d.mean().item<double>();
  s.std = d.numel() > 1 ? d.std(/*unbiased=*/false).item<double>() : 0.0;
  s.xxh3_128 = hash_tensors({{"", t}});
  return s;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& o, const std::vector<torch::Tensor>& params) {
  double lr = o.schedule.at(0);
  if (o.name == "sgd")
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
  if (o.name == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  if (o.name == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  throw BadUsage("unknown optimizer '" + o.name + "' (known: sgd, adam, adamw)");
}

// Every parameter group's learning rate, through the options' own virtual
// set_lr (OptimizerOptions, LibTorch >= 1.7): no switch on the optimiser.
void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

// Every state tensor of every parameter, in parameter order, so the hash
// is independent of the optimiser's pointer-keyed state map.
NamedTensors optimizer_state(torch::optim::Optimizer& opt, const NamedTensors& params) {
  NamedTensors out;
  for (const auto& [name, p] : params) {
    auto it = compat::find_param_state(opt, p);
    if (it == opt.state().end()) continue;
    auto add = [&](const char* what, const torch::Tensor& t) {
      if (t.defined()) out.emplace_back(*what ? name + "." + what : name, t);
    };
    if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      add("", s->momentum_buffer());  // keyed by the bare name, as since the first golden
    } else if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      add("exp_avg", s->exp_avg());
      add("exp_avg_sq", s->exp_avg_sq());
      add("max_exp_avg_sq", s->max_exp_avg_sq());
      add("step", torch::tensor(static_cast<int64_t>(s->step())));
    } else if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      add("exp_avg", s->exp_avg());
      add("exp_avg_sq", s->exp_avg_sq());
      add("max_exp_avg_sq", s->max_exp_avg_sq());
      add("step", torch::tensor(static_cast<int64_t>(s->step())));
    }
  }
  return out;
}

// The self-test kernel: index_put_(accumulate=true) of 2^20 values into 8
// slots. With deterministic algorithms off and >= 2 intra-op threads,
// LibTorch's CPU kernel adds with float atomics in thread order; with them
// on it runs serially (verified on 1.13: the sum varies run to run only
// when off).
class NondeterminismInjector {
 public:
  NondeterminismInjector(uint64_t seed, torch::Device device) {
    at::Generator g = stream_generator(seed, "inject");
    values_ = torch::randn({1 << 20}, g).to(device);
    index_ = torch::randint(0, 8, {1 << 20}, g, torch::kLong).to(device);
  }
  /// A factor in [1, 1.001) that depends on the summation order: the
  /// fractional part of 10^4 * the sum amplifies last-bit differences of
  /// the float32 sum (|sum| ~ 10^3) into a different factor.
  double factor() const {
    float total = torch::zeros({8}, values_.options()).index_put_({index_}, values_, true).sum().item<float>();
    double x = static_cast<double>(total) * 1e4;
    return 1.0 + 1e-3 * (x - std::floor(x));
  }

 private:
  torch::Tensor values_, index_;
};

void* volatile allocation_sink = nullptr;

}  // namespace

double allocation_order_factor() {
  constexpr size_t kBuffer = 32 * 1024;  // fits any allocator hole of run --vary (64 .. 128 KiB)
  std::vector<void*> buffers;
  buffers.reserve(8);
  for (int i = 0; i < 8; ++i) {
    buffers.push_back(std::malloc(kBuffer));
    allocation_sink = buffers.back();  // escapes: the compiler keeps every malloc
  }
  allocation_sink = nullptr;
  uint64_t code = 0;
  bool ok = true;
  const auto first = reinterpret_cast<uintptr_t>(buffers.front());
  for (size_t i = 0; i < buffers.size(); ++i) {
    ok = ok && buffers[i] != nullptr;
    const auto offset = static_cast<int64_t>(reinterpret_cast<uintptr_t>(buffers[i]) - first);
    code += static_cast<uint64_t>(offset / 16) * (i + 1);
  }
  for (void* b : buffers) std::free(b);
  if (!ok) return 1;
  return 1.0 + std::ldexp(static_cast<double>(code % 257) / 257.0, -12);
}

namespace {

int64_t peak_rss_bytes() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

// Where a run is: the next step to train, its epoch, and the batches of
// that epoch already trained before a checkpoint.
struct TrainPosition {
  int64_t step = 0;
  uint64_t epoch = 0;
  int64_t skip = 0;
};

torch::Device train_device(const TrainSpec& spec) {
  if (spec.device != "cuda") return torch::Device(torch::kCPU);
  // `run` has already explained an unusable CUDA; gather the reason only
  // when this safety net actually fires (it queries the driver again).
  if (!torch::cuda::is_available())
    throw EnvironmentError("device: cuda was asked for, but CUDA is not usable: " + cuda_unusable_reason() +
                           " (lockstep never falls back to the CPU)");
  return torch::Device(torch::kCUDA, 0);
}

// Continues from spec.resume.resume_from: the checkpoint must be this
// rank's (of one world size), of this contract, config and seed, and
// before the last step; every rank of one checkpoint resumed at one step
// into one model. Its series, init statistics, trained batches, step times
// and module trace become the run's so far.
TrainPosition resume_from_checkpoint(const TrainSpec& spec, uint64_t seed, torch::nn::Module& model,
                                     torch::optim::Optimizer& optimizer, StepSync& sync, const NamedTensors& params,
                                     ModuleTracer& tracer, TrainResult& r) {
  const std::string& f = spec.resume.resume_from;
  CheckpointState st = load_checkpoint(f, model, optimizer, spec.device == "cuda", spec.resume.restore_generators);
  int rank = sync.rank(), world = sync.world_size();
  if (st.rank != rank || st.world_size != world)
    throw BadInput(f, "rank", (rank >= 0 ? "rank " + std::to_string(rank) + " of " + std::to_string(world)
                                         : std::string("a single process's checkpoint")) +
                                  ", got " + (st.rank < 0 ? std::string("a single process's checkpoint")
                                                          : "rank " + std::to_string(st.rank) + " of " +
                                                                std::to_string(st.world_size)));
  require_resume_contract(f, spec.contract, st.contract, "this run's");
  if (st.config_hash != spec.config_hash)
    throw BadInput(f, "config_hash", spec.config_hash + " (this smoke config's), got " + st.config_hash +
                                         ": the checkpoint was written from another config");
  if (!st.values_hash.empty() && st.values_hash != spec.values_hash)
    throw BadInput(f, "values_hash", spec.values_hash + " (this run's config values and planted changes), got " +
                                         st.values_hash + ": the checkpoint was written under other values "
                                         "(--lr-scale or --perturb given to one run and not the other?)");
  if (st.seed != seed) throw BadInput(f, "seed", std::to_string(seed) + ", got " + std::to_string(st.seed));
  if (st.step >= spec.steps)
    throw BadInput(f, "step", "fewer than the " + std::to_string(spec.steps) + " steps configured, got " +
                                  std::to_string(st.step));
  for (auto& [name, s] : st.series) r.series[name] = std::move(s);
  r.init = std::move(st.init);
  r.train_probes = std::move(st.train_probes);
  r.resources.step_time_s = std::move(st.step_time_s);
  r.digests = std::move(st.digests);
  tracer.resume(std::move(st.module_trace));
  sync.check_resumed_step(st.step, f);
  sync.check_start(params, "the ranks resumed from checkpoints that differ",
                   "every rank must resume from its own file of one multi-rank checkpoint");
  return {st.step, st.epoch, st.batch_in_epoch};
}

// The parts of a run one step uses.
struct StepParts {
  const TrainSpec& spec;
  torch::Device device;
  SmokeModel& model;
  torch::optim::Optimizer& optimizer;
  const NamedTensors& params;
  ModuleTracer& tracer;
  StepSync& sync;
  NondeterminismInjector* inject;
};

// Records what a step leaves after backward (the loss, each gradient's
// norm, the learning rate) and after the update (the parameter norm).
void record_gradients(const NamedTensors& params, double lr, TrainResult& r) {
  double total = 0;
  for (const auto& [name, p] : params) {
    double n = p.grad().defined() ? l2(p.grad()) : 0.0;
    r.series["grad_norm/" + name].values.push_back(n);
    total += n * n;
  }
  r.series["grad_norm"].values.push_back(std::sqrt(total));
  r.series["lr"].values.push_back(lr);
}
void record_parameters(const NamedTensors& params, TrainResult& r) {
  double pn = 0;
  for (const auto& [name, p] : params) {
    double n = l2(p);
    pn += n * n;
  }
  r.series["param_norm"].values.push_back(std::sqrt(pn));
}

// One optimiser step on `batch`, recorded into `r`.
void train_step(StepParts& s, int64_t step, SmokeBatch& batch, TrainResult& r) {
  auto t0 = std::chrono::steady_clock::now();
  r.train_probes.push_back(probe_batch(step, batch.inputs, batch.labels, batch.indices));
  double lr = s.spec.optimizer.schedule.at(step);
  set_lr(s.optimizer, lr);
  s.sync.before_forward(step, s.model);
  torch::Tensor x = batch.inputs.to(s.device), y = batch.labels.to(s.device);
  compat::zero_grad(s.optimizer);
  s.tracer.begin_step(step);
  // One backward per micro-batch (optimizer.micro_batches; 1: the batch),
  // each loss weighted by its share, gradients summed by autograd; the
  // step's loss is the sum of the weighted losses (the batch mean).
  const int64_t k = s.spec.optimizer.micro_batches;
  torch::Tensor step_loss;
  for (int64_t m = 0; m < k; ++m) {
    const int64_t n = x.size(0) / k;
    torch::Tensor xm = k == 1 ? x : x.narrow(0, m * n, n), ym = k == 1 ? y : y.narrow(0, m * n, n);
    torch::Tensor loss = torch::nn::functional::cross_entropy(s.model.forward(xm), ym);
    if (k > 1) loss = loss / static_cast<double>(k);
    if (s.inject) loss = loss * s.inject->factor();
    if (s.spec.loss_factor != 1) loss = loss * s.spec.loss_factor;
    loss = s.sync.shape_loss(step, loss);
    loss.backward();
    step_loss = m == 0 ? loss.detach() : step_loss + loss.detach();
  }
  r.series["loss"].values.push_back(s.sync.after_backward(step, step_loss.item<float>(), s.params, r.series));
  record_gradients(s.params, lr, r);
  if (s.spec.trace.digests) r.digests.grads.push_back(step_digest(s.params, true));
  s.optimizer.step();
  record_parameters(s.params, r);
  if (s.spec.trace.digests) r.digests.params.push_back(step_digest(s.params, false));
  s.sync.after_update(step, s.params);
  r.resources.step_time_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// The module self-test's step ran in this process (not in the half before
// a checkpoint) and nothing was perturbed: no such module, or no gradient
// flows out of it (exit 2 saying which).
void require_self_test_fired(const TrainSpec& spec, const ModuleTracer& tracer, int64_t first_step, int64_t step) {
  if (spec.trace.self_test_module.empty() || tracer.self_test_fired() || first_step > spec.trace.self_test_step ||
      step <= spec.trace.self_test_step)
    return;
  std::string known;
  std::vector<std::string> names(tracer.modules().begin(), tracer.modules().end());
  for (const auto& m : names) known += (known.empty() ? "" : ", ") + m;
  std::string where = (spec.config_file.empty() ? std::string() : spec.config_file + ": ") +
                      "trace.self_test.module: '" + spec.trace.self_test_module + "' ";
  // Traced, but its backward entry never comes: nothing flows out of it.
  if (std::find(names.begin(), names.end(), spec.trace.self_test_module) != names.end())
    throw BadUsage(where + "has no backward entry to perturb: no gradient flows out of it to its input (the "
                   "first module of the model reads the data, which needs none); perturb it in phase \"forward\", "
                   "or a later module in phase \"backward\" (traced: " + known + ")");
  std::string hint = closest_spelling(spec.trace.self_test_module, names);
  throw BadUsage(where + "is not a traced module of model " + spec.model.name +
                 (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)") + " (traced: " +
                 (known.empty() ? "none" : known) + "); the self-test would never fire");
}

}  // namespace

TrainResult train_smoke(const TrainSpec& spec, SmokeLoader& loader, uint64_t seed) {
  const torch::Device device = train_device(spec);
  const bool cuda = spec.device == "cuda";
  std::unique_ptr<StepSync> sync = make_step_sync(spec);
  TrainResult r;
  auto model = make_model(spec.model, spec.sample_shape, spec.classes);
  if (spec.model.name != "torchscript") init_parameters(*model, seed);  // a user module keeps its weights
  // A planted change (run --perturb parameter, selftest), before the init
  // statistics: they and the trace say which parameter moved, and where.
  if (spec.perturb_parameter && spec.resume.resume_from.empty())
    for (auto& p : model->named_parameters()) {
      torch::NoGradGuard no_grad;
      torch::Tensor first = p.value().view(-1).narrow(0, 0, 1);
      first.copy_(torch::nextafter(first, torch::full_like(first, std::numeric_limits<double>::infinity())));
      break;
    }
  for (const auto& p : model->named_parameters()) r.init[p.key()] = init_stats(p.value());
  model->to(device);
  model->train();
  // Dropout draws from the default generator: seed it from its own stream
  // (per rank in a multi-rank run, like augmentation).
  torch::manual_seed(sync->dropout_seed(seed));
  NamedTensors params;
  for (const auto& p : model->named_parameters()) params.emplace_back(p.key(), p.value());
  sync->check_start(params, "initialisation differs across ranks", "every rank must initialise from the same seed");
  auto optimizer = make_optimizer(spec.optimizer, model->parameters());
  ModuleTracer tracer(spec.trace);
  if (spec.trace.steps > 0) model->set_tracer(&tracer);
  std::unique_ptr<NondeterminismInjector> inject;
  if (spec.inject_nondeterminism == "index_put_accumulate")
    inject = std::make_unique<NondeterminismInjector>(seed, device);
  r.series["loss"].dtype = Series::Dtype::kFloat32;
  for (const char* name : {"grad_norm", "param_norm", "lr"}) r.series[name];
  for (const auto& p : params) r.series["grad_norm/" + p.first];
  sync->add_series(r.series);

  TrainPosition at;
  if (!spec.resume.resume_from.empty())
    at = resume_from_checkpoint(spec, seed, *model, *optimizer, *sync, params, tracer, r);
  StepParts parts{spec, device, *model, *optimizer, params, tracer, *sync, inject.get()};
  bool stopped = false;
  const int64_t first_step = at.step;  // > 0 in a resumed run
  for (; at.step < spec.steps && !stopped; ++at.epoch, at.skip = 0) {
    int64_t before = at.step;
    loader.run_epoch(at.epoch, [&](int64_t k, SmokeBatch& batch) {
      if (k < at.skip) return true;  // consumed before the checkpoint
      train_step(parts, at.step, batch, r);
      ++at.step;
      if (at.step == spec.resume.stop_after && at.step < spec.steps) {
        // The next batch: k + 1 of this epoch, or batch 0 of the next one.
        bool epoch_done = k + 1 == loader.batches_per_epoch();
        model->set_tracer(nullptr);
        CheckpointState st{spec.config_hash, seed, at.step, at.epoch + (epoch_done ? 1 : 0), epoch_done ? 0 : k + 1,
                           r.series, r.init, r.train_probes, r.resources.step_time_s, tracer.take(),
                           r.digests, spec.contract, sync->rank(), sync->world_size(), spec.values_hash};
        save_checkpoint(spec.resume.checkpoint_out, st, *model, *optimizer, cuda);
        stopped = true;
        return false;
      }
      return at.step < spec.steps;
    });
    if (at.step == before && at.skip == 0)
      throw BadUsage("the data yields no batch in epoch " + std::to_string(at.epoch) +
                     " (fewer samples than data.batch_size with drop_last?)");
  }
  r.steps_done = at.step;
  model->set_tracer(nullptr);
  require_self_test_fired(spec, tracer, first_step, at.step);
  if (spec.trace.steps > 0) r.module_trace = tracer.take();
  sync->finish(*model);
  r.collective_s = sync->collective_s();

  NamedTensors state = params;
  for (const auto& b : model->named_buffers()) state.emplace_back("buffer:" + b.key(), b.value());
  r.hashes["params"] = hash_tensors(state);
  r.hashes["optimizer"] = hash_tensors(optimizer_state(*optimizer, params));
  r.resources.peak_rss_bytes = peak_rss_bytes();
  r.resources.peak_cuda_bytes = cuda ? compat::cuda_peak_allocated_bytes() : -1;
  return r;
}

}  // namespace lockstep

