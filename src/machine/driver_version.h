// NVIDIA driver version checks for the `min_driver` preflight.
//
//   std::string v = nvidia_driver_version();       // "550.54.15", or "" without NVML
//   bool ok = version_at_least("550.54.15", "535"); // true
//
// The driver version comes from NVML (libnvidia-ml.so.1, loaded with
// dlopen at run time, so CPU-only builds need nothing).
#pragma once

#include <string>

namespace lockstep {

/// The installed NVIDIA driver version via nvmlSystemGetDriverVersion, or
/// "" when NVML cannot be loaded or answers with an error (`why` says which).
/// `library` is a soname searched the usual way, or a path (tests).
std::string nvidia_driver_version(std::string* why = nullptr,
                                  const std::string& library = "libnvidia-ml.so.1");

/// True when dotted numeric version `have` >= `need` ("550.54.15" >= "535.0").
/// Missing components count as 0. Returns false when either is not a
/// dotted version (check with is_dotted_version first to tell the cases apart).
bool version_at_least(const std::string& have, const std::string& need);

/// True for "535", "535.104.05": dot-separated components of 1 to 9 digits.
bool is_dotted_version(const std::string& version);

/// The driver version the kernel module reports in `proc_file`
/// (/proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel
/// Module  580.95.05 ..."), or "" when unreadable. It needs no user-space
/// library: a container started without NVML (NVIDIA_DRIVER_CAPABILITIES
/// without `utility`) still has it.
std::string kernel_module_driver_version(const std::string& proc_file = "/proc/driver/nvidia/version");

/// "NVML_ERROR_DRIVER_NOT_LOADED (9)" for the nvmlReturn_t codes start-up
/// can return (nvml.h), "nvmlReturn_t 42" for others.
std::string nvml_return_name(int code);

}  // namespace lockstep
