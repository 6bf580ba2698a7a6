// The platform key that names a golden file: goldens/<smoke>/<key>.json.
//
//   cpu-x86_64-avx2      CPU run, ATen CPU capability AVX2
//   cpu-x86_64-default   CPU run with ATEN_CPU_CAPABILITY=default ("NO AVX")
//   cpu-aarch64-default
//   cuda-sm90            CUDA run on compute capability 9.0 (H100/H200)
//
// Built from fingerprint fields "device", "cpu.arch", "cpu.capability" and
// "cuda.compute_capability" (docs/platforms.md).
//
// A stack label (LOCKSTEP_STACK, e.g. "torch2") files a second golden beside
// the platform's during a stack migration, as Megatron-LM keeps
// golden_values_{dev,lts}_*: the golden key is then "<platform>@<label>".
//
//   golden_key("cpu-x86_64-avx2", "")        == "cpu-x86_64-avx2"
//   golden_key("cpu-x86_64-avx2", "torch2")  == "cpu-x86_64-avx2@torch2"
#pragma once

#include <string>
#include <utility>

#include "record/fingerprint.h"

namespace lockstep {

/// The golden platform key for a captured fingerprint.
std::string platform_key(const Fingerprint& fp);

/// Whether `key` has the shape platform_key() gives, the only keys a run
/// looks up: "cpu-<arch>-<capability>" (each 1..32 of a-z, 0-9, '_') or
/// "cuda-sm<digits>" ("cuda-smunknown" included). A smoke's `platforms` and
/// `import --platform` are held to it: any other name files a golden no
/// run would ever read.
bool is_platform_key(const std::string& key);

/// The device-and-architecture prefix of a key ("cpu-x86_64"), used to find
/// a golden of the same family when no golden exists for the exact key.
std::string platform_family(const std::string& key);

/// Whether `label` may be a stack label: 1..40 letters, digits, '.', '_'
/// and '-', starting with a letter or digit (it becomes part of a file name).
bool is_stack_label(const std::string& label);

/// The name a golden is filed under: `platform`, or "<platform>@<stack>"
/// when `stack` is not empty. Throws nothing.
std::string golden_key(const std::string& platform, const std::string& stack);

/// Splits a golden key into {platform, stack} at its '@' ({key, ""}
/// without one). Throws nothing.
std::pair<std::string, std::string> split_golden_key(const std::string& key);

}  // namespace lockstep
