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

#include "env/machine_facts.h"  // numerics_env_vars()
#include "record/fingerprint.h"

namespace lockstep {

/// Inputs to a capture.
struct CaptureOptions {
  std::string device = "cpu";                    ///< "cpu" or "cuda"
  std::map<std::string, std::string> contract;   ///< applied determinism contract
  std::string repo_path = ".";                   ///< where to look for the git repository
  bool hash_libraries = true;                    ///< XXH3 of the LibTorch library files
};

/// The fingerprint of this process. Fields that cannot be read have the
/// value "(absent: <why>)". Never throws for a missing fact.
Fingerprint capture_fingerprint(const CaptureOptions& options);

}  // namespace lockstep
