#include "train/torchscript_model.h"

#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/hash.h"

namespace lockstep {

namespace {

class TorchScriptModel : public SmokeModel {
 public:
  TorchScriptModel(torch::jit::Module module, const std::string& path) : module_(std::move(module)) {
    mirror(module_, *this, "", path);
    auto type = module_.type()->name();
    type_ = type ? type->qualifiedName() : "(unnamed)";
    sequential_ = type_.size() >= 10 && type_.compare(type_.size() - 10, 10, "Sequential") == 0 &&
                  module_.named_children().size() > 0;
  }

  // An nn.Sequential's forward is its children in order: while tracing,
  // they are called one by one (the same operations, so the same bits).
  // Any other scripted forward is compiled code lockstep cannot look into.
  torch::Tensor forward(const torch::Tensor& x) override {
    if (!tracer_ || !sequential_ || !(tracer_->active() || tracer_->keeping())) return module_.forward({x}).toTensor();
    torch::Tensor h = x;
    for (const auto& c : module_.named_children()) {
      torch::jit::Module child = c.value;
      torch::Tensor in = h;
      h = trace(c.name.c_str(), in, child.forward({in}).toTensor());
    }
    return h;
  }

  void set_tracer(ModuleTracer* tracer) override {
    SmokeModel::set_tracer(tracer);
    if (tracer && !sequential_)
      tracer->not_traced("TorchScript module " + type_ +
                         ": its forward is compiled code whose submodule calls lockstep cannot see (only an "
                         "nn.Sequential's children are traced; the Python helper traces any module)");
  }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

 private:
  // Registers src's parameters and buffers (the same tensors) in dst, and
  // one nn::Module per TorchScript submodule, recursively.
  static void mirror(const torch::jit::Module& src, torch::nn::Module& dst, const std::string& prefix,
                     const std::string& path) {
    for (const auto& p : src.named_parameters(/*recurse=*/false)) {
      if (!p.value.requires_grad())
        throw BadInput(path, "parameters." + prefix + p.name,
                       "a parameter that requires grad (the smoke trains every parameter; save the module "
                       "with requires_grad=True, or make the tensor a buffer)");
      dst.register_parameter(p.name, p.value, /*requires_grad=*/true);
    }
    for (const auto& b : src.named_buffers(/*recurse=*/false)) dst.register_buffer(b.name, b.value);
    for (const auto& c : src.named_children()) {
      auto child = std::make_shared<torch::nn::Module>(c.name);
      mirror(c.value, *child, prefix + c.name + ".", path);
      dst.register_module(c.name, child);
    }
  }

  torch::jit::Module module_;
  std::string type_;
  bool sequential_ = false;
};

torch::jit::Module load_module(const std::string& path) {
  if (path.empty()) throw BadUsage("model torchscript needs model.path (a module saved with torch.jit.save)");
  // TorchScript graphs run unfused, on every LibTorch: the profiling
  // executor's TensorExpr fuser fuses nothing on CPU in 1.13, while
  // Debian's 2.6 compiles fused CPU kernels with LLVM (minutes per graph on
  // two cores, and other kernels than the unfused ops compute).
  torch::jit::setTensorExprFuserEnabled(false);
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw BadInput(path, "(file)", "a TorchScript module saved with torch.jit.save (" +
                                       std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
}

}  // namespace

std::string torchscript_content_xxh3(const std::string& path) {
  torch::jit::Module module = load_module(path);
  Xxh3Stream h;
  // Code: every method of every submodule, as its graph without source
  // locations (which name the file it was scripted from); dump_to_str
  // would add object addresses.
  for (const auto& sub : module.named_modules()) {
    h.update_string("module " + sub.name);
    for (const auto& method : sub.value.get_methods()) {
      h.update_string(method.name());
      h.update_string(method.graph()->toString(/*print_source_locations=*/false));
    }
  }
  auto add = [&h](const std::string& name, const torch::Tensor& t) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    h.update_string(name);
    h.update_string(std::string(c.dtype().name()));
    for (int64_t d : c.sizes()) h.update(&d, sizeof d);
    h.update(c.data_ptr(), c.numel() * c.element_size());
  };
  for (const auto& p : module.named_parameters(/*recurse=*/true)) add("param " + p.name, p.value);
  for (const auto& b : module.named_buffers(/*recurse=*/true)) add("buffer " + b.name, b.value);
  return h.hex();
}

std::shared_ptr<SmokeModel> load_torchscript_model(const std::string& path) {
  torch::jit::Module module = load_module(path);
  if (!module.find_method("forward")) throw BadInput(path, "forward", "a forward(self, x) method");
  auto model = std::make_shared<TorchScriptModel>(std::move(module), path);
  if (model->parameters().empty()) throw BadInput(path, "parameters", "at least one parameter to train");
  return model;
}

}  // namespace lockstep
