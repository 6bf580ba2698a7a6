// A user model saved as TorchScript (torch.jit.save in Python, or
// torch::jit::Module::save), trained by the smoke trainer like a built-in
// model. TorchScript is deprecated upstream, so this stays an option; the
// built-in torch::nn models are the core.
//
//   std::shared_ptr<SmokeModel> m = load_torchscript_model("net.pt");
//   m->named_parameters();   // "fc.weight", ... as in the TorchScript module
//
// The module's parameters and buffers are mirrored, by reference, into a
// torch::nn::Module tree of the same names, so the optimiser, the metrics,
// checkpoints and `to(device)` all act on the tensors the TorchScript
// forward reads. Its weights are kept as saved (no re-initialisation).
#pragma once

#include <memory>
#include <string>

#include "train/models.h"

namespace lockstep {

/// Loads `path` with torch::jit::load. Throws exit-2 Error naming the file
/// when it is not a TorchScript module, has no forward method, has no
/// parameters, or has a parameter that does not require grad (which the
/// smoke could not train).
std::shared_ptr<SmokeModel> load_torchscript_model(const std::string& path);

/// XXH3-128 of what the module computes, not of the zip it is stored in:
/// its code (every method's graph of every submodule, without source
/// locations) and
/// every parameter and buffer (name, dtype, shape, bytes), in module order.
/// Exporting the same module twice gives other zip bytes (timestamps, extra
/// files, archive name) but this same hash. The fingerprint's input field
/// model.torchscript_xxh3. Throws exit-2 Error as load_torchscript_model.
std::string torchscript_content_xxh3(const std::string& path);

}  // namespace lockstep
