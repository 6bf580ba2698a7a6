// What a multi-rank run adds to each step of the smoke trainer
// (train/trainer.h): one seam, so the training loop reads the same for one
// process and for N ranks, and another collective scheme (NCCL, DDP's
// gradient buckets) is another StepSync, not more branches in the loop.
//
//   std::unique_ptr<StepSync> sync = make_step_sync(spec);   // NoStepSync or the rank group's
//   sync->before_forward(step, model);
//   loss = sync->shape_loss(step, loss);   loss.backward();
//   double global = sync->after_backward(step, loss.item<float>(), params, series);
//   optimizer.step();  sync->after_update(step, params);
//
// The rank group's version (spec/distributed_spec.h has the contract):
// identical initialisation checked by an all-gather of parameter hashes;
// before each forward rank 0's buffers broadcast (DDP's
// broadcast_buffers=True); after backward every rank's loss and non-finite
// flag all-gathered, a non-finite value anywhere stopping the run (exit 1,
// naming the rank), the gradients all-reduced in one float32 bucket in
// registration order and divided by the world size; after the update the
// parameters checked against the majority's (exit 1, naming the rank, step
// and first parameter). It marks each rank's progress (rank_progress.h),
// acts out the self-test faults and counts the time spent in collectives.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "record/series.h"

namespace lockstep {

struct TrainSpec;

/// Parameters (or buffers) by name, in registration order.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// The seam (see above). Every hook does nothing for a single process.
class StepSync {
 public:
  virtual ~StepSync() = default;
  /// The seed of this process's dropout stream: derive_seed(seed,
  /// "dropout"), with the rank in the key on a rank group.
  virtual uint64_t dropout_seed(uint64_t seed) const = 0;
  /// This process's rank and the rank count, as a checkpoint records them
  /// (-1 and 1 for a single process).
  virtual int rank() const { return -1; }
  virtual int world_size() const { return 1; }
  /// Adds the run's own series (a rank group's "rank<r>/loss", float32).
  virtual void add_series(std::map<std::string, Series>& series) const { (void)series; }
  /// Before step 0 (initialised or resumed): every rank's parameters are
  /// one; else exit 1 saying `when` happened and `why` that is wrong.
  virtual void check_start(const NamedTensors& params, const char* when, const char* why) {
    (void)params, (void)when, (void)why;
  }
  /// A resumed run: every rank resumed at `step`; else exit 2 naming `file`.
  virtual void check_resumed_step(int64_t step, const std::string& file) { (void)step, (void)file; }
  /// Before the step's forward.
  virtual void before_forward(int64_t step, torch::nn::Module& model) { (void)step, (void)model; }
  /// The step's loss before backward (the nan_loss self-test changes it).
  virtual torch::Tensor shape_loss(int64_t step, torch::Tensor loss) { (void)step; return loss; }
  /// After backward, before the update: the loss the run records (float32
  /// widened): this process's own, or the rank group's global loss.
  virtual double after_backward(int64_t step, float local_loss, const NamedTensors& params,
                                std::map<std::string, Series>& series) {
    (void)step, (void)params, (void)series;
    return static_cast<double>(local_loss);
  }
  /// After the optimiser's update.
  virtual void after_update(int64_t step, const NamedTensors& params) { (void)step, (void)params; }
  /// After the last step (before the final hashes).
  virtual void finish(torch::nn::Module& model) { (void)model; }
  /// Wall seconds of the steps spent in collectives; 0 for one process.
  double collective_s() const { return collective_s_; }

 protected:
  double collective_s_ = 0;
};

/// The StepSync of `spec`: the rank group's when spec.group is set (with
/// its progress and self-test fault), else one that adds nothing.
std::unique_ptr<StepSync> make_step_sync(const TrainSpec& spec);

}  // namespace lockstep
