#include "train/module_tracer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/hash.h"
#include "data/probe.h"

namespace lockstep {

namespace {

// XXH3-128 of a tensor's contiguous bytes in its own dtype.
std::string bytes_xxh3(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
  Xxh3Stream h;
  h.update(c.data_ptr(), c.nbytes());
  return h.hex();
}

// `t` with its first element moved one ULP towards +inf (in the graph:
// the gradient flows to `t` everywhere else).
torch::Tensor bump_first_element(const torch::Tensor& t) {
  torch::Tensor mask = torch::zeros({t.numel()}, torch::TensorOptions().dtype(torch::kBool));
  mask[0] = true;
  mask = mask.view(t.sizes()).to(t.device());
  torch::Tensor up = torch::nextafter(t.detach(), torch::full_like(t.detach(), INFINITY));
  return torch::where(mask, up, t);
}

}  // namespace

bool ModuleTracer::self_test_due(const std::string& name, TracePhase phase) const {
  return !self_test_fired_ && spec_.self_test_module == name && spec_.self_test_step == step_ &&
         spec_.self_test_phase == phase;
}

void ModuleTracer::add(const std::string& name, TracePhase phase, const std::string& input_xxh3,
                       const torch::Tensor& out) {
  if (cap_step_ != step_) {
    cap_step_ = step_;
    in_pass_[0] = in_pass_[1] = 0;
  }
  if (++in_pass_[phase == TracePhase::kForward ? 0 : 1] > kMaxTraceEntriesPerPass) {
    ++trace_.dropped;
    return;
  }
  trace_.entries.push_back({step_, phase, name, input_xxh3, probe_tensor(out.detach()), -1});
}

torch::Tensor ModuleTracer::record(const std::string& name, const torch::Tensor& in, torch::Tensor out) {
  if (kept_) kept_->push_back({name, in.detach(), out.detach()});
  if (!active()) return out;
  if (std::find(modules_.begin(), modules_.end(), name) == modules_.end()) modules_.push_back(name);
  if (self_test_due(name, TracePhase::kForward)) {
    self_test_fired_ = true;
    out = bump_first_element(out);
  }
  add(name, TracePhase::kForward, bytes_xxh3(in), out);
  if (!out.requires_grad() || !in.requires_grad()) return out;  // no gradient flows out of it
  // Backward: the gradient reaches `out` first (its hash is what flowed
  // in), then `in` (what flows out of the module).
  auto grad_in = std::make_shared<std::string>();
  const int64_t step = step_;
  out.register_hook([grad_in](const torch::Tensor& g) { *grad_in = bytes_xxh3(g); });
  in.register_hook([this, name, step, grad_in](const torch::Tensor& g) -> torch::Tensor {
    int64_t saved = step_;
    step_ = step;
    torch::Tensor flowing = g;
    if (self_test_due(name, TracePhase::kBackward)) {
      self_test_fired_ = true;
      flowing = bump_first_element(g);
    }
    add(name, TracePhase::kBackward, grad_in->empty() ? bytes_xxh3(torch::zeros({0})) : *grad_in, flowing);
    step_ = saved;
    return flowing;
  });
  return out;
}

}  // namespace lockstep
