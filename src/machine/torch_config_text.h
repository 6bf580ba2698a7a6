// Parses the text of at::show_config() (torch.__config__.show() in Python):
// the one LibTorch API that reports build settings, the ATen CPU capability
// and, on CUDA builds, the runtime CUDA and cuDNN versions without any CUDA
// header (docs/libtorch.md §2, "Build config").
//
//   TorchConfigText c = parse_torch_config(at::show_config());
//   c.build_settings["USE_CUDA"];   // "OFF"
//   c.cpu_capability;               // "AVX2"
//   c.cuda_runtime;                 // "12.8", "" on a CPU-only build
//
// The line formats are those of aten/src/ATen/Version.cpp (show_config) and
// aten/src/ATen/cuda/detail/CUDAHooks.cpp (showConfig) in 1.13 and 2.x.
#pragma once

#include <map>
#include <string>

namespace lockstep {

/// What lockstep reads from show_config().
struct TorchConfigText {
  /// The "Build settings:" line's KEY=value pairs (values may hold spaces).
  std::map<std::string, std::string> build_settings;
  std::string cpu_capability;  ///< "CPU capability usage: AVX2" -> "AVX2"
  std::string cuda_runtime;    ///< "CUDA Runtime 12.8" -> "12.8" (cudaRuntimeGetVersion)
  /// "CuDNN 90.8  (built against CUDA 12.8)" -> "90.8  (built against CUDA
  /// 12.8)". PyTorch prints cuDNN 9 versions as major*10+minor ("90.8" is
  /// 9.8.0), so the fingerprint prefers the loaded library's own answer.
  std::string cudnn;
};

/// Parses `text`; lines that are absent leave their field empty. Never throws.
TorchConfigText parse_torch_config(const std::string& text);

}  // namespace lockstep
