// Captures the environment fingerprint of this process (see
// record/fingerprint.h for the data model and tagging).
//
//   Fingerprint fp = capture_fingerprint({"cpu", contract, "smoke/"});
//
// Sources: LibTorch (version, show_config build settings and CPU
// capability, thread counts, determinism flags), dladdr/dl_iterate_phdr for
// the resolved library files (hashed: Debian's 1.13.1 calls itself 1.13.0),
// /proc/cpuinfo, uname, glibc, the compiler macros, numerics environment
// variables, libgit2, and the NVIDIA libraries through dlopen (driver API,
// NVML, and the cuDNN/NCCL that LibTorch loaded) so one source builds on
// CPU-only and CUDA LibTorch.
#pragma once

#include <map>
#include <string>

#include "machine/machine_facts.h"  // numerics_env_vars()
#include "record/fingerprint.h"

namespace lockstep {

/// Inputs to a capture.
struct CaptureOptions {
  std::string device = "cpu";                    ///< "cpu" or "cuda"
  std::map<std::string, std::string> contract;   ///< applied determinism contract
  std::string repo_path = ".";                   ///< where to look for the git repository
  bool hash_libraries = true;                    ///< XXH3 of the LibTorch library files
  std::string cuda_library = "libcuda.so.1";     ///< as MachineOptions (tests: a fake)
  std::string nvml_library = "libnvidia-ml.so.1";
};

/// The fingerprint of this process: machine_fingerprint() (the machine's
/// fields, written there only) plus what LibTorch knows: torch.*,
/// torch.build.*, cpu.capability, threads.*, libs.*, build.*,
/// determinism.* (the contract as read back), cuda.torch_devices,
/// cuda.runtime, cuda.cudnn, cuda.nccl (capture_only_fields()). Fields that
/// cannot be read have the value "(absent: <why>)". Never throws for a
/// missing fact.
Fingerprint capture_fingerprint(const CaptureOptions& options);

/// Whether `field` is one capture_fingerprint() adds to the machine's
/// (the LibTorch facts above), for tests and for diffs that compare a
/// LibTorch view with a torch-free one.
bool is_capture_only_field(const std::string& field);

}  // namespace lockstep
