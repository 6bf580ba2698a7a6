// The tracing helper of the built-in models: per-module forward and
// backward fingerprints for the first steps (record/module_trace.h has the
// definition). LibTorch's C++ modules have no forward hooks, so a model's
// own forward passes each submodule's input and output through it:
//
//   torch::Tensor forward(const torch::Tensor& x) override {
//     auto h = trace("conv", x, conv->forward(x));   // SmokeModel::trace
//     return trace("fc", h, fc->forward(h));
//   }
//
// In backward it records, through tensor hooks, the gradient with respect
// to each module's input (what flows out of the module) and the hash of
// the gradient with respect to its output (what flowed in). Outside the
// traced steps, and without a tracer, trace() returns `out` untouched and
// costs one branch.
#pragma once

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

#include "record/module_trace.h"
#include "spec/train_specs.h"

namespace lockstep {

/// Collects one run's module trace.
class ModuleTracer {
 public:
  /// Traces steps [0, spec.steps); with spec.self_test_module set, moves
  /// that module's output by one ULP at the self-test step and phase.
  explicit ModuleTracer(const TraceSpec& spec) : spec_(spec) { trace_.steps = spec.steps; }

  /// Continues a trace restored from a checkpoint (its steps are kept).
  void resume(ModuleTrace earlier) {
    trace_ = std::move(earlier);
    trace_.steps = spec_.steps;
  }

  /// The step the next forward belongs to (call before each forward).
  void begin_step(int64_t step) { step_ = step; }
  /// True while the current step is traced.
  bool active() const { return step_ >= 0 && step_ < spec_.steps; }

  /// Records module `name`'s forward: `in` (its first tensor input) and
  /// `out` (its output, float). Returns `out`, or the self-test's
  /// perturbed copy (in the graph, so training sees it).
  torch::Tensor record(const std::string& name, const torch::Tensor& in, torch::Tensor out);

  /// One module call kept by keep_outputs(): its name, first input and
  /// output (the tensors, detached, not copies).
  struct KeptCall {
    std::string name;
    torch::Tensor in, out;
  };
  /// Keeps every module call recorded from now on, traced step or not, in
  /// call order (the batch-invariance sweep: run/batch_sweep.h); null: stop
  /// keeping.
  void keep_outputs(std::vector<KeptCall>* into) { kept_ = into; }
  /// True while keep_outputs() keeps them: a model must then call its
  /// submodules one by one even outside the traced steps.
  bool keeping() const { return kept_ != nullptr; }

  /// Marks the trace as impossible for this model (kept in the record).
  void not_traced(const std::string& why) { trace_.not_traced = why; }

  /// Whether the self-test perturbed something (false without one).
  bool self_test_fired() const { return self_test_fired_; }
  /// Modules seen in forward so far, in first-seen order.
  const std::vector<std::string>& modules() const { return modules_; }

  /// The trace so far (moved out; the tracer is spent).
  ModuleTrace take() { return std::move(trace_); }

 private:
  bool self_test_due(const std::string& name, TracePhase phase) const;
  void add(const std::string& name, TracePhase phase, const std::string& input_xxh3, const torch::Tensor& out);

  TraceSpec spec_;
  ModuleTrace trace_;
  int64_t step_ = -1;
  std::vector<std::string> modules_;
  bool self_test_fired_ = false;  ///< the one (step, phase, module) is perturbed once
  std::vector<KeptCall>* kept_ = nullptr;  ///< keep_outputs()
  int64_t in_pass_[2] = {0, 0};            ///< entries of the current step per phase (cap)
  int64_t cap_step_ = -1;
};

}  // namespace lockstep
