// The one place where LibTorch 1.13 and 2.x differ for lockstep.
//
// Every version-dependent call goes through a function here, behind the
// LOCKSTEP_TORCH_AT_LEAST(major, minor) guard, so the rest of the code is
// version-free. Facts from ../shared/notes/libtorch.md (sections 1, 2, 5).
//
//   compat::set_deterministic_algorithms(true);   // 2-argument form on every version
//   compat::fill_uninitialized_memory(true);      // 2.2+ only; returns false before
#pragma once

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <string>

// The CUDA caching allocator's header needs the CUDA runtime headers: Debian's
// CPU LibTorch ships the c10/cuda headers without them, so test for both.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define LOCKSTEP_HAVE_CUDA_ALLOCATOR 1
#else
#define LOCKSTEP_HAVE_CUDA_ALLOCATOR 0
#endif

/// True when the LibTorch being compiled against is at least major.minor.
/// (Not `MAJOR >= a && MINOR >= b`, which is wrong for 3.0.)
#define LOCKSTEP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace lockstep::compat {

/// at::Context::setDeterministicAlgorithms: the header has no default for
/// warn_only in 1.13 or 2.x, so both arguments are always passed.
inline void set_deterministic_algorithms(bool on, bool warn_only = false) {
  at::globalContext().setDeterministicAlgorithms(on, warn_only);
}

/// setDeterministicFillUninitializedMemory exists from 2.2 (PR #111377).
/// Returns false when this LibTorch has no such knob (1.13 never fills
/// torch::empty under deterministic mode).
inline bool fill_uninitialized_memory(bool on) {
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  at::globalContext().setDeterministicFillUninitializedMemory(on);
  return true;
#else
  (void)on;
  return false;
#endif
}

/// Reads back the fill flag, or "unsupported" on LibTorch < 2.2.
inline std::string fill_uninitialized_memory_state() {
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  return at::globalContext().deterministicFillUninitializedMemory() ? "true" : "false";
#else
  return "unsupported (LibTorch < 2.2)";
#endif
}

/// TF32 and matmul precision through the legacy setters only: they keep the
/// 2.9+ fp32-precision tables consistent, so the legacy getters used for the
/// record never throw (notes/libtorch.md §1). setFloat32Precision is not
/// used: its signature changed between 2.9 and 2.10.
inline void set_tf32(bool allow) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(allow);
  ctx.setAllowTF32CuDNN(allow);
  ctx.setFloat32MatmulPrecision(allow ? "high" : "highest");
}

/// The effective float32 matmul precision as PyTorch names it.
inline std::string float32_matmul_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "unknown";
}

/// torch::cuda::device_count() is size_t in 1.13 and int8 DeviceIndex in
/// 2.x (which streams as a char): always go through int.
inline int cuda_device_count() { return static_cast<int>(torch::cuda::device_count()); }

/// Peak bytes allocated through the CUDA caching allocator on device 0
/// (torch.cuda.max_memory_allocated()), or -1 in a CPU-only build or
/// without a device. Index 0 of allocated_bytes is StatType::AGGREGATE in
/// 1.13 and 2.x; the enum's namespace moved in 2.x, the index did not.
inline int64_t cuda_peak_allocated_bytes() {
#if LOCKSTEP_HAVE_CUDA_ALLOCATOR
  if (!torch::cuda::is_available()) return -1;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak;
#else
  return -1;
#endif
}

}  // namespace lockstep::compat
