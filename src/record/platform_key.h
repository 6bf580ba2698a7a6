// The platform key that names a golden file: goldens/<smoke>/<key>.json.
//
//   cpu-x86_64-avx2      CPU run, ATen CPU capability AVX2
//   cpu-x86_64-default   CPU run with ATEN_CPU_CAPABILITY=default ("NO AVX")
//   cpu-aarch64-default
//   cuda-sm90            CUDA run on compute capability 9.0 (H100/H200)
//
// Built from fingerprint fields "device", "cpu.arch", "cpu.capability" and
// "cuda.compute_capability" (docs/platforms.md).
#pragma once

#include <string>

#include "record/fingerprint.h"

namespace lockstep {

/// The golden platform key for a captured fingerprint.
std::string platform_key(const Fingerprint& fp);

/// The device-and-architecture prefix of a key ("cpu-x86_64"), used to find
/// a golden of the same family when no golden exists for the exact key.
std::string platform_family(const std::string& key);

}  // namespace lockstep
