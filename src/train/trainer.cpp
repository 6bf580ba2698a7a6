#include "train/trainer.h"

#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <csignal>
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

namespace lockstep {

namespace {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

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

int64_t peak_rss_bytes() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

// ---- multi-rank (spec/distributed_spec.h) ----------------------------------

// XXH3-64 of each tensor's bytes, as int64 [P] for an all-gather.
torch::Tensor per_tensor_hashes(const NamedTensors& named) {
  torch::Tensor out = torch::empty({static_cast<int64_t>(named.size())}, torch::kInt64);
  int64_t* h = out.data_ptr<int64_t>();
  for (size_t i = 0; i < named.size(); ++i) {
    torch::Tensor c = named[i].second.detach().to(torch::kCPU).contiguous();
    h[i] = static_cast<int64_t>(xxh3_64(c.data_ptr(), c.nbytes()));
  }
  return out;
}

// In the all-gathered [W, P] hashes: the reference rank (the one the most
// ranks agree with, the lowest on a tie: rank 0 of two), the first other
// rank that differs from it, its first differing parameter and how many
// differ; rank -1 when every rank agrees. Every rank computes the same.
struct Disagreement {
  int rank = -1;
  int reference = 0;
  int64_t param = -1;
  int64_t count = 0;
};
Disagreement first_disagreement(const torch::Tensor& all) {
  const int64_t world = all.size(0), n = all.size(1);
  const int64_t* h = all.data_ptr<int64_t>();
  auto same = [&](int64_t a, int64_t b) { return std::equal(h + a * n, h + a * n + n, h + b * n); };
  int64_t ref = 0, best = -1;
  for (int64_t a = 0; a < world; ++a) {
    int64_t agree = 0;
    for (int64_t b = 0; b < world; ++b) agree += same(a, b) ? 1 : 0;
    if (agree > best) best = agree, ref = a;
  }
  for (int64_t r = 0; r < world; ++r) {
    if (r == ref || same(r, ref)) continue;
    Disagreement d{static_cast<int>(r), static_cast<int>(ref), -1, 0};
    for (int64_t p = 0; p < n; ++p)
      if (h[r * n + p] != h[ref * n + p]) {
        if (d.param < 0) d.param = p;
        ++d.count;
      }
    return d;
  }
  return {};
}

// The self-test faults that act on the rank itself.
void act_out(const RankFault& f, const char* fault, int rank, int64_t step) {
  if (f.rank != rank || f.step != step || f.fault != fault) return;
  if (f.fault == "kill") std::raise(SIGKILL);
  if (f.fault == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // the coordinator's timeout ends it
}

// 0: finite; 1: the loss is not; 2 + i: parameter i's gradient is not.
double nonfinite_code(double loss, const NamedTensors& params) {
  if (!std::isfinite(loss)) return 1;
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& g = params[i].second.grad();
    if (g.defined() && !torch::isfinite(g).all().item<bool>()) return 2 + static_cast<double>(i);
  }
  return 0;
}

// Each step, before the update: every rank's loss and non-finite code,
// all-gathered; the global loss; a non-finite value anywhere stops the run.
// Then the gradients, one float32 bucket in registration order, summed
// and divided by the world size (the skip_allreduce self-test keeps its own).
double reduce_step(RankGroup& g, const RankFault& fault, int64_t step, float local_loss, const NamedTensors& params,
                   std::map<std::string, Series>& series) {
  const int world = g.world_size();
  torch::Tensor mine = torch::tensor({static_cast<double>(local_loss), nonfinite_code(local_loss, params)},
                                     torch::kFloat64);
  torch::Tensor all = g.allgather(mine, "the losses of step " + std::to_string(step));
  const double* a = all.data_ptr<double>();
  double sum = 0;
  for (int r = 0; r < world; ++r) {
    double code = a[2 * r + 1];
    if (code != 0) {
      std::string what = code == 1 ? "its loss is " + std::to_string(a[2 * r])
                                   : "the gradient of " + params[static_cast<size_t>(code - 2)].first +
                                         " holds NaN or Inf";
      throw Error(ExitCode::kRegression,
                  "step " + std::to_string(step) + ": rank " + std::to_string(r) + " of " + std::to_string(world) +
                      ": " + what + "; every rank stopped before the update (a non-finite value on one rank "
                      "usually comes from its data shard or its seed)");
    }
    series["rank" + std::to_string(r) + "/loss"].values.push_back(a[2 * r]);
    sum += a[2 * r];
  }
  std::vector<torch::Tensor> flat;
  for (const auto& [name, p] : params)
    flat.push_back(p.grad().defined() ? p.grad().detach().reshape({-1}).to(torch::kFloat32)
                                      : torch::zeros({p.numel()}, torch::kFloat32));
  torch::Tensor bucket = torch::cat(flat);
  g.allreduce_sum(bucket, "the gradients of step " + std::to_string(step));
  bool skip = fault.fault == "skip_allreduce" && fault.rank == g.rank() && fault.step == step;
  if (!skip) {
    bucket.div_(static_cast<double>(world));
    int64_t at = 0;
    for (const auto& [name, p] : params) {
      int64_t n = p.numel();
      if (p.grad().defined()) p.grad().copy_(bucket.narrow(0, at, n).view_as(p.grad()));
      at += n;
    }
  }
  return static_cast<double>(static_cast<float>(sum / world));
}

// Buffers (BatchNorm running statistics) are updated by each rank's own
// forward: rank 0's are broadcast to every rank before each forward and
// once after the last step, as DistributedDataParallel does with
// broadcast_buffers=True (its default).
void broadcast_buffers(RankGroup& g, torch::nn::Module& model, int64_t step) {
  torch::NoGradGuard no_grad;
  for (auto& b : model.named_buffers()) {
    torch::Tensor t = b.value();
    if (!t.is_contiguous()) continue;  // never for the built-in models' buffers
    g.broadcast_from_rank0(t, "buffer " + b.key() + (step < 0 ? std::string(" after training")
                                                             : " before step " + std::to_string(step)));
  }
}

// After the update: every rank's parameters must equal rank 0's.
// Before step 0 (step -1), `when` names the moment and `why` the rule.
void check_parameters_agree(RankGroup& g, int64_t step, const NamedTensors& params, const char* when,
                            const char* why = "") {
  torch::Tensor all = g.allgather(per_tensor_hashes(params), "the parameter hashes of step " + std::to_string(step));
  Disagreement d = first_disagreement(all);
  if (d.rank < 0) return;
  std::string where = step < 0 ? std::string(when) : "ranks desynchronised at step " + std::to_string(step);
  throw Error(ExitCode::kRegression,
              where + ": rank " + std::to_string(d.rank) + "'s parameter " + params[static_cast<size_t>(d.param)].first +
                  " differs from rank " + std::to_string(d.reference) + "'s (" + std::to_string(d.count) + " of " + std::to_string(params.size()) +
                  " parameters differ" +
                  (step < 0 ? "; " + std::string(why) + ")"
                            : "; every rank applies the gradients of one all-reduce, so a rank that skips or "
                              "reorders it, or reads other data into the update, diverges here)"));
}

}  // namespace

TrainResult train_smoke(const TrainSpec& spec, SmokeLoader& loader, uint64_t seed) {
  torch::Device device(torch::kCPU);
  bool cuda = spec.device == "cuda";
  if (cuda) {
    // `run` has already explained an unusable CUDA; gather the reason only
    // when this safety net actually fires (it queries the driver again).
    if (!torch::cuda::is_available())
      throw EnvironmentError("device: cuda was asked for, but CUDA is not usable: " + cuda_unusable_reason() +
                             " (lockstep never falls back to the CPU)");
    device = torch::Device(torch::kCUDA, 0);
  }

  TrainResult r;
  auto model = make_model(spec.model, spec.sample_shape, spec.classes);
  if (spec.model.name != "torchscript") init_parameters(*model, seed);  // a user module keeps its weights
  for (const auto& p : model->named_parameters()) r.init[p.key()] = init_stats(p.value());
  model->to(device);
  model->train();
  RankGroup* group = spec.group;
  // Dropout draws from the default generator: seed it from its own stream
  // (per rank in a multi-rank run, like augmentation).
  torch::manual_seed(group ? derive_seed(seed, "dropout", {static_cast<uint64_t>(group->rank())})
                           : derive_seed(seed, "dropout"));

  NamedTensors params;
  for (const auto& p : model->named_parameters()) params.emplace_back(p.key(), p.value());
  if (group) check_parameters_agree(*group, -1, params, "initialisation differs across ranks",
                                    "every rank must initialise from the same seed");
  auto optimizer = make_optimizer(spec.optimizer, model->parameters());
  ModuleTracer tracer(spec.trace);
  if (spec.trace.steps > 0) model->set_tracer(&tracer);
  std::unique_ptr<NondeterminismInjector> inject;
  if (spec.inject_nondeterminism == "index_put_accumulate")
    inject = std::make_unique<NondeterminismInjector>(seed, device);

  auto& loss_s = r.series["loss"];
  loss_s.dtype = Series::Dtype::kFloat32;
  r.series["grad_norm"];
  r.series["param_norm"];
  r.series["lr"];
  for (const auto& p : params) r.series["grad_norm/" + p.first];
  for (int k = 0; group && k < group->world_size(); ++k)
    r.series["rank" + std::to_string(k) + "/loss"].dtype = Series::Dtype::kFloat32;

  int64_t step = 0;
  uint64_t epoch = 0;
  int64_t skip = 0;  // batches of the first epoch already trained before a resume
  if (!spec.resume.resume_from.empty()) {
    CheckpointState st = load_checkpoint(spec.resume.resume_from, *model, *optimizer, cuda,
                                         spec.resume.restore_generators);
    const std::string& f = spec.resume.resume_from;
    int rank = group ? group->rank() : -1, world = group ? group->world_size() : 1;
    if (st.rank != rank || st.world_size != world)
      throw BadInput(f, "rank", (group ? "rank " + std::to_string(rank) + " of " + std::to_string(world)
                                       : std::string("a single process's checkpoint")) +
                                    ", got " + (st.rank < 0 ? std::string("a single process's checkpoint")
                                                            : "rank " + std::to_string(st.rank) + " of " +
                                                                  std::to_string(st.world_size)));
    require_resume_contract(f, spec.contract, st.contract, "this run's");
    if (st.config_hash != spec.config_hash)
      throw BadInput(f, "config_hash", spec.config_hash + " (this smoke config's), got " + st.config_hash +
                                           ": the checkpoint was written from another config");
    if (st.seed != seed)
      throw BadInput(f, "seed", std::to_string(seed) + ", got " + std::to_string(st.seed));
    if (st.step >= spec.steps)
      throw BadInput(f, "step", "fewer than the " + std::to_string(spec.steps) + " steps configured, got " +
                                    std::to_string(st.step));
    for (auto& [name, s] : st.series) r.series[name] = std::move(s);
    r.init = std::move(st.init);
    r.train_probes = std::move(st.train_probes);
    r.resources.step_time_s = std::move(st.step_time_s);
    tracer.resume(std::move(st.module_trace));
    step = st.step;
    epoch = st.epoch;
    skip = st.batch_in_epoch;
    // Every rank resumed from its own file: they must be of one step and
    // hold one model.
    if (group) {
      torch::Tensor steps = group->allgather(torch::tensor({st.step}, torch::kInt64), "the resumed steps");
      for (int k = 0; k < group->world_size(); ++k)
        if (int64_t other = steps[k].item<int64_t>(); other != st.step)
          throw BadInput(f, "step", std::to_string(other) + " as rank " + std::to_string(k) +
                                        "'s checkpoint (the ranks of one checkpoint stopped at one step), got " +
                                        std::to_string(st.step));
    }
    if (group) check_parameters_agree(*group, -1, params, "the ranks resumed from checkpoints that differ",
                                      "every rank must resume from its own file of one multi-rank checkpoint");
  }

  bool stopped = false;
  const int64_t first_step = step;  // > 0 in a resumed run
  for (; step < spec.steps && !stopped; ++epoch, skip = 0) {
    int64_t before = step;
    loader.run_epoch(epoch, [&](int64_t k, SmokeBatch& batch) {
      if (k < skip) return true;  // consumed before the checkpoint
      auto t0 = std::chrono::steady_clock::now();
      r.train_probes.push_back(probe_batch(step, batch.inputs, batch.labels, batch.indices));
      double lr = spec.optimizer.schedule.at(step);
      set_lr(*optimizer, lr);
      if (group) {
        act_out(spec.fault, "hang", group->rank(), step);  // last seen at the previous step
        if (spec.progress) spec.progress->mark(step, RankPhase::kBroadcast);
      }
      auto c0 = std::chrono::steady_clock::now();
      if (group) broadcast_buffers(*group, *model, step);
      r.collective_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      if (group) {
        if (spec.progress) spec.progress->mark(step, RankPhase::kCompute);
        act_out(spec.fault, "kill", group->rank(), step);
      }
      torch::Tensor x = batch.inputs.to(device), y = batch.labels.to(device);
      compat::zero_grad(*optimizer);
      tracer.begin_step(step);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      if (inject) loss = loss * inject->factor();
      if (group && spec.fault.fault == "nan_loss" && spec.fault.rank == group->rank() && spec.fault.step == step)
        loss = loss * std::numeric_limits<float>::quiet_NaN();
      loss.backward();

      if (group) {
        if (spec.progress) spec.progress->mark(step, RankPhase::kCollectives);
        auto c1 = std::chrono::steady_clock::now();
        loss_s.values.push_back(reduce_step(*group, spec.fault, step, loss.item<float>(), params, r.series));
        r.collective_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c1).count();
      } else {
        loss_s.values.push_back(static_cast<double>(loss.item<float>()));
      }
      double total = 0;
      for (const auto& [name, p] : params) {
        double n = p.grad().defined() ? l2(p.grad()) : 0.0;
        r.series["grad_norm/" + name].values.push_back(n);
        total += n * n;
      }
      r.series["grad_norm"].values.push_back(std::sqrt(total));
      r.series["lr"].values.push_back(lr);

      optimizer->step();
      double pn = 0;
      for (const auto& [name, p] : params) {
        double n = l2(p);
        pn += n * n;
      }
      r.series["param_norm"].values.push_back(std::sqrt(pn));
      if (group) {
        auto c2 = std::chrono::steady_clock::now();
        check_parameters_agree(*group, step, params, "");
        r.collective_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - c2).count();
        if (spec.progress) spec.progress->mark(step, RankPhase::kUpdated);
      }
      r.resources.step_time_s.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      ++step;
      if (step == spec.resume.stop_after && step < spec.steps) {
        // The next batch: k + 1 of this epoch, or batch 0 of the next one.
        bool epoch_done = k + 1 == loader.batches_per_epoch();
        model->set_tracer(nullptr);
        CheckpointState st{spec.config_hash, seed, step, epoch + (epoch_done ? 1 : 0), epoch_done ? 0 : k + 1,
                           r.series, r.init, r.train_probes, r.resources.step_time_s, tracer.take(),
                           spec.contract, group ? group->rank() : -1, group ? group->world_size() : 1};
        save_checkpoint(spec.resume.checkpoint_out, st, *model, *optimizer, cuda);
        stopped = true;
        return false;
      }
      return step < spec.steps;
    });
    if (step == before && skip == 0)
      throw BadUsage("the data yields no batch in epoch " + std::to_string(epoch) +
                     " (fewer samples than data.batch_size with drop_last?)");
  }
  r.steps_done = step;
  model->set_tracer(nullptr);
  // The self-test's step ran in this process (not in the half before a
  // checkpoint) and nothing was perturbed: no such module.
  if (!spec.trace.self_test_module.empty() && !tracer.self_test_fired() && first_step <= spec.trace.self_test_step &&
      step > spec.trace.self_test_step) {
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
  if (spec.trace.steps > 0) r.module_trace = tracer.take();
  if (group) broadcast_buffers(*group, *model, -1);

  NamedTensors state = params;
  for (const auto& b : model->named_buffers()) state.emplace_back("buffer:" + b.key(), b.value());
  r.hashes["params"] = hash_tensors(state);
  r.hashes["optimizer"] = hash_tensors(optimizer_state(*optimizer, params));
  r.resources.peak_rss_bytes = peak_rss_bytes();
  r.resources.peak_cuda_bytes = cuda ? compat::cuda_peak_allocated_bytes() : -1;
  return r;
}

}  // namespace lockstep
