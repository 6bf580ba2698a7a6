#include "train/step_sync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "determinism/seed_streams.h"
#include "distributed/rank_group.h"
#include "distributed/rank_progress.h"
#include "train/trainer.h"

namespace lockstep {

namespace {

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


// The rank group's StepSync (step_sync.h).
class RankStepSync : public StepSync {
 public:
  RankStepSync(RankGroup& group, RankProgress* progress, const RankFault& fault)
      : g_(group), progress_(progress), fault_(fault) {}
  uint64_t dropout_seed(uint64_t seed) const override {
    return derive_seed(seed, "dropout", {static_cast<uint64_t>(g_.rank())});
  }
  int rank() const override { return g_.rank(); }
  int world_size() const override { return g_.world_size(); }
  void add_series(std::map<std::string, Series>& series) const override {
    for (int k = 0; k < g_.world_size(); ++k) series["rank" + std::to_string(k) + "/loss"].dtype = Series::Dtype::kFloat32;
  }
  void check_start(const NamedTensors& params, const char* when, const char* why) override {
    check_parameters_agree(g_, -1, params, when, why);
  }
  void check_resumed_step(int64_t step, const std::string& file) override {
    torch::Tensor steps = g_.allgather(torch::tensor({step}, torch::kInt64), "the resumed steps");
    for (int k = 0; k < g_.world_size(); ++k)
      if (int64_t other = steps[k].item<int64_t>(); other != step)
        throw BadInput(file, "step", std::to_string(other) + " as rank " + std::to_string(k) +
                                         "'s checkpoint (the ranks of one checkpoint stopped at one step), got " +
                                         std::to_string(step));
  }
  void before_forward(int64_t step, torch::nn::Module& model) override {
    act_out(fault_, "hang", g_.rank(), step);  // last seen at the previous step
    mark(step, RankPhase::kBroadcast);
    timed([&] { broadcast_buffers(g_, model, step); });
    mark(step, RankPhase::kCompute);
    act_out(fault_, "kill", g_.rank(), step);
  }
  torch::Tensor shape_loss(int64_t step, torch::Tensor loss) override {
    if (fault_.fault == "nan_loss" && fault_.rank == g_.rank() && fault_.step == step)
      return loss * std::numeric_limits<float>::quiet_NaN();
    return loss;
  }
  double after_backward(int64_t step, float local_loss, const NamedTensors& params,
                        std::map<std::string, Series>& series) override {
    mark(step, RankPhase::kCollectives);
    double global = 0;
    timed([&] { global = reduce_step(g_, fault_, step, local_loss, params, series); });
    return global;
  }
  void after_update(int64_t step, const NamedTensors& params) override {
    timed([&] { check_parameters_agree(g_, step, params, ""); });
    mark(step, RankPhase::kUpdated);
  }
  void finish(torch::nn::Module& model) override { broadcast_buffers(g_, model, -1); }

 private:
  void mark(int64_t step, RankPhase phase) {
    if (progress_) progress_->mark(step, phase);
  }
  template <typename F>
  void timed(F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    collective_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  RankGroup& g_;
  RankProgress* progress_;
  RankFault fault_;
};

// A single process: nothing to synchronise.
class NoStepSync : public StepSync {
 public:
  uint64_t dropout_seed(uint64_t seed) const override { return derive_seed(seed, "dropout"); }
};

}  // namespace

std::unique_ptr<StepSync> make_step_sync(const TrainSpec& spec) {
  if (spec.group) return std::make_unique<RankStepSync>(*spec.group, spec.progress, spec.fault);
  return std::make_unique<NoStepSync>();
}

}  // namespace lockstep
