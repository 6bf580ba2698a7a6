// Why this process cannot train on CUDA, as one sentence that says what to
// fix: the preflight of `device: "cuda"` (exit 3, never a silent fall back
// to the CPU) and `lockstep env --device cuda` print it.
//
//   CudaUsabilityFacts f = ...;                 // LibTorch's view + the driver's
//   std::string why = explain_cuda_unusable(f); // "" when CUDA is usable
//
// The facts come from both sides because each alone misleads: LibTorch says
// only "not available", while the driver cannot know that LibTorch is a
// CPU-only build or that the linker dropped libtorch_cuda.so
// (docs/libtorch.md §0, "Linking the CUDA backend").
#pragma once

#include <string>

#include "machine/cuda_driver.h"

namespace lockstep {

/// What LibTorch and the driver each report.
struct CudaUsabilityFacts {
  std::string torch_version;          ///< TORCH_VERSION, "1.13.0"
  bool torch_built_with_cuda = false; ///< USE_CUDA in at::show_config()'s build settings
  bool torch_cuda_loaded = false;     ///< libtorch_cuda.so is loaded in this process
  int torch_device_count = 0;         ///< torch::cuda::device_count()
  std::string torch_cuda_runtime;     ///< "12.8" (show_config's "CUDA Runtime"), "" if unknown
  CudaDriverInfo driver;              ///< query_cuda_driver()
  std::string visible_devices;        ///< CUDA_VISIBLE_DEVICES
  bool visible_devices_set = false;   ///< whether CUDA_VISIBLE_DEVICES is set at all
};

/// "" when LibTorch can use device 0; otherwise the first reason that
/// blocks it, in the order a user has to fix them: a CPU-only LibTorch, an
/// unloaded libtorch_cuda.so, an unusable driver, a driver older than
/// LibTorch's CUDA runtime, no visible device.
std::string explain_cuda_unusable(const CudaUsabilityFacts& facts);

/// "USE_CUDA=ON"-style build setting values that mean on: ON, 1, TRUE, YES
/// (any case); show_config() has printed both "ON" and "True".
bool build_setting_is_on(const std::string& value);

}  // namespace lockstep
