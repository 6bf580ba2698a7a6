// The `device: "cuda"` preflight: LibTorch's view of CUDA joined with the
// driver's, so a run that cannot use the GPU stops with exit 3 and the
// reason instead of falling back to the CPU (README.md, "Exit codes").
//
//   if (std::string why = cuda_unusable_reason(); !why.empty())
//     throw EnvironmentError("CUDA is not usable: " + why);
//
// Needs LibTorch but no CUDA header: it builds against CPU-only and CUDA
// LibTorch alike.
#pragma once

#include <string>

#include "machine/cuda_usability.h"

namespace lockstep {

/// The facts of this process: LibTorch's build settings and CUDA runtime
/// (at::show_config()), whether libtorch_cuda.so is loaded, LibTorch's
/// device count, the driver API's answers and CUDA_VISIBLE_DEVICES.
CudaUsabilityFacts gather_cuda_facts();

/// explain_cuda_unusable(gather_cuda_facts()): "" when device 0 is usable.
std::string cuda_unusable_reason();

}  // namespace lockstep
