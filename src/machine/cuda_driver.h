// The CUDA driver as its own API reports it (libcuda.so.1), loaded with
// dlopen at run time: one source builds against CPU-only and CUDA LibTorch,
// and a CPU-only build needs no CUDA headers or libraries.
//
//   CudaDriverInfo d = query_cuda_driver();
//   if (d.error.empty()) key = "cuda-sm" + d.compute_capability;   // "9.0"
//   else std::cerr << d.error;  // "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34) ..."
//
// Only device 0 is described: lockstep trains on device 0, and
// CUDA_VISIBLE_DEVICES chooses which physical GPU that is. Attribute numbers
// and CUresult codes are those of NVIDIA's cuda.h (CUDA Driver API reference,
// "Data types used by CUDA driver").
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// What the driver API says about the driver and device 0.
struct CudaDriverInfo {
  std::string library;         ///< resolved path of the loaded libcuda.so.1 ("" when none)
  std::string error;           ///< why the driver is unusable; "" when device 0 was read
  int driver_api_version = 0;  ///< cuDriverGetVersion: 1000*major + 10*minor (13000 = CUDA 13.0)
  int device_count = 0;        ///< cuDeviceGetCount after CUDA_VISIBLE_DEVICES
  std::string name;            ///< "NVIDIA H200"
  std::string compute_capability;  ///< "major.minor", e.g. "9.0"
  int sm_count = 0;            ///< streaming multiprocessors (attribute 16)
  uint64_t memory_bytes = 0;   ///< cuDeviceTotalMem_v2
  std::string uuid;            ///< "GPU-8f2a610c-4d3e-1b77-9012-a55ec308f164", as nvidia-smi -L prints it
};

/// Loads `library` (a soname searched the usual way, or a path) and reads
/// the driver version, the device count and device 0. Never throws: a
/// missing library, missing symbols, a failing cuInit or no visible device
/// leave `error` set, naming the CUresult.
CudaDriverInfo query_cuda_driver(const std::string& library = "libcuda.so.1");

/// Why dlopen(`library`) just failed: "<library> not found (no NVIDIA
/// driver)" when there is no such file, else dlerror()'s text (a file of
/// the wrong architecture, a missing dependency, ...). Call right after the
/// failed dlopen.
std::string dlopen_failure(const std::string& library);

/// "CUDA_ERROR_NO_DEVICE (100)" for the CUresult codes a start-up can
/// return, "CUresult 42" for others.
std::string cu_result_name(int code);

/// A CUDA version number as CUDA prints it: 12040 -> "12.4", 13000 -> "13.0".
std::string cuda_version_string(int version);

}  // namespace lockstep
